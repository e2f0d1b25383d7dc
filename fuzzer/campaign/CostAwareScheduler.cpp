#include "fuzzer/campaign/CostAwareScheduler.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "oracles/judge/CompileConfig.h"

namespace tcfuzz {

using nlohmann::json;

// Why Thompson sampling and not UCB. Yield per CPU-second is the rate of a Poisson process in CPU
// time: an arm that has cost c seconds and yielded y has, from a Gamma(a, b) prior, the conjugate
// posterior Gamma(a + y, b + c) over its rate. Costs enter the posterior directly, with no rescaling
// of rewards into [0, 1]. And a campaign runs several lanes whose results arrive late: UCB is
// deterministic, so every lane would pick the same arm until a credit lands, while Thompson draws
// spread the programs in flight over the arms in proportion to how likely each is the best.
//
// Each draw mixes three parts (an arm's probability is their sum):
//   floor / |arms|                        every arm, so a zero-yield arm keeps being retried;
//   (1 - floor) * rho * prior             the configured weights, rho = k / (k + programs credited);
//   (1 - floor) * (1 - rho) * [Thompson]  the arm whose sampled rate is the largest.
// Evidence decays per credit (yield saturates as the feature set fills, so old rates overstate).
// Decay alone cannot undo that: it scales an arm's yield and its seconds alike, so an arm drawn mostly
// in the first minutes, when every program is new, keeps their rate. So an arm is credited with its
// yield relative to the dimension's baseline at that time (every arm's recent yield per CPU-second):
// arms are compared as they did against each other at the same point of the campaign.
// A compile arm is not credited with a program's new op features: the graph alone decides those, and
// crediting them would reward whichever configuration is cheapest for novelty it did not cause.

namespace {

constexpr std::array<ScheduleDimension, 7> kDimensions{ScheduleDimension::Backend, ScheduleDimension::Mode,
                                                       ScheduleDimension::Backward, ScheduleDimension::Template,
                                                       ScheduleDimension::Size,    ScheduleDimension::Entry,
                                                       ScheduleDimension::Batch};
constexpr const char* kNoTemplate = "none";
constexpr int kStatsDraws = 512;  ///< Thompson draws behind a reported share

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument("schedule: " + what); }

double numberIn(const json& v, const std::string& key, double lo, double hi) {
  if (!v.is_number() || v.get<double>() < lo || v.get<double>() > hi)
    bad(fmt::format("'{}' must be a number in [{}, {}]", key, lo, hi));
  return v.get<double>();
}

/// {"size": weight} with sizes 1 to 16 and a positive total, for the policy key `key`.
std::map<int, double> batchWeights(const json& v, const std::string& key) {
  if (!v.is_object() || v.empty()) bad(fmt::format("'{}' must be a non-empty object {{\"size\": weight}}", key));
  std::map<int, double> out;
  double total = 0;
  for (auto& [size, w] : v.items()) {
    int k = 0;
    try {
      k = std::stoi(size);
    } catch (const std::exception&) {
    }
    if (k < 1 || k > 16 || std::to_string(k) != size) bad(fmt::format("batch size '{}' must be an integer 1 to 16", size));
    total += out[k] = numberIn(w, key + "." + size, 0, 1e9);
  }
  if (total <= 0) bad(fmt::format("'{}' needs a size with a positive weight", key));
  return out;
}

ScheduleDimension dimensionNamed(const std::string& name) {
  for (auto d : kDimensions)
    if (name == toString(d)) return d;
  bad(fmt::format("unknown dimension '{}'", name));
}

/// A fuzzer_stats key part: [A-Za-z0-9_] kept, anything else '_'.
std::string keyPart(const std::string& name) {
  std::string out = name;
  for (char& ch : out)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') ch = '_';
  return out;
}

/// Whether campaigns under `pinned` draw `d` at all (mode and templates apply to Inductor only).
bool sampled(ScheduleDimension d, const PinnedCompile& pinned, const CompileMatrix& matrix, bool bandit) {
  bool inductor = !pinned.backend || *pinned.backend == oracles::kInductorBackend;
  switch (d) {
    case ScheduleDimension::Backend: return !pinned.backend;
    case ScheduleDimension::Mode: return !pinned.mode && inductor;
    case ScheduleDimension::Backward: return !pinned.backward;
    case ScheduleDimension::Template: return !pinned.inductorConfig && inductor && matrix.maxTemplates > 0;
    case ScheduleDimension::Size: return bandit;
    case ScheduleDimension::Entry: return !pinned.entryPinned();
    case ScheduleDimension::Batch: return !pinned.batchSize;
  }
  return false;
}

/// The arms a sampled configuration pulled; pinned dimensions and those it did not draw are left out.
void recordArms(const SampledCompile& sc, const CompileMatrix& matrix, const PinnedCompile& pinned, ArmPulls& pulls) {
  const oracles::CompileConfig& c = sc.config;
  // An export entry resets torch.compile's arguments and backward: those arms were not pulled.
  if (sampled(ScheduleDimension::Entry, pinned, matrix, true)) pulls.arms.emplace_back(ScheduleDimension::Entry, c.entry);
  if (!pinned.backend && !c.exports()) pulls.arms.emplace_back(ScheduleDimension::Backend, c.backend);
  if (!pinned.mode && c.usesInductor() && !c.exports())
    pulls.arms.emplace_back(ScheduleDimension::Mode, c.defaultMode() ? oracles::kDefaultModeName : c.mode);
  if (!pinned.backward && !c.exports() && !c.trains())  // training steps run their own backward
    pulls.arms.emplace_back(ScheduleDimension::Backward, sc.backward ? "on" : "off");
  if (!pinned.inductorConfig && c.usesInductor() && matrix.maxTemplates > 0) {
    if (sc.templates.empty()) pulls.arms.emplace_back(ScheduleDimension::Template, kNoTemplate);
    for (const auto& t : sc.templates) pulls.arms.emplace_back(ScheduleDimension::Template, t);
  }
}

}  // namespace

