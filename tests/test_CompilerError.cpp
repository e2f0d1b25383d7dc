// CompilerError: the first error of a compiler's output, normalized. The messages are excerpts of
// real CppCompileErrors raised by torch 2.11.0's Inductor on CPU (corpus/regressions/inductor_cpp_*),
// their paths shortened.
#include <gtest/gtest.h>

#include "oracles/judge/CompilerError.h"
#include "oracles/judge/Signature.h"

namespace tcfuzz::oracles {
namespace {

constexpr const char* kUndeclaredTmp =
    "CppCompileError: C++ compile error\n\nCommand:\ng++ /tmp/a/inductor-cache/l5/cl5k.main.cpp -O3 -o "
    "/tmp/a/cl5k.main.so\n\nOutput:\n/tmp/a/inductor-cache/l5/cl5k.main.cpp: In function \u2018void kernel(const "
    "float*, float*)\u2019:\n/tmp/a/inductor-cache/l5/cl5k.main.cpp:132:199: error: \u2018tmp0\u2019 was not "
    "declared in this scope; did you mean \u2018tmp5\u2019?\n  132 |     transpose_mxn<float,4,3,true>(tmp5, 3L, "
    "out_ptr3 + 72L*tmp0);\n      |  ^~~~\n/tmp/a/cl5k.main.cpp:140:3: error: \u2018tmp9\u2019 was not declared\n";

constexpr const char* kDecltype =
    "CppCompileError: C++ compile error\n\nCommand:\ng++ /tmp/b/c6oq.main.cpp\n\nOutput:\n/tmp/b/c6oq.main.cpp: In "
    "lambda function:\n/tmp/b/c6oq.main.cpp:121:40: error: \u2018decltype\u2019 evaluates to \u2018float\u2019, "
    "which is not a class or enumeration type\n  121 |  return decltype(tmp43)::blendv(tmp44, tmp43);\n";

TEST(CompilerError, TheFirstErrorLineIsFoundAndNormalized) {
  EXPECT_EQ(firstCompilerError(kUndeclaredTmp), "error: 'tmp' was not declared in this scope");
  EXPECT_EQ(firstCompilerError(kDecltype),
            "error: 'decltype' evaluates to 'float', which is not a class or enumeration type");
  EXPECT_EQ(firstCompilerError("x.cpp:1:10: fatal error: foo.h: No such file or directory\ncompilation terminated."),
            "error: foo.h: No such file or directory");
  EXPECT_EQ(firstCompilerError("error: linker command failed with exit code 1"),
            "error: linker command failed with exit code N");
}

TEST(CompilerError, NoErrorLineIsNone) {
  EXPECT_EQ(firstCompilerError("CppCompileError: C++ compile error\n\nOutput:\nx.cpp:3:1: warning: unused\n"),
            std::nullopt);
  EXPECT_EQ(firstCompilerError(""), std::nullopt);
}

TEST(CompilerError, GeneratedNamesNumbersAndTemplateArgumentsAreMasked) {
  EXPECT_EQ(normalizeCompilerError("no match for \u2018operator+\u2019 (operand types are "
                                   "\u2018at::vec::Vectorized<float>\u2019 and \u2018VectorizedN<float, 2>\u2019)"),
            "no match for 'operator+' (operand types are 'at::vec::Vectorized<T>' and 'VectorizedN<T>')");
  EXPECT_EQ(normalizeCompilerError("cannot convert \u2018buf12\u2019 to \u2018int64_t\u2019 in in_ptr0[ks1 + 4L]"),
            "cannot convert 'buf' to 'int64_t' in in_ptr[ks + N]");
  // Words that merely end in digits are not generated names; a comparison's '<' is no template.
  EXPECT_EQ(normalizeCompilerError("\u2018atan2\u2019 with float32 where x0 < 3"), "'atan2' with float32 where x < N");
  EXPECT_EQ(normalizeCompilerError("a\n   b\t c  "), "a b c");
  EXPECT_EQ(normalizeCompilerError(std::string(600, 'e')).size(), 240u);
}

}  // namespace
}  // namespace tcfuzz::oracles

using namespace tcfuzz::oracles;

TEST(CompilerError, ALoweringFailureIsKeyedByItsTargetNotItsArguments) {
  auto bare = loweringFailure(
      "\n  target: aten.max_pool2d_with_indices_backward.default\n  args[0]: TensorBox(StorageBox(\n    buf3\n");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->head, "\n");
  EXPECT_EQ(bare->target, "aten.max_pool2d_with_indices_backward.default");
  auto headed = loweringFailure("planted: bad sigmoid lowering\n  target: aten.sigmoid.default\n  args[0]: x\n");
  ASSERT_TRUE(headed);
  EXPECT_EQ(headed->head, "planted: bad sigmoid lowering\n");
  EXPECT_EQ(headed->target, "aten.sigmoid.default");
  EXPECT_FALSE(loweringFailure("RuntimeError: shapes do not match"));
  EXPECT_FALSE(loweringFailure("the target: of this sentence is not a line start"));
}

TEST(CompilerError, TwoProgramsHittingOneLoweringBugShareASignature) {
  auto signatureOfMessage = [](const std::string& message) {
    ExceptionInfo exc{"InductorError", "torch._inductor.exc.InductorError", message, ""};
    RunResult compiled;
    compiled.status = RunStatus::Exception;
    compiled.phase = "backward";
    compiled.exception = exc;
    TripleRun runs{RunResult{}, compiled, RunResult{}};
    return signatureOf(runs, VerdictReport{Verdict::CrashMismatch, "", {}}, {});
  };
  Signature a = signatureOfMessage(
      "LoweringException: AssertionError: \n  target: aten.max_pool2d_with_indices_backward.default\n"
      "  args[0]: TensorBox(StorageBox(\n    ComputedBuffer(name='buf3', layout=FixedLayout('cpu', torch.float32, size=[2, 3]");
  Signature b = signatureOfMessage(
      "LoweringException: AssertionError: \n  target: aten.max_pool2d_with_indices_backward.default\n"
      "  args[0]: TensorBox(\n    ReinterpretView(\n      StorageBox(\n        InputBuffer(name='tangents_1'");
  Signature other = signatureOfMessage(
      "LoweringException: AssertionError: \n  target: aten.avg_pool2d_backward.default\n  args[0]: TensorBox(x)");
  EXPECT_EQ(a.normalizedMessage, "lowering of aten.max_pool2d_with_indices_backward.default");
  EXPECT_EQ(a.id(), b.id());
  EXPECT_NE(a.id(), other.id());
}
