// Convolutions (n-d, transposed) and pooling (max, avg, adaptive).
#include <algorithm>

#include "generators/ops/neural/NeuralCommon.h"

namespace tcfuzz::gen::ops {
namespace {

// --- convolutions -------------------------------------------------------------------------------

/// Constraints of an n-d (transposed) convolution: channels match, groups divide them, every
/// output size is at least 1, and a transposed output_padding lies below stride or dilation.
IntConstraintSet convConstraints(int n, bool transposed) {
  return intConstraints([n, transposed](const auto& e) {
    int channelDim = e.rank(0) - n - 1;
    std::vector<decltype(e.attr("groups") == 0)> r{e.attr("in_channels") == e.dim(0, channelDim),
                                                   e.attr("in_channels") % e.attr("groups") == 0,
                                                   e.attr("out_channels") % e.attr("groups") == 0};
    for (int i = 0; i < n; ++i) {
      auto size = e.dim(0, channelDim + 1 + i);
      auto k = e.attr("kernel_size", i);
      auto s = e.attr("stride", i);
      auto p = e.attr("padding", i);
      auto d = e.attr("dilation", i);
      if (transposed) {
        auto op = e.attr("output_padding", i);
        r.push_back((size - 1) * s - 2 * p + d * (k - 1) + op >= 0);
        r.push_back(op < s || op < d);
      } else {
        r.push_back(size + 2 * p >= d * (k - 1) + 1);
      }
    }
    return r;
  });
}

void convLayer(OpCatalog& c, int n, bool transposed) {
  OpSpec s;
  s.name = fmt::format("nn_conv{}{}d", transposed ? "_transpose" : "", n);
  s.family = "conv";
  if (transposed) {
    s.init = fmt::format(
        "nn.ConvTranspose{}d({{in_channels}}, {{out_channels}}, {{kernel_size}}, stride={{stride}}, "
        "padding={{padding}}, output_padding={{output_padding}}, groups={{groups}}, bias={{bias}}, "
        "dilation={{dilation}}{{?dtype}})",
        n);
    s.aten = fmt::format(
        "aten::conv_transpose{}d{}({{0}}, {{p:weight}}, {{p:bias}}, {{stride}}, {{padding}}, {{output_padding}}, "
        "{{groups}}, {{dilation}})",
        n, n == 1 ? "" : ".input");
  } else {
    s.init = fmt::format(
        "nn.Conv{}d({{in_channels}}, {{out_channels}}, {{kernel_size}}, stride={{stride}}, padding={{padding}}, "
        "dilation={{dilation}}, groups={{groups}}, bias={{bias}}, padding_mode={{padding_mode}}{{?dtype}})",
        n);
    // Non-zero padding modes pad first, then convolve unpadded: the same shape as zero padding.
    s.aten = fmt::format(
        "aten::conv{}d({{0}}, {{p:weight}}, {{p:bias}}, {{stride}}, {{padding}}, {{dilation}}, {{groups}})", n);
  }
  s.python = "{self}({0})";
  s.accepts = {kFloats};
  s.minRank = n + 1;  // unbatched (C, *spatial) or batched (N, C, *spatial)
  s.maxRank = n + 2;
  s.attrs = {intAttr("in_channels", 1, 64), intAttr("out_channels", 1, 64), intListAttr("kernel_size", 1, 5),
             intListAttr("stride", 1, 3),   intListAttr("padding", 0, 3),      intListAttr("dilation", 1, 3),
             intAttr("groups", 1, 16),      boolAttr("bias"),                  layerDTypeAttr()};
  if (transposed)
    s.attrs.push_back(intListAttr("output_padding", 0, 2));
  else
    s.attrs.push_back(choiceAttr("padding_mode", {"zeros", "reflect", "replicate", "circular"}));
  s.sample = [n, transposed](OpContext& ctx, Rng& rng) {
    const TensorType& x = ctx.x();
    int channelDim = x.rank() - n - 1;
    int64_t channels = x.shape.at(channelDim);
    int64_t groups = rng.chance(0.6) ? 1 : rng.pick(divisorsOf(channels));
    ctx.attrs["in_channels"] = channels;
    ctx.attrs["groups"] = groups;
    ctx.attrs["out_channels"] = groups * rng.uniform(1, std::max<int64_t>(1, 8 / groups));
    Shape k, st, p, d, op;
    bool reflectable = true, circular = true;
    for (int i = 0; i < n; ++i) {
      int64_t size = x.shape.at(channelDim + 1 + i);
      d.push_back(rng.chance(0.2) ? rng.uniform(2, 3) : 1);
      p.push_back(rng.chance(0.5) ? 0 : rng.uniform(0, 2));
      st.push_back(rng.uniform(1, 3));
      if (transposed) {
        k.push_back(rng.uniform(1, 4));
        op.push_back(rng.chance(0.6) ? 0 : rng.uniform(0, std::max(st[i], d[i]) - 1));
        if ((size - 1) * st[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] < 0) p[i] = 0;
      } else {
        k.push_back(rng.uniform(1, std::clamp<int64_t>((size + 2 * p[i] - 1) / d[i] + 1, 1, 5)));
        reflectable = reflectable && p[i] < size;
        circular = circular && p[i] <= size;
      }
    }
    ctx.attrs["kernel_size"] = k;
    ctx.attrs["stride"] = st;
    ctx.attrs["padding"] = p;
    ctx.attrs["dilation"] = d;
    if (transposed) {
      ctx.attrs["output_padding"] = op;
    } else {
      std::string mode = ctx.attrStr("padding_mode");
      if (rng.chance(0.5) || (mode == "reflect" && !reflectable) || (mode == "circular" && !circular))
        ctx.attrs["padding_mode"] = "zeros";
    }
    matchLayerDType(ctx);
  };
  s.constraints = convConstraints(n, transposed);
  s.infer = [n, transposed](const OpContext& ctx) {
    const TensorType& x = ctx.x();
    for (auto name : {"kernel_size", "stride", "padding", "dilation"}) requireLength(ctx, name, n);
    if (transposed) requireLength(ctx, "output_padding", n);
    requireLayerDType(ctx);
    int channelDim = x.rank() - n - 1;
    auto k = ctx.attrInts("kernel_size"), st = ctx.attrInts("stride"), p = ctx.attrInts("padding"),
         d = ctx.attrInts("dilation");
    std::string mode = transposed ? "zeros" : ctx.attrStr("padding_mode");
    Shape out = slice(x.shape, 0, channelDim);
    out.push_back(ctx.attrInt("out_channels"));
    for (int i = 0; i < n; ++i) {
      int64_t size = x.shape[channelDim + 1 + i];
      require(mode != "reflect" || p[i] < size, "reflect padding must be below the input size");
      require(mode != "circular" || p[i] <= size, "circular padding must not exceed the input size");
      int64_t o = transposed ? (size - 1) * st[i] - 2 * p[i] + d[i] * (k[i] - 1) + ctx.attrInts("output_padding")[i] + 1
                             : (size + 2 * p[i] - d[i] * (k[i] - 1) - 1) / st[i] + 1;
      out.push_back(o);
    }
    return single(x, out, x.dtype);
  };
  s.params = [n, transposed](const OpContext& ctx) {
    int64_t in = ctx.attrInt("in_channels"), out = ctx.attrInt("out_channels"), g = ctx.attrInt("groups");
    Shape w = transposed ? Shape{in, out / g} : Shape{out, in / g};
    for (auto k : ctx.attrInts("kernel_size")) w.push_back(k);
    Params ps{{"weight", TensorType{w, ctx.x().dtype}}};
    if (ctx.attrBool("bias")) ps.emplace_back("bias", TensorType{{out}, ctx.x().dtype});
    return ps;
  };
  s.range = [transposed](const OpContext& ctx) {
    // Default init draws weights and bias in +-1/sqrt(fan_in) (fan_in of the weight tensor).
    double window = productOf(ctx.attrInts("kernel_size")), g = static_cast<double>(ctx.attrInt("groups"));
    double perGroupIn = ctx.attrInt("in_channels") / g, perGroupOut = ctx.attrInt("out_channels") / g;
    double terms = perGroupIn * window;
    double fanIn = (transposed ? perGroupOut : perGroupIn) * window;
    return std::vector<Interval>{weightedSumRange(ctx, terms, 1 / std::sqrt(fanIn))};
  };
  c.add(std::move(s));
}

// --- pooling ------------------------------------------------------------------------------------

int64_t floorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/// ATen's pooling_output_shape: with ceil_mode the last window must start inside the input or
/// the left padding.
int64_t poolOutputSize(int64_t size, int64_t k, int64_t p, int64_t s, int64_t d, bool ceil) {
  int64_t out = floorDiv(size + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0), s) + 1;
  if (ceil && (out - 1) * s >= size + p) --out;
  return out;
}

/// Padding at most half the kernel, and a first window that fits the padded input (which keeps
/// every output size >= 1 in both ceil modes). Dilated windows get no padding: torch lets them
/// fall wholly into it (max then gives -inf). `unpaddedFit`: the kernel fits the unpadded input
/// (avg_pool3d checks that).
IntConstraintSet poolConstraints(int n, bool dilated, bool unpaddedFit) {
  return intConstraints([n, dilated, unpaddedFit](const auto& e) {
    std::vector<decltype(e.attr("padding", 0) == 0)> r;
    for (int i = 0; i < n; ++i) {
      auto size = e.dim(0, e.rank(0) - n + i);
      auto k = e.attr("kernel_size", i);
      auto p = e.attr("padding", i);
      r.push_back(2 * p <= k);
      if (dilated) {
        auto d = e.attr("dilation", i);
        r.push_back(size + 2 * p >= d * (k - 1) + 1);
        r.push_back(p == 0 || d == 1);
      } else {
        r.push_back(size + 2 * p >= k);
      }
      if (unpaddedFit) r.push_back(size >= k);
    }
    return r;
  });
}

void pool(OpCatalog& c, bool max, int n, DTypeSet accepts) {
  OpSpec s;
  std::string fn = fmt::format("{}_pool{}d", max ? "max" : "avg", n);
  s.name = fn;
  s.family = "pool";
  s.denseInput = n == 3;  // an unbatched 4-d input in channels-last: "Supports only ChannelsLast3d, Contiguous"
  if (max) {
    s.python = "F." + fn + "({0}, {kernel_size}, stride={stride}, padding={padding}, dilation={dilation}, ceil_mode={ceil_mode})";
    s.aten = "aten::" + fn + "({0}, {kernel_size}, {stride}, {padding}, {dilation}, {ceil_mode})";
  } else {
    s.python = "F." + fn +
               "({0}, {kernel_size}, stride={stride}, padding={padding}, ceil_mode={ceil_mode}, "
               "count_include_pad={count_include_pad})";
    s.aten = "aten::" + fn + "({0}, {kernel_size}, {stride}, {padding}, {ceil_mode}, {count_include_pad})";
  }
  s.accepts = {accepts};
  s.minRank = n + 1;
  s.maxRank = n + 2;
  s.attrs = {intListAttr("kernel_size", 1, 5), intListAttr("stride", 1, 3), intListAttr("padding", 0, 2),
             boolAttr("ceil_mode")};
  s.attrs.push_back(max ? intListAttr("dilation", 1, 3) : boolAttr("count_include_pad"));
  bool unpaddedFit = !max && n == 3;
  s.sample = [n, max, unpaddedFit](OpContext& ctx, Rng& rng) {
    Shape k, st, p, d;
    for (int i = 0; i < n; ++i) {
      int64_t size = ctx.x().shape.at(ctx.x().rank() - n + i);
      int64_t ki = rng.uniform(1, 4), di = max && rng.chance(0.2) ? 2 : 1;
      int64_t pi = di > 1 || rng.chance(0.5) ? 0 : rng.uniform(0, ki / 2);
      while (size + 2 * pi < di * (ki - 1) + 1 || (unpaddedFit && size < ki)) {
        if (di > 1)
          di = 1;
        else
          pi = std::min(pi, --ki / 2);
      }
      k.push_back(ki);
      p.push_back(pi);
      d.push_back(di);
      st.push_back(rng.chance(0.3) ? std::min<int64_t>(ki, 3) : rng.uniform(1, 3));
    }
    ctx.attrs["kernel_size"] = k;
    ctx.attrs["stride"] = st;
    ctx.attrs["padding"] = p;
    if (max) ctx.attrs["dilation"] = d;
  };
  s.constraints = poolConstraints(n, max, unpaddedFit);
  s.infer = [n, max](const OpContext& ctx) {
    for (auto name : {"kernel_size", "stride", "padding"}) requireLength(ctx, name, n);
    if (max) requireLength(ctx, "dilation", n);
    auto k = ctx.attrInts("kernel_size"), st = ctx.attrInts("stride"), p = ctx.attrInts("padding");
    Shape d = max ? ctx.attrInts("dilation") : Shape(n, 1);
    Shape out = ctx.x().shape;
    for (int i = 0; i < n; ++i) {
      int64_t& size = out[out.size() - n + i];
      size = poolOutputSize(size, k[i], p[i], st[i], d[i], ctx.attrBool("ceil_mode"));
    }
    return single(ctx.x(), out, ctx.x().dtype);
  };
  if (!max)
    s.range = [](const OpContext& ctx) {
      // Averages over windows that may count zero padding.
      auto p = ctx.attrInts("padding");
      bool padded = ctx.attrBool("count_include_pad") && std::any_of(p.begin(), p.end(), [](int64_t v) { return v > 0; });
      return std::vector<Interval>{padded ? unionI(ctx.ranges[0], {0, 0}) : ctx.ranges[0]};
    };
  c.add(std::move(s));
}

void adaptivePool(OpCatalog& c, bool max, int n) {
  OpSpec s;
  std::string fn = fmt::format("adaptive_{}_pool{}d", max ? "max" : "avg", n);
  s.name = fn;
  s.family = "pool";
  s.python = "F." + fn + "({0}, {output_size})";  // max: values only (return_indices=False)
  s.aten = "aten::" + fn + "({0}, {output_size})";  // max: returns (values, indices)
  s.accepts = {kFloats};
  s.minRank = n + 1;
  s.maxRank = n + 2;
  s.attrs = {intListAttr("output_size", 1, 8)};
  s.sample = [n](OpContext& ctx, Rng& rng) {
    Shape size;
    for (int i = 0; i < n; ++i) size.push_back(rng.uniform(1, 6));
    ctx.attrs["output_size"] = size;
  };
  s.infer = [n](const OpContext& ctx) {
    requireLength(ctx, "output_size", n);
    auto size = ctx.attrInts("output_size");
    Shape out = ctx.x().shape;
    std::copy(size.begin(), size.end(), out.end() - n);
    return single(ctx.x(), out, ctx.x().dtype);
  };
  c.add(std::move(s));
}

}  // namespace

void addConvolutionsAndPooling(OpCatalog& c) {
  for (int n = 1; n <= 3; ++n) {
    convLayer(c, n, false);
    convLayer(c, n, true);
  }
  pool(c, true, 1, kFloats);
  pool(c, true, 2, kFloats | kInts);
  pool(c, true, 3, kFloats | kInts);
  pool(c, false, 1, kFloats | only(DType::Int64));
  pool(c, false, 2, kFloats | only(DType::Int64));
  pool(c, false, 3, only(DType::Float32) | only(DType::Float64) | only(DType::Int64));
  for (int n = 1; n <= 3; ++n) adaptivePool(c, false, n);
  for (int n = 1; n <= 2; ++n) adaptivePool(c, true, n);
}

}  // namespace tcfuzz::gen::ops
