// Finding signatures: message normalization, torch frame extraction from real tracebacks, and the
// signature of each verdict (built from RunResult objects directly, no workers).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "oracles/judge/Signature.h"

using namespace tcfuzz::oracles;

namespace {

// torch 2.11 (CPU), a lowering that fails under the inductor backend, run through the harness.
// Inductor flattens the chain: InductorError's message names LoweringException and AssertionError.
constexpr const char* kFlatInductorTraceback = R"(Traceback (most recent call last):
  File "/work/main/fuzzer/worker/harness.py", line 186, in run
    out = fn(*inputs)
          ^^^^^^^^^^^
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py", line 472, in __call__
    return super().__call__(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/work/main/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1779, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
  File "/work/main/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1790, in _call_impl
    return forward_call(*args, **kwargs)
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py", line 1038, in compile_wrapper
    raise e.remove_dynamo_frames() from None  # see TORCHDYNAMO_VERBOSE=1
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_inductor/compile_fx.py", line 1053, in _compile_fx_inner
    raise InductorError(e, currentframe()).with_traceback(
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_inductor/graph.py", line 1025, in run
    return super().run(*args)
  File "/work/main/.venv/lib/python3.11/site-packages/torch/fx/interpreter.py", line 200, in run
    self.env[node] = self.run_node(node)
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_inductor/graph.py", line 1809, in run_node
    result = super().run_node(n)
  File "/work/main/.venv/lib/python3.11/site-packages/torch/fx/interpreter.py", line 297, in run_node
    return getattr(self, n.op)(n.target, args, kwargs)
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_inductor/graph.py", line 1417, in call_function
    raise LoweringException(
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_inductor/graph.py", line 1399, in call_function
    out = lowerings[target](*args, **kwargs)  # type: ignore[index]
          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/tmp/plugins/planted_bug.py", line 8, in bad
    assert False, "planted: bad sigmoid lowering for buf3 of size [3, 4]"
torch._inductor.exc.InductorError: LoweringException: AssertionError: planted: bad sigmoid lowering for buf3 of size [3, 4]
  target: aten.sigmoid.default
      stack_traces = {,
        File "/tmp/job/program.py", line 4, in forward,
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_quoted/in_message.py", line 1, in not_a_frame
Found from :
   File "/tmp/job/program.py", line 5, in forward
)";

// The same failure in the chained form (torch <= 2.5 printed BackendCompilerFailed this way): the
// root cause comes first, inside Inductor's lowering.
constexpr const char* kChainedInductorTraceback = R"(Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/torch/_inductor/graph.py", line 1399, in call_function
    out = lowerings[target](*args, **kwargs)
  File "/opt/venv/lib/python3.11/site-packages/torch/_inductor/lowering.py", line 462, in wrapped
    out = decomp_fn(*args, **kwargs)
  File "/opt/venv/lib/python3.11/site-packages/torch/_inductor/lowering.py", line 640, in inner
    assert len(ranges) == len(other.get_size()), f"size mismatch for {buf}"
AssertionError: size mismatch for buf3: [3, 4] vs [4]

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/torch/_inductor/graph.py", line 1417, in call_function
    raise LoweringException(e, target, args, kwargs).with_traceback(
torch._inductor.exc.LoweringException: AssertionError: size mismatch for buf3: [3, 4] vs [4]
  target: aten.sigmoid.default

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/work/main/fuzzer/worker/harness.py", line 186, in run
    out = fn(*inputs)
  File "/opt/venv/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py", line 451, in _fn
    return fn(*args, **kwargs)
  File "/opt/venv/lib/python3.11/site-packages/torch/_dynamo/output_graph.py", line 1446, in _call_user_compiler
    raise BackendCompilerFailed(self.compiler_fn, e).with_traceback(
torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:
LoweringException: AssertionError: size mismatch for buf3: [3, 4] vs [4]
  target: aten.sigmoid.default
)";

// torch 2.11, fullgraph=True on a missing aten op: Dynamo converts the AttributeError inside an
// except block and strips the traceback of the middle exception.
constexpr const char* kDynamoChainTraceback = R"(Traceback (most recent call last):
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/variables/misc.py", line 1596, in var_getattr
    attr_value = getattr(self.value, name)
                 ^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_ops.py", line 1379, in __getattr__
    raise AttributeError(
AttributeError: '_OpNamespace' 'aten' object has no attribute 'nonexistent_op_xyz'

During handling of the above exception, another exception occurred:

torch._dynamo.exc.ObservedAttributeError

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/work/main/fuzzer/worker/harness.py", line 186, in run
    out = fn(*inputs)
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py", line 1034, in compile_wrapper
    raise e.with_traceback(None) from e.__cause__  # User compiler error
torch._dynamo.exc.Unsupported: Observed exception
  Explanation: Dynamo found no exception handler at the top-level compiled function when encountering an exception.

from user code:
   File "/tmp/job/program.py", line 5, in forward
    return torch.ops.aten.nonexistent_op_xyz(x)
)";

// torch 2.11, a backend that raises: BackendCompilerFailed's message names the inner type.
constexpr const char* kBackendTraceback = R"(Traceback (most recent call last):
  File "/work/main/fuzzer/worker/harness.py", line 186, in run
    out = fn(*inputs)
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py", line 1038, in compile_wrapper
    raise e.remove_dynamo_frames() from None  # see TORCHDYNAMO_VERBOSE=1
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/output_graph.py", line 2689, in _call_user_compiler
    raise BackendCompilerFailed(
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/output_graph.py", line 2664, in _call_user_compiler
    compiled_fn = compiler_fn(gm, example_inputs)
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/repro/after_dynamo.py", line 156, in __call__
    compiled_gm = compiler_fn(gm, example_inputs)
  File "/work/main/.venv/lib/python3.11/site-packages/torch/__init__.py", line 2535, in __call__
    return self.compiler_fn(model_, inputs_, **self.kwargs)
  File "/tmp/plugins/planted_bug.py", line 16, in be
    raise RuntimeError("planted backend failure at 0x7f12ab34")
torch._dynamo.exc.BackendCompilerFailed: backend='be' raised:
RuntimeError: planted backend failure at 0x7f12ab34
)";

constexpr const char* kFlatInductorMessage =
    "LoweringException: AssertionError: planted: bad sigmoid lowering for buf3 of size [3, 4]\n"
    "  target: aten.sigmoid.default\n  args[0]: TensorBox(StorageBox(\n";

RunResult okRun() {
  RunResult r;
  r.status = RunStatus::Ok;
  r.phase = "done";
  return r;
}

RunResult raised(const std::string& phase, const std::string& type, const std::string& message,
                 const std::string& traceback = "") {
  RunResult r;
  r.status = RunStatus::Exception;
  r.phase = phase;
  r.exception = ExceptionInfo{type, "builtins." + type, message, traceback};
  return r;
}

RunResult stopped(RunStatus status, const std::string& phase, const std::string& signalName = "") {
  RunResult r;
  r.status = status;
  r.phase = phase;
  r.signalName = signalName;
  return r;
}

Signature crashOf(const RunResult& compiled) {
  return signatureOf(TripleRun{okRun(), compiled, okRun()}, VerdictReport{Verdict::CrashMismatch, "", {}}, {});
}

}  // namespace

// --- normalizeMessage ------------------------------------------------------------------------------

TEST(NormalizeMessage, StripsNumbersAddressesAndSizes) {
  std::string a = normalizeMessage(
      "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1, "
      "got torch.Size([3, 4]) and [3, 4] and (3, 4) at 0x7f12ab34cd00 with eps 1e-05 and scale -1.5");
  std::string b = normalizeMessage(
      "The size of tensor a (17) must match the size of tensor b (2) at non-singleton dimension 0, "
      "got torch.Size([8]) and [s0, 5, 6] and (2, u1) at 0x55aa with eps 0.001 and scale 2");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a,
            "The size of tensor a (N) must match the size of tensor b (N) at non-singleton dimension N, "
            "got <shape> and <shape> and <shape> at <addr> with eps N and scale N");
  EXPECT_EQ(normalizeMessage("mat1 and mat2 shapes cannot be multiplied (3x4 and 5x6)"),
            normalizeMessage("mat1 and mat2 shapes cannot be multiplied (128x64 and 32x16)"));
  EXPECT_EQ(normalizeMessage("mat1 and mat2 shapes cannot be multiplied (3x4 and 5x6)"),
            "mat1 and mat2 shapes cannot be multiplied (NxN and NxN)");
}

TEST(NormalizeMessage, StripsGeneratedNamesPathsAndGuards) {
  std::string a = normalizeMessage(
      "buf12 of cpp_fused_add_mul_0 reads tmp3 and arg0_1, primals_2 (s0*4) in "
      "/tmp/torchinductor_root/ab/cabcd1234.py, line 123; guard L['self'].layers[0].weight failed; "
      "node add_3 from triton_poi_fused_relu_1");
  std::string b = normalizeMessage(
      "buf7 of cpp_fused_sigmoid_2 reads tmp0 and arg3_1, primals_11 (s1*4) in "
      "/tmp/torchinductor_user/zz/czzzz9.py, line 9; guard L['x'] failed; node add from triton_poi_fused_add_0");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a,
            "<name> of <kernel> reads <name> and <name>, <name> (<name>*N) in <path>, line N; "
            "guard <guard> failed; node add from <kernel>");
}

TEST(NormalizeMessage, DifferentWordsStayDifferent) {
  EXPECT_NE(normalizeMessage("index 5 is out of bounds for dimension 0 with size 3"),
            normalizeMessage("index 5 is out of range for dimension 0 with size 3"));
  // Digits inside words are not numbers: dtypes and op names keep their identity.
  EXPECT_NE(normalizeMessage("expected float32 but got float64"), normalizeMessage("expected float32 but got int64"));
  EXPECT_EQ(normalizeMessage("conv2d got log1p of atan2"), "conv2d got log1p of atan2");
  EXPECT_NE(normalizeMessage("unsupported op aten.sigmoid"), normalizeMessage("unsupported op aten.tanh"));
}

TEST(NormalizeMessage, TakesTheHeadCollapsesWhitespaceAndCaps) {
  EXPECT_EQ(normalizeMessage("\n  first   line\twith  spaces\n  second line\n  third line\n"),
            "first line with spaces second line");
  EXPECT_EQ(normalizeMessage("planted backend failure at 0x7f12ab34\n\nSet TORCHDYNAMO_VERBOSE=1 for the internal"),
            "planted backend failure at <addr>");
  EXPECT_EQ(normalizeMessage("Data-dependent branching\nfrom user code:\n   File \"/tmp/p.py\", line 3"),
            "Data-dependent branching");
  std::string longMessage(2000, 'a');
  EXPECT_LE(normalizeMessage(longMessage).size(), 300u);
  std::string words;
  for (int i = 0; i < 100; ++i) words += "word buf" + std::to_string(i) + " ";
  std::string capped = normalizeMessage(words);
  EXPECT_LE(capped.size(), 300u);
  EXPECT_GT(capped.size(), 250u);
  EXPECT_TRUE(capped.size() >= 6 && capped.substr(capped.size() - 6) == "<name>") << capped;  // whole tokens only
  EXPECT_EQ(normalizeMessage(""), "");
}

// --- torchFrames ----------------------------------------------------------------------------------

TEST(TorchFrames, FlatInductorErrorGivesInnermostTorchFrames) {
  std::vector<std::string> frames = torchFrames(kFlatInductorTraceback);
  // The plugin frame is not torch; the re-raised call_function appears once; frames quoted in the
  // exception message are not frames.
  EXPECT_EQ(frames, (std::vector<std::string>{"torch/_inductor/graph.py:call_function", "torch/fx/interpreter.py:run_node",
                                              "torch/_inductor/graph.py:run_node"}));
  std::vector<std::string> all = torchFrames(kFlatInductorTraceback, 100);
  for (const std::string& f : all) {
    EXPECT_EQ(f.find("eval_frame"), std::string::npos) << f;
    EXPECT_EQ(f.find("harness"), std::string::npos) << f;
    EXPECT_EQ(f.find("module.py"), std::string::npos) << f;
    EXPECT_EQ(f.find("in_message"), std::string::npos) << f;
  }
  EXPECT_EQ(all.back(), "torch/_inductor/compile_fx.py:_compile_fx_inner");
  EXPECT_EQ(torchFrames(kFlatInductorTraceback, 1), (std::vector<std::string>{"torch/_inductor/graph.py:call_function"}));
}

TEST(TorchFrames, ChainedTracebackUsesTheRootCause) {
  // lowering.py's forwarding `wrapped` is skipped; its `inner` does the work (an assert) and stays.
  EXPECT_EQ(torchFrames(kChainedInductorTraceback),
            (std::vector<std::string>{"torch/_inductor/lowering.py:inner", "torch/_inductor/graph.py:call_function"}));
}

TEST(TorchFrames, DynamoChainFallsBackPastStrippedBlocks) {
  EXPECT_EQ(torchFrames(kDynamoChainTraceback),
            (std::vector<std::string>{"torch/_ops.py:__getattr__", "torch/_dynamo/variables/misc.py:var_getattr"}));
}

TEST(TorchFrames, SkipsCallProtocolAndReproWrappers) {
  EXPECT_EQ(torchFrames(kBackendTraceback), (std::vector<std::string>{"torch/_dynamo/output_graph.py:_call_user_compiler"}));
  EXPECT_TRUE(torchFrames("").empty());
  EXPECT_TRUE(torchFrames("RuntimeError: boom\n").empty());
}

// --- Signatures of exceptions ---------------------------------------------------------------------

TEST(Signature, FlatInductorErrorNamesRootType) {
  Signature s = crashOf(raised("compile", "InductorError", kFlatInductorMessage, kFlatInductorTraceback));
  EXPECT_EQ(s.symptom, "crash-mismatch");
  EXPECT_EQ(s.kind, "exception");
  EXPECT_EQ(s.failingMode, "compiled");
  EXPECT_EQ(s.phase, "compile");
  EXPECT_EQ(s.exceptionType, "InductorError(AssertionError)");
  EXPECT_EQ(s.normalizedMessage, "planted: bad sigmoid lowering for <name> of size <shape>; lowering of aten.sigmoid.default");
  EXPECT_EQ(s.frames.size(), 3u);
}

TEST(Signature, ADataDependentErrorIsAKindOfItsOwnThatDedupsAsAnException) {
  Signature guard = crashOf(raised("compile", "GuardOnDataDependentSymNode",
                                   "Could not guard on data-dependent expression Eq(u0, 1) (unhinted: Eq(u0, 1))"));
  EXPECT_EQ(guard.kind, "data-dependent");
  EXPECT_TRUE(guard.raised());
  Signature output = crashOf(raised("compile", "InductorError", "DataDependentOutputException: aten._local_scalar_dense.default"));
  EXPECT_EQ(output.kind, "data-dependent");
  Signature plain = crashOf(raised("compile", "InductorError", "AssertionError: wrong number of dimensions"));
  EXPECT_EQ(plain.kind, "exception");
  EXPECT_TRUE(plain.raised());
  EXPECT_NE(guard.key(), plain.key());
}

TEST(Signature, ChainedAndBackendWrappersNameRootType) {
  Signature chained = crashOf(raised("compile", "BackendCompilerFailed",
                                     "backend='inductor' raised:\nLoweringException: AssertionError: size mismatch",
                                     kChainedInductorTraceback));
  EXPECT_EQ(chained.exceptionType, "BackendCompilerFailed(AssertionError)");
  EXPECT_EQ(chained.normalizedMessage, "size mismatch for <name>: <shape> vs <shape>");
  EXPECT_EQ(chained.frames.front(), "torch/_inductor/lowering.py:inner");

  Signature backend = crashOf(raised("compile", "BackendCompilerFailed",
                                     "backend='be' raised:\nRuntimeError: planted backend failure at 0x7f12ab34\n\n"
                                     "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace",
                                     kBackendTraceback));
  EXPECT_EQ(backend.exceptionType, "BackendCompilerFailed(RuntimeError)");
  EXPECT_EQ(backend.normalizedMessage, "planted backend failure at <addr>");

  Signature dynamo = crashOf(raised("compile", "Unsupported", "Observed exception\n  Explanation: Dynamo found no",
                                    kDynamoChainTraceback));
  EXPECT_EQ(dynamo.exceptionType, "Unsupported(AttributeError)");
  EXPECT_EQ(dynamo.normalizedMessage, "'_OpNamespace' 'aten' object has no attribute 'nonexistent_op_xyz'");

  Signature plain = crashOf(raised("run", "RuntimeError", "boom"));
  EXPECT_EQ(plain.exceptionType, "RuntimeError");
  EXPECT_TRUE(plain.frames.empty());
}

TEST(Signature, SameCrashWithOtherSizesAndNamesHasTheSameId) {
  std::string traceback2 = kFlatInductorTraceback;
  // Another program, another machine: other sizes, buffer names, line numbers and install path.
  auto replaceAll = [](std::string& s, const std::string& from, const std::string& to) {
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  };
  replaceAll(traceback2, "/work/main/.venv/lib/python3.11/site-packages/", "/usr/local/lib/python3.12/dist-packages/");
  replaceAll(traceback2, "line 1", "line 2");
  replaceAll(traceback2, "buf3 of size [3, 4]", "buf17 of size [8, 2, 5]");
  std::string message2 =
      "LoweringException: AssertionError: planted: bad sigmoid lowering for buf17 of size [8, 2, 5]\n"
      "  target: aten.sigmoid.default\n";
  Signature a = crashOf(raised("compile", "InductorError", kFlatInductorMessage, kFlatInductorTraceback));
  Signature b = crashOf(raised("compile", "InductorError", message2, traceback2));
  EXPECT_EQ(a.key(), b.key());
  EXPECT_EQ(a.id(), b.id());
}

TEST(Signature, DifferentExceptionTypeOrPlaceHasAnotherId) {
  Signature base = crashOf(raised("compile", "InductorError", kFlatInductorMessage, kFlatInductorTraceback));
  std::string otherMessage = kFlatInductorMessage;
  otherMessage.replace(otherMessage.find("AssertionError"), 14, "IndexError");
  Signature otherType = crashOf(raised("compile", "InductorError", otherMessage, kFlatInductorTraceback));
  EXPECT_EQ(otherType.exceptionType, "InductorError(IndexError)");
  EXPECT_NE(base.id(), otherType.id());
  Signature outerType = crashOf(raised("compile", "RuntimeError", "planted: bad sigmoid lowering for buf3 of size [3, 4]",
                                       kFlatInductorTraceback));
  EXPECT_NE(base.id(), outerType.id());
  Signature otherFrames = crashOf(raised("compile", "InductorError", kFlatInductorMessage, kBackendTraceback));
  EXPECT_NE(base.id(), otherFrames.id());
  Signature otherPhase = crashOf(raised("run", "InductorError", kFlatInductorMessage, kFlatInductorTraceback));
  EXPECT_NE(base.id(), otherPhase.id());
}

// --- Numeric, timeouts, signals and the other verdicts --------------------------------------------

TEST(Signature, NumericDivergenceDependsOnTheOpMultisetNotItsOrder) {
  TripleRun runs{okRun(), okRun(), okRun()};
  VerdictReport numeric{Verdict::NumericDivergence, "rmse", {}};
  Signature a = signatureOf(runs, numeric, {"aten.mul", "aten.add", "aten.sigmoid", "aten.add"});
  Signature b = signatureOf(runs, numeric, {"aten.add", "aten.sigmoid", "aten.add", "aten.mul"});
  Signature c = signatureOf(runs, numeric, {"aten.add", "aten.sigmoid", "aten.mul"});
  Signature d = signatureOf(runs, numeric, {"aten.add", "aten.tanh", "aten.add", "aten.mul"});
  EXPECT_EQ(a.kind, "numeric");
  EXPECT_EQ(a.failingMode, "");
  EXPECT_EQ(a.ops, (std::vector<std::string>{"aten.add", "aten.add", "aten.mul", "aten.sigmoid"}));
  EXPECT_EQ(a.id(), b.id());
  EXPECT_NE(a.id(), c.id());  // a multiset: repeats count
  EXPECT_NE(a.id(), d.id());
}

TEST(Signature, TimeoutPhaseIsPartOfTheIdentity) {
  Signature compile = crashOf(stopped(RunStatus::Timeout, "compile"));
  Signature run = crashOf(stopped(RunStatus::Timeout, "run"));
  EXPECT_EQ(compile.kind, "timeout");
  EXPECT_EQ(compile.phase, "compile");
  EXPECT_NE(compile.id(), run.id());
  EXPECT_EQ(compile.id(), crashOf(stopped(RunStatus::Timeout, "compile")).id());
}

TEST(Signature, SignalsAreNamedAndPhased) {
  Signature segv = crashOf(stopped(RunStatus::Signal, "run", "SIGSEGV"));
  Signature abrt = crashOf(stopped(RunStatus::Signal, "run", "SIGABRT"));
  Signature segvCompile = crashOf(stopped(RunStatus::Signal, "compile", "SIGSEGV"));
  EXPECT_EQ(segv.kind, "signal SIGSEGV");
  EXPECT_EQ(segv.key(), "crash-mismatch | kind=signal SIGSEGV | mode=compiled | phase=run");
  EXPECT_NE(segv.id(), abrt.id());
  EXPECT_NE(segv.id(), segvCompile.id());
  RunResult numbered = stopped(RunStatus::Signal, "run");
  numbered.signal = 11;
  EXPECT_EQ(crashOf(numbered).kind, "signal 11");
  RunResult exited = stopped(RunStatus::Signal, "run");
  exited.exitCode = 3;
  EXPECT_EQ(crashOf(exited).kind, "exit 3");
  EXPECT_EQ(crashOf(stopped(RunStatus::OutOfMemory, "compile")).kind, "oom");
}

TEST(SignatureOf, EveryVerdictGivesASignature) {
  RunResult eagerRaised = raised("run", "RuntimeError", "mat1 and mat2 shapes cannot be multiplied (3x4 and 5x6)",
                                 "Traceback (most recent call last):\n"
                                 "  File \"/tmp/job/program.py\", line 6, in forward\n    return x @ y\n"
                                 "RuntimeError: mat1 and mat2 shapes cannot be multiplied (3x4 and 5x6)\n");
  Signature status = signatureOf(TripleRun{eagerRaised, okRun(), okRun()},
                                 VerdictReport{Verdict::StatusMismatch, "eager failed but compiled ran", {}}, {});
  EXPECT_EQ(status.symptom, "status-mismatch");
  EXPECT_EQ(status.failingMode, "eager");
  EXPECT_EQ(status.kind, "exception");
  EXPECT_EQ(status.phase, "run");
  EXPECT_EQ(status.exceptionType, "RuntimeError");
  EXPECT_EQ(status.normalizedMessage, "mat1 and mat2 shapes cannot be multiplied (NxN and NxN)");
  EXPECT_TRUE(status.frames.empty());  // the program file is not torch

  Signature crash = crashOf(raised("compile", "BackendCompilerFailed", "backend='be' raised:\nRuntimeError: x",
                                   kBackendTraceback));
  EXPECT_EQ(crash.failingMode, "compiled");

  // A verdict that does not match the runs falls back to the run that failed.
  Signature swapped = signatureOf(TripleRun{eagerRaised, okRun(), okRun()},
                                  VerdictReport{Verdict::CrashMismatch, "", {}}, {});
  EXPECT_EQ(swapped.failingMode, "eager");

  for (Verdict v : {Verdict::Agree, Verdict::Nondeterministic, Verdict::InvalidProgram}) {
    Signature s = signatureOf(TripleRun{okRun(), okRun(), okRun()}, VerdictReport{v, "", {}}, {"aten.add"});
    EXPECT_EQ(s.symptom, toString(v));
    EXPECT_EQ(s.key(), std::string(toString(v)));
    EXPECT_TRUE(s.kind.empty() && s.failingMode.empty() && s.frames.empty() && s.ops.empty());
    EXPECT_EQ(s.id().size(), 16u);
  }
  // Both runs fine but a crash verdict: still a signature, symptom only.
  Signature odd = signatureOf(TripleRun{okRun(), okRun(), okRun()}, VerdictReport{Verdict::CrashMismatch, "", {}}, {});
  EXPECT_EQ(odd.key(), "crash-mismatch");
}

TEST(Signature, KeyIdAndJson) {
  Signature s = crashOf(raised("compile", "InductorError", kFlatInductorMessage, kFlatInductorTraceback));
  EXPECT_EQ(s.key(),
            "crash-mismatch | kind=exception | mode=compiled | phase=compile | type=InductorError(AssertionError) | "
            "message=planted: bad sigmoid lowering for <name> of size <shape>; lowering of aten.sigmoid.default | "
            "frames=torch/_inductor/graph.py:call_function < torch/fx/interpreter.py:run_node < "
            "torch/_inductor/graph.py:run_node");
  std::string id = s.id();
  EXPECT_EQ(id.size(), 16u);
  EXPECT_TRUE(std::all_of(id.begin(), id.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) && !std::isupper(static_cast<unsigned char>(c)); }));
  // FNV-1a 64 is fixed: the id of a key never changes between builds.
  Signature agree;
  agree.symptom = "agree";
  EXPECT_EQ(agree.id(), "3c3fde156cff1a83");  // FNV-1a 64 of "agree"
  Signature empty;
  EXPECT_EQ(empty.id(), "cbf29ce484222325");  // FNV-1a 64 of the empty string
  Signature pipes;
  pipes.symptom = "crash-mismatch";
  pipes.normalizedMessage = "a | b";
  EXPECT_EQ(pipes.key(), "crash-mismatch | message=a \\| b");

