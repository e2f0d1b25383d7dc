// The worker sandbox: the environment allowlist, the bubblewrap filesystem view, and the hostile-program
// suite (tests/programs/hostile/), each program run by the real tcfuzz binary in real sandboxed workers.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fuzzer/worker/Sandbox.h"
#include "tests/TestWorkers.h"

namespace fs = std::filesystem;
using namespace tcfuzz;
using namespace tcfuzz::test_support;

namespace {

constexpr const char* kPlantedKey = "sk-tcfuzz-planted-9f3c2a7e41d8b605";
constexpr const char* kPlantedAws = "aws-planted-Wq8Zr4Lm2Xv7Np1Ks5Dt";
constexpr const char* kRootSecretFile = "/root/tcfuzz-hostile-secret.txt";
constexpr const char* kRootSecret = "root-planted-secret-5b1e9d";

bool contains(const std::vector<std::string>& argv, const std::string& item) {
  return std::find(argv.begin(), argv.end(), item) != argv.end();
}

/// The position of the mount of `path` (the argument after a --bind/--ro-bind* flag), or -1.
long mountIndex(const std::vector<std::string>& argv, const std::string& path) {
  for (size_t i = 1; i + 1 < argv.size(); ++i)
    if (argv[i].starts_with("--") && argv[i].find("bind") != std::string::npos && argv[i + 1] == path)
      return static_cast<long>(i);
  return -1;
}

/// The pids (and names) of the processes whose working directory lies under `dir`, "" when none.
std::string processesWorkingUnder(const fs::path& dir) {
  std::string found;
  std::string root = fs::canonical(dir).string();
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string pid = e.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec;
    std::string cwd = fs::read_symlink(e.path() / "cwd", ec).string();
    if (!ec && cwd.starts_with(root)) found += pid + " " + readText(e.path() / "comm");
  }
  return found;
}

}  // namespace

TEST(Sandbox, WorkerEnvironmentKeepsTorchSettingsAndDropsCredentials) {
  std::map<std::string, std::string> host = {
      {"PATH", "/usr/bin"},
      {"TORCHINDUCTOR_MAX_AUTOTUNE", "1"},
      {"TRITON_CACHE_DIR", "/x"},
      {"OMP_NUM_THREADS", "2"},
      {"CUDA_VISIBLE_DEVICES", "0"},
      {"HOME", "/root"},
      {"SSH_AUTH_SOCK", "/tmp/agent"},
      {"TCFUZZ_LLM_API_KEY", kPlantedKey},
      {"AWS_SECRET_ACCESS_KEY", kPlantedAws},
      {"TORCH_HUB_TOKEN", "a-token-under-an-allowed-prefix"},
      {"GITHUB_TOKEN", "ghp_x"},
      {"SOME_RANDOM_SETTING", "1"},
  };
  auto env = workerEnvironment(host);
  EXPECT_EQ(env, (std::map<std::string, std::string>{{"PATH", "/usr/bin"},
                                                      {"TORCHINDUCTOR_MAX_AUTOTUNE", "1"},
                                                      {"TRITON_CACHE_DIR", "/x"},
                                                      {"OMP_NUM_THREADS", "2"},
                                                      {"CUDA_VISIBLE_DEVICES", "0"}}));
}

TEST(Sandbox, WorkerEnvironmentPassesNamedVariablesButNeverACredential) {
  std::map<std::string, std::string> host = {{"MY_SETTING", "on"}, {"MY_API_KEY", kPlantedKey}};
  auto env = workerEnvironment(host, {"MY_SETTING", "MY_API_KEY"});
  EXPECT_EQ(env, (std::map<std::string, std::string>{{"MY_SETTING", "on"}}));
  EXPECT_TRUE(looksLikeCredential("openai_api_key"));
  EXPECT_TRUE(looksLikeCredential("HF_TOKEN"));
  EXPECT_TRUE(looksLikeCredential("DB_PASSWORD"));
  EXPECT_FALSE(looksLikeCredential("TORCHINDUCTOR_MAX_AUTOTUNE"));
  EXPECT_FALSE(looksLikeCredential("PATH"));
  EXPECT_EQ(credentialMarks().substr(0, 10), "KEY,TOKEN,");
}

