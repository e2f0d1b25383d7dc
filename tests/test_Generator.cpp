// Generation: replay from (seed, index), validity by construction, policy weights, programs grown around an
// LLM core, complex dtypes and idioms. Repair of foreign graphs: test_GraphRepair.cpp; the emitted Python:
// test_PythonEmitter.cpp.
#include <gtest/gtest.h>

#include <algorithm>

#include "generators/Generator.h"
#include "generators/python/PythonConstructs.h"
#include "generators/features/Idioms.h"
#include "generators/features/InputLayout.h"
#include "generators/features/InputWrites.h"
#include "generators/repair/GraphRepair.h"
#include "generators/llm/LlmProgram.h"
#include "generators/python/PythonEmitter.h"

namespace tcfuzz::gen {
namespace {

using nlohmann::json;

class GeneratorTest : public ::testing::Test {
 protected:
  OpCatalog catalog = makeDefaultCatalog();

  /// An LLM reply's program (JSON form), repaired as a proposal and marked as an ops-json core.
  Graph llmCore(const std::string& reply) {
    IntSolver solver(3);
    ProposalOutcome proposal = proposalFromText(reply, catalog, GenPolicy{}.caps, 3, solver);
    EXPECT_TRUE(proposal.graph) << proposal.rejection << ": " << proposal.detail;
    Graph core = proposal.graph ? *proposal.graph : Graph{};
    core.origin = Origin{};
    core.origin.generator = "llm";
    core.origin.strategy = "ops-json";
    return core;
  }
};

TEST_F(GeneratorTest, SameSeedAndIndexReplayTheSameProgram) {
  Generator a(catalog, GenPolicy{}, 42), b(catalog, GenPolicy{}, 42);
  // b generates other programs first: a program depends only on (seed, index).
  b.generate(5);
  b.generate(0);
  EXPECT_EQ(a.generate(3).contentHash(), b.generate(3).contentHash());
  EXPECT_NE(a.generate(3).contentHash(), a.generate(4).contentHash());
  Generator c(catalog, GenPolicy{}, 43);
  EXPECT_NE(a.generate(3).contentHash(), c.generate(3).contentHash());
}

// A node range in place of the policy's (the scheduler's size buckets): the policy's own range
// replays generate(index), a larger one grows larger programs.
TEST_F(GeneratorTest, NodeRangeReplacesThePolicyRange) {
  GenPolicy policy;
  Generator a(catalog, policy, 21), b(catalog, policy, 21);
  size_t small = 0, large = 0;
  for (uint64_t i = 0; i < 40; ++i) {
    EXPECT_EQ(a.generate(i).contentHash(), b.generate(i, {policy.minNodes, policy.maxNodes}).contentHash());
    small += b.generate(i, {3, 4}).nodes.size();
    large += b.generate(i, {24, 28}).nodes.size();
  }
  EXPECT_LE(small, 40u * 6);
  EXPECT_GE(large, 40u * 20);
}

// LLM seeds, grammar grows: a trivial proposal (sigmoid of one input, an unused relu of
// another: what SmolLM2 writes) becomes the core of a program of the policy's size, valid, with no
// dead node, its nodes marked, its input layout kept, deterministic in (seed, core, index, nodes).
TEST_F(GeneratorTest, GrowBuildsAProgramAroundAnLlmCore) {
  Graph core = llmCore(
      R"({"inputs": [{"name": "x0", "shape": [4, 6], "dtype": "float32", "layout": {"kind": "transposed", "dims": [0, 1]}},
                    {"name": "x2", "shape": [5], "dtype": "float32"}],
          "nodes": [{"out": "a", "op": "sigmoid", "args": ["x0"]}, {"out": "b", "op": "relu", "args": ["x2"]}],
          "outputs": ["a"]})");
  ASSERT_FALSE(core.nodes.empty());
  GenPolicy policy;
  Generator grower(catalog, policy, 17), again(catalog, policy, 17), grammar(catalog, policy, 17);
  size_t grownNodes = 0, grammarNodes = 0;
  int keptWholeCore = 0, keptLayout = 0, withConstructs = 0;
  for (uint64_t i = 0; i < 200; ++i) {
    Graph g = grower.grow(core, i, {policy.minNodes, policy.maxNodes});
    ASSERT_EQ(firstInvalidNode(catalog, g), "") << "grown program " << i << "\n" << g.toJson().dump(1);
    EXPECT_EQ(deadNodeCount(g), 0) << i;
    EXPECT_EQ(again.grow(core, i, {policy.minNodes, policy.maxNodes}).contentHash(), g.contentHash()) << i;
    // Its stored IR replays through repair (tcfuzz gen --from) as the same program.
    Rng rng(i);
    IntSolver replaySolver(i);
    EXPECT_EQ(GraphRepairer(catalog, policy.caps, rng, replaySolver).repair(g).contentHash(), g.contentHash()) << i;
    EXPECT_EQ(g.origin.strategy, "ops-json");
    EXPECT_EQ(g.origin.index, i);
    EXPECT_EQ(g.origin.seed, 17u);
    int marked = static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(), [](const Node& n) { return n.core; }));
    EXPECT_GE(marked, 1) << i;
    EXPECT_GT(static_cast<int>(g.nodes.size()), marked) << i;  // something grew around it
    keptWholeCore += marked == 2;
    withConstructs += planPythonConstructs(g, catalog).anyConstruct();
    for (const Source& s : g.inputs) keptLayout += s.name == "x0" && s.layout.kind == "transposed";
    grownNodes += g.nodes.size();
    grammarNodes += grammar.generate(i).nodes.size();
  }
  EXPECT_GE(withConstructs, 100) << "grown programs get Python-level code as grammar programs do";
  EXPECT_GE(keptWholeCore, 180);  // the unused relu is kept too: settling joins or returns it
  EXPECT_GE(keptLayout, 190);     // x0 may only go when a merge fails and its sigmoid is dropped
  EXPECT_GE(grownNodes, grammarNodes) << "grown programs are at least as large as grammar programs";
}

