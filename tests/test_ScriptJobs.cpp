// End to end with real worker processes: script jobs (repro.py, short_repro.py, a trace) and the Inductor bisector's
// jobs, as triage runs them. Linked into test_ProgramTester, whose suite and worker pool these tests share
// (ProgramTesterFixture.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ProgramTesterFixture.h"

using namespace tcfuzz;
using tcfuzz::test_support::ProgramTesterTest;
using tcfuzz::test_support::sourcePath;
namespace {
/// Writes `text` to `path` and returns the path.
std::filesystem::path writeFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}
}  // namespace

TEST_F(ProgramTesterTest, ScriptJobReportsExitCodeAndOutput) {
  auto script = writeFile(dir_->path() / "exit3.py",
                          "import os, sys\n"
                          "print('hello from', os.path.basename(os.getcwd()))\n"
                          "print('to stderr', file=sys.stderr)\n"
                          "sys.exit(3)\n");
  oracles::RunResult r = tester_->runScript(script, settings("inductor"));
  ASSERT_TRUE(r.ok()) << r.summary();
  ASSERT_TRUE(r.exitCode);
  EXPECT_EQ(*r.exitCode, 3);
  EXPECT_EQ(r.stdoutTail, "hello from " + r.jobDir.filename().string() + "\n");  // it runs in its job directory
  EXPECT_EQ(r.stderrTail, "to stderr\n");
  EXPECT_NE(r.jobDir.filename().string().find("script"), std::string::npos);
}

// A script (repro.py, short_repro.py, a trace) sees what a maintainer's first run sees: an Inductor cache of its
// own, empty when it starts and gone when it ends, never the campaign's warm one.
TEST_F(ProgramTesterTest, ScriptRunsWithAColdCacheOfItsOwn) {
  auto script = writeFile(dir_->path() / "cache.py",
                          "import os\n"
                          "d = os.environ['TORCHINDUCTOR_CACHE_DIR']\n"
                          "print(d)\n"
                          "print(sorted(os.listdir(d)) if os.path.isdir(d) else 'absent')\n");
  std::vector<std::string> dirs;
  for (int k = 0; k < 2; ++k) {
    oracles::RunResult r = tester_->runScript(script, settings("inductor"));
    ASSERT_TRUE(r.ok()) << r.summary() << r.stderrTail;
    std::string dir = r.stdoutTail.substr(0, r.stdoutTail.find('\n'));
    EXPECT_NE(dir.find("cold-cache-"), std::string::npos) << r.stdoutTail;
    std::string listed = r.stdoutTail.substr(dir.size() + 1);
    EXPECT_TRUE(listed == "[]\n" || listed == "absent\n") << r.stdoutTail;  // empty, or made on first use
    EXPECT_FALSE(std::filesystem::exists(dir)) << dir;
    dirs.push_back(dir);
  }
  EXPECT_NE(dirs[0], dirs[1]);
}

TEST_F(ProgramTesterTest, ScriptKilledBySignalIsASignalResult) {
  auto script = writeFile(dir_->path() / "segv.py", "import os, signal\nprint('dying', flush=True)\nos.kill(os.getpid(), signal.SIGSEGV)\n");
  oracles::RunResult r = tester_->runScript(script, settings("inductor"));
  EXPECT_EQ(r.status, oracles::RunStatus::Signal);
  EXPECT_EQ(r.signalName, "SIGSEGV");
  EXPECT_EQ(r.phase, "run");
  EXPECT_EQ(r.stdoutTail, "dying\n");
}

TEST_F(ProgramTesterTest, ScriptOverTheTimeoutIsStopped) {
  auto script = writeFile(dir_->path() / "sleep.py", "import time\ntime.sleep(600)\n");
  TestSettings s = settings("inductor");
  s.limits.timeoutSeconds = 3;
  oracles::RunResult r = tester_->runScript(script, s);
  EXPECT_EQ(r.status, oracles::RunStatus::Timeout);  // the grandchild dies with the job's process group
}

TEST_F(ProgramTesterTest, BisectOfACorrectProgramFindsNothing) {
  // Every backend the bisector tries (eager ... inductor) agrees with eager: nothing to bisect.
  oracles::RunResult r = tester_->bisect(sourcePath("corpus/conv1d_mean_linear.py"), settings("inductor"),
                                         {{"check", "numeric"}, {"leaves", nlohmann::json::array()}});
  ASSERT_TRUE(r.ok()) << r.summary() << "\n" << (r.exception ? r.exception->traceback : "");
  ASSERT_TRUE(r.bisect.is_object());
  EXPECT_EQ(r.bisect["available"], true);
  EXPECT_EQ(r.bisect["found"], false);
  EXPECT_NE(r.stdoutTail.find("All systems have been checked."), std::string::npos) << r.stdoutTail;
}

TEST_F(ProgramTesterTest, BisectNamesTheLoweringOfInductorsInjectedReluBug) {
  // Inductor's own TEST hook cpp.inject_relu_bug_TESTING_ONLY="accuracy" miscompiles relu on CPU;
  // the bisector must blame the relu lowering (not a real PyTorch bug).
  auto program = writeFile(dir_->path() / "linear_relu.py",
                           "import torch\n"
                           "import torch.nn as nn\n\n\n"
                           "class Model(nn.Module):\n"
                           "    def __init__(self):\n"
                           "        super().__init__()\n"
                           "        self.linear = nn.Linear(8, 4)\n\n"
                           "    def forward(self, x):\n"
                           "        return torch.relu(self.linear(x))\n\n\n"
                           "def make_inputs(seed):\n"
                           "    g = torch.Generator().manual_seed(seed)\n"
                           "    return (torch.randn(3, 8, generator=g),)\n");
  TestSettings s = settings("inductor");
  s.compile.addInductorOverride("cpp.inject_relu_bug_TESTING_ONLY=accuracy");
  oracles::RunResult r = tester_->bisect(program, s, {{"check", "numeric"}});
  ASSERT_TRUE(r.ok()) << r.summary() << "\n" << (r.exception ? r.exception->traceback : "");
  EXPECT_EQ(r.bisect["available"], true);
  EXPECT_EQ(r.bisect["found"], true) << r.stdoutTail;
  EXPECT_EQ(r.bisect["backend"], "inductor");
  EXPECT_EQ(r.bisect["subsystem"], "lowerings");
  EXPECT_EQ(r.bisect["debug_info"], "relu");
  EXPECT_TRUE(r.bisect["bisect_number"].is_number_integer());
}
