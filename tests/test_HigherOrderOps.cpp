// Regions run by higher-order ops (HigherOrderOps.h): which nodes a region takes, when its construct holds, how
// each kind is written, the IR's JSON form, and the shares generation reaches.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "generators/Generator.h"
#include "generators/ir/ProgramFigures.h"
#include "generators/python/HigherOrderOps.h"
#include "generators/python/PythonConstructs.h"
#include "generators/python/PythonEmitter.h"

namespace tcfuzz::gen {
namespace {

class HigherOrderOpsTest : public ::testing::Test {
 protected:
  OpCatalog catalog = makeDefaultCatalog();

  /// x0 [3, 4] and x1 [3, 4] float32: v2 = exp(x0), v3 = v2 * x1, v4 = tanh(v3) returned; v5 = neg(x0) returned.
  Graph chain() {
    Graph g;
    int x0 = g.addValue({{3, 4}, DType::Float32});
    int x1 = g.addValue({{3, 4}, DType::Float32});
    g.inputs.push_back({x0, "x0", {"uniform", -2, 2}});
    g.inputs.push_back({x1, "x1", {"uniform", -2, 2}});
    int e = g.addValue({{3, 4}, DType::Float32});
    g.nodes.push_back({"exp", {x0}, {e}});
    int m = g.addValue({{3, 4}, DType::Float32});
    g.nodes.push_back({"mul", {e, x1}, {m}});
    int t = g.addValue({{3, 4}, DType::Float32});
    g.nodes.push_back({"tanh", {m}, {t}});
    int n = g.addValue({{3, 4}, DType::Float32});
    g.nodes.push_back({"neg", {x0}, {n}});
    g.outputs = {t, n};
    return g;
  }

