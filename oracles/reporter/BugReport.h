#pragma once
// One triaged bug: everything the report folder crashes/<signature id>/ and the index are written
// from. Filled by the triage (fuzzer/triage), written by oracles/reporter/ReportWriter.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "oracles/judge/CompileConfig.h"
#include "oracles/judge/Signature.h"
#include "oracles/infra/TorchInfo.h"

namespace tcfuzz::oracles {

/// One row of the ablation table: the minimized program under one variant of its configuration.
struct AblationRow {
  std::string variant;        ///< "backend=eager", "backend=aot_eager_decomp_partition", "without cpp_wrapper", ...
  nlohmann::json config;      ///< the variant's compile options as a finding records them (findingConfig)
  std::string verdict;        ///< "agree", "crash-mismatch", "numeric-divergence", ... or "error"
  bool reproduces = false;    ///< the bug's signature (numeric: the divergence) shows up under this variant
  std::string summary;        ///< one line of evidence: "compiled raised RuntimeError: ...", "rmse ratio 41.2"
};

/// What torch._inductor.compiler_bisector said (when the installed torch has it).
struct BisectOutcome {
  bool ran = false;           ///< false: not applicable (not an Inductor bug) or not available
  std::string backend;        ///< first backend that fails: "eager", "aot_eager", "aot_eager_decomp_partition", "inductor"
  std::string subsystem;      ///< e.g. "lowerings", "post_grad_passes"; "" when not narrowed down
  int64_t bisectNumber = -1;  ///< the culprit application within the subsystem, -1 when none
  std::string debugInfo;      ///< the bisector's description of that application
  std::string note;           ///< why it did not run, or what went wrong
};

/// torch's structured trace log (TORCH_TRACE) of the failing compile, rendered by tlparse, as PyTorch's
/// pt2 bug template asks for.
struct TraceOutcome {
  bool rendered = false;      ///< `dir` holds tlparse's output (index.html first)
  std::string dir;            ///< where that output lies: relative to the campaign in a triage row, absolute in a BugReport
  std::string script;         ///< the script that was traced: "short_repro.py" or "repro.py"
  std::string note;           ///< why nothing was rendered, or what went wrong
};

/// The minimized case as it is reproduced: program, configuration and the observed runs.
struct ReproCase {
  std::string programPy;      ///< the emitted program (defines Model and make_inputs(seed))
  nlohmann::json programIr;   ///< its IR (Graph::toJson)
  int nodes = 0;              ///< node count of the IR
  CompileConfig compile;
  bool backward = false;
  uint64_t seed = 0;
  int threads = 0;            ///< torch intra-op threads (0: torch's default)
  std::string device = "cpu";
  std::vector<std::string> plugins;  ///< trusted plugin files (a test's planted backend): inlined into repro.py
  std::string verdict;        ///< the expected verdict: "crash-mismatch", "status-mismatch", "numeric-divergence"
  std::vector<int> divergingLeaves;  ///< numeric: the flattened output leaves that diverged (outputs, then grads)
  bool exactBackend = false;  ///< the judge held compiled to eager's values bit for bit (oracles::TripleRun);
                              ///< the repro scripts check what the judge checked, never decide it again
  nlohmann::json observed;    ///< toJson(ProgramTestResult) of the minimized program's test
};

/// An issue in PyTorch's tracker.
struct UpstreamIssue {
  int64_t number = 0;
  std::string url, title;
  std::string state;  ///< "open" or "closed" ("" when unknown)
};

/// A deduplicated, minimized bug.
struct BugReport {
  std::string id;             ///< the folder name: the representative signature's id
  Signature signature;        ///< of the minimized program (numeric: the minimized op multiset)
  std::string title;          ///< one line, GitHub-issue style
  std::string severity;       ///< "crash", "hang", "wrong-result", "accepts-invalid" (status-mismatch), "low"
                              ///< (signed-zero, denormal-flush)
  std::string component;      ///< what the ablation blames: "dynamo", "aot_autograd", "inductor", "backend X", ...
  int64_t hits = 0;           ///< raw findings in the group
  double firstSeen = 0, lastSeen = 0;  ///< unix time
  std::vector<std::string> rawSignatureIds;  ///< exact signatures merged into this bug
  std::vector<int64_t> findingIds;           ///< rows of findings.sqlite
  std::string mergedBy;       ///< "exact", or the near-duplicate rules that merged groups ("frames", "message", "frames+message")
  nlohmann::json originalConfig;             ///< the first witness's non-default compile options
  int originalNodes = 0;
  std::string originalProgramPy;             ///< the witness that was minimized, before minimization
  std::string provenance;                    ///< where the witness came from (gen::originSummary): grammar, mutation, LLM strategy and target
  int coreNodes = 0, coreNodesKept = 0;      ///< LLM core nodes in the witness, and in the minimized program
  ReproCase repro;                           ///< the minimized case
  bool minimized = false;     ///< false: minimization failed or was skipped; repro holds the original
  int minimizeCandidates = 0; ///< candidates the minimizer tested
  std::vector<AblationRow> ablation;
  BisectOutcome bisect;
  std::optional<bool> reproVerified;  ///< repro.py run in the sandbox printed the expected verdict
  std::string reproOutput;    ///< the tail of what repro.py printed when verified
  std::optional<bool> shortReproVerified;  ///< short_repro.py run in the sandbox reproduced the bug
  TraceOutcome trace;         ///< the rendered structured trace (dir absolute), copied into the folder's tlparse/
  std::optional<UpstreamIssue> knownUpstream;  ///< the known upstream issue it matches (KnownUpstream)
  std::vector<UpstreamIssue> knownFamily;       ///< open issues of the pass its bisection names (matchKnownFamily)
  std::vector<UpstreamIssue> possibleDuplicates;  ///< what a search of the tracker found (--check-upstream)
  TorchInfo torch;            ///< the worker torch the case was triaged on (its zygote's hello)
  std::vector<std::string> seenOnTorch;  ///< the torch versions its raw findings were made on, in release order
  std::string collectEnv;     ///< python -m torch.utils.collect_env, as printed
  std::string campaign;       ///< the campaign directory it came from
};

}  // namespace tcfuzz::oracles
