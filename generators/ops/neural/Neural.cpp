// Neural-network families: nn.Module layers with parameters, random ops and resampling here;
// linear algebra, convolutions and pooling, normalizations, losses and distances in the files
// NeuralCommon.h names. addNeuralOps registers them all, in catalog order.
#include <algorithm>

#include "generators/ops/neural/NeuralCommon.h"

namespace tcfuzz::gen {
namespace {

using namespace ops;
using nlohmann::json;

// --- random ops ---------------------------------------------------------------------------------

OpSpec& randomOp(OpCatalog& c, const std::string& name, const std::string& python, const std::string& aten,
                 std::function<Interval(const OpContext&)> range, DTypeSet accepts = kFloats) {
  OpSpec s = entry(name, "random", python, aten);
  s.accepts = {accepts};
  s.random = true;
  s.infer = [](const OpContext& ctx) { return like(ctx.x(), ctx.x().dtype); };
  s.range = [range](const OpContext& ctx) { return std::vector<Interval>{range(ctx)}; };
  return c.add(std::move(s));
}

void addRandomOps(OpCatalog& c) {
  // training=True: the model runs in eval(), where dropout would be the identity.
  auto& dropout = randomOp(c, "dropout", "F.dropout({0}, p={p}, training=True)", "aten::dropout({0}, {p}, True)",
                           [](const OpContext& ctx) {
                             Interval r = scaleI(ctx.ranges[0], 1 / (1 - ctx.attrFloat("p")));
                             return unionI(r, {0, 0});
                           });
  dropout.attrs = {floatAttr("p", 0, 0.8)};
  randomOp(c, "rand_like", "torch.rand_like({0})", "aten::rand_like({0})", [](const OpContext&) { return kProbability; });
  randomOp(c, "randn_like", "torch.randn_like({0})", "aten::randn_like({0})",
           [](const OpContext&) { return symmetric(10); });
  randomOp(c, "bernoulli", "torch.bernoulli({0})", "aten::bernoulli({0})", [](const OpContext&) { return kProbability; })
      .needs = {kProbability};
  // Negative inputs are scaled by a slope drawn in [1/8, 1/3].
  randomOp(
      c, "rrelu", "F.rrelu({0}, training=True)", "aten::rrelu({0}, 0.125, 0.3333333333333333, True)",
      [](const OpContext& ctx) {
        Interval r = ctx.ranges[0];
        return Interval{r.lo < 0 ? r.lo / 3 : r.lo, r.hi < 0 ? r.hi / 8 : r.hi};
      },
      only(DType::Float32) | only(DType::BFloat16) | only(DType::Float64));
}

// --- resampling ---------------------------------------------------------------------------------

void pixelShuffle(OpCatalog& c, bool up) {
  OpSpec s;
  std::string factor = up ? "upscale_factor" : "downscale_factor";
  s.name = up ? "pixel_shuffle" : "pixel_unshuffle";
  s.family = "resample";
  s.python = "F." + s.name + "({0}, {" + factor + "})";
  s.aten = "aten::" + s.name + "({0}, {" + factor + "})";
  s.accepts = {kAllDTypes};
  s.minRank = 3;
  s.maxRank = 5;
  s.attrs = {intAttr(factor, 1, 3)};
  s.sample = [up, factor](OpContext& ctx, Rng& rng) {
    const Shape& x = ctx.x().shape;
    int64_t c = x[x.size() - 3], h = x[x.size() - 2], w = x[x.size() - 1];
    std::vector<int64_t> fitting;
    for (int64_t r = 1; r <= 3; ++r)
      if (up ? c % (r * r) == 0 : h % r == 0 && w % r == 0) fitting.push_back(r);
    ctx.attrs[factor] = rng.pick(fitting);
  };
  if (up)
    s.constraints = intConstraints([](const auto& e) {
      auto r = e.attr("upscale_factor");
      return std::vector{e.dim(0, -3) % (r * r) == 0};
    });
  else
    s.constraints = intConstraints([](const auto& e) {
      auto r = e.attr("downscale_factor");
      return std::vector{e.dim(0, -2) % r == 0, e.dim(0, -1) % r == 0};
    });
  s.infer = [up, factor](const OpContext& ctx) {
    int64_t r = ctx.attrInt(factor);
    Shape out = ctx.x().shape;
    size_t n = out.size();
    if (up) {
      out[n - 3] /= r * r;
      out[n - 2] *= r;
      out[n - 1] *= r;
    } else {
      out[n - 3] *= r * r;
      out[n - 2] /= r;
      out[n - 1] /= r;
    }
    return single(ctx.x(), out, ctx.x().dtype);
  };
  c.add(std::move(s));
}

/// F.interpolate of a batched (N, C, *spatial) input to `size` or by integer `scale_factor`.
void interpolate(OpCatalog& c, const std::string& mode, int n) {
  OpSpec s;
  bool bilinear = mode == "bilinear";
  s.name = fmt::format("interpolate_{}{}", mode, bilinear ? "" : fmt::format("{}d", n));
  s.family = "resample";
  s.python = "F.interpolate({0}{?size}{?scale_factor}, mode='" + mode + "'" + (bilinear ? ", align_corners={align_corners})" : ")");
  s.aten = bilinear ? "aten::upsample_bilinear2d.vec({0}, {size}, {align_corners}, {scale_factor})"
                    : fmt::format("aten::upsample_nearest{}d.vec({{0}}, {{size}}, {{scale_factor}})", n);
  s.accepts = {kFloats};
  s.minRank = s.maxRank = n + 2;
  s.attrs = {optional(intListAttr("size", 1, 12)), optional(intListAttr("scale_factor", 1, 3))};
  if (bilinear) s.attrs.push_back(boolAttr("align_corners"));
  s.sample = [n](OpContext& ctx, Rng& rng) {
    Shape values;
    bool bySize = rng.chance(0.5);
    for (int i = 0; i < n; ++i) values.push_back(bySize ? rng.uniform(1, 8) : rng.uniform(1, 3));
    ctx.attrs["size"] = bySize ? json(values) : json();
    ctx.attrs["scale_factor"] = bySize ? json() : json(values);
  };
  s.infer = [n](const OpContext& ctx) {
    bool bySize = ctx.hasAttr("size");
    require(bySize != ctx.hasAttr("scale_factor"), "interpolate takes exactly one of size and scale_factor");
    requireLength(ctx, bySize ? "size" : "scale_factor", n);
    Shape out = ctx.x().shape;
    auto values = ctx.attrInts(bySize ? "size" : "scale_factor");
    for (int i = 0; i < n; ++i) out[2 + i] = bySize ? values[i] : out[2 + i] * values[i];
    return single(ctx.x(), out, ctx.x().dtype);
  };
  c.add(std::move(s));
}

/// F.interpolate by a fractional `scale_factor` (the output size is floor(size * scale), and unless
/// `recompute_scale_factor` the kernel samples with the scale itself, not the size ratio), with
/// `align_corners` both ways for the modes that take it. `out_size` is that output size: only the
/// ATen spelling reads it, as the output_size of the same shape.
void interpolateFractional(OpCatalog& c, const std::string& mode, int n) {
  OpSpec s;
  bool corners = mode != "nearest";
  s.name = fmt::format("interpolate_{}{}d_fractional", mode, n);
  s.family = "resample";
  s.python = "F.interpolate({0}, scale_factor={scale_factor}, mode='" + mode + "'" +
             (corners ? ", align_corners={align_corners}" : "") + ", recompute_scale_factor={recompute_scale_factor})";
  s.aten = fmt::format("aten::upsample_{}{}d.vec({{0}}, {{out_size}}, {}None)", mode, n, corners ? "{align_corners}, " : "");
  s.accepts = {mode == "nearest" ? kFloats : only(DType::Float32) | only(DType::Float64) | only(DType::BFloat16)};
  s.minRank = s.maxRank = n + 2;
  s.attrs = {floatAttr("scale_factor", 0.25, 3.0), boolAttr("recompute_scale_factor"), intListAttr("out_size", 1, 36)};
  if (corners) s.attrs.push_back(boolAttr("align_corners"));
  auto outSize = [n](const OpContext& ctx) {
    Shape out;
    double scale = ctx.attrFloat("scale_factor");
    for (int i = 0; i < n; ++i) out.push_back(static_cast<int64_t>(static_cast<double>(ctx.x().shape[2 + i]) * scale));
    return out;
  };
  s.sample = [corners, outSize](OpContext& ctx, Rng& rng) {
    // Scales whose products with small sizes land near, on and between integers.
    ctx.attrs["scale_factor"] = rng.pick(std::vector<double>{0.5, 0.6, 0.75, 1.25, 1.5, 1.7, 2.3, 2.5, 0.4, 1.1});
    ctx.attrs["recompute_scale_factor"] = rng.chance(0.3);
    if (corners) ctx.attrs["align_corners"] = rng.chance(0.5);
    ctx.attrs["out_size"] = outSize(ctx);
  };
  s.infer = [n, outSize](const OpContext& ctx) {
    Shape size = outSize(ctx);
    require(ctx.attrInts("out_size") == size, "out_size must be floor(size * scale_factor) for each spatial dim");
    Shape out = ctx.x().shape;
    for (int i = 0; i < n; ++i) {
      require(size[i] >= 1, "the scaled size must be at least 1");
      out[2 + i] = size[i];
    }
    return single(ctx.x(), out, ctx.x().dtype);
  };
  if (corners) s.range = [](const OpContext& ctx) {
    // Linear weights stay in [0, 1]; cubic ones overshoot by at most a quarter of the span each way.
    Interval r = ctx.ranges[0];
    double span = r.hi - r.lo;
    return std::vector<Interval>{{r.lo - 0.3 * span, r.hi + 0.3 * span}};
  };
  c.add(std::move(s));
}

}  // namespace

void addNeuralOps(OpCatalog& c) {
  {
    // Example of an nn.Module layer: `init` builds it in __init__, `params` gives its weights' types.
    OpSpec s;
    s.name = "nn_linear";
    s.family = "layer";
    s.init = "nn.Linear({in_features}, {out_features}, bias={bias}{?dtype})";
    s.python = "{self}({0})";
    s.aten = "aten::linear({0}, {p:weight}, {p:bias})";
    s.accepts = {kFloats};
    s.minRank = 1;
    s.attrs = {intAttr("in_features", 1, 4096), intAttr("out_features", 1, 64), boolAttr("bias"),
               optional(dtypeAttr("dtype", {"float16", "bfloat16", "float64"}))};
    s.sample = [](OpContext& ctx, Rng& rng) {
      ctx.attrs["in_features"] = ctx.x().shape.back();
      ctx.attrs["out_features"] = rng.uniform(1, 16);
      ctx.attrs["dtype"] = ctx.x().dtype == DType::Float32 ? nlohmann::json() : nlohmann::json(dtypeName(ctx.x().dtype));
    };
    s.infer = [](const OpContext& ctx) {
      require(ctx.x().shape.back() == ctx.attrInt("in_features"), "Linear in_features must equal the last dim");
      DType layer = ctx.hasAttr("dtype") ? ctx.attrDType("dtype") : DType::Float32;
      require(layer == ctx.x().dtype, "Linear weights and input must share a dtype");
      TensorType t = ctx.x();
      t.shape.back() = ctx.attrInt("out_features");
      return std::vector<TensorType>{t};
    };
    s.params = [](const OpContext& ctx) {
      std::vector<std::pair<std::string, TensorType>> p;
      TensorType w{{ctx.attrInt("out_features"), ctx.attrInt("in_features")}, ctx.x().dtype};
      p.emplace_back("weight", w);
      if (ctx.attrBool("bias")) p.emplace_back("bias", TensorType{{ctx.attrInt("out_features")}, ctx.x().dtype});
      return p;
    };
    s.range = [](const OpContext& ctx) {
      // Default init draws weights and bias in +-1/sqrt(in_features).
      double in = static_cast<double>(ctx.attrInt("in_features"));
      double bound = 1 / std::sqrt(in);
      return std::vector<Interval>{symmetric(ctx.ranges[0].magnitude() * bound * in + bound)};
    };
    c.add(std::move(s));
  }

  // --- linear algebra, convolutions and pooling, normalizations (their own files) ---
  addLinearAlgebra(c);
  addConvolutionsAndPooling(c);
  addNormalizations(c);

  // --- layers ---
  {
    OpSpec s;
    s.name = "nn_prelu";
    s.family = "layer";
    s.init = "nn.PReLU({num_parameters}{?dtype})";
    s.python = "{self}({0})";
    s.aten = "aten::prelu({0}, {p:weight})";
    s.accepts = {kFloats};
    s.minRank = 1;
    s.attrs = {intAttr("num_parameters", 1, 64), layerDTypeAttr()};
    s.sample = [](OpContext& ctx, Rng& rng) {
      ctx.attrs["num_parameters"] = ctx.x().rank() >= 2 && rng.chance(0.5) ? ctx.x().shape[1] : 1;
      matchLayerDType(ctx);
    };
    s.infer = [](const OpContext& ctx) {
      requireLayerDType(ctx);
      int64_t n = ctx.attrInt("num_parameters");
      require(n == 1 || (ctx.x().rank() >= 2 && ctx.x().shape[1] == n), "PReLU num_parameters must be 1 or dim 1");
      return like(ctx.x(), ctx.x().dtype);
    };
    s.params = [](const OpContext& ctx) {
      return Params{{"weight", TensorType{{ctx.attrInt("num_parameters")}, ctx.x().dtype}}};
    };
    s.range = [](const OpContext& ctx) {  // slope 0.25 below zero
      Interval r = ctx.ranges[0];
      return std::vector<Interval>{{std::min(r.lo, r.lo * 0.25), std::max(r.hi, r.hi * 0.25)}};
    };
    c.add(std::move(s));
  }
  {
    OpSpec s;
    s.name = "nn_embedding";
    s.family = "layer";
    s.init = "nn.Embedding({num_embeddings}, {embedding_dim}{?dtype})";
    s.python = "{self}({0})";
    s.aten = "aten::embedding({p:weight}, {0})";
    s.accepts = {kInts};
    s.maxRank = 3;
    s.attrs = {intAttr("num_embeddings", 1, 64), intAttr("embedding_dim", 1, 64), layerDTypeAttr()};
    s.sample = [](OpContext& ctx, Rng& rng) {
      ctx.attrs["num_embeddings"] = rng.uniform(1, 16);
      ctx.attrs["embedding_dim"] = rng.uniform(1, 8);
    };
    s.need = [](const OpContext& ctx, int) -> std::optional<Interval> {
      return Interval{0, static_cast<double>(ctx.attrInt("num_embeddings") - 1)};
    };
    s.infer = [](const OpContext& ctx) {
      Shape out = ctx.x().shape;
      out.push_back(ctx.attrInt("embedding_dim"));
      return single(ctx.x(), out, layerDType(ctx));
    };
    s.params = [](const OpContext& ctx) {
      return Params{{"weight", TensorType{{ctx.attrInt("num_embeddings"), ctx.attrInt("embedding_dim")}, layerDType(ctx)}}};
    };
    s.range = [](const OpContext&) { return std::vector<Interval>{symmetric(10)}; };  // N(0, 1) init
    c.add(std::move(s));
  }

  // --- distances, losses, random ops, resampling ---
  addDistances(c);
  addLosses(c);
  addRandomOps(c);
  pixelShuffle(c, true);
  pixelShuffle(c, false);
  for (int n = 1; n <= 3; ++n) interpolate(c, "nearest", n);
  interpolate(c, "bilinear", 2);
  interpolateFractional(c, "nearest", 2);
  interpolateFractional(c, "linear", 1);
  interpolateFractional(c, "bilinear", 2);
  interpolateFractional(c, "bicubic", 2);
  interpolateFractional(c, "trilinear", 3);
}

}  // namespace tcfuzz::gen
