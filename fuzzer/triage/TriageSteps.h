#pragma once
// The triage pipeline as named steps run in order over one case (docs/architecture.md, "Triage"):
//   replay    test the start case again; a start that no longer shows a finding is "unreproducible"
//   minimize  delta debugging (oracles/reporter/Minimizer); reduced to a known bug's ops, the case is a "duplicate"
//   repro     the minimized case's signature and its ReproCase (program, config, observed runs)
//   ablate    rerun under each backend and without each option (oracles/reporter/Ablation): the component at fault
//   bisect    torch._inductor.compiler_bisector narrows an Inductor bug to a subsystem
//   title     severity and a GitHub-issue title
//   verify    repro.py run as plain python in a fresh sandboxed process
//   trace     short_repro.py (else repro.py) once more with TORCH_TRACE, rendered by tlparse into traces/
// Each step says when it applies; ablate and the steps after it apply only to a case that is "done".
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fuzzer/triage/CaseTester.h"
#include "fuzzer/triage/TriagedCase.h"
#include "fuzzer/worker/ProgramTester.h"
#include "generators/OpCatalog.h"
#include "fuzzer/triage/UpstreamSearch.h"
#include "oracles/reporter/KnownUpstream.h"
#include "oracles/reporter/Minimizer.h"
#include "oracles/infra/SecretRedactor.h"

namespace tcfuzz {

/// How triage runs.
struct TriageSettings {
  TestSettings test;  ///< limits, device, plugins, threads and seed defaults (each finding brings its own config)
  oracles::MinimizerPolicy minimizer;
  bool minimize = true;
  bool ablate = true;
  bool bisect = true;   ///< when the bug is Inductor's and torch has compiler_bisector
  bool verify = true;   ///< run repro.py in a clean process inside the sandbox
  /// Run the failing compile once more with TORCH_TRACE and render its log with `tlparse` (empty: the
  /// step notes that tlparse is missing); `structuredTrace`: the workers' torch writes such logs.
  bool trace = true;
  std::filesystem::path tlparse;
  bool structuredTrace = true;
  oracles::TorchInfo torch;  ///< the workers' torch (WorkerPool::hello); reports name it
  std::vector<oracles::KnownIssue> knownIssues;  ///< known upstream issues a report is matched against
  std::optional<UpstreamSearch> upstream;  ///< --check-upstream: the tracker search for possible duplicates
  SecretRedactor secrets;    ///< masked in every report folder and index written
};

/// One case on its way through the pipeline: what it started as, and what the steps found so far.
struct CaseInTriage {
  const oracles::MinimizeCase& start;
  const TestSettings& settings;                          ///< the case's seed, threads, plugins and limits
  const std::vector<std::vector<std::string>>& opHints;  ///< op multisets of numeric bugs already minimized
  oracles::MinimizeCase best;   ///< the smallest case that still shows the bug (the start until minimized)
  ProgramTestResult bestRun;    ///< the test of `best`
  ProgramTestResult startRun;   ///< the replay of `start`
  bool coldCandidates = false;  ///< minimization tests each candidate with a cold cache (TestSettings::coldCache)
  /// The structured trace log of short_repro.py's verifying run, when it ran traced and reproduced: the trace
  /// step renders it instead of running the script once more.
  std::filesystem::path shortReproTrace;
  TriagedCase result;
};

/// What the steps run with besides the case.
struct TriageTools {
  const gen::OpCatalog& catalog;
  const TriageSettings& settings;
  CaseTester& cases;
  const std::function<void(const std::string&)>& log;
  const std::filesystem::path& campaignRoot;  ///< traces/ lives here
};

/// One named step: `run` extends the case when `applies` holds for it as the steps before left it.
struct TriageStep {
  std::string_view name;
  bool (*applies)(const CaseInTriage& c, const TriageSettings& settings);
  void (*run)(CaseInTriage& c, TriageTools& tools);
};

/// What torch._inductor.compiler_bisector said, from its bisect job's result; fields it left None are "".
oracles::BisectOutcome bisectOutcomeOf(const oracles::RunResult& r);

/// The pipeline, in the order it runs: replay, minimize, repro, ablate, bisect, title, verify, trace.
std::span<const TriageStep> triageSteps();

/// Runs the steps of triageSteps() that apply, in order; the outcome is c.result.
void runTriageSteps(CaseInTriage& c, TriageTools& tools);

}  // namespace tcfuzz
