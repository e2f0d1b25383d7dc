#include "fuzzer/TriageCommand.h"

#include <fstream>
#include <map>
#include <thread>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/headeronly/version.h>

#include "fuzzer/CampaignOutput.h"
#include "fuzzer/Driver.h"
#include "fuzzer/Workspace.h"
#include "generators/OpCatalog.h"
#include "oracles/ReportWriter.h"
#include "oracles/ReproWriter.h"

namespace tcfuzz {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json readJsonFile(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw std::invalid_argument("cannot read " + file.string());
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw std::invalid_argument(fmt::format("{} is not valid JSON: {}", file.string(), e.what()));
  }
}

void logLine(const std::string& line) { std::cerr << "tcfuzz: " << line << std::endl; }

TestSettings testSettingsFrom(const Options& o, int workers) {
  TestSettings s;
  s.limits = Limits{o.timeout, o.memoryMb};
  s.seed = static_cast<uint64_t>(o.seed);
  s.device = o.device;
  int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  s.threads = o.threads > 0 ? o.threads : std::max(1, cores / std::max(1, workers));
  for (const auto& p : o.plugins) {
    if (!fs::exists(p)) throw std::invalid_argument("--plugin " + p + " does not exist");
    s.plugins.push_back(fs::absolute(p));
  }
  return s;
}

/// The campaign's recorded settings that triage must reuse: its plugins (a planted backend), limits, device.
void adoptCampaignIdentity(const FindingStore& store, TestSettings& s) {
  auto stored = store.meta("identity");
  if (!stored) return;
  json id = json::parse(*stored, nullptr, false);
  if (!id.is_object()) return;
  if (s.plugins.empty())
    for (const auto& p : id.value("plugins", std::vector<std::string>{})) s.plugins.push_back(p);
  if (id.contains("device") && id["device"].is_string()) s.device = id["device"];
  if (id.contains("timeout") && id["timeout"].is_number()) s.limits.timeoutSeconds = id["timeout"];
  if (id.contains("memory_mb") && id["memory_mb"].is_number_integer()) s.limits.memoryMb = id["memory_mb"];
}

void printSummary(const TriageSummary& s, const fs::path& root) {
  std::cout << fmt::format("triaged {} signature(s) ({} unreproducible, {} failed{}); {} unique bug(s) from {} raw "
                           "finding(s)\nindex: {}\n",
                           s.triaged, s.unreproducible, s.failed,
                           s.pending ? fmt::format(", {} left for later", s.pending) : "", s.bugs, s.rawFindings,
                           (root / "index.md").string());
}

}  // namespace

TriageSettings triageSettingsFrom(const Options& o, int workers) {
  TriageSettings t;
  t.test = testSettingsFrom(o, workers);
  if (!o.minimizer.empty()) {
    try {
      t.minimizer = oracles::MinimizerPolicy::fromJson(readJsonFile(o.minimizer));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("--minimizer {}: {}", o.minimizer, e.what()));
    }
  } else {
    t.minimizer.batch = std::max(1, workers);
  }
  t.minimize = !o.noMinimize;
  t.ablate = !o.noAblation;
  t.bisect = !o.noBisect;
  t.verify = !o.noVerify;
  t.torchVersion = TORCH_VERSION;
  t.torchGit = TCFUZZ_TORCH_GIT_VERSION;
  return t;
}

