// Losses (pointwise, classification and others; `reduction` as ATen's enum) and distances.
#include <algorithm>

#include "generators/ops/neural/NeuralCommon.h"

namespace tcfuzz::gen::ops {
namespace {

// --- losses -------------------------------------------------------------------------------------

// `reduction` is ATen's Reduction enum (0 none, 1 mean, 2 sum), so the ATen spelling can pass it
// as is; Python indexes the names F expects.
AttrSpec reductionAttr() { return intAttr("reduction", 0, 2); }
const std::string kReductionArg = "reduction=('none', 'mean', 'sum')[{reduction}]";

/// Output of a reduced loss: `elementwise` for 'none', a 0-d tensor otherwise.
std::vector<TensorType> reducedLoss(const OpContext& ctx, Shape elementwise) {
  return single(ctx.x(), ctx.attrInt("reduction") == 0 ? std::move(elementwise) : Shape{}, ctx.x().dtype);
}
/// Range of a reduced loss from the per-element range over `count` elements.
std::vector<Interval> reducedRange(const OpContext& ctx, Interval perElement, double count) {
  return {ctx.attrInt("reduction") == 2 ? sumI(perElement, count) : perElement};
}

/// A loss between input and a broadcastable target of the same dtype (F broadcasts them).
OpSpec pointwiseLoss(const std::string& name, std::vector<AttrSpec> extra, const std::string& pyExtra,
                      const std::string& atenExtra, std::function<Interval(const OpContext&)> perElement) {
  OpSpec s = entry(name, "loss", "F." + name + "({0}, {1}, " + kReductionArg + pyExtra + ")", "aten::" + name + "({0}, {1}, {reduction}" + atenExtra + ")");
  s.minInputs = s.maxInputs = 2;
  s.accepts = {kFloats};
  s.attrs = {reductionAttr()};
  for (auto& a : extra) s.attrs.push_back(std::move(a));
  s.propose = [](const OpContext& ctx, int, Rng& rng) {
    TensorType t = ctx.x();
    if (rng.chance(0.3)) t.shape = broadcastableTo(t.shape, rng);
    return t;
  };
  s.infer = [name](const OpContext& ctx) {
    requireSameDType(ctx, name);
    return reducedLoss(ctx, broadcastShapes(ctx.x(0).shape, ctx.x(1).shape));
  };
  s.range = [perElement](const OpContext& ctx) {
    return reducedRange(ctx, perElement(ctx), productOf(broadcastShapes(ctx.x(0).shape, ctx.x(1).shape)));
  };
  return s;
}

/// |input - target| bound.
double gap(const OpContext& ctx) { return ctx.ranges[0].magnitude() + ctx.ranges[1].magnitude(); }

/// cross_entropy / nll_loss: logits (C) or (N, C, *d) and int64 class targets () or (N, *d).
void classLoss(OpCatalog& c, const std::string& name, const std::string& python, const std::string& aten,
               std::function<Interval(const OpContext&)> perElement) {
  OpSpec s = entry(name, "loss", python, aten);
  s.minInputs = s.maxInputs = 2;
  s.accepts = {kFloats, only(DType::Int64)};
  s.minRank = 1;
  s.maxRank = 4;
  s.attrs = {reductionAttr()};
  auto targetShape = [](const Shape& x) {
    Shape t = x;
    t.erase(t.begin() + (x.size() == 1 ? 0 : 1));
    return t;
  };
  auto classes = [](const OpContext& ctx) { return ctx.x().shape[ctx.x().rank() == 1 ? 0 : 1]; };
  s.propose = [targetShape](const OpContext& ctx, int, Rng&) { return TensorType{targetShape(ctx.x().shape), DType::Int64}; };
  s.need = [classes](const OpContext& ctx, int k) -> std::optional<Interval> {
    if (k != 1) return std::nullopt;
    return Interval{0, static_cast<double>(classes(ctx) - 1)};
  };
  s.infer = [targetShape](const OpContext& ctx) {
    require(ctx.x(1).shape == targetShape(ctx.x().shape), "the target must be the input's shape without the class dim");
    return reducedLoss(ctx, ctx.x(1).shape);
  };
  s.range = [perElement](const OpContext& ctx) { return reducedRange(ctx, perElement(ctx), numelOf(ctx, 1)); };
  c.add(std::move(s));
}

}  // namespace

void addLosses(OpCatalog& c) {
  classLoss(c, "cross_entropy", "F.cross_entropy({0}, {1}, " + kReductionArg + ")",
            "aten::cross_entropy_loss({0}, {1}, None, {reduction}, -100, 0.0)", [](const OpContext& ctx) {
              // logsumexp(x) - x_t <= (max - min) + log(C)
              double classes = static_cast<double>(ctx.x().shape[ctx.x().rank() == 1 ? 0 : 1]);
              return Interval{0, ctx.ranges[0].hi - ctx.ranges[0].lo + std::log(classes)};
            });
  classLoss(c, "nll_loss", "F.nll_loss({0}, {1}, " + kReductionArg + ")",
            "aten::nll_loss_nd({0}, {1}, None, {reduction}, -100)",
            [](const OpContext& ctx) { return Interval{-ctx.ranges[0].hi, -ctx.ranges[0].lo}; });

  c.add(pointwiseLoss("mse_loss", {}, "", "", [](const OpContext& ctx) { return Interval{0, gap(ctx) * gap(ctx)}; }));
  c.add(pointwiseLoss("l1_loss", {}, "", "", [](const OpContext& ctx) { return Interval{0, gap(ctx)}; }));
  // smooth_l1 <= |d| and huber <= delta * |d|.
  c.add(pointwiseLoss("smooth_l1_loss", {floatAttr("beta", 0.1, 2)}, ", beta={beta}", ", {beta}",
                      [](const OpContext& ctx) { return Interval{0, gap(ctx)}; }));
  c.add(pointwiseLoss("huber_loss", {floatAttr("delta", 0.1, 2)}, ", delta={delta}", ", {delta}",
                      [](const OpContext& ctx) { return Interval{0, ctx.attrFloat("delta") * gap(ctx)}; }));
  {
    OpSpec s = pointwiseLoss("kl_div", {boolAttr("log_target")}, ", log_target={log_target}", ", {log_target}",
                            [](const OpContext& ctx) {
                              Interval x = ctx.ranges[0], t = ctx.ranges[1];
                              if (ctx.attrBool("log_target")) {  // exp(t) * (t - x)
                                Interval e = increasing(t, [](double v) { return std::exp(std::min(v, 700.0)); });
                                return mulI(e, subI(t, x));
                              }
                              // xlogy(t, t) - t * x with t >= 0
                              double hi = std::max(t.hi, 1.0);
                              return subI({-1 / M_E, hi * std::log(hi)}, mulI(t, x));
                            });
    s.need = [](const OpContext& ctx, int k) -> std::optional<Interval> {
      if (k != 1) return std::nullopt;
      return ctx.attrBool("log_target") ? Interval{-kInf, 4} : Interval{0, kInf};
    };
    c.add(std::move(s));
  }
  {
    OpSpec s = pointwiseLoss("binary_cross_entropy_with_logits", {}, "", "", [](const OpContext& ctx) {
      // max(x, 0) - x * t + log1p(exp(-|x|))
      double m = ctx.ranges[0].magnitude();
      return symmetric(m + m * ctx.ranges[1].magnitude() + std::log(2.0));
    });
    s.aten = "aten::binary_cross_entropy_with_logits({0}, {1}, None, None, {reduction})";
    s.needs = {kAnything, kProbability};
    s.propose = [](const OpContext& ctx, int, Rng&) { return ctx.x(); };
    s.infer = [](const OpContext& ctx) {
      requireSameDType(ctx, "binary_cross_entropy_with_logits");
      require(ctx.x(1).shape == ctx.x(0).shape, "the target must have the input's shape");
      return reducedLoss(ctx, ctx.x().shape);
    };
    c.add(std::move(s));
  }
}

// --- distances ----------------------------------------------------------------------------------

namespace {

/// A two-operand op over broadcast inputs that promote to a common float dtype.
OpSpec broadcastPair(const std::string& name, const std::string& python, const std::string& aten) {
  OpSpec s = entry(name, "distance", python, aten);
  s.minInputs = s.maxInputs = 2;
  s.accepts = {kFloats};
  s.minRank = 1;
  s.propose = [](const OpContext& ctx, int, Rng& rng) {
    TensorType t = ctx.x();
    if (rng.chance(0.3)) t.shape = broadcastableTo(t.shape, rng);
    if (t.shape.empty()) t.shape = {1};
    return t;
  };
  return s;
}

}  // namespace

void addDistances(OpCatalog& c) {
  {
    OpSpec s = broadcastPair("pairwise_distance", "F.pairwise_distance({0}, {1}, p={p}, keepdim={keepdim})",
                            "aten::pairwise_distance({0}, {1}, {p}, 1e-06, {keepdim})");
    s.attrs = {floatAttr("p", 1, 3), boolAttr("keepdim")};
    s.infer = [](const OpContext& ctx) {
      require(ctx.x(1).rank() >= 1, "pairwise_distance operands must be at least 1-d");
      Shape out = broadcastShapes(ctx.x(0).shape, ctx.x(1).shape);
      if (ctx.attrBool("keepdim"))
        out.back() = 1;
      else
        out.pop_back();
      return single(ctx.x(), out, promote(ctx.x(0).dtype, ctx.x(1).dtype));
    };
    s.range = [](const OpContext& ctx) {
      double n = static_cast<double>(broadcastShapes(ctx.x(0).shape, ctx.x(1).shape).back());
      return std::vector<Interval>{{0, n * (gap(ctx) + 1e-6)}};  // ||v||_p <= ||v||_1
    };
    c.add(std::move(s));
  }
  {
    OpSpec s = broadcastPair("cosine_similarity", "F.cosine_similarity({0}, {1}, dim={dim})",
                            "aten::cosine_similarity({0}, {1}, {dim}, 1e-08)");
    s.attrs = {dimAttr()};
    s.sample = [](OpContext& ctx, Rng& rng) { ctx.attrs["dim"] = drawDim(rng, ctx.x().rank()); };
    s.infer = [](const OpContext& ctx) {
      require(ctx.x(1).rank() >= 1, "cosine_similarity operands must be at least 1-d");
      Shape out = broadcastShapes(ctx.x(0).shape, ctx.x(1).shape);
      out.erase(out.begin() + wrapDim(ctx.attrInt("dim"), static_cast<int>(out.size())));
      return single(ctx.x(), out, promote(ctx.x(0).dtype, ctx.x(1).dtype));
    };
    s.range = [](const OpContext&) { return std::vector<Interval>{symmetric(1.01)}; };
    c.add(std::move(s));
  }
  {
    OpSpec s = entry("cdist", "distance", "torch.cdist({0}, {1}, p={p})", "aten::cdist({0}, {1}, {p}, None)");
    s.minInputs = s.maxInputs = 2;
    s.accepts = {only(DType::Float32) | only(DType::Float64)};
    s.minRank = 2;
    s.maxRank = 4;
    s.attrs = {floatAttr("p", 1, 3)};
    s.propose = [](const OpContext& ctx, int, Rng& rng) {
      TensorType t = ctx.x();
      Shape batch = slice(t.shape, 0, t.shape.size() - 2);
      t.shape = broadcastableTo(batch, rng);
      t.shape.push_back(rng.uniform(1, 6));
      t.shape.push_back(ctx.x().shape.back());
      return t;
    };
    s.infer = [](const OpContext& ctx) {
      requireSameDType(ctx, "cdist");
      const Shape &a = ctx.x(0).shape, &b = ctx.x(1).shape;
      require(b.size() >= 2 && a.back() == b.back(), "cdist operands must share their last dim");
      Shape out = broadcastShapes(slice(a, 0, a.size() - 2), slice(b, 0, b.size() - 2));
      out.push_back(a[a.size() - 2]);
      out.push_back(b[b.size() - 2]);
      return single(ctx.x(), out, ctx.x().dtype);
    };
    s.range = [](const OpContext& ctx) {
      return std::vector<Interval>{{0, static_cast<double>(ctx.x().shape.back()) * gap(ctx)}};
    };
    c.add(std::move(s));
  }
}

}  // namespace tcfuzz::gen::ops
