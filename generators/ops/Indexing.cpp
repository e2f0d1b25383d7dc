// Indexing writes (x[idx] += y, index_put_, index_add, scatter and its reductions, slice
// assignment) and in-place ops (add_, clamp_, copy_, masked_fill_, ...).
// In-place entries set `inplace` and spell "{out0} = {0}.op_(...)": the emitter clones input 0
// unless nothing else can observe it. In-place ops never promote self: the other operand must
// broadcast TO input 0's shape and its dtype category (bool < int < float) must not exceed self's.
#include <algorithm>

#include "generators/ops/Common.h"

namespace tcfuzz::gen {
namespace {

using namespace ops;

/// bool < integer < floating point: an in-place op cannot write a higher category into self.
int writeCategory(DType d) { return d == DType::Bool ? 0 : isInt(d) ? 1 : 2; }

void requireBroadcastsTo(const TensorType& from, const TensorType& to, const std::string& what) {
  require(broadcastShapes(from.shape, to.shape) == to.shape, what + " must broadcast to input 0's shape");
}

/// What a value converted to dtype `d` must lie in (float to int is undefined out of range,
/// float16 overflows past 65504).
std::optional<Interval> castNeed(DType d) {
  if (isInt(d)) return Interval{-1e6, 1e6};
  if (d == DType::Float16) return Interval{-6e4, 6e4};
  return std::nullopt;
}

/// Sums of up to n values in `a` added to `base` (some positions receive none).
Interval accumulateRange(Interval base, Interval a, double n) { return addI(base, sumI(unionI(a, {0, 0}), n)); }

/// Products of up to n factors each in `a`.
Interval prodRangeOf(Interval a, double n) {
  double m = a.magnitude();
  return symmetric(m <= 1 ? m : std::pow(m, n));
}

/// A random dtype of the same category as `d` (bool stays bool).
DType sameCategory(DType d, Rng& rng) {
  if (d == DType::Bool) return d;
  if (isInt(d)) return rng.chance(0.5) ? DType::Int64 : DType::Int32;
  return rng.pick(std::vector<DType>{DType::Float32, DType::Float16, DType::BFloat16, DType::Float64});
}

OpSpec base(std::string name, std::string family, std::string python, std::string aten, std::vector<DTypeSet> accepts) {
  OpSpec s = entry(std::move(name), std::move(family), std::move(python), std::move(aten));
  s.accepts = std::move(accepts);
  return s;
}

int64_t sizeAt(const TensorType& t, int64_t dim) { return t.shape.at(wrapDim(dim, t.rank())); }

/// x[idx] += y and x.index_put_((idx,), y, accumulate=True): a 1-d int64 index into dim 0 and
/// values broadcastable to [len(idx)] + shape[1:], of input 0's dtype (aten::index_put demands it).
/// Both map to index_put with accumulate=True, which equals x[idx] += y for distinct indices.
OpSpec& indexPut(OpCatalog& c, std::string name, std::string python, bool accumulate) {
  OpSpec s = base(std::move(name), "indexing", std::move(python),
                  "aten::index_put({0}, {1}, {2}, True)",
                  {kNumeric, only(DType::Int64), kNumeric});
  s.minInputs = s.maxInputs = 3;
  s.minRank = 1;
  s.uniqueIndex = !accumulate;  // without accumulation, repeated indices race
  s.propose = [accumulate](const OpContext& ctx, int k, Rng& rng) {
    int64_t rows = ctx.x().shape[0];
    if (k == 1) return TensorType{{rng.uniform(1, accumulate ? std::max<int64_t>(rows, 4) : rows)}, DType::Int64};
    TensorType t = ctx.x();
    t.shape[0] = ctx.in.size() > 1 && ctx.x(1).rank() == 1 ? ctx.x(1).shape[0] : rows;
    if (rng.chance(0.25)) t.shape = broadcastableTo(t.shape, rng);
    return t;
  };
  s.need = [](const OpContext& ctx, int k) -> std::optional<Interval> {
    if (k == 1) return Interval{0, static_cast<double>(ctx.x().shape[0] - 1)};
    return std::nullopt;
  };
  s.infer = [accumulate](const OpContext& ctx) {
    const TensorType &x = ctx.x(), &idx = ctx.x(1), &values = ctx.x(2);
    require(idx.rank() == 1, "the index must be 1-d");
    require(accumulate || idx.shape[0] <= x.shape[0], "distinct indices cannot outnumber dim 0");
    require(values.dtype == x.dtype, "index_put values must have input 0's dtype");
    TensorType target = x;
    target.shape[0] = idx.shape[0];
    requireBroadcastsTo(values, target, "the values");
    return std::vector<TensorType>{x};
  };
  s.range = [accumulate](const OpContext& ctx) {
    double n = accumulate ? static_cast<double>(ctx.x(1).shape[0]) : 1;
    return std::vector<Interval>{accumulateRange(ctx.ranges[0], ctx.ranges[2], n)};
  };
  return c.add(std::move(s));
}

/// The scatter family: self, dim, index (same rank as self, int64), src (self's dtype and the
/// index's shape). `unique`: the index holds distinct values, so it cannot have more
/// elements than self's size along dim.
OpSpec& scatterLike(OpCatalog& c, std::string name, std::string python, std::string aten, bool unique,
                    DTypeSet accepts) {
  OpSpec s = base(std::move(name), "indexing", std::move(python), std::move(aten), {accepts, only(DType::Int64), accepts});
  s.minInputs = s.maxInputs = 3;
  s.minRank = 1;
  s.uniqueIndex = unique;
  s.attrs = {dimAttr()};
  s.sample = [](OpContext& ctx, Rng& rng) { ctx.attrs["dim"] = drawDim(rng, ctx.x().rank()); };
  s.propose = [unique](const OpContext& ctx, int k, Rng& rng) {
    const TensorType& x = ctx.x();
    int d = wrapDim(ctx.attrInt("dim"), x.rank());
    if (k == 1) {
      TensorType idx{std::vector<int64_t>(x.rank(), 1), DType::Int64};
      idx.shape[d] = rng.uniform(1, unique ? x.shape[d] : std::max<int64_t>(x.shape[d], 4));
      int64_t budget = unique ? x.shape[d] / idx.shape[d] : 1 << 10;  // other dims may grow within it
      for (int i = 0; i < x.rank(); ++i)
        if (i != d && rng.chance(0.6)) {
          idx.shape[i] = rng.uniform(1, std::max<int64_t>(1, std::min(x.shape[i], budget)));
          budget /= idx.shape[i];
        }
      return idx;
    }
    // src of the index's shape: a larger src is legal in forward, but backward gathers src's gradient
    // with the index and autograd refuses it ("ScatterBackward0 returned an invalid gradient").
    TensorType src = x;
    if (ctx.in.size() > 1 && ctx.x(1).rank() == x.rank()) src.shape = ctx.x(1).shape;
    return src;
  };
  s.need = [](const OpContext& ctx, int k) -> std::optional<Interval> {
    if (k == 1) return Interval{0, static_cast<double>(sizeAt(ctx.x(), ctx.attrInt("dim")) - 1)};
    return std::nullopt;
  };
  s.infer = [unique](const OpContext& ctx) {
    const TensorType &x = ctx.x(), &idx = ctx.x(1), &src = ctx.x(2);
    int d = wrapDim(ctx.attrInt("dim"), x.rank());
    require(idx.rank() == x.rank() && src.rank() == x.rank(), "index and src must have input 0's rank");
    require(src.dtype == x.dtype, "src must have input 0's dtype");
    for (int i = 0; i < x.rank(); ++i) {
      require(idx.shape[i] == src.shape[i], "src must have the index's shape (backward gathers its gradient by the index)");
      require(i == d || idx.shape[i] <= x.shape[i], "index may not be larger than input 0 outside dim");
    }
    require(!unique || idx.numel() <= x.shape[d], "distinct indices cannot outnumber the size of dim");
    return std::vector<TensorType>{x};
  };
  return c.add(std::move(s));
}

/// Number of index entries that can land on one output element of a scatter.
double collisions(const OpContext& ctx) { return static_cast<double>(sizeAt(ctx.x(1), ctx.attrInt("dim"))); }

/// "{out0} = {0}.<method>({1})": in place, other broadcast to self, no promotion of self.
OpSpec& inplaceBinary(OpCatalog& c, const std::string& method, std::string aten, DTypeSet self, DTypeSet other,
                      std::function<Interval(Interval, Interval)> range, Interval needOther = {}) {
  OpSpec s = base(method, "inplace", "stmt:{out0} = {0}." + method + "({1})", std::move(aten), {self, other});
  s.minInputs = s.maxInputs = 2;
  s.inplace = true;
  if (!(needOther == Interval{})) s.needs = {kAnything, needOther};
  s.propose = [](const OpContext& ctx, int, Rng& rng) {
    TensorType t = ctx.x();
    t.shape = broadcastableTo(t.shape, rng);
    if (rng.chance(0.3)) t.dtype = sameCategory(t.dtype, rng);
    return t;
  };
  s.infer = [](const OpContext& ctx) {
    requireBroadcastsTo(ctx.x(1), ctx.x(), "the other operand of an in-place op");
    require(writeCategory(ctx.x(1).dtype) <= writeCategory(ctx.x().dtype), "an in-place op cannot promote input 0's dtype");
    return std::vector<TensorType>{ctx.x()};
  };
  s.range = [range](const OpContext& ctx) {
    return std::vector<Interval>{castRange(range(ctx.ranges[0], ctx.ranges[1]), ctx.x().dtype)};
  };
  return c.add(std::move(s));
}

/// "{out0} = {0}.<call>": in place on input 0 alone.
OpSpec& inplaceUnary(OpCatalog& c, std::string name, std::string call, std::string aten, DTypeSet accepts,
                     std::function<Interval(const OpContext&)> range) {
  OpSpec s = base(std::move(name), "inplace", "stmt:{out0} = {0}." + call, std::move(aten), {accepts});
  s.inplace = true;
  s.infer = [](const OpContext& ctx) { return std::vector<TensorType>{ctx.x()}; };
  s.range = [range](const OpContext& ctx) { return std::vector<Interval>{range(ctx)}; };
  return c.add(std::move(s));
}

/// index_add (out of place, or in place as index_add_): rows of input 2 added, times alpha, at the
/// 1-d index's positions along dim (duplicates accumulate).
OpSpec& indexAdd(OpCatalog& c, const std::string& name, const std::string& python) {
  OpSpec s = base(name, "indexing", python,
                  "aten::index_add({0}, {dim}, {1}, {2}, {alpha})", {kNumeric, only(DType::Int64), kNumeric});
  s.minInputs = s.maxInputs = 3;
  s.minRank = 1;
  s.attrs = {dimAttr(), intAttr("alpha", -2, 2)};
  s.sample = [](OpContext& ctx, Rng& rng) { ctx.attrs["dim"] = drawDim(rng, ctx.x().rank()); };
  s.propose = [](const OpContext& ctx, int k, Rng& rng) {
    if (k == 1) return TensorType{{rng.uniform(1, 6)}, DType::Int64};
    TensorType t = ctx.x();
    t.shape[wrapDim(ctx.attrInt("dim"), t.rank())] = ctx.in.size() > 1 && ctx.x(1).rank() == 1 ? ctx.x(1).shape[0] : 1;
    return t;
  };
  s.need = [](const OpContext& ctx, int k) -> std::optional<Interval> {
    if (k == 1) return Interval{0, static_cast<double>(sizeAt(ctx.x(), ctx.attrInt("dim")) - 1)};
    return std::nullopt;
  };
  s.infer = [](const OpContext& ctx) {
    const TensorType &x = ctx.x(), &idx = ctx.x(1), &src = ctx.x(2);
    int d = wrapDim(ctx.attrInt("dim"), x.rank());
    require(idx.rank() == 1, "the index must be 1-d");
    require(src.dtype == x.dtype, "source must have input 0's dtype");
    TensorType expected = x;
    expected.shape[d] = idx.shape[0];
    require(src.shape == expected.shape, "source must have input 0's shape with dim resized to the index length");
    return std::vector<TensorType>{x};
  };
  s.range = [](const OpContext& ctx) {
    Interval added = scaleI(ctx.ranges[2], static_cast<double>(ctx.attrInt("alpha")));
    return std::vector<Interval>{accumulateRange(ctx.ranges[0], added, static_cast<double>(ctx.x(1).shape[0]))};
  };
  return c.add(std::move(s));
}

}  // namespace

void addIndexingOps(OpCatalog& c) {
  // --- indexing writes -----------------------------------------------------------------------------
  indexPut(c, "index_add_assign", "stmt:{out0} = {0}.clone()\n{out0}[{1}] += {2}", false);
  indexPut(c, "index_put_accumulate", "{0}.clone().index_put_(({1},), {2}, accumulate=True)", true);
  // The same writes in place (the emitter's in-place rule clones input 0 unless nothing else reads it):
  // assignment through advanced indexing with distinct indices, and index_put_ accumulating duplicates.
  indexPut(c, "index_assign", "stmt:{out0} = {0}\n{out0}[{1}] = {2}", false).inplace = true;
  indexPut(c, "index_put_", "{0}.index_put_(({1},), {2}, accumulate=True)", true).inplace = true;
  indexAdd(c, "index_add", "torch.index_add({0}, {dim}, {1}, {2}, alpha={alpha})");
  indexAdd(c, "index_add_", "{0}.index_add_({dim}, {1}, {2}, alpha={alpha})").inplace = true;
  for (auto [name, python] : {std::pair{"scatter", "torch.scatter({0}, {dim}, {1}, {2})"},
                              std::pair{"scatter_", "{0}.scatter_({dim}, {1}, {2})"}}) {
    auto& s = scatterLike(c, name, python, "aten::scatter.src({0}, {dim}, {1}, {2})", true, kAllDTypes);
    s.inplace = std::string(name).ends_with("_");
    s.range = [](const OpContext& ctx) { return std::vector<Interval>{unionI(ctx.ranges[0], ctx.ranges[2])}; };
  }
  for (auto [name, python] : {std::pair{"scatter_add", "torch.scatter_add({0}, {dim}, {1}, {2})"},
                              std::pair{"scatter_add_", "{0}.scatter_add_({dim}, {1}, {2})"}}) {
    auto& s = scatterLike(c, name, python, "aten::scatter_add({0}, {dim}, {1}, {2})", false, kNumeric);
    s.inplace = std::string(name).ends_with("_");
    s.range = [](const OpContext& ctx) {
      return std::vector<Interval>{accumulateRange(ctx.ranges[0], ctx.ranges[2], collisions(ctx))};
    };
  }
  {
    auto& s = scatterLike(c, "scatter_reduce",
                          "torch.scatter_reduce({0}, {dim}, {1}, {2}, reduce={reduce}, include_self={include_self})",
                          "aten::scatter_reduce.two({0}, {dim}, {1}, {2}, {reduce}, {include_self})", false, kNumeric);
    s.attrs.push_back(choiceAttr("reduce", {"sum", "prod", "mean", "amax", "amin"}));
    s.attrs.push_back(boolAttr("include_self"));
    // Products stay bounded with both operands in [-1, 1].
    s.need = [scatterNeed = s.need](const OpContext& ctx, int k) -> std::optional<Interval> {
      if (k == 1) return scatterNeed(ctx, k);
      if (ctx.attrStr("reduce") == "prod") return kUnit;
      return std::nullopt;
    };
    s.range = [](const OpContext& ctx) {
      std::string reduce = ctx.attrStr("reduce");
      Interval self = ctx.ranges[0], src = ctx.ranges[2];
      double n = collisions(ctx);
      if (reduce == "sum") return std::vector<Interval>{accumulateRange(self, src, n)};
      if (reduce == "prod") return std::vector<Interval>{prodRangeOf(unionI(self, src), n + 1)};
      return std::vector<Interval>{unionI(self, src)};
    };
  }
  {
    // x[:, start:end] = src (slice_scatter); the source is converted to input 0's dtype.
    OpSpec s = base("setitem_slice", "indexing",
                    "stmt:{out0} = {0}\n{out0}[(slice(None),) * {dim} + (slice({start}, {end}),)] = {1}",
                    "aten::slice_scatter({0}, {1}, {dim}, {start}, {end}, 1)", {kAllDTypes});
    s.minInputs = s.maxInputs = 2;
    s.minRank = 1;
    s.inplace = true;
    s.attrs = {intAttr("dim", 0, 7), intAttr("start", 0, 64), intAttr("end", 1, 64)};
    s.sample = [](OpContext& ctx, Rng& rng) { drawSliceAttrs(ctx, rng); };
    s.constraints = intConstraints([](const auto& e) {
      int d = static_cast<int>(std::min<int64_t>(e.fixed("dim"), e.rank(0) - 1));
      return std::vector{e.attr("start") + 1 <= e.attr("end"), e.attr("end") <= e.dim(0, d)};
    });
    s.propose = [](const OpContext& ctx, int, Rng& rng) {
      TensorType t = ctx.x();
      // The attributes may not fit input 0 yet (a mutant's new rank): then the shape rule says why.
      int64_t dim = ctx.attrInt("dim");
      if (dim >= 0 && dim < t.rank()) t.shape[static_cast<size_t>(dim)] = std::max<int64_t>(ctx.attrInt("end") - ctx.attrInt("start"), 0);
      if (rng.chance(0.2)) t.dtype = rng.pick(std::vector<DType>{DType::Float32, DType::Int64, DType::Bool});
      return t;
    };
    s.need = [](const OpContext& ctx, int k) { return k == 1 ? castNeed(ctx.x().dtype) : std::nullopt; };
    s.infer = [](const OpContext& ctx) {
      const TensorType &x = ctx.x(), &src = ctx.x(1);
      int64_t d = ctx.attrInt("dim"), start = ctx.attrInt("start"), end = ctx.attrInt("end");
      require(d < x.rank(), "dim must be below input 0's rank");
      require(start < end && end <= x.shape[d], "the slice must be a non-empty part of dim");
      TensorType expected = x;
      expected.shape[d] = end - start;
      require(src.shape == expected.shape, "the source must have the slice's shape");
      return std::vector<TensorType>{x};
    };
    s.range = [](const OpContext& ctx) {
      return std::vector<Interval>{unionI(ctx.ranges[0], castRange(ctx.ranges[1], ctx.x().dtype))};
    };
    c.add(std::move(s));
  }

  // --- in-place ops --------------------------------------------------------------------------------
  inplaceBinary(c, "add_", "aten::add_.Tensor({0}, {1}, 1)", kNumeric, kAllDTypes, addI);
  inplaceBinary(c, "sub_", "aten::sub_.Tensor({0}, {1}, 1)", kNumeric, kNumeric, subI);
  inplaceBinary(c, "mul_", "aten::mul_.Tensor({0}, {1})", kNumeric, kAllDTypes, mulI);
  inplaceBinary(c, "div_", "aten::div_.Tensor({0}, {1})", kFloats, kNumeric,
                [](Interval a, Interval b) { return mulI(a, {1 / b.hi, 1 / b.lo}); }, kPositive);
  {
    // copy_ converts any dtype to self's.
    auto& s = inplaceBinary(c, "copy_", "aten::copy_({0}, {1}, False)", kAllDTypes, kAllDTypes,
                            [](Interval, Interval src) { return src; });
    s.propose = [](const OpContext& ctx, int, Rng& rng) {
      TensorType t = ctx.x();
      t.shape = broadcastableTo(t.shape, rng);
      if (rng.chance(0.3)) t.dtype = rng.pick(std::vector<DType>{DType::Float32, DType::Float64, DType::Int64, DType::Bool});
      return t;
    };
    s.infer = [](const OpContext& ctx) {
      requireBroadcastsTo(ctx.x(1), ctx.x(), "the source of copy_");
      return std::vector<TensorType>{ctx.x()};
    };
    s.need = [](const OpContext& ctx, int k) { return k == 1 ? castNeed(ctx.x().dtype) : std::nullopt; };
  }
  {
    auto& s = inplaceUnary(c, "clamp_", "clamp_({min}, {max})", "aten::clamp_({0}, {min}, {max})", kFloats,
                           [](const OpContext& ctx) {
                             double lo = ctx.attrFloat("min"), hi = ctx.attrFloat("max");
                             Interval r = ctx.ranges[0];
                             return Interval{std::clamp(r.lo, lo, hi), std::clamp(r.hi, lo, hi)};
                           });
    s.attrs = {floatAttr("min", -4, 0), floatAttr("max", 0.01, 4)};
  }
  inplaceUnary(c, "relu_", "relu_()", "aten::relu_({0})", kNumeric, [](const OpContext& ctx) {
    return Interval{std::max(ctx.ranges[0].lo, 0.0), std::max(ctx.ranges[0].hi, 0.0)};
  });
  inplaceUnary(c, "sigmoid_", "sigmoid_()", "aten::sigmoid_({0})", kFloats, [](const OpContext&) { return kProbability; });
  inplaceUnary(c, "zero_", "zero_()", "aten::zero_({0})", kAllDTypes, [](const OpContext&) { return Interval{0, 0}; });
  inplaceUnary(c, "fill_", "fill_({value})", "aten::fill_.Scalar({0}, {value})", kAllDTypes, [](const OpContext& ctx) {
    double v = ctx.attrFloat("value");
    return castRange({v, v}, ctx.x().dtype);
  }).attrs = {floatAttr("value", -3, 3)};
  {
    OpSpec s = base("masked_fill_", "inplace", "stmt:{out0} = {0}.masked_fill_({1}, {value})",
                    "aten::masked_fill_.Scalar({0}, {1}, {value})", {kAllDTypes, only(DType::Bool)});
    s.minInputs = s.maxInputs = 2;
    s.inplace = true;
    s.attrs = {floatAttr("value", -3, 3)};
    s.propose = [](const OpContext& ctx, int, Rng& rng) {
      return TensorType{broadcastableTo(ctx.x().shape, rng), DType::Bool};
    };
    s.infer = [](const OpContext& ctx) {
      requireBroadcastsTo(ctx.x(1), ctx.x(), "the mask of masked_fill_");
      return std::vector<TensorType>{ctx.x()};
    };
    s.range = [](const OpContext& ctx) {
      double v = ctx.attrFloat("value");
      return std::vector<Interval>{unionI(ctx.ranges[0], castRange({v, v}, ctx.x().dtype))};
    };
    c.add(std::move(s));
  }
}

}  // namespace tcfuzz::gen
