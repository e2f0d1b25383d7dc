// Shape families: splitting and joining (chunk, split, unbind, cat, stack), slicing, gathers and
// masked fills.
#include "generators/ops/shape/ShapeCommon.h"

namespace tcfuzz::gen::ops {
namespace {

/// Most outputs a splitting op may return (each becomes a Python variable).
constexpr size_t kMaxOutputs = 8;

/// One output per piece: input `t` cut along `dim` into pieces of the given sizes.
std::vector<TensorType> pieces(const TensorType& t, int dim, const Shape& sizes) {
  require(sizes.size() <= kMaxOutputs, fmt::format("at most {} pieces, not {}", kMaxOutputs, sizes.size()));
  std::vector<TensorType> out;
  for (auto n : sizes) {
    TensorType p = t;
    p.shape[dim] = n;
    out.push_back(p);
  }
  return out;
}

/// Sizes of cutting `size` into pieces of `step` (the last one shorter).
Shape evenPieces(int64_t size, int64_t step) {
  Shape out;
  for (int64_t at = 0; at < size; at += step) out.push_back(std::min(step, size - at));
  return out;
}

/// Union of all input ranges (cat, stack).
std::vector<Interval> unionOfInputs(const OpContext& ctx) {
  Interval r = ctx.ranges.at(0);
  for (const auto& x : ctx.ranges) r = unionI(r, x);
  return {r};
}

/// The index interval [0, n-1] an index input must lie in.
Interval indexBelow(int64_t n) { return {0, static_cast<double>(n - 1)}; }

}  // namespace

// --- splitting and joining -------------------------------------------------------------------

void addSplitsAndJoins(OpCatalog& c) {
  {
    OpSpec s = shapeOp("chunk", "torch.chunk({0}, {chunks}, {dim})", "aten::chunk({0}, {chunks}, {dim})", 1);
    s.tupleResult = true;  // a sequence even when it holds one piece
    s.view = true;
    s.attrs = {intAttr("chunks", 1, static_cast<int64_t>(kMaxOutputs)), dimAttr()};
    s.sample = [](OpContext& ctx, Rng& rng) {
      int64_t d = drawDim(rng, ctx.x().rank());
      ctx.attrs["dim"] = d;
      ctx.attrs["chunks"] = rng.uniform(1, std::min<int64_t>(kMaxOutputs, ctx.x().shape[wrapDim(d, ctx.x().rank())] + 1));
    };
    s.infer = [](const OpContext& ctx) {
      // torch: pieces of ceil(size / chunks), so there may be fewer than `chunks` of them.
      int d = dimOf(ctx, "dim");
      int64_t size = ctx.x().shape[d], chunks = ctx.attrInt("chunks");
      require(chunks >= 1, "chunk: chunks must be positive");
      return pieces(ctx.x(), d, evenPieces(size, (size + chunks - 1) / chunks));
    };
    add(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("split", "torch.split({0}, {split_size}, {dim})", "aten::split.Tensor({0}, {split_size}, {dim})", 1);
    s.tupleResult = true;  // a sequence even when it holds one piece
    s.view = true;
    s.attrs = {intAttr("split_size", 1, 1 << 14), dimAttr()};
    s.sample = [](OpContext& ctx, Rng& rng) {
      int64_t d = drawDim(rng, ctx.x().rank());
      int64_t size = ctx.x().shape[wrapDim(d, ctx.x().rank())];
      int64_t fewest = (size + kMaxOutputs - 1) / kMaxOutputs;
      ctx.attrs["dim"] = d;
      ctx.attrs["split_size"] = rng.uniform(std::max<int64_t>(fewest, 1), size + 1);
    };
    s.constraints = intConstraints([](const auto& e) {
      // At most kMaxOutputs pieces: split_size * kMaxOutputs >= size.
      int d = wrapDim(e.fixed("dim"), e.rank(0));
      return std::vector{e.attr("split_size") * static_cast<int>(kMaxOutputs) >= e.dim(0, d)};
    });
    s.infer = [](const OpContext& ctx) {
      int d = dimOf(ctx, "dim");
      int64_t step = ctx.attrInt("split_size");
      require(step >= 1, "split: split_size must be positive");
      return pieces(ctx.x(), d, evenPieces(ctx.x().shape[d], step));
    };
    add(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("split_sizes", "torch.split({0}, {split_sizes}, {dim})",
                       "aten::split_with_sizes({0}, {split_sizes}, {dim})", 1);
    s.tupleResult = true;  // a sequence even when it holds one piece
    s.view = true;
    s.attrs = {intListAttr("split_sizes", 1, 1 << 14), dimAttr()};
    s.sample = [](OpContext& ctx, Rng& rng) {
      // A random composition of the dim's size into 1..4 positive parts.
      int64_t d = drawDim(rng, ctx.x().rank());
      int64_t size = ctx.x().shape[wrapDim(d, ctx.x().rank())];
      int64_t parts = rng.uniform(1, std::min<int64_t>(size, 4));
      Shape cuts;
      for (int64_t i = 1; i < size; ++i) cuts.push_back(i);
      std::shuffle(cuts.begin(), cuts.end(), rng.engine());
      cuts.resize(parts - 1);
      cuts.push_back(0);
      cuts.push_back(size);
      std::sort(cuts.begin(), cuts.end());
      Shape sizes;
      for (size_t i = 1; i < cuts.size(); ++i) sizes.push_back(cuts[i] - cuts[i - 1]);
      ctx.attrs["dim"] = d;
      ctx.attrs["split_sizes"] = sizes;
    };
    s.constraints = intConstraints([](const auto& e) {
      int d = wrapDim(e.fixed("dim"), e.rank(0));
      using Cond = decltype(e.dim(0, d) >= 1);
      int n = e.length("split_sizes");
      if (n == 0) return std::vector<Cond>{e.dim(0, d) <= 0};  // unsatisfiable: no pieces
      std::vector<Cond> out;
      auto sum = e.attr("split_sizes", 0);
      out.push_back(e.attr("split_sizes", 0) >= 1);
      for (int i = 1; i < n; ++i) {
        sum = sum + e.attr("split_sizes", i);
        out.push_back(e.attr("split_sizes", i) >= 1);
      }
      out.push_back(sum == e.dim(0, d));
      return out;
    });
    s.infer = [](const OpContext& ctx) {
      int d = dimOf(ctx, "dim");
      Shape sizes = ctx.attrInts("split_sizes");
      int64_t total = 0;
      for (auto n : sizes) {
        require(n >= 1, "split: sizes must be positive");
        total += n;
      }
      require(total == ctx.x().shape[d], "split: sizes must sum to the size of dim");
      return pieces(ctx.x(), d, sizes);
    };
    add(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("tensor_split", "torch.tensor_split({0}, {sections}, {dim})",
                       "aten::tensor_split.sections({0}, {sections}, {dim})", 1);
    s.tupleResult = true;  // a sequence even when it holds one piece
    s.view = true;
    s.attrs = {intAttr("sections", 1, static_cast<int64_t>(kMaxOutputs)), dimAttr()};
    s.sample = [](OpContext& ctx, Rng& rng) {
      int64_t d = drawDim(rng, ctx.x().rank());
      ctx.attrs["dim"] = d;
      ctx.attrs["sections"] = rng.uniform(1, std::min<int64_t>(kMaxOutputs, ctx.x().shape[wrapDim(d, ctx.x().rank())]));
    };
    s.constraints = intConstraints([](const auto& e) {
      int d = wrapDim(e.fixed("dim"), e.rank(0));
      return std::vector{e.attr("sections") <= e.dim(0, d)};  // no empty piece
    });
    s.infer = [](const OpContext& ctx) {
      // The first size % sections pieces get one extra element.
      int d = dimOf(ctx, "dim");
      int64_t size = ctx.x().shape[d], n = ctx.attrInt("sections");
      require(n >= 1 && n <= size, "tensor_split: sections must lie in [1, size of dim]");
      Shape sizes;
      for (int64_t i = 0; i < n; ++i) sizes.push_back(size / n + (i < size % n ? 1 : 0));
      return pieces(ctx.x(), d, sizes);
    };
    add(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("unbind", "torch.unbind({0}, {dim})", "aten::unbind.int({0}, {dim})", 1);
    s.tupleResult = true;  // a sequence even when it holds one piece
    s.view = true;
    s.attrs = {dimAttr()};
    s.sample = [](OpContext& ctx, Rng& rng) {
      // Prefer a short dim: one output per element along it.
      Shape shortDims;
      for (int d = 0; d < ctx.x().rank(); ++d)
        if (ctx.x().shape[d] <= static_cast<int64_t>(kMaxOutputs)) shortDims.push_back(d);
      ctx.attrs["dim"] = shortDims.empty() ? drawDim(rng, ctx.x().rank()) : rng.pick(shortDims);
    };
    s.infer = [](const OpContext& ctx) {
      int d = dimOf(ctx, "dim");
      int64_t n = ctx.x().shape[d];
      require(n <= static_cast<int64_t>(kMaxOutputs), fmt::format("unbind: at most {} outputs", kMaxOutputs));
      TensorType t = ctx.x();
      t.shape.erase(t.shape.begin() + d);
      return std::vector<TensorType>(n, t);
    };
    add(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("cat", "torch.cat([{*}], dim={dim})", "aten::cat({*}, {dim})", 1);
    s.minInputs = 2;
    s.maxInputs = 4;
    s.attrs = {dimAttr()};
    s.sample = [](OpContext& ctx, Rng& rng) { ctx.attrs["dim"] = drawDim(rng, ctx.x().rank()); };
    s.propose = [](const OpContext& ctx, int, Rng& rng) {
      TensorType t = ctx.x();
      t.shape[dimOf(ctx, "dim")] = rng.uniform(1, maxDimOf(ctx));
      return t;
    };
    s.infer = [](const OpContext& ctx) {
      int d = dimOf(ctx, "dim");
      TensorType t = ctx.x();
      for (size_t k = 1; k < ctx.in.size(); ++k) {
        const TensorType& x = ctx.x(k);
        require(x.rank() == t.rank(), "cat: inputs must have the same rank");
        for (int a = 0; a < t.rank(); ++a)
          require(a == d || x.shape[a] == t.shape[a], fmt::format("cat: inputs differ at dim {}", a));
        t.shape[d] += x.shape[d];
        t.dtype = promote(t.dtype, x.dtype);
      }
      return std::vector<TensorType>{t};
    };
    s.range = unionOfInputs;
    add(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("stack", "torch.stack([{*}], dim={dim})", "aten::stack({*}, {dim})");
    s.minInputs = 2;
    s.maxInputs = 4;
    s.attrs = {dimAttr()};
    s.sample = [](OpContext& ctx, Rng& rng) { ctx.attrs["dim"] = drawDim(rng, ctx.x().rank() + 1); };
    s.infer = [](const OpContext& ctx) {
      TensorType t = ctx.x();
      int d = dimOf(ctx, "dim", t.rank() + 1);
      for (size_t k = 1; k < ctx.in.size(); ++k) {
        require(ctx.x(k).shape == t.shape, "stack: inputs must have the same shape");
        t.dtype = promote(t.dtype, ctx.x(k).dtype);
      }
      t.shape.insert(t.shape.begin() + d, static_cast<int64_t>(ctx.in.size()));
      return std::vector<TensorType>{t};
    };
    s.range = unionOfInputs;
    add(c, std::move(s));
  }
}

// --- slicing and gathers -----------------------------------------------------------------------

void addSlicesAndGathers(OpCatalog& c) {
  {
    // Example of an op with integer constraints: Z3 solves start/length when a node violates them.
    OpSpec s = shapeOp("narrow", "torch.narrow({0}, {dim}, {start}, {length})", "aten::narrow({0}, {dim}, {start}, {length})", 1);
    s.view = true;
    s.attrs = {dimAttr(), intAttr("start", 0, 64), intAttr("length", 1, 64)};
    s.sample = [](OpContext& ctx, Rng& rng) {
      int64_t d = drawDim(rng, ctx.x().rank());
      int64_t size = ctx.x().shape[wrapDim(d, ctx.x().rank())];
      int64_t length = rng.uniform(1, size);
      ctx.attrs["dim"] = d;
      ctx.attrs["length"] = length;
      ctx.attrs["start"] = rng.uniform(0, size - length);
    };
    s.constraints = intConstraints([](const auto& e) {
      int d = wrapDim(e.fixed("dim"), e.rank(0));
      return std::vector{e.attr("start") + e.attr("length") <= e.dim(0, d)};
    });
    s.infer = [](const OpContext& ctx) {
      TensorType t = ctx.x();
      t.shape[wrapDim(ctx.attrInt("dim"), t.rank())] = ctx.attrInt("length");
      return std::vector<TensorType>{t};
    };
    add(c, std::move(s));
  }
  {
    // x[:, :, start:end:step] with `dim` leading full slices; an end past the size is clamped.
    OpSpec s = shapeOp("slice", "{0}[(slice(None),) * {dim} + (slice({start}, {end}, {step}),)]",
                       "aten::slice.Tensor({0}, {dim}, {start}, {end}, {step})", 1);
    s.view = true;
    s.attrs = {intAttr("dim", 0, 7), intAttr("start", 0, 64), intAttr("end", 1, 72), intAttr("step", 1, 4)};
    s.sample = [](OpContext& ctx, Rng& rng) {
      drawSliceAttrs(ctx, rng, 0.2);
      ctx.attrs["step"] = rng.uniform(1, 3);
    };
    s.constraints = intConstraints([](const auto& e) {
      int d = wrapDim(e.fixed("dim"), e.rank(0));
      return std::vector{e.attr("start") < e.dim(0, d), e.attr("start") < e.attr("end")};
    });
    s.infer = [](const OpContext& ctx) {
      int64_t d = ctx.attrInt("dim");
      require(d >= 0 && d < ctx.x().rank(), "slice: dim must lie in [0, rank)");
      int64_t size = ctx.x().shape[d];
      int64_t start = std::min(ctx.attrInt("start"), size), end = std::min(ctx.attrInt("end"), size);
      int64_t step = ctx.attrInt("step");
      require(start >= 0 && step >= 1, "slice: start must be non-negative and step positive");
      require(end > start, "slice: the slice is empty");
      TensorType t = ctx.x();
      t.shape[d] = (end - start + step - 1) / step;
      return std::vector<TensorType>{t};
    };
    add(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("select", "{0}.select({dim}, {index})", "aten::select.int({0}, {dim}, {index})", 1);
    s.view = true;
    s.attrs = {dimAttr(), intAttr("index", -64, 63)};
    s.sample = [](OpContext& ctx, Rng& rng) {
      int64_t d = drawDim(rng, ctx.x().rank());
      int64_t size = ctx.x().shape[wrapDim(d, ctx.x().rank())];
      ctx.attrs["dim"] = d;
      ctx.attrs["index"] = rng.uniform(-size, size - 1);
    };
    s.constraints = intConstraints([](const auto& e) {
      int d = wrapDim(e.fixed("dim"), e.rank(0));
      return std::vector{e.attr("index") < e.dim(0, d), e.attr("index") + e.dim(0, d) >= 0};
    });
    s.infer = [](const OpContext& ctx) {
      TensorType t = ctx.x();
      int d = dimOf(ctx, "dim");
      int64_t index = ctx.attrInt("index");
      require(index >= -t.shape[d] && index < t.shape[d], "select: index out of range");
      t.shape.erase(t.shape.begin() + d);
      return std::vector<TensorType>{t};
    };
    add(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("index_select", "torch.index_select({0}, {dim}, {1})", "aten::index_select({0}, {dim}, {1})", 1);
    s.minInputs = s.maxInputs = 2;
    s.accepts = {kAllDTypes, kInts};
    s.attrs = {dimAttr()};
    s.sample = [](OpContext& ctx, Rng& rng) { ctx.attrs["dim"] = drawDim(rng, ctx.x().rank()); };
    s.propose = [](const OpContext& ctx, int, Rng& rng) {
      return TensorType{{rng.uniform(1, maxDimOf(ctx))}, DType::Int64, ctx.x().device};
    };
    s.need = [](const OpContext& ctx, int k) -> std::optional<Interval> {
      if (k != 1) return std::nullopt;
      return indexBelow(ctx.x().shape[dimOf(ctx, "dim")]);
    };
    s.infer = [](const OpContext& ctx) {
      require(ctx.x(1).rank() <= 1, "index_select: the index must be a vector");
      TensorType t = ctx.x();
      t.shape[dimOf(ctx, "dim")] = ctx.x(1).numel();
      return std::vector<TensorType>{t};
    };
    add(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("gather", "torch.gather({0}, {dim}, {1})", "aten::gather({0}, {dim}, {1})");
    s.minInputs = s.maxInputs = 2;
    s.accepts = {kAllDTypes, kInts};
    s.attrs = {dimAttr()};
    s.sample = [](OpContext& ctx, Rng& rng) { ctx.attrs["dim"] = drawDim(rng, ctx.x().rank()); };
    s.propose = [](const OpContext& ctx, int, Rng& rng) {
      // Same rank; no larger than the input except along dim.
      TensorType t{ctx.x().shape, DType::Int64, ctx.x().device};
      int d = dimOf(ctx, "dim");
      for (int a = 0; a < t.rank(); ++a) t.shape[a] = a == d ? rng.uniform(1, maxDimOf(ctx)) : rng.uniform(1, t.shape[a]);
      return t;
    };
    s.need = [](const OpContext& ctx, int k) -> std::optional<Interval> {
      if (k != 1) return std::nullopt;
      return indexBelow(ctx.x().rank() == 0 ? 1 : ctx.x().shape[dimOf(ctx, "dim")]);
    };
    s.infer = [](const OpContext& ctx) {
      const TensorType &x = ctx.x(), &index = ctx.x(1);
      int d = dimOf(ctx, "dim");
      require(index.rank() == x.rank(), "gather: index must have the input's rank");
      for (int a = 0; a < x.rank(); ++a)
        require(a == d || index.shape[a] <= x.shape[a], fmt::format("gather: index larger than the input at dim {}", a));
      return std::vector<TensorType>{TensorType{index.shape, x.dtype, x.device}};
    };
    add(c, std::move(s));
  }
  {
    // dim None: the flattened input indexed by the flattened indices.
    OpSpec s = shapeOp("take_along_dim", "torch.take_along_dim({0}, {1}{?dim})", "aten::take_along_dim({0}, {1}, {dim})", 1);
    s.minInputs = s.maxInputs = 2;
    s.accepts = {kAllDTypes, only(DType::Int64)};
    s.denseInput = true;  // with dim None it views its input flat: a transposed input is refused
    s.attrs = {optional(dimAttr())};
    s.sample = [](OpContext& ctx, Rng& rng) {
      if (ctx.hasAttr("dim")) ctx.attrs["dim"] = drawDim(rng, ctx.x().rank());
    };
    s.propose = [](const OpContext& ctx, int, Rng& rng) {
      TensorType t{ctx.x().shape, DType::Int64, ctx.x().device};
      if (!ctx.hasAttr("dim")) {
        t.shape = {rng.uniform(1, maxDimOf(ctx))};
        return t;
      }
      // Same rank; broadcasts with the input except along dim.
      int d = dimOf(ctx, "dim");
      for (int a = 0; a < t.rank(); ++a)
        if (a == d) t.shape[a] = rng.uniform(1, maxDimOf(ctx));
        else if (rng.chance(0.3)) t.shape[a] = 1;
      return t;
    };
    s.need = [](const OpContext& ctx, int k) -> std::optional<Interval> {
      if (k != 1) return std::nullopt;
      return indexBelow(ctx.hasAttr("dim") ? ctx.x().shape[dimOf(ctx, "dim")] : ctx.x().numel());
    };
    s.infer = [](const OpContext& ctx) {
      const TensorType &x = ctx.x(), &index = ctx.x(1);
      if (!ctx.hasAttr("dim")) return std::vector<TensorType>{TensorType{{index.numel()}, x.dtype, x.device}};
      int d = dimOf(ctx, "dim");
      require(index.rank() == x.rank(), "take_along_dim: indices must have the input's rank");
      Shape a = x.shape, b = index.shape;
      a[d] = b[d] = 1;
      TensorType t{broadcastShapes(a, b), x.dtype, x.device};
      t.shape[d] = index.shape[d];
      return std::vector<TensorType>{t};
    };
    add(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("masked_fill", "{0}.masked_fill({1}, {value})", "aten::masked_fill.Scalar({0}, {1}, {value})");
    s.minInputs = s.maxInputs = 2;
    s.accepts = {kAllDTypes, only(DType::Bool)};
    s.attrs = {floatAttr("value", -2, 2)};
    s.propose = [](const OpContext& ctx, int, Rng& rng) {
      return TensorType{broadcastableTo(ctx.x().shape, rng), DType::Bool, ctx.x().device};
    };
    s.infer = [](const OpContext& ctx) {
      TensorType t = ctx.x();
      t.shape = broadcastShapes(ctx.x(0).shape, ctx.x(1).shape);
      return std::vector<TensorType>{t};
    };
    s.range = rangeWithFill("value");
    add(c, std::move(s));
  }
}

}  // namespace tcfuzz::gen::ops