const char* toString(ScheduleDimension d) {
  switch (d) {
    case ScheduleDimension::Backend: return "backend";
    case ScheduleDimension::Mode: return "mode";
    case ScheduleDimension::Backward: return "backward";
    case ScheduleDimension::Template: return "template";
    case ScheduleDimension::Size: return "size";
    case ScheduleDimension::Entry: return "entry";
    case ScheduleDimension::Batch: return "batch";
  }
  return "?";
}

// --- SchedulePolicy ---------------------------------------------------------------------------------

json SchedulePolicy::toJson() const {
  json s = json::array();
  for (const auto& b : sizes) s.push_back({{"name", b.name}, {"scale", b.scale}, {"weight", b.weight}});
  auto weights = [](const std::map<int, double>& bySize) {
    json b = json::object();
    for (const auto& [size, w] : bySize) b[std::to_string(size)] = w;
    return b;
  };
  json priors = json::object();
  for (const auto& [context, bySize] : batchPriors) priors[context] = weights(bySize);
  return {{"bandit", bandit},
          {"batch_sizes", weights(batchSizes)},
          {"batch_priors", priors},
          {"batch_max_nodes", batchMaxNodes},
          {"floor", floorShare},
          {"prior_programs", priorPrograms},
          {"prior_yield", priorYield},
          {"signature_weight", signatureWeight},
          {"decay", decay},
          {"baseline_decay", baselineDecay},
          {"sizes", s}};
}

