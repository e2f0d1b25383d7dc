#include "fuzzer/triage/Triage.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fuzzer/campaign/CampaignOutput.h"
#include "oracles/Deduper.h"
#include "oracles/ReportWriter.h"
#include "oracles/ReproWriter.h"

namespace tcfuzz {

namespace fs = std::filesystem;
using nlohmann::json;
using oracles::MinimizeCase;
using oracles::Signature;

namespace {

double unixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

const std::vector<std::string> kStandardBackends = {"eager", "aot_eager", "aot_eager_decomp_partition", "inductor"};

bool isStandardBackend(const std::string& b) {
  return std::find(kStandardBackends.begin(), kStandardBackends.end(), b) != kStandardBackends.end();
}

/// Whether a test of a candidate shows the bug of `baseline`: for numeric divergences the divergence
/// from fp64 still reproduces (the accuracy minifier's rule); otherwise the signature is unchanged.
bool showsBug(const Signature& baseline, const ProgramTestResult& r) {
  if (baseline.symptom == "numeric-divergence") return r.verdict.verdict == oracles::Verdict::NumericDivergence;
  if (!oracles::isFinding(r.verdict.verdict)) return false;
  return oracles::signatureOf(r.runs, r.verdict, {}).key() == baseline.key();
}

std::string firstLine(const std::string& text, size_t limit) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > limit) line = line.substr(0, limit - 3) + "...";
  return line;
}

/// The failing run's exception message, as raised (not normalized).
std::string rawMessage(const ProgramTestResult& r) {
  const oracles::RunResult& failing = r.runs.compiled.ok() ? r.runs.eager : r.runs.compiled;
  if (failing.exception) return failing.exception->message;
  return failing.summary();
}

std::string uniqueOps(const gen::Graph& g, size_t limit = 4) {
  std::vector<std::string> ops;
  for (const auto& n : g.nodes)
    if (std::find(ops.begin(), ops.end(), n.op) == ops.end()) ops.push_back(n.op);
  if (ops.size() > limit) {
    ops.resize(limit);
    ops.push_back("...");
  }
  return fmt::format("{}", fmt::join(ops, ", "));
}

std::string configText(const MinimizeCase& c) {
  oracles::CompileConfig cfg = compileConfigFromJson(c.compile);
  std::string text = cfg.describe();
  if (c.backward) text += " backward";
  return text;
}

std::string componentTag(const std::string& component) {
  if (component.rfind("dynamo", 0) == 0) return "[dynamo]";
  if (component.rfind("aot_autograd", 0) == 0) return "[aot_autograd]";
  if (component.rfind("inductor", 0) == 0) return "[inductor]";
  if (component.rfind("backend ", 0) == 0) return "[" + firstLine(component.substr(8), 40) + "]";
  return "[torch.compile]";
}

std::string severityOf(const Signature& s) {
  if (s.symptom == "numeric-divergence") return "wrong-result";
  if (s.symptom == "status-mismatch") return "accepts-invalid";
  if (s.kind == "timeout") return "hang";
  return "crash";
}

json toJson(const oracles::ReproCase& r) {
  return {{"program_py", r.programPy}, {"program_ir", r.programIr},   {"nodes", r.nodes},
          {"compile", r.compile},      {"backward", r.backward},      {"seed", r.seed},
          {"threads", r.threads},      {"device", r.device},          {"plugins", r.plugins},
          {"verdict", r.verdict},      {"diverging_leaves", r.divergingLeaves}, {"observed", r.observed}};
}

oracles::ReproCase reproFromJson(const json& j) {
  oracles::ReproCase r;
  r.programPy = j.value("program_py", "");
  r.programIr = j.value("program_ir", json::object());
  r.nodes = j.value("nodes", 0);
  r.compile = j.value("compile", json::object());
  r.backward = j.value("backward", false);
  r.seed = j.value("seed", uint64_t{0});
  r.threads = j.value("threads", 0);
  r.device = j.value("device", "cpu");
  r.plugins = j.value("plugins", std::vector<std::string>{});
  r.verdict = j.value("verdict", "");
  r.divergingLeaves = j.value("diverging_leaves", std::vector<int>{});
  r.observed = j.value("observed", json::object());
  return r;
}

