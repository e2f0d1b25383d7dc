#pragma once
// The campaign loop (libFuzzer's FuzzerLoop, over programs): generate or mutate, test in eager,
// compiled and fp64 under a sampled compile configuration, record every finding, queue what is new.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzzer/campaign/output/CampaignOutput.h"
#include "fuzzer/campaign/CompileMatrix.h"
#include "fuzzer/campaign/CostAwareScheduler.h"
#include "fuzzer/campaign/FeatureSet.h"
#include "fuzzer/campaign/output/FindingStore.h"
#include "fuzzer/campaign/output/GpuStats.h"
#include "fuzzer/campaign/DynamoFigures.h"
#include "fuzzer/campaign/OriginLedger.h"
#include "fuzzer/llm/LlmProposer.h"
#include "fuzzer/worker/BatchTester.h"
#include "fuzzer/worker/InductorCache.h"
#include "fuzzer/worker/ProgramTester.h"
#include "fuzzer/campaign/output/StatusView.h"
#include "generators/Generator.h"
#include "generators/Mutator.h"
#include "generators/OpCatalog.h"
#include "generators/python/PythonEmitter.h"
#include "oracles/reporter/KnownUpstream.h"

namespace tcfuzz {

/// How a campaign chooses its programs and configurations: plain data, read from JSON (--policy).
struct CampaignPolicy {
  double mutationShare = 0.5;   ///< share of programs mutated from a queue entry (once the queue has one)
  int mutationAttempts = 4;     ///< mutators tried on a parent before falling back to generation
  gen::GenPolicy generation;
  CompileMatrix compile;
  SchedulePolicy schedule;      ///< the cost-aware bandit over compile choices and program sizes

  nlohmann::json toJson() const;
  /// Keys: mutation_share, mutation_attempts, generation (a GenPolicy), compile (a CompileMatrix),
  /// schedule (a SchedulePolicy).
  /// Unknown keys and bad values raise std::invalid_argument naming them.
  static CampaignPolicy fromJson(const nlohmann::json& doc);
};

/// The programs of a seed-corpus directory (--seed-corpus, which the messages name): every .json file
/// directly in `dir`, in name order, loaded as IR. std::invalid_argument when `dir` is not a directory,
/// a file is not an IR program, or it holds none.
std::vector<gen::Graph> loadSeedCorpus(const std::filesystem::path& dir);

/// The bounds and fixed parts of one session of a campaign.
struct CampaignSettings {
  uint64_t seed = 0;
  std::string device = "cpu";
  oracles::TorchInfo torch;      ///< the workers' torch (their hello): fuzzer_stats, findings
  std::vector<std::string> torchNotes;  ///< what that torch lacks and the campaign skips (fuzzer_stats)
  std::string kernelLinker = "default";  ///< what links Inductor's C++ kernels in the workers (Hello::kernelLinker)
  int lanes = 1;                 ///< programs in flight at once (each submits three jobs)
  int workers = 1;               ///< zygotes in the pool (for the torch-time share)
  int64_t maxPrograms = 0;       ///< this session; 0: unbounded
  double maxSeconds = 0;         ///< this session; 0: unbounded
  TestSettings test;             ///< limits, threads, plugins (compile and backward are sampled)
  PinnedCompile pinned;
  /// When tcfuzz started: --max-time and time_to_first_program_s count from here (unset: from run()).
  std::optional<std::chrono::steady_clock::time_point> startedAt;
  /// --max-time stops this much early (at most a quarter of it), so that the stop fits inside it.
  double stopReserveSeconds = 5;
  double statsIntervalSeconds = 5;
  double plotIntervalSeconds = 60;
  /// The workers' Inductor cache, held under inductorCacheCapBytes (0: no cap), least recently written first,
  /// checked every cacheTrimIntervalSeconds.
  std::filesystem::path inductorCacheDir;
  uint64_t inductorCacheCapBytes = 0;
  double cacheTrimIntervalSeconds = 60;
  /// Programs to judge first, in order, before any is generated (--seed-corpus; a fresh campaign's).
  std::vector<gen::Graph> seedPrograms;
  /// A GPU campaign's per-GPU figures (owned by the caller): each program is counted on its GPU, and
  /// fuzzer_stats and the status view show them. Null on CPU.
  GpuStats* gpuStats = nullptr;
  /// Known open upstream issues (corpus/known-upstream.json, --known): a new signature whose raw key matches one
  /// (oracles::matchKnownIssue on its signature and verdict) is a rediscovery. It is recorded and triaged as any
  /// finding, but the bandit and the LLM's feedback are not paid for it (fuzzer_stats known_rediscoveries).
  std::vector<oracles::KnownIssue> knownIssues;
};

/// Why run() returned.
enum class CampaignEnd { ProgramBudget, TimeBudget, Stopped, DiskFull, Failed };

class Campaign {
 public:
  /// `tester` must submit to `pool` (stop() cancels the pool's jobs).
  Campaign(const gen::OpCatalog& catalog, CampaignPolicy policy, CampaignSettings settings, CampaignOutput& output,
           FindingStore& store, WorkerPool& pool, ProgramTester& tester, StatusView& view);

