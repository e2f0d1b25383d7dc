#pragma once
// The signature of a finding, used to deduplicate findings (docs/architecture.md, "Triage"): ClusterFuzz's
// crash state adapted to torch.compile.
//
//   crash-mismatch, status-mismatch   symptom + kind + failing mode + phase, and for exceptions the
//                                     exception type, the normalized message and the top 3 torch
//                                     frames of the root cause.
//   numeric-divergence                symptom + the sorted operator multiset of the program.
//   recompile-storm                   symptom + kind "recompile" + compiled + phase second-call + the
//                                     normalized guard failure of call 2's first recompile.
//   agree, nondeterministic,          symptom only (a signature always exists, so callers never
//   invalid-program                   have to special-case verdicts).
//
// Kinds: "exception", "timeout", "oom", "signal SIGSEGV" (or "signal 11" when only the number is
// known, "exit 3" when the worker exited on its own), "numeric", "recompile".
//
// Wrapped exceptions. Torch wraps the real failure in its own types, in two ways:
//   - chained blocks in the traceback ("The above exception was the direct cause of the following
//     exception:", and "During handling of the above exception, another exception occurred:",
//     which torch uses for the same purpose when it converts an exception inside an except block).
//     The first block printed is the root cause;
//   - flattened: the wrapper's message starts with the inner type, as in torch 2.11's
//     "InductorError: LoweringException: AssertionError: msg" or BackendCompilerFailed's
//     "backend='x' raised:\nRuntimeError: msg".
// exceptionType names the raised type and the innermost (root-cause) type: "Outer(Root)", e.g.
// "InductorError(AssertionError)", "Unsupported(AttributeError)"; intermediate wrappers
// (LoweringException) are dropped; a plain exception is just "RuntimeError". The message is the
// root cause's (its text from the traceback block when chained, the wrapper's message without the
// type prefixes otherwise). Frames come from the root-cause block; when it shows no torch frame
// (Dynamo strips the traceback of user-code exceptions), from the next block outwards.
//
// Frames (torchFrames). Only frames inside a `torch/` package directory count, named
// "torch/<path>:<function>"; the worker (fuzzer/worker/python/*.py), the program file, plugins,
// the standard library (functools, contextlib) and Inductor's generated code in the
// torchinductor cache are therefore never frames. Innermost first; consecutive repeats collapse
// (a re-raise with with_traceback shows the same function twice). Skipped as wrappers:
//   - whole files that are only dispatch plumbing: torch/_dynamo/eval_frame.py,
//     torch/_dynamo/convert_frame.py, torch/_dynamo/repro/after_aot.py,
//     torch/_dynamo/repro/after_dynamo.py, torch/_dynamo/external_utils.py,
//     torch/_utils_internal.py, torch/utils/_contextlib.py;
//   - call-protocol and decorator frames anywhere in torch: `__call__`, `_call_impl`,
//     `_wrapped_call_impl`, `wrapper_function`, `decorate_context`;
//   - closures with generic wrapper names (`inner`, `wrapper`, `wrapped`, `_fn`, `fn`) when their
//     line forwards the call (`*args`/`**kwargs` unpacking, a call continued on the next line) or
//     is not shown; an `inner` that does real work (Inductor's make_pointwise) is kept;
//   - anonymous glue: `<lambda>`, and context-manager frames whose line is `yield`;
//   - error-raising helpers: torch/_dynamo/exc.py (unimplemented and friends) and
//     torch/_dynamo/utils.py:_wrap_graph_break_with_torch_runtime_err.
//
// Message normalization (normalizeMessage). The head of the message: at most its first two
// non-empty lines, stopping at a blank line or at torch's boilerplate ("Set TORCHDYNAMO_VERBOSE",
// "from user code:", "Found from", "For more details about this graph break", "Exception raised
// from"). Then, token by token:
//   hex addresses 0x7f..                       -> <addr>
//   torch.Size([..]), [3, 4], (3, 4), (s0, 4)  -> <shape>   ('(' needs a comma; '[' one number)
//   absolute paths and URLs (/tmp/.., //host/..) -> <path>
//   guards L['self'].x, G['g'][0]              -> <guard>
//   kernel names cpp_fused_add_0, triton_poi_fused_.. -> <kernel>
//   generated names buf12 tmp3 arg0_1 primals_2 tangents_1 getitem_3 s0 u1 ks0 zuf0 i0 x1 r0_0
//     in_ptr0 out_ptr1 _tensor_constant0 _frozen_param3  -> <name>
//   FX node numbering add_3, relu_1            -> add, relu
//   numbers (ints, floats, exponents, signs, 3x4 dims)   -> N  (so "line 123" -> "line N")
//   long hex hashes                            -> <hash>
// Identifiers that merely contain digits (float32, int64, conv2d, log1p, atan2) are kept: they
// are words. Whitespace collapses to one space; the result keeps at most 300 bytes.
// A compiler failure (an exception type with CompileError or CompilationError in it) appends
// "; " and the compiler's first error, normalized (oracles/judge/CompilerError.h): "C++ compile error;
// error: 'tmp' was not declared in this scope".
// An Inductor lowering failure (a "target: aten.X" line, then the op's arguments) keys by its target
// instead of the arguments: the message before that line, normalized, then "lowering of aten.X"
// (oracles/judge/CompilerError.h, loweringFailure); the torch frames name the lowering or pass.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "oracles/judge/Traceback.h"
#include "oracles/judge/Verdict.h"