json toJson(const oracles::AblationRow& a) {
  return {{"variant", a.variant}, {"config", a.config}, {"verdict", a.verdict}, {"reproduces", a.reproduces},
          {"summary", a.summary}};
}

json toJson(const oracles::BisectOutcome& b) {
  return {{"ran", b.ran},         {"backend", b.backend},       {"subsystem", b.subsystem},
          {"bisect_number", b.bisectNumber}, {"debug_info", b.debugInfo}, {"note", b.note}};
}

/// The non-default options of a case, as a finding records them.
json nonDefaultOf(const MinimizeCase& c) {
  json j = compileConfigFromJson(c.compile).nonDefault();
  if (c.backward) j["backward"] = true;
  return j;
}

}  // namespace

// --- conversions ----------------------------------------------------------------------------------

oracles::CompileConfig compileConfigFromJson(const json& j) {
  oracles::CompileConfig c;
  if (!j.is_object()) return c;
  c.backend = j.value("backend", std::string("inductor"));
  if (j.contains("mode") && j["mode"].is_string()) c.mode = j["mode"] == "default" ? "" : j["mode"].get<std::string>();
  if (j.contains("dynamic") && j["dynamic"].is_boolean()) c.dynamic = j["dynamic"].get<bool>();
  c.fullgraph = j.value("fullgraph", false);
  if (j.contains("inductor_config") && j["inductor_config"].is_object()) c.inductorConfig = j["inductor_config"];
  return c;
}

std::pair<json, bool> findingCompile(const json& findingConfig) {
  json j = findingConfig.is_object() ? findingConfig : json::object();
  bool backward = j.value("backward", false);
  return {compileConfigFromJson(j).toJson(), backward};
}

json toJson(const TriagedCase& t) {
  json ablation = json::array();
  for (const auto& a : t.ablation) ablation.push_back(toJson(a));
  return {{"status", t.status},
          {"baseline", oracles::toJson(t.baseline)},
          {"signature", oracles::toJson(t.signature)},
          {"repro", toJson(t.repro)},
          {"minimization",
           {{"candidates", t.minimization.candidatesTested},
            {"accepted", t.minimization.accepted},
            {"by_pass", t.minimization.acceptedByPass},
            {"budget_exhausted", t.minimization.budgetExhausted},
            {"log", t.minimization.log}}},
          {"ablation", ablation},
          {"bisect", toJson(t.bisect)},
          {"component", t.component},
          {"severity", t.severity},
          {"title", t.title},
          {"repro_verified", t.reproVerified ? json(*t.reproVerified) : json()},
          {"repro_output", t.reproOutput},
          {"original_nodes", t.originalNodes}};
}

TriagedCase triagedCaseFromJson(const json& j) {
  TriagedCase t;
  t.status = j.value("status", "done");
  auto signature = [&](const char* key, Signature& into) {  // a default (empty) signature was stored as such
    if (j.contains(key) && j[key].is_object() && !j[key].value("symptom", "").empty())
      into = oracles::signatureFromJson(j[key]);
  };
  signature("baseline", t.baseline);
  signature("signature", t.signature);
  t.repro = reproFromJson(j.value("repro", json::object()));
  const json m = j.value("minimization", json::object());
  t.minimization.candidatesTested = m.value("candidates", 0);
  t.minimization.accepted = m.value("accepted", 0);
  t.minimization.acceptedByPass = m.value("by_pass", std::map<std::string, int>{});
  t.minimization.budgetExhausted = m.value("budget_exhausted", false);
  t.minimization.log = m.value("log", std::vector<std::string>{});
  for (const json& a : j.value("ablation", json::array()))
    t.ablation.push_back({a.value("variant", ""), a.value("config", json::object()), a.value("verdict", ""),
                          a.value("reproduces", false), a.value("summary", "")});
  const json b = j.value("bisect", json::object());
  t.bisect = {b.value("ran", false), b.value("backend", ""), b.value("subsystem", ""),
              b.value("bisect_number", int64_t{-1}), b.value("debug_info", ""), b.value("note", "")};
  t.component = j.value("component", "");
  t.severity = j.value("severity", "");
  t.title = j.value("title", "");
  if (j.contains("repro_verified") && j["repro_verified"].is_boolean()) t.reproVerified = j["repro_verified"].get<bool>();
  t.reproOutput = j.value("repro_output", "");
  t.originalNodes = j.value("original_nodes", 0);
  return t;
}

