#pragma once
// One torch.compile configuration: a fuzzing dimension (docs/architecture.md, "The oracle"). Its defaults are
// the member initializers below and nowhere else; a finding records only what differs from them.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace tcfuzz::oracles {

/// The Inductor backend: torch.compile's default, the only one that mode presets and Inductor options apply to.
inline constexpr const char* kInductorBackend = "inductor";
/// The backend that is no torch.compile: the "compiled" run calls the model as it is, so the program's own
/// higher-order ops run in eager (the references run their Python meaning). How eager's own HOPs are judged.
inline constexpr const char* kNoCompileBackend = "none";
/// The name torch.compile gives its default mode; stored as "" in CompileConfig::mode.
inline constexpr const char* kDefaultModeName = "default";

/// The arguments of torch.compile plus Inductor config overrides.
struct CompileConfig {
  std::string backend = kInductorBackend;  ///< any registered Dynamo backend name, or kNoCompileBackend
  std::string mode;                   ///< "" (default), "reduce-overhead", "max-autotune", ...
  std::optional<bool> dynamic;        ///< nullopt: torch's automatic dynamic shapes
  /// With dynamic unset: torch._dynamo.maybe_mark_dynamic on every dimension of size >= 2 of each tensor
  /// input before each compiled call (a dimension the program specializes stays static, with no error).
  bool markDynamic = false;
  bool fullgraph = false;
  /// Dotted name -> value: an Inductor option, or under "dynamo." a Dynamo one ("dynamo.capture_scalar_outputs").
  nlohmann::json inductorConfig = nlohmann::json::object();

  /// Whether the mode is torch.compile's default ("" or "default").
  bool defaultMode() const;
  /// Whether the backend is Inductor (mode presets and Inductor options take effect).
  bool usesInductor() const { return backend == kInductorBackend; }
  /// Whether torch.compile is applied at all (every backend but kNoCompileBackend).
  bool compiles() const { return backend != kNoCompileBackend; }
  /// Whether the run is compiled for sizes other than its own (dynamic=True or marked dimensions): a
  /// later call at another size checks that.
  bool symbolicSizes() const { return dynamic.value_or(false) || markDynamic; }
  /// Sets dynamic and markDynamic from a compile matrix key: "auto", "true", "false" or "mark";
  /// std::invalid_argument on any other.
  void setDynamic(const std::string& key);
  /// Sets the mode from its name; "default" becomes "".
  void setMode(const std::string& name);

  /// The options that differ from torch.compile's defaults, as a JSON object (what a finding records).
  nlohmann::json nonDefault() const;
  /// How describe() writes an Inductor option's string value: as JSON ("x") or bare (x).
  enum class OptionText { Json, Bare };
  /// "backend=inductor mode=max-autotune dynamic=true mark_dynamic=true fullgraph=true cpp_wrapper=true",
  /// defaults left out.
  std::string describe(OptionText strings = OptionText::Json) const;
  /// The job's "compile" field: every key, null for the default mode and automatic dynamic.
  nlohmann::json toJson() const;
  /// The inverse of toJson, and the reader of nonDefault's form: a missing or null key keeps its
  /// default, unknown keys ("backward", "templates") are ignored, a mode, dynamic or inductor_config
  /// of another type is ignored. A non-object gives the defaults. std::invalid_argument when backend
  /// is not a string or fullgraph not a boolean.
  static CompileConfig fromJson(const nlohmann::json& j);

  /// Parses "name=value" for an Inductor option; value is JSON (true, 3, "x") or else a bare string.
  /// Throws std::invalid_argument on a missing '='.
  void addInductorOverride(const std::string& assignment);

  bool operator==(const CompileConfig&) const = default;
};

/// What a finding records about how it was compiled: the configuration and whether backward ran.
struct FindingCompile {
  CompileConfig config;
  bool backward = false;
};

/// A finding's recorded config (SampledCompile::nonDefault: backend, mode, dynamic, fullgraph,
/// inductor_config, backward, templates) as the configuration to test it under.
FindingCompile findingCompile(const nlohmann::json& findingConfig);
/// What a finding records for `config` and `backward`: nonDefault() plus "backward": true when set.
nlohmann::json findingConfig(const CompileConfig& config, bool backward);

}  // namespace tcfuzz::oracles