SchedulePolicy SchedulePolicy::fromJson(const json& doc) {
  if (!doc.is_object()) bad("must be a JSON object");
  SchedulePolicy p;
  bool priorsGiven = false;
  for (auto& [key, v] : doc.items()) {
    if (key == "bandit") {
      if (!v.is_boolean()) bad("'bandit' must be true or false");
      p.bandit = v.get<bool>();
    } else if (key == "floor") {
      p.floorShare = numberIn(v, key, 0, 1);
    } else if (key == "prior_programs") {
      p.priorPrograms = numberIn(v, key, 0, 1e9);
    } else if (key == "prior_yield") {
      p.priorYield = numberIn(v, key, 1e-6, 1e6);
    } else if (key == "signature_weight") {
      p.signatureWeight = numberIn(v, key, 0, 1e6);
    } else if (key == "decay") {
      p.decay = numberIn(v, key, 1e-6, 1);
    } else if (key == "baseline_decay") {
      p.baselineDecay = numberIn(v, key, 1e-6, 1);
    } else if (key == "batch_max_nodes") {
      p.batchMaxNodes = static_cast<int>(numberIn(v, key, 1, 4096));
      if (p.batchMaxNodes != v.get<double>()) bad("'batch_max_nodes' must be an integer");
    } else if (key == "batch_sizes") {
      p.batchSizes = batchWeights(v, key);
    } else if (key == "batch_priors") {
      if (!v.is_object()) bad("'batch_priors' must be an object {\"context\": {\"size\": weight}}");
      p.batchPriors.clear();
      for (auto& [context, bySize] : v.items()) p.batchPriors[context] = batchWeights(bySize, "batch_priors." + context);
      priorsGiven = true;
    } else if (key == "sizes") {
      if (!v.is_array() || v.empty()) bad("'sizes' must be a non-empty array of {name, scale, weight}");
      p.sizes.clear();
      std::set<std::string> names;
      double total = 0;
      for (const auto& b : v) {
        if (!b.is_object() || !b.contains("name") || !b["name"].is_string() || b["name"].get<std::string>().empty())
          bad("each size bucket needs a non-empty string 'name'");
        for (auto& [bk, bv] : b.items())
          if (bk != "name" && bk != "scale" && bk != "weight") bad(fmt::format("size bucket key '{}' is unknown", bk));
        SizeBucket bucket{b["name"].get<std::string>(), 1, 1};
        if (!names.insert(bucket.name).second) bad(fmt::format("size bucket '{}' appears twice", bucket.name));
        if (b.contains("scale")) bucket.scale = numberIn(b["scale"], "sizes." + bucket.name + ".scale", 0.01, 100);
        if (b.contains("weight")) bucket.weight = numberIn(b["weight"], "sizes." + bucket.name + ".weight", 0, 1e9);
        total += bucket.weight;
        p.sizes.push_back(std::move(bucket));
      }
      if (total <= 0) bad("'sizes' needs a bucket with a positive weight");
    } else {
      bad(fmt::format("unknown key '{}'", key));
    }
  }
  if (priorsGiven)
    for (const auto& [context, bySize] : p.batchPriors)
      for (const auto& [size, w] : bySize)
        if (!p.batchSizes.count(size))
          bad(fmt::format("batch_priors.{}: batch size {} is not one of batch_sizes'", context, size));
  return p;
}

// --- CostAwareScheduler -----------------------------------------------------------------------------

CostAwareScheduler::CostAwareScheduler(SchedulePolicy policy) : policy_(std::move(policy)) {}

std::vector<CostAwareScheduler::Arm> CostAwareScheduler::armsOf(ScheduleDimension d, const CompileShares& configured,
                                                                int maxTemplates) const {
  std::vector<Arm> arms;
  auto fromWeights = [&](const std::map<std::string, double>& weights) {
    for (const auto& [name, w] : weights)
      if (w > 0) arms.push_back({name, w});
  };
  switch (d) {
    case ScheduleDimension::Backend: fromWeights(configured.backends); break;
    case ScheduleDimension::Mode: fromWeights(configured.modes); break;
    case ScheduleDimension::Backward:
      if (configured.backwardShare > 0) arms.push_back({"on", configured.backwardShare});
      if (configured.backwardShare < 1) arms.push_back({"off", 1 - configured.backwardShare});
      break;
    case ScheduleDimension::Template: {
      double share = maxTemplates > 0 ? configured.templateShare : 0;
      double total = 0;
      for (const auto& [name, w] : configured.templates) total += w;
      if (total <= 0) share = 0;
      if (share < 1) arms.push_back({kNoTemplate, 1 - share});
      if (share > 0)
        for (const auto& [name, w] : configured.templates)
          if (w > 0) arms.push_back({name, share * w / total});
      break;
    }
    case ScheduleDimension::Entry: fromWeights(configured.entries); break;
    case ScheduleDimension::Size:
      for (const auto& b : policy_.sizes)
        if (b.weight > 0) arms.push_back({b.name, b.weight});
      break;
    case ScheduleDimension::Batch:
      for (const auto& [size, w] : policy_.batchSizes)
        if (w > 0) arms.push_back({std::to_string(size), w});
      break;
  }
  double total = 0;
  for (const auto& a : arms) total += a.prior;
  for (auto& a : arms) a.prior = total > 0 ? a.prior / total : 1.0 / static_cast<double>(arms.size());
  return arms;
}

