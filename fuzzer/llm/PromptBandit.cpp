#include "fuzzer/llm/PromptBandit.h"

#include <algorithm>
#include <stdexcept>

namespace tcfuzz {

namespace {

/// The non-repair strategy names of `book`, in its order (the strategy level's arms).
std::vector<std::string> drawnStrategies(const gen::PromptBook& book) {
  std::vector<std::string> names;
  for (const auto& s : book.strategies())
    if (!s.repair) names.push_back(s.name);
  return names;
}

}  // namespace

PromptBandit::PromptBandit(const gen::PromptBook& book, uint64_t seed)
    : strategies_(drawnStrategies(book), seed) {
  std::vector<std::string> targets;
  for (const auto& t : book.targets()) targets.push_back(t.name);
  int sIdx = 0;
  for (const auto& s : book.strategies()) {
    if (s.repair) continue;
    if (s.targeted) {
      targets_.emplace(s.name, gen::ThompsonBandit(targets, seed ^ static_cast<uint64_t>(sIdx + 1)));
      for (size_t t = 0; t < targets.size(); ++t) arms_.push_back({s.name, targets[t], sIdx, static_cast<int>(t)});
    } else {
      arms_.push_back({s.name, "", sIdx, -1});
    }
    ++sIdx;
  }
  tallies_.resize(strategies_.size());
}

std::vector<bool> PromptBandit::drawableLocked() const {
  std::vector<bool> drawable(tallies_.size(), true);
  bool someProgram = std::any_of(tallies_.begin(), tallies_.end(), [](const Tally& t) { return t.programs > 0; });
  if (!someProgram) return drawable;
  for (size_t i = 0; i < tallies_.size(); ++i)
    drawable[i] = tallies_[i].programs > 0 || tallies_[i].failures < kRetireAfter;
  return drawable;
}

std::vector<std::string> PromptBandit::retired() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  std::vector<bool> drawable = drawableLocked();
  for (size_t i = 0; i < drawable.size(); ++i)
    if (!drawable[i]) out.push_back(strategies_.name(i));
  return out;
}

size_t PromptBandit::pick() {
  std::lock_guard lock(mutex_);
  bool explore = ++picks_ % kExploreEvery == 0;
  int sIdx = static_cast<int>(explore ? strategies_.pick() : strategies_.pick(drawableLocked()));
  const std::string& strategy = strategies_.name(static_cast<size_t>(sIdx));
  int tIdx = -1;
  if (auto it = targets_.find(strategy); it != targets_.end()) tIdx = static_cast<int>(it->second.pick());
  for (size_t i = 0; i < arms_.size(); ++i)
    if (arms_[i].strategyIndex == sIdx && arms_[i].targetIndex == tIdx) return i;
  throw std::logic_error("LLM bandit: no arm for strategy " + strategy);
}

void PromptBandit::reward(size_t arm, double reward) {
  const Arm& a = arms_.at(arm);
  std::lock_guard lock(mutex_);
  strategies_.reward(static_cast<size_t>(a.strategyIndex), reward);
  if (a.targetIndex >= 0) targets_.at(a.strategy).reward(static_cast<size_t>(a.targetIndex), reward);
  tallies_[static_cast<size_t>(a.strategyIndex)].programs++;
}

void PromptBandit::addCost(double cpuSeconds) {
  std::lock_guard lock(mutex_);
  costSum_ += std::max(0.0, cpuSeconds);
  ++replies_;
}

double PromptBandit::failureWeight(double cpuSeconds, double meanSeconds) {
  if (!(meanSeconds > 0) || !(cpuSeconds > 0)) return 1;
  return std::clamp(cpuSeconds / meanSeconds, 1.0, kMaxFailureWeight);
}

void PromptBandit::fail(size_t arm, double cpuSeconds) {
  const Arm& a = arms_.at(arm);
  std::lock_guard lock(mutex_);
  double weight = failureWeight(cpuSeconds, replies_ ? costSum_ / static_cast<double>(replies_) : 0);
  strategies_.reward(static_cast<size_t>(a.strategyIndex), 0, weight);
  if (a.targetIndex >= 0) targets_.at(a.strategy).reward(static_cast<size_t>(a.targetIndex), 0, weight);
  tallies_[static_cast<size_t>(a.strategyIndex)].failures++;
}

nlohmann::json PromptBandit::toJson() const {
  std::lock_guard lock(mutex_);
  nlohmann::json out{{"strategies", strategies_.toJson()},
                     {"mean_reply_cpu_s", replies_ ? costSum_ / static_cast<double>(replies_) : 0.0}};
  for (const auto& [name, b] : targets_) out["targets"][name] = b.toJson();
  std::vector<bool> drawable = drawableLocked();
  out["retired"] = nlohmann::json::array();
  for (size_t i = 0; i < drawable.size(); ++i)
    if (!drawable[i]) out["retired"].push_back(strategies_.name(i));
  return out;
}

}  // namespace tcfuzz