oracles::BugReport bugReportOf(const TriagedCase& t) {
  oracles::BugReport b;
  b.id = t.signature.id();
  b.signature = t.signature;
  b.title = t.title;
  b.severity = t.severity;
  b.component = t.component;
  b.originalNodes = t.originalNodes;
  b.repro = t.repro;
  b.minimized = t.minimization.accepted > 0;
  b.minimizeCandidates = t.minimization.candidatesTested;
  b.ablation = t.ablation;
  b.bisect = t.bisect;
  b.reproVerified = t.reproVerified;
  b.reproOutput = t.reproOutput;
  return b;
}

// --- Triage ---------------------------------------------------------------------------------------

Triage::Triage(const gen::OpCatalog& catalog, TriageSettings settings, fs::path campaignRoot, FindingStore& store,
               ProgramTester* tester, std::function<void(const std::string&)> log)
    : catalog_(catalog),
      settings_(std::move(settings)),
      root_(std::move(campaignRoot)),
      store_(store),
      tester_(tester),
      log_(std::move(log)),
      emitter_(catalog),
      scratch_(root_ / "work" / "triage") {
  if (!log_) log_ = [](const std::string&) {};
}

ProgramTestResult Triage::testCase(const MinimizeCase& c, const TestSettings& base, const std::string& tag) {
  if (!tester_) throw std::logic_error("triage without a worker pool cannot test programs");
  fs::create_directories(scratch_);
  fs::path file = scratch_ / fmt::format("{}-{:06d}.py", tag, nextFile_++);
  writeFileAtomically(file, emitter_.emit(c.graph));
  TestSettings s = base;
  s.compile = compileConfigFromJson(c.compile);
  s.backward = c.backward;
  ProgramTestResult r;
  try {
    r = tester_->test(file, s);
  } catch (const oracles::OutputLoadError& e) {
    r.verdict.verdict = oracles::Verdict::InvalidProgram;
    r.verdict.reason = fmt::format("outputs unreadable: {}", e.what());
  } catch (const oracles::ConfigurationError& e) {
    r.verdict.verdict = oracles::Verdict::InvalidProgram;
    r.verdict.reason = fmt::format("configuration rejected: {}", e.what());
  } catch (...) {
    std::error_code ec;
    fs::remove(file, ec);
    throw;
  }
  std::error_code ec;
  fs::remove(file, ec);
  for (const auto* run : {&r.runs.eager, &r.runs.compiled, &r.runs.fp64})
    if (!run->jobDir.empty()) fs::remove_all(run->jobDir, ec);
  return r;
}

std::vector<ProgramTestResult> Triage::testCases(const std::vector<MinimizeCase>& cases, const TestSettings& base,
                                                 const std::string& tag) {
  std::vector<std::future<ProgramTestResult>> running;
  for (const auto& c : cases)
    running.push_back(std::async(std::launch::async, [this, &c, &base, &tag] { return testCase(c, base, tag); }));
  std::vector<ProgramTestResult> out;
  std::exception_ptr first;
  for (auto& f : running) {
    try {
      out.push_back(f.get());
    } catch (...) {
      if (!first) first = std::current_exception();
      out.emplace_back();
    }
  }
  if (first) std::rethrow_exception(first);
  return out;
}

