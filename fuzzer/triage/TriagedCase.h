#pragma once
// The outcome of triaging one case, and its serialization as the data of a findings.sqlite triage
// row (the on-disk form: keys as below, stable across versions).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "oracles/reporter/BugReport.h"
#include "oracles/reporter/Minimizer.h"

namespace tcfuzz {

/// One case triaged on its own: what `tcfuzz minimize` prints and a triage row stores.
struct TriagedCase {
  std::string status = "done";         ///< "done", "duplicate" (reduced to a known bug's ops), or "unreproducible"
  oracles::Signature baseline;         ///< the replayed start's signature
  oracles::Signature signature;        ///< of the minimized case (numeric: its op multiset)
  oracles::ReproCase repro;            ///< the minimized case, ready to render
  oracles::MinimizeResult minimization;
  std::vector<oracles::AblationRow> ablation;
  oracles::BisectOutcome bisect;
  std::string component, severity, title;
  std::optional<bool> reproVerified;
  std::string reproOutput;
  std::optional<bool> shortReproVerified;  ///< short_repro.py reproduced the bug in a clean process
  oracles::TraceOutcome trace;             ///< the failing compile's structured trace (dir relative to the campaign)
  int originalNodes = 0;
};

/// The BugReport of a triaged case (no group facts: hits and ids are filled by the caller); the
/// trace folder, relative in the row, is resolved against `campaignRoot`.
oracles::BugReport bugReportOf(const TriagedCase& t, const std::filesystem::path& campaignRoot);
/// Serialization of a triaged case for the triage row, and back (missing keys keep their defaults).
nlohmann::json toJson(const TriagedCase& t);
TriagedCase triagedCaseFromJson(const nlohmann::json& j);

}  // namespace tcfuzz
