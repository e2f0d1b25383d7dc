#pragma once
// LLM-guided generation: background threads ask an OpenAI-compatible endpoint for programs (a
// strategy and target picked by a Thompson bandit), make the untrusted replies valid (strict JSON
// parse + shape repair, or AST allowlist + sandboxed eager run + lift to the IR, with a repair loop
// that hands the eager error back), and keep a small queue of valid programs the campaign takes
// from whenever it has one. Workers never wait for the LLM: without a proposal, the campaign
// generates from the grammar. While the local LLM is still being installed in the background, the
// proposer waits for the install and starts the server once it is done. A dead local server is
// restarted with backoff; after repeated failures the campaign goes on grammar-only with a visible
// warning. Which prompt comes next is PromptBandit's choice; what the replies were, ReplyLog's record.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzzer/llm/LlmClient.h"
#include "fuzzer/llm/LlmServer.h"
#include "fuzzer/llm/PromptBandit.h"
#include "fuzzer/llm/ReplyLog.h"
#include "fuzzer/llm/ReplyText.h"
#include "fuzzer/worker/ProgramTester.h"
#include "generators/ir/Graph.h"
#include "generators/repair/IntConstraints.h"
#include "generators/OpCatalog.h"
#include "generators/llm/PromptStrategy.h"
#include "generators/python/PythonEmitter.h"
#include "oracles/infra/SecretRedactor.h"

namespace tcfuzz {

/// How the LLM is reached and used.
struct LlmSettings {
  std::string mode = "local";  ///< "local" (start the bundled server), "remote" (endpoint as given) or "off"
  LlmEndpoint endpoint;        ///< remote: as given; local: baseUrl and model are filled in at start
  LlmServerSettings server;    ///< local mode
  std::string grammar = "auto";  ///< send GBNF with JSON-form requests: "on", "off", "auto" (on for the local server)
  int requestsInFlight = 1;    ///< request threads
  int queueCapacity = 4;       ///< valid proposals kept ready; the threads wait while it is full
  int maxRepairs = 2;          ///< repair rounds for a Python proposal that fails in eager
  int maxRestarts = 3;         ///< consecutive failed restarts (local) before going grammar-only
  int maxFailures = 8;         ///< consecutive failed requests (remote) before going grammar-only
  double restartBackoffSeconds = 2;  ///< first restart delay, doubling
  std::filesystem::path promptsFile;  ///< replaces the built-in strategies when set
  /// Local mode: the background install's status file (LlmInstallStatus); empty: the one of
  /// server.python's venv. While it says an install is under way, the proposer waits for it.
  std::filesystem::path installStatusFile;
  double installProbeSeconds = 5;  ///< how often a waiting proposer reads the install's status
  SecretRedactor secrets;             ///< masked in the reply log (work/llm/replies.jsonl)
};

/// A valid program the LLM proposed, with what is needed to credit its strategy.
struct LlmProposal {
  int64_t id = 0;          ///< the id of its (last) reply in work/llm/replies.jsonl
  gen::Graph graph;        ///< its origin names strategy, target, model and reply id
  std::string strategy, target;
  size_t arm = 0;
  int repairs = 0;         ///< repair rounds it took
  bool repairedShape = false;  ///< shape repair changed it
  double cpuSeconds = 0;   ///< what making it cost: the local server's CPU over its requests, and its lift jobs
};

/// The LLM proposer: the request threads, the local server's start (after a background install),
/// restarts and give-up, and the queue of ready proposals. Thread-safe; take() and feedback() come
/// from the campaign's thread. Same settings and seed, same prompts and the same arm choices.
class LlmProposer {
 public:
  /// Receives a line worth showing on its own (server started, restarted, LLM disabled); called
  /// from the proposer's threads, so it must be thread-safe.
  using EventLog = std::function<void(const std::string&)>;

  /// `tester` runs the sandboxed lift jobs of Python proposals; `scratch` holds their files and
  /// the reply log (replies.jsonl).
  LlmProposer(const gen::OpCatalog& catalog, gen::ShapeCaps caps, LlmSettings settings, ProgramTester& tester,
              TestSettings liftSettings, std::filesystem::path scratch, uint64_t seed, EventLog log);
  ~LlmProposer();

  /// Starts the local server (local mode) and the request threads. While a background install of the
  /// local LLM is under way it first waits for it (state "installing", logged once); a failed or
  /// abandoned install, or a server that cannot start, makes the proposer grammar-only with a warning
  /// (never an exception); LLM-off does nothing.
  void start();
  /// start() on a thread of its own, so that the campaign's grammar programs never wait for the
  /// install or for the server to load; proposals flow once it answers.
  void startInBackground();
  /// Stops the threads and the local server (a start or an install wait in progress is cut short). Idempotent.
  void stop();
  /// A queue program for the mutation strategies (called from the request threads).
  void setQueueSource(std::function<std::optional<gen::Graph>()> source);
  /// Small programs of the campaign's queue that found new features, shown as few-shot examples in
  /// JSON-form prompts ({few_shot}); the built-in example while it returns none (request threads).
  void setFewShotSource(std::function<std::vector<gen::Graph>()> source);