TEST_F(GeneratorTest, GeneratedGraphsAreValidAndRespectThePolicy) {
  GenPolicy policy;
  policy.minNodes = 5;
  policy.maxNodes = 9;
  Generator gen(catalog, policy, 7);
  for (uint64_t i = 0; i < 300; ++i) {
    Graph g = gen.generate(i);
    ASSERT_EQ(firstInvalidNode(catalog, g), "") << "program " << i << "\n" << g.toJson().dump(1);
    EXPECT_GE(g.nodes.size(), 1u);
    EXPECT_LE(g.outputs.size(), static_cast<size_t>(policy.maxOutputs));
    for (const auto& v : g.values) EXPECT_LE(v.type.numel(), policy.caps.maxElements);
    // The JSON form parses back to the same program.
    EXPECT_EQ(Graph::fromJson(g.toJson()).contentHash(), g.contentHash());
  }
  EXPECT_GT(gen.stats().accepted, 300 * 4);
}

TEST_F(GeneratorTest, ProgramsWriteIntoTheirInputsButNeverIntoExpandedOnes) {
  // The default policy's shares over 400 programs: at least 15% write into a program input, at least 5%
  // through an expanded view; no write lands in an input laid out expanded (compile refuses those by design).
  Generator gen(catalog, GenPolicy{}, 11);
  int writing = 0, expandedView = 0;
  constexpr int kPrograms = 400;
  for (uint64_t i = 0; i < kPrograms; ++i) {
    Graph g = gen.generate(i);
    ASSERT_EQ(firstInvalidNode(catalog, g), "") << "program " << i << "\n" << g.toJson().dump(1);
    writing += !writtenInputPositions(g).empty();
    expandedView += std::any_of(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return catalog.at(n.op).family == "expand-write"; });
    for (const Node& n : g.nodes) {
      if (!writesIntoProgramInput(g, n)) continue;
      const Source& s = *g.sourceOf(n.inputs[0]);
      EXPECT_TRUE(catalog.at(n.op).inplace) << "program " << i << ": " << n.op;
      EXPECT_FALSE(s.layout.kind == "expanded" && isNonContiguous(s.layout, g.typeOf(s.value))) << "program " << i << ": " << s.name;
    }
    EXPECT_EQ(Graph::fromJson(g.toJson()).contentHash(), g.contentHash());
  }
  EXPECT_GE(writing, kPrograms * 15 / 100);
  EXPECT_GE(expandedView, kPrograms * 5 / 100);
}

