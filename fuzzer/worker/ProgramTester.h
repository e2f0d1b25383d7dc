#pragma once
// Runs one program in eager (twice), compiled and fp64 through the pool, and judges it.
#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzzer/worker/WorkerPool.h"
#include "oracles/judge/Comparator.h"
#include "oracles/judge/Conditioning.h"
#include "oracles/judge/Verdict.h"

namespace tcfuzz {

/// The folder of a traced script job's structured trace log, inside its job directory (script_job.py's TRACE_DIR).
inline constexpr const char* kTraceDirName = "torch_trace";

/// Everything about how a program is tested, apart from the program itself.
struct TestSettings {
  oracles::CompileConfig compile;
  Limits limits;
  uint64_t seed = 0;
  std::string device = "cpu";
  /// Every job runs on the zygote pinned to this GPU (Job::gpu): a finding replayed on the GPU where it was
  /// made. "": any zygote.
  std::string gpu;
  int threads = 0;
  std::vector<std::filesystem::path> plugins;
  bool backward = false;  ///< also run backward in every mode; gradients become extra output leaves
  bool persistent = false;        ///< program jobs run in the zygotes' warm persistent children
  /// Eager and fp64 first; the compiled job only once eager ran: an invalid program (one that does not
  /// load, fails or exceeds the limits in eager) never reaches the compiler. Off: all three at once.
  bool cheapChecksFirst = false;
  /// With cheapChecksFirst: the fp64 job runs only once eager and compiled are in, and only when it can
  /// change the verdict. It is not run when eager failed (the program is invalid) or when compiled equals
  /// eager bit for bit with every value finite (Comparator::settledWithoutFp64); runs.fp64 then records that
  /// no job ran, in phase oracles::kNotNeededPhase. A wrong result's outputs differ, so it always has its fp64.
  bool fp64OnDemand = false;
  /// A finding is tested again in fresh processes with a cold Inductor cache before it counts (see
  /// ProgramTestResult::confirmation).
  bool confirmFindings = false;
  /// Every job of a test runs in a fresh process with a private, cold Inductor cache (removed after), as a
  /// maintainer's first run would: triage's minimization when a case shows its bug only through what earlier
  /// candidates left in the campaign's warm cache.
  bool coldCache = false;
  /// A wrong result (oracles::isWrongResult) is checked for ill-conditioning before it counts: eager runs
  /// this many times more on inputs moved by up to conditioningUlps ulps (oracles/judge/Conditioning.h). 0: off.
  int conditioningRuns = 3;
  int conditioningUlps = 4;
  /// A program that calls higher-order ops (the eager run desugared some) and whose compiled run is no finding
  /// is tested once more under the backend kNoCompileBackend: eager's own HOPs against their Python meaning.
  /// torch.compile's entry only (a plain forward call); export and training programs are not.
  bool judgeEagerHops = true;
};

/// How a finding held up when tested again (ProgramTester::test with confirmFindings).
enum class Confirmation {
  NotChecked,   ///< not a finding, or confirmation off
  Confirmed,    ///< reproduced in fresh processes with a cold cache: the result is that run
  CacheOnly,    ///< reproduced fresh only with the shared warm cache, not with a cold one: a cache bug
  NotReproduced ///< a fresh process agrees: StateLeakSuspect (persistent) or Nondeterministic
};
std::string_view toString(Confirmation confirmation);

/// The three runs, the verdict, and what the oracle cost.
struct ProgramTestResult {
  std::filesystem::path program;
  oracles::TripleRun runs;
  oracles::VerdictReport verdict;
  double wallSeconds = 0;     ///< submit to verdict
  /// The child wall time of every job this test ran for the program: its three modes and, when they ran,
  /// the confirmation's fresh runs, the conditioning runs and the run of eager's own higher-order ops.
  /// What the program cost the workers (the campaign's torch share and the bandit's charge).
  double torchSeconds = 0;
  double compareSeconds = 0;  ///< loading outputs and comparing them in C++
  bool compileSkipped = false;  ///< cheap checks first: eager failed, so no compiled job ran
  bool fp64Skipped = false;     ///< fp64 on demand: no fp64 job ran (TestSettings::fp64OnDemand)
  /// Why the compiled run's rejection is the documented outcome (the verdict is then agree); "" when it is not.
  std::string documentedRefusal;
  Confirmation confirmation = Confirmation::NotChecked;
  double confirmSeconds = 0;    ///< the part of wallSeconds spent confirming
  /// The ill-conditioning check, when a wrong result was found: its figures, and the part of
  /// wallSeconds it took (nullopt: not run).
  std::optional<oracles::ConditioningVerdict> conditioning;
  double conditioningSeconds = 0;
  /// Set when the verdict is about another configuration than TestSettings::compile: the no-compile run of
  /// eager's own higher-order ops (TestSettings::judgeEagerHops), which found what the compiled run did not.
  std::optional<oracles::CompileConfig> judgedUnder;
};

/// Tests programs through a shared pool. Thread-safe: test() may run concurrently.
class ProgramTester {
 public:
  /// jobsRoot must be writable inside the worker sandbox (under WorkerSpec::workDir).
  ProgramTester(WorkerPool& pool, oracles::Comparator comparator, std::filesystem::path jobsRoot);

