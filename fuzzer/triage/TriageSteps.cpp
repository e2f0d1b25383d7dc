#include "fuzzer/triage/TriageSteps.h"

#include <algorithm>
#include <map>

#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fuzzer/triage/StructuredTrace.h"
#include "oracles/reporter/Ablation.h"
#include "oracles/reporter/repro/ReproWriter.h"
#include "oracles/reporter/repro/ShortReproWriter.h"
#include "oracles/judge/Comparator.h"

namespace tcfuzz {

using nlohmann::json;
using oracles::MinimizeCase;
using oracles::Signature;

namespace {

// --- What the steps read from a test and a case ---------------------------------------------------

/// Whether a test of a candidate shows the bug of `baseline`: for numeric divergences the divergence
/// from fp64 still reproduces (the accuracy minifier's rule); otherwise the signature is unchanged.
bool showsBug(const Signature& baseline, const ProgramTestResult& r) {
  if (oracles::isWrongResultSymptom(baseline.symptom)) return toString(r.verdict.verdict) == baseline.symptom;
  if (!oracles::isFinding(r.verdict.verdict)) return false;
  return oracles::signatureOf(r.runs, r.verdict, {}).key() == baseline.key();
}

/// The first line of `text`, cut to `limit` characters with "..." when longer.
std::string firstLine(const std::string& text, size_t limit) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > limit) line = line.substr(0, limit - 3) + "...";
  return line;
}

/// The failing run's exception message, as raised (not normalized), from its headline on.
std::string rawMessage(const ProgramTestResult& r) {
  const oracles::RunResult& failing = r.runs.compiled.ok() ? r.runs.eager : r.runs.compiled;
  if (failing.exception) return oracles::messageHeadline(failing.exception->message);
  return failing.summary();
}

/// The graph's distinct ops in node order: "sigmoid, cumsum", at most `limit` then "...".
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

/// "backend=inductor dynamic=true backward".
std::string configText(const MinimizeCase& c) {
  std::string text = c.compile.describe();
  if (c.backward) text += " backward";
  return text;
}

/// The title's tag for a component: "[dynamo]", "[aot_autograd]", "[inductor]", "[export]", "[aoti]",
/// "[<backend>]", "[torch.compile]".
std::string componentTag(const std::string& component) {
  if (component.rfind("dynamo", 0) == 0) return "[dynamo]";
  if (component.rfind("torch.export", 0) == 0) return "[export]";
  if (component.rfind("AOTInductor", 0) == 0) return "[aoti]";
  if (component.rfind("aot_autograd", 0) == 0) return "[aot_autograd]";
  if (component.rfind("inductor", 0) == 0) return "[inductor]";
  if (component.rfind("backend ", 0) == 0) return "[" + firstLine(component.substr(8), 40) + "]";
  return "[torch.compile]";
}

/// "wrong-result", "accepts-invalid", "hang" or "crash".
std::string severityOf(const Signature& s) {
  if (s.symptom == "signed-zero" || s.symptom == "denormal-flush" || s.symptom == "recompile-storm") return "low";
  if (oracles::isWrongResultSymptom(s.symptom)) return "wrong-result";
  if (s.symptom == "status-mismatch") return "accepts-invalid";
  if (s.kind == "timeout") return "hang";
  return "crash";
}

// --- When a step applies --------------------------------------------------------------------------

bool always(const CaseInTriage&, const TriageSettings&) { return true; }

/// The case still shows its finding and is no known bug's duplicate.
bool isDone(const CaseInTriage& c, const TriageSettings&) { return c.result.status == "done"; }

/// Minimizing is on, and the finding is not one whose every test costs the whole time or memory limit.
bool canMinimize(const CaseInTriage& c, const TriageSettings& s) {
  const Signature& baseline = c.result.baseline;
  return isDone(c, s) && s.minimize && baseline.kind != "timeout" && baseline.kind != "oom";
}

bool verifying(const CaseInTriage& c, const TriageSettings& s) { return isDone(c, s) && s.verify; }

// --- The steps ------------------------------------------------------------------------------------

void replay(CaseInTriage& c, TriageTools& tools) {
  TriagedCase& t = c.result;
  t.originalNodes = static_cast<int>(c.start.graph.nodes.size());
  c.bestRun = tools.cases.test(c.start, c.settings, "replay");
  c.startRun = c.bestRun;
  t.baseline = oracles::signatureOf(c.bestRun.runs, c.bestRun.verdict, oracles::opsOf(c.start.graph));
  if (!oracles::isFinding(c.bestRun.verdict.verdict)) {
    t.status = "unreproducible";
    tools.log(fmt::format("replay gives {} ({}): not minimized", t.baseline.symptom, c.bestRun.verdict.reason));
  }
}

