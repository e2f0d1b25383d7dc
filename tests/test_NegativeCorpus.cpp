// The negative-control corpus (corpus/negative/): programs that mirror reports PyTorch closed as "not a
// bug". None of them may be reported: not under the plain default configuration, and not under
// configurations drawn from the default compile matrix (seeded), each confirmed as a campaign confirms.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "TestWorkers.h"
#include "fuzzer/campaign/CompileMatrix.h"
#include "fuzzer/worker/ProgramTester.h"

using namespace tcfuzz;
using tcfuzz::test_support::sourcePath;
using tcfuzz::test_support::TempDir;

namespace {

constexpr int kDrawsPerProgram = 2;  // matrix draws per program, besides the plain default

std::vector<std::filesystem::path> negativePrograms() {
  std::vector<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::directory_iterator(sourcePath("corpus/negative")))
    if (entry.path().extension() == ".py") found.push_back(entry.path());
  std::sort(found.begin(), found.end());
  return found;
}

std::string firstLine(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

TEST(NegativeCorpus, EveryProgramCitesTheIssuePyTorchClosed) {
  auto programs = negativePrograms();
  ASSERT_GE(programs.size(), 12u);
  for (const auto& p : programs) {
    std::string head = firstLine(p);
    EXPECT_EQ(head.rfind("# PyTorch#", 0), 0u) << p.filename() << ": " << head;
    EXPECT_NE(head.find("https://github.com/pytorch/pytorch/issues/"), std::string::npos) << p.filename();
  }
}

TEST(NegativeCorpus, NoProgramIsReportedUnderTheDefaultMatrix) {
  TempDir dir("tcfuzz-negative");
  WorkerPool pool(test_support::testWorkerSpec(dir.path()), 2);
  ProgramTester tester(pool, oracles::Comparator{}, dir.path() / "jobs");
  CompileMatrix matrix;
  gen::Rng rng(20261124);
  int judged = 0;
  for (const auto& program : negativePrograms()) {
    std::vector<SampledCompile> configs(1);  // the plain default: inductor, forward only
    for (int i = 0; i < kDrawsPerProgram; ++i) configs.push_back(matrix.sample(rng, "cpu", {}));
    for (const SampledCompile& sc : configs) {
      TestSettings s;
      s.compile = sc.config;
      s.backward = sc.backward;
      s.seed = 0;
      s.limits = Limits{600, 4096};
      s.confirmFindings = true;
      ProgramTestResult r = tester.test(program, s);
      ++judged;
      EXPECT_FALSE(oracles::isFinding(r.verdict.verdict))
          << program.filename() << " under " << sc.nonDefault().dump() << ": " << toString(r.verdict.verdict) << ": "
          << r.verdict.reason;
      EXPECT_NE(r.verdict.verdict, oracles::Verdict::InvalidProgram)  // a broken control proves nothing
          << program.filename() << " under " << sc.nonDefault().dump() << ": " << r.verdict.reason;
    }
  }
  EXPECT_EQ(judged, static_cast<int>(negativePrograms().size()) * (1 + kDrawsPerProgram));
}
