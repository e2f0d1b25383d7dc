#pragma once
// Triage (docs/architecture.md, "Triage"): per exact signature of a campaign, its smallest witness goes through
// the pipeline of TriageSteps (replay, minimize, repro, ablate, bisect, title, verify); the outcome
// is one row of findings.sqlite's triage table. Then every finding is grouped into bugs
// (oracles/reporter/Deduper) and each bug is written as crashes/<id>/ with the campaign's index.
// Idempotent and resumable: a signature with a triage row is not triaged again, and reports are
// rewritten from the store alone.
#include <atomic>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "fuzzer/campaign/output/FindingStore.h"
#include "fuzzer/triage/CaseTester.h"
#include "fuzzer/triage/TriageSteps.h"
#include "fuzzer/triage/TriagedCase.h"
#include "fuzzer/worker/ProgramTester.h"
#include "generators/OpCatalog.h"
#include "oracles/reporter/BugReport.h"
#include "oracles/reporter/Minimizer.h"

namespace tcfuzz {

/// The work of one `tcfuzz triage` pass.
struct TriageSummary {
  int triaged = 0, unreproducible = 0, failed = 0, pending = 0;  ///< pending: left when stopped
  int batchOnly = 0;  ///< triaged as batch-only (their members named, no bug report)
  int bugs = 0, rawFindings = 0;

  /// "triaged N signature(s) (U unreproducible, F failed[, B batch-only][, P left for later]); M unique bug(s) from
  /// K raw finding(s)\nindex: ROOT/index.md\n". A batch-only signature counts as triaged.
  std::string describe(const std::filesystem::path& root) const;
};

class Triage {
 public:
  /// `tester` may be null for report-only use (writeReports); `log` receives progress lines.
  Triage(const gen::OpCatalog& catalog, TriageSettings settings, std::filesystem::path campaignRoot,
         FindingStore& store, ProgramTester* tester, std::function<void(const std::string&)> log);

  /// Exact signatures with findings but no triage row, oldest first.
  std::vector<std::string> pending() const;
  /// Triages one exact signature and stores its row. JobCancelled propagates (nothing is stored).
  TriageRecord triageSignature(const std::string& signatureId);
  /// Groups every finding into bugs, (re)writes crashes/<id>/ for the triaged ones, removes the
  /// first-witness folders that triage merged into another bug, and writes index.md/index.html.
  std::vector<oracles::BugReport> writeReports();
  /// writeReports(), summarised: bugs, their raw findings, and the signatures still untriaged.
  TriageSummary rewriteReports();
  /// pending() -> triageSignature() each, until done, *stop, or `mayStart` says no before a signature; then
  /// writeReports().
  TriageSummary run(const std::atomic<bool>* stop = nullptr, const std::function<bool()>& mayStart = {});
  /// The child wall time of every job this triage ran, and the signatures it finished (any status).
  double workerSeconds() const { return cases_.workerSeconds(); }
  int signaturesFinished() const { return finished_.load(); }

  /// Runs the triage steps over one case. `opHints`: op multisets of bugs already minimized.
  TriagedCase triageCase(const oracles::MinimizeCase& start, const TestSettings& settings,
                         const std::vector<std::vector<std::string>>& opHints = {});

 private:
  /// With --check-upstream, fills bug.possibleDuplicates from the tracker's search (its first query);
  /// once the API refuses, sets `refused` and asks no more.
  void findPossibleDuplicates(oracles::BugReport& bug, bool& refused) const;
  /// python -m torch.utils.collect_env as printed, cached in the store per torch build ("" when it cannot run).
  std::string collectEnv();
  /// A batch-only finding's batch (`heldIn`: {"programs", "members", "member"}) with whole members dropped while the
  /// finding's member still shows it (its verdict; a crash: its signature) in a fresh cold batch, then each member
  /// needed shrunk inside the batch: {"reproduced", "tries", "shrink_tries", "nodes": {"before", "after"}, "programs"
  /// (the members needed)}; the batch of those members is written to crashes/<signatureId>/batch_needed.py.
  nlohmann::json batchMembersNeeded(const nlohmann::json& heldIn, TestSettings settings, const std::string& signatureId,
                                    const FindingRecord& finding);

