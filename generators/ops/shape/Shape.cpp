// Shape families: views and reshapes here; splitting, joining, slicing, gathers and masked fills
// in SplitAndSlice.cpp; reorderings, repeats, triangular and diagonal views, and padding in every
// mode in ReorderAndPad.cpp. addShapeOps registers them all, in catalog order.
#include "generators/ops/shape/ShapeCommon.h"

namespace tcfuzz::gen {
namespace {

using namespace ops;

/// `n` split into `parts` factors (1s allowed), the prime factors dealt at random.
Shape randomFactors(int64_t n, int parts, Rng& rng) {
  Shape out(std::max(parts, 1), 1);
  for (int64_t p = 2; n > 1;) {
    if (p * p > n) p = n;  // what is left is prime
    if (n % p == 0) {
      out[rng.uniform(0, static_cast<int64_t>(out.size()) - 1)] *= p;
      n /= p;
    } else {
      ++p;
    }
  }
  if (parts == 0) out.clear();
  return out;
}

/// Adds a view or reshape entry that also takes complex tensors (it moves values, never computes).
void addWithComplex(OpCatalog& c, OpSpec s) {
  s.accepts[0] = s.accepts[0] | kComplex;
  add(c, std::move(s));
}

/// Replaces one entry with -1 (inferred by torch) with probability p.
void maybeInferOne(Shape& s, double p, Rng& rng) {
  if (!s.empty() && rng.chance(p)) s[rng.uniform(0, static_cast<int64_t>(s.size()) - 1)] = -1;
}

/// The size a list of sizes with at most one -1 describes for `numel` elements (view, unflatten).
Shape inferSizes(Shape sizes, int64_t numel, const std::string& what) {
  int64_t known = 1;
  int unknown = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      require(unknown < 0, what + ": only one size may be -1");
      unknown = static_cast<int>(i);
      continue;
    }
    require(sizes[i] >= 1, what + ": sizes must be positive or -1");
    require(sizes[i] <= numel && known <= numel / sizes[i], what + ": sizes hold more elements than the input");
    known *= sizes[i];
  }
  if (unknown >= 0) {
    require(numel % known == 0, what + ": the known sizes must divide the number of elements");
    sizes[unknown] = numel / known;
  } else {
    require(known == numel, what + ": sizes must hold exactly the input's elements");
  }
  return sizes;
}

// --- views and reshapes ----------------------------------------------------------------------