TEST_F(GeneratorTest, ProgramsCallATenBackwardOpsDirectly) {
  // At the default policy, at least 3% of programs call a torch.ops.aten *_backward op (family
  // aten-backward), and each such node reads a forward value of its gradient's shape and dtype.
  Generator gen(catalog, GenPolicy{}, 11);
  int calling = 0;
  std::set<std::string> seen;
  constexpr int kPrograms = 400;
  for (uint64_t i = 0; i < kPrograms; ++i) {
    Graph g = gen.generate(i);
    bool any = false;
    for (const Node& n : g.nodes) {
      if (catalog.at(n.op).family != "aten-backward") continue;
      any = true;
      seen.insert(n.op);
      ASSERT_EQ(n.inputs.size(), 2u) << n.op;
      EXPECT_EQ(g.typeOf(n.inputs[1]).shape, g.typeOf(n.inputs[0]).shape) << "program " << i << ": " << n.op;
      EXPECT_EQ(g.typeOf(n.inputs[1]).dtype, g.typeOf(n.inputs[0]).dtype) << "program " << i << ": " << n.op;
    }
    calling += any;
  }
  EXPECT_GE(calling, kPrograms * 3 / 100);
  EXPECT_GE(seen.size(), 8u);
}

TEST_F(GeneratorTest, ProgramsRoundToSixteenBitFloatsAndBackExplicitly) {
  // At the default policy, at least 10% of programs hold an explicit low-precision round trip (family
  // precision): a float32 or float64 value cast to float16 or bfloat16 and back, alone, around a Python
  // scalar, or before a reduction; the Python spelling casts back to the input's own dtype.
  Generator gen(catalog, GenPolicy{}, 11);
  int rounding = 0;
  constexpr int kPrograms = 400;
  for (uint64_t i = 0; i < kPrograms; ++i) {
    Graph g = gen.generate(i);
    bool any = false;
    for (const Node& n : g.nodes) {
      const OpSpec& op = catalog.at(n.op);
      if (op.family != "precision") continue;
      any = true;
      DType in = g.typeOf(n.inputs[0]).dtype;
      EXPECT_TRUE(in == DType::Float32 || in == DType::Float64) << "program " << i << ": " << n.op;
      EXPECT_EQ(g.typeOf(n.outputs[0]).dtype, in) << "program " << i << ": " << n.op;
      EXPECT_NE(op.python.find(".to({0}.dtype)"), std::string::npos) << op.python;
    }
    rounding += any;
  }
  EXPECT_GE(rounding, kPrograms * 10 / 100);
}

TEST_F(GeneratorTest, WritesIntoInputsDrawFromTheirOwnStream) {
  // With both chances at 0 no program writes into an input, and a program the default policy gave no write
  // is the same program: the writes never shift the generator's other draws.
  GenPolicy none;
  none.inputWriteChance = 0;
  none.inputFillChance = 0;
  Generator plain(catalog, none, 11), withWrites(catalog, GenPolicy{}, 11);
  int same = 0;
  for (uint64_t i = 0; i < 60; ++i) {
    Graph a = plain.generate(i), b = withWrites.generate(i);
    EXPECT_TRUE(writtenInputPositions(a).empty()) << "program " << i;
    if (writtenInputPositions(b).empty()) {
      EXPECT_EQ(a.contentHash(), b.contentHash()) << "program " << i;
      ++same;
    }
  }
  EXPECT_GE(same, 30);
  EXPECT_THROW(GenPolicy::fromJson(json{{"input_write_chance", 1.5}}), std::invalid_argument);
  EXPECT_EQ(GenPolicy::fromJson(json{{"input_fill_chance", 0.5}}).inputFillChance, 0.5);
}

