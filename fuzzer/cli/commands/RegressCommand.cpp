#include <algorithm>
#include <iostream>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fuzzer/cli/Driver.h"
#include "fuzzer/cli/Interrupt.h"
#include "fuzzer/cli/Settings.h"
#include "fuzzer/cli/commands/Commands.h"
#include "fuzzer/triage/ReleaseMatrix.h"
#include "fuzzer/worker/ProgramTester.h"
#include "fuzzer/worker/WorkerPool.h"
#include "generators/ir/Graph.h"
#include "generators/python/PythonEmitter.h"
#include "oracles/infra/AtomicFile.h"
#include "oracles/judge/CompileConfig.h"
#include "oracles/judge/Signature.h"

namespace tcfuzz {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// A known finding as read from its folder, ready to run under any torch: an IR program (program.json)
/// or, where there is none, a hand-written Python program (program.py: corpus/known-bugs/).
struct KnownFinding {
  std::string name;  ///< the folder's name
  json finding;      ///< finding.json
  std::optional<oracles::Signature> expected;  ///< absent: the finding is matched by its verdict alone
  std::optional<gen::Graph> graph;             ///< absent: pythonProgram runs as it is
  fs::path pythonProgram;
  oracles::FindingCompile compile;  ///< the recorded compile config and backward
  RegressCell recorded;   ///< expected verdict, signature id and config, as every row of it repeats them
  std::string loadError;  ///< why it cannot run (finding.json or program.json unreadable); empty if it can
};

/// The finding folders of `dirs`: each a folder with finding.json, or a folder of them (by name).
std::vector<fs::path> knownFindingDirs(const std::vector<std::string>& dirs) {
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
  if (cases.empty())
    throw std::invalid_argument("no known findings (folders with finding.json and program.json or program.py) given");
  return cases;
}

KnownFinding loadKnownFinding(const fs::path& dir) {
  KnownFinding k;
  k.name = dir.filename().string();
  try {
    k.finding = readJsonFile(dir / "finding.json");
    k.recorded.expectedVerdict = k.finding.value("verdict", "");
    json config = k.finding.value("config", json::object());
    k.recorded.config = config.dump();
    k.compile = oracles::findingCompile(config);
    if (k.finding.contains("signature")) {
      k.expected = oracles::signatureFromJson(k.finding.at("signature"));
      k.recorded.expectedSignature = k.expected->id();
    }
    if (fs::exists(dir / "program.json") || !fs::exists(dir / "program.py"))
      k.graph = gen::Graph::load((dir / "program.json").string());
    else
      k.pythonProgram = fs::absolute(dir / "program.py");
  } catch (const std::exception& e) {
    k.loadError = e.what();
  }
  return k;
}

/// Re-runs one known finding with its recorded seed, threads and compile config; never throws but
/// JobCancelled (anything else is an error cell).
RegressCell regressFinding(ProgramTester& tester, const gen::PythonEmitter& emitter, const KnownFinding& k,
                           const fs::path& programDir, const TestSettings& base, const Options& o) {
  RegressCell cell = k.recorded;
  if (!k.loadError.empty()) {
    cell.reason = k.loadError;
    return cell;
  }
  try {
    fs::path file = k.pythonProgram;
    if (k.graph) {
      file = programDir / (k.name + ".py");
      writeFileAtomically(file, emitter.emit(*k.graph));
    }
    TestSettings s = base;
    s.compile = k.compile.config;
    s.backward = k.compile.backward;
    if (k.finding.contains("seed")) s.seed = k.finding["seed"].get<uint64_t>();
    if (k.finding.contains("threads") && o.threads == 0) s.threads = k.finding["threads"].get<int>();
    ProgramTestResult r = tester.test(file, s);
    cell.observedVerdict = std::string(oracles::toString(r.verdict.verdict));
    std::vector<std::string> ops;
    if (k.graph)
      for (const auto& n : k.graph->nodes) ops.push_back(n.op);
    oracles::Signature observed = oracles::signatureOf(r.runs, r.verdict, ops);
    cell.observedSignature = observed.id();
    cell.reason = r.verdict.reason.substr(0, 300);
    bool same = k.expected ? observed.key() == k.expected->key() : cell.observedVerdict == cell.expectedVerdict;
    if (!oracles::isFinding(r.verdict.verdict)) cell.status = RegressStatus::Fixed;
    else if (same) cell.status = RegressStatus::StillFailing;
    else cell.status = RegressStatus::ChangedSignature;
  } catch (const JobCancelled&) {
    throw;
  } catch (const std::exception& e) {
    cell.status = RegressStatus::Error;
    cell.reason = e.what();
  }
  return cell;
}

/// The interpreters to run, in the order given, each once (default: --python's default).
std::vector<std::string> interpretersFrom(const Options& o) {
  if (o.pythons.empty()) return {o.python};
  std::vector<std::string> out;
  std::vector<fs::path> seen;
  for (const auto& p : o.pythons) {
    fs::path key = fs::absolute(p).lexically_normal();  // not canonical: a venv's python is a symlink
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      logLine(fmt::format("{} was given twice; it runs once", p));
      continue;
    }
    seen.push_back(key);
    out.push_back(p);
  }
  return out;
}

}  // namespace