/// A minimization case's identity: its IR, compile configuration and backward flag.
std::string caseKey(const MinimizeCase& m) {
  return m.graph.contentHash() + m.compile.toJson().dump() + (m.backward ? "b" : "");
}

void minimize(CaseInTriage& c, TriageTools& tools) {
  TriagedCase& t = c.result;
  oracles::MinimizerPolicy policy = tools.settings.minimizer;
  policy.opHints = c.opHints;
  policy.seed = c.settings.seed;
  oracles::Minimizer minimizer(tools.catalog, policy);
  std::map<std::string, ProgramTestResult> accepted;  // IR hash + config -> its test
  auto key = caseKey;
  TestSettings settings = c.settings;
  settings.coldCache = c.coldCandidates;
  oracles::CandidateTest test = [&](const std::vector<MinimizeCase>& batch) {
    std::vector<ProgramTestResult> results = tools.cases.testAll(batch, settings, "min");
    std::vector<bool> verdicts;
    for (size_t i = 0; i < batch.size(); ++i) {
      bool ok = showsBug(t.baseline, results[i]);
      verdicts.push_back(ok);
      if (ok) accepted[key(batch[i])] = results[i];
    }
    return verdicts;
  };
  t.minimization = minimizer.minimize(c.start, test);
  c.best = t.minimization.best;
  if (t.minimization.acceptedByPass.count("hinted-ops")) t.status = "duplicate";
  if (auto it = accepted.find(key(c.best)); it != accepted.end()) c.bestRun = it->second;
  tools.log(fmt::format("minimized {} -> {} nodes in {} candidates", c.start.graph.nodes.size(),
                        c.best.graph.nodes.size(), t.minimization.candidatesTested));
}

/// A minimized case the campaign's warm cache decided: minimization tests candidates in fresh processes that
/// share the campaign's Inductor cache, so a candidate can show the bug only through a graph or kernel an
/// earlier candidate left there. A maintainer's run starts cold: the minimized case is tested once more with a
/// cold cache, and when it does not show the bug there, minimization starts over from the original case with a
/// cold cache for every candidate. A cache-only finding (its bug needs the warm cache) is left as it is.
bool coldChecking(const CaseInTriage& c, const TriageSettings& s) {
  return canMinimize(c, s) && !c.result.baseline.kind.starts_with("cache-only");
}

void coldCheck(CaseInTriage& c, TriageTools& tools) {
  TriagedCase& t = c.result;
  if (caseKey(c.best) == caseKey(c.start)) return;  // the campaign confirmed it cold
  TestSettings cold = c.settings;
  cold.coldCache = true;
  ProgramTestResult r = tools.cases.test(c.best, cold, "cold");
  if (showsBug(t.baseline, r)) {
    c.bestRun = std::move(r);
    return;
  }
  std::string note = fmt::format("cold-cache: the {}-node minimized case showed the bug only with the campaign's warm "
                                 "cache ({} with a cold one); minimized again with a cold cache per candidate",
                                 c.best.graph.nodes.size(), oracles::toString(r.verdict.verdict));
  tools.log(note);
  c.coldCandidates = true;
  c.best = c.start;
  c.bestRun = c.startRun;  // kept when no candidate is accepted
  minimize(c, tools);
  t.minimization.log.insert(t.minimization.log.begin(), note);
}

void recordRepro(CaseInTriage& c, TriageTools& tools) {
  TriagedCase& t = c.result;
  const MinimizeCase& best = c.best;
  t.minimization.best = best;
  t.signature = t.status != "unreproducible"
                    ? oracles::signatureOf(c.bestRun.runs, c.bestRun.verdict, oracles::opsOf(best.graph))
                    : t.baseline;
  oracles::ReproCase& repro = t.repro;
  repro.programPy = tools.cases.emitter().emit(best.graph);
  repro.programIr = best.graph.toJson();
  repro.nodes = static_cast<int>(best.graph.nodes.size());
  repro.compile = best.compile;
  repro.backward = best.backward;
  repro.seed = c.settings.seed;
  repro.threads = c.settings.threads;
  repro.device = c.settings.device;
  for (const auto& p : c.settings.plugins) repro.plugins.push_back(p.string());
  repro.verdict = t.signature.symptom;
  if (c.bestRun.verdict.comparison)
    for (const auto& l : c.bestRun.verdict.comparison->leaves)
      if (!l.passed) repro.divergingLeaves.push_back(static_cast<int>(l.leaf));
  repro.exactBackend = c.bestRun.runs.exactBackend;
  repro.observed = toJson(c.bestRun);
}