TriagedCase Triage::triageCase(const MinimizeCase& start, const TestSettings& settings,
                               const std::vector<std::vector<std::string>>& opHints) {
  TriagedCase t;
  t.originalNodes = static_cast<int>(start.graph.nodes.size());
  ProgramTestResult baselineRun = testCase(start, settings, "replay");
  t.baseline = oracles::signatureOf(baselineRun.runs, baselineRun.verdict, oracles::opsOf(start.graph));
  MinimizeCase best = start;
  ProgramTestResult bestRun = baselineRun;
  if (!oracles::isFinding(baselineRun.verdict.verdict)) {
    t.status = "unreproducible";
    log_(fmt::format("replay gives {} ({}): not minimized", t.baseline.symptom, baselineRun.verdict.reason));
  } else if (settings_.minimize && t.baseline.kind != "timeout" && t.baseline.kind != "oom") {
    oracles::MinimizerPolicy policy = settings_.minimizer;
    policy.opHints = opHints;
    policy.seed = settings.seed;
    oracles::Minimizer minimizer(catalog_, policy);
    std::map<std::string, ProgramTestResult> accepted;  // IR hash + config -> its test
    auto key = [](const MinimizeCase& m) { return m.graph.contentHash() + m.compile.dump() + (m.backward ? "b" : ""); };
    oracles::CandidateTest test = [&](const std::vector<MinimizeCase>& batch) {
      std::vector<ProgramTestResult> results = testCases(batch, settings, "min");
      std::vector<bool> verdicts;
      for (size_t i = 0; i < batch.size(); ++i) {
        bool ok = showsBug(t.baseline, results[i]);
        verdicts.push_back(ok);
        if (ok) accepted[key(batch[i])] = results[i];
      }
      return verdicts;
    };
    t.minimization = minimizer.minimize(start, test);
    best = t.minimization.best;
    if (t.minimization.acceptedByPass.count("hinted-ops")) t.status = "duplicate";
    if (auto it = accepted.find(key(best)); it != accepted.end()) bestRun = it->second;
    log_(fmt::format("minimized {} -> {} nodes in {} candidates", start.graph.nodes.size(), best.graph.nodes.size(),
                     t.minimization.candidatesTested));
  }
  t.minimization.best = best;
  t.signature = t.status != "unreproducible" ? oracles::signatureOf(bestRun.runs, bestRun.verdict, oracles::opsOf(best.graph))
                                   : t.baseline;

  oracles::ReproCase& repro = t.repro;
  repro.programPy = emitter_.emit(best.graph);
  repro.programIr = best.graph.toJson();
  repro.nodes = static_cast<int>(best.graph.nodes.size());
  repro.compile = best.compile;
  repro.backward = best.backward;
  repro.seed = settings.seed;
  repro.threads = settings.threads;
  repro.device = settings.device;
  for (const auto& p : settings.plugins) repro.plugins.push_back(p.string());
  repro.verdict = t.signature.symptom;
  if (bestRun.verdict.comparison)
    for (const auto& l : bestRun.verdict.comparison->leaves)
      if (!l.passed) repro.divergingLeaves.push_back(static_cast<int>(l.leaf));
  repro.observed = toJson(bestRun);
  if (t.status != "done") return t;

  // Ablation: the same program under each backend, and without each non-default option.
  const std::string backend = best.compile.value("backend", std::string("inductor"));
  std::map<std::string, bool> backendReproduces;
  if (settings_.ablate) {
    std::vector<std::string> backends = kStandardBackends;
    if (!isStandardBackend(backend)) backends.push_back(backend);
    std::vector<MinimizeCase> variants;
    std::vector<std::string> names;
    for (const auto& b : backends) {
      MinimizeCase v = best;
      v.compile["backend"] = b;
      if (b != "inductor" && isStandardBackend(b)) {
        v.compile["mode"] = nullptr;
        v.compile["inductor_config"] = json::object();
      }
      variants.push_back(v);
      names.push_back("backend=" + b);
    }
    for (const auto& option : oracles::configOptionNames(best)) {
      variants.push_back(oracles::withoutConfigOption(best, option));
      names.push_back("without " + option);
    }
    std::vector<ProgramTestResult> results = testCases(variants, settings, "ablate");
    for (size_t i = 0; i < variants.size(); ++i) {
      oracles::AblationRow row;
      row.variant = names[i];
      row.config = nonDefaultOf(variants[i]);
      row.verdict = std::string(oracles::toString(results[i].verdict.verdict));
      row.reproduces = showsBug(t.baseline, results[i]);
      row.summary = firstLine(results[i].verdict.reason, 240);
      if (i < backends.size()) backendReproduces[backends[i]] = row.reproduces;
      t.ablation.push_back(std::move(row));
    }
    if (backendReproduces["eager"]) t.component = "dynamo";
    else if (backendReproduces["aot_eager"]) t.component = "aot_autograd";
    else if (backendReproduces["aot_eager_decomp_partition"]) t.component = "aot_autograd (decompositions or partitioner)";
    else if (backendReproduces["inductor"]) t.component = "inductor";
    else if (!isStandardBackend(backend) && backendReproduces[backend]) t.component = "backend " + backend;
    else t.component = "unknown (no backend variant reproduces)";
    std::vector<std::string> needed;
    for (const auto& row : t.ablation)
      if (row.variant.rfind("without ", 0) == 0 && !row.reproduces) needed.push_back(row.variant.substr(8));
    if (!needed.empty()) t.component += fmt::format(" (needs {})", fmt::join(needed, ", "));
  } else {
    t.component = isStandardBackend(backend) ? (backend == "eager" ? "dynamo" : backend) : "backend " + backend;
  }

  // Inductor's own bisector narrows an Inductor bug down to a subsystem.
  if (!settings_.bisect) {
    t.bisect.note = "not run (--no-bisect)";
  } else if (t.component.rfind("inductor", 0) != 0 || backend != "inductor") {
    t.bisect.note = "not an Inductor bug: the bisector only splits Inductor";
  } else {
    fs::create_directories(scratch_);
    fs::path file = scratch_ / fmt::format("bisect-{:06d}.py", nextFile_++);
    writeFileAtomically(file, repro.programPy);
    TestSettings s = settings;
    s.compile = compileConfigFromJson(best.compile);
    s.backward = best.backward;
    json spec{{"check", t.signature.symptom == "numeric-divergence" ? "numeric" : "crash"},
              {"leaves", repro.divergingLeaves}};
    oracles::RunResult r = tester_->bisect(file, s, spec);
    std::error_code ec;
    fs::remove(file, ec);
    if (!r.jobDir.empty()) fs::remove_all(r.jobDir, ec);
    const json& b = r.bisect;
    if (!r.ok()) {
      t.bisect.note = "the bisector failed: " + r.summary();
    } else if (!b.is_object() || !b.value("available", false)) {
      t.bisect.note = "torch._inductor.compiler_bisector is not available in this torch";
    } else if (!b.value("found", false)) {
      t.bisect.ran = true;
      t.bisect.note = "the bisector found no failing subsystem (the failure did not reproduce under it)";
    } else {
      t.bisect.ran = true;
      t.bisect.backend = b.value("backend", "");
      t.bisect.subsystem = b.value("subsystem", "");
      t.bisect.bisectNumber = b.contains("bisect_number") && b["bisect_number"].is_number_integer()
                                  ? b["bisect_number"].get<int64_t>()
                                  : -1;
      t.bisect.debugInfo = b.contains("debug_info") && b["debug_info"].is_string() ? b["debug_info"].get<std::string>() : "";
    }
  }

  // Title and severity.
  t.severity = severityOf(t.signature);
  std::string tag = componentTag(t.component);
  std::string where = t.signature.phase.empty() ? "" : " in " + t.signature.phase;
  if (t.signature.symptom == "numeric-divergence") {
    t.title = fmt::format("{} compiled result is further from float64 than eager: {} ({})", tag, uniqueOps(best.graph),
                          configText(best));
  } else if (t.signature.symptom == "status-mismatch") {
    t.title = fmt::format("{} compiled accepts what eager rejects ({}): {} ({})", tag,
                          firstLine(rawMessage(bestRun), 80), uniqueOps(best.graph), configText(best));
  } else if (t.signature.kind == "exception") {
    t.title = fmt::format("{} {}{}: {} ({}; {})", tag, t.signature.exceptionType, where,
                          firstLine(rawMessage(bestRun), 90), uniqueOps(best.graph), configText(best));
  } else {
    t.title = fmt::format("{} compiled run ends with {}{} ({}; {})", tag, t.signature.kind, where,
                          uniqueOps(best.graph), configText(best));
  }

  // repro.py, run as plain python in a fresh process inside the sandbox.
  if (settings_.verify) {
    fs::create_directories(scratch_);
    fs::path file = scratch_ / fmt::format("repro-{:06d}.py", nextFile_++);
    writeFileAtomically(file, oracles::renderRepro(repro, t.title));
    TestSettings s = settings;
    s.limits.timeoutSeconds = std::max(s.limits.timeoutSeconds, 120.0);
    oracles::RunResult r = tester_->runScript(file, s);
    std::error_code ec;
    fs::remove(file, ec);
    std::string printed = oracles::reproVerdict(r.stdoutTail);
    if (t.signature.kind.rfind("signal", 0) == 0) {
      t.reproVerified = r.status == oracles::RunStatus::Signal && r.signal != 0;
    } else if (t.signature.kind == "timeout") {
      t.reproVerified = r.status == oracles::RunStatus::Timeout;
    } else {
      t.reproVerified = printed == repro.verdict && r.exitCode.value_or(-1) == 1;
    }
    std::string out = r.stdoutTail;
    if (out.size() > 3000) out = "..." + out.substr(out.size() - 3000);
    t.reproOutput = out.empty() ? r.summary() : out;
    if (!r.jobDir.empty()) fs::remove_all(r.jobDir, ec);
    log_(fmt::format("repro.py {}: printed '{}'", *t.reproVerified ? "verified" : "NOT verified", printed));
  }
  return t;
}

