// StructuredTrace: a script job run with TORCH_TRACE in a real worker child writes torch's structured
// trace log into its job folder, and the tlparse from PyPI (installed by scripts/setup) renders it.
#include <gtest/gtest.h>

#include <fstream>

#include "fuzzer/triage/StructuredTrace.h"
#include "tests/TestWorkers.h"

namespace tcfuzz {
namespace {

namespace fs = std::filesystem;
using test_support::readText;
using test_support::TempDir;

TEST(StructuredTrace, TlparseIsInstalledBesideTheSetUpPython) {
  fs::path tlparse = installedTlparse();
  ASSERT_FALSE(tlparse.empty()) << "scripts/setup installs tlparse into .venv";
  EXPECT_EQ(tlparse.parent_path(), fs::path(TCFUZZ_DEFAULT_PYTHON).parent_path());
}

TEST(StructuredTrace, WhatCannotBeRenderedSaysWhy) {
  TempDir dir("tcfuzz-trace-why");
  fs::path log = dir.path() / "log", out = dir.path() / "out";
  EXPECT_EQ(renderTrace({}, log, out), "tlparse is not installed (scripts/setup installs it into .venv)");
  EXPECT_EQ(renderTrace(installedTlparse(), log, out), "the traced run wrote no structured trace log");
  fs::create_directories(log);
  std::ofstream(log / "notes.txt") << "not a log\n";
  EXPECT_EQ(renderTrace(installedTlparse(), log, out), "the structured trace log is empty");
  std::ofstream(log / "dedicated_log_torch_trace_1.log") << "a line\n";
  EXPECT_EQ(renderTrace("/bin/false", log, out), "tlparse exited with 1");
  EXPECT_FALSE(fs::exists(out / "index.html"));
}

// A traced script job in a real (sandboxed) worker child: the compile's log lands in <job>/torch_trace,
// and tlparse turns it into an index that lists the compile of frame 0.
TEST(StructuredTrace, ATracedScriptJobIsRenderedByTlparse) {
  test_support::OneWorkerTester workers("tcfuzz-trace");
  fs::path script = workers.dir.path() / "traced.py";
  std::ofstream(script) << "import torch\n"
                           "f = torch.compile(lambda x: torch.sin(x) + 1, backend='aot_eager')\n"
                           "print(f(torch.ones(3)).sum().item())\n";
  TestSettings s;
  s.limits = Limits{600, 4096};
  oracles::RunResult r = workers.tester.runScript(script, s, {}, /*trace=*/true);
  ASSERT_TRUE(r.ok()) << test_support::describeRun(r);
  ASSERT_EQ(r.exitCode.value_or(-1), 0) << test_support::describeRun(r);
  fs::path log = r.jobDir / kTraceDirName;
  ASSERT_TRUE(fs::is_directory(log)) << log;
  fs::path out = workers.dir.path() / "rendered";
  EXPECT_EQ(renderTrace(installedTlparse(), log, out), "");
  std::string index = readText(out / "index.html");
  EXPECT_NE(index.find("[0/0]"), std::string::npos) << index.substr(0, 2000);

  // Without `trace`, no log is written.
  oracles::RunResult plain = workers.runScript(script);
  ASSERT_EQ(plain.exitCode.value_or(-1), 0) << test_support::describeRun(plain);
  EXPECT_FALSE(fs::exists(plain.jobDir / kTraceDirName));
}

}  // namespace
}  // namespace tcfuzz
