// The oracle's decision rules, on synthetic run results (outputs written with LibTorch).
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <fstream>
#include <torch/serialize.h>

#include "TestWorkers.h"
#include "oracles/judge/OutputLoader.h"
#include "oracles/judge/Verdict.h"

using namespace tcfuzz::oracles;
using tcfuzz::test_support::TempDir;

namespace {

RunResult failed(RunStatus status, const std::string& phase, const std::string& type = "RuntimeError") {
  RunResult r;
  r.status = status;
  r.phase = phase;
  if (status == RunStatus::Exception) r.exception = ExceptionInfo{type, "builtins." + type, "boom", ""};
  if (status == RunStatus::Signal) r.signalName = "SIGSEGV";
  return r;
}

/// An ok result whose outputs (and optional second run) are saved in dir/name*.safetensors.
RunResult okWith(const std::filesystem::path& dir, const std::string& name, const at::Tensor& out,
                 const at::Tensor* second = nullptr) {
  auto save = [&](const std::string& file, const at::Tensor& t) {
    saveTensorFile(dir / file, {t});
    std::string dtype = t.scalar_type() == at::kDouble ? "float64" : "float32";
    return OutputSet{file, {OutputLeaf{OutputLeaf::Kind::Tensor, 0, dtype, t.sizes().vec(), ""}}};
  };
  RunResult r;
  r.status = RunStatus::Ok;
  r.phase = "done";
  r.jobDir = dir;
  r.outputs = save(name + ".safetensors", out);
  if (second) r.repeatOutputs.push_back(save(name + "_1.safetensors", *second));
  return r;
}

class VerdictTest : public ::testing::Test {
 protected:
  void SetUp() override { at::manual_seed(7); }
  TempDir dir{"tcfuzz-verdict"};
  Comparator comparator;
};

}  // namespace

TEST_F(VerdictTest, CompiledRaisesWhereEagerRunsIsCrashMismatch) {
  at::Tensor x = at::randn({4});
  TripleRun runs{okWith(dir.path(), "e", x, &x), failed(RunStatus::Exception, "compile", "BackendCompilerFailed"),
                 okWith(dir.path(), "r", x.to(at::kDouble))};
  VerdictReport v = judge(runs, comparator);
  EXPECT_EQ(v.verdict, Verdict::CrashMismatch);
  EXPECT_NE(v.reason.find("BackendCompilerFailed"), std::string::npos);
  EXPECT_EQ(exitCodeFor(v.verdict), 10);
  EXPECT_TRUE(isFinding(v.verdict));
}

TEST_F(VerdictTest, CompiledSignalOrTimeoutIsCrashMismatch) {
  at::Tensor x = at::randn({4});
  for (RunStatus s : {RunStatus::Signal, RunStatus::Timeout}) {
    TripleRun runs{okWith(dir.path(), "e", x, &x), failed(s, "run"), okWith(dir.path(), "r", x.to(at::kDouble))};
    EXPECT_EQ(judge(runs, comparator).verdict, Verdict::CrashMismatch) << toString(s);
  }
}

TEST_F(VerdictTest, CompiledAcceptsWhatEagerRejectsIsStatusMismatch) {
  at::Tensor x = at::randn({4});
  TripleRun runs{failed(RunStatus::Exception, "run"), okWith(dir.path(), "c", x), failed(RunStatus::Exception, "run")};
  VerdictReport v = judge(runs, comparator);
  EXPECT_EQ(v.verdict, Verdict::StatusMismatch);
  EXPECT_EQ(exitCodeFor(v.verdict), 11);
}

TEST_F(VerdictTest, BothRejectingIsAnInvalidProgram) {
  TripleRun runs{failed(RunStatus::Exception, "run"), failed(RunStatus::Exception, "compile"),
                 failed(RunStatus::Exception, "run")};
  EXPECT_EQ(judge(runs, comparator).verdict, Verdict::InvalidProgram);
}

TEST_F(VerdictTest, LoadFailuresAndEagerResourceLimitsAreInvalid) {
  at::Tensor x = at::randn({4});
  TripleRun syntax{failed(RunStatus::Exception, "load", "SyntaxError"), okWith(dir.path(), "c", x),
                   failed(RunStatus::Exception, "load", "SyntaxError")};
  EXPECT_EQ(judge(syntax, comparator).verdict, Verdict::InvalidProgram);
  TripleRun slow{failed(RunStatus::Timeout, "run"), okWith(dir.path(), "c", x), failed(RunStatus::Timeout, "run")};
  EXPECT_EQ(judge(slow, comparator).verdict, Verdict::InvalidProgram);
  EXPECT_EQ(exitCodeFor(Verdict::InvalidProgram), 14);
}

