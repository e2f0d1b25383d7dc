// End to end with real torch.compile: three workers per program, the verdict, and the CLI.
#include <gtest/gtest.h>

#include <boost/process.hpp>
#include <nlohmann/json.hpp>

#include "TestWorkers.h"
#include "fuzzer/ProgramTester.h"

using namespace tcfuzz;
using tcfuzz::test_support::sourcePath;
using tcfuzz::test_support::TempDir;
using tcfuzz::test_support::runCli;
using tcfuzz::test_support::CliRun;
namespace bp = boost::process;

namespace {

class ProgramTesterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("tcfuzz-e2e");
    pool_ = new WorkerPool(test_support::testWorkerSpec(dir_->path()), 3);
    tester_ = new ProgramTester(*pool_, oracles::Comparator{}, dir_->path() / "jobs");
  }
  static void TearDownTestSuite() {
    delete tester_;
    delete pool_;
    delete dir_;
  }
  static TestSettings settings(const std::string& backend) {
    TestSettings s;
    s.compile.backend = backend;
    s.limits = Limits{600, 4096};
    s.seed = 0;
    s.plugins = {sourcePath("tests/fixtures/planted_backends.py")};
    return s;
  }
  static TempDir* dir_;
  static WorkerPool* pool_;
  static ProgramTester* tester_;
};

TempDir* ProgramTesterTest::dir_ = nullptr;
WorkerPool* ProgramTesterTest::pool_ = nullptr;
ProgramTester* ProgramTesterTest::tester_ = nullptr;

}  // namespace

