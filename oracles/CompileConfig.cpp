#include "oracles/CompileConfig.h"

#include <stdexcept>

#include <fmt/format.h>

namespace tcfuzz::oracles {

nlohmann::json CompileConfig::nonDefault() const {
  nlohmann::json j = nlohmann::json::object();
  if (backend != "inductor") j["backend"] = backend;
  if (!mode.empty() && mode != "default") j["mode"] = mode;
  if (dynamic) j["dynamic"] = *dynamic;
  if (fullgraph) j["fullgraph"] = true;
  if (!inductorConfig.empty()) j["inductor_config"] = inductorConfig;
  return j;
}

std::string CompileConfig::describe() const {
  std::string text = "backend=" + backend;
  if (!mode.empty() && mode != "default") text += " mode=" + mode;
  if (dynamic) text += fmt::format(" dynamic={}", *dynamic);
  if (fullgraph) text += " fullgraph=true";
  for (auto& [k, v] : inductorConfig.items()) text += fmt::format(" {}={}", k, v.dump());
  return text;
}

nlohmann::json CompileConfig::toJson() const {
  nlohmann::json j{{"backend", backend}, {"fullgraph", fullgraph}, {"inductor_config", inductorConfig}};
  j["mode"] = mode.empty() || mode == "default" ? nlohmann::json() : nlohmann::json(mode);
  j["dynamic"] = dynamic ? nlohmann::json(*dynamic) : nlohmann::json();
  return j;
}

void CompileConfig::addInductorOverride(const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::invalid_argument(fmt::format("Inductor override '{}' is not name=value", assignment));
  std::string name = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  nlohmann::json parsed = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  inductorConfig[name] = parsed.is_discarded() ? nlohmann::json(value) : parsed;
}

}  // namespace tcfuzz::oracles