std::vector<double> CostAwareScheduler::mix(ScheduleDimension d, const std::vector<Arm>& arms, gen::Rng& rng,
                                            int draws) const {
  size_t n = arms.size();
  if (n <= 1) return std::vector<double>(n, 1.0);
  auto dim = dimensions_.find(d);
  std::vector<ArmStats> evidence(n);
  int64_t ownPrograms = 0;
  for (size_t i = 0; i < n; ++i) {
    if (dim != dimensions_.end())
      if (auto it = dim->second.arms.find(arms[i].name); it != dim->second.arms.end()) evidence[i] = it->second;
    ownPrograms += evidence[i].pulls;
  }
  // A batch context's prior fades with its own programs: another context's say nothing of what a size costs here.
  int64_t credits = d == ScheduleDimension::Batch ? ownPrograms : dim == dimensions_.end() ? 0 : dim->second.credits;
  double rho = policy_.priorPrograms > 0 ? policy_.priorPrograms / (policy_.priorPrograms + static_cast<double>(credits))
                                         : 0;
  std::vector<double> thompson(n, 0);
  if (rho < 1) {
    double pooledYield = 0, pooledCpu = 0;
    for (size_t i = 0; i < n; ++i) {
      pooledYield += evidence[i].recentYield;
      pooledCpu += evidence[i].recentCpu;
    }
    // Each arm's prior: Gamma(a, a / pooled rate), worth `a` yield units, so an arm with little
    // evidence is drawn near its dimension's pooled rate (one yield per second before any evidence).
    double a = policy_.priorYield;
    double pooledRate = (pooledYield + a) / (pooledCpu + a);
    for (int k = 0; k < draws; ++k) {
      size_t best = 0;
      double bestRate = -1;
      for (size_t i = 0; i < n; ++i) {
        double shape = a + evidence[i].recentYield, rate = a / pooledRate + evidence[i].recentCpu;
        double sample = std::gamma_distribution<double>(shape, 1.0 / rate)(rng.engine());
        if (sample > bestRate) {
          bestRate = sample;
          best = i;
        }
      }
      thompson[best] += 1.0 / draws;
    }
  }
  std::vector<double> p(n);
  for (size_t i = 0; i < n; ++i)
    p[i] = policy_.floorShare / static_cast<double>(n) +
           (1 - policy_.floorShare) * (rho * arms[i].prior + (1 - rho) * thompson[i]);
  return p;
}

SampledCompile CostAwareScheduler::sampleCompile(const CompileMatrix& matrix, gen::Rng& rng, const std::string& device,
                                                 const PinnedCompile& pinned, ArmPulls& pulls) const {
  SampledCompile sc;
  if (!policy_.bandit) {
    sc = matrix.sample(rng, device, pinned);
  } else {
    CompileShares configured = matrix.shares(device), drawn = configured;
    // One Thompson draw per dimension: drawing from the mixture is then exactly Thompson sampling
    // in the bandit's part.
    auto probabilities = [&](ScheduleDimension d) {
      std::vector<Arm> arms = armsOf(d, configured, matrix.maxTemplates);
      std::vector<double> p = mix(d, arms, rng, 1);
      std::map<std::string, double> out;
      for (size_t i = 0; i < arms.size(); ++i) out[arms[i].name] = p[i];
      return out;
    };
    if (sampled(ScheduleDimension::Backend, pinned, matrix, true))
      drawn.backends = probabilities(ScheduleDimension::Backend);
    if (sampled(ScheduleDimension::Mode, pinned, matrix, true)) drawn.modes = probabilities(ScheduleDimension::Mode);
    if (sampled(ScheduleDimension::Backward, pinned, matrix, true)) {
      auto p = probabilities(ScheduleDimension::Backward);
      drawn.backwardShare = p.count("on") ? p["on"] : 0;
    }
    if (sampled(ScheduleDimension::Template, pinned, matrix, true)) {
      auto p = probabilities(ScheduleDimension::Template);
      drawn.templateShare = p.count(kNoTemplate) ? 1 - p[kNoTemplate] : 1;
      for (auto& [name, w] : drawn.templates) w = p.count(name) ? p[name] : 0;
    }
    if (sampled(ScheduleDimension::Entry, pinned, matrix, true)) drawn.entries = probabilities(ScheduleDimension::Entry);
    sc = matrix.sample(rng, device, pinned, drawn);
  }
  recordArms(sc, matrix, pinned, pulls);
  return sc;
}

