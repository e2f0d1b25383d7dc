#pragma once
// A night compared with the nights before it (`tcfuzz merge`): which of tonight's bugs are new, which
// were seen before (and since which night), which known bugs no longer reproduce and which now show
// another signature. Written as NIGHT/summary.md for people and NIGHT/night.json for the next night,
// which carries the cumulative set of known signatures with the night each was first seen.
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzzer/triage/NightMerge.h"
#include "fuzzer/triage/ReleaseMatrix.h"
#include "oracles/reporter/BugReport.h"
#include "oracles/infra/SecretRedactor.h"

namespace tcfuzz {

/// The night `night` compares with: `given` when not empty (it must hold a night.json), else the newest
/// sibling directory of `night` that has a night.json and sorts before it by name; none when there is none.
/// std::invalid_argument for a `given` without night.json.
std::optional<std::filesystem::path> previousNight(const std::filesystem::path& night, const std::string& given);

/// Writes a regress folder (finding.json: verdict, signature, config, seed, threads, torch; program.json)
/// under `dir` for each signature of the previous night's store that was not seen tonight, from its first
/// witness; returns the folders written (named by signature id). `tonight`: tonight's signature and bug
/// ids (a previous signature whose bug, per the previous night.json, is among them was seen too). A
/// previous night without a store gives none.
std::vector<std::filesystem::path> writePreviousBugs(const std::filesystem::path& previousNight,
                                                     const std::set<std::string>& tonight,
                                                     const std::filesystem::path& dir);

/// One known bug re-run tonight by regress (its newest torch that started).
struct KnownBugCheck {
  std::string name;               ///< the regress folder's name (a previous night's: the signature id)
  std::string source;             ///< "regressions" or "previous night"
  std::string status;             ///< toString(RegressStatus)
  std::string expectedSignature, observedSignature;
  std::string torch;              ///< the version it ran under ("" when no interpreter started)
  std::string reason;
};

/// The row of each finding of `matrix` under its newest started column (the last after sortByRelease);
/// a finding whose folder name is in `previousNightNames` is from the previous night.
std::vector<KnownBugCheck> knownBugChecks(const ReleaseMatrix& matrix, const std::set<std::string>& previousNightNames);

/// Everything the summary is written from.
struct NightFacts {
  std::filesystem::path night;                  ///< the night's directory
  std::string name;                             ///< its folder's name (a date: "2026-11-26")
  const NightMerge* merge = nullptr;
  std::vector<oracles::BugReport> bugs;         ///< the reports Triage::writeReports wrote
  std::optional<std::filesystem::path> previous;
  std::optional<std::vector<KnownBugCheck>> regress;  ///< none: --no-regress
  std::string regressNote;                      ///< why regress ran nothing, when it did not
};

/// Writes NIGHT/night.json and NIGHT/summary.md (masked with `secrets`); returns summary.md's text.
/// night.json: {"night", "created_at", "torch", "previous", "first_night", "shards", "signatures": [{"id",
/// "verdict", "key", "hits", "first_seen", "last_seen", "shards", "bug", "status": "new"|"seen-before",
/// "first_night"}], "fixed", "changed", "regress", "known": {"<id>": {"first_night", "last_night", "key"}}}
/// (known: the previous night's set plus tonight's raw signatures and bug ids; a raw signature whose
/// bug is known counts as seen before).
std::string writeNightSummary(const NightFacts& facts, const SecretRedactor& secrets);

}  // namespace tcfuzz
