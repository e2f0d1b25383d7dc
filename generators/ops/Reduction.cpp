// Reductions (sum, mean, var, norms, arg-reductions, all/any), cumulative scans, sort and top-k.
// Dim lists are never empty here: torch gives an empty list op-dependent meanings (sum: every
// dim, all: none), so the samplers avoid it and the shape rules reject it.
#include <algorithm>
#include <numeric>

#include "generators/ops/Common.h"

namespace tcfuzz::gen {
namespace {

using namespace ops;

/// How a reduction's output dtype follows its input.
enum class ReduceOut {
  Same,        // amax, max.dim values, sort values
  Accumulate,  // sum, prod, cumsum: ints and bool accumulate in int64
  FloatOnly,   // mean, var, norm: float inputs only, same dtype out
  FloatOut,    // logsumexp: ints and bool give float32
  Bool,        // all, any
  Int64,       // argmax, count_nonzero
};

DType reduceOutDType(ReduceOut rule, DType in) {
  switch (rule) {
    case ReduceOut::Same: return in;
    case ReduceOut::Accumulate: return isFloat(in) ? in : DType::Int64;
    case ReduceOut::FloatOnly:
      require(isFloat(in), "this reduction takes floating-point inputs only");
      return in;
    case ReduceOut::FloatOut: return floatResult(in);
    case ReduceOut::Bool: return DType::Bool;
    case ReduceOut::Int64: return DType::Int64;
  }
  return in;
}

/// The wrapped dims of a non-empty dim list; ShapeError on an empty list or a repeated dim.
std::vector<int> wrapDims(const std::vector<int64_t>& dims, int rank) {
  require(!dims.empty(), "the dim list must not be empty");
  std::vector<int> out;
  for (int64_t d : dims) {
    int w = wrapDim(d, rank);
    require(std::find(out.begin(), out.end(), w) == out.end(), fmt::format("dim {} appears twice in the dim list", w));
    out.push_back(w);
  }
  return out;
}

/// Input shape with `dims` reduced (kept as size 1 under keepdim). A 0-d input stays 0-d.
std::vector<int64_t> reducedShape(const std::vector<int64_t>& shape, const std::vector<int>& dims, bool keepdim) {
  std::vector<int64_t> out;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    bool reduced = std::find(dims.begin(), dims.end(), i) != dims.end();
    if (!reduced) out.push_back(shape[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

/// Number of elements each output element reduces over (1 for a 0-d input).
double reducedCount(const std::vector<int64_t>& shape, const std::vector<int>& dims) {
  double n = 1;
  for (int d : dims)
    if (d < static_cast<int>(shape.size())) n *= static_cast<double>(shape[d]);
  return n;
}

/// Dims of a dim list attribute, wrapped.
std::vector<int> listDims(const OpContext& ctx) { return wrapDims(ctx.attrInts("dim"), ctx.x().rank()); }
/// The single dim attribute, wrapped, as a list.
std::vector<int> oneDim(const OpContext& ctx) { return {wrapDim(ctx.attrInt("dim"), ctx.x().rank())}; }
/// Size of the single reduced dim (1 for a 0-d input).
double dimSize(const OpContext& ctx) { return reducedCount(ctx.x().shape, oneDim(ctx)); }

/// A non-empty list of distinct dims of a rank-`rank` tensor, some written negative.
std::vector<int64_t> drawDims(Rng& rng, int rank) {
  if (rank == 0) return {rng.chance(0.5) ? 0 : -1};
  std::vector<int64_t> all(rank);
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng.engine());
  all.resize(static_cast<size_t>(rng.uniform(1, rank)));
  for (auto& d : all)
    if (rng.chance(0.3)) d -= rank;
  return all;
}

/// Index outputs lie in [0, n - 1].
Interval indexRange(double n) { return {0, n - 1}; }

/// |product| of n factors each in `a`.
Interval prodRange(Interval a, double n) {
  double m = a.magnitude();
  double bound = m <= 1 ? m : std::pow(m, n);
  return a.lo >= 0 ? Interval{0, bound} : symmetric(bound);
}

/// Prefix sums of up to n terms in `a`.
Interval prefixSumRange(Interval a, double n) { return unionI(a, sumI(a, n)); }

/// Ranges from the input range and the count of reduced elements.
using RangeRule = std::function<std::vector<Interval>(const OpContext&, Interval, double n)>;

OpSpec base(std::string name, std::string family, std::string python, std::string aten, DTypeSet accepts) {
  return entry(std::move(name), std::move(family), std::move(python), std::move(aten), accepts);
}

/// A reduction over a dim list attribute "dim" with "keepdim" (plus `extra` attributes).
OpSpec& reduceList(OpCatalog& c, std::string name, std::string python, std::string aten, DTypeSet accepts, ReduceOut out,
                   RangeRule range, int outputs = 1, std::vector<AttrSpec> extra = {}) {
  OpSpec s = base(std::move(name), "reduction", std::move(python), std::move(aten), accepts);
  s.attrs = {intListAttr("dim", -8, 7), boolAttr("keepdim")};
  s.attrs.insert(s.attrs.end(), extra.begin(), extra.end());
  s.sample = [](OpContext& ctx, Rng& rng) { ctx.attrs["dim"] = drawDims(rng, ctx.x().rank()); };
  s.infer = [out, outputs](const OpContext& ctx) {
    TensorType t = ctx.x();
    t.shape = reducedShape(t.shape, listDims(ctx), ctx.attrBool("keepdim"));
    t.dtype = reduceOutDType(out, t.dtype);
    return std::vector<TensorType>(outputs, t);
  };
  s.range = [range](const OpContext& ctx) { return range(ctx, ctx.ranges.at(0), reducedCount(ctx.x().shape, listDims(ctx))); };
  return c.add(std::move(s));
}

/// A reduction over one dim attribute "dim" with "keepdim". `outs` gives the dtype rule of each
/// output (max.dim: values and int64 indices).
OpSpec& reduceOne(OpCatalog& c, std::string name, std::string python, std::string aten, DTypeSet accepts,
                  std::vector<ReduceOut> outs, RangeRule range, std::vector<AttrSpec> extra = {}) {
  OpSpec s = base(std::move(name), "reduction", std::move(python), std::move(aten), accepts);
  s.attrs = {dimAttr(), boolAttr("keepdim")};
  s.attrs.insert(s.attrs.end(), extra.begin(), extra.end());
  s.sample = [](OpContext& ctx, Rng& rng) { ctx.attrs["dim"] = drawDim(rng, ctx.x().rank()); };
  s.infer = [outs](const OpContext& ctx) {
    std::vector<TensorType> result;
    for (ReduceOut o : outs) {
      TensorType t = ctx.x();
      t.shape = reducedShape(t.shape, oneDim(ctx), ctx.attrBool("keepdim"));
      t.dtype = reduceOutDType(o, t.dtype);
      result.push_back(t);
    }
    return result;
  };
  s.range = [range](const OpContext& ctx) { return range(ctx, ctx.ranges.at(0), dimSize(ctx)); };
  return c.add(std::move(s));
}

/// An op along one dim attribute "dim" keeping the input's shape (scans, sort); `outs` as in reduceOne.
OpSpec& alongDim(OpCatalog& c, std::string name, std::string family, std::string python, std::string aten,
                 DTypeSet accepts, std::vector<ReduceOut> outs, RangeRule range, std::vector<AttrSpec> extra = {}) {
  OpSpec s = base(std::move(name), std::move(family), std::move(python), std::move(aten), accepts);
  s.attrs = {dimAttr()};
  s.attrs.insert(s.attrs.end(), extra.begin(), extra.end());
  s.sample = [](OpContext& ctx, Rng& rng) { ctx.attrs["dim"] = drawDim(rng, ctx.x().rank()); };
  s.infer = [outs](const OpContext& ctx) {
    oneDim(ctx);  // validates the dim
    std::vector<TensorType> result;
    for (ReduceOut o : outs) result.push_back(like(ctx.x(), reduceOutDType(o, ctx.x().dtype))[0]);
    return result;
  };
  s.range = [range](const OpContext& ctx) { return range(ctx, ctx.ranges.at(0), dimSize(ctx)); };
  return c.add(std::move(s));
}

/// Adds the attribute "k" in [1, size(dim)] to a one-dim op of rank >= 1 (kthvalue, topk).
void withK(OpSpec& s) {
  s.minRank = std::max(s.minRank, 1);
  auto sampleDim = s.sample;
  s.sample = [sampleDim](OpContext& ctx, Rng& rng) {
    sampleDim(ctx, rng);
    ctx.attrs["k"] = rng.uniform(1, ctx.x().shape[wrapDim(ctx.attrInt("dim"), ctx.x().rank())]);
  };
  s.constraints = intConstraints([](const auto& e) {
    int d = wrapDim(e.fixed("dim"), e.rank(0));
    return std::vector{e.attr("k") >= 1, e.attr("k") <= e.dim(0, d)};
  });
  auto infer = s.infer;
  s.infer = [infer](const OpContext& ctx) {
    int64_t k = ctx.attrInt("k");
    require(k >= 1 && k <= ctx.x().shape[wrapDim(ctx.attrInt("dim"), ctx.x().rank())], "k must lie in [1, size(dim)]");
    return infer(ctx);
  };
}

}  // namespace

void addReductionOps(OpCatalog& c) {
  auto same = [](const OpContext&, Interval a, double) { return std::vector<Interval>{a}; };
  auto sum = [](const OpContext&, Interval a, double n) { return std::vector<Interval>{sumI(a, n)}; };
  auto valuesAndIndex = [](const OpContext&, Interval a, double n) { return std::vector<Interval>{a, indexRange(n)}; };
  auto index = [](const OpContext&, Interval, double n) { return std::vector<Interval>{indexRange(n)}; };
  auto boolean = [](const OpContext&, Interval, double) { return std::vector<Interval>{{0, 1}}; };
  auto logSumExp = [](const OpContext&, Interval a, double n) { return std::vector<Interval>{{a.lo, a.hi + std::log(n)}}; };
  // Variance of values in [lo, hi] is at most (hi - lo)^2 / 4 * n / (n - 1) <= (hi - lo)^2 / 2.
  auto var = [](const OpContext&, Interval a, double) { return std::vector<Interval>{{0, (a.hi - a.lo) * (a.hi - a.lo)}}; };
  auto stdev = [](const OpContext&, Interval a, double) { return std::vector<Interval>{{0, a.hi - a.lo}}; };

  // --- reductions over a dim list -----------------------------------------------------------------
  reduceList(c, "sum", "torch.sum({0}, {dim}, keepdim={keepdim})", "aten::sum.dim_IntList({0}, {dim}, {keepdim}, None)",
             kAllDTypes, ReduceOut::Accumulate, sum);
  reduceList(c, "nansum", "torch.nansum({0}, {dim}, keepdim={keepdim})", "aten::nansum({0}, {dim}, {keepdim}, None)",
             kAllDTypes, ReduceOut::Accumulate, sum);
  reduceList(c, "mean", "torch.mean({0}, {dim}, keepdim={keepdim})", "aten::mean.dim({0}, {dim}, {keepdim}, None)",
             kFloats, ReduceOut::FloatOnly, same);
  // Reductions of values rounded to a 16-bit float first, the result widened back (family
  // "precision"): the rounding before the reduction is the program's, and compiled code must keep it.
  for (const char* narrow : {"float16", "bfloat16"}) {
    std::string n = narrow;
    for (const char* op : {"sum", "mean"}) {
      std::string o = op;
      auto& s = reduceList(c, o + "_in_" + n, "torch." + o + "({0}.to(torch." + n + "), {dim}, keepdim={keepdim}).to({0}.dtype)",
                           "aten::" + o + (o == "sum" ? ".dim_IntList" : ".dim") + "({0}, {dim}, {keepdim}, None)",
                           only(DType::Float32) | only(DType::Float64), ReduceOut::Same, nullptr);
      s.family = "precision";
      // float16 holds at most 65504: the inputs stay small enough that the sum does too.
      if (n == "float16")
        s.need = [](const OpContext& ctx, int) -> std::optional<Interval> {
          double count = std::max(1.0, reducedCount(ctx.x().shape, listDims(ctx)));
          return Interval{-3e4 / count, 3e4 / count};
        };
      bool mean = o == "mean";
      s.range = [mean](const OpContext& ctx) {
        Interval a = ctx.ranges.at(0);
        double slack = a.magnitude() / 128;  // each element's rounding
        a = {a.lo - slack, a.hi + slack};
        Interval r = mean ? a : sumI(a, reducedCount(ctx.x().shape, listDims(ctx)));
        double m = r.magnitude() / 128;  // the result's rounding
        return std::vector<Interval>{{r.lo - m, r.hi + m}};
      };
    }
  }
  reduceList(c, "amax", "torch.amax({0}, {dim}, keepdim={keepdim})", "aten::amax({0}, {dim}, {keepdim})", kAllDTypes,
             ReduceOut::Same, same);
  reduceList(c, "amin", "torch.amin({0}, {dim}, keepdim={keepdim})", "aten::amin({0}, {dim}, {keepdim})", kAllDTypes,
             ReduceOut::Same, same);
  reduceList(c, "logsumexp", "torch.logsumexp({0}, {dim}, keepdim={keepdim})", "aten::logsumexp({0}, {dim}, {keepdim})",
             kAllDTypes, ReduceOut::FloatOut, logSumExp);
  {
    // count_nonzero has no keepdim.
    OpSpec s = base("count_nonzero", "reduction", "torch.count_nonzero({0}, {dim})",
                    "aten::count_nonzero.dim_IntList({0}, {dim})", kAllDTypes);
    s.attrs = {intListAttr("dim", -8, 7)};
    s.sample = [](OpContext& ctx, Rng& rng) { ctx.attrs["dim"] = drawDims(rng, ctx.x().rank()); };
    s.infer = [](const OpContext& ctx) {
      TensorType t = ctx.x();
      t.shape = reducedShape(t.shape, listDims(ctx), false);
      t.dtype = DType::Int64;
      return std::vector<TensorType>{t};
    };
    s.range = [](const OpContext& ctx) {
      return std::vector<Interval>{{0, reducedCount(ctx.x().shape, listDims(ctx))}};
    };
    c.add(std::move(s));
  }
  // var/std with correction 0 or 1; correction 1 needs two reduced elements (else NaN).
  auto correction = [](OpSpec& s) {
    auto infer = s.infer;
    s.infer = [infer](const OpContext& ctx) {
      int64_t corr = ctx.attrInt("correction");
      require(corr == 0 || reducedCount(ctx.x().shape, listDims(ctx)) >= 2,
              "correction 1 needs at least two reduced elements");
      return infer(ctx);
    };
  };
  AttrSpec corr = intAttr("correction", 0, 1);
  correction(reduceList(c, "var", "torch.var({0}, {dim}, correction={correction}, keepdim={keepdim})",
                        "aten::var.correction({0}, {dim}, {correction}, {keepdim})", kFloats, ReduceOut::FloatOnly, var, 1,
                        {corr}));
  correction(reduceList(c, "std", "torch.std({0}, {dim}, correction={correction}, keepdim={keepdim})",
                        "aten::std.correction({0}, {dim}, {correction}, {keepdim})", kFloats, ReduceOut::FloatOnly, stdev, 1,
                        {corr}));
  correction(reduceList(
      c, "var_mean", "torch.var_mean({0}, {dim}, correction={correction}, keepdim={keepdim})",
      "aten::var_mean.correction({0}, {dim}, {correction}, {keepdim})", kFloats, ReduceOut::FloatOnly,
      [var](const OpContext& ctx, Interval a, double n) { return std::vector<Interval>{var(ctx, a, n)[0], a}; }, 2,
      {corr}));
  correction(reduceList(
      c, "std_mean", "torch.std_mean({0}, {dim}, correction={correction}, keepdim={keepdim})",
      "aten::std_mean.correction({0}, {dim}, {correction}, {keepdim})", kFloats, ReduceOut::FloatOnly,
      [stdev](const OpContext& ctx, Interval a, double n) { return std::vector<Interval>{stdev(ctx, a, n)[0], a}; }, 2,
      {corr}));
  {
    // ord in {0, 0.5, 1, 2, 3}; ord 0 counts the nonzero elements.
    auto& s = reduceList(
        c, "vector_norm", "torch.linalg.vector_norm({0}, {ord}, {dim}, keepdim={keepdim})",
        "aten::linalg_vector_norm({0}, {ord}, {dim}, {keepdim}, None)", kFloats, ReduceOut::FloatOnly,
        [](const OpContext& ctx, Interval a, double n) {
          double ord = ctx.attrFloat("ord");
          return std::vector<Interval>{{0, ord == 0 ? n : a.magnitude() * std::pow(n, 1 / ord)}};
        },
        1, {floatAttr("ord", 0, 3)});
    auto sampleDims = s.sample;
    s.sample = [sampleDims](OpContext& ctx, Rng& rng) {
      sampleDims(ctx, rng);
      ctx.attrs["ord"] = rng.pick(std::vector<double>{0, 0.5, 1, 2, 2, 3});
    };
  }

  // --- reductions of the whole tensor --------------------------------------------------------------
  auto whole = [&c](std::string name, std::string python, std::string aten, DTypeSet accepts, ReduceOut out, RangeRule range) {
    OpSpec s = base(std::move(name), "reduction", std::move(python), std::move(aten), accepts);
    s.infer = [out](const OpContext& ctx) {
      TensorType t = ctx.x();
      t.shape.clear();
      t.dtype = reduceOutDType(out, t.dtype);
      return std::vector<TensorType>{t};
    };
    s.range = [range](const OpContext& ctx) { return range(ctx, ctx.ranges.at(0), numelOf(ctx)); };
    c.add(std::move(s));
  };
  whole("sum_all", "torch.sum({0})", "aten::sum({0}, None)", kAllDTypes, ReduceOut::Accumulate, sum);
  whole("mean_all", "torch.mean({0})", "aten::mean({0}, None)", kFloats, ReduceOut::FloatOnly, same);
  whole("max_all", "torch.max({0})", "aten::max({0})", kAllDTypes, ReduceOut::Same, same);
  whole("min_all", "torch.min({0})", "aten::min({0})", kAllDTypes, ReduceOut::Same, same);

  // --- reductions over one dim -------------------------------------------------------------------
  reduceOne(c, "max_dim", "torch.max({0}, {dim}, keepdim={keepdim})", "aten::max.dim({0}, {dim}, {keepdim})", kAllDTypes,
            {ReduceOut::Same, ReduceOut::Int64}, valuesAndIndex);
  reduceOne(c, "min_dim", "torch.min({0}, {dim}, keepdim={keepdim})", "aten::min.dim({0}, {dim}, {keepdim})", kAllDTypes,
            {ReduceOut::Same, ReduceOut::Int64}, valuesAndIndex);
  reduceOne(c, "aminmax", "torch.aminmax({0}, dim={dim}, keepdim={keepdim})", "aten::aminmax({0}, {dim}, {keepdim})",
            kAllDTypes, {ReduceOut::Same, ReduceOut::Same}, [](const OpContext&, Interval a, double) { return std::vector{a, a}; });
  reduceOne(c, "argmax", "torch.argmax({0}, dim={dim}, keepdim={keepdim})", "aten::argmax({0}, {dim}, {keepdim})",
            kNumeric, {ReduceOut::Int64}, index);
  reduceOne(c, "argmin", "torch.argmin({0}, dim={dim}, keepdim={keepdim})", "aten::argmin({0}, {dim}, {keepdim})",
            kNumeric, {ReduceOut::Int64}, index);
  // Inputs in [-1, 1] keep products bounded.
  reduceOne(c, "prod", "torch.prod({0}, {dim}, keepdim={keepdim})", "aten::prod.dim_int({0}, {dim}, {keepdim}, None)",
            kAllDTypes, {ReduceOut::Accumulate},
            [](const OpContext&, Interval a, double n) { return std::vector<Interval>{prodRange(a, n)}; })
      .needs = {kUnit};
  reduceOne(c, "all", "torch.all({0}, {dim}, keepdim={keepdim})", "aten::all.dim({0}, {dim}, {keepdim})", kAllDTypes,
            {ReduceOut::Bool}, boolean);
  reduceOne(c, "any", "torch.any({0}, {dim}, keepdim={keepdim})", "aten::any.dim({0}, {dim}, {keepdim})", kAllDTypes,
            {ReduceOut::Bool}, boolean);
  // Values only: the indices of ties are unspecified.
  reduceOne(c, "median_dim", "torch.median({0}, {dim}, keepdim={keepdim}).values",
            "aten::median.dim({0}, {dim}, {keepdim})", kNumeric, {ReduceOut::Same}, same);
  withK(reduceOne(c, "kthvalue", "torch.kthvalue({0}, {k}, {dim}, keepdim={keepdim}).values",
                  "aten::kthvalue({0}, {k}, {dim}, {keepdim})", kNumeric, {ReduceOut::Same}, same, {intAttr("k", 1, 64)}));

  // --- scans ---------------------------------------------------------------------------------------
  alongDim(c, "cumsum", "scan", "torch.cumsum({0}, {dim})", "aten::cumsum({0}, {dim}, None)", kAllDTypes,
           {ReduceOut::Accumulate}, [](const OpContext&, Interval a, double n) { return std::vector{prefixSumRange(a, n)}; });
  alongDim(c, "cumprod", "scan", "torch.cumprod({0}, {dim})", "aten::cumprod({0}, {dim}, None)", kAllDTypes,
           {ReduceOut::Accumulate}, [](const OpContext&, Interval a, double n) { return std::vector{unionI(a, prodRange(a, n))}; })
      .needs = {kUnit};
  alongDim(c, "cummax", "scan", "torch.cummax({0}, {dim})", "aten::cummax({0}, {dim})", kAllDTypes,
           {ReduceOut::Same, ReduceOut::Int64}, valuesAndIndex);
  alongDim(c, "cummin", "scan", "torch.cummin({0}, {dim})", "aten::cummin({0}, {dim})", kAllDTypes,
           {ReduceOut::Same, ReduceOut::Int64}, valuesAndIndex);
  alongDim(c, "logcumsumexp", "scan", "torch.logcumsumexp({0}, {dim})", "aten::logcumsumexp({0}, {dim})", kFloats,
           {ReduceOut::Same}, logSumExp);

  // --- sorting -------------------------------------------------------------------------------------
  // Stable sorts: the order of ties is defined, so the indices are comparable.
  alongDim(c, "sort", "sort", "torch.sort({0}, dim={dim}, descending={descending}, stable=True)",
           "aten::sort.stable({0}, True, {dim}, {descending})", kAllDTypes, {ReduceOut::Same, ReduceOut::Int64}, valuesAndIndex,
           {boolAttr("descending")});
  alongDim(c, "argsort", "sort", "torch.argsort({0}, dim={dim}, descending={descending}, stable=True)",
           "aten::argsort.stable({0}, True, {dim}, {descending})", kAllDTypes, {ReduceOut::Int64}, index,
           {boolAttr("descending")});
  {
    // Values only (aten::topk also returns indices; the cross-check compares the first output).
    auto& s = alongDim(c, "topk", "sort", "torch.topk({0}, {k}, dim={dim}, largest={largest}).values",
                       "aten::topk({0}, {k}, {dim}, {largest}, True)", kNumeric, {ReduceOut::Same}, same,
                       {intAttr("k", 1, 64), boolAttr("largest")});
    withK(s);
    auto infer = s.infer;
    s.infer = [infer](const OpContext& ctx) {
      auto out = infer(ctx);
      out[0].shape[wrapDim(ctx.attrInt("dim"), ctx.x().rank())] = ctx.attrInt("k");
      return out;
    };
  }
}

}  // namespace tcfuzz::gen