gen::NodeRange CostAwareScheduler::rangeOf(const SizeBucket& bucket, const gen::GenPolicy& generation) const {
  auto scaled = [&](int nodes) { return static_cast<int>(std::lround(nodes * bucket.scale)); };
  int lo = std::clamp(scaled(generation.minNodes), 1, 1000);
  return {lo, std::clamp(scaled(generation.maxNodes), lo, 1000)};
}

gen::NodeRange CostAwareScheduler::sampleSize(const gen::GenPolicy& generation, gen::Rng& rng, ArmPulls& pulls) const {
  if (!policy_.bandit) return {generation.minNodes, generation.maxNodes};
  std::vector<Arm> arms = armsOf(ScheduleDimension::Size, {}, 0);
  size_t k = rng.weighted(mix(ScheduleDimension::Size, arms, rng, 1));
  pulls.arms.emplace_back(ScheduleDimension::Size, arms[k].name);
  for (const auto& b : policy_.sizes)
    if (b.name == arms[k].name) return rangeOf(b, generation);
  return {generation.minNodes, generation.maxNodes};
}

std::string CostAwareScheduler::batchContext(const SampledCompile& compile) {
  return compile.config.entry + (compile.backward ? "+backward" : "");
}

std::vector<CostAwareScheduler::Arm> CostAwareScheduler::batchArms(const std::string& context) const {
  std::vector<Arm> arms = armsOf(ScheduleDimension::Batch, {}, 0);
  if (auto own = policy_.batchPriors.find(context); own != policy_.batchPriors.end()) {
    double total = 0;
    for (Arm& a : arms) {
      auto w = own->second.find(std::stoi(a.name));
      total += a.prior = w == own->second.end() ? 0 : w->second;
    }
    for (Arm& a : arms) a.prior = total > 0 ? a.prior / total : 1.0 / static_cast<double>(arms.size());
  }
  for (Arm& a : arms) a.name = context + "/" + a.name;
  return arms;
}

std::vector<double> CostAwareScheduler::expectedBatchSeconds(const std::vector<Arm>& arms,
                                                             const std::string& context) const {
  std::vector<ArmStats> own;
  ArmStats all;  // the context's programs at every size
  for (const Arm& a : arms) {
    own.push_back(stats(ScheduleDimension::Batch, a.name));
    all.pulls += own.back().pulls;
    all.cpuSeconds += own.back().cpuSeconds;
  }
  std::vector<double> seconds;
  for (size_t i = 0; i < arms.size(); ++i) {
    const ArmStats& known = own[i].pulls > 0 ? own[i] : all;
    seconds.push_back(known.pulls > 0 ? batchSizeOf(arms[i], context) * known.cpuSeconds /
                                            static_cast<double>(known.pulls)
                                      : 0);
  }
  return seconds;
}

int CostAwareScheduler::batchSizeOf(const Arm& arm, const std::string& context) {
  return std::stoi(arm.name.substr(context.size() + 1));
}

int CostAwareScheduler::sampleBatch(gen::Rng& rng, const std::string& context, ArmPulls& pulls,
                                    double secondsLeft) const {
  std::vector<Arm> arms = batchArms(context);
  std::vector<double> p(arms.size());
  if (policy_.bandit) {
    p = mix(ScheduleDimension::Batch, arms, rng, 1);
  } else {
    for (size_t i = 0; i < arms.size(); ++i) p[i] = arms[i].prior;
  }
  if (std::isfinite(secondsLeft)) {
    size_t smallest = 0;
    for (size_t i = 1; i < arms.size(); ++i)
      if (batchSizeOf(arms[i], context) < batchSizeOf(arms[smallest], context)) smallest = i;
    std::vector<double> seconds = expectedBatchSeconds(arms, context);
    double kept = 0;
    for (size_t i = 0; i < arms.size(); ++i) {
      if (i != smallest && seconds[i] > secondsLeft) p[i] = 0;
      kept += p[i];
    }
    if (kept <= 0) p[smallest] = 1;
  }
  size_t k = rng.weighted(p);
  pulls.arms.emplace_back(ScheduleDimension::Batch, arms[k].name);
  return batchSizeOf(arms[k], context);
}

