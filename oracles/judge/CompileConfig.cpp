#include "oracles/judge/CompileConfig.h"

#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include <fmt/ranges.h>

#include <fmt/format.h>

namespace tcfuzz::oracles {

const std::vector<std::string>& entryPointNames() {
  static const std::vector<std::string> kNames{kCompileEntry, "export", "export+decompose", "export+saveload",
                                              kAotiEntry, kTrainEntry};
  return kNames;
}

namespace {

void checkChoice(const std::string& key, const std::string& value, const std::vector<std::string>& choices) {
  if (std::find(choices.begin(), choices.end(), value) == choices.end())
    throw std::invalid_argument(fmt::format("training: {} '{}' is not one of {}", key, value, fmt::join(choices, ", ")));
}

void checkTraining(const TrainingLoop& t) {
  checkChoice("optimizer", t.optimizer, TrainingLoop::optimizerNames());
  checkChoice("scheduler", t.scheduler.empty() ? "none" : t.scheduler, TrainingLoop::schedulerNames());
  checkChoice("compiled", t.compiled, TrainingLoop::compiledParts());
  if (t.steps < 1 || t.steps > 8) throw std::invalid_argument(fmt::format("training: steps {} is not 1 to 8", t.steps));
  if (!(t.lr > 0) || !(t.clipNorm >= 0))
    throw std::invalid_argument(fmt::format("training: lr {} must be positive and clip {} not negative", t.lr, t.clipNorm));
}

}  // namespace

const std::vector<std::string>& TrainingLoop::optimizerNames() {
  static const std::vector<std::string> kNames{"sgd", "adam", "adamw"};
  return kNames;
}

const std::vector<std::string>& TrainingLoop::schedulerNames() {
  static const std::vector<std::string> kNames{"none", "step", "exponential"};
  return kNames;
}

const std::vector<std::string>& TrainingLoop::compiledParts() {
  static const std::vector<std::string> kNames{"model", "step", "both"};
  return kNames;
}

std::string TrainingLoop::describe() const {
  std::string text = fmt::format("optimizer={} steps={} lr={} compiled={}", optimizer, steps, lr, compiled);
  if (foreach) text += " foreach=true";
  if (!scheduler.empty()) text += " scheduler=" + scheduler;
  if (clipNorm > 0) text += fmt::format(" clip={}", clipNorm);
  return text;
}

nlohmann::json TrainingLoop::toJson() const {
  return {{"optimizer", optimizer}, {"steps", steps},         {"lr", lr},           {"foreach", foreach},
          {"scheduler", scheduler.empty() ? "none" : scheduler}, {"clip_norm", clipNorm}, {"compiled", compiled}};
}

TrainingLoop TrainingLoop::fromJson(const nlohmann::json& j) {
  TrainingLoop t;
  if (!j.is_object()) throw std::invalid_argument("training: not a JSON object: " + j.dump());
  auto read = [&](const char* key, auto& field) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    try {
      field = it->get<std::remove_reference_t<decltype(field)>>();
    } catch (const nlohmann::json::exception&) {
      throw std::invalid_argument(fmt::format("training: '{}' has the wrong type: {}", key, it->dump()));
    }
  };
  read("optimizer", t.optimizer);
  read("steps", t.steps);
  read("lr", t.lr);
  read("foreach", t.foreach);
  read("scheduler", t.scheduler);
  read("clip_norm", t.clipNorm);
  read("compiled", t.compiled);
  if (t.scheduler == "none") t.scheduler.clear();
  checkTraining(t);
  return t;
}

TrainingLoop TrainingLoop::parse(const std::string& text) {
  nlohmann::json j = nlohmann::json::object();
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    size_t end = text.find(',', start);
    std::string item = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::invalid_argument(fmt::format("training: '{}' is not key=value", item));
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "clip") key = "clip_norm";
    nlohmann::json parsed = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
    j[key] = parsed.is_discarded() ? nlohmann::json(value) : parsed;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  for (auto& [key, _] : j.items())
    if (key != "optimizer" && key != "steps" && key != "lr" && key != "foreach" && key != "scheduler" &&
        key != "clip_norm" && key != "compiled")
      throw std::invalid_argument(fmt::format("training: unknown key '{}' (optimizer, steps, lr, foreach, "
                                              "scheduler, clip, compiled)", key));
  return fromJson(j);
}

void CompileConfig::setEntry(const std::string& name) {
  const auto& names = entryPointNames();
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw std::invalid_argument(fmt::format("entry point '{}' is not one of {}", name, fmt::join(names, ", ")));
  entry = name;
}

bool CompileConfig::defaultMode() const { return mode.empty() || mode == kDefaultModeName; }

void CompileConfig::setMode(const std::string& name) { mode = name == kDefaultModeName ? "" : name; }

