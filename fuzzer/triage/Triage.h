#pragma once
// Triage (DESIGN.md, "Triage"): per exact signature of a campaign, replay its smallest witness,
// minimize it (oracles/Minimizer), ablate it across backends and compile options, ask Inductor's
// compiler bisector, and verify the rendered repro.py in a clean sandboxed process; the outcome is
// one row of findings.sqlite's triage table. Then every finding is grouped into bugs
// (oracles/Deduper) and each bug is written as crashes/<id>/ with the campaign's index.
// Idempotent and resumable: a signature with a triage row is not triaged again, and reports are
// rewritten from the store alone.
#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzzer/campaign/FindingStore.h"
#include "fuzzer/worker/ProgramTester.h"
#include "generators/OpCatalog.h"
#include "generators/PythonEmitter.h"
#include "oracles/BugReport.h"
#include "oracles/Minimizer.h"

namespace tcfuzz {

/// How triage runs.
struct TriageSettings {
  TestSettings test;  ///< limits, device, plugins, threads and seed defaults (each finding brings its own config)
  oracles::MinimizerPolicy minimizer;
  bool minimize = true;
  bool ablate = true;
  bool bisect = true;   ///< when the bug is Inductor's and torch has compiler_bisector
  bool verify = true;   ///< run repro.py in a clean process inside the sandbox
  std::string torchVersion, torchGit;
};

/// One case triaged on its own: what `tcfuzz minimize` prints and a triage row stores.
struct TriagedCase {
  std::string status = "done";         ///< "done", or "unreproducible" (the start no longer shows a finding)
  oracles::Signature baseline;         ///< the replayed start's signature
  oracles::Signature signature;        ///< of the minimized case (numeric: its op multiset)
  oracles::ReproCase repro;            ///< the minimized case, ready to render
  oracles::MinimizeResult minimization;
  std::vector<oracles::AblationRow> ablation;
  oracles::BisectOutcome bisect;
  std::string component, severity, title;
  std::optional<bool> reproVerified;
  std::string reproOutput;
  int originalNodes = 0;
};

/// The work of one `tcfuzz triage` pass.
struct TriageSummary {
  int triaged = 0, unreproducible = 0, failed = 0, pending = 0;  ///< pending: left when stopped
  int bugs = 0, rawFindings = 0;

  /// "triaged N signature(s) (...); M unique bug(s) from K raw finding(s)\nindex: ROOT/index.md\n".
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
  /// pending() -> triageSignature() each, until done or *stop; then writeReports().
  TriageSummary run(const std::atomic<bool>* stop = nullptr);

  /// Replays, minimizes, ablates, bisects and verifies one case. `plugins` go into the repro.
  TriagedCase triageCase(const oracles::MinimizeCase& start, const TestSettings& settings,
                         const std::vector<std::vector<std::string>>& opHints = {});

 private:
  ProgramTestResult testCase(const oracles::MinimizeCase& c, const TestSettings& base, const std::string& tag);
  std::vector<ProgramTestResult> testCases(const std::vector<oracles::MinimizeCase>& cases, const TestSettings& base,
                                           const std::string& tag);
  std::string collectEnv();

  const gen::OpCatalog& catalog_;
  TriageSettings settings_;
  std::filesystem::path root_;
  FindingStore& store_;
  ProgramTester* tester_;
  std::function<void(const std::string&)> log_;
  gen::PythonEmitter emitter_;
  std::filesystem::path scratch_;
  std::atomic<uint64_t> nextFile_{0};
};

/// A oracles::CompileConfig from its toJson form (missing keys keep their defaults).
oracles::CompileConfig compileConfigFromJson(const nlohmann::json& j);
/// A finding's recorded config (SampledCompile::nonDefault: backend, mode, dynamic, fullgraph,
/// inductor_config, backward, templates) as a start case's compile JSON and backward flag.
std::pair<nlohmann::json, bool> findingCompile(const nlohmann::json& findingConfig);
/// The BugReport of a triaged case (no group facts: hits and ids are filled by the caller).
oracles::BugReport bugReportOf(const TriagedCase& t);
/// Serialization of a triaged case for the triage row, and back.
nlohmann::json toJson(const TriagedCase& t);
TriagedCase triagedCaseFromJson(const nlohmann::json& j);

}  // namespace tcfuzz
