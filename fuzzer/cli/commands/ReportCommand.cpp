#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fuzzer/cli/Driver.h"
#include "fuzzer/cli/Settings.h"
#include "fuzzer/cli/commands/Commands.h"
#include "fuzzer/campaign/FindingStore.h"
#include "fuzzer/triage/Triage.h"

namespace tcfuzz {

namespace fs = std::filesystem;
using nlohmann::json;

int reportCommand(const Options& o, const std::string& campaignDir) {
  fs::path root = campaignDir;
  if (!fs::exists(root / "findings.sqlite"))
    throw std::invalid_argument(fmt::format("{} holds no campaign (no findings.sqlite)", root.string()));
  FindingStore store(root / "findings.sqlite");
  gen::OpCatalog catalog = gen::makeDefaultCatalog();
  Triage reports(catalog, triageSettingsFrom(o, 1), root, store, nullptr, logLine);
  auto bugs = reports.writeReports();
  size_t untriaged = reports.pending().size();
  TriageSummary s;
  s.bugs = static_cast<int>(bugs.size());
  for (const auto& b : bugs) s.rawFindings += static_cast<int>(b.hits);
  s.pending = static_cast<int>(untriaged);
  std::cout << s.describe(root);
  if (untriaged) logLine(fmt::format("{} signature(s) are not triaged yet: run tcfuzz triage {}", untriaged, campaignDir));
  return kExitOk;
}

}  // namespace tcfuzz
