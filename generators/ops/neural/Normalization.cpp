// Normalization layers (batch, layer, RMS, group, instance) and F.normalize.
#include <algorithm>

#include "generators/ops/neural/NeuralCommon.h"

namespace tcfuzz::gen::ops {
namespace {

// --- normalizations -----------------------------------------------------------------------------

/// |y| of a normalization over `n` elements (weight 1, bias 0) is at most sqrt(n).
std::vector<Interval> normalizedRange(double n) { return {symmetric(std::sqrt(std::max(n, 1.0)))}; }

/// The common part of an nn.Module normalization layer (floats, one input, a dtype attribute).
OpSpec normLayer(const std::string& name, const std::string& init, const std::string& aten, int minRank, int maxRank) {
  OpSpec s;
  s.name = name;
  s.family = "norm";
  s.init = init;
  s.python = "{self}({0})";
  s.aten = aten;
  s.accepts = {kFloats};
  s.minRank = minRank;
  s.maxRank = maxRank;
  return s;
}

/// Attributes of the per-channel norm layers (BatchNorm, InstanceNorm): num_features is dim 1.
void channelNormAttrs(OpSpec& s) {
  s.attrs = {intAttr("num_features", 1, 64), boolAttr("affine"), layerDTypeAttr()};
  s.sample = [](OpContext& ctx, Rng&) {
    ctx.attrs["num_features"] = ctx.x().shape.at(1);
    matchLayerDType(ctx);
  };
}

void batchNorm(OpCatalog& c, int n) {
  int rank = n + 2;
  OpSpec s = normLayer(fmt::format("nn_batch_norm{}d", n), fmt::format("nn.BatchNorm{}d({{num_features}}, affine={{affine}}{{?dtype}})", n),
                       // eval(): normalizes with the running statistics
                       "aten::batch_norm({0}, {p:weight}, {p:bias}, {p:running_mean}, {p:running_var}, False, 0.1, 1e-05, False)",
                       n == 1 ? 2 : rank, rank);
  channelNormAttrs(s);
  s.infer = [](const OpContext& ctx) {
    requireLayerDType(ctx);
    require(ctx.x().shape[1] == ctx.attrInt("num_features"), "BatchNorm num_features must equal dim 1");
    return like(ctx.x(), ctx.x().dtype);
  };
  s.params = [](const OpContext& ctx) {
    TensorType v{{ctx.attrInt("num_features")}, ctx.x().dtype};
    Params p;
    if (ctx.attrBool("affine")) p = {{"weight", v}, {"bias", v}};
    p.emplace_back("running_mean", v);
    p.emplace_back("running_var", v);
    return p;
  };
  // Running mean 0 and variance 1: y = x / sqrt(1 + eps).
  s.range = [](const OpContext& ctx) { return std::vector<Interval>{ctx.ranges[0]}; };
  c.add(std::move(s));
}

/// LayerNorm and RMSNorm: normalized_shape is the trailing dims of the input.
void trailingNorm(OpCatalog& c, bool rms) {
  OpSpec s = rms ? normLayer("nn_rms_norm", "nn.RMSNorm({normalized_shape}, elementwise_affine={elementwise_affine}{?dtype})",
                             "aten::rms_norm({0}, {normalized_shape}, {p:weight}, None)", 1, 8)
                 : normLayer("nn_layer_norm",
                             "nn.LayerNorm({normalized_shape}, elementwise_affine={elementwise_affine}, bias={bias}{?dtype})",
                             "aten::layer_norm({0}, {normalized_shape}, {p:weight}, {p:bias})", 1, 8);
  s.attrs = {intListAttr("normalized_shape", 1, 4096), boolAttr("elementwise_affine"), layerDTypeAttr()};
  if (!rms) s.attrs.push_back(boolAttr("bias"));
  s.sample = [](OpContext& ctx, Rng& rng) {
    const Shape& x = ctx.x().shape;
    int k = static_cast<int>(rng.uniform(1, std::min<int64_t>(3, x.size())));
    ctx.attrs["normalized_shape"] = slice(x, x.size() - k, x.size());
    matchLayerDType(ctx);
  };
  s.infer = [](const OpContext& ctx) {
    requireLayerDType(ctx);
    auto shape = ctx.attrInts("normalized_shape");
    const Shape& x = ctx.x().shape;
    require(!shape.empty() && shape.size() <= x.size() && slice(x, x.size() - shape.size(), x.size()) == shape,
            "normalized_shape must equal the input's trailing dims");
    return like(ctx.x(), ctx.x().dtype);
  };
  s.params = [rms](const OpContext& ctx) {
    TensorType v{ctx.attrInts("normalized_shape"), ctx.x().dtype};
    Params p;
    if (ctx.attrBool("elementwise_affine")) {
      p.emplace_back("weight", v);
      if (!rms && ctx.attrBool("bias")) p.emplace_back("bias", v);
    }
    return p;
  };
  s.range = [](const OpContext& ctx) { return normalizedRange(productOf(ctx.attrInts("normalized_shape"))); };
  c.add(std::move(s));
}

void groupNorm(OpCatalog& c) {
  OpSpec s = normLayer("nn_group_norm", "nn.GroupNorm({num_groups}, {num_channels}, affine={affine}{?dtype})",
                       "aten::group_norm({0}, {num_groups}, {p:weight}, {p:bias})", 2, 5);
  s.attrs = {intAttr("num_groups", 1, 64), intAttr("num_channels", 1, 64), boolAttr("affine"), layerDTypeAttr()};
  s.sample = [](OpContext& ctx, Rng& rng) {
    int64_t channels = ctx.x().shape.at(1);
    ctx.attrs["num_channels"] = channels;
    ctx.attrs["num_groups"] = rng.pick(divisorsOf(channels));
    matchLayerDType(ctx);
  };
  s.constraints = intConstraints([](const auto& e) {
    auto numel = e.dim(0, 0) * e.dim(0, 1);
    for (int i = 2; i < e.rank(0); ++i) numel = numel * e.dim(0, i);
    // F.group_norm's batch check: more than one value per group.
    return std::vector{e.attr("num_channels") == e.dim(0, 1), e.attr("num_channels") % e.attr("num_groups") == 0,
                       numel > e.attr("num_groups")};
  });
  s.infer = [](const OpContext& ctx) {
    requireLayerDType(ctx);
    return like(ctx.x(), ctx.x().dtype);
  };
  s.params = [](const OpContext& ctx) {
    TensorType v{{ctx.attrInt("num_channels")}, ctx.x().dtype};
    return ctx.attrBool("affine") ? Params{{"weight", v}, {"bias", v}} : Params{};
  };
  s.range = [](const OpContext& ctx) {
    return normalizedRange(numelOf(ctx) / static_cast<double>(ctx.x().shape[0] * ctx.attrInt("num_groups")));
  };
  c.add(std::move(s));
}

void instanceNorm(OpCatalog& c, int n) {
  // Batched inputs only: aten::instance_norm reads an unbatched (C, *) input as a batch of C.
  OpSpec s = normLayer(fmt::format("nn_instance_norm{}d", n),
                       fmt::format("nn.InstanceNorm{}d({{num_features}}, affine={{affine}}{{?dtype}})", n),
                       "aten::instance_norm({0}, {p:weight}, {p:bias}, None, None, True, 0.1, 1e-05, False)", n + 2, n + 2);
  channelNormAttrs(s);
  s.infer = [](const OpContext& ctx) {
    requireLayerDType(ctx);
    require(ctx.x().shape[1] == ctx.attrInt("num_features"), "InstanceNorm num_features must equal dim 1");
    require(productOf(slice(ctx.x().shape, 2, ctx.x().rank())) > 1, "InstanceNorm needs more than one spatial element");
    return like(ctx.x(), ctx.x().dtype);
  };
  s.params = [](const OpContext& ctx) {
    TensorType v{{ctx.attrInt("num_features")}, ctx.x().dtype};
    return ctx.attrBool("affine") ? Params{{"weight", v}, {"bias", v}} : Params{};
  };
  s.range = [](const OpContext& ctx) { return normalizedRange(productOf(slice(ctx.x().shape, 2, ctx.x().rank()))); };
  c.add(std::move(s));
}

void addNormalize(OpCatalog& c) {
  OpSpec s;
  s.name = "normalize";
  s.family = "norm";
  s.python = "F.normalize({0}, p={p}, dim={dim})";
  s.aten = "aten::softmax.int({0}, {dim})";  // no single ATen op: softmax has the same shape rule
  s.accepts = {kFloats};
  s.minRank = 1;
  s.attrs = {floatAttr("p", 1, 4), dimAttr()};
  s.sample = [](OpContext& ctx, Rng& rng) { ctx.attrs["dim"] = drawDim(rng, ctx.x().rank()); };
  s.infer = [](const OpContext& ctx) {
    wrapDim(ctx.attrInt("dim"), ctx.x().rank());
    return like(ctx.x(), ctx.x().dtype);
  };
  s.range = [](const OpContext&) { return std::vector<Interval>{kUnit}; };  // |x_i| <= ||x||_p for p >= 1
  c.add(std::move(s));
}

}  // namespace

void addNormalizations(OpCatalog& c) {
  for (int n = 1; n <= 3; ++n) batchNorm(c, n);
  trailingNorm(c, false);
  trailingNorm(c, true);
  groupNorm(c);
  for (int n = 1; n <= 2; ++n) instanceNorm(c, n);
  addNormalize(c);
}

}  // namespace tcfuzz::gen::ops