void ablate(CaseInTriage& c, TriageTools& tools) {
  TriagedCase& t = c.result;
  const std::string& backend = c.best.compile.backend;
  if (!tools.settings.ablate) {
    t.component = oracles::componentOfBackend(backend);
    return;
  }
  std::vector<oracles::AblationVariant> variants = oracles::ablationVariants(c.best);
  std::vector<MinimizeCase> reruns;
  for (const auto& v : variants) reruns.push_back(v.rerun);
  std::vector<ProgramTestResult> results = tools.cases.testAll(reruns, c.settings, "ablate");
  // A CUDA bug's case once more on the CPU, under its own configuration: the bug is CUDA's alone, or not.
  if (c.settings.device.starts_with("cuda")) {
    TestSettings onCpu = c.settings;
    onCpu.device = "cpu";
    onCpu.gpu.clear();
    variants.push_back({std::string(oracles::kCpuVariant), c.best});
    results.push_back(tools.cases.test(c.best, onCpu, "ablate-cpu"));
  }
  for (size_t i = 0; i < variants.size(); ++i)
    t.ablation.push_back(oracles::ablationRow(variants[i], std::string(oracles::toString(results[i].verdict.verdict)),
                                              showsBug(t.baseline, results[i]),
                                              firstLine(results[i].verdict.reason, 240)));
  // A crash outside the backward phase shows before any backward runs (a divergence may sit in a leaf read
  // after backward, so it keeps "backward").
  bool beforeBackward = t.baseline.kind != "numeric" && !t.baseline.phase.empty() && t.baseline.phase != "backward";
  t.component = oracles::componentAtFault(t.ablation, backend, beforeBackward,
                                         c.best.compile.trains() ? c.best.compile.training.compiled : "");
}

void bisect(CaseInTriage& c, TriageTools& tools) {
  TriagedCase& t = c.result;
  if (!tools.settings.bisect) {
    t.bisect.note = "not run (--no-bisect)";
  } else if (c.best.compile.exports()) {
    t.bisect.note = "not run: the bisector splits torch.compile's Inductor, not an export entry point";
  } else if (c.best.compile.trains()) {
    t.bisect.note = "not run: the bisector judges forward calls, not training steps";
  } else if (t.component.rfind("inductor", 0) != 0 || !c.best.compile.usesInductor()) {
    t.bisect.note = "not an Inductor bug: the bisector only splits Inductor";
  } else {
    json spec{{"check", oracles::isWrongResultSymptom(t.signature.symptom) ? "numeric" : "crash"},
              {"leaves", t.repro.divergingLeaves}};
    t.bisect = bisectOutcomeOf(tools.cases.bisect(c.best, c.settings, spec));
  }
}

/// What a wrong result's title says happened, by its symptom; nullopt for other symptoms.
std::optional<std::string_view> wrongResultTitle(std::string_view symptom) {
  static constexpr std::pair<std::string_view, std::string_view> kTitles[] = {
      {"numeric-divergence", "compiled result is further from float64 than eager"},
      {"mutation-divergence", "compiled forward leaves an input, buffer or parameter different from eager"},
      {"second-call-divergence", "compiled module is wrong on a later call (first call agrees)"},
      {"aliasing-divergence", "compiled output aliases other storage than eager's (a view became a copy, or the reverse)"},
      {"signed-zero", "compiled result has zeros of the wrong sign (eager and fp64 agree)"},
      {"denormal-flush", "compiled result flushes subnormals to zero (eager and fp64 keep them)"},
  };
  for (auto [name, what] : kTitles)
    if (name == symptom) return what;
  return std::nullopt;
}

/// The later call a second-call divergence's signature names (its phase: the failing leaf's role), in
/// words; "" for any other signature or an unknown role.
std::string laterCallOf(const oracles::Signature& sig) {
  static constexpr std::pair<std::string_view, std::string_view> kCalls[] = {
      {"second-call", "the same inputs again"},
      {"fresh-inputs", "fresh inputs of the same shapes"},
      {"resized", "inputs of another size (dynamic shapes)"},
      {"moved", "inputs at another storage offset"},
      {"schedule", "the program's schedule: a call after its Python state changed"},
  };
  if (sig.symptom != "second-call-divergence") return "";
  for (auto [role, words] : kCalls)
    if (role == sig.phase) return std::string(words);
  return "";
}

