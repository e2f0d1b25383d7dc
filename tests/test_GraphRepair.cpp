// Repair of foreign graphs (mutated programs, LLM proposals) and of appended nodes: Z3 solves integer
// attributes, operands are coerced, value domains clamped, dtypes cast, hopeless nodes dropped with
// what reads them, bad attributes redrawn; all of it replays from the repairer's seed.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "generators/Generator.h"
#include "generators/repair/GraphRepair.h"

namespace tcfuzz::gen {
namespace {

using nlohmann::json;

/// A foreign graph: one input of `shape`, then `nodes` given as (op, inputs, attrs).
Graph foreignGraph(std::vector<int64_t> shape, std::vector<std::tuple<std::string, std::vector<int>, json>> nodes,
                   DType dtype = DType::Float32) {
  Graph g;
  int x = g.addValue({shape, dtype});
  g.inputs.push_back({x, "x0", {"uniform", -2, 2, 0.5}});
  for (auto& [op, ins, attrs] : nodes) {
    int out = g.addValue({{1}, DType::Float32});  // declared types are recomputed by repair
    g.nodes.push_back({op, ins, {out}, attrs});
  }
  g.outputs = {static_cast<int>(g.values.size()) - 1};
  return g;
}

class RepairTest : public ::testing::Test {
 protected:
  OpCatalog catalog = makeDefaultCatalog();
  Rng rng{11};
  IntSolver solver{11};
  ShapeCaps caps;
  GraphRepairer repairer{catalog, caps, rng, solver};
};

TEST_F(RepairTest, Z3SolvesIntegerAttributesInPlace) {
  // narrow(start=5, length=4) on a dim of 6 violates start + length <= 6.
  Graph bad = foreignGraph({3, 6}, {{"narrow", {0}, {{"dim", 1}, {"start", 5}, {"length", 4}}}});
  std::vector<std::string> dropped;
  Graph fixed = repairer.repair(bad, &dropped);
  ASSERT_TRUE(dropped.empty()) << dropped[0];
  ASSERT_EQ(fixed.nodes.size(), 1u);
  const json& a = fixed.nodes[0].attrs;
  EXPECT_EQ(a["dim"], 1);
  EXPECT_LE(a["start"].get<int>() + a["length"].get<int>(), 6);
  // The solver keeps what it can: one of start/length survives unchanged.
  EXPECT_TRUE(a["start"] == 5 || a["length"] == 4) << a.dump();
  EXPECT_EQ(repairer.stats().solved, 1);
  EXPECT_EQ(solver.calls(), 1);
  EXPECT_EQ(firstInvalidNode(catalog, fixed), "");
}

TEST_F(RepairTest, MismatchedOperandIsCoerced) {
  // add([3, 4], [5, 7]) cannot broadcast: the second operand is sliced and expanded to fit.
  Graph bad;
  int x = bad.addValue({{3, 4}, DType::Float32});
  bad.inputs.push_back({x, "x0", {"uniform", -2, 2, 0.5}});
  int y = bad.addValue({{5, 7}, DType::Float32});
  bad.inputs.push_back({y, "x1", {"uniform", -2, 2, 0.5}});
  int s = bad.addValue({{5, 7}, DType::Float32});
  bad.nodes.push_back({"sin", {y}, {s}, json::object()});  // y is read elsewhere: no resize
  int out = bad.addValue({{3, 4}, DType::Float32});
  bad.nodes.push_back({"add", {x, s}, {out}, {{"alpha", 1}}});
  bad.outputs = {out};
  std::vector<std::string> dropped;
  Graph fixed = repairer.repair(bad, &dropped);
  ASSERT_TRUE(dropped.empty()) << dropped[0];
  EXPECT_EQ(fixed.nodes.back().op, "add");
  EXPECT_GE(repairer.stats().coercions, 1);
  EXPECT_EQ(fixed.typeOf(fixed.outputs[0]).shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(firstInvalidNode(catalog, fixed), "");
}

TEST_F(RepairTest, ValueDomainsAreRespected) {
  // log of an intermediate that can be negative: a clamp is inserted before it.
  Graph bad = foreignGraph({4}, {{"sin", {0}, json::object()}, {"log", {1}, json::object()}});
  Graph fixed = repairer.repair(bad);
  ASSERT_EQ(fixed.nodes.size(), 3u);
  EXPECT_EQ(fixed.nodes[1].op, "clamp");
  EXPECT_GT(fixed.nodes[1].attrs["min"].get<double>(), 0);
  EXPECT_EQ(fixed.nodes[2].op, "log");
  // log of a program input read nowhere else: its distribution moves into the domain instead.
  Graph direct = foreignGraph({4}, {{"log", {0}, json::object()}});
  Graph fixedDirect = repairer.repair(direct);
  ASSERT_EQ(fixedDirect.nodes.size(), 1u);
  EXPECT_GT(fixedDirect.inputs[0].dist.low, 0);
}

TEST_F(RepairTest, WrongDtypeIsCast) {
  Graph bad = foreignGraph({4}, {{"bitwise_not", {0}, json::object()}});  // float input
  Graph fixed = repairer.repair(bad);
  ASSERT_EQ(fixed.nodes.back().op, "bitwise_not");
  EXPECT_FALSE(isFloat(fixed.typeOf(fixed.nodes.back().inputs[0]).dtype));
}

TEST_F(RepairTest, HopelessNodesAreDroppedWithTheirDependents) {
  Graph bad = foreignGraph({4}, {{"no_such_op", {0}, json::object()},
                                 {"sin", {1}, json::object()},
                                 {"cos", {0}, json::object()}});
  std::vector<std::string> dropped;
  Graph fixed = repairer.repair(bad, &dropped);
  ASSERT_EQ(dropped.size(), 2u);
  EXPECT_EQ(dropped[0], "node 0 (no_such_op): unknown op 'no_such_op'");
  EXPECT_EQ(dropped[1], "node 1 (sin): reads a dropped value");
  ASSERT_EQ(fixed.nodes.size(), 1u);
  EXPECT_EQ(fixed.nodes[0].op, "cos");
  EXPECT_EQ(fixed.outputs.size(), 1u);
  EXPECT_EQ(repairer.stats().rejectedByOp.at("no_such_op"), 1);
}

TEST_F(RepairTest, BadAttributesAreRedrawn) {
  Graph bad = foreignGraph({2, 5}, {{"softmax", {0}, {{"dim", "rows"}, {"bogus", 1}}}});
  Graph fixed = repairer.repair(bad);
  ASSERT_EQ(fixed.nodes.size(), 1u);
  EXPECT_TRUE(fixed.nodes[0].attrs["dim"].is_number_integer());
  EXPECT_FALSE(fixed.nodes[0].attrs.contains("bogus"));
  EXPECT_EQ(repairer.stats().resampled, 1);
}

// The same foreign graph repaired by two repairers of the same seed gives the same program; the draws
// of a redrawn attribute come from the seed.
TEST_F(RepairTest, RepairReplaysFromTheSeed) {
  Graph bad = foreignGraph({2, 5}, {{"softmax", {0}, {{"dim", "rows"}}},
                                    {"narrow", {1}, {{"dim", 1}, {"start", 4}, {"length", 4}}},
                                    {"log", {2}, json::object()}});
  Rng otherRng{11};
  IntSolver otherSolver{11};
  GraphRepairer twin{catalog, caps, otherRng, otherSolver};
  Graph first = repairer.repair(bad), second = twin.repair(bad);
  EXPECT_EQ(first.contentHash(), second.contentHash());
  EXPECT_EQ(first.toJson(), second.toJson());
  EXPECT_EQ(repairer.stats().toJson(), twin.stats().toJson());
  EXPECT_EQ(firstInvalidNode(catalog, first), "");
}

// append: a valid node goes in as it is; an unknown op is refused with its reason and leaves the
// graph as it was.
TEST_F(RepairTest, AppendKeepsAValidNodeAndRefusesAnUnknownOpLeavingTheGraphAlone) {
  Graph g;
  repairer.attach(g);
  int x = repairer.addSource({{3, 4}, DType::Float32}, std::nullopt, false);
  ASSERT_TRUE(repairer.append({"sin", {x}, {}, json::object()}));
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, "sin");
  EXPECT_EQ(g.typeOf(g.nodes[0].outputs[0]).shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(repairer.stats().accepted, 1);
  EXPECT_EQ(repairer.stats().validAsIs, 1);

  std::string before = g.toJson().dump(), reason;
  EXPECT_FALSE(repairer.append({"no_such_op", {x}, {}, json::object()}, &reason));
  EXPECT_NE(reason.find("no_such_op"), std::string::npos) << reason;
  EXPECT_EQ(g.toJson().dump(), before);
  EXPECT_EQ(repairer.stats().rejected, 1);
  EXPECT_EQ(repairer.stats().rejectedByOp.at("no_such_op"), 1);
}

}  // namespace
}  // namespace tcfuzz::gen
