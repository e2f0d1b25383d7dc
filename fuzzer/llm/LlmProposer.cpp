#include "fuzzer/llm/LlmProposer.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "oracles/infra/AtomicFile.h"
#include "generators/llm/LlmProgram.h"
#include "generators/llm/PythonLift.h"
#include "generators/ir/Rng.h"

namespace tcfuzz {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr uint64_t kLlmStream = 0x6c6c6d70726f706fULL;  // "llmpropo"
/// Ops a JSON-form grammar always allows besides the sampled ones, so that a program can connect them.
const std::vector<std::string> kGlueOps{"add", "mul", "relu", "sum", "reshape", "sigmoid", "matmul"};

/// A strategy name safe in a stats key.
std::string statsName(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

std::string readText(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

LlmProposer::LlmProposer(const gen::OpCatalog& catalog, gen::ShapeCaps caps, LlmSettings settings,
                         ProgramTester& tester, TestSettings liftSettings, fs::path scratch, uint64_t seed,
                         EventLog log)
    : catalog_(catalog),
      caps_(caps),
      settings_(std::move(settings)),
      tester_(tester),
      liftSettings_(std::move(liftSettings)),
      scratch_(std::move(scratch)),
      seed_(seed),
      log_(std::move(log)),
      book_(settings_.promptsFile.empty()
                ? gen::PromptBook::builtIn(catalog)
                : gen::PromptBook::fromJson(json::parse(readText(settings_.promptsFile)), catalog)),
      emitter_(catalog),
      liftTable_(gen::liftTable(catalog)),
      bandit_(book_, seed ^ kLlmStream),
      replies_(scratch_ / "replies.jsonl", settings_.secrets, book_) {
  // Made here, not in start(): stop() may cancel its start from another thread.
  if (settings_.mode == "local") server_ = std::make_unique<LlmServer>(settings_.server);
}

LlmProposer::~LlmProposer() { stop(); }

void LlmProposer::setQueueSource(std::function<std::optional<gen::Graph>()> source) {
  queueSource_ = std::move(source);
}

void LlmProposer::setFewShotSource(std::function<std::vector<gen::Graph>()> source) {
  fewShotSource_ = std::move(source);
}

double LlmProposer::serverCpuSeconds() const { return server_ ? server_->cpuSeconds() : 0; }

bool LlmProposer::grammarEnabled() const {
  if (settings_.grammar == "on") return true;
  if (settings_.grammar == "off") return false;
  return settings_.mode == "local";
}

void LlmProposer::start() {
  if (settings_.mode == "off") return;
  fs::create_directories(scratch_);
  {
    std::lock_guard lock(mutex_);
    state_ = "starting";
  }
  if (settings_.mode == "local") {
    bool waited = false;
    if (!awaitInstall(&waited)) return;
    {
      std::lock_guard lock(mutex_);
      state_ = "starting";
    }
    try {
      log_(waited ? "LLM installed: starting the server (llama.cpp, SmolLM2-135M-Instruct)..."
                  : "starting the local LLM server (llama.cpp, SmolLM2-135M-Instruct)...");
      server_->start();
      {
        std::lock_guard lock(mutex_);  // the stats read them from the campaign's thread
        settings_.endpoint.baseUrl = server_->baseUrl();
        if (settings_.endpoint.model.empty()) settings_.endpoint.model = server_->modelName();
      }
      std::string where = fmt::format("{} (model {}, pid {})", server_->baseUrl(), server_->modelName(), server_->pid());
      log_(waited ? "LLM ready: proposals on, local server at " + where : "local LLM server ready at " + where);
    } catch (const std::exception& e) {
      if (stopping_) return;  // cancelled by stop(): no warning
      goGrammarOnly(fmt::format("the local LLM server cannot start: {}", e.what()));
      return;
    }
  }
  if (stopping_) return;
  client_ = std::make_unique<LlmClient>(settings_.endpoint, seed_ ^ kLlmStream);
  {
    std::lock_guard lock(mutex_);
    if (state_ == "starting") state_ = "running";
  }
  for (int i = 0; i < std::max(1, settings_.requestsInFlight); ++i) threads_.emplace_back(&LlmProposer::requestLoop, this, i);
}

bool LlmProposer::awaitInstall(bool* waited) {
  const fs::path& python = settings_.server.python;
  fs::path statusFile =
      settings_.installStatusFile.empty() ? LlmInstallStatus::fileFor(python) : settings_.installStatusFile;
  while (!stopping_) {
    LlmInstallStatus install = LlmInstallStatus::read(statusFile);
    if (!install.underWay()) {
      if (install.state != "failed" && !install.abandoned()) return true;  // done, or none: start as without one
      // A failed install may have been mended since (scripts/setup by hand): the packages decide.
      std::optional<std::string> missing = LlmServer::missingPackages(python);
      if (missing && missing->empty()) return true;
      std::string log = install.log.empty() ? statusFile.string() : install.log.string();
      goGrammarOnly(install.state == "failed"
                        ? fmt::format("the background install of the local LLM failed (exit {}; its log: {}); "
                                      "scripts/setup installs it",
                                      install.exitCode, log)
                        : fmt::format("the background install of the local LLM stopped before it finished (its log: "
                                      "{}); scripts/setup installs it",
                                      log));
      return false;
    }
    if (!*waited) {
      {
        std::lock_guard lock(mutex_);
        state_ = "installing";
      }
      log_(fmt::format("LLM not installed yet: installing in the background (log: {}), fuzzing with grammar and "
                       "mutation",
                       install.log.empty() ? statusFile.string() : install.log.string()));
      *waited = true;
    }
    sleepFor(settings_.installProbeSeconds);
  }
  return false;
}

void LlmProposer::startInBackground() {
  if (settings_.mode == "off") return;
  starter_ = std::thread([this] {
    try {
      start();
    } catch (const std::exception& e) {  // on its own thread, nobody else would catch it
      goGrammarOnly(fmt::format("the LLM proposer cannot start: {}", e.what()));
    }
  });
}

void LlmProposer::stop() {
  if (stopping_.exchange(true)) return;
  { std::lock_guard lock(mutex_); }  // a thread between its wait's check and its sleep is asleep now: woken below
  changed_.notify_all();
  if (server_) server_->cancelStart();
  if (starter_.joinable()) starter_.join();
  if (client_) client_->cancel();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  if (server_) server_->stop();
}

std::string LlmProposer::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

bool LlmProposer::active() const {
  std::lock_guard lock(mutex_);
  return state_ == "running" || state_ == "restarting" || state_ == "starting" || state_ == "installing";
}

void LlmProposer::goGrammarOnly(const std::string& why) {
  {
    std::lock_guard lock(mutex_);
    if (state_.starts_with("grammar-only")) return;
    state_ = "grammar-only: " + why;
  }
  changed_.notify_all();
  log_(fmt::format("WARNING: LLM disabled, continuing with grammar generation only: {}", why));
}

void LlmProposer::sleepFor(double seconds) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)),
                    [&] { return stopping_.load(); });
}

