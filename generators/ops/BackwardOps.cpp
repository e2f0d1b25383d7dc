// ATen backward ops called directly (family "aten-backward"): torch.ops.aten.*_backward of the
// activations, the softmax pair and cumprod, as autograd's derivative formulas and the
// decompositions produce them, and as users reach them through torch.ops. Input 0 is the
// incoming gradient; input 1 the forward value the formula reads (its input or its result), of
// input 0's shape and dtype. A range rule bounds the output by |gradient| times the derivative's
// range over the forward value's domain.
#include "generators/ops/Common.h"

namespace tcfuzz::gen {
namespace {

using namespace ops;

/// Input 1 must match input 0 exactly: the backward formulas are elementwise over one shape.
void requireMatchingForwardValue(const OpContext& ctx) {
  require(ctx.x(1).shape == ctx.x(0).shape, "a backward op's forward value has the gradient's shape");
  require(ctx.x(1).dtype == ctx.x(0).dtype, "a backward op's forward value has the gradient's dtype");
}

/// An entry taking grad_output and a forward value of its type, kept in `need`; with `dim`, a dim
/// attribute along which the formula works.
OpSpec backwardEntry(const std::string& name, const std::string& python, const std::string& aten, Interval need,
                     bool dim = false) {
  OpSpec s = entry(name, "aten-backward", python, aten, kFloats);
  s.minInputs = s.maxInputs = 2;
  s.needs = {Interval{}, need};
  s.propose = [](const OpContext& ctx, int, Rng&) { return ctx.x(); };
  s.infer = [dim](const OpContext& ctx) {
    requireMatchingForwardValue(ctx);
    if (dim) wrapDim(ctx.attrInt("dim"), ctx.x().rank());
    return like(ctx.x(), ctx.x().dtype);
  };
  if (dim) {
    s.attrs = {dimAttr()};
    s.sample = [](OpContext& ctx, Rng& rng) { ctx.attrs["dim"] = drawDim(rng, ctx.x().rank()); };
  }
  return s;
}

/// The gradient's size along the dim attribute (1 for a 0-d tensor).
double sizeAlongDim(const OpContext& ctx) {
  const TensorType& t = ctx.x();
  return t.rank() == 0 ? 1 : static_cast<double>(t.shape[wrapDim(ctx.attrInt("dim"), t.rank())]);
}

/// grad_output and a forward value of its shape. `derivative` bounds the local derivative over
/// the forward value's domain `need`.
OpSpec& pointwiseBackward(OpCatalog& c, const std::string& name, const std::string& python, const std::string& aten,
                          Interval need, Interval derivative) {
  OpSpec s = backwardEntry(name, python, aten, need);
  s.range = [derivative](const OpContext& ctx) { return std::vector<Interval>{mulI(ctx.ranges.at(0), derivative)}; };
  return c.add(std::move(s));
}

void addPointwiseBackwardOps(OpCatalog& c) {
  const Interval any{};
  pointwiseBackward(c, "sigmoid_backward", "torch.ops.aten.sigmoid_backward({0}, {1})",
                    "aten::sigmoid_backward({0}, {1})", kProbability, {0, 0.25});
  pointwiseBackward(c, "tanh_backward", "torch.ops.aten.tanh_backward({0}, {1})", "aten::tanh_backward({0}, {1})",
                    kUnit, {0, 1});
  pointwiseBackward(c, "gelu_backward", "torch.ops.aten.gelu_backward({0}, {1}, approximate={approximate})",
                    "aten::gelu_backward({0}, {1}, {approximate})", any, {-0.2, 1.2})
      .attrs = {choiceAttr("approximate", {"none", "tanh"})};
  pointwiseBackward(c, "silu_backward", "torch.ops.aten.silu_backward({0}, {1})", "aten::silu_backward({0}, {1})",
                    any, {-0.11, 1.11});
  pointwiseBackward(c, "mish_backward", "torch.ops.aten.mish_backward({0}, {1})", "aten::mish_backward({0}, {1})",
                    any, {-0.3, 1.3});
  pointwiseBackward(c, "hardsigmoid_backward", "torch.ops.aten.hardsigmoid_backward({0}, {1})",
                    "aten::hardsigmoid_backward({0}, {1})", any, {0, 1.0 / 6});
  pointwiseBackward(c, "hardswish_backward", "torch.ops.aten.hardswish_backward({0}, {1})",
                    "aten::hardswish_backward({0}, {1})", any, {-0.5, 1.5});
  pointwiseBackward(c, "threshold_backward", "torch.ops.aten.threshold_backward({0}, {1}, {threshold})",
                    "aten::threshold_backward({0}, {1}, {threshold})", any, {0, 1})
      .attrs = {floatAttr("threshold", -1, 1)};
  pointwiseBackward(c, "hardtanh_backward", "torch.ops.aten.hardtanh_backward({0}, {1}, -1.0, 1.0)",
                    "aten::hardtanh_backward({0}, {1}, -1.0, 1.0)", any, {0, 1});
  pointwiseBackward(c, "leaky_relu_backward",
                    "torch.ops.aten.leaky_relu_backward({0}, {1}, {negative_slope}, False)",
                    "aten::leaky_relu_backward({0}, {1}, {negative_slope}, False)", any, {0, 1})
      .attrs = {floatAttr("negative_slope", 0.01, 0.3)};
  // elu_backward takes the forward value last: (grad_output, alpha, scale, input_scale, is_result, self).
  pointwiseBackward(c, "elu_backward", "torch.ops.aten.elu_backward({0}, 1.0, 1.0, 1.0, False, {1})",
                    "aten::elu_backward({0}, 1.0, 1.0, 1.0, False, {1})", any, {0, 1});
  pointwiseBackward(c, "softplus_backward", "torch.ops.aten.softplus_backward({0}, {1}, {beta}, 20.0)",
                    "aten::softplus_backward({0}, {1}, {beta}, 20.0)", any, {0, 1})
      .attrs = {floatAttr("beta", 0.5, 2)};
  for (const char* name : {"hardshrink_backward", "softshrink_backward"})
    pointwiseBackward(c, name, std::string("torch.ops.aten.") + name + "({0}, {1}, {lambd})",
                      std::string("aten::") + name + "({0}, {1}, {lambd})", any, {0, 1})
        .attrs = {floatAttr("lambd", 0, 1)};
}

/// _softmax_backward_data and _log_softmax_backward_data: (grad_output, output, dim, input_dtype),
/// where output is the forward's result (in [0, 1], or at most 0 for log_softmax) and input_dtype
/// the forward input's dtype, here the gradient's own.
void addSoftmaxBackwardOps(OpCatalog& c) {
  for (auto [name, need] : {std::pair{"_softmax_backward_data", kProbability}, {"_log_softmax_backward_data", Interval{-20, 0}}}) {
    OpSpec s = backwardEntry(name, std::string("torch.ops.aten.") + name + "({0}, {1}, {dim}, {input_dtype})",
                             std::string("aten::") + name + "({0}, {1}, {dim}, {input_dtype})", need, true);
    s.attrs.push_back(dtypeAttr("input_dtype", {"float32", "float16", "bfloat16", "float64"}));
    s.sample = [](OpContext& ctx, Rng& rng) {
      ctx.attrs["dim"] = drawDim(rng, ctx.x().rank());
      ctx.attrs["input_dtype"] = std::string(dtypeName(ctx.x().dtype));
    };
    auto sameShape = s.infer;
    s.infer = [sameShape](const OpContext& ctx) {
      require(ctx.attrDType("input_dtype") == ctx.x().dtype, "input_dtype is the gradient's dtype");
      return sameShape(ctx);
    };
    // |g * o - o * sum(g * o)| (softmax) and |g - exp(o) * sum(g)| (log_softmax) stay within
    // |g| * (1 + n) for n elements along dim.
    s.range = [](const OpContext& ctx) {
      return std::vector<Interval>{symmetric(ctx.ranges.at(0).magnitude() * (1 + sizeAlongDim(ctx)))};
    };
    c.add(std::move(s));
  }
}

/// cumprod_backward(grad, input, dim, output) with output = cumprod(input, dim), as autograd calls it.
/// The input stays in [0.5, 1] so that the formula's division by it stays bounded; each gradient
/// element sums at most n products of magnitude at most 2.
void addCumprodBackward(OpCatalog& c) {
  OpSpec s = backwardEntry("cumprod_backward", "torch.ops.aten.cumprod_backward({0}, {1}, {dim}, torch.cumprod({1}, {dim}))",
                           "aten::cumprod_backward({0}, {1}, {dim}, {1})", Interval{0.5, 1}, true);
  s.range = [](const OpContext& ctx) {
    return std::vector<Interval>{symmetric(ctx.ranges.at(0).magnitude() * 2 * sizeAlongDim(ctx))};
  };
  c.add(std::move(s));
}

}  // namespace

void addBackwardOps(OpCatalog& c) {
  addPointwiseBackwardOps(c);
  addSoftmaxBackwardOps(c);
  addCumprodBackward(c);
}

}  // namespace tcfuzz::gen