  std::optional<HopRegion> region(const Graph& g, size_t head, const HopConstruct& hop) {
    std::vector<NodePython> python;
    for (const Node& n : g.nodes) python.push_back(n.python);
    return hopRegionOf(g, catalog, head, hop, python);
  }
};

TEST_F(HigherOrderOpsTest, ARegionTakesTheAncestorsOnlyItReadsAndPassesTheOthersAsOperands) {
  Graph g = chain();
  auto r = region(g, 2, {"map", 0, 0});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->nodes, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(r->operands, (std::vector<int>{0, 1}));  // x0 first: map stacks it
  // exp's output returned too: it leaves the region, which keeps mul and tanh and takes exp's output in.
  g.outputs.push_back(2);
  r = region(g, 2, {"map", 0, 0});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->nodes, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(r->operands, (std::vector<int>{2, 1}));
  // A node with a construct of its own stays out of the body.
  g = chain();
  g.nodes[1].python.graphBreakBefore = true;
  r = region(g, 2, {"checkpoint", 0, 0});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->nodes, (std::vector<size_t>{2}));
}

TEST_F(HigherOrderOpsTest, AConstructWhoseRegionNoLongerHoldsIsLeftOutNeverWrittenWrong) {
  Graph g = chain();
  // grad differentiates with respect to an operand of the head's type: neg(x0) has one (x0).
  EXPECT_TRUE(region(g, 3, {"grad", 0, 0}));
  // cond's predicate input must exist and must not be written.
  EXPECT_TRUE(region(g, 2, {"cond", 1, 0.25}));
  EXPECT_FALSE(region(g, 2, {"cond", 5, 0.25}));
  // A loop that carries a sum needs a floating head.
  Graph ints = chain();
  for (auto& v : ints.values) v.type.dtype = DType::Int64;
  ints.nodes[0].op = "abs";
  ints.nodes[2].op = "abs";
  EXPECT_FALSE(region(ints, 2, {"while_loop", 0, 0}));
  EXPECT_TRUE(region(ints, 2, {"checkpoint", 0, 0}));
  // The planner drops what does not hold and keeps what does; the emitter then writes no region.
  g.nodes[2].python.hop = HopConstruct{"cond", 7, 0};
  g.nodes[3].python.hop = HopConstruct{"vmap", 0, 0};
  PythonPlan plan = planPythonConstructs(g, catalog);
  EXPECT_FALSE(plan.hops[2]);
  EXPECT_FALSE(plan.nodes[2].hop);
  ASSERT_TRUE(plan.hops[3]);
  EXPECT_EQ(plan.hopKinds, (std::set<std::string>{"vmap"}));
  std::string py = PythonEmitter(catalog).emit(g);
  EXPECT_EQ(py.find("cond("), std::string::npos) << py;
  EXPECT_NE(py.find("        v5 = vmap(hop3, in_dims=(0,))(torch.stack([x0, x0]))[0]\n"), std::string::npos) << py;
}

TEST_F(HigherOrderOpsTest, EachKindIsWrittenAroundItsBodyAndCalledThroughTheGlobalTheReferencesRebind) {
  const std::map<std::string, std::vector<std::string>> expected{
      {"cond", {"cond = torch.cond\n", "        def hop2_else(x0, x1):",
                "        v4 = cond(x1.flatten()[0] > 0.25, hop2, hop2_else, (x0, x1))\n"}},
      {"map", {"hop_map = torch._higher_order_ops.map\n", "        v4 = hop_map(hop2, torch.stack([x0, x0]), x1)[0]\n"}},
      {"while_loop", {"while_loop = torch._higher_order_ops.while_loop\n",
                      "            return hop_i + 1, hop_acc * 0.5 + hop2(x0, x1)\n",
                      "        v4 = while_loop(hop2_cond, hop2_step, (torch.zeros((), dtype=torch.int64), hop2(x0, x1)))[1]\n"}},
      {"scan", {"scan = torch._higher_order_ops.scan\n", "        def hop2_step(hop_carry, x0):",
                "        v4 = scan(hop2_step, hop2(x0, x1), torch.stack([x0, x0]))[0]\n"}},
      {"checkpoint", {"import torch.utils.checkpoint\n", "checkpoint = torch.utils.checkpoint.checkpoint\n",
                      "        v4 = checkpoint(hop2, x0, x1, use_reentrant=False)\n"}},
      {"nested_compile_region", {"nested_compile_region = torch.compiler.nested_compile_region\n",
                                 "        v4 = nested_compile_region(hop2)(x0, x1)\n"}},
      {"vmap", {"vmap = torch.func.vmap\n", "        v4 = vmap(hop2, in_dims=(0, None))(torch.stack([x0, x0]), x1)[0]\n"}},
      {"autograd_function", {"class RegionFunction(torch.autograd.Function):\n",
                             "        v4 = RegionFunction.apply(hop2, x0, x1)\n"}},
      {"associative_scan", {"associative_scan = torch._higher_order_ops.associative_scan\n",
                            "        v4 = associative_scan(torch.minimum, hop2(x0, x1), 0, combine_mode=\"generic\")\n"}},
      {"jvp", {"jvp = torch.func.jvp\n", "        v4 = jvp(lambda x0: hop2(x0, x1), (x0,), (torch.ones_like(x0),))[1]"
                        ".clone(memory_format=torch.contiguous_format)\n"}},
      {"vjp", {"vjp = torch.func.vjp\n", "        hop_out, hop_pullback = vjp(lambda x0: hop2(x0, x1), x0)\n"
                                          "        v4 = hop_pullback(torch.ones_like(hop_out))[0].clone(memory_format=torch.contiguous_format)\n"}},
      {"jacrev", {"jacrev = torch.func.jacrev\n", "        v4 = jacrev(lambda x0: hop2(x0, x1))(x0).sum(dim=(2, 3))\n"}},
  };
  for (const auto& [kind, lines] : expected) {
    Graph g = chain();
    g.nodes[2].python.hop = HopConstruct{kind, 1, 0.25};
    std::string py = PythonEmitter(catalog).emit(g);
    // The body holds the three nodes at the region's indentation, then returns a fresh contiguous output.
    EXPECT_NE(py.find("        def hop2(x0, x1):  # a region of 3 node(s), run by " + kind + "\n"
                      "            v2 = torch.exp(x0)  # [3, 4] float32\n"),
              std::string::npos)
        << kind << ":\n" << py;
    EXPECT_NE(py.find("            return v4.clone(memory_format=torch.contiguous_format)\n"), std::string::npos) << py;
    for (const std::string& line : lines) EXPECT_NE(py.find(line), std::string::npos) << kind << ": " << line << "\n" << py;
    EXPECT_EQ(py.find("\n        v2 = torch.exp(x0)"), std::string::npos) << kind << ": exp written outside the body";
  }
  Graph g = chain();
  g.nodes[3].python.hop = HopConstruct{"grad", 0, 0};
  std::string py = PythonEmitter(catalog).emit(g);
  EXPECT_NE(py.find("grad = torch.func.grad\n"), std::string::npos) << py;
  EXPECT_NE(py.find("            return hop3(x0).sum()\n        v5 = grad(hop3_sum)(x0).clone(memory_format=torch.contiguous_format)\n"), std::string::npos) << py;
}

TEST_F(HigherOrderOpsTest, FlexAttentionAttendsOverAFloat32HeadOfFourDimsWithAMaskThatKeepsTheDiagonal) {
  Graph g = chain();
  EXPECT_FALSE(region(g, 2, {"flex_attention", 0, 0}));  // [3, 4]: no (batch, heads, length, dim)
  for (auto& v : g.values) v.type.shape = {1, 2, 5, 4};
  ASSERT_TRUE(region(g, 2, {"flex_attention", 0, 0}));
  g.nodes[2].python.hop = HopConstruct{"flex_attention", 0, 0};
  std::string py = PythonEmitter(catalog).emit(g);
  for (const char* line :
       {"import torch.nn.attention.flex_attention\n", "flex_attention = torch.nn.attention.flex_attention.flex_attention\n",
        "create_block_mask = torch.nn.attention.flex_attention.create_block_mask\n",
        "        def hop2_score(score, b, h, q_idx, kv_idx):  # score_mod\n            return score + (q_idx - kv_idx) * 0.125\n",
        "        def hop2_mask(b, h, q_idx, kv_idx):  # mask_mod\n            return q_idx >= kv_idx\n",
        "        hop_x = hop_x.repeat(1, 1, -(-hop_n // hop_len), 1)[:, :, :hop_n]\n",  // head 2: tiled to 128, aligned
        "        v4 = flex_attention(hop_x, hop_x, hop_x, score_mod=hop2_score, block_mask=hop_mask)[:, :, :hop_len]"
        ".clone(memory_format=torch.contiguous_format)\n"})
    EXPECT_NE(py.find(line), std::string::npos) << line << "\n" << py;
  for (auto& v : g.values) v.type.dtype = DType::Float16;
  EXPECT_FALSE(region(g, 2, {"flex_attention", 0, 0}));
}

TEST_F(HigherOrderOpsTest, TheJsonFormKeepsAConstructAndRejectsAnUnknownKind) {
  Graph g = chain();
  g.nodes[2].python.hop = HopConstruct{"cond", 1, -0.5};
  Graph back = Graph::fromJson(g.toJson());
  ASSERT_TRUE(back.nodes[2].python.hop);
  EXPECT_EQ(*back.nodes[2].python.hop, (HopConstruct{"cond", 1, -0.5}));
  EXPECT_EQ(back.contentHash(), g.contentHash());
  nlohmann::json doc = g.toJson();
  doc["nodes"][2]["python"]["hop"]["kind"] = "fori_loop";
  try {
    Graph::fromJson(doc, "prog.json");
    FAIL() << "an unknown higher-order op was accepted";
  } catch (const GraphFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown higher-order op 'fori_loop'"), std::string::npos) << e.what();
  }
}

TEST_F(HigherOrderOpsTest, GenerationReachesTheShareTargetsWithEveryKindAndEveryDrawnRegionHolds) {
  // In 1000 programs of the default policy: 15% hold a higher-order op's region, 10% torch.func or a custom
  // autograd.Function, every kind is drawn, and every drawn construct holds on the program as generated.
  Generator gen(catalog, GenPolicy{}, 11);
  ProgramFigures figures;
  std::map<std::string, int> kinds;
  constexpr int kPrograms = 1000;
  int hop = 0, func = 0;
  for (uint64_t i = 0; i < kPrograms; ++i) {
    Graph g = gen.generate(i);
    PythonPlan plan = planPythonConstructs(g, catalog);
    for (size_t k = 0; k < g.nodes.size(); ++k) EXPECT_EQ(plan.nodes[k].hop, g.nodes[k].python.hop) << i << " " << k;
    for (const std::string& kind : plan.hopKinds) ++kinds[kind];
    auto torchFunc = [](const std::string& k) {
      return k == "autograd_function" || hopKind(k).binding.starts_with("torch.func.");
    };
    func += std::any_of(plan.hopKinds.begin(), plan.hopKinds.end(), torchFunc);
    hop += std::any_of(plan.hopKinds.begin(), plan.hopKinds.end(), [&](const std::string& k) { return !torchFunc(k); });
    figures.add(g, catalog);
  }
  EXPECT_GE(hop, kPrograms * 15 / 100);
  EXPECT_GE(func, kPrograms * 10 / 100);
  for (const std::string& kind : hopKindNames()) EXPECT_GT(kinds[kind], 0) << kind;
  nlohmann::json shape = figures.toJson();
  EXPECT_GE(shape["programs_with_a_higher_order_op"].get<double>(), 0.15);
  EXPECT_GE(shape["programs_with_torch_func_or_an_autograd_function"].get<double>(), 0.10);
  EXPECT_GT(shape["mean_region_nodes"].get<double>(), 1.5);
  EXPECT_EQ(shape["programs_with_each_higher_order_op"].size(), hopKindNames().size());
}

}  // namespace
}  // namespace tcfuzz::gen
