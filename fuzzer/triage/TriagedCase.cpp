#include "fuzzer/triage/TriagedCase.h"

#include <map>

namespace tcfuzz {

using nlohmann::json;

namespace {

json toJson(const oracles::ReproCase& r) {
  return {{"program_py", r.programPy}, {"program_ir", r.programIr},   {"nodes", r.nodes},
          {"compile", r.compile.toJson()}, {"backward", r.backward}, {"seed", r.seed},
          {"threads", r.threads},      {"device", r.device},          {"plugins", r.plugins},
          {"verdict", r.verdict},      {"diverging_leaves", r.divergingLeaves}, {"exact_backend", r.exactBackend},
          {"observed", r.observed}};
}

oracles::ReproCase reproFromJson(const json& j) {
  oracles::ReproCase r;
  r.programPy = j.value("program_py", "");
  r.programIr = j.value("program_ir", json::object());
  r.nodes = j.value("nodes", 0);
  r.compile = oracles::CompileConfig::fromJson(j.value("compile", json::object()));
  r.backward = j.value("backward", false);
  r.seed = j.value("seed", uint64_t{0});
  r.threads = j.value("threads", 0);
  r.device = j.value("device", "cpu");
  r.plugins = j.value("plugins", std::vector<std::string>{});
  r.verdict = j.value("verdict", "");
  r.divergingLeaves = j.value("diverging_leaves", std::vector<int>{});
  // A record from before the judge's decision was kept: backend="eager" was then always judged bit for bit.
  r.exactBackend = j.value("exact_backend", r.compile.backend == "eager");
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

}  // namespace

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
          {"short_repro_verified", t.shortReproVerified ? json(*t.shortReproVerified) : json()},
          {"trace",
           {{"rendered", t.trace.rendered}, {"dir", t.trace.dir}, {"script", t.trace.script}, {"note", t.trace.note}}},
          {"original_nodes", t.originalNodes}};
}

TriagedCase triagedCaseFromJson(const json& j) {
  TriagedCase t;
  t.status = j.value("status", "done");
  auto signature = [&](const char* key, oracles::Signature& into) {  // a default (empty) signature was stored as such
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
  if (j.contains("short_repro_verified") && j["short_repro_verified"].is_boolean())
    t.shortReproVerified = j["short_repro_verified"].get<bool>();
  const json trace = j.value("trace", json::object());
  t.trace = {trace.value("rendered", false), trace.value("dir", ""), trace.value("script", ""), trace.value("note", "")};
  t.originalNodes = j.value("original_nodes", 0);
  return t;
}

oracles::BugReport bugReportOf(const TriagedCase& t, const std::filesystem::path& campaignRoot) {
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
  b.shortReproVerified = t.shortReproVerified;
  b.trace = t.trace;
  if (!b.trace.dir.empty()) b.trace.dir = (campaignRoot / b.trace.dir).string();
  return b;
}

}  // namespace tcfuzz
