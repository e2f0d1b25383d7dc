// Nothing tcfuzz starts outlives it: the parent-death signal and SpawnThread (fuzzer/worker/ParentDeath.h),
// then the real binary killed with SIGKILL (fuzz with the local LLM server, run, regress, triage) or
// interrupted with SIGINT (run, regress, triage: their temporary directories go too).
// TEST FIXTURE: the triage tests triage findings of tests/fixtures/planted_backends.py's planted
// tcfuzz_planted_cumsum_raise backend (it raises for graphs with aten.cumsum); not a PyTorch bug.
#include <gtest/gtest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <boost/process.hpp>

#include <fstream>

#include "fuzzer/worker/ParentDeath.h"
#include "ProcessTree.h"
#include "TestWorkers.h"

using namespace tcfuzz;
using namespace tcfuzz::test_support;
using namespace std::chrono_literals;
namespace bp = boost::process;
namespace fs = std::filesystem;

namespace {

bool llmInstalled() {
  return bp::system(bp::search_path("sh"), "-c", std::string(TCFUZZ_DEFAULT_PYTHON) + " -c 'import llama_cpp' 2>/dev/null") == 0;
}

std::string describe(const std::map<pid_t, std::string>& left) {
  std::string text;
  for (const auto& [pid, name] : left) text += std::to_string(pid) + " " + name + "; ";
  return text;
}

/// A test-owned TMPDIR: the command's scratch directories land here.
std::string tmpdirEnv(const TempDir& dir) { return "TMPDIR=" + dir.path().string(); }

bool holdsScratch(const fs::path& tmp) {
  for (const auto& e : fs::directory_iterator(tmp))
    if (e.path().filename().string().starts_with("tcfuzz-run-")) return true;
  return false;
}

/// Whether a command whose TMPDIR is `tmp` has handed a job to a started worker (a job directory exists).
bool jobSubmitted(const fs::path& tmp) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(tmp, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->path().filename() == "jobs" && !fs::is_empty(it->path(), ec)) return true;
  return false;
}

class ParentDeathEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override { becomeSubreaper(); }
  void TearDown() override { killDescendants(); }

  /// A small campaign in `out` whose findings (crash mismatches of the planted cumsum backend) are
  /// left for `tcfuzz triage`.
  static void campaignWithFindings(const fs::path& out) {
    fs::path policy = out.parent_path() / "policy.json";
    std::ofstream(policy) << R"({"mutation_share": 0, "schedule": {"bandit": false},
      "generation": {"min_nodes": 3, "max_nodes": 4, "dtype_weights": {"float32": 1}, "op_weights": {"cumsum": 300}},
      "compile": {"backends": {"tcfuzz_planted_cumsum_raise": 1}, "entries": {"compile": 1}, "fullgraph_share": 0,
                  "backward_share": 0}})";
    Finished fuzz = runTcfuzz({"fuzz", "-o", out.string(), "--seed", "3", "--policy", policy.string(), "--plugin",
                               sourcePath("tests/fixtures/planted_backends.py").string(), "--max-programs", "2",
                               "--status", "log", "--no-triage", "--llm", "off", "-j", "1", "--sandbox", sandboxArg()});
    ASSERT_EQ(fuzz.exitCode, 0) << fuzz.output;
    SQLite::Database db((out / "findings.sqlite").string(), SQLite::OPEN_READONLY);
    ASSERT_GE(db.execAndGet("SELECT COUNT(*) FROM findings").getInt64(), 1) << fuzz.output;
  }

  /// `tcfuzz triage` of `out`, its output in `log`.
  static pid_t startTriage(const fs::path& out, const fs::path& log) {
    return spawnLogged({TCFUZZ_BINARY, "triage", out.string(), "--sandbox", sandboxArg(), "-j", "1", "--plugin",
                        sourcePath("tests/fixtures/planted_backends.py").string()},
                       log);
  }
};

}  // namespace