ReleaseMatrix regressMatrix(const Options& o, const std::vector<std::string>& dirs, const SecretRedactor& secrets) {
  std::vector<std::string> pythons = interpretersFrom(o);
  if (o.bisectReleases && pythons.size() < 2)
    throw std::invalid_argument(fmt::format(
        "--bisect-releases needs two or more --python interpreters, one per torch release (got {})", pythons.size()));
  std::vector<KnownFinding> findings;
  for (const auto& dir : knownFindingDirs(dirs)) findings.push_back(loadKnownFinding(dir));

  int workers = workerCount(o);
  TestSettings base = testSettingsFrom(o, workers);
  ScratchDir work(o.workDir, o.keep);
  InterruptCleanup interrupt(work.kept() ? std::vector<fs::path>{} : std::vector<fs::path>{work.path()});
  WorkerSpec spec = workerSpecFrom(o, work.path(), secrets);  // throws here, once, when the sandbox cannot run
  gen::OpCatalog catalog = gen::makeDefaultCatalog();
  gen::PythonEmitter emitter(catalog);

  std::vector<std::string> names;
  for (const auto& k : findings) names.push_back(k.name);
  std::vector<ReleaseColumn> columns;
  for (const auto& p : pythons) columns.push_back({p, {}, {}});
  ReleaseMatrix matrix(names, columns);
  for (size_t r = 0; r < findings.size(); ++r)
    for (size_t c = 0; c < pythons.size(); ++c) {
      RegressCell notRun = findings[r].recorded;
      notRun.reason = "not run";
      matrix.setCell(r, c, std::move(notRun));
    }

  // One pool at a time: each interpreter's zygotes start, run every finding, and stop.
  for (size_t c = 0; c < pythons.size(); ++c) {
    fs::path dir = work.path() / fmt::format("torch-{}", c);  // per interpreter: its own caches and logs
    fs::create_directories(dir / "programs");
    WorkerSpec s = spec;
    s.python = fs::absolute(pythons[c]);
    s.workDir = dir;
    try {
      WorkerPool pool(s, static_cast<size_t>(workers));
      const oracles::TorchInfo& torch = pool.hello().torch;
      matrix.setTorch(c, torch);
      logLine(fmt::format("[{}/{}] {}: {}", c + 1, pythons.size(), pythons[c], torch.summary()));
      ProgramTester tester(pool, oracles::Comparator{}, dir / "jobs");
      for (size_t r = 0; r < findings.size(); ++r) {
        RegressCell cell = regressFinding(tester, emitter, findings[r], dir / "programs", base, o);
        logLine(fmt::format("{} under torch {}: {} ({})", findings[r].name, torch.version, toString(cell.status),
                            cell.observedVerdict.empty() ? cell.reason : cell.observedVerdict));
        matrix.setCell(r, c, std::move(cell));
      }
    } catch (const WorkerStartError& e) {
      logLine(fmt::format("[{}/{}] {}: its workers did not start: {}", c + 1, pythons.size(), pythons[c], e.what()));
      matrix.setStartError(c, e.what());
    }
  }
  matrix.sortByRelease();
  return matrix;
}

int regressCommand(const Options& o, const std::vector<std::string>& dirs, const SecretRedactor& secrets) {
  ReleaseMatrix matrix = regressMatrix(o, dirs, secrets);
  bool several = matrix.columnCount() > 1;
  std::string markdown = matrix.markdown(o.bisectReleases);
  if (!o.out.empty()) {
    writeFileAtomically(o.out, secrets.mask(matrix.csv()));
    writeFileAtomically(o.out + ".md", secrets.mask(markdown));
    logLine(fmt::format("wrote {} and {}.md", o.out, o.out));
  } else if (several) {
    logLine("the CSV (a row per finding and interpreter) is written with --out FILE");
  }
  if (several) std::cout << markdown;
  else if (o.out.empty()) std::cout << matrix.csv();

  size_t started = 0;
  for (size_t c = 0; c < matrix.columnCount(); ++c) {
    if (matrix.column(c).started()) ++started;
    std::map<RegressStatus, int> counts;
    for (size_t r = 0; r < matrix.findingCount(); ++r) counts[matrix.cell(r, c).status]++;
    logLine(fmt::format("{}: {} known finding(s): {} still failing, {} fixed, {} changed signature, {} error(s)",
                        matrix.label(c), matrix.findingCount(), counts[RegressStatus::StillFailing],
                        counts[RegressStatus::Fixed], counts[RegressStatus::ChangedSignature],
                        counts[RegressStatus::Error]));
  }
  if (started == 0) {
    logLine("no interpreter could start its workers");
    return kExitEnvironment;
  }
  return kExitOk;
}

}  // namespace tcfuzz