std::optional<LlmProposal> LlmProposer::rejectReply(const std::string& strategy, const std::string& reason,
                                                    const std::string& detail) {
  replies_.reject(strategy, reason, detail);
  return std::nullopt;
}

std::optional<LlmProposal> LlmProposer::take() {
  std::lock_guard lock(mutex_);
  if (ready_.empty()) return std::nullopt;
  LlmProposal p = std::move(ready_.front());
  ready_.pop_front();
  changed_.notify_all();
  return p;
}

void LlmProposer::feedback(const LlmProposal& p, bool tested, int newFeatures, int findings, bool newSignature,
                           double testSeconds, double referenceRate) {
  replies_.countTesting(p.strategy, tested, newFeatures, findings, newSignature);
  if (!tested) {  // a duplicate of a program already tested: it cost its LLM time and gave nothing
    bandit_.reward(p.arm, 0);
    return;
  }
  double yield = std::max(0, newFeatures) + (newSignature ? kSignatureWorth : 0.0);
  double rate = yield / std::max(1e-3, p.cpuSeconds + testSeconds);
  // Without a campaign rate yet (the first programs), any yield counts as a full success.
  double reward = referenceRate > 0 ? rate / (rate + referenceRate) : (yield > 0 ? 1.0 : 0.0);
  bandit_.reward(p.arm, reward);
}

