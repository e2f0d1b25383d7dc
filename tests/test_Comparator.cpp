// fp64-arbitrated comparison (torch._dynamo.utils.same semantics) on tensors built in C++.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <cmath>
#include <limits>

#include "oracles/judge/Comparator.h"
#include "oracles/judge/OutputLoader.h"

using namespace tcfuzz::oracles;

namespace {

std::string dtypeName(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return "float32";
    case at::kDouble: return "float64";
    case at::kHalf: return "float16";
    case at::kBFloat16: return "bfloat16";
    case at::kLong: return "int64";
    case at::kInt: return "int32";
    case at::kBool: return "bool";
    default: return "other";
  }
}

LoadedOutputs outputs(std::vector<at::Tensor> tensors) {
  LoadedOutputs o;
  for (size_t i = 0; i < tensors.size(); ++i) {
    OutputLeaf leaf;
    leaf.kind = OutputLeaf::Kind::Tensor;
    leaf.index = static_cast<int>(i);
    leaf.dtype = dtypeName(tensors[i]);
    leaf.shape = tensors[i].sizes().vec();
    o.leaves.push_back(leaf);
  }
  o.tensors = std::move(tensors);
  return o;
}

class ComparatorTest : public ::testing::Test {
 protected:
  void SetUp() override { at::manual_seed(1234); }
  Comparator comparator;
};

}  // namespace

TEST_F(ComparatorTest, EqualOutputsPass) {
  at::Tensor x = at::randn({16, 16});
  auto e = outputs({x}), c = outputs({x.clone()}), r = outputs({x.to(at::kDouble)});
  Comparison cmp = comparator.compare(e, c, &r);
  EXPECT_TRUE(cmp.passed);
  ASSERT_EQ(cmp.leaves.size(), 1u);
  EXPECT_TRUE(cmp.leaves[0].allclose);
  EXPECT_DOUBLE_EQ(cmp.leaves[0].maxAbsDiff, 0.0);
}

// A gradient None in eager (no path to any output) and materialized as zeros by the compiled backward
// is no wrong result; zeros against a nonzero gradient, or None against a nonzero tensor, still are.
TEST_F(ComparatorTest, NoneGradientAgainstZerosIsNotJudged) {
  auto gradLeaves = [](LoadedOutputs o) {
    for (auto& leaf : o.leaves) leaf.role = "grad";
    return o;
  };
  LoadedOutputs none;
  OutputLeaf leaf;
  leaf.kind = OutputLeaf::Kind::Other;
  leaf.repr = "None";
  leaf.role = "grad";
  none.leaves.push_back(leaf);
  LoadedOutputs zeros = gradLeaves(outputs({at::zeros({3})})), ones = gradLeaves(outputs({at::ones({3})}));
  Comparison materialized = comparator.compare(none, zeros, nullptr);
  EXPECT_TRUE(materialized.passed) << materialized.reason;
  EXPECT_EQ(materialized.leaves.at(0).reason, "gradient None in eager and all zeros in compiled: not judged");
  EXPECT_TRUE(comparator.compare(zeros, none, nullptr).passed);
  Comparison wrong = comparator.compare(none, ones, nullptr);
  EXPECT_FALSE(wrong.passed);
  EXPECT_NE(wrong.reason.find("one output is a tensor, the other is not"), std::string::npos) << wrong.reason;
  // Outside gradients the rule does not apply.
  LoadedOutputs noneOutput = none;
  noneOutput.leaves[0].role = "output";
  EXPECT_FALSE(comparator.compare(noneOutput, outputs({at::zeros({3})}), nullptr).passed);
}

TEST_F(ComparatorTest, WithinToleranceIsAllclose) {
  at::Tensor x = at::randn({64});
  at::Tensor y = x + 5e-5;  // inside atol = rtol = 1e-4
  auto e = outputs({x}), c = outputs({y}), r = outputs({x.to(at::kDouble)});
  Comparison cmp = comparator.compare(e, c, &r);
  EXPECT_TRUE(cmp.passed);
  EXPECT_TRUE(cmp.leaves[0].allclose);
  EXPECT_FALSE(cmp.leaves[0].fp64Used);
  EXPECT_NEAR(cmp.leaves[0].maxAbsDiff, 5e-5, 1e-6);
}