std::vector<std::string> Triage::pending() const {
  std::set<std::string> done;
  for (const auto& row : store_.triageRecords()) done.insert(row.signatureId);
  std::vector<std::string> out;
  for (const auto& f : store_.findings())  // ordered by id: oldest first
    if (!done.count(f.signatureId) && std::find(out.begin(), out.end(), f.signatureId) == out.end())
      out.push_back(f.signatureId);
  return out;
}

TriageRecord Triage::triageSignature(const std::string& signatureId) {
  // The witness: the smallest program with this signature (ties: the earliest).
  std::optional<FindingRecord> witness;
  size_t witnessNodes = 0;
  for (auto& f : store_.findings()) {
    if (f.signatureId != signatureId) continue;
    size_t nodes = 0;
    try {
      nodes = gen::Graph::fromJson(json::parse(f.programJson), "finding").nodes.size();
    } catch (const std::exception&) {
      continue;  // an unreadable IR cannot be minimized; another witness may do
    }
    if (!witness || nodes < witnessNodes) {
      witness = std::move(f);
      witnessNodes = nodes;
    }
  }
  TriageRecord row;
  row.signatureId = signatureId;
  row.updatedAt = unixNow();
  if (!witness) {
    row.status = "failed";
    row.finalSignature = "{}";
    row.data = json{{"error", "no finding with a readable program has this signature"}}.dump();
    store_.saveTriage(row);
    return row;
  }
  row.findingId = witness->id;
  log_(fmt::format("triage {}: finding {} ({}, {} nodes)", signatureId, witness->id, witness->verdict, witnessNodes));

  json result = json::parse(witness->result, nullptr, false);
  TestSettings s = settings_.test;
  if (result.is_object()) {
    if (result.contains("seed") && result["seed"].is_number_unsigned()) s.seed = result["seed"].get<uint64_t>();
    if (result.contains("threads") && result["threads"].is_number_integer()) s.threads = result["threads"].get<int>();
  }
  MinimizeCase start;
  start.graph = gen::Graph::fromJson(json::parse(witness->programJson), "finding");
  auto [compile, backward] = findingCompile(json::parse(witness->config, nullptr, false));
  start.compile = compile;
  start.backward = backward;

  // Numeric bugs already minimized are tried first: a witness that reduces to one of them is that bug.
  std::vector<std::vector<std::string>> hints;
  std::vector<std::string> hintIds;
  Signature raw = oracles::signatureFromJson(json::parse(witness->signature));
  if (raw.symptom == "numeric-divergence")
    for (const auto& other : store_.triageRecords()) {
      if (other.status != "done") continue;
      json sig = json::parse(other.finalSignature, nullptr, false);
      if (!sig.is_object() || sig.value("symptom", "") != "numeric-divergence") continue;
      std::vector<std::string> ops = sig.value("ops", std::vector<std::string>{});
      if (std::find(hints.begin(), hints.end(), ops) == hints.end()) {
        hints.push_back(ops);
        hintIds.push_back(other.finalSignatureId);
      }
    }

  try {
    TriagedCase t = triageCase(start, s, hints);
    row.status = t.status;
    row.finalSignatureId = t.signature.id();
    row.finalSignature = oracles::toJson(t.signature).dump();
    row.data = toJson(t).dump();
  } catch (const JobCancelled&) {
    throw;
  } catch (const WorkerStartError&) {
    throw;
  } catch (const DiskFullError&) {
    throw;
  } catch (const std::exception& e) {
    row.status = "failed";
    row.finalSignatureId = signatureId;
    row.finalSignature = witness->signature;
    row.data = json{{"error", e.what()}}.dump();
    log_(fmt::format("triage {} failed: {}", signatureId, e.what()));
  }
  row.updatedAt = unixNow();
  store_.saveTriage(row);
  return row;
}

