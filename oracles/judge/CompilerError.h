#pragma once
// The first error a C/C++ compiler printed in a torch exception message (Inductor's CppCompileError
// quotes the g++ or clang command and its output), normalized so that two different codegen bugs get
// two signatures while one bug keeps one across programs (docs/architecture.md, "Triage": for a C++ compile
// failure, the first `error:` line of the compiler output).
//
// Normalization of the error text (after "error: "):
//   typographic quotes ‘x’ “x” -> 'x' "x"
//   generated names with a number tmp3 buf12 x2 ks0 in_ptr0 out_ptr3 -> tmp buf x ks in_ptr out_ptr
//   template arguments <float, 4> (nested too)                   -> <T>
//   numbers (4L, 0x1f, 2.5f, 123)                                -> N
//   a trailing "; did you mean 'tmp5'?" suggestion               -> dropped
//   whitespace runs                                              -> one space; at most 240 bytes
#include <optional>
#include <string>
#include <string_view>

namespace tcfuzz::oracles {

/// "error: <normalized text>" of the first compiler diagnostic marked "error:" or "fatal error:"
/// ("<file>:<line>:<col>: error: ...", or a line that starts with "error:"); nullopt when there is none.
std::optional<std::string> firstCompilerError(std::string_view message);

/// The normalization above, of the text after "error: ".
std::string normalizeCompilerError(std::string_view text);

/// An Inductor lowering failure (LoweringException) names the aten op it was lowering on a line
/// "  target: aten.max_pool2d_with_indices_backward.default", followed by the op's arguments, which
/// differ between programs. Returns the message up to that line and the target, or nullopt when the
/// message names no target. The signature keys such a failure by the target (and, through its torch
/// frames, the failing lowering or pass), never by the arguments.
struct LoweringFailure {
  std::string head;    ///< the message before the target line (often empty: a bare AssertionError)
  std::string target;  ///< "aten.max_pool2d_with_indices_backward.default"
};
std::optional<LoweringFailure> loweringFailure(std::string_view message);

}  // namespace tcfuzz::oracles
