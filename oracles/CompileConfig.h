#pragma once
// One torch.compile configuration: a fuzzing dimension (DESIGN.md, "The oracle").
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace tcfuzz::oracles {

/// The arguments of torch.compile plus Inductor config overrides.
struct CompileConfig {
  std::string backend = "inductor";   ///< any registered Dynamo backend name
  std::string mode;                   ///< "" (default), "reduce-overhead", "max-autotune", ...
  std::optional<bool> dynamic;        ///< nullopt: torch's automatic dynamic shapes
  bool fullgraph = false;
  nlohmann::json inductorConfig = nlohmann::json::object();  ///< dotted name -> value

  /// The options that differ from torch.compile's defaults, as a JSON object (what a finding records).
  nlohmann::json nonDefault() const;
  /// "backend=inductor mode=max-autotune cpp_wrapper=true", defaults left out.
  std::string describe() const;
  /// The job's "compile" field.
  nlohmann::json toJson() const;

  /// Parses "name=value" for an Inductor option; value is JSON (true, 3, "x") or else a bare string.
  /// Throws std::invalid_argument on a missing '='.
  void addInductorOverride(const std::string& assignment);
};

}  // namespace tcfuzz::oracles