void title(CaseInTriage& c, TriageTools&) {
  TriagedCase& t = c.result;
  const MinimizeCase& best = c.best;
  t.severity = severityOf(t.signature);
  std::string tag = componentTag(t.component);
  std::string where = t.signature.phase.empty() ? "" : " in " + t.signature.phase;
  if (auto what = wrongResultTitle(t.signature.symptom)) {
    std::string said(*what);
    if (auto call = laterCallOf(t.signature); !call.empty())
      said = fmt::format("compiled module is wrong on {} (first call agrees)", call);
    else if (best.compile.trains())  // the leaves are a training loop's: its losses, parameters and optimizer state
      said = fmt::format("compiled training steps ({} {}, {} compiled) diverge from eager's further than float64 allows",
                         best.compile.training.steps, best.compile.training.optimizer, best.compile.training.compiled);
    else if (t.signature.symptom == "mutation-divergence" && t.signature.phase == "python-state")
      said = "compiled forward leaves the module's Python state (attributes, globals, containers) different from eager";
    else if (t.signature.symptom == "mutation-divergence" && best.backward)  // the state is read after backward
      said = "compiled forward and backward leave an input, buffer or parameter different from eager (read after backward)";
    t.title = fmt::format("{} {}: {} ({})", tag, said, uniqueOps(best.graph), configText(best));
  } else if (t.signature.symptom == "recompile-storm") {
    const std::string* failure = oracles::unstableGuard(c.bestRun.runs.compiled.repeatRecompiles);
    std::string guard = failure ? oracles::guardOfFailure(*failure) : t.signature.normalizedMessage;
    t.title = fmt::format("{} compiled module recompiles when called again with the same inputs and state (guard "
                          "failure: {}): {} ({})",
                          tag, firstLine(guard, 90), uniqueOps(best.graph), configText(best));
  } else if (t.signature.symptom == "status-mismatch") {
    t.title = fmt::format("{} compiled accepts what eager rejects ({}): {} ({})", tag,
                          firstLine(rawMessage(c.bestRun), 80), uniqueOps(best.graph), configText(best));
  } else if (t.signature.raised()) {
    t.title = fmt::format("{} {}{}: {} ({}; {})", tag, t.signature.exceptionType, where,
                          firstLine(rawMessage(c.bestRun), 90), uniqueOps(best.graph), configText(best));
  } else {
    t.title = fmt::format("{} compiled run ends with {}{} ({}; {})", tag, t.signature.kind, where,
                          uniqueOps(best.graph), configText(best));
  }
}

bool tracing(const CaseInTriage& c, const TriageSettings& s) { return isDone(c, s) && s.trace; }

/// Whether a run can write a structured trace for tlparse to render; else why not.
std::string traceUnavailable(const TriageSettings& s) {
  if (!s.structuredTrace) return fmt::format("torch {} writes no structured trace logs", s.torch.version);
  if (s.tlparse.empty()) return "tlparse is not installed (scripts/setup installs it into .venv)";
  return "";
}

/// Where a case's trace log and its rendering go, relative to the campaign's folder.
std::filesystem::path traceFolder(const CaseInTriage& c) { return std::filesystem::path("traces") / c.result.signature.id(); }

/// Runs short_repro.py (with its plugin companions) in a clean process: does it reproduce the bug? When the
/// trace step will follow, the run is traced (TORCH_TRACE): a run that reproduces is the failing compile the
/// trace step renders, so the script runs once, not twice.
void verifyShortRepro(CaseInTriage& c, TriageTools& tools) {
  TriagedCase& t = c.result;
  std::string text;
  try {
    text = oracles::renderShortRepro(t.repro, t.title, oracles::ComparatorOptions{});
  } catch (const std::invalid_argument& e) {
    tools.log(fmt::format("short_repro.py not written: {}", e.what()));
    t.shortReproVerified.reset();
    return;
  }
  std::vector<std::filesystem::path> companions(t.repro.plugins.begin(), t.repro.plugins.end());
  std::filesystem::path log;
  if (tracing(c, tools.settings) && traceUnavailable(tools.settings).empty())
    log = tools.campaignRoot / traceFolder(c) / "log";
  oracles::RunResult r =
      tools.cases.runScript(tools.cases.numberedFile("short_repro"), text, c.settings, companions, log);
  t.shortReproVerified = oracles::shortReproReproduces(t.repro, t.signature, r);
  if (!log.empty() && *t.shortReproVerified && std::filesystem::exists(log)) c.shortReproTrace = log;
  tools.log(fmt::format("short_repro.py {}: {}", *t.shortReproVerified ? "verified" : "NOT verified", r.summary()));
}