void CostAwareScheduler::credit(const ArmPulls& pulls, double cpuSeconds, const ProgramYield& programYield) {
  cpuSeconds = std::max(0.0, cpuSeconds);
  std::set<ScheduleDimension> decayed;
  for (const auto& [d, name] : pulls.arms) {
    Dimension& dim = dimensions_[d];
    double yield = yieldFor(d, programYield);
    // The baseline before this program (one yield per second before any evidence, as the prior).
    double a = policy_.priorYield;
    double baseline = (dim.baseYield + a) / (dim.baseCpu + a);
    // A batch's members are the programs they would be alone: a batch size changes what a program costs, not what
    // it yields, so its arms are weighed by programs judged per CPU-second (yield per CPU-second up to the factor
    // every size shares), not by the heavy-tailed luck of which programs each judged. What a program costs at a
    // size does not fade as the campaign's features fill, so this evidence is never decayed.
    bool costOnly = d == ScheduleDimension::Batch;
    if (decayed.insert(d).second) {
      dim.credits++;
      for (auto& [other, st] : dim.arms) {
        if (costOnly) break;
        st.recentCpu *= policy_.decay;
        st.recentYield *= policy_.decay;
      }
      dim.baseYield = dim.baseYield * policy_.baselineDecay + yield;
      dim.baseCpu = dim.baseCpu * policy_.baselineDecay + cpuSeconds;
    }
    ArmStats& st = dim.arms[name];
    st.pulls++;
    st.cpuSeconds += cpuSeconds;
    st.yield += yield;
    st.recentCpu += cpuSeconds;
    st.recentYield += costOnly ? 1 : yield / baseline;
  }
}

double CostAwareScheduler::yieldFor(ScheduleDimension d, const ProgramYield& y) const {
  // A size and a batch size choose which graphs are judged (a batch: how many per compile), so their op features count.
  bool graphs = d == ScheduleDimension::Size || d == ScheduleDimension::Batch;
  int features = graphs ? y.newFeatures : y.newFeatures - y.newOpFeatures;
  return std::max(0, features) + policy_.signatureWeight * std::max(0, y.newSignatures);
}

std::map<std::string, double> CostAwareScheduler::shares(ScheduleDimension d, const CompileMatrix& matrix,
                                                         const std::string& device) const {
  std::vector<std::vector<Arm>> groups;  // arms drawn together: a dimension's, or one batch context's
  if (d == ScheduleDimension::Batch) {
    std::set<std::string> contexts;
    if (auto dim = dimensions_.find(d); dim != dimensions_.end())
      for (const auto& [name, st] : dim->second.arms)
        if (size_t slash = name.rfind('/'); slash != std::string::npos) contexts.insert(name.substr(0, slash));
    for (const auto& context : contexts) groups.push_back(batchArms(context));
  } else {
    groups.push_back(armsOf(d, matrix.shares(device), matrix.maxTemplates));
  }
  std::map<std::string, double> out;
  for (const auto& arms : groups) {
    std::vector<double> p(arms.size());
    if (policy_.bandit) {
      gen::Rng rng(0x5eed0000ULL + static_cast<uint64_t>(d));
      p = mix(d, arms, rng, kStatsDraws);
    } else {
      for (size_t i = 0; i < arms.size(); ++i) p[i] = arms[i].prior;
    }
    for (size_t i = 0; i < arms.size(); ++i) out[arms[i].name] = p[i];
  }
  return out;
}

ArmStats CostAwareScheduler::stats(ScheduleDimension d, const std::string& arm) const {
  auto dim = dimensions_.find(d);
  if (dim == dimensions_.end()) return {};
  auto it = dim->second.arms.find(arm);
  return it == dim->second.arms.end() ? ArmStats{} : it->second;
}