void CompileConfig::setDynamic(const std::string& key) {
  if (key != "auto" && key != "true" && key != "false" && key != "mark")
    throw std::invalid_argument(fmt::format("dynamic '{}' is not auto, true, false or mark", key));
  dynamic = key == "true" || key == "false" ? std::optional<bool>(key == "true") : std::nullopt;
  markDynamic = key == "mark";
}

nlohmann::json CompileConfig::nonDefault() const {
  const CompileConfig defaults;
  nlohmann::json j = nlohmann::json::object();
  if (backend != defaults.backend) j["backend"] = backend;
  if (!defaultMode()) j["mode"] = mode;
  if (dynamic) j["dynamic"] = *dynamic;
  if (markDynamic) j["mark_dynamic"] = true;
  if (fullgraph != defaults.fullgraph) j["fullgraph"] = fullgraph;
  if (entry != kCompileEntry) j["entry"] = entry;
  if (exportStrict) j["export_strict"] = true;
  if (trains()) j["training"] = training.toJson();
  if (!inductorConfig.empty()) j["inductor_config"] = inductorConfig;
  return j;
}

std::string CompileConfig::describe(OptionText strings) const {
  std::string text = exports() ? "entry=" + entry : "backend=" + backend;
  if (trains()) text = "entry=train " + training.describe() + " " + text;
  if (exportStrict) text += " strict=true";
  if (!defaultMode()) text += " mode=" + mode;
  if (dynamic) text += fmt::format(" dynamic={}", *dynamic);
  if (markDynamic) text += " mark_dynamic=true";
  if (fullgraph) text += " fullgraph=true";
  for (auto& [k, v] : inductorConfig.items())
    text += fmt::format(" {}={}", k, strings == OptionText::Bare && v.is_string() ? v.get<std::string>() : v.dump());
  return text;
}

nlohmann::json CompileConfig::toJson() const {
  nlohmann::json j{{"backend", backend}, {"fullgraph", fullgraph}, {"inductor_config", inductorConfig}};
  j["mode"] = defaultMode() ? nlohmann::json() : nlohmann::json(mode);
  j["dynamic"] = dynamic ? nlohmann::json(*dynamic) : nlohmann::json();
  j["mark_dynamic"] = markDynamic;
  j["entry"] = entry;
  j["export_strict"] = exportStrict;
  if (trains()) j["training"] = training.toJson();
  return j;
}

CompileConfig CompileConfig::fromJson(const nlohmann::json& j) {
  CompileConfig c;
  if (!j.is_object()) return c;
  auto given = [&](const char* key) -> const nlohmann::json* {
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  };
  if (const nlohmann::json* backend = given("backend")) {
    if (!backend->is_string())
      throw std::invalid_argument(fmt::format("compile config: 'backend' must be a string, not {}", backend->dump()));
    c.backend = backend->get<std::string>();
  }
  if (const nlohmann::json* mode = given("mode"); mode && mode->is_string()) c.setMode(mode->get<std::string>());
  if (const nlohmann::json* dynamic = given("dynamic"); dynamic && dynamic->is_boolean()) c.dynamic = dynamic->get<bool>();
  if (const nlohmann::json* mark = given("mark_dynamic"); mark && mark->is_boolean())
    c.markDynamic = mark->get<bool>() && !c.dynamic;
  if (const nlohmann::json* fullgraph = given("fullgraph")) {
    if (!fullgraph->is_boolean())
      throw std::invalid_argument(
          fmt::format("compile config: 'fullgraph' must be true or false, not {}", fullgraph->dump()));
    c.fullgraph = fullgraph->get<bool>();
  }
  if (const nlohmann::json* entry = given("entry")) {
    if (!entry->is_string())
      throw std::invalid_argument(fmt::format("compile config: 'entry' must be a string, not {}", entry->dump()));
    c.setEntry(entry->get<std::string>());
  }
  if (const nlohmann::json* strict = given("export_strict"); strict && strict->is_boolean())
    c.exportStrict = strict->get<bool>();
  if (const nlohmann::json* options = given("inductor_config"); options && options->is_object())
    c.inductorConfig = *options;
  if (const nlohmann::json* training = given("training")) c.training = TrainingLoop::fromJson(*training);
  return c;
}

void CompileConfig::addInductorOverride(const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::invalid_argument(fmt::format("Inductor override '{}' is not name=value", assignment));
  std::string name = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  nlohmann::json parsed = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  inductorConfig[name] = parsed.is_discarded() ? nlohmann::json(value) : parsed;
}

FindingCompile findingCompile(const nlohmann::json& findingConfig) {
  FindingCompile f;
  if (!findingConfig.is_object()) return f;
  f.config = CompileConfig::fromJson(findingConfig);
  f.backward = findingConfig.value("backward", false);
  return f;
}

nlohmann::json findingConfig(const CompileConfig& config, bool backward) {
  nlohmann::json j = config.nonDefault();
  if (backward) j["backward"] = true;
  return j;
}

}  // namespace tcfuzz::oracles