TEST_F(ComparatorTest, BeyondToleranceButNoWorseThanEagerPasses) {
  // Eager is itself 1e-2 off fp64; compiled is 1.5e-2 off the other way: beyond allclose, but
  // rmse(compiled) = 1.5e-2 <= 2 * rmse(eager) = 2e-2, so the fp64 arbitration passes it.
  at::Tensor truth = at::randn({2000}, at::kDouble);
  at::Tensor eager = (truth + 1e-2).to(at::kFloat);
  at::Tensor compiled = (truth - 1.5e-2).to(at::kFloat);
  auto e = outputs({eager}), c = outputs({compiled}), r = outputs({truth});
  Comparison cmp = comparator.compare(e, c, &r);
  EXPECT_TRUE(cmp.passed) << cmp.reason;
  const auto& leaf = cmp.leaves[0];
  EXPECT_FALSE(leaf.allclose);
  EXPECT_TRUE(leaf.fp64Used);
  EXPECT_DOUBLE_EQ(leaf.multiplier, 2.0);
  EXPECT_NEAR(leaf.rmseEager, 1e-2, 1e-5);
  EXPECT_NEAR(leaf.rmseCompiled, 1.5e-2, 1e-5);
}

TEST_F(ComparatorTest, FurtherFromFp64ThanEagerFails) {
  at::Tensor truth = at::randn({2000}, at::kDouble);
  at::Tensor eager = truth.to(at::kFloat);
  at::Tensor compiled = (truth + 1e-2).to(at::kFloat);
  auto e = outputs({eager}), c = outputs({compiled}), r = outputs({truth});
  Comparison cmp = comparator.compare(e, c, &r);
  EXPECT_FALSE(cmp.passed);
  EXPECT_NE(cmp.reason.find("rmse(compiled, fp64)"), std::string::npos) << cmp.reason;
  EXPECT_NEAR(cmp.leaves[0].rmseCompiled, 1e-2, 1e-5);
}

TEST_F(ComparatorTest, SmallTensorsAndHalfPrecisionUseMultiplierThree) {
  at::Tensor truth = at::randn({10}, at::kDouble);
  auto e = outputs({(truth + 1e-2).to(at::kFloat)}), c = outputs({(truth - 2.5e-2).to(at::kFloat)});
  auto r = outputs({truth});
  Comparison small = comparator.compare(e, c, &r);
  EXPECT_TRUE(small.passed) << small.reason;  // 2.5e-2 <= 3 * 1e-2
  EXPECT_DOUBLE_EQ(small.leaves[0].multiplier, 3.0);
  EXPECT_DOUBLE_EQ(comparator.toleranceFor("float16"), 1e-3);
  EXPECT_DOUBLE_EQ(comparator.toleranceFor("bfloat16"), 1e-2);
}

TEST_F(ComparatorTest, NanPlacementDifferenceFails) {
  at::Tensor x = at::randn({8});
  at::Tensor y = x.clone();
  y[3] = std::numeric_limits<float>::quiet_NaN();
  auto e = outputs({x}), c = outputs({y}), r = outputs({x.to(at::kDouble)});
  Comparison cmp = comparator.compare(e, c, &r);
  EXPECT_FALSE(cmp.passed);
  EXPECT_FALSE(cmp.leaves[0].nonFiniteMatch);
}

TEST_F(ComparatorTest, SameNanPlacementIsComparedOnFiniteValues) {
  at::Tensor x = at::randn({8});
  x[2] = std::numeric_limits<float>::infinity();
  x[5] = std::numeric_limits<float>::quiet_NaN();
  auto e = outputs({x}), c = outputs({x.clone()}), r = outputs({x.to(at::kDouble)});
  Comparison cmp = comparator.compare(e, c, &r);
  EXPECT_TRUE(cmp.passed) << cmp.reason;
  EXPECT_TRUE(cmp.leaves[0].nonFiniteMatch);
}

TEST_F(ComparatorTest, EagerNanWhereFp64IsFiniteIsUnstableNotAFinding) {
  at::Tensor x = at::randn({8});
  at::Tensor eager = x.clone();
  eager[0] = std::numeric_limits<float>::quiet_NaN();
  auto e = outputs({eager}), c = outputs({x}), r = outputs({x.to(at::kDouble)});
  Comparison cmp = comparator.compare(e, c, &r);
  EXPECT_TRUE(cmp.unstable);
  EXPECT_TRUE(cmp.passed);
  EXPECT_FALSE(cmp.leaves[0].fp64Stable);
}