TEST(Sandbox, BubblewrapViewHoldsOnlyWhatAWorkerNeedsParentsFirst) {
  SandboxPolicy policy;
  policy.writable = {"/work/out/work", "/work/out/work/cache"};
  policy.readable = {"/work/venv", "/work/out", "/usr/lib/python3/dist-packages"};
  auto argv = sandboxedCommand(policy, {"python", "zygote.py"});
  ASSERT_EQ(argv.front(), "bwrap");
  EXPECT_EQ(argv.back(), "zygote.py");
  for (const char* flag : {"--unshare-net", "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session"})
    EXPECT_TRUE(contains(argv, flag)) << flag;
  EXPECT_EQ(mountIndex(argv, "/"), -1) << "the whole root must not be mounted";
  for (const char* hidden : {"/root", "/home", "/etc", "/etc/shadow", "/var", "/work"})
    EXPECT_EQ(mountIndex(argv, hidden), -1) << hidden;
  EXPECT_NE(mountIndex(argv, "/usr"), -1);
  EXPECT_NE(mountIndex(argv, "/etc/ld.so.cache"), -1);
  EXPECT_EQ(mountIndex(argv, "/usr/lib/python3/dist-packages"), -1) << "/usr already holds it";
  // A read-only parent is mounted before the writable folder inside it (a later parent mount would hide it).
  long out = mountIndex(argv, "/work/out"), work = mountIndex(argv, "/work/out/work");
  ASSERT_NE(out, -1);
  ASSERT_NE(work, -1);
  EXPECT_LT(out, work);
  EXPECT_EQ(argv[static_cast<size_t>(out)], "--ro-bind-try");
  EXPECT_EQ(argv[static_cast<size_t>(work)], "--bind");
  auto tmp = std::find(argv.begin(), argv.end(), "--tmpfs");
  ASSERT_NE(tmp, argv.end());
  EXPECT_EQ(*(tmp + 1), "/tmp");
  auto remount = std::find(argv.begin(), argv.end(), "--remount-ro");
  ASSERT_NE(remount, argv.end());
  EXPECT_EQ(*(remount + 1), "/");
  EXPECT_GT(remount - argv.begin(), work) << "the root is made read-only after every mount";
  auto chdir = std::find(argv.begin(), argv.end(), "--chdir");
  ASSERT_NE(chdir, argv.end());
  EXPECT_EQ(*(chdir + 1), "/work/out/work");

  policy.kind = SandboxKind::None;
  EXPECT_EQ(sandboxedCommand(policy, {"python", "zygote.py"}), (std::vector<std::string>{"python", "zygote.py"}));
}

TEST(Sandbox, InterpreterTreesHoldTheVenvAndTheInterpreterItWasMadeFrom) {
  fs::path python = TCFUZZ_DEFAULT_PYTHON;
  auto trees = interpreterTrees(python, workerEnvironment(hostEnvironment()));
  ASSERT_FALSE(trees.empty());
  fs::path venv = python.parent_path().parent_path();
  fs::path realExe = fs::canonical(python);
  auto covers = [&](const fs::path& p) {
    return std::any_of(trees.begin(), trees.end(), [&](const fs::path& t) {
      auto rel = fs::path(p).lexically_relative(t);
      return !rel.empty() && *rel.begin() != "..";
    });
  };
  EXPECT_TRUE(covers(venv)) << venv;
  EXPECT_TRUE(covers(realExe)) << realExe;
  EXPECT_TRUE(interpreterTrees("/nonexistent/python", {}).empty());
}

