#pragma once
// Cost-aware scheduling: what each choice of the compile matrix and of the program size costs in
// torch CPU-seconds and yields in new features and signatures, and a bandit that turns that record
// into the shares the next program is drawn from. Off, the fixed shares draw as before.
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzzer/campaign/CompileMatrix.h"
#include "generators/Generator.h"
#include "generators/ir/Rng.h"

namespace tcfuzz {

/// A program-size arm: the generation policy's node range scaled by `scale`.
struct SizeBucket {
  std::string name;
  double scale = 1;
  double weight = 1;  ///< prior share, relative to the other buckets
};

/// The bandit's parameters, as data (the "schedule" key of a campaign policy).
struct SchedulePolicy {
  bool bandit = true;           ///< false: the fixed shares, draw for draw as without a scheduler
  double floorShare = 0.15;     ///< part of every draw spread evenly: each arm keeps >= floorShare/|arms|
  double priorPrograms = 40;    ///< the configured weights fade as k/(k+n) over a dimension's n credited programs
  double priorYield = 2;        ///< each arm's Gamma prior, in yield units, centred on its dimension's pooled rate
  double signatureWeight = 20;  ///< yield of a new signature, in new-feature units
  double decay = 0.998;         ///< per program credited to a dimension, older evidence counts this much less
  /// Per program credited to a dimension, its baseline rate (every arm's yield per CPU-second together)
  /// forgets this fast; an arm's evidence is its yield divided by the baseline when it was earned.
  double baselineDecay = 0.98;
  std::vector<SizeBucket> sizes{{"small", 0.5, 1}, {"medium", 1, 2}, {"large", 2, 1}};
  /// Batch sizes (programs judged under one compile, BatchTester) and their prior weights. Measured per member (torch
  /// CPU-s, 30-minute default campaign on 2 CPU cores): 8 is the cheapest size of every entry but torch.compile with a
  /// backward (export 0.59 against 1.61 alone, its decompositions 1.16 against 2.39, AOTInductor 3.8 against 13.8).
  std::map<int, double> batchSizes{{1, 1}, {2, 1}, {4, 2}, {8, 4}};
  /// Per batch context (CostAwareScheduler::batchContext), prior weights over batchSizes' sizes that replace
  /// batchSizes' weights there (a size it leaves out keeps its arm, with no prior weight). Each context's prior fades
  /// with that context's own programs. torch.compile with a backward compiles each member's graphs as alone, and a
  /// batch of 8 there cost 24 s per member against 9 alone.
  std::map<std::string, std::map<int, double>> batchPriors{{"compile+backward", {{1, 2}, {2, 2}, {4, 1}}}};
  /// A batch's members hold at most this many graph nodes together (the job's memory and time).
  int batchMaxNodes = 256;

  nlohmann::json toJson() const;
  /// Keys: bandit, floor, prior_programs, prior_yield, signature_weight, decay, baseline_decay, sizes ([{name, scale,
  /// weight}]); keys not given keep their defaults; unknown keys and bad values raise
  /// std::invalid_argument naming them. batch_sizes: {"1": weight, "4": weight, ...}, sizes 1 to 16;
  /// batch_priors: {"<context>": {"1": weight, ...}}, sizes among batch_sizes'; batch_max_nodes: 1 to 4096.
  static SchedulePolicy fromJson(const nlohmann::json& doc);
};

/// The choices the scheduler learns over; dynamic and fullgraph keep the matrix's fixed shares.
enum class ScheduleDimension { Backend, Mode, Backward, Template, Size, Entry, Batch };
/// "backend", "mode", "backward", "template", "size", "entry", "batch".
const char* toString(ScheduleDimension d);

/// The arms one program drew (pinned dimensions never appear), credited once its result is in.
/// A program with two templates pulls both template arms.
struct ArmPulls {
  std::vector<std::pair<ScheduleDimension, std::string>> arms;
};

/// What one program added to the campaign.
struct ProgramYield {
  int newFeatures = 0;    ///< all its new features
  int newOpFeatures = 0;  ///< of which "op:" features, which its graph alone decides, whatever the compile choices
  int newSignatures = 0;
};

/// What one arm has cost and yielded.
struct ArmStats {
  int64_t pulls = 0;                      ///< programs credited
  double cpuSeconds = 0, yield = 0;       ///< totals, for fuzzer_stats
  double recentCpu = 0, recentYield = 0;  ///< the evidence the bandit weighs (decayed; yield relative to the baseline;
                                          ///< a batch size's: programs and their CPU-seconds, undecayed)
};

/// Draws each dimension's arm by Thompson sampling on yield per CPU-second, mixed with the
/// configured weights as the prior and a uniform floor, and credits the arms with what programs
/// cost and yield. Not thread-safe: the campaign calls it under its mutex. With the bandit on, a
/// program's draws depend on which programs were credited before it (completion order across
/// lanes), so only a bandit-off campaign replays its configurations from (seed, index).
class CostAwareScheduler {
 public:
  explicit CostAwareScheduler(SchedulePolicy policy = {});
  const SchedulePolicy& policy() const { return policy_; }