namespace tcfuzz::oracles {

/// The signature kind of a data-dependent error (Signature::kind).
inline constexpr const char* kDataDependentKind = "data-dependent";

struct Signature {
  std::string symptom;              ///< verdict spelling: "crash-mismatch", "numeric-divergence", ...
  /// "exception", "data-dependent" (an exception from a guard or an output on an unbacked size: GuardOnDataDependentSymNode
  /// and friends, which maintainers treat as bugs), "timeout", "oom", "signal SIGSEGV", "cuda-sticky-error", "numeric",
  /// "recompile"; "" for non-findings.
  std::string kind;
  /// Whether the kind is a raised exception of either kind ("exception", "data-dependent").
  bool raised() const { return kind == "exception" || kind == kDataDependentKind; }
  std::string failingMode;          ///< "compiled" or "eager" (the run that misbehaved); "" for numeric
  std::string phase;                ///< compile | run | backward | setup ... (crashes, timeouts, signals)
  std::string exceptionType;        ///< "InductorError(AssertionError)", "RuntimeError", ...
  std::string normalizedMessage;    ///< normalizeMessage of the root-cause message
  std::vector<std::string> frames;  ///< up to 3 innermost torch frames, "torch/_inductor/graph.py:call_function"
  std::vector<std::string> ops;     ///< numeric divergences: the sorted operator multiset

  /// Canonical one-line text of the identity: the symptom, then the non-empty fields as
  /// "name=value" in a fixed order, separated by " | " ('|' and '\' in values are escaped).
  std::string key() const;
  /// 16 lowercase hex digits: FNV-1a 64 of key(). Stable across runs, machines and builds.
  std::string id() const;

  bool operator==(const Signature&) const = default;
};

/// {"id", "key", "symptom", "kind", "failing_mode", "phase", "exception_type", "message", "frames", "ops"}.
nlohmann::json toJson(const Signature& signature);

/// The inverse of toJson (id and key are recomputed, not read); std::invalid_argument when `j` is
/// not an object or has no symptom.
Signature signatureFromJson(const nlohmann::json& j);

/// The signature of a judged program. programOps: the program's operator names (any order, with
/// repeats); used only for numeric divergences. Never throws on odd inputs (a verdict that does
/// not match the runs falls back to whichever run failed, then to the symptom alone).
Signature signatureOf(const TripleRun& runs, const VerdictReport& verdict, const std::vector<std::string>& programOps);

/// The guard of a Dynamo guard failure as its recompile reasons write it, without the user code and the
/// file Dynamo quotes after " #": "self._calls == 0   # self._calls += 1  # m.py:15 in forward" gives
/// "self._calls == 0".
std::string guardOfFailure(std::string_view failure);

/// The normalized head of an exception message (rules above).
std::string normalizeMessage(std::string_view message);

/// The first line of a message that says what went wrong, as raised (not normalized): Dynamo's
/// "backend='X' raised:" introduction and blank lines are skipped, so "backend='inductor'
/// raised:\nCppCompileError: C++ compile error" gives "CppCompileError: C++ compile error".
std::string messageHeadline(std::string_view message);

}  // namespace tcfuzz::oracles