void LlmProposer::onRequestFailure(const LlmError& e) {
  if (e.kind == LlmError::Kind::Cancelled || stopping_) return;
  int failures;
  {
    std::lock_guard lock(mutex_);
    failures = ++consecutiveFailures_;
  }
  if (!server_) {
    // Remote endpoint: the client already retried with backoff; give up after repeated failures.
    if (failures >= settings_.maxFailures)
      goGrammarOnly(fmt::format("{} requests in a row to {} failed; the last: {}", failures,
                                settings_.endpoint.baseUrl, e.what()));
    else
      sleepFor(std::min(60.0, settings_.restartBackoffSeconds * failures));
    return;
  }
  bool transport = e.kind == LlmError::Kind::Connect || e.kind == LlmError::Kind::Timeout ||
                   (e.kind == LlmError::Kind::Http && e.httpStatus >= 500);
  if (!transport && server_->running()) return;
  std::unique_lock restartLock(restartMutex_, std::try_to_lock);
  if (!restartLock.owns_lock()) {  // another thread is restarting it: wait for that
    std::lock_guard wait(restartMutex_);
    return;
  }
  // Alive and answering (a busy niced server answers /models slowly): only slow, not dead.
  if (server_->running() && client_->reachable(10.0)) return;
  {
    std::lock_guard lock(mutex_);
    state_ = "restarting";
  }
  while (!stopping_) {
    int attempt;
    {
      std::lock_guard lock(mutex_);
      attempt = failedRestarts_;
    }
    if (attempt >= settings_.maxRestarts) {
      goGrammarOnly(fmt::format("the local LLM server died and {} restarts failed; the last error: {}", attempt,
                                e.what()));
      return;
    }
    double delay = settings_.restartBackoffSeconds * static_cast<double>(1 << std::min(attempt, 6));
    log_(fmt::format("the local LLM server is not answering ({}); restarting it in {:.0f}s", e.what(), delay));
    sleepFor(delay);
    if (stopping_) return;
    try {
      server_->restart();
      {
        std::lock_guard lock(mutex_);
        failedRestarts_ = 0;
        consecutiveFailures_ = 0;
        state_ = "running";
      }
      log_(fmt::format("local LLM server restarted at {} (restart {})", server_->baseUrl(), server_->restarts()));
      return;
    } catch (const std::exception& restartError) {
      std::lock_guard lock(mutex_);
      failedRestarts_++;
    }
  }
}

std::optional<ChatResponse> LlmProposer::ask(const gen::PromptStrategy& s, const std::map<std::string, std::string>& fills,
                                             const std::string& grammar, uint64_t seed, double* cpu) {
  ChatRequest request;
  request.messages = {{"system", gen::renderPrompt(s.system, fills)}, {"user", gen::renderPrompt(s.user, fills)}};
  request.temperature = s.temperature;
  request.maxTokens = s.maxTokens;
  request.seed = seed;
  request.grammar = grammar;
  replies_.countRequest(s.name);
  LlmClient* client = client_.get();
  // The server's CPU over the request (with several requests in flight each one's share overlaps the
  // others': the figures then over-count the LLM, never under-count it).
  double cpuBefore = serverCpuSeconds();
  auto began = std::chrono::steady_clock::now();
  double used = 0, wall = 0;
  auto charge = [&] {
    used = std::max(0.0, serverCpuSeconds() - cpuBefore);  // a restart resets the counter
    wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    if (cpu) *cpu += used;
  };
  try {
    ChatResponse r = client->chat(request);
    charge();
    replies_.countAnswered(s.name, used, wall, r.promptTokens, r.completionTokens);
    std::lock_guard lock(mutex_);
    consecutiveFailures_ = 0;
    return r;
  } catch (const LlmError& e) {
    charge();
    replies_.countFailed(s.name, used, wall, e.kind == LlmError::Kind::Cancelled);
    onRequestFailure(e);
    return std::nullopt;
  }
}

