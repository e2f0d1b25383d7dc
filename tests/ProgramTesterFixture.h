#pragma once
// The end-to-end fixture of test_ProgramTester: one worker pool of three zygotes for the whole suite
// (test_ProgramTester.cpp and test_PythonPrograms.cpp, linked into one binary), and the settings every
// test starts from (seed 0, the planted TEST FIXTURE backends loaded).
#include <gtest/gtest.h>

#include <string>

#include "TestWorkers.h"
#include "fuzzer/worker/ProgramTester.h"

namespace tcfuzz::test_support {

class ProgramTesterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("tcfuzz-e2e");
    pool_ = new WorkerPool(testWorkerSpec(dir_->path()), 3);
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
  inline static TempDir* dir_ = nullptr;
  inline static WorkerPool* pool_ = nullptr;
  inline static ProgramTester* tester_ = nullptr;
};

}  // namespace tcfuzz::test_support