  const gen::OpCatalog& catalog_;
  TriageSettings settings_;
  std::filesystem::path root_;
  FindingStore& store_;
  std::function<void(const std::string&)> log_;
  CaseTester cases_;
  std::atomic<int> finished_{0};
};

/// How much of a campaign's worker time its background triage may take: triage starts a signature only
/// when what its jobs have cost (child wall time) plus what one more signature is expected to cost stays
/// within `share` of the campaign's worker time so far (`campaignWorkerSeconds`: run time x workers). The
/// expected cost is the mean of the signatures this session finished, `firstSignatureSeconds` before any.
/// The rest waits for the budget, or for `tcfuzz triage OUT`.
struct TriageBudget {
  double share = 1.0;  ///< 1: no bound
  std::function<double()> campaignWorkerSeconds;
  /// One signature's triage on 2.15.0 (replay, minimization, ablation with its entry-point rows, repros,
  /// tlparse): 117 s of worker time for a 15-node program in a 2-worker CPU campaign.
  double firstSignatureSeconds = 100.0;
};
/// The budget's rule: whether triage, having spent `spent` worker seconds on `finished` signatures, may start
/// another when the campaign has had `campaignWorkerSeconds`.
bool triageMayStart(const TriageBudget& budget, double spent, int finished, double campaignWorkerSeconds);

/// A running campaign's triage (`tcfuzz fuzz` without --no-triage), on one thread of its own: every
/// second, while some exact signature has no triage row and the budget allows, it runs Triage::run over the
/// campaign directory.
/// Reads: findings.sqlite through its own FindingStore connection (SQLite's WAL lets the campaign's
/// lanes and triage both write). Writes: triage rows, crashes/<id>/ reports and the index (what
/// Triage::run writes). Its jobs go through the campaign's ProgramTester and pool, in fresh processes;
/// the lanes keep their own jobs queued, so the workers never wait for triage. Progress lines go to
/// `event` prefixed "triage: "; a pass that fails is reported there and retried on the next round.
class BackgroundTriage {
 public:
  /// Opens its store connection to `storePath` (reports masked with `secrets`); starts nothing.
  /// `settings.test` is the campaign's: triage replays with persistent workers and the finding
  /// confirmation turned off.
  BackgroundTriage(const gen::OpCatalog& catalog, TriageSettings settings, const std::filesystem::path& campaignRoot,
                   const std::filesystem::path& storePath, const SecretRedactor& secrets, ProgramTester& tester,
                   TriageBudget budget, std::function<void(const std::string&)> event);
  /// stop() and join(), if the thread still runs.
  ~BackgroundTriage();
  BackgroundTriage(const BackgroundTriage&) = delete;
  BackgroundTriage& operator=(const BackgroundTriage&) = delete;

  /// Starts the thread (once).
  void start();
  /// Asks the thread to end: no new signature starts, and the pass in flight ends after its current
  /// job; cancel the pool's jobs to end that job at once (it is redone by the next triage). Thread-safe.
  void stop();
  /// Waits for the thread to end (after stop()).
  void join();
  /// Exact signatures still without a triage row (after join(): what `tcfuzz triage OUT` finishes).
  size_t pendingCount() const;
  /// fuzzer_stats lines: triage_share (its worker time over the campaign's), triage_share_cap, triage_worker_s,
  /// triage_pending.
  std::vector<std::pair<std::string, std::string>> statsLines() const;

 private:
  void loop();
  /// Whether the budget lets triage start another signature now.
  bool withinBudget() const;

  FindingStore store_;
  Triage triage_;
  TriageBudget budget_;
  std::atomic<size_t> pending_{0};
  bool waitingForBudget_ = false;  ///< the loop's thread only: said once per wait
  std::function<void(const std::string&)> event_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tcfuzz
