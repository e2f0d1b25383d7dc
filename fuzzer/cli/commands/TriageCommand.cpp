#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fuzzer/cli/Driver.h"
#include "fuzzer/cli/Interrupt.h"
#include "fuzzer/cli/Settings.h"
#include "fuzzer/cli/commands/Commands.h"
#include "fuzzer/campaign/output/CampaignOutput.h"
#include "fuzzer/triage/Resign.h"
#include "fuzzer/triage/Triage.h"

namespace tcfuzz {

namespace fs = std::filesystem;
using nlohmann::json;

int triageCommand(const Options& o, const std::string& campaignDir, const SecretRedactor& secrets) {
  fs::path root = campaignDir;
  campaignStorePath(root);  // a clear error for a folder that holds no campaign
  CampaignOutput output(root, CampaignOutput::OpenMode::Resume, secrets);  // the lock: not while a campaign runs here
  FindingStore store(output.storePath(), secrets);
  int workers = workerCount(o);
  TriageSettings settings = triageSettingsFrom(o, workers, secrets);
  adoptCampaignIdentity(store, settings.test);
  settings.torch = campaignTorch(store);
  if (o.resign) logLine(resignFindings(store).describe());

  gen::OpCatalog catalog = gen::makeDefaultCatalog();
  Triage reports(catalog, settings, root, store, nullptr, logLine);
  std::vector<std::string> waiting = reports.pending();
  if (waiting.empty()) {
    TriageSummary s = reports.rewriteReports();
    logLine("nothing left to triage; reports rewritten");
    std::cout << s.describe(root);
    return kExitOk;
  }
  logLine(fmt::format("{} signature(s) to triage with {} workers", waiting.size(), workers));
  InterruptCleanup interrupt({output.workDir() / "jobs"});  // job outputs; the caches and the store stay
  Options workerOptions = o;  // replayed on the device the campaign ran on (a CUDA finding on its GPU)
  if (auto device = campaignDevice(store)) workerOptions.device = *device;
  WorkerPool pool(workerSpecFrom(workerOptions, output.workDir(), secrets), static_cast<size_t>(workers));
  settings.torch = pool.hello().torch;  // the torch the cases are replayed on now
  settings.structuredTrace = pool.hello().has("structured_trace");
  logLine("workers run " + settings.torch.summary());
  ProgramTester tester(pool, oracles::Comparator{}, output.workDir() / "jobs");
  Triage triage(catalog, settings, root, store, &tester, logLine);
  TriageSummary s = triage.run();
  std::cout << s.describe(root);
  return kExitOk;
}

}  // namespace tcfuzz
