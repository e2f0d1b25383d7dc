// Conditioning: the ill-conditioning filter's judgement from eager, compiled and perturbed-eager outputs.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "oracles/judge/Conditioning.h"
#include "oracles/judge/OutputLoader.h"

using namespace tcfuzz::oracles;

namespace {

LoadedOutputs outputsOf(std::vector<at::Tensor> tensors) {
  LoadedOutputs out;
  for (size_t i = 0; i < tensors.size(); ++i) {
    OutputLeaf leaf;
    leaf.index = static_cast<int>(i);
    leaf.dtype = tensors[i].is_floating_point() ? "float32" : "int64";
    out.leaves.push_back(leaf);
  }
  out.tensors = std::move(tensors);
  return out;
}

/// A comparison in which the given leaves failed.
Comparison failing(size_t leaves, std::vector<size_t> failed) {
  Comparison cmp;
  cmp.passed = failed.empty();
  for (size_t i = 0; i < leaves; ++i) {
    LeafComparison l;
    l.leaf = i;
    l.passed = std::find(failed.begin(), failed.end(), i) == failed.end();
    cmp.leaves.push_back(l);
  }
  return cmp;
}

at::Tensor floats(std::vector<float> v) { return at::tensor(v, at::kFloat); }

}  // namespace

TEST(Conditioning, ADeviationWithinEagersOwnSpreadIsIllConditioned) {
  LoadedOutputs eager = outputsOf({floats({1, 2, 3, 4})});
  LoadedOutputs compiled = outputsOf({floats({1.5, 2, 3, 4})});  // rmse 0.25 from eager
  std::vector<LoadedOutputs> perturbed = {outputsOf({floats({1, 2, 3, 5})}),   // rmse 0.5
                                          outputsOf({floats({1, 2, 3, 4.1})})};
  ConditioningVerdict v = judgeConditioning(failing(1, {0}), eager, compiled, perturbed);
  EXPECT_TRUE(v.illConditioned) << v.reason;
  ASSERT_EQ(v.leaves.size(), 1u);
  EXPECT_DOUBLE_EQ(v.leaves[0].deviation, 0.25);
  EXPECT_DOUBLE_EQ(v.leaves[0].spread, 0.5);
  EXPECT_NE(v.reason.find("covers"), std::string::npos);
}

TEST(Conditioning, ADeviationBeyondTheSpreadIsKept) {
  LoadedOutputs eager = outputsOf({floats({1, 2, 3, 4})});
  LoadedOutputs compiled = outputsOf({floats({3, 2, 3, 4})});  // rmse 1
  std::vector<LoadedOutputs> perturbed = {outputsOf({floats({1, 2, 3, 4.0001f})})};
  ConditioningVerdict v = judgeConditioning(failing(1, {0}), eager, compiled, perturbed);
  EXPECT_FALSE(v.illConditioned);
  EXPECT_FALSE(v.leaves[0].covered);
  EXPECT_NE(v.reason.find("does not cover"), std::string::npos);
}

TEST(Conditioning, EveryFailingLeafMustBeCoveredAndPassingLeavesAreIgnored) {
  LoadedOutputs eager = outputsOf({floats({1, 2}), floats({5, 6}), floats({7, 8})});
  LoadedOutputs compiled = outputsOf({floats({1.1f, 2}), floats({50, 6}), floats({7, 8})});
  std::vector<LoadedOutputs> perturbed = {outputsOf({floats({1.3f, 2}), floats({5, 6}), floats({9, 9})})};
  ConditioningVerdict v = judgeConditioning(failing(3, {0, 1}), eager, compiled, perturbed);
  EXPECT_FALSE(v.illConditioned);
  ASSERT_EQ(v.leaves.size(), 2u);  // leaf 2 passed: not judged, however large its spread
  EXPECT_TRUE(v.leaves[0].covered);
  EXPECT_FALSE(v.leaves[1].covered);
}

TEST(Conditioning, IntegerLeavesCountDifferingElementsLikeArgmaxOverNearTies) {
  LoadedOutputs eager = outputsOf({at::tensor(std::vector<int64_t>{0, 3, 1, 2})});
  LoadedOutputs compiled = outputsOf({at::tensor(std::vector<int64_t>{0, 2, 1, 2})});  // one index differs
  std::vector<LoadedOutputs> flips = {outputsOf({at::tensor(std::vector<int64_t>{1, 3, 1, 0})})};  // two differ
  EXPECT_TRUE(judgeConditioning(failing(1, {0}), eager, compiled, flips).illConditioned);
  std::vector<LoadedOutputs> stable = {outputsOf({at::tensor(std::vector<int64_t>{0, 3, 1, 2})})};
  EXPECT_FALSE(judgeConditioning(failing(1, {0}), eager, compiled, stable).illConditioned);
}

TEST(Conditioning, MovedNanPlacementIsCoveredOnlyByMovedPlacement) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  LoadedOutputs eager = outputsOf({floats({nan, 1, 2})});
  LoadedOutputs compiled = outputsOf({floats({0, 1, 2})});
  std::vector<LoadedOutputs> moves = {outputsOf({floats({0, nan, 2})})};
  std::vector<LoadedOutputs> stays = {outputsOf({floats({nan, 1.5f, 2})})};
  EXPECT_TRUE(judgeConditioning(failing(1, {0}), eager, compiled, moves).illConditioned);
  EXPECT_FALSE(judgeConditioning(failing(1, {0}), eager, compiled, stays).illConditioned);
}

TEST(Conditioning, StructureFailuresAndMissingRunsAreNeverIllConditioned) {
  LoadedOutputs eager = outputsOf({floats({1, 2})});
  LoadedOutputs compiled = outputsOf({floats({1, 2, 3})});
  Comparison cmp = failing(1, {0});
  cmp.leaves[0].shapeMatch = false;
  std::vector<LoadedOutputs> perturbed = {outputsOf({floats({100, 200})})};
  EXPECT_FALSE(judgeConditioning(cmp, eager, compiled, perturbed).illConditioned);
  LoadedOutputs close = outputsOf({floats({1.0001f, 2})});
  EXPECT_FALSE(judgeConditioning(failing(1, {0}), eager, close, {}).illConditioned);  // no perturbed run
}
