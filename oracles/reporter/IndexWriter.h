#pragma once
// The campaign's index of unique bugs (index.md, index.html): one row per report folder
// crashes/<id>/ that ReportWriter wrote.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "oracles/reporter/BugReport.h"
#include "oracles/infra/SecretRedactor.h"

namespace tcfuzz::oracles {

/// index.md and index.html (static, self-contained, no scripts fetched from anywhere) in `root`, the bugs first:
/// the count of unique bugs and raw findings, then the table, one row per bug, new bugs before those known
/// upstream, then by severity rank (crash, hang, wrong-result, accepts-invalid, low), then hits; each links to
/// crashes/<id>/report.md and shows the upstream state, the torch version, and the short repro's length (no table
/// when there is no bug). Under it a "Campaign" section sums up `campaignStats` (fuzzer_stats keys) in a handful of
/// lines (duration, programs judged, findings, torch; shards for a merged night), links root/fuzzer_stats, which
/// keeps every figure, when it exists, and shows the figure of `tcfuzz plot` when root/plots/campaign.svg (or .png)
/// exists. Both files are masked with `secrets`.
void writeIndex(const std::vector<BugReport>& bugs, const std::vector<std::pair<std::string, std::string>>& campaignStats,
                const std::filesystem::path& root, const SecretRedactor& secrets);

/// Sort rank of a severity: crash 0, hang 1, wrong-result 2, accepts-invalid 3, anything else 4.
int severityRank(const std::string& severity);

}  // namespace tcfuzz::oracles
