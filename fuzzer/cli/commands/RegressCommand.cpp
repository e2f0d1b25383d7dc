#include <algorithm>
#include <map>
#include <sstream>
#include <torch/headeronly/version.h>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fuzzer/cli/Driver.h"
#include "fuzzer/cli/Settings.h"
#include "fuzzer/cli/commands/Commands.h"
#include "generators/PythonEmitter.h"
#include "oracles/AtomicFile.h"
#include "oracles/CompileConfig.h"

namespace tcfuzz {

namespace fs = std::filesystem;
using nlohmann::json;

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
      oracles::FindingCompile recorded = oracles::findingCompile(cfg);
      s.compile = recorded.config;
      s.backward = recorded.backward;
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