  /// Loads a resumed campaign's state: the queue files (corrupt ones quarantined), the feature set,
  /// the tested hashes and the counters from findings.sqlite; re-writes the crash folders of findings
  /// whose folder is missing. Returns the problems it reported.
  std::vector<std::string> restore();
  /// Runs until a bound is reached, stop() is called or the disk fills; returns why it stopped.
  CampaignEnd run();

  // --- An outside search engine (libFuzzer) instead of run()'s lanes ---------------------------------
  /// Starts run()'s bookkeeping on its own thread: fuzzer_stats, plot_data, the status view and the
  /// --max-time stop. The engine then calls judge() from its own thread.
  void startSupervisor();
  /// Stops that thread, writes the final stats and plot row, and returns why the session ended.
  CampaignEnd finishSupervisor();
  /// Tests one program the engine chose, as a lane tests its own, and records it (store, queue,
  /// findings, the scheduler's and the ledger's credit under `origin`). Returns its features
  /// (runFeatures), or nullopt when it was not judged: the campaign is stopping, its budget is spent,
  /// or the program was skipped (unreadable outputs, a template this torch rejects).
  std::optional<std::vector<std::string>> judge(gen::Graph graph, const std::string& origin);
  /// Whether stop() was called (or a bound reached): the engine ends the session. Thread-safe.
  bool stopping() const { return stopping_; }
  /// More `key : value` lines for fuzzer_stats, asked at each write after the campaign's own (the engine's and
  /// the background triage's figures). Before run().
  void addExtraStats(std::function<std::vector<std::pair<std::string, std::string>>()> source) {
    extraStats_.push_back(std::move(source));
  }
  /// Asks run() to stop: no new program starts, the running jobs are abandoned. Thread-safe.
  void stop();
  /// Programs that were in flight when the run stopped and were dropped untested (fuzzer_stats
  /// programs_abandoned). Thread-safe.
  int64_t abandoned() const {
    std::lock_guard lock(mutex_);
    return abandoned_;
  }
  /// The message for the last end (the disk-full or failure reason).
  const std::string& endMessage() const { return endMessage_; }
  CampaignSnapshot snapshot() const;
  /// Takes LLM proposals from `llm` (nullptr: grammar and mutation only) whenever one is ready, and
  /// credits each with what testing it gave. Call before run().
  void setLlm(LlmProposer* llm) { llm_ = llm; }
  /// A queue program drawn uniformly (the LLM's mutation strategies); nullopt while the queue is empty.
  std::optional<gen::Graph> sampleQueueProgram();
  /// Up to `count` small queue programs (at most `maxNodes` nodes; each found new features), drawn
  /// among the smallest: the LLM's few-shot examples. Empty while the queue has none.
  std::vector<gen::Graph> fewShotPrograms(size_t count = 2, size_t maxNodes = 8);

 private:
  struct QueueEntry {
    std::string name;
    gen::Graph graph;
    int64_t index = 0;
    int picked = 0;
  };
  /// A program ready to test.
  struct Candidate {
    int64_t index = 0;
    gen::Graph graph;
    std::string origin = "grammar";  ///< or "mutation:<mutator>", "llm:<strategy>", "seed"
    std::string parent, donor;       ///< queue entry names
    int64_t parentIndex = -1;
    std::optional<LlmProposal> llm;  ///< set for LLM proposals
    ArmPulls pulls;                  ///< the scheduler's arms it drew, credited with its result
  };