TEST_F(VerdictTest, BadCompileConfigurationIsAUsageError) {
  at::Tensor x = at::randn({4});
  TripleRun runs{okWith(dir.path(), "e", x, &x), failed(RunStatus::Exception, "config"),
                 okWith(dir.path(), "r", x.to(at::kDouble))};
  EXPECT_THROW(judge(runs, comparator), ConfigurationError);
}

TEST_F(VerdictTest, EagerRunsThatDifferAreNondeterministic) {
  at::Tensor x = at::randn({4});
  at::Tensor other = x + 1;
  TripleRun runs{okWith(dir.path(), "e", x, &other), okWith(dir.path(), "c", x + 5),
                 okWith(dir.path(), "r", x.to(at::kDouble))};
  VerdictReport v = judge(runs, comparator);
  EXPECT_EQ(v.verdict, Verdict::Nondeterministic);  // the numeric check is skipped
  EXPECT_EQ(exitCodeFor(v.verdict), 13);
}

TEST_F(VerdictTest, DivergenceFromFp64IsNumericDivergence) {
  at::Tensor truth = at::randn({64}, at::kDouble);
  at::Tensor eager = truth.to(at::kFloat);
  TripleRun runs{okWith(dir.path(), "e", eager, &eager), okWith(dir.path(), "c", eager + 0.05f),
                 okWith(dir.path(), "r", truth)};
  VerdictReport v = judge(runs, comparator);
  EXPECT_EQ(v.verdict, Verdict::NumericDivergence);
  ASSERT_TRUE(v.comparison);
  EXPECT_NEAR(v.comparison->leaves[0].maxAbsDiff, 0.05, 1e-6);
  EXPECT_EQ(exitCodeFor(v.verdict), 12);
}

TEST_F(VerdictTest, MatchingOutputsAgree) {
  at::Tensor truth = at::randn({64}, at::kDouble);
  at::Tensor eager = truth.to(at::kFloat);
  TripleRun runs{okWith(dir.path(), "e", eager, &eager), okWith(dir.path(), "c", eager.clone()),
                 okWith(dir.path(), "r", truth)};
  VerdictReport v = judge(runs, comparator);
  EXPECT_EQ(v.verdict, Verdict::Agree);
  EXPECT_EQ(exitCodeFor(v.verdict), 0);
  EXPECT_FALSE(isFinding(v.verdict));
}

TEST_F(VerdictTest, EagerNanWhereFp64IsFiniteIsDropped) {
  at::Tensor truth = at::randn({8}, at::kDouble);
  at::Tensor eager = truth.to(at::kFloat);
  eager[0] = std::numeric_limits<float>::quiet_NaN();
  TripleRun runs{okWith(dir.path(), "e", eager, &eager), okWith(dir.path(), "c", truth.to(at::kFloat)),
                 okWith(dir.path(), "r", truth)};
  EXPECT_EQ(judge(runs, comparator).verdict, Verdict::InvalidProgram);
}

TEST_F(VerdictTest, UnreadableOutputsAreReportedByName) {
  at::Tensor x = at::randn({4});
  RunResult eager = okWith(dir.path(), "e", x, &x);
  std::ofstream(dir.path() / "e.safetensors") << "corrupt";
  TripleRun runs{eager, okWith(dir.path(), "c", x), okWith(dir.path(), "r", x.to(at::kDouble))};
  try {
    judge(runs, comparator);
    FAIL() << "expected OutputLoadError";
  } catch (const OutputLoadError& e) {
    EXPECT_NE(std::string(e.what()).find("e.safetensors"), std::string::npos) << e.what();
  }
}

