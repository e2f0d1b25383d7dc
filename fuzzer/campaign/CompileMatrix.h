#pragma once
// The compile configuration as a fuzzing dimension: weights over torch.compile's arguments and
// named Inductor config templates (../shared/seeds/003_*), sampled once per program.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "oracles/judge/CompileConfig.h"
#include "generators/ir/Rng.h"

namespace tcfuzz {

/// A named group of Inductor options that belong together (e.g. "cpp_wrapper", "cudagraphs").
struct InductorTemplate {
  std::string name;
  nlohmann::json options = nlohmann::json::object();  ///< dotted Inductor option -> value
  bool needsCuda = false;                              ///< gated: never sampled on a CPU campaign
  double weight = 1;
};

/// The dimensions a campaign pins from the command line; a pinned dimension is never sampled.
struct PinnedCompile {
  std::optional<std::string> backend, mode;
  std::optional<std::string> dynamic;  ///< a key of CompileMatrix::dynamic: "auto", "true", "false" or "mark"
  std::optional<bool> fullgraph, backward;
  std::optional<std::string> entry;  ///< an oracles::entryPointNames() name; a pinned backend pins "compile"
  std::optional<bool> exportStrict;
  std::optional<oracles::TrainingLoop> training;  ///< --train: the "train" entry's steps, not drawn
  std::optional<nlohmann::json> inductorConfig;  ///< pinned: exactly these overrides, no templates
  /// --batch: programs judged under one compile (1: each alone); drawn by the scheduler when unset.
  std::optional<int> batchSize;
  /// Whether a pinned torch.compile argument (backend, mode, dynamic, fullgraph, backward on) pins the entry
  /// point to torch.compile; a pinned entry pins it too. The entry is drawn when neither does.
  bool entryPinned() const { return entry || backend || mode || dynamic || fullgraph || backward.value_or(false); }
};

/// One sampled configuration: the compile arguments, whether to run backward, the templates used.
struct SampledCompile {
  oracles::CompileConfig config;
  bool backward = false;
  std::vector<std::string> templates;
  /// What a finding records: the options that differ from the defaults, templates and backward included.
  nlohmann::json nonDefault() const;
};

/// The weights one draw uses for the dimensions a scheduler may retune; CompileMatrix::shares gives
/// the configured ones (dynamic and fullgraph always keep the matrix's own shares).
struct CompileShares {
  std::map<std::string, double> backends, modes, entries;  ///< relative weights; a zero weight is never drawn
  double backwardShare = 0;
  double templateShare = 0;  ///< chance that an Inductor run applies templates
  std::vector<std::pair<std::string, double>> templates;  ///< the usable templates, in matrix order
};

/// Weights per dimension, as data: JSON-loadable so a campaign policy can retune it without a rebuild.
class CompileMatrix {
 public:
  std::map<std::string, double> backends{{"inductor", 7}, {"aot_eager", 2}, {"eager", 1}};
  std::map<std::string, double> modes{{"default", 8}, {"reduce-overhead", 1}, {"max-autotune", 1}};
  /// "mark": automatic, with every input dimension of size >= 2 marked maybe-dynamic
  /// (CompileConfig::markDynamic).
  std::map<std::string, double> dynamic{{"auto", 6}, {"true", 2}, {"false", 1}, {"mark", 1}};
  /// The compiled run's entry point (CompileConfig::entry). Drawn last: an export entry then resets
  /// backend, mode, fullgraph and backward to their defaults, keeps templates for "aoti" only, and turns a
  /// drawn dynamic=True or "mark" into dynamic=true (export with Dim ranges).
  /// "train" (given a weight here, or pinned) keeps torch.compile's drawn arguments but fullgraph and marks
  /// (training steps call forward themselves), runs no forward-only backward, and draws its TrainingLoop from the
  /// training weights below. A campaign draws it as a program kind instead (trainingShare).
  std::map<std::string, double> entries{
      {"compile", 6.5}, {"export", 1}, {"export+decompose", 1}, {"export+saveload", 0.5}, {"aoti", 1}};
  double exportStrictShare = 0.3;  ///< share of export entries traced with strict=True
  /// Share of a campaign's programs with a floating parameter that are judged as training steps (the "train"
  /// entry, pinned for that program before the other draws): a program kind with a fixed share, which the bandit
  /// does not retune (its export arms are far cheaper per feature, and would starve it).
  double trainingShare = 0.25;
  /// The "train" entry's draws: optimizer, what is compiled, scheduler ("none" too), steps (2 to maxTrainingSteps),
  /// the foreach share and the gradient clipping share (max_norm 1).
  std::map<std::string, double> trainingOptimizers{{"sgd", 1}, {"adam", 1}, {"adamw", 1}};
  std::map<std::string, double> trainingCompiled{{"model", 1}, {"step", 1}, {"both", 2}};
  std::map<std::string, double> trainingSchedulers{{"none", 3}, {"step", 1}, {"exponential", 1}};
  int maxTrainingSteps = 4;
  double trainingForeachShare = 0.5;
  double trainingClipShare = 0.3;
  double fullgraphShare = 0.15;
  double backwardShare = 0.25;
  double templateShare = 0.4;  ///< share of inductor runs that apply templates
  int maxTemplates = 2;        ///< at most this many templates per run
  std::vector<InductorTemplate> templates = defaultTemplates();

  /// The built-in templates: the CPU-valid ones and the CUDA-gated ones.
  static std::vector<InductorTemplate> defaultTemplates();
  /// Reads a matrix; keys not given keep their defaults; unknown keys and bad values raise
  /// std::invalid_argument naming them.
  static CompileMatrix fromJson(const nlohmann::json& doc);
  nlohmann::json toJson() const;

  /// Draws one configuration for `device` ("cpu", "cuda", "cuda:1"); pinned dimensions are kept.
  SampledCompile sample(gen::Rng& rng, const std::string& device, const PinnedCompile& pinned) const;
  /// As sample(), drawing backend, mode, backward and templates from `shares` instead; the same
  /// draws in the same order, so sample(rng, d, p, shares(d)) == sample(rng, d, p).
  SampledCompile sample(gen::Rng& rng, const std::string& device, const PinnedCompile& pinned,
                        const CompileShares& shares) const;
  /// The configured weights of the dimensions a scheduler may retune, templates limited to `device`'s.
  CompileShares shares(const std::string& device) const;
  /// Stops sampling a template (for example one the installed torch rejects); false if unknown.
  bool disableTemplate(const std::string& name);
  /// Stops sampling every template that sets an option not in `options` (the worker torch's
  /// Inductor options, Hello::inductorOptions); returns one note per template it stopped. An empty
  /// `options` (not reported) stops none.
  std::vector<std::string> disableTemplatesLacking(const std::set<std::string>& options);
  /// Stops sampling the template `name` (what the GPU or torch lacks: `why`); the note, or nullopt when
  /// no such template was being sampled.
  std::optional<std::string> disableTemplate(const std::string& name, const std::string& why);
  /// The templates a campaign on `device` can draw.
  std::vector<std::string> usableTemplates(const std::string& device) const;

 private:
  /// torch.compile's arguments, backward and templates: the draws before the entry point's.
  SampledCompile sampleCompileArguments(gen::Rng& rng, const PinnedCompile& pinned, const CompileShares& shares) const;
};

}  // namespace tcfuzz