void addReshapes(OpCatalog& c) {
  // view raises on a layout it cannot view (a transposed input): repairIllegalViews turns a view of
  // a value not provably contiguous into reshape, which copies only when it has to.
  for (auto [name, python, aten] :
       {std::tuple{"view", "{0}.view({shape})", "aten::view({0}, {shape})"},
        std::tuple{"reshape", "torch.reshape({0}, {shape})", "aten::reshape({0}, {shape})"}}) {
    OpSpec s = shapeOp(name, python, aten);
    s.view = true;  // reshape aliases whenever it can
    s.attrs = {intListAttr("shape", -1, 1 << 16)};
    s.sample = [](OpContext& ctx, Rng& rng) {
      int64_t n = ctx.x().numel();
      int rank = static_cast<int>(rng.uniform(n == 1 ? 0 : 1, maxRankOf(ctx)));
      Shape shape = randomFactors(n, rank, rng);
      maybeInferOne(shape, 0.3, rng);
      ctx.attrs["shape"] = shape;
    };
    s.infer = [](const OpContext& ctx) {
      TensorType t = ctx.x();
      t.shape = inferSizes(ctx.attrInts("shape"), ctx.x().numel(), "view");
      return std::vector<TensorType>{t};
    };
    addWithComplex(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("permute", "{0}.permute({dims})", "aten::permute({0}, {dims})");
    s.view = true;
    s.attrs = {intListAttr("dims", -8, 7)};
    s.sample = [](OpContext& ctx, Rng& rng) { ctx.attrs["dims"] = distinctDims(rng, ctx.x().rank(), ctx.x().rank()); };
    s.infer = [](const OpContext& ctx) {
      Shape dims = ctx.attrInts("dims");
      require(static_cast<int>(dims.size()) == ctx.x().rank(), "permute needs one dim per input dim");
      TensorType t = ctx.x();
      auto order = wrapDistinct(dims, t.rank(), "permute");
      for (size_t i = 0; i < order.size(); ++i) t.shape[i] = ctx.x().shape[order[i]];
      return std::vector<TensorType>{t};
    };
    addWithComplex(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("transpose", "torch.transpose({0}, {dim0}, {dim1})", "aten::transpose.int({0}, {dim0}, {dim1})");
    s.view = true;
    s.attrs = {dimAttr("dim0"), dimAttr("dim1")};
    s.sample = [](OpContext& ctx, Rng& rng) {
      ctx.attrs["dim0"] = drawDim(rng, ctx.x().rank());
      ctx.attrs["dim1"] = drawDim(rng, ctx.x().rank());
    };
    s.infer = [](const OpContext& ctx) {
      TensorType t = ctx.x();
      int a = dimOf(ctx, "dim0"), b = dimOf(ctx, "dim1");
      if (t.rank() > 0) std::swap(t.shape[a], t.shape[b]);
      return std::vector<TensorType>{t};
    };
    addWithComplex(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("expand", "{0}.expand({shape})", "aten::expand({0}, {shape})");
    s.view = true;
    s.attrs = {intListAttr("shape", -1, 1 << 16)};
    s.sample = [](OpContext& ctx, Rng& rng) {
      // Size-1 dims grow, others stay (or are written -1); up to two new leading dims.
      const Shape& in = ctx.x().shape;
      int lead = static_cast<int>(rng.uniform(0, std::clamp(maxRankOf(ctx) - ctx.x().rank(), 0, 2)));
      for (int attempt = 0; attempt < 4; ++attempt) {
        Shape shape;
        for (int i = 0; i < lead; ++i) shape.push_back(rng.uniform(1, std::min<int64_t>(maxDimOf(ctx), 4)));
        for (auto d : in) shape.push_back(d == 1 && rng.chance(0.7) ? rng.uniform(1, maxDimOf(ctx)) : rng.chance(0.3) ? -1 : d);
        int64_t n = 1;
        for (size_t i = 0; i < shape.size(); ++i) n *= shape[i] == -1 ? in[i - lead] : shape[i];
        if (n <= maxElementsOf(ctx) || attempt == 3) {
          ctx.attrs["shape"] = n <= maxElementsOf(ctx) ? shape : in;
          return;
        }
      }
    };
    s.infer = [](const OpContext& ctx) {
      Shape shape = ctx.attrInts("shape");
      const Shape& in = ctx.x().shape;
      require(shape.size() >= in.size(), "expand cannot drop dims");
      size_t lead = shape.size() - in.size();
      TensorType t = ctx.x();
      t.shape.clear();
      for (size_t i = 0; i < shape.size(); ++i) {
        if (i < lead) {
          require(shape[i] >= 1, "expand: new leading dims must be positive");
          t.shape.push_back(shape[i]);
          continue;
        }
        int64_t d = in[i - lead];
        require(shape[i] == -1 || shape[i] == d || (d == 1 && shape[i] >= 1),
                "expand: only size-1 dims may change size");
        t.shape.push_back(shape[i] == -1 ? d : shape[i]);
      }
      return std::vector<TensorType>{t};
    };
    addWithComplex(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("squeeze", "torch.squeeze({0}, {dim})", "aten::squeeze.dim({0}, {dim})");
    s.view = true;
    s.attrs = {dimAttr()};
    s.sample = [](OpContext& ctx, Rng& rng) {
      // Prefer a size-1 dim (squeezing any other dim is a no-op).
      Shape ones;
      for (int d = 0; d < ctx.x().rank(); ++d)
        if (ctx.x().shape[d] == 1) ones.push_back(d);
      ctx.attrs["dim"] = !ones.empty() && rng.chance(0.8) ? rng.pick(ones) : drawDim(rng, ctx.x().rank());
    };
    s.infer = [](const OpContext& ctx) {
      TensorType t = ctx.x();
      int d = dimOf(ctx, "dim");
      if (t.rank() > 0 && t.shape[d] == 1) t.shape.erase(t.shape.begin() + d);
      return std::vector<TensorType>{t};
    };
    addWithComplex(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("squeeze_dims", "torch.squeeze({0}, {dims})", "aten::squeeze.dims({0}, {dims})", 1);
    s.view = true;
    s.attrs = {intListAttr("dims", -8, 7)};
    s.sample = [](OpContext& ctx, Rng& rng) {
      int r = ctx.x().rank();
      ctx.attrs["dims"] = distinctDims(rng, r, static_cast<int>(rng.uniform(1, r)));
    };
    s.infer = [](const OpContext& ctx) {
      auto dims = wrapDistinct(ctx.attrInts("dims"), ctx.x().rank(), "squeeze");
      TensorType t = ctx.x();
      t.shape.clear();
      for (int d = 0; d < ctx.x().rank(); ++d) {
        bool drop = ctx.x().shape[d] == 1 && std::find(dims.begin(), dims.end(), d) != dims.end();
        if (!drop) t.shape.push_back(ctx.x().shape[d]);
      }
      return std::vector<TensorType>{t};
    };
    addWithComplex(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("unsqueeze", "torch.unsqueeze({0}, {dim})", "aten::unsqueeze({0}, {dim})");
    s.view = true;
    s.attrs = {dimAttr()};
    s.sample = [](OpContext& ctx, Rng& rng) { ctx.attrs["dim"] = drawDim(rng, ctx.x().rank() + 1); };
    s.infer = [](const OpContext& ctx) {
      TensorType t = ctx.x();
      int d = dimOf(ctx, "dim", t.rank() + 1);
      t.shape.insert(t.shape.begin() + d, 1);
      return std::vector<TensorType>{t};
    };
    addWithComplex(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("flatten", "torch.flatten({0}, {start_dim}, {end_dim})",
                       "aten::flatten.using_ints({0}, {start_dim}, {end_dim})");
    s.view = true;
    s.attrs = {dimAttr("start_dim"), dimAttr("end_dim")};
    s.sample = [](OpContext& ctx, Rng& rng) {
      int r = std::max(ctx.x().rank(), 1);
      int64_t start = rng.uniform(0, r - 1), end = rng.uniform(start, r - 1);
      ctx.attrs["start_dim"] = rng.chance(0.3) ? start - r : start;
      ctx.attrs["end_dim"] = rng.chance(0.5) ? end - r : end;
    };
    s.infer = [](const OpContext& ctx) {
      TensorType t = ctx.x();
      int start = dimOf(ctx, "start_dim"), end = dimOf(ctx, "end_dim");
      require(start <= end, "flatten: start_dim cannot come after end_dim");
      if (t.rank() == 0) return std::vector<TensorType>{TensorType{{1}, t.dtype, t.device}};
      int64_t merged = 1;
      for (int d = start; d <= end; ++d) merged *= t.shape[d];
      t.shape.erase(t.shape.begin() + start, t.shape.begin() + end + 1);
      t.shape.insert(t.shape.begin() + start, merged);
      return std::vector<TensorType>{t};
    };
    addWithComplex(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("unflatten", "torch.unflatten({0}, {dim}, {sizes})", "aten::unflatten.int({0}, {dim}, {sizes})", 1);
    s.view = true;
    s.attrs = {dimAttr(), intListAttr("sizes", -1, 1 << 16)};
    s.sample = [](OpContext& ctx, Rng& rng) {
      int64_t d = drawDim(rng, ctx.x().rank());
      int room = std::max(1, maxRankOf(ctx) - ctx.x().rank() + 1);
      Shape sizes = randomFactors(ctx.x().shape[wrapDim(d, ctx.x().rank())], static_cast<int>(rng.uniform(1, std::min(room, 3))), rng);
      maybeInferOne(sizes, 0.3, rng);
      ctx.attrs["dim"] = d;
      ctx.attrs["sizes"] = sizes;
    };
    s.infer = [](const OpContext& ctx) {
      TensorType t = ctx.x();
      int d = dimOf(ctx, "dim");
      Shape sizes = ctx.attrInts("sizes");
      require(!sizes.empty(), "unflatten: sizes must be non-empty");
      sizes = inferSizes(sizes, t.shape[d], "unflatten");
      t.shape.erase(t.shape.begin() + d);
      t.shape.insert(t.shape.begin() + d, sizes.begin(), sizes.end());
      return std::vector<TensorType>{t};
    };
    addWithComplex(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("movedim", "torch.movedim({0}, {source}, {destination})",
                       "aten::movedim.intlist({0}, {source}, {destination})", 1);
    s.view = true;
    s.attrs = {intListAttr("source", -8, 7), intListAttr("destination", -8, 7)};
    s.sample = [](OpContext& ctx, Rng& rng) {
      int r = ctx.x().rank();
      int n = static_cast<int>(rng.uniform(1, r));
      ctx.attrs["source"] = distinctDims(rng, r, n);
      ctx.attrs["destination"] = distinctDims(rng, r, n);
    };
    s.infer = [](const OpContext& ctx) {
      int r = ctx.x().rank();
      std::vector<int> order = movedimOrder(ctx);
      TensorType t = ctx.x();
      for (int i = 0; i < r; ++i) t.shape[i] = ctx.x().shape[order[i]];
      return std::vector<TensorType>{t};
    };
    addWithComplex(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("t", "{0}.t()", "aten::t({0})");
    s.view = true;
    s.maxRank = 2;
    s.infer = [](const OpContext& ctx) {
      require(ctx.x().rank() <= 2, "t takes a tensor of at most 2 dims");
      TensorType t = ctx.x();
      std::reverse(t.shape.begin(), t.shape.end());
      return std::vector<TensorType>{t};
    };
    addWithComplex(c, std::move(s));
  }
  {
    // as_strided over input 0's elements in row-major order (a contiguous clone first: as_strided's
    // offset counts from the start of the storage, which a view of input 0 would not start at, and
    // compiled code need not keep an intermediate's storage). The view is a sub-grid
    // (steps, gaps, dims reordered) or overlaps itself (sliding windows, a stride of 0): reading an
    // overlapping view is defined, and the emitter clones before any in-place write to a view.
    OpSpec s = shapeOp("as_strided", "{0}.clone(memory_format=torch.contiguous_format).as_strided({size}, {stride}, {storage_offset})",
                       "aten::as_strided({0}, {size}, {stride}, {storage_offset})");
    s.view = true;
    s.attrs = {intListAttr("size", 0, 64), intListAttr("stride", 0, 1 << 16), intAttr("storage_offset", 0, 1 << 16)};
    s.sample = [](OpContext& ctx, Rng& rng) {
      int64_t n = std::max<int64_t>(ctx.x().numel(), 1);
      int rank = static_cast<int>(rng.uniform(1, std::clamp(maxRankOf(ctx), 1, 3)));
      Shape size(rank), stride(rank);
      bool overlapping = rng.chance(0.35);
      int64_t inner = rng.chance(0.3) ? 2 : 1;
      for (int i = rank - 1; i >= 0; --i) {
        size[i] = rng.uniform(1, 5);
        stride[i] = inner;
        inner *= size[i] * (rng.chance(0.25) ? 2 : 1);
      }
      if (overlapping && rank >= 2) {
        // Windows of the inner dim that start `step` apart, step below the window's length; or a
        // stride of 0 that repeats a dim.
        int d = static_cast<int>(rng.uniform(0, rank - 2));
        stride[d] = rng.chance(0.2) ? 0 : rng.uniform(1, std::max<int64_t>(size[rank - 1] - 1, 1));
      }
      if (rank >= 2 && rng.chance(0.3)) {
        int64_t a = rng.uniform(0, rank - 1), b = rng.uniform(0, rank - 1);
        std::swap(size[a], size[b]);
        std::swap(stride[a], stride[b]);
      }
      auto extent = [&] {
        int64_t e = 1;
        for (int i = 0; i < rank; ++i) e += (size[i] - 1) * stride[i];
        return e;
      };
      while (extent() > n) {  // shrink the dim that reaches furthest until the view fits
        int worst = 0;
        for (int i = 1; i < rank; ++i)
          if ((size[i] - 1) * stride[i] > (size[worst] - 1) * stride[worst]) worst = i;
        if (size[worst] > 1) --size[worst];
        else stride[worst] = 0;
      }
      ctx.attrs["size"] = size;
      ctx.attrs["stride"] = stride;
      ctx.attrs["storage_offset"] = rng.uniform(0, n - extent());
    };
    s.infer = [](const OpContext& ctx) {
      Shape size = ctx.attrInts("size"), stride = ctx.attrInts("stride");
      require(size.size() == stride.size(), "as_strided needs one stride per size");
      require(static_cast<int>(size.size()) <= 8, "as_strided takes at most 8 dims");
      int64_t last = ctx.attrInt("storage_offset"), elements = 1;
      for (size_t i = 0; i < size.size(); ++i) {
        require(size[i] >= 0 && stride[i] >= 0, "as_strided sizes and strides must be non-negative");
        elements *= size[i];
        last += size[i] > 0 ? (size[i] - 1) * stride[i] : 0;
      }
      require(elements == 0 || last < ctx.x().numel(), "as_strided must stay inside input 0's elements");
      TensorType t = ctx.x();
      t.shape = size;
      return std::vector<TensorType>{t};
    };
    addWithComplex(c, std::move(s));
  }
  {
    // contiguous returns its input when it already is contiguous.
    OpSpec s = shapeOp("contiguous", "{0}.contiguous()", "aten::contiguous({0})");
    s.view = true;
    s.infer = [](const OpContext& ctx) { return std::vector<TensorType>{ctx.x()}; };
    addWithComplex(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("clone", "torch.clone({0})", "aten::clone({0})");
    s.infer = [](const OpContext& ctx) { return std::vector<TensorType>{ctx.x()}; };
    addWithComplex(c, std::move(s));
  }
}

}  // namespace

void addShapeOps(OpCatalog& c) {
  addReshapes(c);
  ops::addSplitsAndJoins(c);
  ops::addSlicesAndGathers(c);
  ops::addReorderings(c);
  for (auto mode : {"constant", "reflect", "replicate", "circular"}) ops::addPad(c, mode);
}

}  // namespace tcfuzz::gen