TEST_F(VerdictTest, SignedZerosCountInForwardOutputsOnlyNeverInGradients) {
  at::Tensor eager = at::tensor({0.0f, 1.0f, 2.0f});
  at::Tensor flipped = at::tensor({-0.0f, 1.0f, 2.0f});
  at::Tensor truth = eager.to(at::kDouble);
  TripleRun runs{okWith(dir.path(), "e", eager, &eager), okWith(dir.path(), "c", flipped),
                 okWith(dir.path(), "r", truth)};
  VerdictReport v = judge(runs, comparator);
  EXPECT_EQ(v.verdict, Verdict::SignedZero) << v.reason;
  EXPECT_EQ(exitCodeFor(v.verdict), 22);
  EXPECT_TRUE(isFinding(v.verdict));

  // The same leaf as a gradient: the sign of a zero in an accumulated gradient means nothing.
  for (RunResult* r : {&runs.eager, &runs.compiled, &runs.fp64}) {
    r->outputs->leaves[0].role = "grad";
    for (auto& again : r->repeatOutputs) again.leaves[0].role = "grad";
  }
  v = judge(runs, comparator);
  EXPECT_EQ(v.verdict, Verdict::Agree) << v.reason;
}

TEST(VerdictNames, AliasingIsAWrongResultWithItsOwnExitCodeAndStory) {
  EXPECT_EQ(wrongResultOfRole("alias"), Verdict::AliasingDivergence);
  EXPECT_EQ(toString(Verdict::AliasingDivergence), "aliasing-divergence");
  EXPECT_EQ(parseVerdict("aliasing-divergence"), Verdict::AliasingDivergence);
  EXPECT_EQ(exitCodeFor(Verdict::AliasingDivergence), 24);
  EXPECT_TRUE(isWrongResult(Verdict::AliasingDivergence));
  EXPECT_NE(wrongResultStory(Verdict::AliasingDivergence).find("shares storage"), std::string_view::npos);
  EXPECT_TRUE(wrongResultStory(Verdict::NumericDivergence).empty());  // its sentence carries its figures
  EXPECT_TRUE(wrongResultStory(Verdict::CrashMismatch).empty());
}

TEST(VerdictNames, ARecompileStormIsALowSeverityFindingThatIsNoWrongResult) {
  EXPECT_EQ(toString(Verdict::RecompileStorm), "recompile-storm");
  EXPECT_EQ(parseVerdict("recompile-storm"), Verdict::RecompileStorm);
  EXPECT_EQ(exitCodeFor(Verdict::RecompileStorm), 25);
  EXPECT_TRUE(isFinding(Verdict::RecompileStorm));
  EXPECT_FALSE(isWrongResult(Verdict::RecompileStorm));
  EXPECT_FALSE(isWrongResultSymptom("recompile-storm"));
  EXPECT_NE(wrongResultStory(Verdict::RecompileStorm).find("recompiles"), std::string_view::npos);
}

TEST(VerdictNames, PythonStateIsAMutationAndAScheduleCallALaterCall) {
  // The Python state after call 1 is state forward leaves behind; a schedule's call is a call after the first.
  EXPECT_EQ(wrongResultOfRole("python-state"), Verdict::MutationDivergence);
  EXPECT_EQ(wrongResultOfRole("schedule"), Verdict::SecondCallDivergence);
  EXPECT_EQ(wrongResultOfRole("state"), Verdict::MutationDivergence);
  EXPECT_EQ(wrongResultOfRole("output"), Verdict::NumericDivergence);
}

TEST_F(VerdictTest, UnderTheEagerBackendOneUlpIsADivergenceThatOtherBackendsPass) {
  // backend="eager" runs eager's own kernels: the backend ladder's first rung must be bit-identical, so a
  // one-ulp difference that the fp64-arbitrated tolerance passes for any other backend is a finding there.
  at::Tensor x = at::randn({64});
  at::Tensor moved = at::nextafter(x, at::full_like(x, INFINITY));
  TripleRun runs{okWith(dir.path(), "e", x, &x), okWith(dir.path(), "c", moved), okWith(dir.path(), "r", x.to(at::kDouble))};
  EXPECT_EQ(judge(runs, comparator).verdict, Verdict::Agree);
  runs.exactBackend = true;
  VerdictReport v = judge(runs, comparator);
  EXPECT_EQ(v.verdict, Verdict::NumericDivergence);
  EXPECT_NE(v.reason.find("bit for bit"), std::string::npos) << v.reason;
  ASSERT_TRUE(v.comparison);
  EXPECT_FALSE(v.comparison->passed);
  EXPECT_EQ(v.comparison->failingRole, "output");
  runs.compiled = okWith(dir.path(), "c2", x.clone());
  EXPECT_EQ(judge(runs, comparator).verdict, Verdict::Agree);
}
