// Cost-aware scheduling: the bandit learns yield per CPU-second from a synthetic feed, the floor keeps
// every arm alive, pinned dimensions stay pinned, bandit-off replays the fixed shares draw for draw,
// and the policy and arm statistics round-trip through JSON.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fuzzer/campaign/Campaign.h"
#include "fuzzer/campaign/CostAwareScheduler.h"

namespace tcfuzz {
namespace {

using nlohmann::json;

SchedulePolicy fixedShares() {
  SchedulePolicy p;
  p.bandit = false;
  return p;
}

/// The arm `pulls` drew in dimension `d` ("" when none).
std::string armOf(const ArmPulls& pulls, ScheduleDimension d) {
  for (const auto& [dim, arm] : pulls.arms)
    if (dim == d) return arm;
  return "";
}

uint64_t fnv1a(const std::string& s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

/// A fingerprint of 1000 draws: 400 on CPU and 400 on CUDA from two seeds, 200 per-program streams
/// with backward and mode pinned. Its value was taken from CompileMatrix::sample before the scheduler
/// existed; `draw` is the sampler under test.
template <class Draw>
uint64_t drawFingerprint(Draw draw, std::string* firstDraw) {
  uint64_t h = 1469598103934665603ULL;
  gen::Rng a(2024);
  for (int i = 0; i < 400; ++i) {
    std::string d = draw(a, "cpu", PinnedCompile{}).nonDefault().dump();
    if (i == 0) *firstDraw = d;
    h = fnv1a(d + "\n", h);
  }
  gen::Rng b(7);
  for (int i = 0; i < 400; ++i) h = fnv1a(draw(b, "cuda:0", PinnedCompile{}).nonDefault().dump() + "\n", h);
  PinnedCompile pinned;
  pinned.backward = true;
  pinned.mode = "default";
  for (uint64_t i = 0; i < 200; ++i) {
    gen::Rng r = gen::Rng::forProgram(99, i);
    h = fnv1a(draw(r, "cpu", pinned).nonDefault().dump() + "\n", h);
  }
  return h;
}

// Changes when the default matrix does: last with the entry points (drawn last, after torch.compile's
// arguments), which every draw sees.
constexpr uint64_t kFixedShareFingerprint = 0x5e3e9b882f7e26f3ULL;
const char* kFixedShareFirstDraw =
    R"({"backward":true,"inductor_config":{"aggressive_fusion":true,"max_fusion_size":256,"permute_fusion":true},)"
    R"("templates":["aggressive_fusion","permute_fusion"]})";

TEST(CostAwareScheduler, BanditOffReplaysTheFixedShareDraws) {
  CompileMatrix m;
  CostAwareScheduler scheduler(fixedShares());
  // Evidence that would move a bandit a long way changes nothing when it is off.
  ArmPulls favoured{{{ScheduleDimension::Backend, "eager"}, {ScheduleDimension::Backward, "off"}}};
  for (int i = 0; i < 200; ++i) scheduler.credit(favoured, 1, {100, 0, 1});
  std::string first;
  ArmPulls pulls;
  uint64_t h = drawFingerprint(
      [&](gen::Rng& rng, const std::string& device, const PinnedCompile& pinned) {
        return scheduler.sampleCompile(m, rng, device, pinned, pulls);
      },
      &first);
  EXPECT_EQ(h, kFixedShareFingerprint);
  EXPECT_EQ(first, kFixedShareFirstDraw);
  // The matrix's own sample() and the explicit configured shares draw the same sequence.
  EXPECT_EQ(drawFingerprint([&](gen::Rng& rng, const std::string& d, const PinnedCompile& p) { return m.sample(rng, d, p); },
                            &first),
            kFixedShareFingerprint);
  EXPECT_EQ(drawFingerprint([&](gen::Rng& rng, const std::string& d,
                                const PinnedCompile& p) { return m.sample(rng, d, p, m.shares(d)); },
                            &first),
            kFixedShareFingerprint);
  // The program size is the generation policy's, and drawing it takes nothing from the stream.
  gen::GenPolicy generation;
  gen::Rng rng(5), twin(5);
  ArmPulls sizePulls;
  gen::NodeRange range = scheduler.sampleSize(generation, rng, sizePulls);
  EXPECT_EQ(range.minNodes, generation.minNodes);
  EXPECT_EQ(range.maxNodes, generation.maxNodes);
  EXPECT_TRUE(sizePulls.arms.empty());
  EXPECT_EQ(rng.uniform(0, 1 << 30), twin.uniform(0, 1 << 30));
}

TEST(CostAwareScheduler, TenfoldYieldPerCpuSecondIsDrawnMostOften) {
  CompileMatrix m;  // eager has the smallest configured weight: 1 of 10
  m.entries = {{"compile", 1}};  // every draw through torch.compile, so every one pulls a backend arm
  CostAwareScheduler scheduler;
  std::map<std::string, int> backends;
  for (uint64_t i = 0; i < 3000; ++i) {
    gen::Rng rng = gen::Rng::forProgram(11, i);
    ArmPulls pulls;
    SampledCompile sc = scheduler.sampleCompile(m, rng, "cpu", {}, pulls);
    std::string backend = armOf(pulls, ScheduleDimension::Backend);
    ASSERT_EQ(backend, sc.config.backend);
    // eager yields 1 per CPU-second, the others 0.1; costs differ, so per program eager yields least.
    double cpu = backend == "inductor" ? 40 : backend == "aot_eager" ? 20 : 2;
    scheduler.credit(pulls, cpu, {backend == "inductor" ? 4 : 2, 0, 0});
    if (i >= 2000) backends[backend]++;
  }
  EXPECT_GT(backends["eager"], backends["inductor"]);
  EXPECT_GT(backends["eager"], backends["aot_eager"]);
  EXPECT_GT(backends["eager"], 600) << backends["eager"];
  auto shares = scheduler.shares(ScheduleDimension::Backend, m, "cpu");
  EXPECT_GT(shares["eager"], 0.6);
  double total = 0;
  for (const auto& [arm, p] : shares) total += p;
  EXPECT_NEAR(total, 1, 1e-9);
  ArmStats eager = scheduler.stats(ScheduleDimension::Backend, "eager");
  EXPECT_DOUBLE_EQ(eager.yield, eager.cpuSeconds);

  // The same for program sizes: large programs cost most and yield 10x per CPU-second.
  CostAwareScheduler sizes;
  gen::GenPolicy generation;
  std::map<std::string, int> drawn;
  for (uint64_t i = 0; i < 3000; ++i) {
    gen::Rng rng = gen::Rng::forProgram(12, i);
    ArmPulls pulls;
    sizes.sampleSize(generation, rng, pulls);
    std::string size = armOf(pulls, ScheduleDimension::Size);
    double cpu = size == "small" ? 10 : size == "medium" ? 20 : 40;
    int features = size == "small" ? 1 : size == "medium" ? 2 : 40;
    sizes.credit(pulls, cpu, {features, features, 0});  // op features count for the size
    if (i >= 2000) drawn[size]++;
  }
  EXPECT_GT(drawn["large"], 600) << drawn["large"];
}

// Batch sizes are arms like the others: a batch of 8 judges a program for a third of a lone program's CPU, with the
// same features per program, so it is drawn most once credited; bandit off, the configured weights draw.
TEST(CostAwareScheduler, CheaperBatchSizesAreDrawnMostOften) {
  CostAwareScheduler scheduler;
  std::map<int, int> drawn;
  for (uint64_t i = 0; i < 3000; ++i) {
    gen::Rng rng = gen::Rng::forProgram(13, i);
    ArmPulls pulls;
    int size = scheduler.sampleBatch(rng, "compile", pulls);
    ASSERT_EQ(armOf(pulls, ScheduleDimension::Batch), "compile/" + std::to_string(size));
    double cpu = size == 1 ? 12 : size == 2 ? 8 : size == 4 ? 6 : 4;  // per program
    scheduler.credit(pulls, cpu, {3, 3, 0});  // op features count for a batch size
    if (i >= 2000) drawn[size]++;
  }
  EXPECT_GT(drawn[8], drawn[1]);
  EXPECT_GT(drawn[8], 400) << drawn[8];
  EXPECT_GT(drawn[1], 0);  // the floor keeps programs alone
  SchedulePolicy fixed;
  fixed.bandit = false;
  fixed.batchSizes = {{1, 1}, {4, 0}};
  CostAwareScheduler off(fixed);
  for (uint64_t i = 0; i < 50; ++i) {
    gen::Rng rng = gen::Rng::forProgram(14, i);
    ArmPulls pulls;
    EXPECT_EQ(off.sampleBatch(rng, "export", pulls), 1);
  }
}

// What a batch saves depends on the configuration its first program drew: members of an export batch share one
// trace (8 costs a third of alone per program), while under torch.compile with backward each member's graphs
// compile as alone and a batch's failures send members to run again (8 costs twice alone). Each batch context's
// sizes are weighed on their own evidence, so each settles on its own cheapest size; the stats name both.
TEST(CostAwareScheduler, EachConfigurationSettlesOnItsOwnCheapestBatchSize) {
  CostAwareScheduler scheduler;
  std::map<std::string, std::map<int, int>> drawn;
  for (uint64_t i = 0; i < 4000; ++i) {
    gen::Rng rng = gen::Rng::forProgram(23, i);
    std::string context = i % 2 ? "export" : "compile+backward";
    ArmPulls pulls;
    int size = scheduler.sampleBatch(rng, context, pulls);
    ASSERT_EQ(armOf(pulls, ScheduleDimension::Batch), context + "/" + std::to_string(size));
    double perProgram = context == "export" ? (size == 1 ? 6 : size == 2 ? 4 : size == 4 ? 3 : 2)
                                            : (size == 1 ? 5 : size == 2 ? 6 : size == 4 ? 8 : 10);
    for (int m = 0; m < size; ++m) scheduler.credit(pulls, perProgram, {2, 2, 0});
    if (i >= 3000) drawn[context][size]++;
  }
  auto& exported = drawn["export"];
  auto& backward = drawn["compile+backward"];
  EXPECT_GT(exported[8], 2 * (exported[1] + exported[2] + exported[4]))
      << exported[1] << " " << exported[2] << " " << exported[4] << " " << exported[8];
  EXPECT_GT(backward[1], 2 * (backward[2] + backward[4] + backward[8]))
      << backward[1] << " " << backward[2] << " " << backward[4] << " " << backward[8];
  std::map<std::string, double> shares = scheduler.shares(ScheduleDimension::Batch, CompileMatrix{}, "cpu");
  EXPECT_GT(shares.at("export/8"), 0.5);
  EXPECT_GT(shares.at("compile+backward/1"), 0.5);
  EXPECT_NEAR(shares.at("export/1") + shares.at("export/2") + shares.at("export/4") + shares.at("export/8"), 1, 1e-9);
}

// Before its own evidence, a batch context draws from its configured prior: by default 8 where batching was measured
// cheapest (every entry but torch.compile with a backward) and 1 or 2 under compile+backward. The prior fades with the
// context's own programs only: 2,000 export programs say nothing of what a size costs under a backward, so the
// context seen first after them still starts from its prior rather than from a uniform draw.
TEST(CostAwareScheduler, ABatchContextStartsFromItsOwnPriorWhateverOtherContextsDid) {
  CostAwareScheduler scheduler;
  for (int i = 0; i < 2000; ++i)
    scheduler.credit({{{ScheduleDimension::Batch, "export/" + std::to_string(1 << (i % 4))}}}, 1, {1, 1, 0});
  std::map<std::string, std::map<int, int>> drawn;
  for (uint64_t i = 0; i < 400; ++i) {
    gen::Rng rng = gen::Rng::forProgram(29, i);
    for (const char* context : {"compile+backward", "aoti"}) {
      ArmPulls pulls;
      drawn[context][scheduler.sampleBatch(rng, context, pulls)]++;  // nothing credited: each draw sees the prior
    }
  }
  auto& backward = drawn["compile+backward"];
  EXPECT_GT(backward[1] + backward[2], 280) << backward[1] << " " << backward[2] << " " << backward[4] << " "
                                            << backward[8];
  EXPECT_LT(backward[8], 30) << backward[8];  // the floor's share alone: 0.15 / 4 of 400
  EXPECT_GT(drawn["aoti"][8], 150) << drawn["aoti"][8];  // 0.46 of draws, against 0.25 with no prior
  std::map<std::string, double> shares = scheduler.shares(ScheduleDimension::Batch, CompileMatrix{}, "cpu");
  EXPECT_NEAR(shares.at("export/8"), 0.25, 0.1);  // its own evidence (every size alike) has outweighed its prior
  // A prior's sizes are batch_sizes' own, and a context's prior replaces the shared weights there only.
  SchedulePolicy fixed;
  fixed.bandit = false;
  fixed.batchPriors = {{"export", {{1, 1}}}};
  CostAwareScheduler off(fixed);
  std::map<std::string, std::set<int>> sizes;
  for (uint64_t i = 0; i < 200; ++i) {
    gen::Rng rng = gen::Rng::forProgram(31, i);
    ArmPulls pulls;
    sizes["export"].insert(off.sampleBatch(rng, "export", pulls));
    sizes["compile"].insert(off.sampleBatch(rng, "compile", pulls));
  }
  EXPECT_EQ(sizes["export"], (std::set<int>{1}));
  EXPECT_EQ(sizes["compile"], (std::set<int>{1, 2, 4, 8}));
}

// Real yields are heavy-tailed: most programs add nothing, a few add many features or a signature, and fewer as
// the campaign goes on. Whatever batch size judged them, programs yield alike, so the batch arms are told apart by
// CPU per program alone: with yields drawn from one such distribution for every size, and a batch's members
// credited together, the cheapest size per program is drawn most.
TEST(CostAwareScheduler, BatchSizesAreChosenByCostPerProgramNotByLuckyYields) {
  for (uint64_t campaign = 0; campaign < 8; ++campaign) {
    CostAwareScheduler scheduler;
    std::mt19937 luck(static_cast<uint32_t>(7 + campaign));
    std::uniform_real_distribution<double> u(0, 1);
    std::map<int, int> drawn;
    int programs = 0;
    for (uint64_t i = 0; programs < 1200; ++i) {
      gen::Rng rng = gen::Rng::forProgram(19 + campaign, i);
      ArmPulls pulls;
      int size = scheduler.sampleBatch(rng, "compile", pulls);
      double cpu = size == 1 ? 6 : size == 2 ? 5 : size == 4 ? 4 : 3;  // per program
      for (int m = 0; m < size; ++m, ++programs) {
        double x = u(luck), fade = std::exp(-programs / 400.0);
        ProgramYield y = x < 0.01   ? ProgramYield{static_cast<int>(200 * fade), 0, 1}
                         : x < 0.15 ? ProgramYield{static_cast<int>(20 * fade), 0, 0}
                                    : ProgramYield{};
        scheduler.credit(pulls, cpu, y);
        if (programs >= 800) drawn[size]++;
      }
    }
    EXPECT_GT(drawn[8], 2 * (drawn[1] + drawn[2] + drawn[4]))
        << "campaign " << campaign << ": " << drawn[1] << " " << drawn[2] << " " << drawn[4] << " " << drawn[8];
  }
}

// Yield falls as a campaign's feature set fills. An arm drawn mostly in the first minutes, when every
// program is new, must not keep that rate: batch size 2 is credited alone for the first 20 programs
// (30 features each, as at a campaign's start), then every program yields the same features wherever
// it runs (fewer as the campaign goes on), with 8 costing half the CPU-seconds of 2. Over the 400
// programs of a short campaign the bandit moves to 8.
TEST(CostAwareScheduler, AnArmDrawnWhenEveryProgramWasNewDoesNotKeepThatRate) {
  CostAwareScheduler scheduler;
  auto featuresAt = [](int i) { return i < 20 ? 30 : std::max(1, static_cast<int>(8 * std::exp(-i / 100.0))); };
  for (int i = 0; i < 20; ++i) scheduler.credit({{{ScheduleDimension::Batch, "compile/2"}}}, 8, {featuresAt(i), featuresAt(i), 0});
  std::map<int, int> drawn;
  for (int i = 20; i < 420; ++i) {
    gen::Rng rng = gen::Rng::forProgram(17, static_cast<uint64_t>(i));
    ArmPulls pulls;
    int size = scheduler.sampleBatch(rng, "compile", pulls);
    double cpu = size == 1 ? 10 : size == 2 ? 8 : size == 4 ? 6 : 4;
    scheduler.credit(pulls, cpu, {featuresAt(i), featuresAt(i), 0});
    if (i >= 220) drawn[size]++;
  }
  EXPECT_GT(drawn[8], 2 * drawn[2]) << drawn[1] << " " << drawn[2] << " " << drawn[4] << " " << drawn[8];
  EXPECT_GT(drawn[8], 80);
}

// A batch still running when --max-time stops the work is abandoned whole. Near the end, a size whose batch
// would outlast the time left, at what its programs have cost, is not drawn; a size without evidence is judged
// by the context's other sizes, an unseen context is not held back, and the smallest size is always drawable.
TEST(CostAwareScheduler, NearTheEndOnlyBatchSizesThatFitTheTimeLeftAreDrawn) {
  for (bool bandit : {true, false}) {
    SchedulePolicy policy;
    policy.bandit = bandit;
    CostAwareScheduler scheduler(policy);
    for (int i = 0; i < 8; ++i) scheduler.credit({{{ScheduleDimension::Batch, "compile/8"}}}, 10, {});  // 80 s a batch
    for (int i = 0; i < 4; ++i) scheduler.credit({{{ScheduleDimension::Batch, "compile/4"}}}, 12, {});  // 48 s
    std::map<double, std::map<int, int>> drawn;  // seconds left -> size -> draws
    for (double left : {std::numeric_limits<double>::infinity(), 60.0, 30.0, 5.0})
      for (uint64_t i = 0; i < 400; ++i) {
        gen::Rng rng = gen::Rng::forProgram(23, i);
        ArmPulls pulls;
        int size = scheduler.sampleBatch(rng, "compile", pulls, left);
        drawn[left][size]++;
        EXPECT_EQ(pulls.arms.back().second, "compile/" + std::to_string(size));
      }
    std::string mode = bandit ? "bandit" : "fixed";
    EXPECT_GT(drawn[std::numeric_limits<double>::infinity()][8], 100) << mode;
    EXPECT_EQ(drawn[60][8], 0) << mode;  // 80 s > 60
    EXPECT_GT(drawn[60][4], 0) << mode;  // 48 s fits
    EXPECT_EQ(drawn[30][8] + drawn[30][4], 0) << mode;
    EXPECT_GT(drawn[30][2], 0) << mode;  // unseen: 2 x the context's 10.67 s per program
    EXPECT_EQ(drawn[5][1], 400) << mode;  // nothing fits: the smallest
    for (uint64_t i = 0; i < 50; ++i) {  // a context with no evidence at all draws every size
      gen::Rng rng = gen::Rng::forProgram(29, i);
      ArmPulls pulls;
      drawn[-1][scheduler.sampleBatch(rng, "export", pulls, 1.0)]++;
    }
    EXPECT_GT(drawn[-1][8], 0) << mode;
  }
}

TEST(CostAwareScheduler, CompileArmsAreNotCreditedWithOpFeatures) {
  CostAwareScheduler scheduler;
  ProgramYield y{10, 7, 1};  // 10 new features, 7 of them op features, and a new signature
  EXPECT_EQ(scheduler.yieldFor(ScheduleDimension::Backend, y), 3 + 20);
  EXPECT_EQ(scheduler.yieldFor(ScheduleDimension::Template, y), 3 + 20);
  EXPECT_EQ(scheduler.yieldFor(ScheduleDimension::Size, y), 10 + 20);
  scheduler.credit({{{ScheduleDimension::Backend, "inductor"}, {ScheduleDimension::Size, "small"}}}, 4, y);
  EXPECT_EQ(scheduler.stats(ScheduleDimension::Backend, "inductor").yield, 23);
  EXPECT_EQ(scheduler.stats(ScheduleDimension::Size, "small").yield, 30);
  EXPECT_EQ(scheduler.stats(ScheduleDimension::Size, "small").cpuSeconds, 4);
  EXPECT_EQ(scheduler.stats(ScheduleDimension::Size, "large").pulls, 0);
}

TEST(CostAwareScheduler, ZeroYieldArmNeverFallsBelowTheFloor) {
  CompileMatrix m;
  SchedulePolicy policy;
  policy.floorShare = 0.15;
  CostAwareScheduler scheduler(policy);
  int eagerDraws = 0, offDraws = 0;
  const int n = 4000;
  double lowestEagerShare = 1;
  for (uint64_t i = 0; i < n; ++i) {
    gen::Rng rng = gen::Rng::forProgram(3, i);
    ArmPulls pulls;
    SampledCompile sc = scheduler.sampleCompile(m, rng, "cpu", {}, pulls);
    bool starved = sc.config.backend == "eager" || !sc.backward;  // eager and backward=off never yield
    scheduler.credit(pulls, 5, {starved ? 0 : 5, 0, 0});
    eagerDraws += sc.config.backend == "eager";
    offDraws += !sc.backward;
    if (i % 500 == 499)
      lowestEagerShare = std::min(lowestEagerShare, scheduler.shares(ScheduleDimension::Backend, m, "cpu")["eager"]);
  }
  EXPECT_GE(lowestEagerShare, 0.15 / 3);
  EXPECT_LT(lowestEagerShare, 0.15 / 3 + 0.02);  // the bandit has given up on it: the floor is what is left
  EXPECT_GE(scheduler.shares(ScheduleDimension::Backward, m, "cpu")["off"], 0.15 / 2);
  EXPECT_GT(eagerDraws, n * 0.15 / 3 * 0.8) << eagerDraws;
  EXPECT_GT(offDraws, n * 0.15 / 2 * 0.8) << offDraws;
  EXPECT_GT(scheduler.stats(ScheduleDimension::Backend, "eager").pulls, 0);
}

TEST(CostAwareScheduler, PinnedDimensionsNeverVary) {
  CompileMatrix m;
  CostAwareScheduler scheduler;
  // Evidence for everything a pin excludes.
  ArmPulls lure{{{ScheduleDimension::Backend, "eager"},
                 {ScheduleDimension::Mode, "max-autotune"},
                 {ScheduleDimension::Backward, "off"},
                 {ScheduleDimension::Template, "freezing"}}};
  for (int i = 0; i < 300; ++i) scheduler.credit(lure, 1, {50, 0, 0});
  PinnedCompile inductor;
  inductor.backend = "inductor";
  inductor.mode = "reduce-overhead";
  inductor.backward = true;
  inductor.inductorConfig = json{{"cpp_wrapper", true}};
  PinnedCompile other;
  other.backend = "aot_eager";
  other.dynamic = "false";
  for (uint64_t i = 0; i < 300; ++i) {
    gen::Rng rng = gen::Rng::forProgram(8, i);
    ArmPulls pulls;
    SampledCompile a = scheduler.sampleCompile(m, rng, "cpu", inductor, pulls);
    EXPECT_EQ(a.config.backend, "inductor");
    EXPECT_EQ(a.config.mode, "reduce-overhead");
    EXPECT_TRUE(a.backward);
    EXPECT_EQ(a.config.inductorConfig, (json{{"cpp_wrapper", true}}));
    EXPECT_TRUE(a.templates.empty());
    EXPECT_TRUE(pulls.arms.empty()) << pulls.arms.front().second;  // nothing sampled, nothing credited
    ArmPulls otherPulls;
    SampledCompile b = scheduler.sampleCompile(m, rng, "cpu", other, otherPulls);
    EXPECT_EQ(b.config.backend, "aot_eager");
    ASSERT_TRUE(b.config.dynamic.has_value());
    EXPECT_FALSE(*b.config.dynamic);
    EXPECT_TRUE(b.config.defaultMode());
    EXPECT_TRUE(b.templates.empty());
    ASSERT_EQ(otherPulls.arms.size(), 1u);  // backward only: mode and templates are Inductor's
    EXPECT_EQ(otherPulls.arms[0].first, ScheduleDimension::Backward);
  }
  // fuzzer_stats shows no line for a pinned dimension.
  for (const auto& [key, value] : scheduler.statsLines(m, {}, "cpu", inductor)) {
    EXPECT_FALSE(key.starts_with("arm_backend_") || key.starts_with("arm_mode_") || key.starts_with("arm_template_") ||
                 key.starts_with("arm_backward_"))
        << key;
  }
}

TEST(CostAwareScheduler, SizeBucketsScaleTheGenerationRange) {
  CostAwareScheduler scheduler;
  gen::GenPolicy generation;  // 6..14 nodes
  std::map<std::string, std::pair<int, int>> seen;
  for (uint64_t i = 0; i < 200; ++i) {
    gen::Rng rng = gen::Rng::forProgram(4, i);
    ArmPulls pulls;
    gen::NodeRange r = scheduler.sampleSize(generation, rng, pulls);
    ASSERT_EQ(pulls.arms.size(), 1u);
    seen[pulls.arms[0].second] = {r.minNodes, r.maxNodes};
  }
  EXPECT_EQ(seen["small"], std::make_pair(3, 7));
  EXPECT_EQ(seen["medium"], std::make_pair(6, 14));
  EXPECT_EQ(seen["large"], std::make_pair(12, 28));
}

TEST(CostAwareScheduler, StatsLinesAreParseable) {
  CompileMatrix m;
  CostAwareScheduler scheduler;
  scheduler.credit({{{ScheduleDimension::Backend, "inductor"}, {ScheduleDimension::Mode, "reduce-overhead"}}}, 10, {5, 0, 0});
  auto lines = scheduler.statsLines(m, {}, "cpu", {});
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], (std::pair<std::string, std::string>{"schedule", "bandit floor=0.15"}));
  std::regex key(R"(^arm_(backend|mode|backward|template|size|entry|batch)_[A-Za-z0-9_]+$)");
  std::regex value(R"(^pulls=\d+ cpu_s=\d+\.\d yield=[0-9.e+]+ yield_per_cpu_h=\d+\.\d share=[01]\.\d{3}( nodes=\d+-\d+)?$)");
  std::map<std::string, std::string> kv;
  for (size_t i = 1; i < lines.size(); ++i) {
    EXPECT_TRUE(std::regex_match(lines[i].first, key)) << lines[i].first;
    EXPECT_TRUE(std::regex_match(lines[i].second, value)) << lines[i].second;
    kv[lines[i].first] = lines[i].second;
  }
  EXPECT_TRUE(kv["arm_backend_inductor"].starts_with("pulls=1 cpu_s=10.0 yield=5 yield_per_cpu_h=1800.0 share="))
      << kv["arm_backend_inductor"];
  EXPECT_TRUE(kv.count("arm_mode_reduce_overhead"));
  EXPECT_TRUE(kv.count("arm_template_none"));
  EXPECT_TRUE(kv.count("arm_template_freezing"));
  EXPECT_FALSE(kv.count("arm_template_cudagraphs"));  // CUDA-only
  EXPECT_TRUE(kv["arm_size_large"].ends_with(" nodes=12-28")) << kv["arm_size_large"];
  // Fixed shares: the configured shares, and no size arms (the generation policy's range is used).
  CostAwareScheduler fixed(fixedShares());
  std::map<std::string, std::string> fkv;
  for (auto& [k, v] : fixed.statsLines(m, {}, "cpu", {})) fkv[k] = v;
  EXPECT_EQ(fkv["schedule"], "fixed");
  EXPECT_EQ(fkv["arm_backend_inductor"], "pulls=0 cpu_s=0.0 yield=0 yield_per_cpu_h=0.0 share=0.700");
  EXPECT_EQ(fkv["arm_backward_on"], "pulls=0 cpu_s=0.0 yield=0 yield_per_cpu_h=0.0 share=0.250");
  EXPECT_FALSE(fkv.count("arm_size_medium"));
}

TEST(CostAwareScheduler, PolicyJsonRoundTripAndStrictErrors) {
  SchedulePolicy p;
  p.bandit = false;
  p.floorShare = 0.3;
  p.signatureWeight = 50;
  p.sizes = {{"tiny", 0.25, 1}, {"huge", 3, 0.5}};
  p.batchSizes = {{1, 2}, {3, 1}};
  p.batchPriors = {{"export", {{3, 1}}}, {"compile+backward", {{1, 1}, {3, 0}}}};
  p.batchMaxNodes = 96;
  SchedulePolicy back = SchedulePolicy::fromJson(p.toJson());
  EXPECT_EQ(back.toJson(), p.toJson());
  EXPECT_FALSE(back.bandit);
  EXPECT_EQ(back.batchMaxNodes, 96);
  EXPECT_EQ(back.sizes[1].name, "huge");
  EXPECT_EQ(SchedulePolicy::fromJson(json{{"floor", 0.05}}).floorShare, 0.05);
  EXPECT_TRUE(SchedulePolicy::fromJson(json::object()).bandit);
  auto message = [](const json& doc) {
    try {
      SchedulePolicy::fromJson(doc);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(json{{"flor", 0.1}}).find("'flor'"), std::string::npos) << message(json{{"flor", 0.1}});
  EXPECT_NE(message(json{{"sizes", {{{"name", "x"}, {"scael", 2}}}}}).find("'scael'"), std::string::npos);
  EXPECT_NE(message(json{{"floor", 2}}).find("'floor'"), std::string::npos);
  EXPECT_NE(message(json{{"bandit", "yes"}}), "no error");
  EXPECT_NE(message(json{{"decay", 0}}), "no error");
  EXPECT_NE(message(json{{"sizes", json::array()}}), "no error");
  EXPECT_NE(message(json{{"sizes", {{{"name", "a"}}, {{"name", "a"}}}}}), "no error");
  EXPECT_NE(message(json{{"sizes", {{{"name", "a"}, {"weight", 0}}}}}), "no error");
  EXPECT_EQ(SchedulePolicy::fromJson(json{{"batch_sizes", {{"1", 1}, {"16", 2}}}}).batchSizes,
            (std::map<int, double>{{1, 1}, {16, 2}}));
  EXPECT_NE(message(json{{"batch_sizes", {{"17", 1}}}}).find("batch size '17'"), std::string::npos);
  EXPECT_NE(message(json{{"batch_sizes", {{"two", 1}}}}), "no error");
  EXPECT_NE(message(json{{"batch_sizes", {{"2", 0}}}}), "no error");
  EXPECT_EQ(SchedulePolicy::fromJson(json{{"batch_priors", {{"export", {{"8", 1}}}}}}).batchPriors,
            (std::map<std::string, std::map<int, double>>{{"export", {{8, 1}}}}));
  EXPECT_EQ(SchedulePolicy::fromJson(json::object()).batchPriors.at("compile+backward").at(1), 2);
  std::string notASize = message(json{{"batch_sizes", {{"1", 1}, {"2", 1}}}, {"batch_priors", {{"aoti", {{"8", 1}}}}}});
  EXPECT_NE(notASize.find("batch_priors.aoti: batch size 8 is not one of batch_sizes'"), std::string::npos) << notASize;
  EXPECT_NE(message(json{{"batch_priors", {{"aoti", {{"8", 0}}}}}}).find("'batch_priors.aoti' needs a size"),
            std::string::npos);
  EXPECT_NE(message(json{{"batch_priors", {{"aoti", 8}}}}), "no error");
  EXPECT_EQ(SchedulePolicy::fromJson(json{{"batch_max_nodes", 40}}).batchMaxNodes, 40);
  EXPECT_EQ(SchedulePolicy::fromJson(json::object()).batchMaxNodes, 256);
  EXPECT_NE(message(json{{"batch_max_nodes", 0}}).find("'batch_max_nodes'"), std::string::npos);
  EXPECT_NE(message(json{{"batch_max_nodes", 2.5}}).find("integer"), std::string::npos);
  // Inside a campaign policy, under "schedule".
  CampaignPolicy cp;
  cp.schedule = p;
  EXPECT_EQ(CampaignPolicy::fromJson(cp.toJson()).toJson(), cp.toJson());
  EXPECT_FALSE(CampaignPolicy::fromJson(json{{"schedule", {{"bandit", false}}}}).schedule.bandit);
  EXPECT_THROW(CampaignPolicy::fromJson(json{{"schedule", {{"banditt", false}}}}), std::invalid_argument);
}

TEST(CostAwareScheduler, ArmStatisticsRoundTrip) {
  CompileMatrix m;
  CostAwareScheduler a;
  for (int i = 0; i < 50; ++i)
    a.credit({{{ScheduleDimension::Backend, i % 3 ? "inductor" : "eager"}, {ScheduleDimension::Size, "small"}}},
             2.5, {i % 3 ? 1 : 4, 0, 0});
  CostAwareScheduler b;
  b.restore(json::parse(a.toJson().dump()));
  EXPECT_EQ(b.toJson(), a.toJson());
  EXPECT_EQ(b.shares(ScheduleDimension::Backend, m, "cpu"), a.shares(ScheduleDimension::Backend, m, "cpu"));
  ArmStats eager = b.stats(ScheduleDimension::Backend, "eager");
  EXPECT_EQ(eager.pulls, 17);
  EXPECT_DOUBLE_EQ(eager.cpuSeconds, 17 * 2.5);
  EXPECT_DOUBLE_EQ(eager.yield, 17 * 4);
  EXPECT_LT(eager.recentCpu, eager.cpuSeconds);  // decayed (its yield is relative to the baseline)
  EXPECT_THROW(b.restore(json{{"version", 2}}), std::invalid_argument);
  EXPECT_THROW(b.restore(json{{"version", 1}, {"dimensions", {{"colour", {{"credits", 1}, {"arms", json::object()}}}}}}),
               std::invalid_argument);
  EXPECT_THROW(b.restore(json{{"version", 1},
                              {"dimensions", {{"backend", {{"credits", 1}, {"arms", {{"eager", {{"pulls", -1}}}}}}}}}}),
               std::invalid_argument);
  EXPECT_EQ(b.toJson(), a.toJson());  // a failed restore leaves the statistics as they were
}

}  // namespace
}  // namespace tcfuzz