  /// One candidate's way through testCandidate's steps: what each step leaves for the next.
  struct Trial {
    std::string py;                      ///< the program as Python, written to `file`
    std::filesystem::path file;
    SampledCompile compile;              ///< the drawn configuration (and its arms in the candidate's pulls)
    TestSettings test;                   ///< the campaign's, under `compile`
    ProgramTestResult result;
    std::vector<std::string> features;   ///< what the program reached; none when nothing was compiled
    ProgramYield yield;                  ///< the scheduler's credit
    double torchSeconds = 0;             ///< every job the test ran (ProgramTestResult::torchSeconds)
    std::string verdict;
    nlohmann::json config;                        ///< the configuration's non-default parts
    double now = 0;                      ///< unix time of the judgement
    std::vector<FindingRecord> findings;
    ProgramRecord record;
    std::optional<QueueRecord> queued;
    std::vector<std::string> newSignatures;  ///< of `findings`, those this campaign had not seen
    std::set<std::string> knownSignatures;   ///< of `findings`, those matching a known open issue
    int rediscoveries = 0;                   ///< of newSignatures, those in knownSignatures: not credited
    int batchSize = 1;                   ///< programs of the batch that judged it (1: alone)
    int batchMember = 0;                 ///< its place there
    BatchJudgement judgement = BatchJudgement::Alone;
    std::string batchPy;                 ///< a batch-only finding's program: the batch
    nlohmann::json batchMembers;         ///< and {"programs", "members" (their IR), "member" (its place)}
  };

  void lane(int laneIndex);
  /// The next program index of this session, counted as started; nullopt when the program budget is spent.
  std::optional<int64_t> claimIndex();
  std::optional<Candidate> makeCandidate(int64_t index, gen::Generator& generator);
  /// Tests and records the candidate; returns its features, nullopt when it was not judged. Its steps,
  /// in this order, are the member functions below.
  std::optional<std::vector<std::string>> testCandidate(Candidate& candidate, const std::filesystem::path& scratch);
  /// testCandidate for a candidate whose configuration is drawn already (drawCompile into `trial`).
  std::optional<std::vector<std::string>> testDrawn(Candidate& candidate, const std::filesystem::path& scratch,
                                                    Trial& trial);
  /// A lane's step (CampaignBatch.cpp): `first` tested alone, or with the programs drawn after it as one batch
  /// when the drawn batch size is over 1. A batch's programs are judged under the configuration drawn for the
  /// first (any entry but training steps), with their Python constructs or as their op graphs as that
  /// configuration allows (gen::batchMemberProgram); a program that would pass the batch's bound by itself, or
  /// comes from the seed corpus with Python constructs (judged as given), is tested alone at once, as drawn. A program that would pass only the room the batch has left
  /// ends the batch and is returned: it leads the lane's next step, so a large program is never judged alone
  /// for want of room.
  std::optional<Candidate> testFromLane(Candidate& first, gen::Generator& generator,
                                        const std::filesystem::path& scratch);
  /// The batch size for the lane's next programs (its arm in `pulls`, of the batch context of `compile`, the
  /// configuration drawn for `first`), 1 when they may not batch: batching off (--batch 1) or training steps.
  int batchSizeFor(const Candidate& first, const SampledCompile& compile, ArmPulls& pulls);
  /// Seconds until the work stops for --max-time (its reserve before it); infinity when the session is unbounded.
  double secondsToStop() const;
  /// Prepares `member` to join the batch `first` leads: first's configuration and compile arms, its own program.
  void prepareMember(Candidate& member, const std::filesystem::path& scratch, Trial& trial, const Candidate& first,
                     const Trial& firstTrial) const;
  /// Tests the prepared members as one batch (BatchTester) and records each as testCandidate does.
  void testBatch(std::vector<Candidate>& members, std::vector<Trial>& trials, const std::filesystem::path& scratch);
  /// The steps after the test: measure, record, keep, commit, credit, publish.
  void finishTrial(const Candidate& candidate, Trial& trial);
  /// A program drawn for the "train" entry: its call schedule dropped; without a floating parameter, judged
  /// through torch.compile instead (its entry arm credited so).
  void trainingProgram(Candidate& c, Trial& t) const;
  /// Whether `g` has a floating parameter, which an optimizer can step.
  static bool trainable(const gen::Graph& g);
  /// Whether a batch under `config` judges its members' Python constructs: torch.compile without fullgraph (under
  /// fullgraph one member's graph break would refuse the whole batch; an export entry judges one trace).
  static bool batchKeepsConstructs(const oracles::CompileConfig& config);
  /// Draws the candidate's compile configuration (the scheduler's arms, appended to its pulls); training steps
  /// only when `trainingAllowed` (a batch's members: the steps run one program's optimizer).
  void drawCompile(Candidate& candidate, Trial& trial, bool trainingAllowed = true);
  /// Emits the candidate's Python into `scratch` for its drawn configuration. `batched`: the program is the member
  /// the configuration judges (gen::batchMemberProgram).
  void writeTrial(Candidate& candidate, const std::filesystem::path& scratch, Trial& trial, bool batched = false);
  /// drawCompile (no training steps when `batched`), then writeTrial.
  void prepareTrial(Candidate& candidate, const std::filesystem::path& scratch, Trial& trial, bool batched = false);
  /// Tests the program in eager, compiled and fp64 (or runs `test` instead, a batch's); false (the file removed,
  /// the cause counted or the campaign stopped) when it was not judged: cancelled, a dead worker, a rejected
  /// compile template, unreadable outputs.
  bool runTrial(const Candidate& candidate, Trial& trial, const std::function<void()>& test = {});
  /// What the result is worth: its features (none when nothing was compiled), the op features it adds,
  /// its torch time, its verdict, its config, and the GPU's figures.
  void measureTrial(const Candidate& candidate, Trial& trial);
  /// The raw finding of a finding verdict (its signature, a cache-only bug's its own), else none.
  void recordFindings(const Candidate& candidate, Trial& trial) const;
  /// A state-leak suspect is kept in state-leaks/ for the harness's keepers, never reported as a bug.
  void keepStateLeakSuspect(const Candidate& candidate, const Trial& trial);
  /// Commits the program, its findings, its novel features and its queue entry to the store first,
  /// then the in-memory totals, signatures and queue.
  void commitTrial(const Candidate& candidate, Trial& trial);
  /// Credits the scheduler's arms, the origin ledger and the LLM proposal with the trial's yield.
  void creditTrial(const Candidate& candidate, const Trial& trial);
  /// Writes the queue entry and the folders of new signatures, says so, and removes the scratch files.
  void publishTrial(const Candidate& candidate, const Trial& trial);
  /// The final fuzzer_stats and plot row of a session; why it ended.
  CampaignEnd endSession();
  /// run()'s bookkeeping loop, while `running()` holds.
  void supervise(const std::function<bool()>& running);
  void fail(CampaignEnd end, const std::string& message);
  void writeStats();
  std::string queueName(const Candidate& c) const;