TEST_F(GeneratorTest, ValidityCheckNamesTheFirstBadNode) {
  Graph g = Generator(catalog, GenPolicy{}, 7).generate(0);
  ASSERT_EQ(firstInvalidNode(catalog, g), "");
  g.typeOf(g.nodes[0].outputs[0]).shape.push_back(99);
  EXPECT_EQ(firstInvalidNode(catalog, g), "node 0 (" + g.nodes[0].op + "): output type");
  g.nodes[0].op = "no_such_op";
  EXPECT_EQ(firstInvalidNode(catalog, g), "node 0 (no_such_op): unknown op");
}

TEST_F(GeneratorTest, PolicyWeightsSteerTheOps) {
  GenPolicy policy;
  for (const auto& op : catalog.ops()) policy.opWeights[op->name] = 0;
  policy.opWeights["sin"] = 1;
  policy.opWeights["mul"] = 1;
  Generator gen(catalog, policy, 1);
  std::set<std::string> ops;
  for (uint64_t i = 0; i < 50; ++i)
    for (const auto& n : gen.generate(i).nodes) ops.insert(n.op);
  // Only the two ops, plus what repair inserts (casts, clamps, reshapes...) and the merge ops that
  // join surplus dangling values.
  EXPECT_TRUE(ops.count("sin") && ops.count("mul"));
  for (const auto& op : ops)
    EXPECT_TRUE(op == "sin" || op == "mul" || op == "to_dtype" || op == "clamp" || op == "reshape" || op == "narrow" ||
                op == "expand" || std::count(policy.mergeOps.begin(), policy.mergeOps.end(), op))
        << op;
}

TEST_F(GeneratorTest, PolicyJsonIsStrict) {
  GenPolicy p = GenPolicy::fromJson(json{{"max_nodes", 20}, {"op_weights", {{"sin", 3}}}});
  EXPECT_EQ(p.maxNodes, 20);
  EXPECT_EQ(p.opWeights["sin"], 3);
  EXPECT_EQ(GenPolicy::fromJson(p.toJson()).toJson(), p.toJson());
  EXPECT_THROW(GenPolicy::fromJson(json{{"max_nodez", 20}}), std::invalid_argument);
  EXPECT_THROW(GenPolicy::fromJson(json{{"max_nodes", -1}}), std::invalid_argument);
  EXPECT_THROW(GenPolicy::fromJson(json{{"dtype_weights", {{"float8", 1}}}}), std::invalid_argument);
  EXPECT_THROW(Generator(catalog, GenPolicy::fromJson(json{{"op_weights", {{"no_such_op", 1}}}}), 0), std::invalid_argument);
}

// Complex dtypes: torch's promotion, generated programs whose complex values come from inputs and
// from real values, flow through the complex family and the shape family's views, and never reach an
// op that takes only real values (such an op's dtypes hold no complex dtype; the cast op casts
// between real dtypes only).
TEST(ComplexDTypes, PromotionFollowsTorch) {
  EXPECT_EQ(promote(DType::Complex64, DType::Float32), DType::Complex64);
  EXPECT_EQ(promote(DType::Float64, DType::Complex64), DType::Complex128);  // torch.result_type agrees
  EXPECT_EQ(promote(DType::Complex64, DType::Int64), DType::Complex64);
  EXPECT_EQ(promote(DType::Complex128, DType::Float16), DType::Complex128);
  EXPECT_EQ(complexOf(DType::Float64), DType::Complex128);
  EXPECT_EQ(realOf(DType::Complex64), DType::Float32);
  EXPECT_EQ(parseDType("complex128"), DType::Complex128);
  EXPECT_FALSE(kAllDTypes.has(DType::Complex64));
  EXPECT_FALSE(isFloat(DType::Complex64));
}