TEST(Sandbox, RunningWithoutItSaysWhatProtectionIsLost) {
  std::string warning(unsandboxedWarning());
  for (const char* lost : {"home directories", "network", "write"}) EXPECT_NE(warning.find(lost), std::string::npos) << lost;
}

/// The hostile suite under `tcfuzz run --json`: planted secrets in tcfuzz's own environment and in /root.
class SandboxHostile : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!probeBubblewrap().empty()) GTEST_SKIP() << "bubblewrap cannot run here: " << probeBubblewrap();
    ::setenv("TCFUZZ_LLM_API_KEY", kPlantedKey, 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", kPlantedAws, 1);
    std::ofstream secret(kRootSecretFile);
    plantedRootSecret_ = static_cast<bool>(secret << kRootSecret);
  }
  void TearDown() override {
    ::unsetenv("TCFUZZ_LLM_API_KEY");
    ::unsetenv("AWS_SECRET_ACCESS_KEY");
    std::error_code ec;
    if (plantedRootSecret_) fs::remove(kRootSecretFile, ec);
  }

  /// verdict and JSON per program, from one `tcfuzz run --json` over all of them.
  std::map<std::string, nlohmann::json> run(const std::vector<std::string>& programs, Finished& finished) {
    std::vector<std::string> args = {"run", "--json", "--backend", "eager", "--timeout", "60", "-j", "2",
                                     "--work-dir", (dir_.path() / "work").string(), "--keep"};
    for (const auto& p : programs) args.push_back(sourcePath("tests/programs/hostile/" + p + ".py").string());
    finished = runTcfuzz(args);
    std::map<std::string, nlohmann::json> byProgram;
    std::istringstream lines(finished.output);
    for (std::string line; std::getline(lines, line);) {
      if (!line.starts_with("{")) continue;
      auto j = nlohmann::json::parse(line);
      byProgram[fs::path(j.at("program").get<std::string>()).stem().string()] = j;
    }
    return byProgram;
  }

  /// Every byte tcfuzz printed or left in its work directory.
  std::string everything(const Finished& finished) {
    std::string all = finished.output;
    for (const auto& e : fs::recursive_directory_iterator(dir_.path()))
      if (e.is_regular_file()) all += readText(e.path());
    return all;
  }

  TempDir dir_{"tcfuzz-hostile"};
  bool plantedRootSecret_ = false;
};

