#include "fuzzer/campaign/FeatureSet.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "oracles/judge/Verdict.h"

namespace tcfuzz {

int64_t countBucket(double count) {
  if (count <= 0) return 0;
  auto c = static_cast<int64_t>(std::llround(count));
  if (c <= 3) return c;
  if (c < 8) return 4;
  if (c < 16) return 8;
  if (c < 32) return 16;
  if (c < 128) return 32;
  return 128;
}

namespace {

void runStatus(std::vector<std::string>& out, const char* mode, const oracles::RunResult& r) {
  if (r.ok() || r.phase == oracles::kNotNeededPhase) return;  // an fp64 run not needed never ran
  std::string what = std::string(oracles::toString(r.status));
  if (r.exception) what += ":" + r.exception->type;
  if (r.status == oracles::RunStatus::Signal) what += ":" + r.signalName;
  out.push_back(fmt::format("status:{}={}@{}", mode, what, r.phase));
}

}  // namespace

bool isGraphFeature(const std::string& feature) { return feature.starts_with("op:"); }

std::vector<std::string> runFeatures(const gen::Graph& g, const SampledCompile& compile, const ProgramTestResult& result) {
  std::vector<std::string> out;
  for (const auto& n : g.nodes) {
    std::vector<std::string> dtypes;
    for (int in : n.inputs) dtypes.emplace_back(gen::dtypeName(g.typeOf(in).dtype));
    out.push_back(fmt::format("op:{}({})", n.op, fmt::join(dtypes, ",")));
  }
  const oracles::CompileConfig& c = compile.config;
  out.push_back("cfg:backend=" + c.backend);
  out.push_back("cfg:mode=" + (c.defaultMode() ? std::string(oracles::kDefaultModeName) : c.mode));
  out.push_back(fmt::format("cfg:dynamic={}", c.dynamic ? (*c.dynamic ? "true" : "false") : c.markDynamic ? "mark" : "auto"));
  if (c.fullgraph) out.push_back("cfg:fullgraph");
  if (compile.backward) out.push_back("cfg:backward");
  for (const auto& t : compile.templates) out.push_back("cfg:tpl=" + t);
  for (auto& [k, v] : c.inductorConfig.items()) out.push_back(fmt::format("cfg:inductor.{}={}", k, v.dump()));
  if (c.trains()) {  // the training loop's own choices, one feature each and one for the combination
    const oracles::TrainingLoop& t = c.training;
    std::string scheduler = t.scheduler.empty() ? "none" : t.scheduler;
    out.push_back("cfg:train.optimizer=" + t.optimizer);
    out.push_back("cfg:train.compiled=" + t.compiled);
    out.push_back("cfg:train.scheduler=" + scheduler);
    out.push_back(fmt::format("cfg:train={}/{}/{}/foreach={}/clip={}", t.optimizer, t.compiled, scheduler, t.foreach,
                              t.clipNorm > 0));
  }

  const auto& compiled = result.runs.compiled;
  if (compiled.compileFacts) {
    const auto& f = *compiled.compileFacts;
    out.push_back(fmt::format("fact:graphs={}", countBucket(f.graphCount)));
    out.push_back(fmt::format("fact:breaks={}", countBucket(f.graphBreaks)));
    for (const auto& [reason, n] : f.breakReasons) out.push_back("fact:break=" + reason.substr(0, 120));
    for (const auto& [name, v] : f.inductorCounters) out.push_back(fmt::format("fact:inductor.{}={}", name, countBucket(v)));
    for (const auto& [name, v] : f.inductorMetrics) out.push_back(fmt::format("fact:metric.{}={}", name, countBucket(v)));
    for (const auto& [name, v] : f.aotAutogradCounters) out.push_back(fmt::format("fact:aot.{}={}", name, countBucket(v)));
    // What Inductor did: which ops and decisions, not how often (kinds of kernels and fusions: bucketed counts).
    auto fact = [&out](std::string feature) {
      if (feature.size() > kMaxFeatureChars) feature.resize(kMaxFeatureChars);
      out.push_back(std::move(feature));
    };
    for (const auto& [name, n] : f.postGradOps) fact("fact:post_grad_op=" + name);
    for (const auto& [name, n] : f.lowerings) fact("fact:lowering=" + name);
    for (const auto& [name, n] : f.fallbacks) fact("fact:fallback=" + name);
    for (const auto& [name, n] : f.patterns) fact("fact:pattern=" + name);
    for (const auto& [name, n] : f.externKernels) fact("fact:extern=" + name);
    for (const auto& [kinds, n] : f.fusions) fact(fmt::format("fact:fusion={}={}", kinds, countBucket(n)));
    for (const auto& [kind, n] : f.kernelKinds) fact(fmt::format("fact:kernel={}={}", kind, countBucket(n)));
    if (f.recompiles > 0) fact(fmt::format("fact:recompiles={}", countBucket(f.recompiles)));
    for (const auto& [reason, n] : f.recompileReasons) fact("fact:recompile=" + reason);
    for (const auto& [name, v] : f.dynamoCounters) fact(fmt::format("fact:dynamo.{}={}", name, countBucket(v)));
  }
  // What an export entry captured: its program's ATen ops (torch.compile's facts are not reported there), one
  // namespace for every export entry, so that an op is new once, not once per entry.
  for (const auto& [op, n] : compiled.exportOps) {
    std::string feature = "fact:export_op=" + op;
    if (feature.size() > kMaxFeatureChars) feature.resize(kMaxFeatureChars);
    out.push_back(std::move(feature));
  }
  runStatus(out, "eager", result.runs.eager);
  runStatus(out, "compiled", result.runs.compiled);
  runStatus(out, "fp64", result.runs.fp64);
  out.push_back(fmt::format("verdict:{}", oracles::toString(result.verdict.verdict)));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> FeatureSet::novel(const std::vector<std::string>& features) const {
  std::vector<std::string> out;
  for (const auto& f : features)
    if (!seen_.count(f)) out.push_back(f);
  return out;
}

void FeatureSet::add(const std::vector<std::string>& features) { seen_.insert(features.begin(), features.end()); }

}  // namespace tcfuzz
