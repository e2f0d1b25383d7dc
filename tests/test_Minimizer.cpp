// The minimizer's passes on real generated programs, with a test oracle in C++ (no torch): the
// end-to-end minimization through real workers is in test_Triage.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "oracles/judge/CompileConfig.h"
#include "generators/Generator.h"
#include "generators/features/InputLayout.h"
#include "generators/repair/GraphRepair.h"
#include "generators/python/PythonEmitter.h"
#include "oracles/reporter/Minimizer.h"

using namespace tcfuzz;
using oracles::MinimizeCase;
using oracles::Minimizer;
using oracles::MinimizerPolicy;

namespace {

bool hasOp(const gen::Graph& g, const std::string& op) {
  return std::any_of(g.nodes.begin(), g.nodes.end(), [&](const gen::Node& n) { return n.op == op; });
}

/// A generated program of at least `minNodes` nodes that contains `op` (seeded search), without Python-level
/// constructs (they draw from their own stream, so the op graph is the same with them).
gen::Graph programWith(const gen::OpCatalog& catalog, const std::string& op, int minNodes) {
  gen::GenPolicy policy;
  policy.minNodes = minNodes;
  policy.maxNodes = minNodes + 4;
  policy.opWeights[op] = 8;
  gen::Generator generator(catalog, policy, 1234);
  for (uint64_t index = 0; index < 200; ++index) {
    gen::Graph g = generator.generate(index);
    // The op must reach an output: a dead node is no bug (Dynamo drops it, and so does the minimizer).
    if (!hasOp(gen::eliminateDeadNodes(g), op) || static_cast<int>(g.nodes.size()) < minNodes) continue;
    for (gen::Node& n : g.nodes) n.python = {};
    g.schedule.clear();
    g.hook.clear();
    return g;
  }
  throw std::runtime_error("no generated program with " + op);
}

class MinimizerTest : public ::testing::Test {
 protected:
  gen::OpCatalog catalog_ = gen::makeDefaultCatalog();
};

}  // namespace

TEST_F(MinimizerTest, ReducesATwentyNodeProgramToTheOneOpTheBugNeeds) {
  gen::Graph g = programWith(catalog_, "sigmoid", 20);
  ASSERT_GE(g.nodes.size(), 20u);
  MinimizeCase start{g, oracles::CompileConfig{}, false, ""};
  int calls = 0;
  std::vector<std::string> invalid;
  oracles::CandidateTest test = [&](const std::vector<MinimizeCase>& batch) {
    ++calls;
    EXPECT_LE(batch.size(), 2u);
    std::vector<bool> out;
    for (const auto& c : batch) {
      if (auto problem = gen::firstInvalidNode(catalog_, c.graph); !problem.empty()) invalid.push_back(problem);
      out.push_back(hasOp(c.graph, "sigmoid"));
    }
    return out;
  };
  oracles::MinimizeResult r = Minimizer(catalog_, MinimizerPolicy{}).minimize(start, test);
  EXPECT_TRUE(invalid.empty()) << invalid.front();
  EXPECT_TRUE(hasOp(r.best.graph, "sigmoid"));
  EXPECT_LE(r.best.graph.nodes.size(), 3u) << fmt::format("{}", fmt::join(oracles::opsOf(r.best.graph), ", "));
  EXPECT_EQ(r.best.graph.outputs.size(), 1u);
  EXPECT_GT(r.acceptedByPass["remove-nodes"], 0);
  EXPECT_FALSE(r.budgetExhausted);
  EXPECT_LT(r.candidatesTested, 150);
  EXPECT_GT(calls, 0);
}

TEST_F(MinimizerTest, KeepsOnlyTheConfigOptionsTheBugNeeds) {
  gen::Graph g = programWith(catalog_, "sigmoid", 6);
  oracles::CompileConfig c;
  c.dynamic = true;
  c.fullgraph = true;
  c.inductorConfig = {{"cpp_wrapper", true}, {"freezing", true}};
  MinimizeCase start{g, c, true, ""};
  EXPECT_EQ(oracles::configOptionNames(start).size(), 5u);
  MinimizerPolicy policy;
  policy.passes = {"drop-config"};
  // The planted condition: dynamic shapes and freezing.
  auto r = Minimizer(catalog_, policy).minimize(start, [](const std::vector<MinimizeCase>& batch) {
    std::vector<bool> out;
    for (const auto& m : batch)
      out.push_back(m.compile.dynamic == true && m.compile.inductorConfig.contains("freezing"));
    return out;
  });
  EXPECT_EQ(r.best.compile.dynamic, std::optional<bool>(true));
  EXPECT_EQ(r.best.compile.inductorConfig, (nlohmann::json{{"freezing", true}}));
  EXPECT_FALSE(r.best.compile.fullgraph);
  EXPECT_FALSE(r.best.backward);
  EXPECT_EQ(r.best.graph.contentHash(), g.contentHash());  // only the configuration changed
}