  /// One program's compile configuration. Bandit off: exactly matrix.sample(rng, device, pinned).
  /// On: the same draw from the bandit's shares. Either way the arms drawn are appended to `pulls`.
  SampledCompile sampleCompile(const CompileMatrix& matrix, gen::Rng& rng, const std::string& device,
                               const PinnedCompile& pinned, ArmPulls& pulls) const;
  /// The node range of one generated program. Bandit off: the policy's own range, with no draw.
  /// On: a size bucket's range, appended to `pulls`.
  gen::NodeRange sampleSize(const gen::GenPolicy& generation, gen::Rng& rng, ArmPulls& pulls) const;
  /// How many programs to judge under the next compile (SchedulePolicy::batchSizes) when its first program drew the
  /// configuration of batch context `context` (batchContext), appended to `pulls` as arm "<context>/<k>": the
  /// bandit's draw, or the configured weights' with the bandit off. What a batch saves depends on the configuration
  /// (an export batch's members share one trace; under torch.compile with backward each member's graphs compile as
  /// they would alone), so each context's sizes are weighed on that context's evidence only.
  /// `secondsLeft`: the time the campaign has left to judge it. A size is not drawn when its batch would outlast
  /// that, at what this context's programs have cost at that size (at any size, before that size has evidence),
  /// since a batch still running at the end is abandoned whole; the smallest size always may be. (So near a stop,
  /// even a bandit-off campaign's sizes depend on timing.)
  int sampleBatch(gen::Rng& rng, const std::string& context, ArmPulls& pulls,
                  double secondsLeft = std::numeric_limits<double>::infinity()) const;
  /// The batch context of a drawn configuration: its entry, with "+backward" when it runs backward.
  static std::string batchContext(const SampledCompile& compile);
  /// Credits every arm of `pulls` with the program's torch CPU-seconds and yieldFor(its dimension); a batch-size
  /// arm with one program instead, never decayed (a batch size changes what a program costs, not what it yields).
  void credit(const ArmPulls& pulls, double cpuSeconds, const ProgramYield& yield);
  /// What a program yields to an arm of `dimension`: its new features plus signatureWeight per new
  /// signature; for the compile dimensions without the op features (a program's size does choose them).
  double yieldFor(ScheduleDimension dimension, const ProgramYield& yield) const;

  /// The probability of drawing each arm of `dimension` now (for templates: as the first template; for batch sizes:
  /// within each batch context credited so far);
  /// the bandit's part estimated from seeded Thompson draws, so the same state gives the same shares.
  std::map<std::string, double> shares(ScheduleDimension dimension, const CompileMatrix& matrix,
                                       const std::string& device) const;
  /// The evidence of one arm (zeros when it was never credited).
  ArmStats stats(ScheduleDimension dimension, const std::string& arm) const;
  /// fuzzer_stats lines: "schedule" (bandit or fixed), then one per arm of each dimension the
  /// campaign samples, "arm_<dimension>_<arm>" -> "pulls=N cpu_s=X yield=Y yield_per_cpu_h=Z share=P"
  /// (size arms add "nodes=MIN-MAX"); arm names with characters other than [A-Za-z0-9_] get '_'.
  std::vector<std::pair<std::string, std::string>> statsLines(const CompileMatrix& matrix,
                                                              const gen::GenPolicy& generation,
                                                              const std::string& device,
                                                              const PinnedCompile& pinned) const;

  /// The arm statistics, to carry them across --resume.
  nlohmann::json toJson() const;
  /// Replaces the arm statistics with toJson()'s; std::invalid_argument for a malformed document.
  void restore(const nlohmann::json& doc);

 private:
  struct Arm {
    std::string name;
    double prior = 0;  ///< normalized configured share
  };
  struct Dimension {
    int64_t credits = 0;                ///< programs credited
    double baseYield = 0, baseCpu = 0;  ///< every arm's recent yield and CPU-seconds (decayed by baselineDecay)
    std::map<std::string, ArmStats> arms;
  };

  std::vector<Arm> armsOf(ScheduleDimension dimension, const CompileShares& configured, int maxTemplates) const;
  /// The batch-size arms of one batch context: "<context>/<k>".
  std::vector<Arm> batchArms(const std::string& context) const;
  /// What a batch of each of `arms`' sizes (a batch context's) is expected to cost in CPU-seconds: its size times
  /// its programs' mean cost so far, else the context's; 0 (nothing known) before the context has any.
  std::vector<double> expectedBatchSeconds(const std::vector<Arm>& arms, const std::string& context) const;
  /// The size k of a batch context's arm "<context>/<k>".
  static int batchSizeOf(const Arm& arm, const std::string& context);
  /// floor/|arms| + (1 - floor) * (rho * prior + (1 - rho) * Thompson winner frequencies over `draws`); rho fades
  /// with the dimension's credited programs, for batch sizes with those of `arms` (one batch context) only.
  std::vector<double> mix(ScheduleDimension dimension, const std::vector<Arm>& arms, gen::Rng& rng, int draws) const;
  gen::NodeRange rangeOf(const SizeBucket& bucket, const gen::GenPolicy& generation) const;

  SchedulePolicy policy_;
  std::map<ScheduleDimension, Dimension> dimensions_;
};

}  // namespace tcfuzz