std::optional<LlmProposal> LlmProposer::fromJsonReply(const gen::PromptStrategy& s, const std::string& reply,
                                                      size_t arm, const std::string& target, uint64_t seed) {
  gen::IntSolver solver(seed);
  gen::ProposalOutcome out = gen::proposalFromText(reply, catalog_, caps_, seed, solver);
  if (!out.graph) return rejectReply(s.name, out.rejection, out.detail);
  LlmProposal p;
  p.graph = std::move(*out.graph);
  p.strategy = s.name;
  p.target = target;
  p.arm = arm;
  p.repairedShape = out.repaired;
  return p;
}

std::optional<LlmProposal> LlmProposer::fromPythonReply(const gen::PromptStrategy& s, std::string reply, size_t arm,
                                                        const std::string& target, uint64_t seed, gen::Rng& rng,
                                                        int thread, double* cpu) {
  const gen::PromptStrategy* repair = book_.repairStrategy("python");
  auto fail = [&](const std::string& reason, const std::string& detail) {
    return rejectReply(s.name, reason, detail);
  };
  for (int round = 0;; ++round) {
    std::string code = pythonFromReply(reply);
    int64_t id = nextId_++;
    fs::path file = scratch_ / fmt::format("llm-{}-{:06d}.py", thread, id);
    writeFileAtomically(file, code);
    TestSettings ts = liftSettings_;
    ts.seed = seed;
    oracles::RunResult r = tester_.lift(file, ts, liftTable_);
    replies_.addCpu(s.name, r.times.childWall);
    *cpu += r.times.childWall;
    std::error_code ec;
    fs::remove(file, ec);
    if (!r.jobDir.empty()) fs::remove_all(r.jobDir, ec);
    if (r.status == oracles::RunStatus::Ok) {
      if (r.lift.contains("rejected")) return fail("ast: " + r.lift["rejected"].get<std::string>(), "");
      if (!r.lift.contains("proposal")) return fail("lift-failed", r.lift.dump().substr(0, 200));
      gen::IntSolver solver(seed);
      gen::ProposalOutcome out = gen::buildProposal(r.lift["proposal"], catalog_, caps_, seed, solver);
      if (!out.graph) return fail("lift: " + out.rejection, out.detail);
      LlmProposal p;
      p.graph = std::move(*out.graph);
      p.strategy = s.name;
      p.target = target;
      p.arm = arm;
      p.repairs = round;
      p.repairedShape = out.repaired;
      if (round > 0) replies_.countValid(repair->name, false, false);
      return p;
    }
    if (r.status == oracles::RunStatus::Timeout) return fail("eager-timeout", "");
    if (r.status == oracles::RunStatus::Refused) return fail("sandbox-refused", r.summary());
    if (r.status != oracles::RunStatus::Exception) return fail("eager-crash", std::string(oracles::toString(r.status)));
    std::string error = r.exception ? fmt::format("{}: {}", r.exception->type, r.exception->message) : "an exception";
    if (error.size() > 600) error = error.substr(0, 600) + "...";
    if (!repair || round >= settings_.maxRepairs || stopping_) return fail("eager-error", error);
    std::map<std::string, std::string> fills{{"program_python", code}, {"error", error}};
    for (const auto& k : gen::promptFillNames()) fills.emplace(k, "");
    auto response = ask(*repair, fills, "", rng.engine()(), cpu);
    if (!response) return fail("eager-error", error);
    replies_.countReply(repair->name);
    reply = response->content;
  }
}