TEST_F(MinimizerTest, PassOrderIsDataAndOnlyListedPassesRun) {
  gen::Graph g = programWith(catalog_, "sigmoid", 8);
  ASSERT_GT(g.outputs.size(), 0u);
  MinimizerPolicy policy = MinimizerPolicy::fromJson({{"passes", {"drop-outputs"}}, {"batch", 3}});
  std::set<std::string> passesSeen;
  auto r = Minimizer(catalog_, policy).minimize({g, oracles::CompileConfig{}, false, ""},
                                                 [&](const std::vector<MinimizeCase>& batch) {
                                                   EXPECT_LE(batch.size(), 3u);
                                                   for (const auto& m : batch) passesSeen.insert(m.pass);
                                                   return std::vector<bool>(batch.size(), true);
                                                 });
  EXPECT_EQ(r.best.graph.outputs.size(), 1u);
  if (g.outputs.size() > 1) EXPECT_EQ(passesSeen, (std::set<std::string>{"drop-outputs"}));
  EXPECT_THROW(MinimizerPolicy::fromJson({{"passes", {"remove-nodes", "shuffle"}}}), std::invalid_argument);
  EXPECT_THROW(MinimizerPolicy::fromJson({{"batch", 0}}), std::invalid_argument);
  EXPECT_THROW(MinimizerPolicy::fromJson({{"order", 1}}), std::invalid_argument);
  EXPECT_EQ(MinimizerPolicy::fromJson(MinimizerPolicy{}.toJson()).passes, Minimizer::passNames());
}

// A program grown around an LLM core: remove-grown takes the grown nodes away first, and
// the core marks survive repair, so the minimized program still shows which nodes the LLM wrote.
TEST_F(MinimizerTest, GrownNodesGoBeforeTheLlmCore) {
  gen::Graph core;
  int x = core.addValue({{4, 6}, gen::DType::Float32});
  core.inputs.push_back({x, "x0", {"uniform", -1, 1, 0.5}});
  int y = core.addValue({{4, 6}, gen::DType::Float32});
  core.nodes.push_back({"sigmoid", {x}, {y}, nlohmann::json::object()});
  core.outputs = {y};
  core.origin.generator = "llm";
  gen::Graph g;
  gen::Generator grower(catalog_, gen::GenPolicy{}, 31);
  for (uint64_t i = 0; i < 50 && g.nodes.size() < 10; ++i) g = grower.grow(core, i, {10, 14});
  ASSERT_GE(g.nodes.size(), 10u);
  auto coreSigmoid = [](const gen::Graph& h) {
    return std::any_of(h.nodes.begin(), h.nodes.end(), [](const gen::Node& n) { return n.core && n.op == "sigmoid"; });
  };
  ASSERT_TRUE(coreSigmoid(g));
  std::vector<std::string> firstPasses;
  oracles::CandidateTest test = [&](const std::vector<MinimizeCase>& batch) {
    std::vector<bool> out;
    for (const auto& c : batch) {
      out.push_back(coreSigmoid(c.graph));
      if (out.back() && firstPasses.empty()) firstPasses.push_back(c.pass);
    }
    return out;
  };
  oracles::MinimizeResult r = Minimizer(catalog_, MinimizerPolicy{}).minimize({g, oracles::CompileConfig{}, false, ""}, test);
  EXPECT_TRUE(coreSigmoid(r.best.graph));
  // Its header no longer claims the grown program's replay: it says it was minimized, from what.
  EXPECT_TRUE(r.best.graph.origin.minimized);
  EXPECT_FALSE(g.origin.minimized);
  std::string header = gen::provenanceHeader(r.best.graph);
  EXPECT_TRUE(header.starts_with("# Minimized by tcfuzz's triage from a program it made: Proposed by an LLM")) << header;
  EXPECT_NE(header.find("tcfuzz gen --from program.json"), std::string::npos) << header;
  EXPECT_EQ(r.best.graph.nodes.size(), 1u) << fmt::format("{}", fmt::join(oracles::opsOf(r.best.graph), ", "));
  ASSERT_FALSE(firstPasses.empty());
  EXPECT_EQ(firstPasses.front(), "remove-grown");
  EXPECT_GT(r.acceptedByPass["remove-grown"], 0);
}

