// LLM-guided generation end to end: the real local llama.cpp server with SmolLM2, real sandboxed
// workers for the lift jobs, a real campaign through the tcfuzz binary.
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <map>
#include <thread>

#include <boost/process.hpp>
#include <gtest/gtest.h>

#include "fuzzer/campaign/StatusView.h"
#include "fuzzer/llm/LlmProposer.h"
#include "fuzzer/llm/LlmServer.h"
#include "fuzzer/worker/ProgramTester.h"
#include "fuzzer/worker/WorkerPool.h"
#include "generators/OpCatalog.h"
#include "generators/PythonEmitter.h"
#include "TestWorkers.h"

using namespace tcfuzz;
using namespace tcfuzz::test_support;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

const gen::OpCatalog& catalog() {
  static const gen::OpCatalog c = gen::makeDefaultCatalog();
  return c;
}

/// fuzzer_stats as a map ("key : value" lines).
std::map<std::string, std::string> readStats(const fs::path& file) {
  std::map<std::string, std::string> out;
  std::istringstream in(readText(file));
  std::string line;
  while (std::getline(in, line)) {
    auto colon = line.find(" : ");
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && key.back() == ' ') key.pop_back();
    out[key] = line.substr(colon + 3);
  }
  return out;
}

int64_t statInt(const std::map<std::string, std::string>& stats, const std::string& key) {
  auto it = stats.find(key);
  return it == stats.end() ? -1 : std::stoll(it->second);
}

}  // namespace

TEST(LlmProposer, PythonFromReplyTakesTheFencedBlock) {
  const std::string rest = "import torch.nn as nn\nimport torch.nn.functional as F\nimport math\n";
  EXPECT_EQ(pythonFromReply("Here:\n```python\nimport torch\nx = 1\n```\nDone."), rest + "import torch\nx = 1\n");
  EXPECT_EQ(pythonFromReply("```\nimport math\n```"),
            "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport math\n");
  EXPECT_EQ(pythonFromReply("import torch\n"), rest + "import torch\n");
  EXPECT_EQ(pythonFromReply("```python\nimport torch\n"), rest + "import torch\n");  // truncated: the rest of the reply
  // A script's main block is dropped (the allowlist refuses __name__); what follows it stays.
  EXPECT_EQ(pythonFromReply("import torch\nif __name__ == \"__main__\":\n    print(1)\n\n    m = 2\nx = 3\n"),
            rest + "import torch\nx = 3\n");
}