std::string Triage::collectEnv() {
  const std::string key = "collect_env:" + settings_.torchGit;
  if (auto cached = store_.meta(key)) return *cached;
  if (!tester_) return "";
  fs::create_directories(scratch_);
  fs::path file = scratch_ / "collect_env.py";
  writeFileAtomically(file, "from torch.utils import collect_env\ncollect_env.main()\n");
  TestSettings s = settings_.test;
  s.limits.timeoutSeconds = std::max(s.limits.timeoutSeconds, 120.0);
  oracles::RunResult r = tester_->runScript(file, s);
  std::error_code ec;
  fs::remove(file, ec);
  if (!r.jobDir.empty()) fs::remove_all(r.jobDir, ec);
  if (!r.ok() || r.stdoutTail.empty()) return "";
  store_.setMeta(key, r.stdoutTail);
  return r.stdoutTail;
}

std::vector<oracles::BugReport> Triage::writeReports() {
  std::vector<FindingRecord> findings = store_.findings();
  std::map<std::string, TriageRecord> rows;
  for (auto& r : store_.triageRecords()) rows[r.signatureId] = std::move(r);

  std::vector<oracles::DedupInput> inputs;
  std::map<int64_t, const FindingRecord*> byId;
  for (const auto& f : findings) {
    byId[f.id] = &f;
    oracles::DedupInput in;
    in.findingId = f.id;
    in.foundAt = f.foundAt;
    auto row = rows.find(f.signatureId);
    try {
      if (row != rows.end() && row->second.status != "failed") {
        in.signature = oracles::signatureFromJson(json::parse(row->second.finalSignature));
        in.witnessSize = json::parse(row->second.data).value("repro", json::object()).value("nodes", 0);
      } else {
        in.signature = oracles::signatureFromJson(json::parse(f.signature));
        in.witnessSize = static_cast<int64_t>(json::parse(f.programJson).value("nodes", json::array()).size());
      }
    } catch (const std::exception& e) {
      log_(fmt::format("finding {}: unreadable signature or program, left out of the reports: {}", f.id, e.what()));
      continue;
    }
    inputs.push_back(std::move(in));
  }
  std::vector<oracles::BugGroup> groups = oracles::Deduper{}.group(inputs);

  std::string env = collectEnv();
  std::vector<oracles::BugReport> bugs;
  std::set<std::string> reportIds;
  std::map<int64_t, std::string> rawSignatureOf;  // finding id -> its exact signature id (the triage row's key)
  for (const auto& f : findings) rawSignatureOf[f.id] = f.signatureId;
  for (const auto& g : groups) {
    // The group's signatures are the final (minimized) ones; triage rows are keyed by the raw ones.
    std::vector<std::string> rawIds;
    for (int64_t id : g.findingIds)
      if (std::find(rawIds.begin(), rawIds.end(), rawSignatureOf[id]) == rawIds.end()) rawIds.push_back(rawSignatureOf[id]);
    // The representative triaged case: a fully triaged one ("done": ablated and verified) before a
    // duplicate or an unreproducible one, then the smallest minimized program.
    const TriageRecord* best = nullptr;
    std::pair<int, int> bestRank;
    for (const auto& id : rawIds) {
      auto it = rows.find(id);
      if (it == rows.end() || it->second.status == "failed") continue;
      int nodes = json::parse(it->second.data).value("repro", json::object()).value("nodes", 0);
      std::pair<int, int> rank{it->second.status == "done" ? 0 : 1, nodes};
      if (!best || rank < bestRank) {
        bestRank = rank;
        best = &it->second;
      }
    }
    if (!best) continue;  // not triaged yet: the campaign's first-witness folder stands in
    TriagedCase t = triagedCaseFromJson(json::parse(best->data));
    oracles::BugReport b = bugReportOf(t);
    b.id = g.id;
    b.hits = g.hits;
    b.firstSeen = g.firstSeen;
    b.lastSeen = g.lastSeen;
    b.rawSignatureIds = rawIds;
    b.findingIds = g.findingIds;
    b.mergedBy = g.mergedBy;
    if (auto w = byId.find(best->findingId); w != byId.end()) {
      b.originalConfig = json::parse(w->second->config, nullptr, false);
      b.originalProgramPy = w->second->programPy;
    }
    b.torchVersion = settings_.torchVersion;
    b.torchGit = settings_.torchGit;
    b.collectEnv = env;
    b.campaign = fs::absolute(root_).string();
    oracles::writeReportFolder(b, oracles::renderRepro(b.repro, b.title), root_ / "crashes" / b.id);
    reportIds.insert(b.id);
    bugs.push_back(std::move(b));
  }
  // Folders that no longer stand for a bug: a first witness whose signature is now part of a report,
  // and a report of an earlier pass whose findings a new grouping put under another id. Untriaged
  // first witnesses and anything tcfuzz did not write stay.
  if (fs::is_directory(root_ / "crashes"))
    for (const auto& entry : fs::directory_iterator(root_ / "crashes")) {
      std::string name = entry.path().filename().string();
      if (!entry.is_directory() || reportIds.count(name)) continue;
      auto row = rows.find(name);
      bool triagedWitness = row != rows.end() && row->second.status != "failed";
      json meta = json::object();
      if (std::ifstream in(entry.path() / "meta.json"); in) meta = json::parse(in, nullptr, false);
      bool staleReport = meta.is_object() && meta.contains("raw_signature_ids");
      if (triagedWitness || staleReport) {
        std::error_code ec;
        fs::remove_all(entry.path(), ec);
        if (ec) log_(fmt::format("cannot remove the superseded folder {}: {}", entry.path().string(), ec.message()));
      }
    }

  std::vector<std::pair<std::string, std::string>> stats;
  if (std::ifstream in(root_ / "fuzzer_stats"); in) {
    std::string line;
    while (std::getline(in, line)) {
      auto colon = line.find(" : ");
      if (colon == std::string::npos) continue;
      std::string k = line.substr(0, colon), v = line.substr(colon + 3);
      k.erase(k.find_last_not_of(' ') + 1);
      stats.emplace_back(k, v);
    }
  }
  stats.emplace_back("raw_findings", std::to_string(findings.size()));
  stats.emplace_back("unique_bugs", std::to_string(bugs.size()));
  oracles::writeIndex(bugs, stats, root_);
  return bugs;
}

