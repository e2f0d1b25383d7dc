// Elementwise families: unary math, activations, binary arithmetic with type promotion,
// comparisons, logical and bitwise ops, where, casts and frexp.
#include "generators/ops/Common.h"

namespace tcfuzz::gen {
namespace {

using namespace ops;
using RangeFn = std::function<Interval(Interval)>;

/// How an elementwise op's output dtype follows its input.
enum class Out { Same, Float, Bool };

DType outDType(Out rule, DType in) {
  switch (rule) {
    case Out::Same: return in;
    case Out::Float: return floatResult(in);
    case Out::Bool: return DType::Bool;
  }
  return in;
}

/// A one-input elementwise op. `python`/`aten` use {0} and attribute placeholders.
OpSpec& unary(OpCatalog& c, std::string name, std::string family, std::string python, std::string aten,
              DTypeSet accepts, Out out, Interval need, RangeFn range) {
  OpSpec s = entry(std::move(name), std::move(family), std::move(python), std::move(aten), accepts);
  if (!(need == Interval{})) s.needs = {need};
  s.infer = [out](const OpContext& ctx) { return like(ctx.x(), outDType(out, ctx.x().dtype)); };
  if (range) s.range = [range](const OpContext& ctx) { return std::vector<Interval>{range(ctx.ranges.at(0))}; };
  return c.add(std::move(s));
}

OpSpec& mathUnary(OpCatalog& c, const std::string& name, Interval need, RangeFn range, bool intsToo = true) {
  return unary(c, name, "elementwise-unary", "torch." + name + "({0})", "aten::" + name + "({0})",
               intsToo ? kAllDTypes & kNumeric : kFloats, Out::Float, need, std::move(range));
}

OpSpec& activation(OpCatalog& c, const std::string& name, const std::string& args, RangeFn range,
                   Interval need = {}) {
  std::string python = "F." + name + "({0}" + args + ")";
  return unary(c, name, "activation", python, "aten::" + name + "({0}" + args + ")", kFloats, Out::Same, need,
               std::move(range));
}

/// torch.result_type of tensor operands: zero-dim tensors raise the dtype category (bool < integer
/// < float) of the dimensioned ones but never widen within it ([2] float16 + [] float32 is float16).
DType resultType(const std::vector<TensorType>& operands) {
  std::optional<DType> dimensioned, zeroDim;
  for (const auto& t : operands) {
    auto& slot = t.rank() == 0 ? zeroDim : dimensioned;
    slot = slot ? promote(*slot, t.dtype) : t.dtype;
  }
  if (!dimensioned || !zeroDim) return dimensioned ? *dimensioned : *zeroDim;
  if (isFloat(*dimensioned)) return *dimensioned;
  if (*dimensioned == DType::Bool || isFloat(*zeroDim)) return promote(*dimensioned, *zeroDim);
  return *dimensioned;
}

Interval boundedBy(Interval a, double m) { return {std::max(a.lo, -m), std::min(a.hi, m)}; }

/// A two-input elementwise op with broadcasting and torch's type promotion.
OpSpec& binary(OpCatalog& c, std::string name, std::string family, std::string python, std::string aten,
               DTypeSet accepts, Out out, std::function<Interval(Interval, Interval)> range,
               Interval needLeft = {}, Interval needRight = {}) {
  OpSpec s = entry(std::move(name), std::move(family), std::move(python), std::move(aten), accepts);
  s.minInputs = s.maxInputs = 2;
  if (!(needLeft == Interval{}) || !(needRight == Interval{})) s.needs = {needLeft, needRight};
  s.propose = [](const OpContext& ctx, int, Rng& rng) {
    TensorType t = ctx.x();
    t.shape = broadcastableTo(t.shape, rng);
    return t;
  };
  s.infer = [out](const OpContext& ctx) {
    TensorType t = ctx.x();
    t.shape = broadcastShapes(ctx.x(0).shape, ctx.x(1).shape);
    DType p = resultType(ctx.in);
    t.dtype = outDType(out, p);
    return std::vector<TensorType>{t};
  };
  if (range)
    s.range = [range](const OpContext& ctx) { return std::vector<Interval>{range(ctx.ranges.at(0), ctx.ranges.at(1))}; };
  return c.add(std::move(s));
}

Interval divI(Interval a, Interval b) {
  // b lies within a positive need, so 1/b is bounded.
  Interval inv{b.hi > 0 ? 1 / b.hi : -kInf, b.lo > 0 ? 1 / b.lo : kInf};
  return mulI(a, inv);
}

}  // namespace

void addElementwiseOps(OpCatalog& c) {
  const double pi = M_PI;
  auto same = [](Interval a) { return a; };
  // --- unary math ----------------------------------------------------------------------------
  unary(c, "abs", "elementwise-unary", "torch.abs({0})", "aten::abs({0})", kNumeric, Out::Same, {}, absI);
  unary(c, "neg", "elementwise-unary", "torch.neg({0})", "aten::neg({0})", kNumeric, Out::Same, {},
        [](Interval a) { return Interval{-a.hi, -a.lo}; });
  unary(c, "sign", "elementwise-unary", "torch.sign({0})", "aten::sign({0})", kNumeric, Out::Same, {},
        [](Interval) { return Interval{-1, 1}; });
  unary(c, "square", "elementwise-unary", "torch.square({0})", "aten::square({0})", kNumeric, Out::Same, {},
        [](Interval a) { return mulI(absI(a), absI(a)); });
  mathUnary(c, "sqrt", {0, kInf}, [](Interval a) { return increasing(a, [](double x) { return std::sqrt(std::max(x, 0.0)); }); });
  mathUnary(c, "rsqrt", kPositive, [](Interval a) { return Interval{0, 1 / std::sqrt(std::max(a.lo, 1e-300))}; });
  mathUnary(c, "exp", {-kInf, 8}, [](Interval a) { return increasing(a, [](double x) { return std::exp(std::min(x, 700.0)); }); });
  mathUnary(c, "exp2", {-kInf, 10}, [](Interval a) { return increasing(a, [](double x) { return std::exp2(std::min(x, 1000.0)); }); });
  mathUnary(c, "expm1", {-kInf, 8}, [](Interval a) { return increasing(a, [](double x) { return std::expm1(std::min(x, 700.0)); }); });
  for (auto name : {"log", "log2", "log10"})
    mathUnary(c, name, kPositive, [](Interval a) { return Interval{std::log(std::max(a.lo, 1e-300)) * 3.33, std::max(std::log(a.hi), 0.0) * 3.33}; });
  mathUnary(c, "log1p", {-0.9, kInf}, [](Interval a) { return increasing(a, [](double x) { return std::log1p(std::max(x, -0.999)); }); });
  for (auto name : {"sin", "cos"}) mathUnary(c, name, {}, [](Interval) { return Interval{-1, 1}; });
  mathUnary(c, "tan", {-1.3, 1.3}, [](Interval a) { return increasing(boundedBy(a, 1.3), [](double x) { return std::tan(x); }); });
  mathUnary(c, "asin", kUnit, [pi](Interval) { return symmetric(pi / 2); });
  mathUnary(c, "acos", kUnit, [pi](Interval) { return Interval{0, pi}; });
  mathUnary(c, "atan", {}, [pi](Interval) { return symmetric(pi / 2); });
  mathUnary(c, "sinh", {-8, 8}, [](Interval a) { return increasing(boundedBy(a, 8), [](double x) { return std::sinh(x); }); });
  mathUnary(c, "cosh", {-8, 8}, [](Interval a) { return Interval{1, std::cosh(std::min(a.magnitude(), 8.0))}; });
  mathUnary(c, "tanh", {}, [](Interval) { return Interval{-1, 1}; });
  mathUnary(c, "asinh", {}, [](Interval a) { return increasing(a, [](double x) { return std::asinh(x); }); });
  mathUnary(c, "acosh", {1, kInf}, [](Interval a) { return increasing(a, [](double x) { return std::acosh(std::max(x, 1.0)); }); });
  mathUnary(c, "atanh", kOpenUnit, [](Interval) { return symmetric(std::atanh(0.95)); });
  mathUnary(c, "sigmoid", {}, [](Interval) { return Interval{0, 1}; });
  mathUnary(c, "erf", {}, [](Interval) { return Interval{-1, 1}; });
  mathUnary(c, "erfc", {}, [](Interval) { return Interval{0, 2}; });
  mathUnary(c, "erfinv", kOpenUnit, [](Interval) { return symmetric(1.39); });
  mathUnary(c, "reciprocal", kPositive, [](Interval a) { return Interval{0, 1 / std::max(a.lo, 1e-300)}; });
  mathUnary(c, "lgamma", {0.1, 100}, [](Interval a) { return Interval{-0.13, 400}; });
  mathUnary(c, "digamma", {0.1, 100}, [](Interval) { return Interval{-11, 5}; });
  mathUnary(c, "sinc", {}, [](Interval) { return Interval{-0.22, 1}; });
  mathUnary(c, "deg2rad", {}, [pi](Interval a) { return scaleI(a, pi / 180); }, false);
  mathUnary(c, "rad2deg", {}, [pi](Interval a) { return scaleI(a, 180 / pi); }, false);
  mathUnary(c, "i0", {-8, 8}, [](Interval a) { return Interval{1, 430}; });
  mathUnary(c, "logit", {0.05, 0.95}, [](Interval) { return symmetric(3); }, false);
  for (auto name : {"floor", "ceil", "round", "trunc"})
    unary(c, name, "elementwise-unary", std::string("torch.") + name + "({0})", std::string("aten::") + name + "({0})",
          kNumeric, Out::Same, {}, [](Interval a) { return Interval{std::floor(a.lo), std::ceil(a.hi)}; });
  unary(c, "frac", "elementwise-unary", "torch.frac({0})", "aten::frac({0})", kFloats, Out::Same, {},
        [](Interval) { return Interval{-1, 1}; });
  unary(c, "nan_to_num", "elementwise-unary", "torch.nan_to_num({0})", "aten::nan_to_num({0})", kNumeric, Out::Same, {}, same);
  {
    auto& s = unary(c, "clamp", "elementwise-unary", "torch.clamp({0}, min={min}, max={max})",
                    "aten::clamp({0}, {min}, {max})", kNumeric, Out::Same, {}, nullptr);
    // Repair clamps values into any domain, so the bounds may be anything ordered; generation
    // draws them around zero.
    s.attrs = {floatAttr("min", -1e6, 1e6), floatAttr("max", -1e6, 1e6)};
    s.sample = [](OpContext& ctx, Rng& rng) {
      ctx.attrs["min"] = std::round(rng.real(-4, 0) * 100) / 100;
      ctx.attrs["max"] = std::round(rng.real(0.01, 4) * 100) / 100;
    };
    s.range = [](const OpContext& ctx) {
      return std::vector<Interval>{{ctx.attrFloat("min"), ctx.attrFloat("max")}};
    };
    s.infer = [](const OpContext& ctx) {
      // A float bound promotes an integer tensor to the default float dtype.
      require(ctx.attrFloat("min") <= ctx.attrFloat("max"), "clamp needs min <= max");
      bool wholeBounds = ctx.attrs["min"].is_number_integer() && ctx.attrs["max"].is_number_integer();
      return like(ctx.x(), wholeBounds ? ctx.x().dtype : floatResult(ctx.x().dtype));
    };
  }

  // --- activations ---------------------------------------------------------------------------
  activation(c, "relu", "", [](Interval a) { return Interval{std::max(a.lo, 0.0), std::max(a.hi, 0.0)}; });
  activation(c, "relu6", "", [](Interval) { return Interval{0, 6}; });
  activation(c, "leaky_relu", ", {negative_slope}", [](Interval a) { return unionI(a, scaleI(a, 0.5)); })
      .attrs = {floatAttr("negative_slope", 0.01, 0.5)};
  activation(c, "elu", ", {alpha}", [](Interval a) { return unionI(a, {-2, 0}); }).attrs = {floatAttr("alpha", 0.1, 2)};
  activation(c, "selu", "", [](Interval a) { return unionI(scaleI(a, 1.06), {-1.76, 0}); });
  activation(c, "celu", ", {alpha}", [](Interval a) { return unionI(a, {-2, 0}); }).attrs = {floatAttr("alpha", 0.1, 2)};
  {
    auto& s = unary(c, "gelu", "activation", "F.gelu({0}, approximate={approximate})", "aten::gelu({0}, {approximate})",
                    kFloats, Out::Same, {}, [](Interval a) { return unionI(a, {-0.2, 0}); });
    s.attrs = {choiceAttr("approximate", {"none", "tanh"})};
  }
  activation(c, "silu", "", [](Interval a) { return unionI(a, {-0.3, 0}); });
  activation(c, "mish", "", [](Interval a) { return unionI(a, {-0.31, 0}); });
  activation(c, "softplus", ", {beta}, {threshold}", [](Interval a) { return Interval{0, std::max(a.hi, 0.0) + 1}; })
      .attrs = {floatAttr("beta", 0.5, 2), floatAttr("threshold", 5, 20)};
  // Python composites: the ATen spelling is an op of the same shape and dtype rule.
  activation(c, "softsign", "", [](Interval) { return Interval{-1, 1}; }).aten = "aten::abs({0})";
  activation(c, "hardtanh", ", {min_val}, {max_val}", [](Interval) { return Interval{-2, 2}; })
      .attrs = {floatAttr("min_val", -2, -0.5), floatAttr("max_val", 0.5, 2)};
  activation(c, "hardsigmoid", "", [](Interval) { return Interval{0, 1}; });
  activation(c, "hardswish", "", [](Interval a) { return unionI(a, {-0.4, 0}); });
  activation(c, "hardshrink", ", {lambd}", same).attrs = {floatAttr("lambd", 0.1, 1)};
  activation(c, "softshrink", ", {lambd}", same).attrs = {floatAttr("lambd", 0.1, 1)};
  activation(c, "tanhshrink", "", [](Interval a) { return addI(a, {-1, 1}); }).aten = "aten::tanh({0})";
  activation(c, "logsigmoid", "", [](Interval a) { return Interval{std::min(a.lo, 0.0) - 1, 0}; }).aten =
      "aten::log_sigmoid({0})";
  {
    auto& s = activation(c, "threshold", ", {threshold}, {value}", [](Interval a) { return unionI(a, {-1, 1}); });
    s.attrs = {floatAttr("threshold", -1, 1), floatAttr("value", -1, 1)};
  }
  {
    auto& s = activation(c, "glu", ", {dim}", same);
    s.attrs = {dimAttr()};
    s.minRank = 1;
    s.sample = [](OpContext& ctx, Rng& rng) {
      // GLU halves `dim`: prefer a dim of even size.
      std::vector<int64_t> even;
      for (int d = 0; d < ctx.x().rank(); ++d)
        if (ctx.x().shape[d] % 2 == 0) even.push_back(d);
      ctx.attrs["dim"] = even.empty() ? drawDim(rng, ctx.x().rank()) : rng.pick(even);
    };
    s.infer = [](const OpContext& ctx) {
      TensorType t = ctx.x();
      int d = wrapDim(ctx.attrInt("dim"), t.rank());
      require(t.shape[d] % 2 == 0, "glu needs an even size along dim");
      t.shape[d] /= 2;
      return std::vector<TensorType>{t};
    };
  }
  for (auto [name, python] : {std::pair{"softmax", "F.softmax({0}, dim={dim})"}, {"log_softmax", "F.log_softmax({0}, dim={dim})"},
                              {"softmin", "F.softmin({0}, dim={dim})"}}) {
    std::string atenName = std::string(name) == "softmin" ? "softmax" : name;
    auto& s = unary(c, name, "softmax", python, "aten::" + atenName + ".int({0}, {dim})", kFloats, Out::Same, {},
                    std::string(name) == "log_softmax"
                        ? RangeFn([](Interval a) { return Interval{-(a.hi - a.lo) - 10, 0}; })
                        : RangeFn([](Interval) { return Interval{0, 1}; }));
    s.attrs = {dimAttr()};
    s.sample = [](OpContext& ctx, Rng& rng) { ctx.attrs["dim"] = drawDim(rng, ctx.x().rank()); };
    s.infer = [](const OpContext& ctx) {
      wrapDim(ctx.attrInt("dim"), ctx.x().rank());
      return like(ctx.x(), ctx.x().dtype);
    };
  }

  // --- binary arithmetic (broadcasting, type promotion) ---------------------------------------
  binary(c, "add", "elementwise-binary", "torch.add({0}, {1}, alpha={alpha})", "aten::add.Tensor({0}, {1}, {alpha})",
         kNumeric, Out::Same, [](Interval a, Interval b) { return addI(a, scaleI(b, 2)); })
      .attrs = {intAttr("alpha", 1, 2)};
  binary(c, "sub", "elementwise-binary", "{0} - {1}", "aten::sub.Tensor({0}, {1})", kNumeric, Out::Same, subI);
  binary(c, "mul", "elementwise-binary", "{0} * {1}", "aten::mul.Tensor({0}, {1})", kAllDTypes, Out::Same, mulI);
  binary(c, "div", "elementwise-binary", "{0} / {1}", "aten::div.Tensor({0}, {1})", kNumeric, Out::Float, divI, {},
         kPositive);
  {
    auto& s = binary(c, "div_rounding", "elementwise-binary", "torch.div({0}, {1}, rounding_mode={rounding_mode})",
                     "aten::div.Tensor_mode({0}, {1}, {rounding_mode})", kNumeric, Out::Same,
                     [](Interval a, Interval b) { return addI(divI(a, b), {-1, 1}); }, {}, {1, kInf});
    s.attrs = {choiceAttr("rounding_mode", {"trunc", "floor"})};
  }
  for (auto name : {"remainder", "fmod"})
    binary(c, name, "elementwise-binary", std::string("torch.") + name + "({0}, {1})",
           std::string("aten::") + name + ".Tensor({0}, {1})", kNumeric, Out::Same,
           [](Interval a, Interval b) { return symmetric(b.magnitude()); }, {}, {1, kInf});
  binary(c, "pow", "elementwise-binary", "torch.pow({0}, {1})", "aten::pow.Tensor_Tensor({0}, {1})", kFloats, Out::Same,
         [](Interval a, Interval b) {
           // A positive base: base^exp is monotone in each argument, so the corners bound it.
           double lo = std::max(a.lo, 0.05), hi = std::max(a.hi, lo);
           return hull({std::pow(lo, b.lo), std::pow(lo, b.hi), std::pow(hi, b.lo), std::pow(hi, b.hi)});
         },
         {0.05, 4}, {-3, 3});
  binary(c, "atan2", "elementwise-binary", "torch.atan2({0}, {1})", "aten::atan2({0}, {1})", kNumeric, Out::Float,
         [pi](Interval, Interval) { return symmetric(pi); });
  for (auto name : {"maximum", "minimum", "fmax", "fmin"})
    binary(c, name, "elementwise-binary", std::string("torch.") + name + "({0}, {1})", std::string("aten::") + name + "({0}, {1})",
           std::string(name).front() == 'f' ? kFloats : kNumeric, Out::Same, unionI);
  binary(c, "hypot", "elementwise-binary", "torch.hypot({0}, {1})", "aten::hypot({0}, {1})", kFloats, Out::Same,
         [](Interval a, Interval b) { return Interval{0, a.magnitude() + b.magnitude()}; });
  binary(c, "copysign", "elementwise-binary", "torch.copysign({0}, {1})", "aten::copysign.Tensor({0}, {1})", kNumeric,
         Out::Float, [](Interval a, Interval) { return symmetric(a.magnitude()); });
  binary(c, "logaddexp", "elementwise-binary", "torch.logaddexp({0}, {1})", "aten::logaddexp({0}, {1})", kFloats,
         Out::Same, [](Interval a, Interval b) { return Interval{std::max(a.lo, b.lo), std::max(a.hi, b.hi) + 0.7}; });
  binary(c, "xlogy", "elementwise-binary", "torch.xlogy({0}, {1})", "aten::xlogy.Tensor({0}, {1})", kNumeric, Out::Float,
         [](Interval a, Interval b) { return mulI(a, {std::log(0.05), std::log(std::max(b.hi, 1.0))}); }, {},
         kPositive);
  // Tensor-scalar arithmetic, the way models write it.
  {
    auto& s = unary(c, "mul_scalar", "elementwise-binary", "{0} * {value}", "aten::mul.Scalar({0}, {value})", kNumeric,
                    Out::Same, {}, nullptr);
    s.attrs = {floatAttr("value", -3, 3)};
    s.infer = [](const OpContext& ctx) { return like(ctx.x(), floatResult(ctx.x().dtype)); };
    s.range = [](const OpContext& ctx) { return std::vector<Interval>{scaleI(ctx.ranges[0], ctx.attrFloat("value"))}; };
  }
  {
    auto& s = unary(c, "add_scalar", "elementwise-binary", "{0} + {value}", "aten::add.Scalar({0}, {value})", kNumeric,
                    Out::Same, {}, nullptr);
    s.attrs = {floatAttr("value", -3, 3)};
    s.infer = [](const OpContext& ctx) { return like(ctx.x(), floatResult(ctx.x().dtype)); };
    s.range = [](const OpContext& ctx) { return std::vector<Interval>{addI(ctx.ranges[0], {ctx.attrFloat("value"), ctx.attrFloat("value")})}; };
  }
  {
    auto& s = unary(c, "pow_scalar", "elementwise-binary", "{0} ** {exponent}", "aten::pow.Tensor_Scalar({0}, {exponent})",
                    kFloats, Out::Same, {}, nullptr);
    s.attrs = {intAttr("exponent", 2, 4)};
    s.range = [](const OpContext& ctx) {
      double m = std::pow(ctx.ranges[0].magnitude(), static_cast<double>(ctx.attrInt("exponent")));
      return std::vector<Interval>{ctx.attrInt("exponent") % 2 == 0 ? Interval{0, m} : symmetric(m)};
    };
  }
  {
    auto& s = unary(c, "rsub_scalar", "elementwise-binary", "{value} - {0}", "aten::rsub.Scalar({0}, {value})", kNumeric,
                    Out::Same, {}, nullptr);
    s.attrs = {floatAttr("value", -3, 3)};
    s.infer = [](const OpContext& ctx) { return like(ctx.x(), floatResult(ctx.x().dtype)); };
    s.range = [](const OpContext& ctx) { double v = ctx.attrFloat("value"); return std::vector<Interval>{{v - ctx.ranges[0].hi, v - ctx.ranges[0].lo}}; };
  }
  // Three-input pointwise ops.
  for (auto [name, python, aten] :
       {std::tuple{"addcmul", "torch.addcmul({0}, {1}, {2}, value={value})", "aten::addcmul({0}, {1}, {2}, {value})"},
        {"addcdiv", "torch.addcdiv({0}, {1}, {2}, value={value})", "aten::addcdiv({0}, {1}, {2}, {value})"},
        {"lerp", "torch.lerp({0}, {1}, {2})", "aten::lerp.Tensor({0}, {1}, {2})"}}) {
    OpSpec s = entry(name, "elementwise-ternary", python, aten);
    s.minInputs = s.maxInputs = 3;
    s.accepts = {kFloats};
    bool isDiv = s.name == "addcdiv";
    if (s.name != "lerp") s.attrs = {floatAttr("value", -2, 2)};
    if (isDiv) s.needs = {kAnything, kAnything, kPositive};
    if (s.name == "lerp") s.needs = {kAnything, kAnything, kProbability};
    s.propose = [](const OpContext& ctx, int, Rng& rng) {
      TensorType t = ctx.x();
      t.shape = broadcastableTo(t.shape, rng);
      return t;
    };
    s.infer = [](const OpContext& ctx) {
      // Same-dtype operands: addcmul/addcdiv/lerp do not promote across float kinds.
      require(ctx.x(1).dtype == ctx.x(0).dtype && ctx.x(2).dtype == ctx.x(0).dtype, "operands must share a dtype");
      TensorType t = ctx.x();
      t.shape = broadcastShapes(broadcastShapes(ctx.x(0).shape, ctx.x(1).shape), ctx.x(2).shape);
      return std::vector<TensorType>{t};
    };
    s.range = [isDiv, lerp = s.name == "lerp"](const OpContext& ctx) {
      const auto& r = ctx.ranges;
      if (lerp) return std::vector<Interval>{unionI(r[0], r[1])};
      double v = ctx.attrFloat("value");
      Interval prod = isDiv ? divI(r[1], r[2]) : mulI(r[1], r[2]);
      return std::vector<Interval>{addI(r[0], scaleI(prod, v))};
    };
    c.add(std::move(s));
  }

  // --- comparisons, logical, where -------------------------------------------------------------
  for (auto name : {"eq", "ne", "lt", "le", "gt", "ge"})
    binary(c, name, "comparison", std::string("torch.") + name + "({0}, {1})", std::string("aten::") + name + ".Tensor({0}, {1})",
           kAllDTypes, Out::Bool, [](Interval, Interval) { return Interval{0, 1}; });
  for (auto name : {"logical_and", "logical_or", "logical_xor"})
    binary(c, name, "logical", std::string("torch.") + name + "({0}, {1})", std::string("aten::") + name + "({0}, {1})",
           kAllDTypes, Out::Bool, [](Interval, Interval) { return Interval{0, 1}; });
  unary(c, "logical_not", "logical", "torch.logical_not({0})", "aten::logical_not({0})", kAllDTypes, Out::Bool, {},
        [](Interval) { return Interval{0, 1}; });
  for (auto name : {"isnan", "isinf", "isfinite", "signbit"})
    unary(c, name, "comparison", std::string("torch.") + name + "({0})", std::string("aten::") + name + "({0})", kFloats,
          Out::Bool, {}, [](Interval) { return Interval{0, 1}; });
  {
    OpSpec s = entry("where", "logical", "torch.where({0}, {1}, {2})", "aten::where.self({0}, {1}, {2})");
    s.minInputs = s.maxInputs = 3;
    s.accepts = {only(DType::Bool), kAllDTypes};
    s.propose = [](const OpContext& ctx, int k, Rng& rng) {
      TensorType t = ctx.x();
      t.shape = broadcastableTo(t.shape, rng);
      t.dtype = k == 2 && rng.chance(0.8) ? DType::Float32 : rng.chance(0.5) ? DType::Float32 : DType::Float16;
      return t;
    };
    s.infer = [](const OpContext& ctx) {
      TensorType t = ctx.x(1);
      t.shape = broadcastShapes(broadcastShapes(ctx.x(0).shape, ctx.x(1).shape), ctx.x(2).shape);
      t.dtype = resultType({ctx.x(1), ctx.x(2)});
      return std::vector<TensorType>{t};
    };
    s.range = [](const OpContext& ctx) { return std::vector<Interval>{unionI(ctx.ranges[1], ctx.ranges[2])}; };
    c.add(std::move(s));
  }

  // --- bitwise ----------------------------------------------------------------------------------
  for (auto name : {"bitwise_and", "bitwise_or", "bitwise_xor"})
    binary(c, name, "bitwise", std::string("torch.") + name + "({0}, {1})", std::string("aten::") + name + ".Tensor({0}, {1})",
           kIntegral, Out::Same, [](Interval a, Interval b) {
             double m = std::max(a.magnitude(), b.magnitude());
             double p = std::exp2(std::ceil(std::log2(m + 1)));
             return symmetric(p);
           });
  unary(c, "bitwise_not", "bitwise", "torch.bitwise_not({0})", "aten::bitwise_not({0})", kIntegral, Out::Same, {}, nullptr)
      .range = [](const OpContext& ctx) {
        // On bool it is the logical not.
        Interval a = ctx.ranges.at(0);
        return std::vector<Interval>{ctx.x().dtype == DType::Bool ? Interval{0, 1} : Interval{-a.hi - 1, -a.lo - 1}};
      };
  for (auto [name, aten] : {std::pair{"bitwise_left_shift", "aten::bitwise_left_shift.Tensor({0}, {1})"},
                            {"bitwise_right_shift", "aten::bitwise_right_shift.Tensor({0}, {1})"}})
    binary(c, name, "bitwise", std::string("torch.") + name + "({0}, {1})", aten, kInts, Out::Same,
           [](Interval a, Interval) { return scaleI(a, 16); }, {-1000, 1000}, {0, 4});

  // --- casts and bit-level ----------------------------------------------------------------------
  {
    auto& s = unary(c, "to_dtype", "cast", "{0}.to({dtype})", "aten::_to_copy({0}, {dtype})", kAllDTypes, Out::Same,
                    {}, nullptr);
    s.attrs = {dtypeAttr("dtype", {"float32", "float16", "bfloat16", "float64", "int64", "int32", "bool"})};
    s.infer = [](const OpContext& ctx) { return like(ctx.x(), ctx.attrDType("dtype")); };
    s.range = [](const OpContext& ctx) {
      DType d = ctx.attrDType("dtype");
      Interval r = ctx.ranges[0];
      if (d == DType::Bool) return std::vector<Interval>{{0, 1}};
      if (isInt(d)) r = {std::trunc(r.lo), std::trunc(r.hi)};
      return std::vector<Interval>{r};
    };
    // A float cast to an integer type is undefined beyond the integer range.
    s.need = [](const OpContext& ctx, int) -> std::optional<Interval> {
      DType d = ctx.attrDType("dtype");
      if (isInt(d)) return Interval{-1e6, 1e6};
      if (d == DType::Float16) return Interval{-6e4, 6e4};
      return std::nullopt;
    };
  }
  // --- int64 values past the int32 range (family "int-range") --------------------------------
  // Small int64 values moved next to +-2^31, and an index ramp scaled by about 1e9: a compiled kernel
  // that computes int64 in int32 (index arithmetic, a narrowed accumulator) wraps where eager does
  // not. The range rules keep every value within int64's safe magnitude (1e15), so nothing downstream
  // overflows int64 in one formula only.
  for (auto [name, direction] : {std::pair{"add_past_int32", 1.0}, {"sub_past_int32", -1.0}}) {
    double sign = direction;  // a lambda cannot capture a structured binding under C++20 clang 14
    std::string python = sign > 0 ? "{0} + {offset}" : "{0} - {offset}";
    std::string aten = sign > 0 ? "aten::add.Scalar({0}, {offset})" : "aten::sub.Scalar({0}, {offset})";
    auto& s = unary(c, name, "int-range", python, aten, only(DType::Int64), Out::Same, {-1e6, 1e6}, nullptr);
    s.attrs = {intAttr("offset", 2147483000, 2147484000)};
    s.range = [sign](const OpContext& ctx) {
      double o = sign * static_cast<double>(ctx.attrInt("offset"));
      return std::vector<Interval>{addI(ctx.ranges.at(0), {o, o})};
    };
  }
  {
    auto& s = unary(c, "add_scaled_arange", "int-range",
                    "{0} + torch.arange({0}.shape[-1], dtype=torch.int64, device={0}.device) * {scale}",
                    "aten::add.Tensor({0}, {0})", only(DType::Int64), Out::Same, {-1e6, 1e6}, nullptr);
    s.minRank = 1;
    s.attrs = {intAttr("scale", 999000000, 3001000000)};
    s.range = [](const OpContext& ctx) {
      double n = static_cast<double>(ctx.x().shape.back());
      return std::vector<Interval>{addI(ctx.ranges.at(0), {0, static_cast<double>(ctx.attrInt("scale")) * std::max(n - 1, 0.0)})};
    };
  }

  // --- explicit low-precision round trips (family "precision") --------------------------------
  // A float32 or float64 value rounded to a 16-bit float and widened back, alone or around a Python
  // float scalar: compiled code must round where the program casts. The float64 reference widens
  // the casts (Fp64Casts), so it stays the exact value both sides are judged against.
  const DTypeSet wide = only(DType::Float32) | only(DType::Float64);
  auto rounded = [](Interval r) {  // a 16-bit rounding moves a value by at most 2^-8 of its magnitude
    double m = r.magnitude() / 128;
    return Interval{r.lo - m, r.hi + m};
  };
  for (const char* narrow : {"bfloat16", "float16"}) {
    std::string n = narrow;
    Interval need = n == "float16" ? Interval{-6e4, 6e4} : Interval{};
    unary(c, "round_trip_" + n, "precision", "{0}.to(torch." + n + ").to({0}.dtype)", "aten::_to_copy({0}, None)", wide,
          Out::Same, need, rounded);
    auto& s = unary(c, "add_scalar_in_" + n, "precision", "({0}.to(torch." + n + ") + {value}).to({0}.dtype)",
                    "aten::add.Scalar({0}, {value})", wide, Out::Same, need, nullptr);
    s.attrs = {floatAttr("value", -4, 4)};
    s.range = [rounded](const OpContext& ctx) {
      double v = ctx.attrFloat("value");
      return std::vector<Interval>{rounded(addI(rounded(ctx.ranges.at(0)), {v, v}))};
    };
  }
  {
    OpSpec s = entry("frexp", "cast", "torch.frexp({0})", "aten::frexp.Tensor({0})");
    s.accepts = {kFloats};
    s.infer = [](const OpContext& ctx) {
      TensorType m = ctx.x(), e = ctx.x();
      e.dtype = DType::Int32;
      return std::vector<TensorType>{m, e};
    };
    s.range = [](const OpContext& ctx) {
      return std::vector<Interval>{{-1, 1}, {-130, std::ceil(std::log2(std::max(ctx.ranges[0].magnitude(), 1.0))) + 1}};
    };
    c.add(std::move(s));
  }
}

}  // namespace tcfuzz::gen