  /// A ready proposal, without waiting; nullopt when none is ready.
  std::optional<LlmProposal> take();
  /// Credits the proposal's strategy with what testing it gave. The bandit's reward is the figure
  /// fuzzer_stats reports per origin, yield per CPU-second: (new features + kSignatureWorth x new
  /// signatures) / (its LLM CPU + `testSeconds`), as rate / (rate + `referenceRate`), the campaign's
  /// rate over all origins: 0.5 for a proposal as productive as the campaign.
  void feedback(const LlmProposal& proposal, bool tested, int newFeatures, int findings, bool newSignature,
                double testSeconds = 0, double referenceRate = 0);
  /// What a new signature is worth in new features, in the yield figures.
  static constexpr double kSignatureWorth = 10;

  /// "off", "installing", "starting", "running", "restarting" or "grammar-only: <why>".
  std::string state() const;
  /// The LLM gives or will give proposals: installing, starting, running or restarting.
  bool active() const;
  /// `key : value` pairs for fuzzer_stats (llm_requests, llm_tokens, llm_valid_rate, llm_new_features,
  /// llm_findings, ... overall and per strategy, and rejections by reason).
  std::vector<std::pair<std::string, std::string>> statsLines() const;
  /// Per strategy and "all", plus the bandit's arms, as JSON (for bench and tests).
  nlohmann::json statsJson() const;
  /// The local server (nullptr in remote and off modes): the tests kill it.
  LlmServer* server() { return server_.get(); }

 private:
  /// Local mode: waits while a background install is under way. False when the proposer went
  /// grammar-only (the install failed or was abandoned) or is stopping; true to start the server.
  /// `waited` tells whether there was an install to wait for.
  bool awaitInstall(bool* waited);
  void requestLoop(int thread);
  /// One request and everything after it; returns a valid proposal or nullopt (counted).
  std::optional<LlmProposal> propose(size_t arm, gen::Rng& rng, int thread);
  std::optional<LlmProposal> fromJsonReply(const gen::PromptStrategy& s, const std::string& reply, size_t arm,
                                           const std::string& target, uint64_t seed);
  std::optional<LlmProposal> fromPythonReply(const gen::PromptStrategy& s, std::string reply, size_t arm,
                                             const std::string& target, uint64_t seed, gen::Rng& rng, int thread,
                                             double* cpu);
  /// One chat request; the server CPU it cost is added to the strategy's stats and to `cpu`.
  std::optional<ChatResponse> ask(const gen::PromptStrategy& s, const std::map<std::string, std::string>& fills,
                                  const std::string& grammar, uint64_t seed, double* cpu = nullptr);
  /// A failed request: restarts a dead or unresponsive local server with backoff, or gives up.
  void onRequestFailure(const LlmError& e);
  void goGrammarOnly(const std::string& why);
  /// A rejected reply: counted in the reply log (propose() then charges the arm: PromptBandit::fail).
  std::optional<LlmProposal> rejectReply(const std::string& strategy, const std::string& reason,
                                         const std::string& detail);
  /// CPU seconds of the local server so far (0 for a remote endpoint).
  double serverCpuSeconds() const;
  bool grammarEnabled() const;
  void sleepFor(double seconds);

  const gen::OpCatalog& catalog_;
  gen::ShapeCaps caps_;
  LlmSettings settings_;
  ProgramTester& tester_;
  TestSettings liftSettings_;
  std::filesystem::path scratch_;
  uint64_t seed_;
  EventLog log_;
  gen::PromptBook book_;
  gen::PythonEmitter emitter_;
  nlohmann::json liftTable_;
  PromptBandit bandit_;
  ReplyLog replies_;
  std::unique_ptr<LlmServer> server_;
  std::unique_ptr<LlmClient> client_;
  std::function<std::optional<gen::Graph>()> queueSource_;
  std::function<std::vector<gen::Graph>()> fewShotSource_;
  std::atomic<int64_t> nextId_{0};  ///< reply ids and lift file numbers, one sequence

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable changed_;
  std::deque<LlmProposal> ready_;
  std::string state_ = "off";
  int consecutiveFailures_ = 0;
  int failedRestarts_ = 0;
  std::mutex restartMutex_;
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;
  std::thread starter_;  ///< runs start() for startInBackground()
};

}  // namespace tcfuzz
