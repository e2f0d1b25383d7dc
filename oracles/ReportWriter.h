#pragma once
// Writes a triaged bug as a report folder crashes/<id>/ (repro.py, report.md, program.json,
// meta.json); oracles/IndexWriter lists the folders.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "oracles/BugReport.h"
#include "oracles/SecretRedactor.h"

namespace tcfuzz::oracles {

/// report.md: a ready GitHub issue in the shape of PyTorch's pt2 bug template ("🐛 Describe the
/// bug" with the minimized repro and the observed output, the ablation table, "Versions" with the
/// collect_env summary), plus the tcfuzz facts (hits, first and last seen, sizes, signature).
std::string renderReportMarkdown(const BugReport& bug, const std::string& reproPy);
/// meta.json: id, title, severity, component, signature, hits, first/last seen (ISO 8601 and unix),
/// raw signature ids, finding ids, configs (original and minimized), original and minimized sizes,
/// verdict, ablation, bisect, repro verification, torch version.
nlohmann::json reportMeta(const BugReport& bug);

/// Writes dir/{repro.py, report.md, program.json, meta.json} (and original.py: the witness before
/// minimization), each atomically and masked with `secrets`; meta.json last, so a folder with
/// meta.json is complete.
void writeReportFolder(const BugReport& bug, const std::string& reproPy, const std::filesystem::path& dir,
                       const SecretRedactor& secrets);

}  // namespace tcfuzz::oracles