  /// Runs the three jobs (all at once, or cheap checks first) and judges them; with
  /// settings.confirmFindings, a finding is tested again fresh with a cold cache (confirm). Throws
  /// ConfigurationError for a bad compile configuration and OutputLoadError for unreadable outputs.
  ProgramTestResult test(const std::filesystem::path& program, const TestSettings& settings);
  /// One judged run of the three jobs and nothing after it: no confirmation, no conditioning, no eager-HOP run
  /// (a batch's screen, BatchTester). With settings.coldCache, every job fresh with a private cold cache.
  ProgramTestResult screen(const std::filesystem::path& program, const TestSettings& settings);
  const oracles::Comparator& comparator() const { return comparator_; }
  /// Runs eager on perturbed inputs (TestSettings::conditioningRuns) and turns the wrong result in
  /// `result` into Verdict::IllConditioned when eager's own spread covers compiled's deviation. `part`, when
  /// given, takes each perturbed run to the leaves `result` judges (a batch member's, BatchTester).
  void checkConditioning(const std::filesystem::path& program, const TestSettings& settings, ProgramTestResult& result,
                         const std::function<oracles::RunResult(const oracles::RunResult&)>& part = {});

  /// A single run of `program` in `mode`, once (checking generated programs); its outputs lie in jobDir.
  struct PendingRun {
    std::future<oracles::RunResult> result;
    std::filesystem::path jobDir;
  };
  PendingRun submitOne(const std::filesystem::path& program, RunMode mode, const TestSettings& settings);

  /// Runs a plain Python script (a repro.py) in a fresh interpreter inside a worker child, in its job
  /// directory, under settings.limits, with a private cold Inductor cache: what a script shows is what a
  /// maintainer's first run shows, never what the campaign's warm cache remembers. The result's exitCode, stdoutTail and stderrTail say what it did
  /// (status Signal when the script was killed by a signal). `companions` are copied beside the script.
  /// With `trace`, torch's structured trace log is written to <jobDir>/torch_trace (kTraceDirName).
  oracles::RunResult runScript(const std::filesystem::path& script, const TestSettings& settings,
                               const std::vector<std::filesystem::path>& companions = {}, bool trace = false);

  /// Runs torch._inductor.compiler_bisector on `program` under settings.compile with backend Inductor.
  /// spec: {"check": "crash" | "numeric", "leaves": [...]}; the job also carries the comparator's
  /// tolerance table (ComparatorOptions::toleranceTable). The result's `bisect`
  /// holds {"available", "found", "backend", "subsystem", "bisect_number", "debug_info"}.
  oracles::RunResult bisect(const std::filesystem::path& program, const TestSettings& settings,
                            const nlohmann::json& spec);

  /// Lifts an untrusted Python program into an IR proposal: the worker checks its AST against an
  /// allowlist (a refused program never runs), runs it once in eager under settings' seed, limits and
  /// threads, and maps each traced torch call through `table` (gen::liftTable). The result's `lift`
  /// holds {"proposal", "calls", "mapped", "unmapped"} or {"rejected": reason}; a forward that raises
  /// gives the usual exception result.
  oracles::RunResult lift(const std::filesystem::path& program, const TestSettings& settings,
                          const nlohmann::json& table);

 private:
  Job makeJob(const std::filesystem::path& program, RunMode mode, const TestSettings& settings);
  /// A private Inductor cache folder under the jobs' root: the job creates it, and it is removed when the
  /// ColdCache goes (a temporary lives to the end of the full expression that uses its path).
  struct ColdCache {
    std::filesystem::path path;
    ~ColdCache();
  };
  ColdCache newColdCache();
  /// Why r's fp64 run cannot change its verdict (TestSettings::fp64OnDemand); nullopt: it can, run it.
  std::optional<std::string> fp64Unneeded(const ProgramTestResult& r) const;
  /// One judged run of the three jobs; `cacheDir` non-empty: every job fresh with that private cache. With
  /// `references` (this program's runs under the same settings but another compile configuration), eager and
  /// fp64 are taken from there, since they do not depend on it, and only the compiled job runs.
  ProgramTestResult testOnce(const std::filesystem::path& program, const TestSettings& settings,
                             const std::filesystem::path& cacheDir, const oracles::TripleRun* references = nullptr);
  /// testOnce, then confirmation and the ill-conditioning check of what it found.
  ProgramTestResult testChecked(const std::filesystem::path& program, const TestSettings& settings,
                                const oracles::TripleRun* references);
  /// Re-tests the finding in `result` in fresh processes, first with a cold cache, then with the shared
  /// one, and rewrites `result` with what held up (ProgramTestResult::confirmation).
  void confirm(const std::filesystem::path& program, const TestSettings& settings, ProgramTestResult& result);
  /// Turns a program job into a single run of another kind ("script", "bisect", "lift"): its id, directory, repeat.
  void asKind(Job& job, const std::string& kind) const;

  WorkerPool& pool_;
  oracles::Comparator comparator_;
  std::filesystem::path jobsRoot_;
  std::atomic<uint64_t> nextJob_{0};
};

}  // namespace tcfuzz

#include <nlohmann/json_fwd.hpp>

namespace tcfuzz {
/// The whole test as JSON: verdict, reason, per-mode status and times, per-leaf figures.
nlohmann::json toJson(const ProgramTestResult& result);
}  // namespace tcfuzz