int triageCommand(const Options& o, const std::string& campaignDir) {
  fs::path root = campaignDir;
  if (!fs::exists(root / "findings.sqlite"))
    throw std::invalid_argument(fmt::format("{} holds no campaign (no findings.sqlite)", root.string()));
  CampaignOutput output(root, CampaignOutput::OpenMode::Resume);  // the lock: not while a campaign runs here
  FindingStore store(output.storePath());
  int workers = workerCount(o);
  TriageSettings settings = triageSettingsFrom(o, workers);
  adoptCampaignIdentity(store, settings.test);

  gen::OpCatalog catalog = gen::makeDefaultCatalog();
  Triage reports(catalog, settings, root, store, nullptr, logLine);
  std::vector<std::string> waiting = reports.pending();
  if (waiting.empty()) {
    auto bugs = reports.writeReports();
    TriageSummary s;
    s.bugs = static_cast<int>(bugs.size());
    for (const auto& b : bugs) s.rawFindings += static_cast<int>(b.hits);
    logLine("nothing left to triage; reports rewritten");
    printSummary(s, root);
    return kExitOk;
  }
  logLine(fmt::format("{} signature(s) to triage with {} workers", waiting.size(), workers));
  WorkerPool pool(workerSpecFrom(o, output.workDir()), static_cast<size_t>(workers));
  ProgramTester tester(pool, oracles::Comparator{}, output.workDir() / "jobs");
  Triage triage(catalog, settings, root, store, &tester, logLine);
  TriageSummary s = triage.run();
  printSummary(s, root);
  return kExitOk;
}

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
  printSummary(s, root);
  if (untriaged) logLine(fmt::format("{} signature(s) are not triaged yet: run tcfuzz triage {}", untriaged, campaignDir));
  return kExitOk;
}

int minimizeCommand(const Options& o, const std::string& finding) {
  fs::path path = finding;
  oracles::MinimizeCase start;
  int workers = workerCount(o);
  TriageSettings settings = triageSettingsFrom(o, workers);
  fs::path outDir;
  if (fs::is_directory(path)) {
    // A crashes/<id>/ folder: the campaign's first witness (meta.json "config") or a report (meta.json "config.original").
    start.graph = gen::Graph::load((path / "program.json").string());
    json meta = readJsonFile(path / "meta.json");
    json config = meta.value("config", json::object());
    if (config.contains("original")) config = config["original"];
    auto [compile, backward] = findingCompile(config);
    start.compile = compile;
    start.backward = backward;
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
    }
    outDir = o.out.empty() ? path / "minimized" : fs::path(o.out);
  } else {
    start.graph = gen::Graph::load(path.string());
    CompileConfig c = compileConfigFrom(o);
    start.compile = c.toJson();
    start.backward = o.backward;
    outDir = o.out.empty() ? path.parent_path() / (path.stem().string() + "-minimized") : fs::path(o.out);
  }

  ScratchDir work(o.workDir, o.keep);
  FindingStore scratchStore(work.path() / "minimize.sqlite");
  WorkerPool pool(workerSpecFrom(o, work.path()), static_cast<size_t>(workers));
  ProgramTester tester(pool, oracles::Comparator{}, work.path() / "jobs");
  gen::OpCatalog catalog = gen::makeDefaultCatalog();
  Triage triage(catalog, settings, work.path(), scratchStore, &tester, logLine);
  TriagedCase t = triage.triageCase(start, settings.test);
  if (t.status == "unreproducible") {
    std::cout << fmt::format("{} does not reproduce a finding here: {}\n", finding, t.baseline.symptom);
    return 1;
  }
  oracles::BugReport b = bugReportOf(t);
  b.hits = 1;
  b.originalProgramPy = gen::PythonEmitter(catalog).emit(start.graph);
  b.originalConfig = compileConfigFromJson(start.compile).nonDefault();
  if (start.backward) b.originalConfig["backward"] = true;
  b.torchVersion = settings.torchVersion;
  b.torchGit = settings.torchGit;
  oracles::writeReportFolder(b, oracles::renderRepro(b.repro, b.title), outDir);
  std::cout << fmt::format("{}\n  {} -> {} nodes ({} candidates tested), component: {}, repro.py {}\n  written to {}\n",
                           b.title, t.originalNodes, t.repro.nodes, t.minimization.candidatesTested, t.component,
                           !t.reproVerified ? "not verified" : *t.reproVerified ? "verified" : "NOT verified",
                           outDir.string());
  return kExitOk;
}