  const gen::OpCatalog& catalog_;
  CampaignPolicy policy_;
  CampaignSettings settings_;
  CampaignOutput& output_;
  FindingStore& store_;
  WorkerPool& pool_;
  ProgramTester& tester_;
  BatchTester batchTester_;
  StatusView& view_;
  gen::PythonEmitter emitter_;
  LlmProposer* llm_ = nullptr;

  mutable std::mutex mutex_;  // guards everything below
  gen::Mutator mutator_;
  FeatureSet features_;
  std::vector<QueueEntry> queue_;
  std::set<std::string> testedHashes_;
  std::set<std::string> signatures_;
  StoreTotals totals_;         ///< all sessions, kept current
  int64_t nextIndex_ = 0;
  size_t nextSeedProgram_ = 0;  ///< the next of settings_.seedPrograms to judge
  int64_t started_ = 0;        ///< programs started this session
  int64_t sessionDone_ = 0, generated_ = 0, mutated_ = 0, llmProposed_ = 0, duplicates_ = 0, errors_ = 0;
  gen::Rng queueSampler_{0};  ///< draws for sampleQueueProgram
  CostAwareScheduler scheduler_;
  OriginLedger ledger_;        ///< this session's cost and yield per origin
  OriginLedger entries_{"entry"};  ///< the same per entry point of the compiled run (CompileConfig::entry)
  DynamoFigures dynamo_;       ///< this session's graph breaks and recompiles, by kind and reason
  CacheTrim cacheTrim_;        ///< the Inductor cache's last trim (its size); cacheTrimmed_ entries removed so far
  int64_t cacheTrimmed_ = 0;
  double sessionTorchSeconds_ = 0;
  double lastNewSignatureAt_ = 0;  ///< unix time
  std::chrono::steady_clock::time_point began_;
  double firstProgramSeconds_ = -1;  ///< from startedAt to the first judged program of this session
  int64_t abandoned_ = 0;            ///< programs in flight when the run stopped, dropped untested
  std::map<int, int64_t> batchPrograms_;  ///< this session's judged programs by the size of the batch that judged them
  int64_t rediscoveries_ = 0;  ///< new signatures that match a known open issue
  int64_t splitBack_ = 0, batchOnly_ = 0;  ///< members judged again alone; findings kept as batch-only
  int64_t batchPython_ = 0;                ///< batch members judged with their Python constructs
  std::atomic<bool> stopping_{false};
  std::atomic<int> activeLanes_{0};
  std::optional<CampaignEnd> end_;
  std::string endMessage_;
  std::vector<std::function<std::vector<std::pair<std::string, std::string>>()>> extraStats_;
  std::atomic<bool> supervisorStop_{false};
  std::thread supervisor_;
};

/// "agree", "crash-mismatch" ... as stats keys: "verdict_crash_mismatch".
std::string statsKey(const std::string& verdict);

}  // namespace tcfuzz