std::optional<LlmProposal> LlmProposer::propose(size_t arm, gen::Rng& rng, int thread) {
  PromptBandit::Arm a = bandit_.arm(arm);
  const gen::PromptStrategy& s = book_.strategy(a.strategy);
  std::map<std::string, std::string> fills;
  for (const auto& k : gen::promptFillNames()) fills[k] = "";
  fills["example_json"] = book_.example("json");
  fills["example_python"] = book_.example("python");
  fills["few_shot"] = "Example:\n" + book_.example("json");
  if (std::vector<gen::Graph> shots = fewShotSource_ ? fewShotSource_() : std::vector<gen::Graph>{}; !shots.empty()) {
    fills["few_shot"].clear();
    for (size_t i = 0; i < shots.size(); ++i)
      fills["few_shot"] += fmt::format("{}Example {} (it made the compiler do something new):\n{}", i ? "\n" : "",
                                       i + 1, gen::proposalOf(shots[i]).dump());
  }

  std::vector<std::string> ops;
  if (!a.target.empty()) {
    for (const auto& t : book_.targets())
      if (t.name == a.target) {
        ops = t.ops;
        fills["target_name"] = t.name;
        fills["target_kind"] = t.kind;
        fills["target_trigger"] = t.trigger;
      }
  }
  int count = static_cast<int>(rng.uniform(s.minOps, s.maxOps));
  const auto& all = catalog_.ops();
  for (int i = 0; i < count; ++i) {
    const auto& op = all[static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(all.size()) - 1))];
    if (std::find(ops.begin(), ops.end(), op->name) == ops.end()) ops.push_back(op->name);
  }
  std::string names, calls;
  for (const auto& op : ops) {
    names += (names.empty() ? "" : ", ") + op;
    calls += (calls.empty() ? "" : ", ") + gen::opCallHint(catalog_.at(op));
  }
  fills["op_names"] = names;
  fills["op_calls"] = calls;
  std::vector<std::string> grammarOps = ops;
  if (s.queue) {
    std::optional<gen::Graph> parent = queueSource_ ? queueSource_() : std::nullopt;
    if (!parent) {  // no queue yet: the caller draws again, after a pause (no busy loop while the queue is empty)
      sleepFor(0.5);
      return std::nullopt;
    }
    fills["program_json"] = gen::proposalOf(*parent).dump();
    fills["program_python"] = emitter_.emit(*parent);
    for (const auto& n : parent->nodes) grammarOps.push_back(n.op);
  }
  for (const auto& op : kGlueOps) grammarOps.push_back(op);
  std::sort(grammarOps.begin(), grammarOps.end());
  grammarOps.erase(std::unique(grammarOps.begin(), grammarOps.end()), grammarOps.end());

  uint64_t seed = rng.engine()();
  std::string grammar = s.form == "json" && grammarEnabled() ? gen::proposalGrammar(catalog_, grammarOps) : "";
  double cpu = 0;
  auto response = ask(s, fills, grammar, seed, &cpu);
  if (!response) return std::nullopt;
  replies_.countReply(s.name);
  auto p = s.form == "json" ? fromJsonReply(s, response->content, arm, a.target, seed)
                            : fromPythonReply(s, response->content, arm, a.target, seed, rng, thread, &cpu);
  bandit_.addCost(cpu);
  if (!p) bandit_.fail(arm, cpu);  // what it cost, LLM and lift, against the mean reply
  std::string rejection = replies_.takeRejection();
  int64_t replyId = nextId_++;
  replies_.append(replyId, s.name, a.target, response->content, p ? "valid" : "rejected",
           p ? fmt::format("{} nodes{}", p->graph.nodes.size(), p->repairedShape ? ", shape-repaired" : "") : rejection);
  if (p) {
    replies_.countValid(s.name, p->repairedShape, p->repairs > 0);
    std::lock_guard lock(mutex_);  // the endpoint's model is filled in at start
    p->id = replyId;
    p->cpuSeconds = cpu;
    gen::Origin& o = p->graph.origin;
    o = gen::Origin{};
    o.generator = "llm";
    o.seed = seed_;
    o.index = static_cast<uint64_t>(replyId);
    o.strategy = s.name;
    o.target = a.target;
    o.model = settings_.endpoint.model;
    o.replyId = replyId;
  }
  return p;
}