TEST_F(MinimizerTest, EveryPassOfThePolicyIsANamedPassAndUnknownNamesAreRejected) {
  gen::Graph g = programWith(catalog_, "sigmoid", 6);
  oracles::CompileConfig c;
  c.mode = "max-autotune";
  c.fullgraph = true;
  c.inductorConfig = {{"freezing", true}};
  MinimizeCase start{g, c, true, ""};
  Minimizer minimizer(catalog_, MinimizerPolicy{});
  for (const std::string& pass : Minimizer::passNames())
    for (const MinimizeCase& m : minimizer.candidates(pass, start)) {
      EXPECT_EQ(m.pass, pass);
      EXPECT_LT(oracles::sizeOf(m, catalog_), oracles::sizeOf(start, catalog_)) << pass;
    }
  // drop-config resets one option per candidate, in the order of configOptionNames.
  EXPECT_EQ(oracles::configOptionNames(start),
            (std::vector<std::string>{"mode", "fullgraph", "backward", "freezing"}));
  std::vector<MinimizeCase> dropped = minimizer.candidates("drop-config", start);
  ASSERT_EQ(dropped.size(), 4u);
  EXPECT_EQ(dropped[0].compile.mode, "");
  EXPECT_FALSE(dropped[1].compile.fullgraph);
  EXPECT_FALSE(dropped[2].backward);
  EXPECT_EQ(dropped[3].compile.inductorConfig, nlohmann::json::object());
  EXPECT_EQ(dropped[3].compile.mode, "max-autotune");
  EXPECT_THROW(minimizer.candidates("shuffle", start), std::invalid_argument);
  EXPECT_EQ(Minimizer::passNames(), (std::vector<std::string>{"hinted-ops", "remove-grown", "drop-outputs", "remove-nodes",
                                                              "bypass-nodes", "drop-config", "plain-python", "reset-attrs",
                                                              "plain-inputs", "shrink-ranks", "shrink-shapes"}));
}

// plain-python: every construct at once, then one schedule step, then one construct of one node; each
// candidate is smaller by the constructs it took away.
TEST_F(MinimizerTest, PlainPythonDropsTheConstructsAllAtOnceThenOneByOne) {
  gen::Graph g = programWith(catalog_, "sigmoid", 6);
  g.nodes[0].python.graphBreakBefore = true;
  g.nodes[1].python.counter = true;
  g.schedule = {{"class-attr", 0.5}, {"global", 2.0}};
  MinimizeCase start{g, {}, false, ""};
  EXPECT_EQ(oracles::sizeOf(start, catalog_).pythonConstructs, 4);
  std::vector<MinimizeCase> out = Minimizer(catalog_, MinimizerPolicy{}).candidates("plain-python", start);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(oracles::sizeOf(out[0], catalog_).pythonConstructs, 0);
  EXPECT_EQ(out[1].graph.schedule, (std::vector<gen::ScheduleStep>{{"global", 2.0}}));
  EXPECT_EQ(out[2].graph.schedule, (std::vector<gen::ScheduleStep>{{"class-attr", 0.5}}));
  for (size_t k = 1; k < out.size(); ++k) EXPECT_EQ(oracles::sizeOf(out[k], catalog_).pythonConstructs, 3) << k;
  EXPECT_TRUE(Minimizer(catalog_, MinimizerPolicy{}).candidates("plain-python", {programWith(catalog_, "sigmoid", 6), {}, false, ""}).empty());
}

// plain-inputs: a program whose inputs are laid out gets a candidate with every input contiguous,
// then one per input; the smaller size counts the layouts it took away.
TEST_F(MinimizerTest, PlainInputsResetsLayouts) {
  gen::Graph g = programWith(catalog_, "sigmoid", 6);
  int laidOut = 0;
  for (gen::Source& s : g.inputs) {
    gen::Rng rng(laidOut + 1);
    s.layout = gen::randomLayout(g.typeOf(s.value), s.dist, {{"transposed", 1}, {"strided", 1}}, rng);
    laidOut += !s.layout.contiguous();
  }
  ASSERT_GE(laidOut, 1);
  MinimizeCase start{g, oracles::CompileConfig{}, false, ""};
  Minimizer minimizer(catalog_, MinimizerPolicy{});
  std::vector<MinimizeCase> candidates = minimizer.candidates("plain-inputs", start);
  ASSERT_EQ(candidates.size(), laidOut == 1 ? 1u : 1u + laidOut);
  for (const gen::Source& s : candidates[0].graph.inputs) EXPECT_TRUE(s.layout.contiguous());
  EXPECT_EQ(sizeOf(start, catalog_).specialInputs, laidOut);
  EXPECT_EQ(sizeOf(candidates[0], catalog_).specialInputs, 0);
  EXPECT_LT(sizeOf(candidates[0], catalog_), sizeOf(start, catalog_));
}

