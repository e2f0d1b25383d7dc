// A fast, clean stop: StopDeadline's backstop, then the real `tcfuzz fuzz` stopped by SIGTERM and by
// --max-time, timed. The bounds are the contract (5 s after SIGTERM; --max-time includes the stop)
// with a margin for a loaded 2-core machine.
#include <gtest/gtest.h>

#include "fuzzer/campaign/StopSignals.h"
#include "ProcessTree.h"
#include "TestWorkers.h"

using namespace tcfuzz;
using namespace tcfuzz::test_support;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<std::string> fuzzArgs(const fs::path& out, std::vector<std::string> extra) {
  std::vector<std::string> args{TCFUZZ_BINARY, "fuzz", "-o", out.string(), "--seed", "3", "--sandbox", sandboxArg(),
                                "--status", "log", "-j", "1", "--llm", "off", "--no-triage"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

}  // namespace

TEST(StopDeadline, ExitsTheProcessWithItsCodeOnceTheDeadlinePasses) {
  pid_t pid = ::fork();
  if (pid == 0) {
    StopDeadline deadline;
    deadline.armAt(StopDeadline::Clock::now() + 5s, "late", 9);
    deadline.armAt(StopDeadline::Clock::now() + 200ms, "early", 7);  // an earlier deadline wins
    std::this_thread::sleep_for(10s);
    ::_exit(0);
  }
  auto began = Clock::now();
  int status = waitFor(pid, 4s);
  ASSERT_NE(status, -1);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7);
  EXPECT_LT(Clock::now() - began, 2s);
}

TEST(StopDeadline, DestroyedBeforeItsDeadlineDoesNothing) {
  { 
    StopDeadline deadline;
    deadline.armAt(StopDeadline::Clock::now() + 300ms, "never", 5);
  }
  std::this_thread::sleep_for(500ms);
  SUCCEED();  // still alive
}

TEST(StopSignals, FuzzStopsWithin5sOfSigtermWithStatsFlushedAndAbandonedJobsCounted) {
  becomeSubreaper();
  TempDir dir("tcfuzz-sigterm");
  fs::path out = dir.path() / "campaign";
  pid_t tcfuzz = spawnLogged(fuzzArgs(out, {}), dir.path() / "fuzz.log");
  ASSERT_TRUE(waitUntil([&] { return std::atoi(fuzzerStat(out, "programs_done").c_str()) >= 1; }, 300s))
      << readText(dir.path() / "fuzz.log");
  EXPECT_NE(fuzzerStat(out, "time_to_first_program_s"), "none yet");
  std::this_thread::sleep_for(1s);  // a program in flight
  auto sent = Clock::now();
  ::kill(tcfuzz, SIGTERM);
  int status = waitFor(tcfuzz, 15s);
  double stopSeconds = std::chrono::duration<double>(Clock::now() - sent).count();
  ASSERT_NE(status, -1) << "still running 15 s after SIGTERM";
  std::cerr << "stop after SIGTERM: " << stopSeconds << " s\n";
  EXPECT_LE(stopSeconds, 5.5);
  EXPECT_TRUE(WIFEXITED(status));
  std::string abandoned = fuzzerStat(out, "programs_abandoned");
  ASSERT_FALSE(abandoned.empty()) << readText(out / "fuzzer_stats");
  EXPECT_GE(std::stod(fuzzerStat(out, "time_to_first_program_s")), 0.0);
  auto left = descendantsAfter(3s);
  EXPECT_TRUE(left.empty());
  killDescendants();
}

TEST(StopSignals, FuzzWithMaxTimeExitsWithinItsMaxTime) {
  becomeSubreaper();
  TempDir dir("tcfuzz-maxtime");
  fs::path out = dir.path() / "campaign";
  auto began = Clock::now();
  pid_t tcfuzz = spawnLogged(fuzzArgs(out, {"--max-time", "40s"}), dir.path() / "fuzz.log");
  int status = waitFor(tcfuzz, 120s);
  double wall = std::chrono::duration<double>(Clock::now() - began).count();
  ASSERT_NE(status, -1) << "still running after 120 s with --max-time 40s";
  std::cerr << "--max-time 40s: exited after " << wall << " s\n";
  EXPECT_LE(wall, 40.5) << readText(dir.path() / "fuzz.log");
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << readText(dir.path() / "fuzz.log");
  EXPECT_FALSE(fuzzerStat(out, "programs_abandoned").empty());
  killDescendants();
}
