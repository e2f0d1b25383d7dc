#pragma once
// Which prompt the LLM is asked next: an arm is a (strategy, target) pair of the prompt book, drawn
// by Thompson sampling on two levels, the strategy first, then (for targeted strategies) its target,
// each by its yield, so that a poor strategy is learnt from all its targets' replies at once.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generators/llm/PromptStrategy.h"

namespace tcfuzz {

/// The prompt-strategy bandit. Thread-safe: the request threads pick, the campaign's thread rewards.
/// The same seed and the same sequence of picks and rewards give the same choices.
class PromptBandit {
 public:
  /// A (strategy, target) pair; target "" and targetIndex -1 for untargeted strategies.
  struct Arm {
    std::string strategy, target;
    int strategyIndex = 0, targetIndex = -1;
  };

  /// One arm per untargeted strategy of `book` and one per (targeted strategy, target); repair
  /// strategies are never drawn. The strategy level draws from `seed`, a targeted strategy's target
  /// level from seed ^ (its strategy index + 1).
  PromptBandit(const gen::PromptBook& book, uint64_t seed);

  /// Draws a strategy, then its target; returns the arm's index.
  size_t pick();
  /// Credits the arm's strategy and (if targeted) its target with `reward` in [0, 1].
  void reward(size_t arm, double reward);
  /// A reply that gave no program (rejected, or its lift failed) after `cpuSeconds` of LLM and lift
  /// time: reward 0, weighted by what it cost against the mean reply (failureWeight), so a strategy
  /// that burns ten times the CPU of the others for nothing loses as fast as ten failures would.
  void fail(size_t arm, double cpuSeconds);
  /// Records what one reply cost, valid or not (the mean failureWeight measures against).
  void addCost(double cpuSeconds);
  /// cpuSeconds / meanSeconds, within [1, kMaxFailureWeight]; 1 while no mean is known.
  static double failureWeight(double cpuSeconds, double meanSeconds);
  static constexpr double kMaxFailureWeight = 8;
  /// A strategy retires once kRetireAfter of its replies gave no program and none gave one, while another
  /// strategy's replies have: a model that cannot write its form (a small model and the Python form) stops
  /// costing CPU. A retired strategy is drawn only at every kExploreEvery-th pick (when every strategy is
  /// drawable), and its first program brings it back.
  static constexpr int kRetireAfter = 3;
  static constexpr int kExploreEvery = 25;
  /// The retired strategies' names, in book order.
  std::vector<std::string> retired() const;
  /// The arm at `index` (std::out_of_range past the last); arms never change after construction.
  const Arm& arm(size_t index) const { return arms_.at(index); }
  /// {"strategies": per-strategy arms, "targets": {strategy: per-target arms}} (targets only when
  /// some strategy is targeted): pulls, alpha, beta, mean per arm.
  nlohmann::json toJson() const;

 private:
  std::vector<Arm> arms_;
  mutable std::mutex mutex_;  // guards the bandits below
  gen::ThompsonBandit strategies_;
  std::map<std::string, gen::ThompsonBandit> targets_;  ///< per targeted strategy
  double costSum_ = 0;  ///< CPU seconds of every reply so far
  int64_t replies_ = 0;
  struct Tally {
    int64_t programs = 0, failures = 0;
  };
  std::vector<Tally> tallies_;  ///< per strategy: replies that gave a program, and that gave none
  int64_t picks_ = 0;
  /// Per strategy: may pick() draw it now (not retired)?
  std::vector<bool> drawableLocked() const;
};

}  // namespace tcfuzz