TEST_F(MinimizerTest, AKnownBugsOpsAreTriedFirstAndEndTheSearch) {
  gen::Graph g = programWith(catalog_, "sigmoid", 12);
  MinimizerPolicy policy;
  policy.opHints = {{"cumsum"}, {"sigmoid"}};
  std::vector<std::string> firstBatchPasses;
  auto r = Minimizer(catalog_, policy).minimize({g, oracles::CompileConfig{}, false, ""},
                                                 [&](const std::vector<MinimizeCase>& batch) {
                                                   if (firstBatchPasses.empty())
                                                     for (const auto& m : batch) firstBatchPasses.push_back(m.pass);
                                                   std::vector<bool> out;
                                                   for (const auto& m : batch) out.push_back(hasOp(m.graph, "sigmoid"));
                                                   return out;
                                                 });
  ASSERT_FALSE(firstBatchPasses.empty());
  EXPECT_EQ(firstBatchPasses.front(), "hinted-ops");
  EXPECT_EQ(r.acceptedByPass["hinted-ops"], 1);
  EXPECT_EQ(r.accepted, 1);  // stopOnHint: the case is the known bug
  EXPECT_EQ(oracles::opsOf(r.best.graph), std::vector<std::string>{"sigmoid"});
}

TEST_F(MinimizerTest, ShrinksShapesAndResetsAttributesWhenTheBugAllows) {
  gen::Graph g = programWith(catalog_, "sigmoid", 3);
  MinimizeCase start{g, oracles::CompileConfig{}, false, ""};
  auto before = oracles::sizeOf(start, catalog_);
  MinimizerPolicy policy;
  policy.passes = {"shrink-shapes", "shrink-ranks", "reset-attrs"};
  policy.maxCandidates = 400;
  auto r = Minimizer(catalog_, policy).minimize(start, [&](const std::vector<MinimizeCase>& batch) {
    std::vector<bool> out;
    for (const auto& m : batch) out.push_back(hasOp(m.graph, "sigmoid"));
    return out;
  });
  auto after = oracles::sizeOf(r.best, catalog_);
  EXPECT_LT(after, before);
  EXPECT_LE(after.elements, before.elements);
  EXPECT_TRUE(gen::firstInvalidNode(catalog_, r.best.graph).empty());
}

TEST_F(MinimizerTest, NothingIsAcceptedWhenTheBugNeverReproduces) {
  gen::Graph g = programWith(catalog_, "sigmoid", 10);
  MinimizerPolicy policy;
  policy.maxCandidates = 40;
  auto r = Minimizer(catalog_, policy).minimize({g, oracles::CompileConfig{}, false, ""},
                                                 [](const std::vector<MinimizeCase>& batch) {
                                                   return std::vector<bool>(batch.size(), false);
                                                 });
  EXPECT_EQ(r.accepted, 0);
  EXPECT_EQ(r.best.graph.contentHash(), g.contentHash());
  EXPECT_LE(r.candidatesTested, 40);
}

TEST(MinimizerHelpers, DeadNodesGoAndLiveOnesStay) {
  gen::Graph g;
  int x = g.addValue({{2, 3}});
  g.inputs.push_back({x, "x0", {}});
  int a = g.addValue({{2, 3}}), b = g.addValue({{2, 3}}), c = g.addValue({{2, 3}});
  g.nodes.push_back({"relu", {x}, {a}, nlohmann::json::object()});
  g.nodes.push_back({"sigmoid", {x}, {b}, nlohmann::json::object()});  // read by nothing
  g.nodes.push_back({"tanh", {a}, {c}, nlohmann::json::object()});
  g.outputs = {c};
  gen::Graph live = gen::eliminateDeadNodes(g);
  EXPECT_EQ(oracles::opsOf(live), (std::vector<std::string>{"relu", "tanh"}));
  EXPECT_EQ(live.values.size(), 3u);
}