TEST(LlmProposer, LocalServerProposalGoesAllTheWayToAVerdict) {
  TempDir dir("tcfuzz-llmproposer");
  WorkerPool pool(testWorkerSpec(dir.path() / "work"), 1);
  ProgramTester tester(pool, oracles::Comparator{}, dir.path() / "work" / "jobs");
  StatusView view(std::cout, false);
  LlmSettings settings;
  settings.mode = "local";
  settings.server.python = TCFUZZ_DEFAULT_PYTHON;
  settings.server.logFile = dir.path() / "server.log";
  settings.queueCapacity = 2;
  TestSettings lift;
  lift.limits.timeoutSeconds = 60;
  lift.seed = 11;
  lift.threads = 1;
  LlmProposer proposer(catalog(), gen::ShapeCaps{}, settings, tester, lift, dir.path() / "llm", 11,
                       [&view](const std::string& line) { view.event(line); });
  proposer.start();
  ASSERT_EQ(proposer.state(), "running");

  std::optional<LlmProposal> proposal;
  auto deadline = Clock::now() + std::chrono::minutes(5);
  while (!proposal && Clock::now() < deadline) {
    proposal = proposer.take();
    if (!proposal) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(proposal) << proposer.statsJson().dump(1);
  EXPECT_TRUE(proposal->graph.origin.generator.starts_with("llm:")) << proposal->graph.origin.generator;
  EXPECT_FALSE(proposal->graph.nodes.empty());

  // The proposal is an ordinary valid program: emit it and test it in eager, compiled and fp64.
  gen::PythonEmitter emitter(catalog());
  fs::path file = dir.path() / "proposal.py";
  std::ofstream(file) << emitter.emit(proposal->graph);
  TestSettings ts;
  ts.seed = 11;
  ts.threads = 1;
  ts.compile.backend = "aot_eager";
  ProgramTestResult r = tester.test(file, ts);
  EXPECT_NE(r.verdict.verdict, oracles::Verdict::InvalidProgram) << r.verdict.reason;
  proposer.feedback(*proposal, true, 1, 0, false);

  nlohmann::json stats = proposer.statsJson();
  proposer.stop();
  EXPECT_GE(stats["all"]["requests"].get<int64_t>(), 1);
  EXPECT_GT(stats["all"]["tokens"].get<int64_t>(), 0);
  EXPECT_GE(stats["all"]["valid"].get<int64_t>(), 1);
  EXPECT_EQ(stats["strategies"][proposal->strategy]["tested"].get<int64_t>(), 1);
}

TEST(LlmProposer, UnreachableEndpointGoesGrammarOnlyWithAWarning) {
  TempDir dir("tcfuzz-llmproposer");
  WorkerPool pool(testWorkerSpec(dir.path() / "work"), 1);
  ProgramTester tester(pool, oracles::Comparator{}, dir.path() / "work" / "jobs");
  std::ostringstream log;
  StatusView view(log, false);
  LlmSettings settings;
  settings.mode = "remote";
  settings.endpoint.baseUrl = "http://127.0.0.1:9/v1";  // the discard port: nothing listens
  settings.endpoint.model = "none";
  settings.endpoint.maxRetries = 0;
  settings.maxFailures = 2;
  settings.restartBackoffSeconds = 0.1;
  LlmProposer proposer(catalog(), gen::ShapeCaps{}, settings, tester, TestSettings{}, dir.path() / "llm", 3,
                       [&view](const std::string& line) { view.event(line); });
  proposer.start();
  auto deadline = Clock::now() + std::chrono::seconds(30);
  while (proposer.active() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(proposer.state().starts_with("grammar-only: 2 requests in a row")) << proposer.state();
  EXPECT_FALSE(proposer.take());
  nlohmann::json stats = proposer.statsJson();
  EXPECT_EQ(stats["all"]["failed_requests"].get<int64_t>(), 2);
  EXPECT_EQ(stats["all"]["rejections"]["request_failed"].get<int64_t>(), 2);
  proposer.stop();
  EXPECT_NE(log.str().find("WARNING: LLM disabled, continuing with grammar generation only"), std::string::npos)
      << log.str();
}

TEST(LlmProposer, CampaignSurvivesTheLocalServerBeingKilled) {
  TempDir dir("tcfuzz-llmcampaign");
  fs::path out = dir.path() / "out";
  namespace bp = boost::process;
  bp::ipstream output;
  bp::child c(TCFUZZ_BINARY,
              bp::args({"fuzz", "-o", out.string(), "--seed", "21", "--max-time", "180", "-j", "1", "--status", "log",
                        "--sandbox", sandboxArg(), "--no-triage", "--backend", "aot_eager"}),
              (bp::std_out & bp::std_err) > output);
  std::string transcript;
  std::thread reader([&] {
    std::string line;
    while (std::getline(output, line)) transcript += line + "\n";
  });
  // Wait for the LLM to have answered once, then kill its server.
  auto deadline = Clock::now() + std::chrono::seconds(150);
  std::map<std::string, std::string> stats;
  while (Clock::now() < deadline) {
    stats = readStats(out / "fuzzer_stats");
    if (statInt(stats, "llm_proposals") >= 1 && statInt(stats, "llm_server_pid") > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  ASSERT_GE(statInt(stats, "llm_proposals"), 1) << transcript;
  pid_t serverPid = static_cast<pid_t>(statInt(stats, "llm_server_pid"));
  ASSERT_EQ(::kill(serverPid, SIGKILL), 0);
  int64_t proposalsAtKill = statInt(stats, "llm_proposals");
  c.wait();
  reader.join();
  EXPECT_EQ(c.exit_code(), 0) << transcript;
  stats = readStats(out / "fuzzer_stats");
  EXPECT_GE(statInt(stats, "llm_restarts"), 1) << transcript;
  EXPECT_EQ(stats["llm_state"], "running") << transcript;
  EXPECT_GT(statInt(stats, "llm_proposals"), proposalsAtKill) << transcript;
  EXPECT_GT(statInt(stats, "programs_done"), 0);
  EXPECT_NE(transcript.find("local LLM server restarted"), std::string::npos) << transcript;
}

TEST(LlmProposer, LlmUrlDrivesACampaignAgainstAHandStartedServer) {
  TempDir dir("tcfuzz-llmurl");
  LlmServerSettings serverSettings;
  serverSettings.python = TCFUZZ_DEFAULT_PYTHON;
  serverSettings.logFile = dir.path() / "server.log";
  LlmServer server(serverSettings);  // stands for any OpenAI-compatible llama.cpp server started by hand
  server.start();
  fs::path out = dir.path() / "out";
  Finished run = runTcfuzz({"fuzz", "-o", out.string(), "--seed", "5", "--max-time", "120", "-j", "1", "--status",
                            "log", "--sandbox", sandboxArg(), "--no-triage", "--backend", "aot_eager", "--llm-url",
                            server.baseUrl(), "--llm-model", server.modelName(), "--llm-grammar", "on"});
  EXPECT_EQ(run.exitCode, 0) << run.output;
  auto stats = readStats(out / "fuzzer_stats");
  EXPECT_EQ(stats["llm_state"], "running") << run.output;
  EXPECT_EQ(stats["llm_model"], server.modelName());
  EXPECT_GE(statInt(stats, "llm_requests"), 1) << run.output;
  EXPECT_GE(statInt(stats, "llm_valid"), 1) << run.output;
  EXPECT_GE(statInt(stats, "llm_tested"), 1) << run.output;
  EXPECT_EQ(statInt(stats, "llm_server_pid"), -1);  // tcfuzz started no server of its own
  EXPECT_EQ(run.output.find("starting the local LLM server"), std::string::npos);
}

TEST(LlmProposer, BadLlmOptionsAreRejectedBeforeAnythingStarts) {
  TempDir dir("tcfuzz-llmopts");
  Finished noModel = runTcfuzz({"fuzz", "-o", (dir.path() / "a").string(), "--llm-url", "http://127.0.0.1:1/v1"});
  EXPECT_NE(noModel.exitCode, 0);
  EXPECT_NE(noModel.output.find("--llm-url needs --llm-model NAME"), std::string::npos) << noModel.output;
  Finished badMode = runTcfuzz({"fuzz", "-o", (dir.path() / "b").string(), "--llm", "maybe"});
  EXPECT_NE(badMode.exitCode, 0);
  EXPECT_NE(badMode.output.find("--llm takes local, remote or off"), std::string::npos) << badMode.output;
}
