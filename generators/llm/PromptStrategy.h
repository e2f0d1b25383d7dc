#pragma once
// LLM prompt strategies as data (generators/llm/prompts/strategies.json, compiled in; --llm-prompts
// replaces it) and the Thompson-sampling bandit that picks a strategy and target by their yield.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generators/OpCatalog.h"
#include "generators/ir/Rng.h"

namespace tcfuzz::gen {

/// One prompt strategy: a template plus what it fills in.
struct PromptStrategy {
  std::string name;
  std::string form;             ///< "json" (the proposal form) or "python" (a module to lift)
  std::string system, user;     ///< templates with {fill names}
  int minOps = 0, maxOps = 0;   ///< catalog ops sampled into {op_names} / {op_calls}
  bool targeted = false;        ///< gets an optimization target per request
  bool queue = false;           ///< needs a queue program ({program_json} / {program_python})
  bool repair = false;          ///< used by the repair loop, never drawn by the bandit
  double temperature = 0.8;
  int maxTokens = 512;
};

/// An Inductor optimization or lowering to aim at (WhiteFox): its name, kind, what triggers it and
/// the catalog ops that can express that trigger.
struct OptimizationTarget {
  std::string name, kind, trigger;
  std::vector<std::string> ops;
};

/// The strategy table, validated against the catalog.
class PromptBook {
 public:
  /// Parses and checks a strategies document: known keys, forms, fill names and target ops (all
  /// must be catalog ops); std::invalid_argument names the first problem.
  static PromptBook fromJson(const nlohmann::json& doc, const OpCatalog& catalog);
  /// The table compiled into the binary.
  static PromptBook builtIn(const OpCatalog& catalog);

  const std::vector<PromptStrategy>& strategies() const { return strategies_; }
  const std::vector<OptimizationTarget>& targets() const { return targets_; }
  /// The strategy called `name` (std::out_of_range when none).
  const PromptStrategy& strategy(const std::string& name) const;
  /// The first repair strategy of `form`, or nullptr.
  const PromptStrategy* repairStrategy(const std::string& form) const;
  const std::string& example(const std::string& form) const { return examples_.at(form); }

 private:
  std::vector<PromptStrategy> strategies_;
  std::vector<OptimizationTarget> targets_;
  std::map<std::string, std::string> examples_;
};

/// The fill names a template may use.
const std::vector<std::string>& promptFillNames();
/// Replaces every {name} of `text` with fills[name]; std::invalid_argument for a fill name that has
/// no fill. Braces that do not enclose a fill name ({"a": 1} in an example) are kept as they are.
std::string renderPrompt(const std::string& text, const std::map<std::string, std::string>& fills);
/// How an op is called in Python, for {op_calls}: "torch.cumsum(x, dim)" from the catalog spelling.
std::string opCallHint(const OpSpec& op);

/// Thompson sampling over named arms with rewards in [0, 1] (a Beta posterior per arm:
/// alpha += w r, beta += w (1 - r), w the pull's weight). Not thread-safe; one owner.
class ThompsonBandit {
 public:
  ThompsonBandit(std::vector<std::string> arms, uint64_t seed);
  /// Draws one sample per arm and returns the arm with the largest.
  size_t pick() { return pick({}); }
  /// pick() among the arms whose `drawable` entry is true (every arm when `drawable` is empty or none is
  /// true). A sample is drawn for every arm all the same, so the draws that follow do not depend on it.
  size_t pick(const std::vector<bool>& drawable);
  /// Credits `arm` with reward r (clamped to [0, 1]), counted as `weight` pulls' worth of evidence.
  void reward(size_t arm, double r, double weight = 1);
  const std::string& name(size_t arm) const { return arms_.at(arm).name; }
  size_t size() const { return arms_.size(); }
  /// Per arm: pulls, alpha, beta, mean.
  nlohmann::json toJson() const;

 private:
  struct Arm {
    std::string name;
    double alpha = 1, beta = 1;
    int64_t pulls = 0;
  };
  std::vector<Arm> arms_;
  Rng rng_;
};

}  // namespace tcfuzz::gen