TEST_F(GeneratorTest, ComplexValuesFlowThroughTheOpsThatTakeThem) {
  GenPolicy policy;
  policy.familyWeights["complex"] = 20;
  Generator gen(catalog, policy, 8);
  PythonEmitter emitter(catalog);
  int withComplex = 0, complexInputs = 0, complexThroughShape = 0;
  for (uint64_t i = 0; i < 150; ++i) {
    Graph g = gen.generate(i);
    ASSERT_EQ(firstInvalidNode(catalog, g), "") << "program " << i;
    bool any = false;
    for (const Node& n : g.nodes) {
      const OpSpec& op = catalog.at(n.op);
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        DType d = g.typeOf(n.inputs[k]).dtype;
        if (!isComplex(d)) continue;
        any = true;
        EXPECT_TRUE(op.accepts[std::min(k, op.accepts.size() - 1)].has(d)) << n.op << " in program " << i;
        complexThroughShape += op.family == "shape";
      }
    }
    for (const Source& s : g.inputs)
      if (isComplex(g.typeOf(s.value).dtype)) {
        ++complexInputs;
        EXPECT_NE(emitter.emit(g).find("torch.complex(torch.rand("), std::string::npos) << "program " << i;
      }
    withComplex += any;
  }
  EXPECT_GE(withComplex, 30);
  EXPECT_GE(complexInputs, 10);
  EXPECT_GE(complexThroughShape, 5);
}

// Each idiom grows as a whole on a value it fits: all its steps, valid, in order.
TEST_F(GeneratorTest, IdiomsGrowAsWholeUnits) {
  for (const Idiom& idiom : idioms()) {
    int whole = 0;
    for (uint64_t seed = 0; seed < 20; ++seed) {
      Rng rng(seed);
      IntSolver solver(seed);
      ShapeCaps caps;
      Graph g;
      GraphRepairer repairer(catalog, caps, rng, solver);
      repairer.attach(g);
      std::vector<int64_t> shape = idiom.minRank >= 3 ? std::vector<int64_t>{2, 4, 6} : std::vector<int64_t>{4, 6};
      int x = repairer.addSource({shape, DType::Float32}, std::nullopt, false);
      int steps = appendIdiom(idiom, x, g, repairer, catalog, caps, rng);
      ASSERT_EQ(firstInvalidNode(catalog, g), "") << idiom.name;
      if (steps != static_cast<int>(idiom.steps.size())) continue;
      ++whole;
      // The idiom's steps appear in order (repair may put casts or reshapes between them).
      size_t at = 0;
      for (const IdiomStep& step : idiom.steps) {
        while (at < g.nodes.size() && std::find(step.ops.begin(), step.ops.end(), g.nodes[at].op) == step.ops.end()) ++at;
        EXPECT_LT(at, g.nodes.size()) << idiom.name << ": step " << step.ops[0] << " missing";
        ++at;
      }
    }
    EXPECT_GE(whole, 10) << idiom.name << " grew whole in " << whole << " of 20 tries";
  }
  // The policy's idiom weights steer them; unknown idioms are refused.
  GenPolicy policy = GenPolicy::fromJson(json{{"idiom_chance", 1.0}, {"idiom_weights", {{"sdpa", 1}}}});
  Generator gen(catalog, policy, 9);
  int sdpa = 0;
  for (uint64_t i = 0; i < 20; ++i)
    for (const auto& n : gen.generate(i).nodes) sdpa += n.op == "sdpa";
  EXPECT_GT(sdpa, 10);
  EXPECT_THROW(GenPolicy::fromJson(json{{"idiom_weights", {{"transformer", 1}}}}), std::invalid_argument);
}

