// Grammar mutation: every mutator in the table yields valid, different programs after repair,
// deterministically, and the stats count what each did.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <set>

#include "generators/repair/GraphRepair.h"
#include "generators/Mutator.h"

namespace tcfuzz::gen {
namespace {

class MutatorTest : public ::testing::Test {
 protected:
  OpCatalog catalog = makeDefaultCatalog();
  Generator generator{catalog, GenPolicy{}, 17};
};

TEST_F(MutatorTest, EveryMutatorProducesValidNewPrograms) {
  Mutator mutator(catalog, GenPolicy{});
  ASSERT_EQ(mutator.names(), (std::vector<std::string>{"replace_op", "insert_node", "delete_node", "change_attr",
                                                        "change_shape", "change_dtype", "splice", "change_layout",
                                                        "insert_view", "insert_inplace", "make_inplace",
                                                        "toggle_input_write", "change_python_construct"}));
  for (const auto& name : mutator.names()) {
    int produced = 0;
    for (uint64_t i = 0; i < 40; ++i) {
      Graph parent = generator.generate(i), donor = generator.generate(i + 1000);
      auto m = mutator.mutate(parent, &donor, i, name);
      if (!m) continue;
      ++produced;
      EXPECT_EQ(m->mutator, name);
      EXPECT_NE(m->graph.contentHash(), parent.contentHash());
      ASSERT_EQ(firstInvalidNode(catalog, m->graph), "") << name << " on program " << i;
      EXPECT_EQ(Graph::fromJson(m->graph.toJson()).contentHash(), m->graph.contentHash());
    }
    // toggle_input_write applies only where an in-place node reads a program input (about a third of programs).
    EXPECT_GE(produced, name == "toggle_input_write" ? 10 : 20) << name;
    EXPECT_EQ(mutator.stats().at(name).produced, produced);
    EXPECT_GE(mutator.stats().at(name).applied, produced);
  }
}

// make_inplace turns one node into its op's in-place twin: the mutant has one more in-place node, of
// an op whose out-of-place form the parent held.
TEST_F(MutatorTest, MakeInplaceTurnsANodeIntoItsInplaceTwin) {
  Mutator mutator(catalog, GenPolicy{});
  auto inplaceOps = [&](const Graph& g) {
    std::multiset<std::string> ops;
    for (const auto& n : g.nodes)
      if (catalog.at(n.op).inplace) ops.insert(n.op);
    return ops;
  };
  int checked = 0;
  for (uint64_t i = 0; i < 40; ++i) {
    Graph parent = generator.generate(i);
    auto m = mutator.mutate(parent, nullptr, i, "make_inplace");
    if (!m) continue;
    auto before = inplaceOps(parent), after = inplaceOps(m->graph);
    std::vector<std::string> added;
    std::set_difference(after.begin(), after.end(), before.begin(), before.end(), std::back_inserter(added));
    ASSERT_EQ(added.size(), 1u) << "program " << i;
    std::string functional = added[0].substr(0, added[0].size() - 1);
    EXPECT_TRUE(std::any_of(parent.nodes.begin(), parent.nodes.end(), [&](const Node& n) { return n.op == functional; }))
        << added[0] << " in program " << i;
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

TEST_F(MutatorTest, ToggleInputWriteTurnsAWriteIntoACloneIntoAWriteIntoTheInputAndBack) {
  Mutator mutator(catalog, GenPolicy{});
  int on = 0, off = 0;
  for (uint64_t i = 0; i < 60; ++i) {
    Graph parent = generator.generate(i);
    auto m = mutator.mutate(parent, nullptr, i, "toggle_input_write");
    if (!m) continue;
    // Nodes that write into an input: an input's aliases count as written too (writtenInputPositions).
    auto writers = [](const Graph& g) {
      return static_cast<size_t>(std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return writesIntoProgramInput(g, n); }));
    };
    size_t before = writers(parent), after = writers(m->graph);
    ASSERT_EQ(after > before ? after - before : before - after, 1u) << "program " << i;
    (after > before ? on : off)++;
  }
  EXPECT_GE(on, 5);
  EXPECT_GE(off, 5);
}

// A policy weight of 0 keeps an op out of mutants as it keeps it out of generation: no mutator but
// splice (which carries a donor's ops) adds an op of a family the policy turned off. (Repair's own
// fix-up nodes, casts and clamps, are no policy draw.) Regression: a mutant's attributes that do not
// fit its input's rank made setitem_slice's operand rule write out of bounds.
TEST_F(MutatorTest, MutatorsNeverAddAnOpThePolicyWeighsZero) {
  GenPolicy off;
  off.familyWeights["expand-write"] = 0;
  off.familyWeights["aten-backward"] = 0;
  off.familyWeights["activation"] = 0;
  off.opWeights["mul_"] = 0;
  Generator plain(catalog, off, 23);
  Mutator mutator(catalog, off);
  auto banned = [&](const Node& n) { return off.weightOf(catalog.at(n.op)) <= 0; };
  int mutants = 0;
  for (uint64_t i = 0; i < 150; ++i) {
    Graph parent = plain.generate(i);
    ASSERT_FALSE(std::any_of(parent.nodes.begin(), parent.nodes.end(), banned)) << "program " << i;
    for (const std::string& name : mutator.names()) {
      if (name == "splice") continue;
      auto m = mutator.mutate(parent, nullptr, i, name);
      if (!m) continue;
      ++mutants;
      for (const Node& n : m->graph.nodes) EXPECT_FALSE(banned(n)) << name << " added " << n.op << " to program " << i;
    }
  }
  EXPECT_GT(mutants, 1000);
}

TEST_F(MutatorTest, MutationIsDeterministic) {
  Mutator a(catalog, GenPolicy{}), b(catalog, GenPolicy{});
  Graph parent = generator.generate(3), donor = generator.generate(4);
  for (uint64_t i = 0; i < 20; ++i) {
    auto x = a.mutate(parent, &donor, i), y = b.mutate(parent, &donor, i);
    ASSERT_EQ(x.has_value(), y.has_value());
    if (x) EXPECT_EQ(x->graph.contentHash(), y->graph.contentHash());
  }
}

TEST_F(MutatorTest, SpliceCarriesTheDonorsOps) {
  Mutator mutator(catalog, GenPolicy{});
  GenPolicy onlyConv;
  for (const auto& op : catalog.ops()) onlyConv.opWeights[op->name] = op->name == "nn_conv2d" ? 1 : 0;
  Graph donor = Generator(catalog, onlyConv, 5).generate(0);
  ASSERT_EQ(donor.nodes.front().op, "nn_conv2d");
  int withConv = 0;
  for (uint64_t i = 0; i < 20; ++i) {
    auto m = mutator.mutate(generator.generate(i), &donor, i, "splice");
    if (!m) continue;
    for (const auto& n : m->graph.nodes) withConv += n.op == "nn_conv2d";
  }
  EXPECT_GE(withConv, 10);
  EXPECT_FALSE(mutator.mutate(generator.generate(0), nullptr, 0, "splice").has_value());
  EXPECT_THROW(mutator.mutate(generator.generate(0), nullptr, 0, "no_such_mutator"), std::invalid_argument);
}

// Regression (a campaign's fuzzer segfaulted): sdpa's operand rule read dim -2 of a key of lower rank
// when repair replayed a mutant. A rule that cannot work from its inputs now rejects the node, and
// hundreds of random mutations of generated programs finish without an exception or a crash.
TEST_F(MutatorTest, RandomMutationsOfGeneratedProgramsNeverThrow) {
  OpContext ctx;
  ctx.in = {TensorType{{2, 4, 6}, DType::Float32}, TensorType{{5}, DType::Float32}};
  ctx.attrs = {{"is_causal", false}, {"scale", nullptr}};
  Rng rng(1);
  std::optional<TensorType> v = proposedOperand(catalog.at("sdpa"), ctx, 2, rng);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->rank(), 3);
  EXPECT_EQ(v->shape[0], 2);
  EXPECT_EQ(v->shape[1], 4);  // the key's rank differs: its length is not read
  EXPECT_FALSE(proposedOperand(catalog.at("narrow_mul_"), OpContext{{TensorType{{3}, DType::Float32}}, {}, {{"dim", 4}, {"start", 0}, {"end", 1}, {"length", 1}}}, 1, rng));
  Mutator mutator(catalog, GenPolicy{});
  int produced = 0;
  for (uint64_t i = 0; i < 400; ++i) {
    Graph parent = generator.generate(i % 60), donor = generator.generate(1000 + i % 7);
    std::optional<Mutant> m;
    ASSERT_NO_THROW(m = mutator.mutate(parent, &donor, i)) << "mutation " << i;
    if (!m) continue;
    ++produced;
    ASSERT_EQ(firstInvalidNode(catalog, m->graph), "") << m->mutator << " on program " << i % 60;
  }
  EXPECT_GT(produced, 200);
}

}  // namespace
}  // namespace tcfuzz::gen
