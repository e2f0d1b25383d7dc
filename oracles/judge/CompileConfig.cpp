#include "oracles/judge/CompileConfig.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/ranges.h>

#include <fmt/format.h>

namespace tcfuzz::oracles {

const std::vector<std::string>& entryPointNames() {
  static const std::vector<std::string> kNames{kCompileEntry, "export", "export+decompose", "export+saveload", "aoti"};
  return kNames;
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
  if (exports()) j["entry"] = entry;
  if (exportStrict) j["export_strict"] = true;
  if (!inductorConfig.empty()) j["inductor_config"] = inductorConfig;
  return j;
}

std::string CompileConfig::describe(OptionText strings) const {
  std::string text = exports() ? "entry=" + entry : "backend=" + backend;
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