// A core that brings its own Python constructs (the JSON form's "python", "hook" and "schedule") keeps exactly
// those in every program grown around it; the policy draws none on top.
TEST_F(GeneratorTest, AGrownProgramKeepsItsCoresOwnConstructs) {
  Graph core = llmCore(
      R"({"inputs": [{"name": "x", "shape": [4, 8], "dtype": "float32"}],
          "nodes": [{"out": "a", "op": "sigmoid", "args": ["x"]},
                    {"out": "b", "op": "tanh", "args": ["a"], "python": {"graph_break_before": true}}],
          "outputs": ["b"], "hook": "forward-pre"})");
  ASSERT_EQ(core.nodes.size(), 2u);
  GenPolicy policy;
  Generator grower(catalog, policy, 5);
  for (uint64_t i = 0; i < 50; ++i) {
    Graph g = grower.grow(core, i, {policy.minNodes, policy.maxNodes});
    EXPECT_EQ(g.hook, "forward-pre") << i;
    EXPECT_TRUE(g.schedule.empty()) << i;
    int breaks = 0, others = 0;
    for (const Node& n : g.nodes) {
      breaks += n.python.graphBreakBefore;
      others += !n.python.empty() && !n.python.graphBreakBefore;
      if (n.python.graphBreakBefore) EXPECT_TRUE(n.core && n.op == "tanh") << i;
    }
    EXPECT_LE(breaks, 1) << i;  // the tanh may be dropped by repair, never duplicated
    EXPECT_EQ(others, 0) << i;
  }
}

// A nine-node attention core (the LLM fixtures' attention-json reply) grown at seed 41: at index 933 the joins
// of surplus values fail and the newest values fill the outputs; one output must still descend from the core,
// or dead-node elimination drops the whole core and the "LLM program" holds none of the LLM's nodes.
TEST_F(GeneratorTest, AGrownProgramAlwaysKeepsAnOutputOfItsCore) {
  Graph core = llmCore(
      R"({"inputs": [{"name": "q", "shape": [2, 4, 8], "dtype": "float32"}, {"name": "k", "shape": [2, 4, 8], "dtype": "float32"}, {"name": "v", "shape": [2, 4, 8], "dtype": "float32"}],
 "nodes": [{"out": "kt", "op": "transpose", "args": ["k"], "attrs": {"dim0": 1, "dim1": 2}},
  {"out": "s", "op": "matmul", "args": ["q", "kt"], "attrs": {}},
  {"out": "s2", "op": "mul_scalar", "args": ["s"], "attrs": {"value": 0.35}},
  {"out": "m", "op": "amax", "args": ["s2"], "attrs": {"dim": [-1], "keepdim": true}},
  {"out": "d", "op": "sub", "args": ["s2", "m"], "attrs": {}},
  {"out": "e", "op": "exp", "args": ["d"], "attrs": {}},
  {"out": "z", "op": "sum", "args": ["e"], "attrs": {"dim": [-1], "keepdim": true}},
  {"out": "p", "op": "div", "args": ["e", "z"], "attrs": {}},
  {"out": "o", "op": "matmul", "args": ["p", "v"], "attrs": {}}],
 "outputs": ["o"]})");
  ASSERT_FALSE(core.nodes.empty());
  GenPolicy policy;
  Generator grower(catalog, policy, 41);
  for (uint64_t i = 900; i < 1000; ++i) {
    Graph g = grower.grow(core, i, {4, 8});
    ASSERT_EQ(firstInvalidNode(catalog, g), "") << i;
    EXPECT_EQ(deadNodeCount(g), 0) << i;
    Rng rng(i);
    IntSolver replaySolver(i);
    EXPECT_EQ(GraphRepairer(catalog, policy.caps, rng, replaySolver).repair(g).contentHash(), g.contentHash()) << i;
    int marked = static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(), [](const Node& n) { return n.core; }));
    EXPECT_GE(marked, 1) << i;
    EXPECT_GT(static_cast<int>(g.nodes.size()), marked) << i;
  }
}

}  // namespace
}  // namespace tcfuzz::gen
