#pragma once
// One torch.compile configuration: a fuzzing dimension (docs/architecture.md, "The oracle"). Its defaults are
// the member initializers below and nowhere else; a finding records only what differs from them.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tcfuzz::oracles {

/// The Inductor backend: torch.compile's default, the only one that mode presets and Inductor options apply to.
inline constexpr const char* kInductorBackend = "inductor";
/// The backend that is no torch.compile: the "compiled" run calls the model as it is, so the program's own
/// higher-order ops run in eager (the references run their Python meaning). How eager's own HOPs are judged.
inline constexpr const char* kNoCompileBackend = "none";
/// The name torch.compile gives its default mode; stored as "" in CompileConfig::mode.
inline constexpr const char* kDefaultModeName = "default";
/// The entry point that is torch.compile itself (CompileConfig::entry's default).
inline constexpr const char* kCompileEntry = "compile";
/// The entry point that runs training steps (TrainingLoop): torch.compile of the model, of the optimizer's step, or both.
inline constexpr const char* kTrainEntry = "train";
/// The entry point that builds and loads an AOTInductor package.
inline constexpr const char* kAotiEntry = "aoti";
/// Every entry point into the compiler, torch.compile first (docs/oracle.md, "Entry points"): "compile";
/// "export" (torch.export.export, then ep.module()); "export+decompose" (ep.run_decompositions() with the
/// default table first); "export+saveload" (a torch.export.save/load round trip first); "aoti"
/// (torch._inductor.aoti_compile_and_package, then aoti_load_package); "train" (N optimizer steps, TrainingLoop).
const std::vector<std::string>& entryPointNames();

/// The compiled training steps of the "train" entry (docs/oracle.md, "Training steps"): each mode builds the
/// optimizer over the model's trainable parameters (sorted by name) and runs `steps` steps of: forward on fresh
/// copies of the inputs, the loss (the mean squared difference of each floating output from a target drawn from
/// the job's seed), backward, gradient clipping, the optimizer's step, the scheduler's step. Eager and fp64 run it
/// uncompiled; the compiled run compiles the model, the step (clipping and optimizer.step), or both. The judged
/// leaves are each step's loss and, after the last step, every parameter and every tensor of the optimizer's state.
struct TrainingLoop {
  std::string optimizer = "adam";  ///< "sgd" (momentum 0.9), "adam", "adamw" (weight_decay 0.01)
  int steps = 3;                   ///< 1 to 8
  double lr = 0.01;
  bool foreach = false;            ///< the optimizer's foreach implementation (torch._foreach_* ops)
  std::string scheduler;           ///< "" none, "step" (StepLR: step_size 2, gamma 0.5), "exponential" (gamma 0.9)
  double clipNorm = 0;             ///< clip_grad_norm_'s max_norm; 0: no clipping
  std::string compiled = "both";   ///< what torch.compile compiles: "model", "step" or "both"

  /// The choices of each named field, for errors and the matrix.
  static const std::vector<std::string>& optimizerNames();
  static const std::vector<std::string>& schedulerNames();
  static const std::vector<std::string>& compiledParts();
  /// "optimizer=adam steps=3 lr=0.01 compiled=both" then foreach, scheduler and clip when set.
  std::string describe() const;
  /// Every key: {"optimizer", "steps", "lr", "foreach", "scheduler", "clip_norm", "compiled"}.
  nlohmann::json toJson() const;
  /// A missing key keeps its default; std::invalid_argument naming the key for a value of the wrong type or
  /// outside its choices.
  static TrainingLoop fromJson(const nlohmann::json& j);
  /// "key=value,key=value" with describe()'s keys (clip for clip_norm): the --train flag's form.
  static TrainingLoop parse(const std::string& text);

  bool operator==(const TrainingLoop&) const = default;
};

/// The arguments of torch.compile plus Inductor config overrides.
struct CompileConfig {
  std::string backend = kInductorBackend;  ///< any registered Dynamo backend name, or kNoCompileBackend
  std::string mode;                   ///< "" (default), "reduce-overhead", "max-autotune", ...
  std::optional<bool> dynamic;        ///< nullopt: torch's automatic dynamic shapes
  /// With dynamic unset: torch._dynamo.maybe_mark_dynamic on every dimension of size >= 2 of each tensor
  /// input before each compiled call (a dimension the program specializes stays static, with no error).
  bool markDynamic = false;
  bool fullgraph = false;
  /// How the compiled run reaches the compiler: an entryPointNames() name. Under an export entry backend,
  /// mode and fullgraph keep their defaults, Inductor options apply to "aoti" only, and dynamic=true exports
  /// with a Dim.AUTO range [2, n + 1] on every dimension of size n >= 2 of each tensor input (call 4 then runs
  /// at the size n - 1, or 3 from 2: inside the range or on its edge).
  std::string entry = kCompileEntry;
  /// torch.export.export(strict=True) (Dynamo traces) rather than non-strict (Python runs on fake tensors).
  bool exportStrict = false;
  /// The training steps of the "train" entry; not read under any other.
  TrainingLoop training;
  /// Dotted name -> value: an Inductor option, or under "dynamo." a Dynamo one ("dynamo.capture_scalar_outputs").
  nlohmann::json inductorConfig = nlohmann::json::object();

  /// Whether the mode is torch.compile's default ("" or "default").
  bool defaultMode() const;
  /// Whether Inductor compiles (mode presets and Inductor options take effect): the Inductor backend under
  /// torch.compile, or AOTInductor.
  bool usesInductor() const {
    return backend == kInductorBackend && (entry == kCompileEntry || entry == kTrainEntry || entry == kAotiEntry);
  }
  /// Whether torch.compile is applied at all (every backend but kNoCompileBackend).
  bool compiles() const { return backend != kNoCompileBackend; }
  /// Whether the compiled run goes through torch.export (every entry but torch.compile and training steps).
  bool exports() const { return entry != kCompileEntry && entry != kTrainEntry; }
  /// Whether the runs are training steps (TrainingLoop) rather than forward calls.
  bool trains() const { return entry == kTrainEntry; }
  /// Whether the run is compiled for sizes other than its own (dynamic=True or marked dimensions): a
  /// later call at another size checks that.
  bool symbolicSizes() const { return dynamic.value_or(false) || markDynamic; }
  /// Sets dynamic and markDynamic from a compile matrix key: "auto", "true", "false" or "mark";
  /// std::invalid_argument on any other.
  void setDynamic(const std::string& key);
  /// Sets the entry point; std::invalid_argument naming the choices for a name not in entryPointNames().
  void setEntry(const std::string& name);
  /// Sets the mode from its name; "default" becomes "".
  void setMode(const std::string& name);

  /// The options that differ from torch.compile's defaults, as a JSON object (what a finding records).
  nlohmann::json nonDefault() const;
  /// How describe() writes an Inductor option's string value: as JSON ("x") or bare (x).
  enum class OptionText { Json, Bare };
  /// "backend=inductor mode=max-autotune dynamic=true mark_dynamic=true fullgraph=true cpp_wrapper=true"; an
  /// export entry: "entry=export strict=true" (then the Inductor options of "aoti"),
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
