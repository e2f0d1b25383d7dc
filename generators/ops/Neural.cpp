// Neural-network families: linear algebra, convolutions and pooling, normalizations, losses and
// distances, random ops, resampling, and nn.Module layers with parameters.
#include <algorithm>
#include <map>

#include "generators/ops/Common.h"

namespace tcfuzz::gen {
namespace {

using namespace ops;
using nlohmann::json;
using Shape = std::vector<int64_t>;
using Params = std::vector<std::pair<std::string, TensorType>>;

/// One output of `like`'s device with this shape and dtype.
std::vector<TensorType> single(const TensorType& like, Shape shape, DType d) {
  TensorType t = like;
  t.shape = std::move(shape);
  t.dtype = d;
  return {t};
}

double productOf(const Shape& s) {
  double p = 1;
  for (auto d : s) p *= static_cast<double>(d);
  return p;
}

Shape slice(const Shape& s, size_t from, size_t to) { return Shape(s.begin() + from, s.begin() + to); }

void requireSameDType(const OpContext& ctx, const std::string& op) {
  for (const auto& t : ctx.in)
    require(t.dtype == ctx.x().dtype, op + " needs all operands of one dtype");
}

void requireLength(const OpContext& ctx, const std::string& name, size_t n) {
  require(ctx.attrInts(name).size() == n, fmt::format("'{}' must hold {} values", name, n));
}

std::vector<int64_t> divisorsOf(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

// --- layers with a dtype attribute (nn_linear's pattern) ----------------------------------------

AttrSpec layerDTypeAttr() { return optional(dtypeAttr("dtype", {"float16", "bfloat16", "float64"})); }

DType layerDType(const OpContext& ctx) { return ctx.hasAttr("dtype") ? ctx.attrDType("dtype") : DType::Float32; }

/// Sets the layer's dtype to input 0's.
void matchLayerDType(OpContext& ctx) {
  ctx.attrs["dtype"] = ctx.x().dtype == DType::Float32 ? json() : json(dtypeName(ctx.x().dtype));
}

void requireLayerDType(const OpContext& ctx) {
  require(layerDType(ctx) == ctx.x().dtype, "the layer's parameters and its input must share a dtype");
}

/// Output range of a weighted sum of `terms` inputs with default-init weights and bias in +-bound.
Interval weightedSumRange(const OpContext& ctx, double terms, double bound) {
  return symmetric(ctx.ranges[0].magnitude() * terms * bound + bound);
}

// --- matrix products ----------------------------------------------------------------------------

/// torch.matmul's shape rule for operands of any rank >= 1.
Shape matmulShape(const Shape& a, const Shape& b) {
  require(!a.empty() && !b.empty(), "matmul operands must be at least 1-d");
  auto contract = [](int64_t x, int64_t y) { require(x == y, "matmul contracted dims must match"); };
  if (a.size() <= 2 && b.size() <= 2) {
    contract(a.back(), b.front());
    Shape out;
    if (a.size() == 2) out.push_back(a[0]);
    if (b.size() == 2) out.push_back(b[1]);
    return out;
  }
  Shape am = a.size() == 1 ? Shape{1, a[0]} : a;
  Shape bm = b.size() == 1 ? Shape{b[0], 1} : b;
  contract(am.back(), bm[bm.size() - 2]);
  Shape out = broadcastShapes(slice(am, 0, am.size() - 2), slice(bm, 0, bm.size() - 2));
  if (a.size() > 1) out.push_back(am[am.size() - 2]);
  if (b.size() > 1) out.push_back(bm.back());
  return out;
}

/// A right operand for matmul with left operand `a`: rank 1 to 4, batch dims broadcastable.
Shape matmulOperand(const Shape& a, Rng& rng) {
  int64_t k = a.back();
  int rank = static_cast<int>(rng.uniform(1, 4));
  if (rank == 1) return {k};
  Shape aBatch = a.size() > 2 ? slice(a, 0, a.size() - 2) : Shape{};
  Shape b;
  for (int j = 0; j < rank - 2; ++j) {
    int fromRight = rank - 2 - j;  // position of this batch dim counted from the right
    bool shared = fromRight <= static_cast<int>(aBatch.size());
    int64_t d = shared ? aBatch[aBatch.size() - fromRight] : rng.uniform(1, 4);
    b.push_back(rng.chance(0.2) ? 1 : d);
  }
  b.push_back(k);
  b.push_back(rng.uniform(1, 6));
  return b;
}

/// Range of a product contracting `k` terms.
std::vector<Interval> contractionRange(const OpContext& ctx, double k) {
  return {sumI(mulI(ctx.ranges[0], ctx.ranges[1]), k)};
}

/// A two-operand product: input 1 proposed by `other`, shape by `rule`, contracting input 0's last
/// dim. Operands share one dtype unless the op `promotes` mixed ones.
OpSpec& product(OpCatalog& c, const std::string& name, const std::string& python, const std::string& aten,
                int minRank, int maxRank, std::function<Shape(const Shape&, Rng&)> other,
                std::function<Shape(const Shape&, const Shape&)> rule, bool promotes = false) {
  OpSpec s = entry(name, "linalg", python, aten);
  s.minInputs = s.maxInputs = 2;
  s.accepts = {kNumeric};
  s.minRank = minRank;
  s.maxRank = maxRank;
  s.propose = [other](const OpContext& ctx, int, Rng& rng) {
    TensorType t = ctx.x();
    t.shape = other(ctx.x().shape, rng);
    return t;
  };
  s.infer = [name, rule, promotes](const OpContext& ctx) {
    if (!promotes) requireSameDType(ctx, name);
    return single(ctx.x(), rule(ctx.x(0).shape, ctx.x(1).shape), promote(ctx.x(0).dtype, ctx.x(1).dtype));
  };
  s.range = [](const OpContext& ctx) {
    return contractionRange(ctx, ctx.x().rank() == 0 ? 1 : static_cast<double>(ctx.x().shape.back()));
  };
  return c.add(std::move(s));
}

/// addmm/baddbmm spelled with the product operands first: {0} @ {1} + {2}, {2} broadcastable.
OpSpec& productPlusBias(OpCatalog& c, const std::string& name, int rank) {
  OpSpec s = entry(name, "linalg", "torch." + name + "({2}, {0}, {1})", "aten::" + name + "({2}, {0}, {1})");
  s.minInputs = s.maxInputs = 3;
  s.accepts = {kNumeric};
  s.minRank = s.maxRank = rank;
  auto productShape = [rank](const Shape& a, const Shape& b) {
    require(static_cast<int>(b.size()) == rank, "the second factor must have the first's rank");
    require(a.back() == b[b.size() - 2], "contracted dims must match");
    if (rank == 3) require(a[0] == b[0], "batch sizes must match");
    Shape out = a;
    out.back() = b.back();
    return out;
  };
  s.propose = [rank](const OpContext& ctx, int k, Rng& rng) {
    TensorType t = ctx.x();
    const Shape& a = ctx.x().shape;
    int64_t p = ctx.in.size() > 1 && ctx.x(1).rank() == rank ? ctx.x(1).shape.back() : rng.uniform(1, 6);
    if (k == 1) {
      t.shape = rank == 3 ? Shape{a[0], a[2], p} : Shape{a[1], p};
    } else {
      Shape out = a;
      out.back() = p;
      t.shape = broadcastableTo(out, rng);
    }
    return t;
  };
  s.infer = [name, productShape](const OpContext& ctx) {
    requireSameDType(ctx, name);
    Shape out = productShape(ctx.x(0).shape, ctx.x(1).shape);
    require(broadcastShapes(ctx.x(2).shape, out) == out, "the bias must broadcast to the product");
    return single(ctx.x(), out, ctx.x().dtype);
  };
  s.range = [](const OpContext& ctx) {
    return std::vector<Interval>{addI(contractionRange(ctx, static_cast<double>(ctx.x().shape.back()))[0], ctx.ranges[2])};
  };
  return c.add(std::move(s));
}

/// F.linear with a (out, in) weight and, when `bias`, a (out) bias.
void functionalLinear(OpCatalog& c, const std::string& name, bool bias) {
  OpSpec s = entry(name, "linalg", bias ? "F.linear({0}, {1}, {2})" : "F.linear({0}, {1})", bias ? "aten::linear({0}, {1}, {2})" : "aten::linear({0}, {1}, None)");
  s.minInputs = s.maxInputs = bias ? 3 : 2;
  s.accepts = {kNumeric};
  s.minRank = 1;
  s.maxRank = 4;
  s.propose = [](const OpContext& ctx, int k, Rng& rng) {
    TensorType t = ctx.x();
    int64_t out = ctx.in.size() > 1 && ctx.x(1).rank() == 2 ? ctx.x(1).shape[0] : rng.uniform(1, 8);
    t.shape = k == 1 ? Shape{out, ctx.x().shape.back()} : Shape{out};
    return t;
  };
  s.infer = [name](const OpContext& ctx) {
    requireSameDType(ctx, name);
    const Shape& w = ctx.x(1).shape;
    require(w.size() == 2 && w[1] == ctx.x().shape.back(), "the weight must be (out_features, in_features)");
    if (ctx.in.size() == 3) require(ctx.x(2).shape == Shape{w[0]}, "the bias must be (out_features)");
    Shape out = ctx.x().shape;
    out.back() = w[0];
    return single(ctx.x(), out, ctx.x().dtype);
  };
  s.range = [](const OpContext& ctx) {
    Interval r = contractionRange(ctx, static_cast<double>(ctx.x().shape.back()))[0];
    return std::vector<Interval>{ctx.in.size() == 3 ? addI(r, ctx.ranges[2]) : r};
  };
  c.add(std::move(s));
}

// --- einsum -------------------------------------------------------------------------------------

const std::vector<std::string> kEinsumEquations = {
    "ij,jk->ik", "bij,bjk->bik", "bi,bi->b",         "i,j->ij",          "i,i->",
    "ij,kj->ik", "bij,bj->bi",   "bhqd,bhkd->bhqk", "bhqk,bhkd->bhqd", "ijk,ikl->jl"};

struct EinsumEquation {
  std::vector<std::string> operands;
  std::string output;
};

EinsumEquation parseEinsum(const std::string& equation) {
  EinsumEquation e;
  auto arrow = equation.find("->");
  require(arrow != std::string::npos, "einsum equation needs an explicit output");
  e.output = equation.substr(arrow + 2);
  std::string lhs = equation.substr(0, arrow);
  size_t start = 0;
  for (size_t comma; (comma = lhs.find(',', start)) != std::string::npos; start = comma + 1)
    e.operands.push_back(lhs.substr(start, comma - start));
  e.operands.push_back(lhs.substr(start));
  return e;
}

/// The size of each label; ShapeError when the operands disagree with the equation.
std::map<char, int64_t> einsumSizes(const EinsumEquation& e, const std::vector<TensorType>& in) {
  require(e.operands.size() == in.size(), "einsum needs one operand per equation term");
  std::map<char, int64_t> size;
  for (size_t i = 0; i < in.size(); ++i) {
    require(e.operands[i].size() == static_cast<size_t>(in[i].rank()), "einsum operand rank must match its term");
    for (size_t j = 0; j < e.operands[i].size(); ++j) {
      auto [it, fresh] = size.emplace(e.operands[i][j], in[i].shape[j]);
      require(fresh || it->second == in[i].shape[j], "einsum dims with one label must match");
    }
  }
  return size;
}

void addEinsum(OpCatalog& c) {
  OpSpec s;
  s.name = "einsum";
  s.family = "linalg";
  s.python = "torch.einsum({equation}, {0}, {1})";
  s.aten = "aten::einsum({equation}, {*})";  // {*} fills the Tensor[] argument
  s.minInputs = s.maxInputs = 2;
  s.accepts = {kNumeric};
  s.minRank = 1;
  s.maxRank = 4;
  s.attrs = {choiceAttr("equation", kEinsumEquations)};
  s.sample = [](OpContext& ctx, Rng& rng) {
    std::vector<std::string> fitting;
    for (const auto& eq : kEinsumEquations)
      if (parseEinsum(eq).operands[0].size() == static_cast<size_t>(ctx.x().rank())) fitting.push_back(eq);
    if (!fitting.empty()) ctx.attrs["equation"] = rng.pick(fitting);
  };
  s.propose = [](const OpContext& ctx, int k, Rng& rng) {
    EinsumEquation e = parseEinsum(ctx.attrStr("equation"));
    const std::string& first = e.operands[0];
    TensorType t = ctx.x();
    t.shape.clear();
    for (char label : e.operands.at(k)) {
      auto pos = first.find(label);
      bool known = pos != std::string::npos && first.size() == static_cast<size_t>(ctx.x().rank());
      t.shape.push_back(known ? ctx.x().shape[pos] : rng.uniform(1, 6));
    }
    return t;
  };
  s.infer = [](const OpContext& ctx) {
    requireSameDType(ctx, "einsum");
    EinsumEquation e = parseEinsum(ctx.attrStr("equation"));
    auto size = einsumSizes(e, ctx.in);
    Shape out;
    for (char label : e.output) out.push_back(size.at(label));
    return single(ctx.x(), out, ctx.x().dtype);
  };
  s.range = [](const OpContext& ctx) {
    EinsumEquation e = parseEinsum(ctx.attrStr("equation"));
    double summed = 1;
    for (auto [label, n] : einsumSizes(e, ctx.in))
      if (e.output.find(label) == std::string::npos) summed *= static_cast<double>(n);
    return contractionRange(ctx, summed);
  };
  c.add(std::move(s));
}

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

  // --- linear algebra ---
  auto lastThen = [](const Shape& a, Rng& rng) { return Shape{a.back(), rng.uniform(1, 6)}; };
  product(c, "mm", "torch.mm({0}, {1})", "aten::mm({0}, {1})", 2, 2, lastThen, [](const Shape& a, const Shape& b) {
    require(b.size() == 2, "mm operands must be 2-d");
    return matmulShape(a, b);
  });
  product(
      c, "bmm", "torch.bmm({0}, {1})", "aten::bmm({0}, {1})", 3, 3,
      [](const Shape& a, Rng& rng) { return Shape{a[0], a[2], rng.uniform(1, 6)}; },
      [](const Shape& a, const Shape& b) {
        require(b.size() == 3 && a[0] == b[0], "bmm operands must be 3-d with one batch size");
        return matmulShape(a, b);
      });
  product(c, "matmul", "torch.matmul({0}, {1})", "aten::matmul({0}, {1})", 1, 4, matmulOperand, matmulShape);
  product(
      c, "mv", "torch.mv({0}, {1})", "aten::mv({0}, {1})", 2, 2, [](const Shape& a, Rng&) { return Shape{a[1]}; },
      [](const Shape& a, const Shape& b) {
        require(b.size() == 1, "mv takes a vector");
        return matmulShape(a, b);
      });
  product(
      c, "dot", "torch.dot({0}, {1})", "aten::dot({0}, {1})", 1, 1, [](const Shape& a, Rng&) { return a; },
      [](const Shape& a, const Shape& b) {
        require(b.size() == 1, "dot takes two vectors");
        return matmulShape(a, b);
      });
  product(
      c, "outer", "torch.outer({0}, {1})", "aten::outer({0}, {1})", 1, 1,
      [](const Shape&, Rng& rng) { return Shape{rng.uniform(1, 6)}; },
      [](const Shape& a, const Shape& b) {
        require(b.size() == 1, "outer takes two vectors");
        return Shape{a[0], b[0]};
      },
      true)
      .range = [](const OpContext& ctx) { return contractionRange(ctx, 1); };
  productPlusBias(c, "addmm", 2);
  productPlusBias(c, "baddbmm", 3);
  addEinsum(c);
  functionalLinear(c, "linear", true);
  functionalLinear(c, "linear_nobias", false);

  // --- convolutions and pooling ---
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

  // --- normalizations ---
  for (int n = 1; n <= 3; ++n) batchNorm(c, n);
  trailingNorm(c, false);
  trailingNorm(c, true);
  groupNorm(c);
  for (int n = 1; n <= 2; ++n) instanceNorm(c, n);
  addNormalize(c);

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
}

}  // namespace tcfuzz::gen