std::string TriageSummary::describe(const fs::path& root) const {
  return fmt::format("triaged {} signature(s) ({} unreproducible, {} failed{}); {} unique bug(s) from {} raw "
                     "finding(s)\nindex: {}\n",
                     triaged, unreproducible, failed, pending ? fmt::format(", {} left for later", pending) : "", bugs,
                     rawFindings, (root / "index.md").string());
}

TriageSummary Triage::run(const std::atomic<bool>* stop) {
  TriageSummary summary;
  std::vector<std::string> waiting = pending();
  for (size_t i = 0; i < waiting.size(); ++i) {
    if (stop && *stop) {
      summary.pending = static_cast<int>(waiting.size() - i);
      break;
    }
    TriageRecord row;
    try {
      row = triageSignature(waiting[i]);
    } catch (const JobCancelled&) {
      summary.pending = static_cast<int>(waiting.size() - i);
      break;
    }
    if (row.status == "done" || row.status == "duplicate") summary.triaged++;
    else if (row.status == "unreproducible") summary.unreproducible++;
    else summary.failed++;
  }
  std::vector<oracles::BugReport> bugs = writeReports();
  summary.bugs = static_cast<int>(bugs.size());
  for (const auto& b : bugs) summary.rawFindings += static_cast<int>(b.hits);
  return summary;
}

}  // namespace tcfuzz
