#include "fuzzer/campaign/CompileMatrix.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

namespace tcfuzz {

using nlohmann::json;

namespace {

InductorTemplate cpuTemplate(std::string name, json options, double weight = 1) {
  return {std::move(name), std::move(options), false, weight};
}
InductorTemplate cudaTemplate(std::string name, json options, double weight = 1) {
  return {std::move(name), std::move(options), true, weight};
}

template <class Map>
std::string drawKey(gen::Rng& rng, const Map& weights) {
  std::vector<std::string> keys;
  std::vector<double> w;
  for (const auto& [k, v] : weights) {
    keys.push_back(k);
    w.push_back(v);
  }
  return keys[rng.weighted(w)];
}

std::map<std::string, double> weightsFrom(const json& j, const std::string& key, const std::set<std::string>& allowed) {
  if (!j.is_object()) throw std::invalid_argument(fmt::format("compile matrix: '{}' must be an object of weights", key));
  std::map<std::string, double> out;
  for (auto& [k, v] : j.items()) {
    if (!allowed.empty() && !allowed.count(k))
      throw std::invalid_argument(fmt::format("compile matrix: '{}' has no choice '{}'", key, k));
    if (!v.is_number() || v.get<double>() < 0)
      throw std::invalid_argument(fmt::format("compile matrix: weight of {}.{} must be a number >= 0", key, k));
    out[k] = v.get<double>();
  }
  double total = 0;
  for (auto& [k, v] : out) total += v;
  if (total <= 0) throw std::invalid_argument(fmt::format("compile matrix: '{}' needs a positive weight", key));
  return out;
}

double shareFrom(const json& j, const std::string& key) {
  if (!j.is_number() || j.get<double>() < 0 || j.get<double>() > 1)
    throw std::invalid_argument(fmt::format("compile matrix: '{}' must be a share in [0, 1]", key));
  return j.get<double>();
}

}  // namespace

std::vector<InductorTemplate> CompileMatrix::defaultTemplates() {
  return {
      // From ../shared/seeds/003_* (the GraphNet templates), restricted to what the device can run.
      cpuTemplate("cpp_wrapper", {{"cpp_wrapper", true}}),
      cpuTemplate("freezing", {{"freezing", true}}),
      cpuTemplate("max_autotune", {{"max_autotune", true}, {"max_autotune_gemm", true}}, 0.5),
      cpuTemplate("aten_gemm", {{"max_autotune", true}, {"max_autotune_gemm_backends", "ATEN"}}, 0.5),
      cudaTemplate("coordinate_descent_tuning", {{"coordinate_descent_tuning", true}}),
      cudaTemplate("cudagraphs", {{"triton.cudagraphs", true}}),
      cudaTemplate("cutlass", {{"max_autotune", true}, {"max_autotune_gemm_backends", "CUTLASS"}}, 0.3),
      cudaTemplate("tma", {{"triton.enable_persistent_tma_matmul", true}, {"max_autotune", true}}, 0.3),
      cudaTemplate("combo_kernels", {{"combo_kernels", true}}),
      cudaTemplate("triton_gemm", {{"max_autotune", true}, {"max_autotune_gemm_backends", "TRITON"}}, 0.5),
      cudaTemplate("no_persistent_reductions", {{"triton.persistent_reductions", false}}),
      cudaTemplate("multi_kernel", {{"triton.multi_kernel", 1}}, 0.5),
      cudaTemplate("autotune_pointwise", {{"triton.autotune_pointwise", true}, {"triton.unique_kernel_names", true}}, 0.5),
      // Scheduler and lowering switches that change which code Inductor emits on any device.
      cpuTemplate("aggressive_fusion", {{"aggressive_fusion", true}, {"max_fusion_size", 256}}),
      cpuTemplate("no_pattern_matcher", {{"pattern_matcher", false}}),
      // Dynamo's switches for data-dependent sizes: .item() and ops like nonzero traced as unbacked sizes.
      cpuTemplate("capture_scalar_outputs", {{"dynamo.capture_scalar_outputs", true}}),
      cpuTemplate("capture_dynamic_output_shape_ops", {{"dynamo.capture_dynamic_output_shape_ops", true}}),
      cpuTemplate("capture_data_dependent", {{"dynamo.capture_scalar_outputs", true},
                                             {"dynamo.capture_dynamic_output_shape_ops", true}}),
      cpuTemplate("no_split_reductions", {{"split_reductions", false}}),
      cpuTemplate("permute_fusion", {{"permute_fusion", true}}),
      cpuTemplate("no_layout_optimization",
                  {{"layout_optimization", false}, {"shape_padding", false}, {"comprehensive_padding", false}}),
      cpuTemplate("no_loop_ordering", {{"loop_ordering_after_fusion", false}}),
      cpuTemplate("no_constant_folding", {{"joint_graph_constant_folding", false}}),
      cpuTemplate("emulate_precision_casts", {{"emulate_precision_casts", true}}),
      cpuTemplate("memory_planning", {{"memory_planning", true}}, 0.5),
      cpuTemplate("scalar_cpp", {{"cpp.simdlen", 1}}),
      cpuTemplate("cpp_dynamic_threads", {{"cpp.dynamic_threads", true}}, 0.5),
  };
}

CompileMatrix CompileMatrix::fromJson(const json& doc) {
  if (!doc.is_object()) throw std::invalid_argument("compile matrix must be a JSON object");
  CompileMatrix m;
  for (auto& [key, v] : doc.items()) {
    if (key == "backends") m.backends = weightsFrom(v, key, {});
    else if (key == "modes")
      m.modes = weightsFrom(v, key, {"default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"});
    else if (key == "dynamic") m.dynamic = weightsFrom(v, key, {"auto", "true", "false", "mark"});
    else if (key == "entries") m.entries = weightsFrom(v, key, {oracles::entryPointNames().begin(), oracles::entryPointNames().end()});
    else if (key == "export_strict_share") m.exportStrictShare = shareFrom(v, key);
    else if (key == "training_optimizers")
      m.trainingOptimizers = weightsFrom(v, key, {oracles::TrainingLoop::optimizerNames().begin(), oracles::TrainingLoop::optimizerNames().end()});
    else if (key == "training_compiled")
      m.trainingCompiled = weightsFrom(v, key, {oracles::TrainingLoop::compiledParts().begin(), oracles::TrainingLoop::compiledParts().end()});
    else if (key == "training_schedulers")
      m.trainingSchedulers = weightsFrom(v, key, {oracles::TrainingLoop::schedulerNames().begin(), oracles::TrainingLoop::schedulerNames().end()});
    else if (key == "max_training_steps") {
      if (!v.is_number_integer() || v.get<int>() < 1 || v.get<int>() > 8)
        throw std::invalid_argument("compile matrix: 'max_training_steps' must be an integer from 1 to 8");
      m.maxTrainingSteps = v.get<int>();
    } else if (key == "training_share") m.trainingShare = shareFrom(v, key);
    else if (key == "training_foreach_share") m.trainingForeachShare = shareFrom(v, key);
    else if (key == "training_clip_share") m.trainingClipShare = shareFrom(v, key);
    else if (key == "fullgraph_share") m.fullgraphShare = shareFrom(v, key);
    else if (key == "backward_share") m.backwardShare = shareFrom(v, key);
    else if (key == "template_share") m.templateShare = shareFrom(v, key);
    else if (key == "max_templates") {
      if (!v.is_number_integer() || v.get<int>() < 0)
        throw std::invalid_argument("compile matrix: 'max_templates' must be an integer >= 0");
      m.maxTemplates = v.get<int>();
    } else if (key == "templates") {
      if (!v.is_array()) throw std::invalid_argument("compile matrix: 'templates' must be an array");
      m.templates.clear();
      for (const auto& t : v) {
        if (!t.is_object() || !t.contains("name") || !t["name"].is_string() || !t.contains("options") ||
            !t["options"].is_object())
          throw std::invalid_argument("compile matrix: each template needs a string 'name' and an object 'options'");
        for (auto& [tk, tv] : t.items())
          if (tk != "name" && tk != "options" && tk != "needs_cuda" && tk != "weight")
            throw std::invalid_argument(fmt::format("compile matrix: template key '{}' is unknown", tk));
        InductorTemplate it{t["name"], t["options"], t.value("needs_cuda", false), t.value("weight", 1.0)};
        if (it.weight < 0) throw std::invalid_argument("compile matrix: template weight must be >= 0");
        m.templates.push_back(std::move(it));
      }
    } else {
      throw std::invalid_argument(fmt::format("compile matrix: unknown key '{}'", key));
    }
  }
  return m;
}

json CompileMatrix::toJson() const {
  json t = json::array();
  for (const auto& it : templates)
    t.push_back({{"name", it.name}, {"options", it.options}, {"needs_cuda", it.needsCuda}, {"weight", it.weight}});
  return {{"backends", backends},          {"modes", modes},
          {"dynamic", dynamic},            {"entries", entries},
          {"export_strict_share", exportStrictShare}, {"fullgraph_share", fullgraphShare},
          {"backward_share", backwardShare}, {"template_share", templateShare},
          {"max_templates", maxTemplates}, {"templates", t},
          {"training_share", trainingShare},
          {"training_optimizers", trainingOptimizers}, {"training_compiled", trainingCompiled},
          {"training_schedulers", trainingSchedulers}, {"max_training_steps", maxTrainingSteps},
          {"training_foreach_share", trainingForeachShare}, {"training_clip_share", trainingClipShare}};
}

std::vector<std::string> CompileMatrix::usableTemplates(const std::string& device) const {
  bool cuda = device.starts_with("cuda");
  std::vector<std::string> names;
  for (const auto& t : templates)
    if (t.weight > 0 && (cuda || !t.needsCuda)) names.push_back(t.name);
  return names;
}

bool CompileMatrix::disableTemplate(const std::string& name) {
  for (auto& t : templates)
    if (t.name == name) {
      t.weight = 0;
      return true;
    }
  return false;
}

std::vector<std::string> CompileMatrix::disableTemplatesLacking(const std::set<std::string>& options) {
  std::vector<std::string> notes;
  if (options.empty()) return notes;
  for (auto& t : templates) {
    if (t.weight <= 0) continue;
    for (const auto& [option, value] : t.options.items())
      if (!options.count(option)) {
        notes.push_back(fmt::format("template '{}' skipped: this torch has no option '{}'", t.name, option));
        t.weight = 0;
        break;
      }
  }
  return notes;
}

std::optional<std::string> CompileMatrix::disableTemplate(const std::string& name, const std::string& why) {
  for (auto& t : templates)
    if (t.name == name && t.weight > 0) {
      t.weight = 0;
      return fmt::format("template '{}' skipped: {}", name, why);
    }
  return std::nullopt;
}

CompileShares CompileMatrix::shares(const std::string& device) const {
  CompileShares s{backends, modes, entries, backwardShare, templateShare, {}};
  bool cuda = device.starts_with("cuda");
  for (const auto& t : templates)
    if (t.weight > 0 && (cuda || !t.needsCuda)) s.templates.emplace_back(t.name, t.weight);
  return s;
}

SampledCompile CompileMatrix::sample(gen::Rng& rng, const std::string& device, const PinnedCompile& pinned) const {
  return sample(rng, device, pinned, shares(device));
}

SampledCompile CompileMatrix::sample(gen::Rng& rng, const std::string& device, const PinnedCompile& pinned,
                                     const CompileShares& shares) const {
  SampledCompile s = sampleCompileArguments(rng, pinned, shares);
  oracles::CompileConfig& c = s.config;
  std::string entry = pinned.entry                                   ? *pinned.entry
                      : pinned.entryPinned() || shares.entries.empty() ? oracles::kCompileEntry
                                                                       : drawKey(rng, shares.entries);
  if (entry == oracles::kCompileEntry) return s;
  if (entry == oracles::kTrainEntry) {
    c.setEntry(entry);
    c.fullgraph = false;  // the compiled step may break its graph (clipping, a scheduler's lr)
    c.markDynamic = false;
    s.backward = false;   // the steps run their own backward
    // Inductor's freezing takes parameters for constants, which an optimizer step then changes: inference only, as
    // documented, so a template that sets it is left out (a --inductor-config the user gave stays).
    if (!pinned.inductorConfig && c.inductorConfig.contains("freezing")) {
      std::erase_if(s.templates, [&](const std::string& name) {
        auto t = std::find_if(templates.begin(), templates.end(), [&](const auto& it) { return it.name == name; });
        return t != templates.end() && t->options.contains("freezing");
      });
      c.inductorConfig.erase("freezing");
    }
    if (pinned.training) {
      c.training = *pinned.training;
    } else {
      c.training.optimizer = drawKey(rng, trainingOptimizers);
      c.training.compiled = drawKey(rng, trainingCompiled);
      std::string scheduler = drawKey(rng, trainingSchedulers);
      c.training.scheduler = scheduler == "none" ? "" : scheduler;
      c.training.steps = static_cast<int>(rng.uniform(std::min(2, maxTrainingSteps), maxTrainingSteps));
      c.training.foreach = rng.chance(trainingForeachShare);
      c.training.clipNorm = rng.chance(trainingClipShare) ? 1.0 : 0.0;
    }
    return s;
  }
  bool strict = pinned.exportStrict ? *pinned.exportStrict : rng.chance(exportStrictShare);
  // torch.export's arguments are the entry and strict only; AOTInductor alone reads Inductor options.
  oracles::CompileConfig exported;
  exported.setEntry(entry);
  exported.exportStrict = strict;
  if (c.symbolicSizes()) exported.dynamic = true;  // dynamic=True or marks drawn: export with Dim ranges
  if (entry == "aoti") exported.inductorConfig = c.inductorConfig;
  else s.templates.clear();
  s.config = exported;
  s.backward = false;
  return s;
}

SampledCompile CompileMatrix::sampleCompileArguments(gen::Rng& rng, const PinnedCompile& pinned,
                                                     const CompileShares& shares) const {
  SampledCompile s;
  oracles::CompileConfig& c = s.config;
  c.backend = pinned.backend ? *pinned.backend : drawKey(rng, shares.backends);
  // mode names Inductor presets: drawn for Inductor only (other backends get torch's default).
  std::string mode = pinned.mode ? *pinned.mode : drawKey(rng, shares.modes);
  if (!pinned.mode && !c.usesInductor()) mode = oracles::kDefaultModeName;
  c.setMode(mode);
  c.setDynamic(pinned.dynamic ? *pinned.dynamic : drawKey(rng, dynamic));
  c.fullgraph = pinned.fullgraph ? *pinned.fullgraph : rng.chance(fullgraphShare);
  s.backward = pinned.backward ? *pinned.backward : rng.chance(shares.backwardShare);
  if (pinned.inductorConfig) {
    c.inductorConfig = *pinned.inductorConfig;
    return s;
  }
  if (!c.usesInductor() || maxTemplates <= 0 || !rng.chance(shares.templateShare)) return s;
  std::vector<const InductorTemplate*> pool;
  std::vector<double> weights;
  for (const auto& [name, weight] : shares.templates) {
    auto t = std::find_if(templates.begin(), templates.end(), [&](const auto& it) { return it.name == name; });
    if (weight > 0 && t != templates.end()) {
      pool.push_back(&*t);
      weights.push_back(weight);
    }
  }
  int count = static_cast<int>(rng.uniform(1, maxTemplates));
  for (int i = 0; i < count && !pool.empty(); ++i) {
    size_t k = rng.weighted(weights);
    s.templates.push_back(pool[k]->name);
    for (auto& [name, value] : pool[k]->options.items()) c.inductorConfig[name] = value;
    pool.erase(pool.begin() + static_cast<long>(k));
    weights.erase(weights.begin() + static_cast<long>(k));
  }
  std::sort(s.templates.begin(), s.templates.end());
  return s;
}

json SampledCompile::nonDefault() const {
  json j = oracles::findingConfig(config, backward);
  if (!templates.empty()) j["templates"] = templates;
  return j;
}

}  // namespace tcfuzz