std::vector<std::pair<std::string, std::string>> CostAwareScheduler::statsLines(const CompileMatrix& matrix,
                                                                                const gen::GenPolicy& generation,
                                                                                const std::string& device,
                                                                                const PinnedCompile& pinned) const {
  std::vector<std::pair<std::string, std::string>> lines;
  lines.emplace_back("schedule", policy_.bandit ? fmt::format("bandit floor={:g}", policy_.floorShare) : "fixed");
  for (auto d : kDimensions) {
    if (!sampled(d, pinned, matrix, policy_.bandit)) continue;
    std::map<std::string, double> p = shares(d, matrix, device);
    std::set<std::string> names;
    for (const auto& [name, share] : p) names.insert(name);
    if (auto dim = dimensions_.find(d); dim != dimensions_.end())
      for (const auto& [name, st] : dim->second.arms) names.insert(name);  // a disabled template keeps its line
    for (const auto& name : names) {
      ArmStats st = stats(d, name);
      std::string value = fmt::format("pulls={} cpu_s={:.1f} yield={:g} yield_per_cpu_h={:.1f} share={:.3f}", st.pulls,
                                      st.cpuSeconds, st.yield, st.cpuSeconds > 0 ? 3600 * st.yield / st.cpuSeconds : 0,
                                      p.count(name) ? p[name] : 0);
      if (d == ScheduleDimension::Size)
        for (const auto& b : policy_.sizes)
          if (b.name == name) {
            gen::NodeRange r = rangeOf(b, generation);
            value += fmt::format(" nodes={}-{}", r.minNodes, r.maxNodes);
          }
      lines.emplace_back(fmt::format("arm_{}_{}", toString(d), keyPart(name)), value);
    }
  }
  return lines;
}

json CostAwareScheduler::toJson() const {
  json dims = json::object();
  for (const auto& [d, dim] : dimensions_) {
    json arms = json::object();
    for (const auto& [name, st] : dim.arms)
      arms[name] = {{"pulls", st.pulls},
                    {"cpu_s", st.cpuSeconds},
                    {"yield", st.yield},
                    {"recent_cpu_s", st.recentCpu},
                    {"recent_yield", st.recentYield}};
    dims[toString(d)] = {
        {"credits", dim.credits}, {"base_yield", dim.baseYield}, {"base_cpu_s", dim.baseCpu}, {"arms", arms}};
  }
  return {{"version", 1}, {"dimensions", dims}};
}

void CostAwareScheduler::restore(const json& doc) {
  if (!doc.is_object() || doc.value("version", 0) != 1 || !doc.contains("dimensions") || !doc["dimensions"].is_object())
    bad("arm statistics need {\"version\": 1, \"dimensions\": {...}}");
  std::map<ScheduleDimension, Dimension> restored;
  auto number = [](const json& j, const char* key, const std::string& where) {
    if (!j.contains(key) || !j[key].is_number() || j[key].get<double>() < 0)
      bad(fmt::format("{}.{} must be a number >= 0", where, key));
    return j[key].get<double>();
  };
  for (const auto& [dname, dj] : doc["dimensions"].items()) {
    Dimension& dim = restored[dimensionNamed(dname)];
    if (!dj.is_object() || !dj.contains("arms") || !dj["arms"].is_object()) bad(dname + " needs an 'arms' object");
    dim.credits = static_cast<int64_t>(number(dj, "credits", dname));
    if (dj.contains("base_yield") || dj.contains("base_cpu_s")) {  // absent in older campaigns: rebuilt as it goes
      dim.baseYield = number(dj, "base_yield", dname);
      dim.baseCpu = number(dj, "base_cpu_s", dname);
    }
    for (const auto& [aname, aj] : dj["arms"].items()) {
      std::string where = dname + "." + aname;
      if (!aj.is_object()) bad(where + " must be an object");
      ArmStats& st = dim.arms[aname];
      st.pulls = static_cast<int64_t>(number(aj, "pulls", where));
      st.cpuSeconds = number(aj, "cpu_s", where);
      st.yield = number(aj, "yield", where);
      st.recentCpu = number(aj, "recent_cpu_s", where);
      st.recentYield = number(aj, "recent_yield", where);
    }
  }
  dimensions_ = std::move(restored);
}

}  // namespace tcfuzz
