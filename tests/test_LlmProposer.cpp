// LLM-guided generation end to end: the real local llama.cpp server with SmolLM2, real sandboxed
// workers for the lift jobs, a real campaign through the tcfuzz binary. The strong-model tests at the
// end answer the campaign from tests/fixtures/llm_fault_server.py, a TEST FIXTURE (not a model) that
// serves the hand-written replies of tests/fixtures/strong_model_replies.json; everything else in them
// is real: the tcfuzz binary, its sandboxed workers, the lift, the repair loop and the campaign.
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <functional>
#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include <boost/process.hpp>
#include <gtest/gtest.h>

#include "fuzzer/campaign/output/StatusView.h"
#include "fuzzer/llm/LlmProposer.h"
#include "fuzzer/llm/LlmServer.h"
#include "fuzzer/worker/ProgramTester.h"
#include "fuzzer/worker/WorkerPool.h"
#include "generators/repair/IntConstraints.h"
#include "generators/llm/LlmProgram.h"
#include "generators/OpCatalog.h"
#include "generators/python/PythonEmitter.h"
#include "generators/llm/PythonLift.h"
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
  EXPECT_EQ(proposal->graph.origin.kind(), "llm") << proposal->graph.origin.generator;
  EXPECT_EQ(proposal->graph.origin.strategy, proposal->strategy);
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

/// `tcfuzz ARGS` running in the background, its output (stdout and stderr) gathered as it comes.
/// stopWhen() polls until `done` holds or `seconds` pass, then stops the campaign with SIGINT (its
/// graceful stop) unless it has already ended, and waits for it.
class BackgroundTcfuzz {
 public:
  explicit BackgroundTcfuzz(const std::vector<std::string>& args)
      : child_(TCFUZZ_BINARY, boost::process::args(args),
               (boost::process::std_out & boost::process::std_err) > output_),
        reader_([this] {
          std::string line;
          while (std::getline(output_, line)) transcript_ += line + "\n";
        }) {}
  ~BackgroundTcfuzz() {
    if (child_.running()) ::kill(child_.id(), SIGKILL);
    if (reader_.joinable()) reader_.join();
  }
  bool running() { return child_.running(); }
  void stopWhen(const std::function<bool()>& done, int seconds) {
    auto deadline = Clock::now() + std::chrono::seconds(seconds);
    while (Clock::now() < deadline && child_.running() && !done())
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    if (child_.running()) ::kill(child_.id(), SIGINT);
    child_.wait();
    reader_.join();
  }
  int exitCode() const { return child_.exit_code(); }
  const std::string& transcript() const { return transcript_; }

 private:
  boost::process::ipstream output_;
  boost::process::child child_;
  std::string transcript_;
  std::thread reader_;
};