  nlohmann::json j = toJson(s);
  EXPECT_EQ(j.at("id"), id);
  EXPECT_EQ(j.at("key"), s.key());
  EXPECT_EQ(j.at("exception_type"), "InductorError(AssertionError)");
  EXPECT_EQ(j.at("failing_mode"), "compiled");
  EXPECT_EQ(j.at("frames").size(), 3u);
  EXPECT_TRUE(j.at("ops").empty());
}

namespace tcfuzz::oracles {
TEST(Signature, TheHeadlineSkipsDynamosBackendRaisedIntroduction) {
  EXPECT_EQ(messageHeadline("backend='inductor' raised:\nCppCompileError: C++ compile error\n\nSet TORCH_LOGS"),
            "CppCompileError: C++ compile error");
  EXPECT_EQ(messageHeadline("\n  mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)\nmore"),
            "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  EXPECT_EQ(messageHeadline("backend='eager' raised:"), "backend='eager' raised:");  // nothing follows: kept
  EXPECT_EQ(messageHeadline(""), "");
}
}  // namespace tcfuzz::oracles

namespace tcfuzz::oracles {
// Two different Inductor C++ codegen bugs used to share one signature ("C++ compile error"); the
// compiler's first error now splits them, and keeps one bug in two programs together.
TEST(Signature, CompilerFailuresAreKeyedByTheCompilersFirstError) {
  auto cppError = [](const std::string& output) {
    return crashOf(raised("backward", "InductorError",
                          "CppCompileError: C++ compile error\n\nCommand:\ng++ /tmp/k.cpp\n\nOutput:\n" + output));
  };
  Signature undeclared = cppError("/tmp/a/k.cpp:132:199: error: \u2018tmp0\u2019 was not declared in this scope; did "
                                  "you mean \u2018tmp5\u2019?\n");
  Signature undeclaredElsewhere = cppError("/tmp/b/q.cpp:87:12: error: \u2018tmp3\u2019 was not declared in this "
                                           "scope\n");
  Signature decltypeFloat = cppError("/tmp/a/k.cpp:121:40: error: \u2018decltype\u2019 evaluates to \u2018float\u2019,"
                                     " which is not a class or enumeration type\n");
  EXPECT_EQ(undeclared.exceptionType, "InductorError(CppCompileError)");
  EXPECT_EQ(undeclared.normalizedMessage, "C++ compile error; error: 'tmp' was not declared in this scope");
  EXPECT_EQ(undeclared.id(), undeclaredElsewhere.id());
  EXPECT_NE(undeclared.id(), decltypeFloat.id());
  // Not a compiler failure: an "error:" in its message is left alone.
  Signature other = crashOf(raised("run", "RuntimeError", "x.cpp:1:1: error: planted"));
  EXPECT_EQ(other.normalizedMessage.find("; error:"), std::string::npos) << other.normalizedMessage;
}
}  // namespace tcfuzz::oracles

// --- sticky CUDA errors --------------------------------------------------------------------------

TEST(StickyCudaError, IsItsOwnKindOfCrashWhetherRaisedOrFatal) {
  RunResult illegal = raised("run", "AcceleratorError", "CUDA error: an illegal memory access was encountered\n"
                             "CUDA kernel errors might be asynchronously reported");
  EXPECT_EQ(stickyCudaError(illegal), "an illegal memory access was encountered");
  Signature sig = crashOf(illegal);
  EXPECT_EQ(sig.kind, "cuda-sticky-error");
  EXPECT_EQ(sig.exceptionType, "AcceleratorError");

  // A device-side assert that aborted the process: the marker is in its stderr.
  RunResult aborted = stopped(RunStatus::Signal, "run", "SIGABRT");
  aborted.signal = 6;
  aborted.stderrTail = "Assertion `index out of bounds` failed.\nRuntimeError: CUDA error: device-side assert triggered";
  EXPECT_EQ(crashOf(aborted).kind, "cuda-sticky-error");

  // An ordinary exception, and a CUDA out-of-memory (not sticky), keep their kinds.
  EXPECT_EQ(crashOf(raised("run", "RuntimeError", "shape mismatch")).kind, "exception");
  RunResult oom = stopped(RunStatus::OutOfMemory, "run");
  oom.stderrTail = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB";
  EXPECT_EQ(stickyCudaError(oom), "");
  EXPECT_EQ(crashOf(oom).kind, "oom");
  EXPECT_NE(crashOf(illegal).id(), crashOf(raised("compile", "AcceleratorError", "CUDA error: an illegal memory access was "
                                                  "encountered")).id());
}

TEST(Signature, ARecompileStormIsKeyedByTheGuardThatFailedNotWhereTheJobRan) {
  // Dynamo quotes the user's line and a job-specific path after the guard: two jobs of one bug share a key.
  TripleRun one, two;
  one.compiled.repeatRecompiles = {"self._calls == 0 # self._calls += 1 # mp/tcfuzz-run-kYpNp3/jobs/000000-compiled/p.py:15 in forward"};
  two.compiled.repeatRecompiles = {"self._calls == 0 # self._calls += 1 # mp/tcfuzz-run-Q2xaa1/jobs/000007-compiled/p.py:15 in forward"};
  VerdictReport storm{Verdict::RecompileStorm, "call 2 recompiled", {}};
  Signature a = signatureOf(one, storm, {"aten.tanh"}), b = signatureOf(two, storm, {"aten.tanh"});
  EXPECT_EQ(a.id(), b.id());
  EXPECT_EQ(a.kind, "recompile");
  EXPECT_EQ(a.phase, "second-call");
  EXPECT_EQ(a.normalizedMessage, normalizeMessage("self._calls == 0"));
  EXPECT_TRUE(a.ops.empty());  // the guard, not the program's ops
  two.compiled.repeatRecompiles = {"len(self.cache) == 2 # for k in self.cache: # p.py:9 in forward"};
  EXPECT_NE(signatureOf(two, storm, {"aten.tanh"}).id(), a.id());
  EXPECT_EQ(guardOfFailure("tensor 'x' size mismatch at index 0. expected 8, actual 7"),
            "tensor 'x' size mismatch at index 0. expected 8, actual 7");
}
