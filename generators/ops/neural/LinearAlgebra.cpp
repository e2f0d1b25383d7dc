// Linear algebra: matrix products, einsum and F.linear.
#include <map>

#include "generators/ops/neural/NeuralCommon.h"

namespace tcfuzz::gen::ops {
namespace {

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
  s.propose = [other, minRank, maxRank](const OpContext& ctx, int, Rng& rng) {
    require(ctx.x().rank() >= minRank && ctx.x().rank() <= maxRank, "input 0's rank is outside the op's");  // repair may offer another
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
    require(ctx.x().rank() == rank, "input 0 must have the product's rank");  // repair may offer another
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

/// F.scaled_dot_product_attention(q, k, v): q [..., L, E], k [..., S, E], v [..., S, Ev] with one batch
/// shape (rank 2 to 4), out [..., L, Ev]; each output row is a convex combination of v's rows.
void scaledDotProductAttention(OpCatalog& c) {
  OpSpec s = entry("sdpa", "linalg", "F.scaled_dot_product_attention({0}, {1}, {2}, is_causal={is_causal}{?scale})",
                   "aten::scaled_dot_product_attention({0}, {1}, {2}, None, 0.0, {is_causal}, {scale})");
  s.minInputs = s.maxInputs = 3;
  s.minRank = 2;
  s.maxRank = 4;
  s.attrs = {boolAttr("is_causal"), optional(floatAttr("scale", 0.05, 2.0))};
  s.propose = [](const OpContext& ctx, int k, Rng& rng) {
    TensorType t = ctx.x();
    int r = t.rank();
    require(r >= 2, "sdpa takes q of rank 2 or more");
    if (k == 1) t.shape[r - 2] = ctx.x().shape[r - 2] + (rng.chance(0.5) ? 0 : rng.uniform(-1, 2));
    if (k == 2) {
      if (ctx.in.size() > 1 && ctx.x(1).rank() == r) t.shape[r - 2] = ctx.x(1).shape[r - 2];
      t.shape[r - 1] = rng.chance(0.5) ? t.shape[r - 1] : rng.uniform(1, 8);
    }
    t.shape[r - 2] = std::max<int64_t>(t.shape[r - 2], 1);
    return t;
  };
  s.infer = [](const OpContext& ctx) {
    const TensorType &q = ctx.x(0), &k = ctx.x(1), &v = ctx.x(2);
    int r = q.rank();
    require(k.rank() == r && v.rank() == r, "q, k and v must have one rank");
    require(k.dtype == q.dtype && v.dtype == q.dtype, "q, k and v must have one dtype");
    for (int d = 0; d < r - 2; ++d) require(k.shape[d] == q.shape[d] && v.shape[d] == q.shape[d], "q, k and v share batch dims");
    require(k.shape[r - 1] == q.shape[r - 1], "k's last dim must be q's");
    require(v.shape[r - 2] == k.shape[r - 2], "v's sequence dim must be k's");
    require(k.shape[r - 2] >= 1 && q.shape[r - 2] >= 1, "q and k need a non-empty sequence");
    TensorType out = q;
    out.shape[r - 1] = v.shape[r - 1];
    return std::vector<TensorType>{out};
  };
  s.range = [](const OpContext& ctx) { return std::vector<Interval>{ctx.ranges[2]}; };
  c.add(std::move(s));
}

}  // namespace

void addLinearAlgebra(OpCatalog& c) {
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
  scaledDotProductAttention(c);
  functionalLinear(c, "linear", true);
  functionalLinear(c, "linear_nobias", false);
}

}  // namespace tcfuzz::gen::ops