TEST(ParentDeath, SpawnThreadKeepsAChildPastTheAskingThreadAndItDiesWithTheSpawnThread) {
  becomeSubreaper();
  pid_t pid = -1;
  {
    SpawnThread spawner;
    std::thread asking([&] {
      spawner.run([&] {
        bp::child c(bp::search_path("sleep"), "60", dieWithParent());
        pid = static_cast<pid_t>(c.id());
        c.detach();
      });
    });
    asking.join();  // the thread that asked is gone; the spawn thread is not
    std::this_thread::sleep_for(300ms);
    reapZombies();
    EXPECT_EQ(::kill(pid, 0), 0) << "the child died with the thread that asked for it";
  }
  auto left = descendantsAfter(3s);
  EXPECT_TRUE(left.empty()) << "left: " << describe(left);
}

TEST(ParentDeath, AChildStartsWithNoSignalBlockedThoughItsSpawningThreadBlocksSigterm) {
  // tcfuzz's threads block SIGINT and SIGTERM (StopSignals); a child inheriting that mask across exec
  // would never run its SIGTERM handler (the zygote's parent-death handler under --sandbox none).
  becomeSubreaper();
  std::string blocked;
  std::thread spawning([&] {
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    bp::child c(bp::search_path("sleep"), "60", dieWithParent());
    std::ifstream status("/proc/" + std::to_string(c.id()) + "/status");
    for (std::string line; std::getline(status, line);)
      if (line.starts_with("SigBlk:")) blocked = line;
    c.terminate();
    c.wait();
  });
  spawning.join();
  EXPECT_EQ(blocked, "SigBlk:\t0000000000000000");
}

TEST(ParentDeath, SpawnThreadRethrowsTheTasksException) {
  SpawnThread spawner;
  EXPECT_THROW(spawner.run([] { throw std::runtime_error("no"); }), std::runtime_error);
  int ran = 0;
  spawner.run([&] { ran = 1; });
  EXPECT_EQ(ran, 1);
}

TEST_F(ParentDeathEndToEnd, FuzzWithTheLocalLlmKilledBySigkillLeavesNoProcessWithin3s) {
  bool withLlm = llmInstalled();
  if (!withLlm) std::cerr << "note: llama-cpp-python is not installed; the campaign runs grammar-only\n";
  TempDir dir("tcfuzz-killfuzz");
  fs::path out = dir.path() / "campaign";
  pid_t tcfuzz = spawnLogged({TCFUZZ_BINARY, "fuzz", "-o", out.string(), "--seed", "7", "--sandbox", sandboxArg(),
                              "--status", "log", "-j", "1", "--llm", withLlm ? "local" : "off", "--no-triage"},
                             dir.path() / "fuzz.log");
  bool busy = waitUntil(
      [&] {
        bool judged = !fuzzerStat(out, "programs_done").empty() && fuzzerStat(out, "programs_done") != "0";
        bool llmUp = !withLlm || std::atoi(fuzzerStat(out, "llm_server_pid").c_str()) > 0;
        return judged && llmUp;
      },
      240s);
  ASSERT_TRUE(busy) << readText(dir.path() / "fuzz.log");
  auto before = liveDescendants();
  EXPECT_GE(before.size(), withLlm ? 3u : 2u) << describe(before);  // tcfuzz, a zygote, the server
  ::kill(tcfuzz, SIGKILL);
  auto left = descendantsAfter(3s);
  EXPECT_TRUE(left.empty()) << "still alive 3 s after kill -9: " << describe(left);
}

TEST_F(ParentDeathEndToEnd, RunKilledBySigkillLeavesNoProcessWithEitherSandbox) {
  for (std::string sandbox : {sandboxArg(), std::string("none")}) {
    SCOPED_TRACE("--sandbox " + sandbox);
    TempDir dir("tcfuzz-killrun");
    pid_t tcfuzz = spawnLogged({TCFUZZ_BINARY, "run", "--sandbox", sandbox, "--child-jobs", "4",
                                sourcePath("corpus/frexp_mul.py").string()},
                               dir.path() / "run.log", {tmpdirEnv(dir)});
    // Mid-run: the pool has started (its zygote said hello) and the first job is out, so tcfuzz, the zygote
    // and its forked children (the spare and a warming persistent child) are all up.
    ASSERT_TRUE(waitUntil([&] { return jobSubmitted(dir.path()) && liveDescendants().size() >= 4; }, 120s))
        << readText(dir.path() / "run.log");
    ::kill(tcfuzz, SIGKILL);
    auto left = descendantsAfter(3s);
    EXPECT_TRUE(left.empty()) << "still alive 3 s after kill -9: " << describe(left);
    killDescendants();
  }
}