void LlmProposer::requestLoop(int thread) {
  gen::Rng rng = gen::Rng::forProgram(seed_ ^ kLlmStream, static_cast<uint64_t>(thread));
  while (!stopping_) {
    size_t arm;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] {
        return stopping_ || state_.starts_with("grammar-only") ||
               static_cast<int>(ready_.size()) < settings_.queueCapacity;
      });
      if (stopping_ || state_.starts_with("grammar-only")) return;
      arm = bandit_.pick();
    }
    std::optional<LlmProposal> p;
    try {
      p = propose(arm, rng, thread);
    } catch (const std::exception& e) {
      // A lift job the pool could not run (cancelled at shutdown, or a worker that cannot start).
      if (stopping_) return;
      log_(fmt::format("LLM proposal failed: {}", e.what()));
      replies_.reject(bandit_.arm(arm).strategy, "internal-error", e.what());
      sleepFor(1.0);
      continue;
    }
    if (!p) continue;
    std::lock_guard lock(mutex_);
    ready_.push_back(std::move(*p));
  }
}

json LlmProposer::statsJson() const {
  json out = replies_.toJson();
  out["bandit"] = bandit_.toJson();
  std::lock_guard lock(mutex_);
  out["state"] = state_;
  out["model"] = settings_.endpoint.model;
  out["url"] = settings_.endpoint.baseUrl;
  out["ready"] = ready_.size();
  out["restarts"] = server_ ? server_->restarts() : 0;
  out["server_pid"] = static_cast<int64_t>(server_ ? server_->pid() : -1);
  if (client_) out["client"] = client_->stats().toJson();
  return out;
}

std::vector<std::pair<std::string, std::string>> LlmProposer::statsLines() const {
  json s = statsJson();
  std::vector<std::pair<std::string, std::string>> kv;
  kv.emplace_back("llm_state", s["state"].get<std::string>());
  kv.emplace_back("llm_model", s["model"].get<std::string>());
  kv.emplace_back("llm_restarts", std::to_string(s["restarts"].get<int>()));
  kv.emplace_back("llm_server_pid", std::to_string(s["server_pid"].get<int64_t>()));
  kv.emplace_back("llm_ready", std::to_string(s["ready"].get<int64_t>()));
  auto add = [&](const std::string& suffix, const json& st) {
    kv.emplace_back("llm_requests" + suffix, std::to_string(st["requests"].get<int64_t>()));
    kv.emplace_back("llm_failed_requests" + suffix, std::to_string(st["failed_requests"].get<int64_t>()));
    kv.emplace_back("llm_tokens" + suffix, std::to_string(st["tokens"].get<int64_t>()));
    kv.emplace_back("llm_proposals" + suffix, std::to_string(st["replies"].get<int64_t>()));
    kv.emplace_back("llm_valid" + suffix, std::to_string(st["valid"].get<int64_t>()));
    kv.emplace_back("llm_valid_rate" + suffix, fmt::format("{:.3f}", st["valid_rate"].get<double>()));
    kv.emplace_back("llm_tested" + suffix, std::to_string(st["tested"].get<int64_t>()));
    kv.emplace_back("llm_new_features" + suffix, std::to_string(st["new_features"].get<int64_t>()));
    kv.emplace_back("llm_findings" + suffix, std::to_string(st["findings"].get<int64_t>()));
    kv.emplace_back("llm_cpu_s" + suffix, fmt::format("{:.1f}", st["cpu_s"].get<double>()));
  };
  add("", s["all"]);
  kv.emplace_back("llm_prompt_tokens", std::to_string(s["all"]["prompt_tokens"].get<int64_t>()));
  kv.emplace_back("llm_completion_tokens", std::to_string(s["all"]["completion_tokens"].get<int64_t>()));
  for (const auto& [reason, n] : s["all"]["rejections"].items())
    kv.emplace_back("llm_rejected_" + reason, std::to_string(n.get<int64_t>()));
  for (const auto& [name, st] : s["strategies"].items()) add("_" + statsName(name), st);
  std::vector<std::string> retired = bandit_.retired();
  kv.emplace_back("llm_retired_strategies", retired.empty() ? std::string("none") : fmt::format("{}", fmt::join(retired, ",")));
  return kv;
}

}  // namespace tcfuzz