TEST(LlmProposer, CampaignSurvivesTheLocalServerBeingKilled) {
  TempDir dir("tcfuzz-llmcampaign");
  fs::path out = dir.path() / "out";
  BackgroundTcfuzz fuzz({"fuzz", "-o", out.string(), "--seed", "21", "--max-time", "180", "-j", "1", "--status", "log",
                         "--sandbox", sandboxArg(), "--no-triage", "--backend", "aot_eager"});
  // Wait for the LLM to have answered once, then kill its server.
  auto deadline = Clock::now() + std::chrono::seconds(150);
  std::map<std::string, std::string> stats;
  while (Clock::now() < deadline) {
    stats = readStats(out / "fuzzer_stats");
    if (statInt(stats, "llm_proposals") >= 1 && statInt(stats, "llm_server_pid") > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  ASSERT_GE(statInt(stats, "llm_proposals"), 1);
  pid_t serverPid = static_cast<pid_t>(statInt(stats, "llm_server_pid"));
  ASSERT_EQ(::kill(serverPid, SIGKILL), 0);
  int64_t proposalsAtKill = statInt(stats, "llm_proposals");
  // Then wait for the restart and a proposal after it, and stop the campaign there: --max-time only bounds
  // a campaign that never gets there.
  fuzz.stopWhen(
      [&] {
        auto now = readStats(out / "fuzzer_stats");
        return statInt(now, "llm_restarts") >= 1 && statInt(now, "llm_proposals") > proposalsAtKill;
      },
      150);
  const std::string& transcript = fuzz.transcript();
  EXPECT_EQ(fuzz.exitCode(), 0) << transcript;
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
  BackgroundTcfuzz fuzz({"fuzz", "-o", out.string(), "--seed", "5", "--max-time", "120", "-j", "1", "--status", "log",
                         "--sandbox", sandboxArg(), "--no-triage", "--backend", "aot_eager", "--llm-url",
                         server.baseUrl(), "--llm-model", server.modelName(), "--llm-grammar", "on"});
  // Stopped once an LLM proposal has been tested; --max-time bounds the rest.
  fuzz.stopWhen([&] { return statInt(readStats(out / "fuzzer_stats"), "llm_tested") >= 1; }, 120);
  const std::string& transcript = fuzz.transcript();
  EXPECT_EQ(fuzz.exitCode(), 0) << transcript;
  auto stats = readStats(out / "fuzzer_stats");
  EXPECT_EQ(stats["llm_state"], "running") << transcript;
  EXPECT_EQ(stats["llm_model"], server.modelName());
  EXPECT_GE(statInt(stats, "llm_requests"), 1) << transcript;
  EXPECT_GE(statInt(stats, "llm_valid"), 1) << transcript;
  EXPECT_GE(statInt(stats, "llm_tested"), 1) << transcript;
  EXPECT_EQ(statInt(stats, "llm_server_pid"), -1);  // tcfuzz started no server of its own
  EXPECT_EQ(transcript.find("starting the local LLM server"), std::string::npos);
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

// --- A stronger model, stood in for by hand-written fixture replies ---------------------------------

namespace {

using Json = nlohmann::json;

/// tests/fixtures/strong_model_replies.json: HAND-WRITTEN replies standing for what a code model writes
/// (not recorded from one).
const Json& strongReplies() {
  static const Json doc = Json::parse(readText(sourcePath("tests/fixtures/strong_model_replies.json")));
  return doc;
}

/// The fixture reply called `name`.
const Json& strongReply(const std::string& name) {
  for (const Json& r : strongReplies()["replies"])
    if (r["name"] == name) return r;
  throw std::out_of_range("no fixture reply named " + name);
}

/// The JSON lines of a file, in order (none when it is missing).
std::vector<Json> jsonLines(const fs::path& file) {
  std::vector<Json> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(Json::parse(line));
  return out;
}

/// The text of a logged chat request's message with `role` ("" when it has none).
std::string messageOf(const Json& request, const std::string& role) {
  for (const Json& m : request["body"]["messages"])
    if (m["role"] == role) return m["content"].get<std::string>();
  return "";
}

/// tests/fixtures/llm_fault_server.py as a child process: a TEST FIXTURE speaking the OpenAI
/// chat-completions protocol with scripted answers (here the strong-model fixture replies). Not a model.
class FixtureServer {
 public:
  FixtureServer(const Json& script, const fs::path& dir) : log_(dir / "requests.jsonl") {
    fs::path scriptPath = dir / "script.json";
    std::ofstream(scriptPath) << script.dump();
    namespace bp = boost::process;
    child_ = bp::child(TCFUZZ_DEFAULT_PYTHON, sourcePath("tests/fixtures/llm_fault_server.py").string(), "--script",
                       scriptPath.string(), "--log", log_.string(), bp::std_out > out_);
    std::string line;
    if (!std::getline(out_, line)) throw std::runtime_error("the fixture server printed no port");
    port_ = std::stoi(line);
  }
  ~FixtureServer() {
    std::error_code ec;
    if (child_.running(ec)) child_.terminate(ec);
    child_.wait(ec);
  }
  std::string baseUrl() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  /// The chat requests it answered, in arrival order, each with the script step that answered it.
  std::vector<Json> chatRequests() const {
    std::vector<Json> out;
    for (Json& r : jsonLines(log_))
      if (r["method"] == "POST" && r["path"] == "/v1/chat/completions") out.push_back(std::move(r));
    return out;
  }

 private:
  fs::path log_;
  boost::process::ipstream out_;
  boost::process::child child_;
  int port_ = 0;
};

/// A --llm-prompts document with only the named strategies of the built-in table
/// (generators/llm/prompts/strategies.json: its examples, targets and prompt texts as they are).
fs::path strategiesFile(const fs::path& dir, const std::set<std::string>& names) {
  Json doc = Json::parse(readText(sourcePath("generators/llm/prompts/strategies.json")));
  Json kept = Json::array();
  for (const Json& s : doc["strategies"])
    if (names.count(s["name"].get<std::string>())) kept.push_back(s);
  EXPECT_EQ(kept.size(), names.size()) << "a strategy under test is missing from generators/llm/prompts/strategies.json";
  doc["strategies"] = kept;
  fs::path file = dir / "strategies.json";
  std::ofstream(file) << doc.dump(1);
  return file;
}

/// What a campaign against the fixture server left: its output, stats, reply log and the requests.
struct FixtureCampaign {
  Finished run;
  fs::path out;
  std::map<std::string, std::string> stats;
  std::vector<Json> replies;   ///< OUT/work/llm/replies.jsonl
  std::vector<Json> requests;  ///< chat requests the fixture server answered
  double seconds = 0;
};

/// `tcfuzz fuzz` with the LLM at the fixture server (model "strong-fixture"), the strategies `names` only,
/// one worker, aot_eager, no triage, seed `seed`, until `maxPrograms` programs are done.
FixtureCampaign runFixtureCampaign(const fs::path& dir, const Json& script, const std::set<std::string>& names,
                                   int maxPrograms, int seed, const std::vector<std::string>& extraArgs = {}) {
  FixtureServer server(script, dir);
  FixtureCampaign c;
  c.out = dir / "out";
  auto start = Clock::now();
  std::vector<std::string> args{"fuzz", "-o", c.out.string(), "--seed", std::to_string(seed), "--max-programs",
                                std::to_string(maxPrograms), "--max-time", "150", "-j", "1", "--status", "log", "--sandbox",
                                sandboxArg(), "--no-triage", "--backend", "aot_eager", "--llm-url", server.baseUrl(),
                                "--llm-model", "strong-fixture", "--llm-grammar", "off", "--llm-prompts",
                                strategiesFile(dir, names).string()};
  args.insert(args.end(), extraArgs.begin(), extraArgs.end());
  c.run = runTcfuzz(args);
  c.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  c.stats = readStats(c.out / "fuzzer_stats");
  c.replies = jsonLines(c.out / "work" / "llm" / "replies.jsonl");
  c.requests = server.chatRequests();
  return c;
}

/// The llm_rejected_* lines of a campaign's stats ("reason=count ..."; "" when there are none).
std::string rejections(const std::map<std::string, std::string>& stats) {
  std::string out;
  for (const auto& [key, value] : stats)
    if (key.starts_with("llm_rejected_")) out += key + "=" + value + " ";
  return out;
}

std::vector<std::string> nodeOps(const Json& proposal) {
  std::vector<std::string> ops;
  for (const Json& n : proposal["nodes"]) ops.push_back(n["op"]);
  return ops;
}

/// A proposal built into a valid program that keeps every node it wrote, in order: nothing dropped, no
/// unknown op or undefined argument. Repair may still shrink dims over the caps (ShapeCaps::maxDim 12)
/// and insert guards (a clamp before exp, log or a divisor), so `ops` need only be a subsequence.
void expectKeptWhole(const gen::ProposalOutcome& out, const Json& ops) {
  ASSERT_TRUE(out.graph) << out.rejection << ": " << out.detail;
  EXPECT_TRUE(out.dropped.empty()) << out.detail;
  EXPECT_EQ(out.unknownOps, 0);
  EXPECT_EQ(out.undefinedArgs, 0);
  size_t next = 0;
  std::string built;
  for (const auto& n : out.graph->nodes) {
    built += n.op + " ";
    if (next < ops.size() && n.op == ops[next].get<std::string>()) next++;
  }
  EXPECT_EQ(next, ops.size()) << "wrote " << ops.dump() << ", built " << built;
}

/// The campaign's queue entries (OUT/queue/*.json) whose name holds `part` ("src:llm,op:ops-python").
int queueEntries(const fs::path& out, const std::string& part) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(out / "queue", ec))
    if (e.path().extension() == ".json" && e.path().filename().string().find(part) != std::string::npos) n++;
  return n;
}

/// The node count of a replies.jsonl detail ("13 nodes, shape-repaired": 13; -1 when it names none).
int nodesIn(const Json& replyLine) {
  std::string detail = replyLine.value("detail", "");
  size_t space = detail.find(" nodes");
  return space == std::string::npos ? -1 : std::stoi(detail.substr(0, space));
}

}  // namespace

// The fixture replies are what they claim: every Python one lifts, through a real sandboxed lift job,
// to exactly the ops it lists with no call left unmapped, and builds into a valid program without
// shape repair; the failing one fails in eager with its shape mismatch; the JSON ones build as written.
TEST(LlmProposer, StrongModelFixtureRepliesLiftAsWritten) {
  TempDir dir("tcfuzz-strongfixture");
  WorkerPool pool(testWorkerSpec(dir.path() / "work"), 1);
  ProgramTester tester(pool, oracles::Comparator{}, dir.path() / "work" / "jobs");
  const Json table = gen::liftTable(catalog());
  int python = 0, json = 0;
  for (const Json& reply : strongReplies()["replies"]) {
    const std::string name = reply["name"], content = reply["content"];
    SCOPED_TRACE(name);
    gen::IntSolver solver(7);
    if (reply["form"] == "json") {
      json++;
      expectKeptWhole(gen::proposalFromText(content, catalog(), gen::ShapeCaps{}, 7, solver), reply["nodes"]);
      continue;
    }
    python++;
    fs::path file = dir.path() / "work" / (name + ".py");
    std::ofstream(file) << pythonFromReply(content);
    TestSettings ts;
    ts.limits = Limits{120, 4096};
    ts.seed = 7;
    ts.threads = 1;
    oracles::RunResult r = tester.lift(file, ts, table);
    if (reply.contains("eager_error")) {
      EXPECT_EQ(r.status, oracles::RunStatus::Exception) << r.summary();
      ASSERT_TRUE(r.exception) << r.summary();
      EXPECT_NE(r.exception->message.find(reply["eager_error"].get<std::string>()), std::string::npos)
          << r.exception->message;
      continue;
    }
    ASSERT_TRUE(r.ok()) << r.summary() << r.stderrTail;
    ASSERT_TRUE(r.lift.contains("proposal")) << r.lift.dump();
    EXPECT_EQ(r.lift["unmapped"], Json::object()) << r.lift.dump();
    EXPECT_EQ(nodeOps(r.lift["proposal"]), reply["lifts_to"].get<std::vector<std::string>>());
    gen::ProposalOutcome out = gen::buildProposal(r.lift["proposal"], catalog(), gen::ShapeCaps{}, 7, solver);
    expectKeptWhole(out, reply["lifts_to"]);
  }
  EXPECT_EQ(python, 4);
  EXPECT_EQ(json, 2);
}

// The Python form and the repair loop against a stronger model: the first ops-python reply fails in
// eager (a layer declared with the wrong input width); the repair strategy hands the program and its
// eager error back, the fixed reply lifts, and the proposal counts as valid and repaired. Every later
// reply is the deeper residual block, valid at once. Only ops-python is drawable, so the order is fixed.
TEST(LlmProposer, StrongModelPythonRepliesAndTheRepairLoop) {
  TempDir dir("tcfuzz-strongpython");
  const Json& failing = strongReply("shape-mismatch");
  const Json& repaired = strongReply("shape-mismatch-repaired");
  const Json& deep = strongReply("deep-block");
  // The repair request carries the failing program, so the fixture answers it by that program's text;
  // the ops-python requests get the failing reply first, then the deep block.
  Json script = Json::array({{{"match", "self.gate = nn.Linear(24, 12)"}, {"content", repaired["content"]}},
                             {{"content", failing["content"]}},
                             {{"content", deep["content"]}}});
  // One program per compile: a batch claims its members at once, and six programs could all be drawn
  // before the first reply (and its repair round) comes back.
  FixtureCampaign c =
      runFixtureCampaign(dir.path(), script, {"ops-python", "repair-python"}, 6, 31, {"--batch", "1"});
  ASSERT_EQ(c.run.exitCode, 0) << c.run.output;
  EXPECT_LT(c.seconds, 150);
  const auto& st = c.stats;
  EXPECT_EQ(st.at("llm_state"), "running") << c.run.output;
  EXPECT_EQ(st.at("llm_model"), "strong-fixture");
  EXPECT_EQ(statInt(st, "llm_failed_requests"), 0);
  EXPECT_EQ(rejections(st), "") << c.run.output;
  EXPECT_EQ(statInt(st, "programs_done"), 6);
  // Every reply became a valid program, the first through one repair round. fuzzer_stats is written
  // when the campaign ends, while the LLM thread may still hold one reply it has not judged yet.
  int64_t replies = statInt(st, "llm_proposals_ops_python"), valid = statInt(st, "llm_valid_ops_python");
  EXPECT_GE(valid, 2) << c.run.output;
  EXPECT_LE(replies - valid, 1);
  EXPECT_EQ(statInt(st, "llm_requests_repair_python"), 1);
  EXPECT_EQ(statInt(st, "llm_proposals_repair_python"), 1);
  EXPECT_EQ(statInt(st, "llm_valid_repair_python"), 1);
  EXPECT_EQ(statInt(st, "llm_proposals"), replies);  // a repair reply finishes ops-python's proposal
  EXPECT_EQ(statInt(st, "llm_valid"), valid);
  EXPECT_GE(statInt(st, "llm_tested_ops_python"), 1) << c.run.output;
  EXPECT_EQ(statInt(st, "llm_tested"), statInt(st, "llm_tested_ops_python"));
  // An LLM program that ran in eager and compiled, agreed, and found new features joined the queue.
  EXPECT_GE(queueEntries(c.out, "src:llm,op:ops-python"), 1) << c.run.output;

  // The reply log (a line once a reply is judged): the failing reply first, valid after its repair,
  // then the deep block, each valid with at least the nodes its lift gives (8 and 13: repair may add
  // guards, never drop one).
  ASSERT_GE(static_cast<int64_t>(c.replies.size()), valid);
  EXPECT_EQ(c.replies[0]["strategy"], "ops-python");
  EXPECT_EQ(c.replies[0]["reply"], failing["content"]);
  EXPECT_EQ(c.replies[0]["outcome"], "valid") << c.replies[0].dump();
  EXPECT_GE(nodesIn(c.replies[0]), static_cast<int>(repaired["lifts_to"].size())) << c.replies[0].dump();
  for (size_t i = 1; i < c.replies.size(); ++i) {
    EXPECT_EQ(c.replies[i]["strategy"], "ops-python");
    EXPECT_EQ(c.replies[i]["reply"], deep["content"]);
    EXPECT_EQ(c.replies[i]["outcome"], "valid") << c.replies[i].dump();
    EXPECT_GE(nodesIn(c.replies[i]), static_cast<int>(deep["lifts_to"].size())) << c.replies[i].dump();
  }

  // The server saw: the first ops-python request, then the repair request holding the failing program
  // (the reply's fenced block, its __main__ block dropped) and its eager error, then ops-python again.
  ASSERT_GE(c.requests.size(), c.replies.size() + 1);
  EXPECT_GE(static_cast<int64_t>(c.requests.size()), statInt(st, "llm_requests"));
  EXPECT_EQ(c.requests[0]["step"], 1);
  EXPECT_EQ(c.requests[1]["step"], 0);
  for (size_t i = 2; i < c.requests.size(); ++i) EXPECT_EQ(c.requests[i]["step"], 2);
  EXPECT_EQ(c.requests[0]["body"]["model"], "strong-fixture");
  std::string repairPrompt = messageOf(c.requests[1], "user");
  EXPECT_NE(repairPrompt.find("self.gate = nn.Linear(24, 12)"), std::string::npos) << repairPrompt;
  EXPECT_NE(repairPrompt.find(failing["eager_error"].get<std::string>()), std::string::npos) << repairPrompt;
  EXPECT_EQ(repairPrompt.find("__main__"), std::string::npos) << repairPrompt;
  EXPECT_EQ(repairPrompt.find("Sure!"), std::string::npos) << repairPrompt;  // the code only, not the prose
}

// The mutation strategies against a stronger model: they wait for the campaign's queue (filled by
// grammar programs), send a queue program in their prompt, and the rewrite each gets back becomes a
// valid, tested program. One campaign per strategy, so that the bandit has one strategy to draw.
TEST(LlmProposer, StrongModelMutateRepliesRewriteQueuePrograms) {
  struct Case {
    std::string strategy, reply, promptMark;
  };
  // The prompt mark is a piece of the queue program as the prompt shows it: emitted Python, or the
  // proposal form (gen::proposalOf) as compact JSON (keys sorted: a "hook" may come before "inputs").
  const std::vector<Case> cases{{"mutate-python", "rewrite-python", "def make_inputs(seed):"},
                                {"mutate-json", "rewrite-json", "\"inputs\":[{\"dtype\":"}};
  for (const Case& k : cases) {
    SCOPED_TRACE(k.strategy);
    TempDir dir("tcfuzz-strongmutate");
    const Json& reply = strongReply(k.reply);
    Json script = Json::array({{{"content", reply["content"]}}});
    std::set<std::string> names{k.strategy};
    if (k.strategy.ends_with("python")) names.insert("repair-python");
    // Ten programs: a rewrite can only be asked for once the queue holds a program, and its lift waits for
    // the campaign's one worker, so under a loaded machine the first one is ready some programs later.
    // One program per compile, so that a batch does not claim those ten before the rewrite is ready.
    FixtureCampaign c = runFixtureCampaign(dir.path(), script, names, 10, 37, {"--batch", "1"});
    ASSERT_EQ(c.run.exitCode, 0) << c.run.output;
    const auto& st = c.stats;
    std::string key = k.strategy == "mutate-python" ? "mutate_python" : "mutate_json";
    EXPECT_EQ(st.at("llm_state"), "running") << c.run.output;
    EXPECT_EQ(rejections(st), "") << c.run.output;
    EXPECT_EQ(statInt(st, "llm_failed_requests"), 0);
    EXPECT_EQ(statInt(st, "programs_done"), 10);
    int64_t replies = statInt(st, "llm_proposals_" + key), valid = statInt(st, "llm_valid_" + key);
    EXPECT_GE(valid, 1) << c.run.output;
    EXPECT_LE(replies - valid, 1);  // one reply may be in flight when the stats are written
    EXPECT_GE(statInt(st, "llm_tested_" + key), 1) << c.run.output;
    EXPECT_EQ(statInt(st, "llm_requests_repair_python"), k.strategy == "mutate-python" ? 0 : -1);
    EXPECT_GE(queueEntries(c.out, "src:llm,op:" + k.strategy), 1) << c.run.output;
    // No request before the queue had a program: each one holds a queue program.
    ASSERT_FALSE(c.requests.empty());
    EXPECT_GE(static_cast<int64_t>(c.requests.size()), statInt(st, "llm_requests"));
    for (const Json& r : c.requests) {
      std::string prompt = messageOf(r, "user");
      EXPECT_NE(prompt.find(k.promptMark), std::string::npos) << prompt;
    }
    ASSERT_GE(static_cast<int64_t>(c.replies.size()), valid);
    const Json& written = reply.contains("lifts_to") ? reply["lifts_to"] : reply["nodes"];
    for (const Json& line : c.replies) {
      EXPECT_EQ(line["strategy"], k.strategy);
      EXPECT_EQ(line["outcome"], "valid") << line.dump();
      EXPECT_GE(nodesIn(line), static_cast<int>(written.size())) << line.dump();
    }
  }
}

// LLM provenance end to end, against the fixture server: JSON prompts show the campaign's own small queue programs
// as few-shot examples once it has some (the built-in example before); every LLM program is a core the
// grammar grew (marked [LLM core], larger than the reply, no dead node); its header names model, strategy
// and reply id, and its replay line (gen --from the stored IR) makes the same program again; fuzzer_stats
// counts the strategy as an origin of its own.
TEST(LlmProposer, FewShotFromTheQueueAndGrownProgramsThatReplay) {
  TempDir dir("tcfuzz-fewshot");
  const Json& reply = strongReply("attention-json");
  // Each reply takes 2 s, as a real model's would: a campaign takes a ready LLM proposal for every program it
  // can, so an instant fixture leaves the grammar only the first program or two, and one finding among them
  // would leave the queue no small program to show.
  Json script = Json::array({{{"content", reply["content"]}, {"sleep", 2}}});
  // Grammar programs of 4 to 8 nodes: the queue has programs small enough for a few-shot example (at most 8
  // nodes) from its first entries on, whatever the generator draws.
  fs::path policy = dir.path() / "policy.json";
  std::ofstream(policy) << R"({"generation": {"min_nodes": 4, "max_nodes": 8}})";
  // One program per compile: a batch claims its members at once, and a prompt shows the queue only once programs are
  // judged; in batches the first programs were queued after the last request of the twelve programs' campaign.
  FixtureCampaign c =
      runFixtureCampaign(dir.path(), script, {"ops-json"}, 12, 41, {"--policy", policy.string(), "--batch", "1"});
  ASSERT_EQ(c.run.exitCode, 0) << c.run.output;
  int builtIn = 0, fewShot = 0;
  for (const Json& r : c.requests) {
    std::string prompt = messageOf(r, "user");
    builtIn += prompt.find("Example:\n{\"inputs\"") != std::string::npos;
    if (prompt.find("Example 1 (it made the compiler do something new):\n{\"inputs\":") != std::string::npos) fewShot++;
  }
  EXPECT_GE(builtIn, 1) << "the first requests, before the queue had a program";
  std::string queueSizes;  // what the queue held when the campaign ended: "<nodes>:<origin> ..."
  for (const auto& e : fs::directory_iterator(c.out / "queue"))
    if (e.path().extension() == ".json")
      queueSizes += fmt::format("{}:{} ", gen::Graph::load(e.path().string()).nodes.size(), e.path().filename().string());
  EXPECT_GE(fewShot, 1) << c.requests.size() << " requests; queue " << queueSizes << "\n" << c.run.output;
  int llmPrograms = 0;
  for (const auto& e : fs::directory_iterator(c.out / "queue")) {
    if (e.path().extension() != ".py" || e.path().filename().string().find("src:llm") == std::string::npos) continue;
    ++llmPrograms;
    std::string py = readText(e.path());
    EXPECT_NE(py.find("# Proposed by an LLM (model strong-fixture, strategy ops-json, reply "), std::string::npos) << py;
    EXPECT_NE(py.find("[LLM core]"), std::string::npos) << py;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(py, m, std::regex(R"(# Graph ([0-9a-f]{16}); replay[^:]*: tcfuzz gen --from (\S+)( --plain)?( --single-trace)?\n)")))
        << py.substr(0, 600);
    fs::path stored = c.out / m[2].str();
    gen::Graph g = gen::Graph::load(stored.string());
    EXPECT_EQ(gen::deadNodeCount(g), 0) << stored;
    int core = static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(), [](const gen::Node& n) { return n.core; }));
    EXPECT_GE(core, 1) << stored << "\n" << py;
    EXPECT_GT(static_cast<int>(g.nodes.size()), core) << stored;
    fs::path replayDir = dir.path() / ("replay-" + std::to_string(llmPrograms));
    // A program judged as its op graph in a batch says --plain: its Python constructs dropped, as the replay drops them.
    std::vector<std::string> replay{"gen", "--from", stored.string(), "--out", replayDir.string()};
    if (m[3].matched) replay.push_back("--plain");
    if (m[4].matched) replay.push_back("--single-trace");  // judged through an export entry: one trace
    Finished again = runTcfuzz(replay);
    ASSERT_EQ(again.exitCode, 0) << again.output;
    int same = 0;
    for (const auto& made : fs::directory_iterator(replayDir))
      if (made.path().extension() == ".py") same += readText(made.path()).find("# Graph " + m[1].str() + ";") != std::string::npos;
    EXPECT_EQ(same, 1) << stored;
  }
  EXPECT_GE(llmPrograms, 1) << c.run.output;
  const auto& st = c.stats;
  EXPECT_GE(statInt(st, "origin_llm_ops_json_programs"), 1) << c.run.output;
  EXPECT_EQ(st.at("origin_llm_ops_json_dead_nodes"), "0");
  EXPECT_EQ(st.at("llm_cpu_s_ops_json"), "0.0");  // a remote endpoint's time is not ours
}
