#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fuzzer/cli/Driver.h"
#include "fuzzer/cli/Settings.h"
#include "fuzzer/cli/commands/Commands.h"
#include "fuzzer/campaign/output/FindingStore.h"
#include "fuzzer/triage/Triage.h"

namespace tcfuzz {

namespace fs = std::filesystem;
using nlohmann::json;

int reportCommand(const Options& o, const std::string& campaignDir, const SecretRedactor& secrets) {
  fs::path root = campaignDir;
  FindingStore store(campaignStorePath(root), secrets);
  gen::OpCatalog catalog = gen::makeDefaultCatalog();
  TriageSettings settings = triageSettingsFrom(o, 1, secrets);
  settings.torch = campaignTorch(store);
  Triage reports(catalog, settings, root, store, nullptr, logLine);
  TriageSummary s = reports.rewriteReports();
  size_t untriaged = static_cast<size_t>(s.pending);
  std::cout << s.describe(root);
  if (untriaged) logLine(fmt::format("{} signature(s) are not triaged yet: run tcfuzz triage {}", untriaged, campaignDir));
  return kExitOk;
}

}  // namespace tcfuzz
