#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fuzzer/cli/Driver.h"
#include "fuzzer/cli/Interrupt.h"
#include "fuzzer/cli/Settings.h"
#include "fuzzer/cli/commands/Commands.h"
#include "fuzzer/campaign/output/FindingStore.h"
#include "fuzzer/triage/Triage.h"
#include "generators/python/PythonEmitter.h"
#include "oracles/reporter/ReportWriter.h"
#include "oracles/reporter/repro/ReproWriter.h"

namespace tcfuzz {

namespace fs = std::filesystem;
using nlohmann::json;

int minimizeCommand(const Options& o, const std::string& finding, const SecretRedactor& secrets) {
  fs::path path = finding;
  oracles::MinimizeCase start;
  int workers = workerCount(o);
  TriageSettings settings = triageSettingsFrom(o, workers, secrets);
  fs::path outDir;
  Options workerOptions = o;
  if (fs::is_directory(path)) {
    // A crashes/<id>/ folder: the campaign's first witness (meta.json "config") or a report (meta.json "config.original").
    start.graph = gen::Graph::load((path / "program.json").string());
    json meta = readJsonFile(path / "meta.json");
    json config = meta.value("config", json::object());
    if (config.contains("original")) config = config["original"];
    oracles::FindingCompile recorded = oracles::findingCompile(config);
    start.compile = recorded.config;
    start.backward = recorded.backward;
    if (fs::exists(path / "result.json")) {
      json result = readJsonFile(path / "result.json");
      if (result.contains("seed") && result["seed"].is_number_unsigned()) settings.test.seed = result["seed"];
      if (result.contains("threads") && result["threads"].is_number_integer() && o.threads == 0)
        settings.test.threads = result["threads"];
    }
    // A finding of a campaign that ran with a plugin (a planted backend) needs that plugin again.
    fs::path store = path.parent_path().parent_path() / "findings.sqlite";
    if (fs::exists(store)) {
      FindingStore s(store);
      adoptCampaignIdentity(s, settings.test);
      if (auto device = campaignDevice(s)) workerOptions.device = *device;  // replayed where it was found
    }
    outDir = o.out.empty() ? path / "minimized" : fs::path(o.out);
  } else {
    start.graph = gen::Graph::load(path.string());
    start.compile = compileConfigFrom(o);
    start.backward = o.backward;
    outDir = o.out.empty() ? path.parent_path() / (path.stem().string() + "-minimized") : fs::path(o.out);
  }

  ScratchDir work(o.workDir, o.keep);
  InterruptCleanup interrupt(work.kept() ? std::vector<fs::path>{} : std::vector<fs::path>{work.path()});
  FindingStore scratchStore(work.path() / "minimize.sqlite", secrets);
  WorkerPool pool(workerSpecFrom(workerOptions, work.path(), secrets), static_cast<size_t>(workers));
  settings.torch = pool.hello().torch;
  settings.structuredTrace = pool.hello().has("structured_trace");
  ProgramTester tester(pool, oracles::Comparator{}, work.path() / "jobs");
  gen::OpCatalog catalog = gen::makeDefaultCatalog();
  Triage triage(catalog, settings, work.path(), scratchStore, &tester, logLine);
  TriagedCase t = triage.triageCase(start, settings.test);
  if (t.status == "unreproducible") {
    std::cout << fmt::format("{} does not reproduce a finding here: {}\n", finding, t.baseline.symptom);
    return 1;
  }
  oracles::BugReport b = bugReportOf(t, work.path());
  b.hits = 1;
  b.originalProgramPy = gen::PythonEmitter(catalog).emit(start.graph);
  b.originalConfig = oracles::findingConfig(start.compile, start.backward);
  b.torch = settings.torch;
  oracles::writeReportFolder(b, oracles::renderRepro(b.repro, b.title), outDir, secrets);
  std::cout << fmt::format("{}\n  {} -> {} nodes ({} candidates tested), component: {}, repro.py {}\n  written to {}\n",
                           b.title, t.originalNodes, t.repro.nodes, t.minimization.candidatesTested, t.component,
                           !t.reproVerified ? "not verified" : *t.reproVerified ? "verified" : "NOT verified",
                           outDir.string());
  return kExitOk;
}

}  // namespace tcfuzz
