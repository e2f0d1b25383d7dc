#pragma once
// Writes a triaged bug as a report folder crashes/<id>/ (short_repro.py, repro.py, report.md,
// program.json, meta.json, tlparse/); oracles/reporter/IndexWriter lists the folders.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "oracles/reporter/BugReport.h"
#include "oracles/infra/SecretRedactor.h"

namespace tcfuzz::oracles {

/// report.md: a ready GitHub issue in the shape of PyTorch's pt2 bug template, about two screens: "🐛
/// Describe the bug" (the symptom and `shortReproPy`, short_repro.py, quoted; repro.py linked), "Error
/// logs" (the runs, the exception with the frames inside torch, or the diverging leaves; the tlparse
/// rendering of the failing compile's TORCH_TRACE linked), the ablation
/// table and the bisector, "Versions" (collect_env.txt linked), plus the tcfuzz facts (hits, first
/// and last seen, sizes, signature).
std::string renderReportMarkdown(const BugReport& bug, const std::string& shortReproPy);
/// meta.json: id, title, severity, component, signature, hits, first/last seen (ISO 8601 and unix),
/// raw signature ids, finding ids, configs (original and minimized), original and minimized sizes,
/// verdict, ablation, bisect, repro verification, torch version.
nlohmann::json reportMeta(const BugReport& bug);
/// short_repro.py for the bug (renderShortRepro with the default tolerances), "" for a verdict it cannot express.
std::string shortReproText(const BugReport& bug);

/// Writes dir/{repro.py, short_repro.py (and a copy of each plugin it loads), collect_env.txt, report.md,
/// program.json, meta.json} (and original.py: the witness before minimization; tlparse/: a copy of
/// bug.trace.dir when rendered), each atomically and masked with `secrets`; meta.json last, so a
/// folder with meta.json is complete.
void writeReportFolder(const BugReport& bug, const std::string& reproPy, const std::filesystem::path& dir,
                       const SecretRedactor& secrets);

}  // namespace tcfuzz::oracles