TEST_F(SandboxHostile, EveryHostileProgramIsASandboxRefusalAndLeavesTheHostUnchanged) {
  // The listener the network program aims at: it must never see a connection.
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  ASSERT_GE(listener, 0);
  int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(47613);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool listening = ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::listen(listener, 4) == 0;
  for (const char* f : {"/tmp/tcfuzz-hostile-write-outside.txt", "/var/tmp/tcfuzz-hostile-write-outside.txt",
                        "/tmp/tcfuzz-hostile-shell.txt"})
    fs::remove(f);

  const std::map<std::string, std::string> expected = {
      {"read_env_secret", "environment read: os.environ['TCFUZZ_LLM_API_KEY']"},
      {"dump_environment", "environment read: os.environ"},
      {"read_root", "filesystem read outside the job: os.listdir '/root'"},
      {"read_ssh_keys", "filesystem read outside the job: open"},
      {"read_shadow", "filesystem read outside the job: open '/etc/shadow'"},
      {"connect_loopback", "network: socket."},
      {"write_outside", "filesystem write: open '/tmp/tcfuzz-hostile-write-outside.txt'"},
      {"fork_bomb", "process: os.fork"},
      {"fill_disk", "filesystem write: open 'filler.bin'"},
      {"spawn_shell", "process: subprocess.Popen"},
  };
  std::vector<std::string> programs;
  for (const auto& [name, _] : expected) programs.push_back(name);
  Finished finished;
  auto results = run(programs, finished);
  EXPECT_EQ(finished.exitCode, 16) << finished.output;  // sandbox-refusal
  for (const auto& [name, refusal] : expected) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(results.count(name)) << finished.output;
    const auto& j = results[name];
    EXPECT_EQ(j.value("verdict", ""), "sandbox-refusal") << j.dump(1);
    EXPECT_EQ(j["eager"].value("status", ""), "refused") << j.dump(1);
    auto refusals = j["eager"].value("refusals", nlohmann::json::array());
    std::string first = refusals.empty() ? "" : refusals.at(0).get<std::string>();
    EXPECT_TRUE(first.starts_with(refusal)) << first;
  }

  std::string all = everything(finished);
  EXPECT_EQ(all.find(kPlantedKey), std::string::npos) << "the planted API key leaked";
  EXPECT_EQ(all.find(kPlantedAws), std::string::npos) << "the planted AWS secret leaked";
  EXPECT_EQ(all.find(kRootSecret), std::string::npos) << "a file under /root leaked";
  for (const char* f : {"/tmp/tcfuzz-hostile-write-outside.txt", "/var/tmp/tcfuzz-hostile-write-outside.txt",
                        "/tmp/tcfuzz-hostile-shell.txt"})
    EXPECT_FALSE(fs::exists(f)) << f;
  if (listening) {
    int accepted = ::accept(listener, nullptr, nullptr);
    EXPECT_LT(accepted, 0) << "the loopback listener received a connection";
    if (accepted >= 0) ::close(accepted);
  }
  ::close(listener);
  // The fork bomb left nothing behind: no process still works in this run's directory (every worker and
  // everything it forked runs there). A sandbox's processes die with its bubblewrap, just after tcfuzz
  // has reaped that: on a loaded machine the kernel may still be taking them down, so allow it 10 s.
  std::string left = processesWorkingUnder(dir_.path());
  for (int i = 0; i < 100 && !left.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    left = processesWorkingUnder(dir_.path());
  }
  EXPECT_EQ(left, "");
}

TEST_F(SandboxHostile, AProgramThatGetsAroundTheGuardStillFindsNoSecret) {
  Finished finished;
  auto results = run({"guard_bypass"}, finished);
  ASSERT_TRUE(results.count("guard_bypass")) << finished.output;
  const auto& j = results["guard_bypass"];
  // The guard did not see it (its frames claim to be torch's): the OS sandbox alone had nothing to give.
  EXPECT_EQ(j.value("verdict", ""), "invalid-program") << j.dump(1);
  std::string message = j["eager"]["exception"].value("message", "");
  EXPECT_NE(message.find("found: ["), std::string::npos) << message;
  if (plantedRootSecret_) EXPECT_NE(message.find("FileNotFoundError"), std::string::npos) << message;
  std::string all = everything(finished);
  EXPECT_EQ(all.find(kPlantedKey), std::string::npos);
  EXPECT_EQ(all.find(kPlantedAws), std::string::npos);
  EXPECT_EQ(all.find(kRootSecret), std::string::npos);
}

TEST(SandboxGuard, InductorCompilingWhileProgramFramesAreOnTheStackIsNotRefused) {
  TempDir dir("tcfuzz-guard");
  auto finished = runTcfuzz({"run", "--json", "--sandbox", sandboxArg(), "--work-dir", (dir.path() / "work").string(),
                             sourcePath("tests/programs/graph_breaks_in_program_code.py").string()});
  std::string line = finished.output.substr(finished.output.find('{'));
  auto j = nlohmann::json::parse(line.substr(0, line.find('\n')));
  EXPECT_EQ(finished.exitCode, 0) << finished.output;
  EXPECT_EQ(j.value("verdict", ""), "agree") << j.dump(1);
  EXPECT_EQ(j["compiled"].value("status", ""), "ok") << j.dump(1);
  EXPECT_GE(j["compiled"]["compile_facts"].value("graph_count", 0), 2) << j.dump(1);
}
