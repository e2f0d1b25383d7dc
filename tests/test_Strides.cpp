// Strides (generators/ir/Strides, the view ops' stride rules in generators/ops/shape/ViewStrides.cpp, and
// valueGeometries in generators/features/InputLayout): every rule is held against ATen. Each view op runs
// through the dispatcher on CPU tensors of 50 sampled nodes, input 0 laid out contiguous, permuted,
// stepped with a storage offset or expanded; the strides and storage offset ATen reports must be the
// rule's, the output must alias input 0, and where the rule says the op cannot view, `view` must
// raise and the others must return a fresh row-major tensor. Every other op must return row-major
// outputs for contiguous inputs, unless it is marked OpSpec::stridedOutput.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <numeric>

#include "generators/features/InputLayout.h"
#include "generators/NodeSampler.h"
#include "generators/OpCatalog.h"
#include "generators/ir/Strides.h"
#include "tests/AtenCall.h"

using namespace tcfuzz::gen;
using namespace tcfuzz::atencall;

namespace {

constexpr int kSamplesPerOp = 50;

const OpCatalog& catalog() {
  static const OpCatalog c = makeDefaultCatalog();
  return c;
}

std::vector<std::string> opNames(bool views) {
  std::vector<std::string> names;
  for (const auto& op : catalog().ops())
    if (op->view == views && !op->inplace) names.push_back(op->name);
  return names;
}
std::string opTestName(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

std::vector<int64_t> sizesOf(const at::Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }
Geometry geometryOf(const at::Tensor& t) { return {{t.strides().begin(), t.strides().end()}, t.storage_offset()}; }
std::string str(const Geometry& g) { return fmt::format("strides [{}] offset {}", fmt::join(g.strides, ", "), g.offset); }

/// An empty CPU tensor of `type` laid out as `kind` says: "contiguous"; "permuted" (its dims stored in
/// a random order); "stepped" (every second element of a longer dim, from a storage offset of 1);
/// "expanded" (a dim of size above 1 read from one element, stride 0).
at::Tensor laidOut(const TensorType& type, const std::string& kind, Rng& rng) {
  auto options = at::TensorOptions().dtype(scalarType(type.dtype));
  const auto& shape = type.shape;
  int r = type.rank();
  if (kind == "permuted" && r >= 2) {
    std::vector<int64_t> order(r);
    std::iota(order.begin(), order.end(), 0);
    for (int i = r - 1; i > 0; --i) std::swap(order[i], order[rng.uniform(0, i)]);
    std::vector<int64_t> stored(r), inverse(r);
    for (int i = 0; i < r; ++i) stored[i] = shape[order[i]], inverse[order[i]] = i;
    return at::empty(stored, options).permute(inverse);
  }
  if (kind == "stepped" && r >= 1) {
    int d = static_cast<int>(rng.uniform(0, r - 1));
    std::vector<int64_t> longer = shape;
    longer[d] = 2 * shape[d] + 1;
    return at::empty(longer, options).slice(d, 1, 1 + 2 * shape[d], 2);
  }
  if (kind == "expanded") {
    for (int d = 0; d < r; ++d)
      if (shape[d] > 1) {
        std::vector<int64_t> one = shape;
        one[d] = 1;
        return at::empty(one, options).expand(shape);
      }
  }
  return at::empty(shape, options);
}

TEST(Strides, ViewStridesFollowATenRule) {
  // Contiguous: any view of the same numel.
  EXPECT_EQ(viewStrides({2, 3, 4}, {12, 4, 1}, {6, 4}), (std::vector<int64_t>{4, 1}));
  // Transposed [3, 2] of a [2, 3]: flattening needs a copy, splitting the last dim does not.
  EXPECT_EQ(viewStrides({3, 2}, {1, 3}, {6}), std::nullopt);
  EXPECT_EQ(viewStrides({3, 4}, {1, 3}, {3, 2, 2}), (std::vector<int64_t>{1, 6, 3}));
  // A dim of stride 0 (expanded) merges only with size-1 dims.
  EXPECT_EQ(viewStrides({4, 3}, {0, 1}, {12}), std::nullopt);
  EXPECT_EQ(viewStrides({4, 3}, {0, 1}, {4, 1, 3}), (std::vector<int64_t>{0, 3, 1}));
  // A 0-d tensor views as ones.
  EXPECT_EQ(viewStrides({}, {}, {1, 1}), (std::vector<int64_t>{1, 1}));
  EXPECT_TRUE(isContiguous({2, 1, 3}, {3, 7, 1}));  // a size-1 dim's stride does not count
  EXPECT_FALSE(isContiguous({2, 3}, {1, 2}));
}

TEST(Strides, EveryViewOpHasAStrideRule) {
  int views = 0;
  for (const auto& op : catalog().ops())
    if (op->view && !op->inplace) {
      ++views;
      EXPECT_TRUE(static_cast<bool>(op->strides)) << op->name;
    }
  EXPECT_GE(views, 25);
}

class ViewOpStrides : public ::testing::TestWithParam<std::string> {};

TEST_P(ViewOpStrides, RuleMatchesATenOnEveryLayout) {
  const OpSpec& op = catalog().at(GetParam());
  auto [call, handle, error] = resolveAten(op);
  ASSERT_TRUE(handle) << op.aten << ": " << error;
  Rng rng(seedFor(op.name + "/strides"));
  ShapeCaps caps;
  int checked = 0, failures = 0;
  for (int i = 0; i < kSamplesPerOp; ++i) {
    auto node = sampleNode(op, rng, caps);
    if (!node) break;
    for (std::string kind : {"contiguous", "permuted", "stepped", "expanded"}) {
      at::Tensor in0 = laidOut(node->inputs[0], kind, rng);
      // as_strided's Python spelling views a row-major clone of input 0, whatever its layout.
      if (op.name == "as_strided") in0 = in0.clone(at::MemoryFormat::Contiguous);
      OpContext ctx = node->context(&caps);
      auto rule = op.strides(ctx, geometryOf(in0), node->outputs);
      std::string problem;
      try {
        torch::jit::Stack stack = buildStack(op, call, handle->schema(), *node, Mode::Cpu, {in0});
        handle->callBoxed(stack);
        auto outs = returnedTensors(stack);
        for (size_t k = 0; k < node->outputs.size() && problem.empty(); ++k) {
          Geometry actual = geometryOf(outs.at(k));
          if (rule) {
            if (actual != rule->at(k))
              problem = fmt::format("output {}: rule {}, ATen {}", k, str(rule->at(k)), str(actual));
            else if (outs[k].numel() > 0 && !outs[k].storage().is_alias_of(in0.storage()))
              problem = fmt::format("output {} does not alias input 0", k);
          } else if (viewRaisesInstead(op)) {
            problem = "the rule says view raises, ATen viewed it: " + str(actual);
          } else if (actual != contiguousGeometry(sizesOf(outs[k]))) {
            problem = fmt::format("the rule says a fresh row-major copy, ATen gives {}", str(actual));
          }
        }
      } catch (const c10::Error& e) {
        if (rule || !viewRaisesInstead(op)) problem = std::string("ATen raised: ") + e.what_without_backtrace();
      }
      ++checked;
      if (!problem.empty() && ++failures <= 5)
        ADD_FAILURE() << op.name << " sample " << i << ", input 0 " << kind << " (" << str(geometryOf(in0)) << ", shape "
                      << node->inputs[0].str() << "), attrs " << node->attrs.dump() << ": " << problem;
    }
  }
  EXPECT_GT(checked, 0);
  EXPECT_EQ(failures, 0) << failures << " of " << checked << " layouts disagree";
}

INSTANTIATE_TEST_SUITE_P(Catalog, ViewOpStrides, ::testing::ValuesIn(opNames(true)), opTestName);

class OpOutputLayout : public ::testing::TestWithParam<std::string> {};

TEST_P(OpOutputLayout, ContiguousInputsGiveRowMajorOutputs) {
  const OpSpec& op = catalog().at(GetParam());
  if (op.stridedOutput) GTEST_SKIP() << op.name << " is marked stridedOutput";
  auto [call, handle, error] = resolveAten(op);
  ASSERT_TRUE(handle) << op.aten << ": " << error;
  Rng rng(seedFor(op.name + "/layout"));
  at::manual_seed(seedFor(op.name) & 0xffffffff);
  ShapeCaps caps;
  int checked = 0;
  std::vector<std::string> problems;
  for (int i = 0; i < 20; ++i) {
    auto node = sampleNode(op, rng, caps);
    if (!node) break;
    try {
      torch::jit::Stack stack = buildStack(op, call, handle->schema(), *node, Mode::Cpu);
      handle->callBoxed(stack);
      auto outs = returnedTensors(stack);
      ++checked;
      for (size_t k = 0; k < node->outputs.size() && k < outs.size(); ++k)
        if (!isContiguous(sizesOf(outs[k]), geometryOf(outs[k]).strides))
          problems.push_back(fmt::format("sample {} output {} {}: {}", i, k, node->outputs[k].str(), str(geometryOf(outs[k]))));
    } catch (const std::exception&) {  // shapes and values are test_OpCatalog's to judge
    }
  }
  EXPECT_TRUE(problems.empty()) << op.name << " (" << op.aten << ") returns a layout other than row-major; mark it "
                                << "stridedOutput:\n  " << fmt::format("{}", fmt::join(problems, "\n  "));
}

INSTANTIATE_TEST_SUITE_P(Catalog, OpOutputLayout, ::testing::ValuesIn(opNames(false)), opTestName);

/// A two-node program: input x0 laid out as `layout`, a view op, then `view` to `shape`.
Graph viewOfView(const Layout& layout, const std::string& firstOp, nlohmann::json firstAttrs, TensorType mid,
                 std::vector<int64_t> shape) {
  Graph g;
  TensorType in{{4, 6}, DType::Float32, "cpu"};
  int x = g.addValue(in);
  g.inputs.push_back({x, "x0", {}, layout, {}});
  int v = g.addValue(mid);
  g.nodes.push_back({firstOp, {x}, {v}, std::move(firstAttrs)});
  TensorType last = mid;
  last.shape = std::move(shape);
  int w = g.addValue(last);
  g.nodes.push_back({"view", {v}, {w}, {{"shape", last.shape}}});
  g.outputs = {w};
  return g;
}

TEST(ValueGeometries, ViewStaysWhereTheStridesAllowItAndBecomesReshapeElsewhere) {
  const auto& c = catalog();
  // A transpose of a contiguous [4, 6]: splitting its last dim is a view, flattening it is not.
  Graph keep = viewOfView({}, "transpose", {{"dim0", 0}, {"dim1", 1}}, {{6, 4}, DType::Float32, "cpu"}, {6, 2, 2});
  EXPECT_EQ(repairIllegalViews(keep, c), 0);
  auto geometries = valueGeometries(keep, c);
  ASSERT_TRUE(geometries[2]);
  EXPECT_EQ(geometries[2]->strides, (std::vector<int64_t>{1, 12, 6}));
  EXPECT_FALSE(provablyContiguous(keep, c, 1));

  Graph flatten = viewOfView({}, "transpose", {{"dim0", 0}, {"dim1", 1}}, {{6, 4}, DType::Float32, "cpu"}, {24});
  EXPECT_EQ(repairIllegalViews(flatten, c), 1);
  EXPECT_EQ(flatten.nodes[1].op, "reshape");
  // After the copy the result is row-major again.
  EXPECT_TRUE(provablyContiguous(flatten, c, 2));

  // A narrow of dim 0 of a contiguous input keeps rows whole: flattening it is a view at an offset.
  Graph narrow = viewOfView({}, "narrow", {{"dim", 0}, {"start", 1}, {"length", 2}}, {{2, 6}, DType::Float32, "cpu"}, {12});
  EXPECT_EQ(repairIllegalViews(narrow, c), 0);
  EXPECT_EQ(valueGeometries(narrow, c)[2], (Geometry{{1}, 6}));

  // The input transposed in storage: even the identity-shaped transpose back is contiguous.
  Layout transposed{"transposed", {0, 1}};
  Graph back = viewOfView(transposed, "transpose", {{"dim0", 0}, {"dim1", 1}}, {{6, 4}, DType::Float32, "cpu"}, {24});
  EXPECT_EQ(repairIllegalViews(back, c), 0);
}

TEST(ValueGeometries, StridedOutputOpsAreNotAssumedRowMajor) {
  const auto& c = catalog();
  Graph g;
  int x = g.addValue({{3, 4}, DType::Float32, "cpu"});
  g.inputs.push_back({x, "x0", {}, {}, {}});
  int y = g.addValue({{4, 3}, DType::Float32, "cpu"});
  g.nodes.push_back({"rot90", {x}, {y}, {{"k", 1}, {"dims", {0, 1}}}});
  int z = g.addValue({{12}, DType::Float32, "cpu"});
  g.nodes.push_back({"view", {y}, {z}, {{"shape", {12}}}});
  g.outputs = {z};
  ASSERT_TRUE(c.at("rot90").stridedOutput);
  EXPECT_FALSE(provablyContiguous(g, c, y));
  EXPECT_EQ(repairIllegalViews(g, c), 1);
}

}  // namespace