TEST_F(ParentDeathEndToEnd, RegressKilledBySigkillLeavesNoProcess) {
  TempDir dir("tcfuzz-killregress");
  pid_t tcfuzz = spawnLogged({TCFUZZ_BINARY, "regress", "--sandbox", sandboxArg(),
                              sourcePath("corpus/regressions").string()},
                             dir.path() / "regress.log", {tmpdirEnv(dir)});
  ASSERT_TRUE(waitUntil([&] { return liveDescendants().size() >= 3; }, 120s)) << readText(dir.path() / "regress.log");
  ::kill(tcfuzz, SIGKILL);
  auto left = descendantsAfter(3s);
  EXPECT_TRUE(left.empty()) << "still alive 3 s after kill -9: " << describe(left);
}

TEST_F(ParentDeathEndToEnd, TriageKilledBySigkillLeavesNoProcessAndBySigintLeavesNoJobOutputs) {
  TempDir dir("tcfuzz-killtriage");
  fs::path out = dir.path() / "campaign";
  ASSERT_NO_FATAL_FAILURE(campaignWithFindings(out));
  fs::path jobs = out / "work" / "jobs";
  auto triaging = [&] {
    std::error_code ec;
    return liveDescendants().size() >= 3 && fs::exists(jobs, ec) && !fs::is_empty(jobs, ec);
  };
  {
    SCOPED_TRACE("kill -9");
    pid_t tcfuzz = startTriage(out, dir.path() / "kill.log");
    ASSERT_TRUE(waitUntil(triaging, 120s)) << readText(dir.path() / "kill.log");
    ::kill(tcfuzz, SIGKILL);
    auto left = descendantsAfter(3s);
    EXPECT_TRUE(left.empty()) << "still alive 3 s after kill -9: " << describe(left);
    killDescendants();
  }
  {
    SCOPED_TRACE("SIGINT");
    pid_t tcfuzz = startTriage(out, dir.path() / "sigint.log");
    ASSERT_TRUE(waitUntil(triaging, 120s)) << readText(dir.path() / "sigint.log");
    ::kill(tcfuzz, SIGINT);
    int status = waitFor(tcfuzz, 5s);
    ASSERT_NE(status, -1) << "still running 5 s after SIGINT";
    EXPECT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT) << readText(dir.path() / "sigint.log");
    EXPECT_FALSE(fs::exists(jobs)) << "the job outputs are still in " << jobs;
    EXPECT_TRUE(fs::exists(out / "findings.sqlite"));  // the findings stay
    auto left = descendantsAfter(3s);
    EXPECT_TRUE(left.empty()) << "still alive 3 s after SIGINT: " << describe(left);
  }
}

TEST_F(ParentDeathEndToEnd, RunAndRegressInterruptedBySigintRemoveTheirTemporaryDirectories) {
  std::vector<std::vector<std::string>> commands = {
      {TCFUZZ_BINARY, "run", "--sandbox", sandboxArg(), sourcePath("corpus/frexp_mul.py").string()},
      {TCFUZZ_BINARY, "regress", "--sandbox", sandboxArg(), sourcePath("corpus/regressions").string()}};
  for (const auto& argv : commands) {
    SCOPED_TRACE(argv[1]);
    TempDir dir("tcfuzz-sigint");
    fs::path tmp = dir.path() / "tmp";
    fs::create_directories(tmp);
    pid_t tcfuzz = spawnLogged(argv, dir.path() / "out.log", {"TMPDIR=" + tmp.string()});
    ASSERT_TRUE(waitUntil([&] { return liveDescendants().size() >= 3 && holdsScratch(tmp); }, 120s))
        << readText(dir.path() / "out.log");
    ::kill(tcfuzz, SIGINT);
    int status = waitFor(tcfuzz, 5s);
    ASSERT_NE(status, -1) << "still running 5 s after SIGINT";
    EXPECT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT) << readText(dir.path() / "out.log");
    EXPECT_FALSE(holdsScratch(tmp)) << "the scratch directory is still in " << tmp;
    auto left = descendantsAfter(3s);
    EXPECT_TRUE(left.empty()) << "still alive 3 s after SIGINT: " << describe(left);
    killDescendants();
  }
}