void verify(CaseInTriage& c, TriageTools& tools) {
  TriagedCase& t = c.result;
  oracles::RunResult r = tools.cases.runScript(tools.cases.numberedFile("repro"),
                                               oracles::renderRepro(t.repro, t.title), c.settings);
  std::string printed = oracles::reproVerdict(r.stdoutTail);
  if (t.signature.kind.rfind("signal", 0) == 0) {
    t.reproVerified = r.status == oracles::RunStatus::Signal && r.signal != 0;
  } else if (t.signature.kind == "timeout") {
    t.reproVerified = r.status == oracles::RunStatus::Timeout;
  } else {
    t.reproVerified = printed == t.repro.verdict && r.exitCode.value_or(-1) == 1;
  }
  std::string out = r.stdoutTail;
  if (out.size() > 3000) out = "..." + out.substr(out.size() - 3000);
  t.reproOutput = out.empty() ? r.summary() : out;
  tools.log(fmt::format("repro.py {}: printed '{}'", *t.reproVerified ? "verified" : "NOT verified", printed));
  verifyShortRepro(c, tools);
}

/// The failing compile with TORCH_TRACE: short_repro.py's verifying run when it reproduced (the smallest
/// script that compiles the bug), else short_repro.py or repro.py once more; tlparse renders the log into
/// traces/<id>/tlparse.
void trace(CaseInTriage& c, TriageTools& tools) {
  TriagedCase& t = c.result;
  oracles::TraceOutcome& out = t.trace;
  out = {};
  out.note = traceUnavailable(tools.settings);
  if (!out.note.empty()) return;
  std::filesystem::path relative = traceFolder(c);
  std::filesystem::path folder = tools.campaignRoot / relative;
  std::string ran = "short_repro.py's verifying run";
  if (!c.shortReproTrace.empty()) {
    out.script = "short_repro.py";
  } else {
    std::string text;
    std::vector<std::filesystem::path> companions;
    if (t.shortReproVerified.value_or(false)) {
      text = oracles::renderShortRepro(t.repro, t.title, oracles::ComparatorOptions{});
      companions.assign(t.repro.plugins.begin(), t.repro.plugins.end());
      out.script = "short_repro.py";
    } else {
      text = oracles::renderRepro(t.repro, t.title);
      out.script = "repro.py";
    }
    ran = tools.cases.runScript(tools.cases.numberedFile("trace"), text, c.settings, companions, folder / "log")
              .summary();
  }
  out.note = renderTrace(tools.settings.tlparse, folder / "log", folder / "tlparse");
  tools.settings.secrets.maskFilesUnder(folder);  // the log and its rendering quote the program's exceptions
  out.rendered = out.note.empty();
  if (out.rendered) out.dir = (relative / "tlparse").string();
  tools.log(out.rendered ? fmt::format("tlparse rendered the trace of {} into {}", out.script, out.dir)
                         : fmt::format("no tlparse report: {} ({})", out.note, ran));
}

constexpr TriageStep kSteps[] = {
    {"replay", always, replay},    {"minimize", canMinimize, minimize}, {"cold-check", coldChecking, coldCheck},
    {"repro", always, recordRepro},
    {"ablate", isDone, ablate},    {"bisect", isDone, bisect},          {"title", isDone, title},
    {"verify", verifying, verify}, {"trace", tracing, trace},
};

}  // namespace

oracles::BisectOutcome bisectOutcomeOf(const oracles::RunResult& r) {
  oracles::BisectOutcome out;
  const json& b = r.bisect;
  if (!r.ok()) {
    out.note = "the bisector failed: " + r.summary();
  } else if (!b.is_object() || !b.value("available", false)) {
    out.note = "torch._inductor.compiler_bisector is not available in this torch";
  } else if (!b.value("found", false)) {
    out.ran = true;
    out.note = "the bisector found no failing subsystem (the failure did not reproduce under it)";
  } else {
    // The bisector names no subsystem (None) when the first failing backend is not split further.
    auto text = [&](const char* key) {
      return b.contains(key) && b[key].is_string() ? b[key].get<std::string>() : std::string();
    };
    out.ran = true;
    out.backend = text("backend");
    out.subsystem = text("subsystem");
    out.bisectNumber =
        b.contains("bisect_number") && b["bisect_number"].is_number_integer() ? b["bisect_number"].get<int64_t>() : -1;
    out.debugInfo = text("debug_info");
  }
  return out;
}

std::span<const TriageStep> triageSteps() { return kSteps; }

void runTriageSteps(CaseInTriage& c, TriageTools& tools) {
  for (const TriageStep& step : triageSteps())
    if (step.applies(c, tools.settings)) step.run(c, tools);
}

}  // namespace tcfuzz