TEST_F(ComparatorTest, DtypeMismatchFails) {
  at::Tensor x = at::randn({4});
  auto e = outputs({x}), c = outputs({x.to(at::kDouble)}), r = outputs({x.to(at::kDouble)});
  Comparison cmp = comparator.compare(e, c, &r);
  EXPECT_FALSE(cmp.passed);
  EXPECT_FALSE(cmp.leaves[0].dtypeMatch);
  EXPECT_NE(cmp.reason.find("dtype differs: eager float32 vs compiled float64"), std::string::npos) << cmp.reason;
}

TEST_F(ComparatorTest, ShapeMismatchFails) {
  at::Tensor x = at::randn({4, 2});
  auto e = outputs({x}), c = outputs({x.reshape({8})}), r = outputs({x.to(at::kDouble)});
  Comparison cmp = comparator.compare(e, c, &r);
  EXPECT_FALSE(cmp.passed);
  EXPECT_FALSE(cmp.leaves[0].shapeMatch);
  EXPECT_NE(cmp.reason.find("shape differs: eager [4, 2] vs compiled [8]"), std::string::npos) << cmp.reason;
}

TEST_F(ComparatorTest, OutputCountMismatchFails) {
  at::Tensor x = at::randn({4});
  auto e = outputs({x, x}), c = outputs({x});
  Comparison cmp = comparator.compare(e, c, nullptr);
  EXPECT_FALSE(cmp.passed);
  EXPECT_NE(cmp.reason.find("eager has 2 leaves, compiled 1"), std::string::npos);
}

TEST_F(ComparatorTest, IntegersAreExactUnlessCompiledIsCloserToFp64) {
  at::Tensor eager = at::tensor({1, 2, 3}, at::kLong);
  at::Tensor compiled = at::tensor({1, 2, 4}, at::kLong);
  auto e = outputs({eager}), c = outputs({compiled});
  auto refMatchesEager = outputs({eager.clone()});
  EXPECT_FALSE(comparator.compare(e, c, &refMatchesEager).passed);
  // A tie broken differently in float32 eager: fp64 agrees with compiled, so it is not flagged.
  auto refMatchesCompiled = outputs({compiled.clone()});
  Comparison cmp = comparator.compare(e, c, &refMatchesCompiled);
  EXPECT_TRUE(cmp.passed) << cmp.reason;
  EXPECT_EQ(cmp.leaves[0].mismatchesEager, 1);
  EXPECT_EQ(cmp.leaves[0].mismatchesCompiled, 0);
}

TEST_F(ComparatorTest, WithoutFp64OnlyGrossDeviationsFail) {
  at::Tensor x = at::randn({100});
  auto e = outputs({x});
  auto slightly = outputs({x + 1e-3});
  auto grossly = outputs({x + 1.0});
  EXPECT_TRUE(comparator.compare(e, slightly, nullptr).passed);
  EXPECT_FALSE(comparator.compare(e, grossly, nullptr).passed);
}

