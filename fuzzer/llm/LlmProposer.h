#pragma once
// LLM-guided generation: background threads ask an OpenAI-compatible endpoint for programs (a
// strategy and target picked by a Thompson bandit), make the untrusted replies valid (strict JSON
// parse + shape repair, or AST allowlist + sandboxed eager run + lift to the IR, with a repair loop
// that hands the eager error back), and keep a small queue of valid programs the campaign takes
// from whenever it has one. Workers never wait for the LLM: without a proposal, the campaign
// generates from the grammar. A dead local server is restarted with backoff; after repeated
// failures the campaign goes on grammar-only with a visible warning.
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
#include "fuzzer/llm/ReplyText.h"
#include "fuzzer/worker/ProgramTester.h"
#include "generators/Graph.h"
#include "generators/IntConstraints.h"
#include "generators/OpCatalog.h"
#include "generators/PromptStrategy.h"
#include "generators/PythonEmitter.h"
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

/// Counters of one strategy (all strategies together under "all").
struct LlmStrategyStats {
  int64_t requests = 0, failedRequests = 0, promptTokens = 0, completionTokens = 0;
  int64_t replies = 0;      ///< replies that came back (each is valid or rejected)
  int64_t valid = 0;        ///< became a valid program (after repair)
  int64_t shapeRepaired = 0, eagerRepaired = 0;
  int64_t tested = 0, newFeatures = 0, findings = 0, newSignatures = 0;
  int64_t featuresFound = 0;  ///< new features summed over its tested programs (newFeatures counts programs)
  /// CPU seconds spent on its requests and lift jobs, rejected replies included: the local server's CPU
  /// (a remote endpoint's is not ours and not counted), the sandboxed lift runs. Testing is counted by the campaign.
  double cpuSeconds = 0;
  double requestSeconds = 0;  ///< wall seconds waiting for replies
  std::map<std::string, int64_t> rejections;  ///< reason -> count
  double validRate() const { return replies > 0 ? static_cast<double>(valid) / static_cast<double>(replies) : 0; }
  nlohmann::json toJson() const;
};

class LlmProposer {
 public:
  /// Receives a line worth showing on its own (server started, restarted, LLM disabled); called
  /// from the proposer's threads, so it must be thread-safe.
  using EventLog = std::function<void(const std::string&)>;

  /// `tester` runs the sandboxed lift jobs of Python proposals; `scratch` holds their files.
  LlmProposer(const gen::OpCatalog& catalog, gen::ShapeCaps caps, LlmSettings settings, ProgramTester& tester,
              TestSettings liftSettings, std::filesystem::path scratch, uint64_t seed, EventLog log);
  ~LlmProposer();

  /// Starts the local server (local mode) and the request threads. A server that cannot start makes
  /// the proposer grammar-only with a warning (never an exception); LLM-off does nothing.
  void start();
  /// start() on a thread of its own, so that the campaign's grammar programs never wait for the
  /// server to load; proposals flow once it answers.
  void startInBackground();
  /// Stops the threads and the local server (a start in progress is cut short). Idempotent.
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

  /// "off", "starting", "running", "restarting" or "grammar-only: <why>".
  std::string state() const;
  bool active() const;
  /// `key : value` pairs for fuzzer_stats (llm_requests, llm_tokens, llm_valid_rate, llm_new_features,
  /// llm_findings, ... overall and per strategy, and rejections by reason).
  std::vector<std::pair<std::string, std::string>> statsLines() const;
  /// Per strategy and "all", plus the bandit's arms, as JSON (for bench and tests).
  nlohmann::json statsJson() const;
  /// The local server (nullptr in remote and off modes): the tests kill it.
  LlmServer* server() { return server_.get(); }

 private:
  /// A (strategy, target) pair; target "" and targetIndex -1 for untargeted strategies.
  struct Arm {
    std::string strategy, target;
    int strategyIndex = 0, targetIndex = -1;
  };
  /// Draws a strategy, then its target (guarded by mutex_); returns the arm's index.
  size_t pickArm();
  /// Credits the arm's strategy and target with `reward` (guarded by mutex_).
  void rewardArm(size_t arm, double reward);
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
  void reject(const std::string& strategy, const std::string& reason, const std::string& detail);
  /// Appends one reply and what became of it to <scratch>/replies.jsonl (for people reading a campaign).
  void logReply(int64_t id, const std::string& strategy, const std::string& target, const std::string& reply,
                const std::string& outcome, const std::string& detail);
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
  std::vector<Arm> arms_;
  std::unique_ptr<LlmServer> server_;
  std::unique_ptr<LlmClient> client_;
  std::function<std::optional<gen::Graph>()> queueSource_;
  std::function<std::vector<gen::Graph>()> fewShotSource_;

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable changed_;
  gen::ThompsonBandit strategyBandit_;
  std::map<std::string, gen::ThompsonBandit> targetBandits_;  ///< per targeted strategy
  std::deque<LlmProposal> ready_;
  std::map<std::string, LlmStrategyStats> stats_;
  std::string state_ = "off";
  int consecutiveFailures_ = 0;
  int failedRestarts_ = 0;
  int64_t nextId_ = 0;
  std::map<std::thread::id, std::string> lastRejection_;  ///< per request thread: the last rejection, for the reply log
  std::mutex restartMutex_;
  std::mutex logMutex_;
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;
  std::thread starter_;  ///< runs start() for startInBackground()
};

}  // namespace tcfuzz