TEST_F(ProgramTesterTest, CorrectProgramAgreesUnderInductor) {
  ProgramTestResult r = tester_->test(sourcePath("corpus/conv1d_mean_linear.py"), settings("inductor"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  EXPECT_TRUE(r.runs.eager.ok());
  EXPECT_TRUE(r.runs.compiled.ok());
  EXPECT_TRUE(r.runs.fp64.ok());
  ASSERT_TRUE(r.runs.compiled.compileFacts);
  EXPECT_EQ(r.runs.compiled.compileFacts->graphCount, 1);
  EXPECT_EQ(r.runs.compiled.compileFacts->graphBreaks, 0);
  ASSERT_TRUE(r.verdict.comparison);
  ASSERT_EQ(r.verdict.comparison->leaves.size(), 1u);
  EXPECT_EQ(r.verdict.comparison->leaves[0].eagerDtype, "float32");
  ASSERT_TRUE(r.runs.fp64.outputs);
  EXPECT_EQ(r.runs.fp64.outputs->leaves[0].dtype, "float64");  // fp64 mode really ran in float64
  EXPECT_GT(r.runs.compiled.times.compile, 0.0);
}

TEST_F(ProgramTesterTest, RandomOpsAgreeUnderFallbackRandom) {
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/random_dropout.py"), settings("inductor"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
}

TEST_F(ProgramTesterTest, PlantedNumericBugIsNumericDivergence) {
  // TEST FIXTURE backend: adds 1% of the output's scale to the first output.
  ProgramTestResult r = tester_->test(sourcePath("corpus/attention_block.py"), settings("tcfuzz_planted_numeric"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::NumericDivergence) << r.verdict.reason;
  ASSERT_TRUE(r.verdict.comparison);
  const auto& first = r.verdict.comparison->leaves.at(0);
  EXPECT_FALSE(first.passed);
  EXPECT_TRUE(first.fp64Used);
  EXPECT_GT(first.rmseCompiled, 100 * first.rmseEager);
  EXPECT_TRUE(r.verdict.comparison->leaves.at(1).passed);  // the untouched second output
}

TEST_F(ProgramTesterTest, PlantedCompilerFailureIsCrashMismatch) {
  // TEST FIXTURE backend: raises on every compilation.
  ProgramTestResult r = tester_->test(sourcePath("corpus/conv1d_mean_linear.py"), settings("tcfuzz_planted_raise"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::CrashMismatch) << r.verdict.reason;
  ASSERT_TRUE(r.runs.compiled.exception);
  EXPECT_EQ(r.runs.compiled.exception->type, "BackendCompilerFailed");
  EXPECT_EQ(r.runs.compiled.phase, "compile");
  EXPECT_NE(r.runs.compiled.exception->message.find("planted compiler failure"), std::string::npos);
}

TEST_F(ProgramTesterTest, NondeterministicProgramIsNotJudgedNumerically) {
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/nondeterministic.py"), settings("aot_eager"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Nondeterministic) << r.verdict.reason;
}

TEST_F(ProgramTesterTest, Fp64ModeWidensExplicitCastsInsideForward) {
  // forward casts to float16 and back with .float(): in fp64 mode both casts become float64.
  ProgramTestResult r = tester_->test(sourcePath("corpus/mixed_dtype_reductions.py"), settings("aot_eager"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  ASSERT_TRUE(r.runs.eager.outputs && r.runs.fp64.outputs);
  EXPECT_EQ(r.runs.eager.outputs->leaves.at(0).dtype, "float32");
  EXPECT_EQ(r.runs.fp64.outputs->leaves.at(0).dtype, "float64");
  EXPECT_EQ(r.runs.fp64.outputs->leaves.at(1).dtype, "int64");  // integer results stay integer
  EXPECT_EQ(r.runs.fp64.outputs->leaves.at(2).dtype, "float64");
}

TEST_F(ProgramTesterTest, UnknownInductorOptionIsAConfigurationError) {
  TestSettings s = settings("inductor");
  s.compile.addInductorOverride("no_such_option=1");
  EXPECT_THROW(tester_->test(sourcePath("corpus/conv1d_mean_linear.py"), s), oracles::ConfigurationError);
}

TEST(Cli, RunPrintsTheVerdictAndExitsWithItsCode) {
  CliRun r = runCli({"run", "--plugin", sourcePath("tests/fixtures/planted_backends.py").string(), "--backend",
                     "tcfuzz_planted_raise", sourcePath("corpus/conv1d_mean_linear.py").string()});
  EXPECT_EQ(r.exitCode, 10) << r.out;
  EXPECT_NE(r.out.find("verdict   crash-mismatch"), std::string::npos) << r.out;
}

TEST(Cli, JsonOutputCarriesTheFiguresBehindTheVerdict) {
  CliRun r = runCli({"run", "--json", "--backend", "eager", sourcePath("corpus/mixed_dtype_reductions.py").string()});
  ASSERT_EQ(r.exitCode, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "agree");
  EXPECT_EQ(j["config"]["backend"], "eager");
  ASSERT_EQ(j["outputs"].size(), 3u);
  EXPECT_EQ(j["outputs"][1]["dtype"], "int64");
  EXPECT_TRUE(j["outputs"][0].contains("rmse_compiled_fp64"));
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(runCli({"run", "--no-such-flag", sourcePath("corpus/frexp_mul.py").string()}).exitCode, 2);
  EXPECT_EQ(runCli({"run", sourcePath("corpus/does_not_exist.py").string()}).exitCode, 2);
  EXPECT_EQ(runCli({"run", "--dynamic", "maybe", sourcePath("corpus/frexp_mul.py").string()}).exitCode, 2);
  EXPECT_EQ(runCli({"run", "--backend", "eager", "--inductor-config", "no_such_option=1",
                    sourcePath("corpus/frexp_mul.py").string()})
                .exitCode,
            2);
}

TEST(Cli, VersionNamesTheLinkedTorch) {
  CliRun r = runCli({"--version"});
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_NE(r.out.find("tcfuzz 0.1.0"), std::string::npos);
  EXPECT_NE(r.out.find(std::string("(git ") + TCFUZZ_TORCH_GIT_VERSION + ")"), std::string::npos) << r.out;
}