TEST_F(ComparatorTest, IdenticalTreatsNanAsEqualAndCatchesOneUlp) {
  at::Tensor x = at::randn({8});
  x[1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(comparator.identical(outputs({x}), outputs({x.clone()})));
  at::Tensor y = x.clone();
  y[0] = std::nextafter(y[0].item<float>(), 1e9f);
  EXPECT_FALSE(comparator.identical(outputs({x}), outputs({y})));
}

// fp64 on demand skips the fp64 run only where it cannot change the verdict: bit-identical, all finite.
TEST_F(ComparatorTest, SettledWithoutFp64OnlyWhenBitIdenticalAndFinite) {
  at::Tensor x = at::randn({8});
  at::Tensor ints = at::arange(6, at::kLong);
  EXPECT_TRUE(comparator.settledWithoutFp64(outputs({x, ints}), outputs({x.clone(), ints.clone()})));
  at::Tensor ulp = x.clone();
  ulp[3] = std::nextafter(ulp[3].item<float>(), 1e9f);
  EXPECT_FALSE(comparator.settledWithoutFp64(outputs({x}), outputs({ulp})));
  at::Tensor zero = at::zeros({4}), negativeZero = -at::zeros({4});  // equal under ==, not bit for bit
  EXPECT_TRUE(comparator.identical(outputs({zero}), outputs({negativeZero})));
  EXPECT_FALSE(comparator.settledWithoutFp64(outputs({zero}), outputs({negativeZero})));
  at::Tensor nan = x.clone(), inf = x.clone();
  nan[0] = std::numeric_limits<float>::quiet_NaN();
  inf[0] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(comparator.settledWithoutFp64(outputs({nan}), outputs({nan.clone()})));  // fp64 may call it unstable
  EXPECT_FALSE(comparator.settledWithoutFp64(outputs({inf}), outputs({inf.clone()})));
  EXPECT_FALSE(comparator.settledWithoutFp64(outputs({ints}), outputs({ints + 1})));
  EXPECT_FALSE(comparator.settledWithoutFp64(outputs({x}), outputs({x.to(at::kDouble)})));
  EXPECT_FALSE(comparator.settledWithoutFp64(outputs({x, x}), outputs({x})));
}

TEST_F(ComparatorTest, SignedZerosAreCountedOnlyWhereEagerAndFp64AgreeOnTheSign) {
  // Element 0: eager +0, fp64 +0, compiled -0 (counted). Element 1: eager -0, fp64 +0, compiled +0 (eager
  // and fp64 disagree: not counted). Element 2: a plain value.
  auto e = outputs({at::tensor({0.0f, -0.0f, 1.5f})});
  auto c = outputs({at::tensor({-0.0f, 0.0f, 1.5f})});
  auto r = outputs({at::tensor({0.0, 0.0, 1.5}, at::kDouble)});
  Comparison cmp = comparator.compare(e, c, &r);
  EXPECT_TRUE(cmp.passed);  // allclose cannot see it; the verdict (judge) makes it a low-severity finding
  EXPECT_EQ(cmp.leaves[0].signedZeros, 1);
  EXPECT_EQ(cmp.leaves[0].flushedDenormals, 0);
  Comparison noReference = comparator.compare(e, c, nullptr);
  EXPECT_EQ(noReference.leaves[0].signedZeros, 0);  // judged only against fp64
}

TEST_F(ComparatorTest, FlushedSubnormalsAreCountedOnlyWhereFp64KeepsOneToo) {
  // 1e-39 is subnormal in float32. Element 1: fp64 has 0 there, so eager's subnormal is not confirmed.
  auto e = outputs({at::tensor({1e-39f, 2e-39f, 1.0f})});
  auto c = outputs({at::tensor({0.0f, 0.0f, 1.0f})});
  auto r = outputs({at::tensor({1e-39, 0.0, 1.0}, at::kDouble)});
  Comparison cmp = comparator.compare(e, c, &r);
  EXPECT_TRUE(cmp.passed);
  EXPECT_EQ(cmp.leaves[0].flushedDenormals, 1);
  EXPECT_EQ(cmp.leaves[0].signedZeros, 0);
}

TEST_F(ComparatorTest, AFloat64LeafsZeroSlipsAreNotCountedForItsReferenceIsEagerAgain) {
  // A float64 program's fp64 run is eager itself: a subnormal or a zero's sign that only eager and that run
  // share (a decomposed interpolation rounding 1e-310 to 0, a formula giving -0) is no confirmed finding.
  auto e = outputs({at::tensor({1e-310, 0.0, 1.0}, at::kDouble)});
  auto c = outputs({at::tensor({0.0, -0.0, 1.0}, at::kDouble)});
  Comparison cmp = comparator.compare(e, c, &e);
  EXPECT_TRUE(cmp.passed);
  EXPECT_EQ(cmp.leaves[0].flushedDenormals, 0);
  EXPECT_EQ(cmp.leaves[0].signedZeros, 0);
}

namespace {

/// Eager's outputs: the index leaf at 0 with its tie source (the values it indexes) saved after it.
LoadedOutputs indicesWithSource(const at::Tensor& indices, const at::Tensor& source, std::optional<int64_t> dim,
                                bool sameRank) {
  LoadedOutputs o = outputs({indices, source});
  o.leaves.pop_back();  // the source is saved, but it is no leaf of its own
  o.leaves[0].tieSource = TieSource{1, dim, sameRank};
  return o;
}

}  // namespace

TEST_F(ComparatorTest, IndicesThatPointToTiedValuesAgreeAndOthersFail) {
  // argmax(dim=1): row 0 has its maximum 5 twice, row 1 once.
  at::Tensor source = at::tensor({5.0f, 5.0f, 1.0f, 0.0f, 1.0f, 9.0f}).view({2, 3});
  LoadedOutputs e = indicesWithSource(at::tensor({0L, 2L}), source, 1, false);
  LoadedOutputs tied = outputs({at::tensor({1L, 2L})});
  Comparison cmp = comparator.compare(e, tied, nullptr);
  EXPECT_TRUE(cmp.passed) << cmp.reason;
  EXPECT_TRUE(cmp.leaves[0].tiedIndices);
  EXPECT_EQ(cmp.leaves[0].reason, "indices differ only where the values they point to are ties");

  LoadedOutputs wrong = outputs({at::tensor({0L, 1L})});  // row 1: 1.0 is not the maximum 9.0
  cmp = comparator.compare(e, wrong, nullptr);
  EXPECT_FALSE(cmp.passed);
  EXPECT_FALSE(cmp.leaves[0].tiedIndices);

  LoadedOutputs outOfRange = outputs({at::tensor({3L, 2L})});
  EXPECT_FALSE(comparator.compare(e, outOfRange, nullptr).passed);
}

TEST_F(ComparatorTest, FlatAndSameRankIndicesAreResolvedLikeTheirOps) {
  at::Tensor source = at::tensor({2.0f, 7.0f, 7.0f, -1.0f}).view({2, 2});
  // argmax() with no dim: a flat index; 1 and 2 both hold 7.
  LoadedOutputs flat = indicesWithSource(at::tensor(1L), source, std::nullopt, false);
  EXPECT_TRUE(comparator.compare(flat, outputs({at::tensor(2L)}), nullptr).passed);
  EXPECT_FALSE(comparator.compare(flat, outputs({at::tensor(0L)}), nullptr).passed);
  // sort(dim=0), indices of the source's rank: column 0 sorts [2, 7], column 1 [7, -1]; no ties.
  LoadedOutputs sorted = indicesWithSource(at::tensor({0L, 1L, 1L, 0L}).view({2, 2}), source, 0, true);
  EXPECT_FALSE(comparator.compare(sorted, outputs({at::tensor({1L, 1L, 0L, 0L}).view({2, 2})}), nullptr).passed);
  // topk(k=1, dim=-1) of [[7, 7]]: either index is the top value.
  LoadedOutputs top = indicesWithSource(at::tensor({0L}).view({1, 1}), at::tensor({7.0f, 7.0f}).view({1, 2}), -1, true);
  EXPECT_TRUE(comparator.compare(top, outputs({at::tensor({1L}).view({1, 1})}), nullptr).passed);
}

TEST_F(ComparatorTest, Fp64StillArbitratesWhenOnlyItsCall4Differs) {
  // fp64's own forward may reject call 4's size where eager's accepts it: fp64 then saves call 4's note
  // only. The calls before call 4 are still arbitrated; call 4's outputs are judged without fp64.
  at::Tensor x = at::randn({64}), y = at::randn({32});
  at::Tensor off = x + 1e-3 * x.abs().max();  // far from fp64, and from eager
  auto e = outputs({x, y}), c = outputs({off, y.clone()}), r = outputs({x.to(at::kDouble)});
  OutputLeaf note;
  note.kind = OutputLeaf::Kind::Other;
  note.role = "resized";
  note.name = "resized: inputs";
  note.repr = "dim 0 of input 0: 64 -> 63";
  for (LoadedOutputs* o : {&e, &c}) {
    o->leaves.insert(o->leaves.begin() + 1, note);
    o->leaves[2].role = "resized";
    o->leaves[2].name = "resized (dim 0 of input 0: 64 -> 63): output 0";
  }
  note.repr = "skipped: eager rejects every other size";
  r.leaves.push_back(note);
  Comparison cmp = comparator.compare(e, c, &r);
  ASSERT_EQ(cmp.leaves.size(), 3u);
  EXPECT_FALSE(cmp.passed);
  EXPECT_TRUE(cmp.leaves[0].fp64Used);  // call 1's output: arbitrated, and further from fp64 than eager
  EXPECT_FALSE(cmp.leaves[0].passed);
  EXPECT_TRUE(cmp.leaves[1].passed);   // the notes of eager and compiled agree
  EXPECT_FALSE(cmp.leaves[2].fp64Used);
  EXPECT_TRUE(cmp.leaves[2].passed) << cmp.leaves[2].reason;

  r.leaves.erase(r.leaves.begin());  // fp64's calls before call 4 differ: it arbitrates nothing
  cmp = comparator.compare(e, c, &r);
  EXPECT_FALSE(cmp.leaves[0].fp64Used);
}