int regressCommand(const Options& o, const std::vector<std::string>& dirs) {
  std::vector<fs::path> cases;
  for (const auto& d : dirs) {
    fs::path dir = d;
    if (fs::exists(dir / "finding.json")) {
      cases.push_back(dir);
      continue;
    }
    if (!fs::is_directory(dir)) throw std::invalid_argument(d + " is not a directory of known findings");
    std::vector<fs::path> found;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_directory() && fs::exists(e.path() / "finding.json")) found.push_back(e.path());
    std::sort(found.begin(), found.end());
    cases.insert(cases.end(), found.begin(), found.end());
  }
  if (cases.empty()) throw std::invalid_argument("no known findings (folders with finding.json and program.json) given");

  int workers = workerCount(o);
  TestSettings base = testSettingsFrom(o, workers);
  ScratchDir work(o.workDir, o.keep);
  WorkerPool pool(workerSpecFrom(o, work.path()), static_cast<size_t>(workers));
  ProgramTester tester(pool, oracles::Comparator{}, work.path() / "jobs");
  gen::OpCatalog catalog = gen::makeDefaultCatalog();
  gen::PythonEmitter emitter(catalog);

  auto csvField = [](std::string v) {
    if (v.find_first_of(",\"\n") == std::string::npos) return v;
    std::string q = "\"";
    for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  std::ostringstream csv;
  csv << "name,status,expected_verdict,observed_verdict,expected_signature,observed_signature,config,torch,reason\n";
  std::map<std::string, int> counts;
  for (const auto& dir : cases) {
    std::string name = dir.filename().string();
    std::string status, expectedVerdict, observedVerdict, expectedId, observedId, config, reason;
    try {
      json finding = readJsonFile(dir / "finding.json");
      expectedVerdict = finding.value("verdict", "");
      oracles::Signature expected = oracles::signatureFromJson(finding.at("signature"));
      expectedId = expected.id();
      json cfg = finding.value("config", json::object());
      config = cfg.dump();
      gen::Graph g = gen::Graph::load((dir / "program.json").string());
      fs::path file = work.path() / (name + ".py");
      writeFileAtomically(file, emitter.emit(g));
      TestSettings s = base;
      auto [compile, backward] = findingCompile(cfg);
      s.compile = compileConfigFromJson(compile);
      s.backward = backward;
      if (finding.contains("seed")) s.seed = finding["seed"].get<uint64_t>();
      if (finding.contains("threads") && o.threads == 0) s.threads = finding["threads"].get<int>();
      ProgramTestResult r = tester.test(file, s);
      observedVerdict = std::string(oracles::toString(r.verdict.verdict));
      std::vector<std::string> ops;
      for (const auto& n : g.nodes) ops.push_back(n.op);
      oracles::Signature observed = oracles::signatureOf(r.runs, r.verdict, ops);
      observedId = observed.id();
      reason = r.verdict.reason.substr(0, 300);
      if (!oracles::isFinding(r.verdict.verdict)) status = "fixed";
      else if (observed.key() == expected.key()) status = "still-failing";
      else status = "changed-signature";
    } catch (const JobCancelled&) {
      throw;
    } catch (const std::exception& e) {
      status = "error";
      reason = e.what();
    }
    counts[status]++;
    logLine(fmt::format("{}: {} ({})", name, status, observedVerdict.empty() ? reason : observedVerdict));
    csv << fmt::format("{},{},{},{},{},{},{},{},{}\n", csvField(name), status, expectedVerdict, observedVerdict,
                       expectedId, observedId, csvField(config), TORCH_VERSION, csvField(reason));
  }
  if (o.out.empty()) {
    std::cout << csv.str();
  } else {
    writeFileAtomically(o.out, csv.str());
    logLine("wrote " + o.out);
  }
  logLine(fmt::format("{} known finding(s): {} still failing, {} fixed, {} changed signature, {} error(s)", cases.size(),
                      counts["still-failing"], counts["fixed"], counts["changed-signature"], counts["error"]));
  return kExitOk;
}

}  // namespace tcfuzz
