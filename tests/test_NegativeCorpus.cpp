// The negative-control corpus (corpus/negative/): programs that mirror reports PyTorch closed as "not a
// bug". None of them may be reported: not under the plain default configuration, and not under
// configurations drawn from the default compile matrix (seeded), each confirmed as a campaign confirms.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

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
  struct Case {
    std::filesystem::path program;
    SampledCompile compile;
  };
  std::vector<Case> cases;  // drawn in a fixed order, whatever order they are judged in
  for (const auto& program : negativePrograms()) {
    cases.push_back({program, SampledCompile{}});  // the plain default: inductor, forward only
    for (int i = 0; i < kDrawsPerProgram; ++i) cases.push_back({program, matrix.sample(rng, "cpu", {})});
  }
  // Two cases at a time, one per worker, as a campaign with -j 2 judges: a compile holds one core.
  std::vector<ProgramTestResult> results(cases.size());
  std::atomic<size_t> next{0};
  auto judge = [&] {
    for (size_t i = next++; i < cases.size(); i = next++) {
      TestSettings s;
      s.compile = cases[i].compile.config;
      s.backward = cases[i].compile.backward;
      s.seed = 0;
      s.limits = Limits{600, 4096};
      s.confirmFindings = true;
      results[i] = tester.test(cases[i].program, s);
    }
  };
  std::thread other(judge);
  judge();
  other.join();
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const ProgramTestResult& r = results[i];
    EXPECT_FALSE(oracles::isFinding(r.verdict.verdict))
        << c.program.filename() << " under " << c.compile.nonDefault().dump() << ": " << toString(r.verdict.verdict)
        << ": " << r.verdict.reason;
    EXPECT_NE(r.verdict.verdict, oracles::Verdict::InvalidProgram)  // a broken control proves nothing
        << c.program.filename() << " under " << c.compile.nonDefault().dump() << ": " << r.verdict.reason;
  }
  EXPECT_EQ(cases.size(), negativePrograms().size() * (1 + kDrawsPerProgram));
}
