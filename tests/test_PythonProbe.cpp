// PythonProbe: a short trusted Python script's answer, through a file. A process that keeps the
// probe's stdout open (here a grandchild; in the hang it replaces, a zygote forked meanwhile) no
// longer keeps the asker waiting.
#include <gtest/gtest.h>

#include <chrono>

#include "fuzzer/worker/PythonProbe.h"

namespace tcfuzz {
namespace {

TEST(PythonProbe, ReturnsWhatTheScriptPrintedAndItsExitCode) {
  auto answer = askPython(TCFUZZ_DEFAULT_PYTHON, "import sys\nprint('hello')\nsys.exit(3)\n", nullptr);
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->exitCode, 3);
  EXPECT_EQ(answer->printed, "hello\n");
  std::map<std::string, std::string> env{{"TCFUZZ_PROBE_WORD", "pear"}};
  auto withEnv = askPython(TCFUZZ_DEFAULT_PYTHON, "import os\nprint(os.environ.get('TCFUZZ_PROBE_WORD'), "
                                                  "os.environ.get('HOME'))\n", &env);
  ASSERT_TRUE(withEnv);
  EXPECT_EQ(withEnv->printed, "pear None\n");  // exactly the environment given
}

TEST(PythonProbe, AnOutputHeldOpenByAnotherProcessDoesNotBlockTheAnswer) {
  auto start = std::chrono::steady_clock::now();
  auto answer = askPython(TCFUZZ_DEFAULT_PYTHON,
                          "import subprocess, sys\n"
                          "subprocess.Popen(['sleep', '20'], stdout=sys.stdout, start_new_session=True)\n"
                          "print('done')\n",
                          nullptr);
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->printed, "done\n");
  // Reading a pipe to EOF would have waited for the sleep's 20 s.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
}

TEST(PythonProbe, AScriptPastItsDeadlineIsKilledAndGivesNoAnswer) {
  EXPECT_FALSE(askPython(TCFUZZ_DEFAULT_PYTHON, "import time\ntime.sleep(60)\n", nullptr, 0.5));
  EXPECT_FALSE(askPython("/nonexistent/python", "print(1)\n", nullptr));
}

}  // namespace
}  // namespace tcfuzz
