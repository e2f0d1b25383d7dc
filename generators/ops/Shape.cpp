// Shape families: views and reshapes, concatenation and splitting, slicing, gathers, repeats,
// triangular and diagonal views, masked fills, and padding in every mode.
#include <algorithm>
#include <numeric>

#include "generators/ops/Common.h"

namespace tcfuzz::gen {
namespace {

using namespace ops;
using Shape = std::vector<int64_t>;

/// Most outputs a splitting op may return (each becomes a Python variable).
constexpr size_t kMaxOutputs = 8;

// Sampling bounds: the caps when the context has them, small defaults otherwise.
int64_t maxDimOf(const OpContext& ctx) { return ctx.caps ? ctx.caps->maxDim : 8; }
int maxRankOf(const OpContext& ctx) { return ctx.caps ? ctx.caps->maxRank : 4; }
int64_t maxElementsOf(const OpContext& ctx) { return ctx.caps ? ctx.caps->maxElements : 1 << 14; }

/// Outputs must respect the caps: at most maxElements elements, and no rank beyond the caps'
/// (or the inputs', when they already exceed it).
void requireCaps(const OpContext& ctx, const std::vector<TensorType>& outs) {
  if (!ctx.caps) return;
  int rankCap = ctx.caps->maxRank;
  for (const auto& t : ctx.in) rankCap = std::max(rankCap, t.rank());
  for (const auto& t : outs) {
    require(t.rank() <= rankCap, fmt::format("output rank {} exceeds the cap {}", t.rank(), rankCap));
    // Multiply with an overflow guard: dims are >= 1 once inferTypes accepts the node.
    int64_t n = 1;
    for (auto d : t.shape) {
      require(d <= 0 || n <= ctx.caps->maxElements / d, fmt::format("output {} exceeds the element cap", t.str()));
      n *= std::max<int64_t>(d, 1);
    }
  }
}

/// A new entry of the shape family accepting every dtype.
OpSpec shapeOp(std::string name, std::string python, std::string aten, int minRank = 0) {
  OpSpec s = entry(std::move(name), "shape", std::move(python), std::move(aten), kAllDTypes);
  s.minRank = minRank;
  return s;
}

/// Adds an entry whose shape rule also enforces the caps.
OpSpec& add(OpCatalog& c, OpSpec s) {
  s.infer = [rule = std::move(s.infer)](const OpContext& ctx) {
    auto outs = rule(ctx);
    requireCaps(ctx, outs);
    return outs;
  };
  return c.add(std::move(s));
}

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

/// Replaces one entry with -1 (inferred by torch) with probability p.
void maybeInferOne(Shape& s, double p, Rng& rng) {
  if (!s.empty() && rng.chance(p)) s[rng.uniform(0, static_cast<int64_t>(s.size()) - 1)] = -1;
}

/// `count` distinct dims of a rank-`rank` tensor in random order, some written negative.
Shape distinctDims(Rng& rng, int rank, int count) {
  Shape all(rank);
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng.engine());
  all.resize(std::min(count, rank));
  for (auto& d : all)
    if (rng.chance(0.3)) d -= rank;
  return all;
}

/// Wraps each dim; ShapeError when one repeats.
std::vector<int> wrapDistinct(const Shape& dims, int rank, const std::string& what) {
  std::vector<int> out;
  for (auto d : dims) {
    int w = wrapDim(d, rank);
    require(std::find(out.begin(), out.end(), w) == out.end(), what + ": dim " + std::to_string(w) + " repeats");
    out.push_back(w);
  }
  return out;
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

/// The dim attribute `name` wrapped against input 0 (or `rank` when given).
int dimOf(const OpContext& ctx, const std::string& name, int rank = -1) {
  return wrapDim(ctx.attrInt(name), rank < 0 ? ctx.x().rank() : rank);
}

/// Union of all input ranges (cat, stack).
std::vector<Interval> unionOfInputs(const OpContext& ctx) {
  Interval r = ctx.ranges.at(0);
  for (const auto& x : ctx.ranges) r = unionI(r, x);
  return {r};
}

/// Input 0's range joined with a filled-in scalar attribute (or 0 when `attr` is empty).
std::function<std::vector<Interval>(const OpContext&)> rangeWithFill(std::string attr) {
  return [attr](const OpContext& ctx) {
    double v = attr.empty() ? 0.0 : ctx.attrFloat(attr);
    return std::vector<Interval>{unionI(ctx.ranges.at(0), {v, v})};
  };
}

/// The index interval [0, n-1] an index input must lie in.
Interval indexBelow(int64_t n) { return {0, static_cast<double>(n - 1)}; }

// --- views and reshapes ----------------------------------------------------------------------

void addReshapes(OpCatalog& c) {
  // view spells .contiguous() first: the IR does not track strides, and view fails on a
  // non-viewable layout (a transposed input); reshape copies only when it has to.
  for (auto [name, python, aten] :
       {std::tuple{"view", "{0}.contiguous().view({shape})", "aten::view({0}, {shape})"},
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
    add(c, std::move(s));
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
    add(c, std::move(s));
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
    add(c, std::move(s));
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
    add(c, std::move(s));
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
    add(c, std::move(s));
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
    add(c, std::move(s));
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
    add(c, std::move(s));
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
    add(c, std::move(s));
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
    add(c, std::move(s));
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
      auto src = wrapDistinct(ctx.attrInts("source"), r, "movedim source");
      auto dst = wrapDistinct(ctx.attrInts("destination"), r, "movedim destination");
      require(src.size() == dst.size(), "movedim: source and destination must have the same length");
      // Moved dims land at their destinations; the others keep their order in the free slots.
      std::vector<int> order(r, -1);
      for (size_t i = 0; i < src.size(); ++i) order[dst[i]] = src[i];
      int next = 0;
      for (auto& o : order) {
        if (o >= 0) continue;
        while (std::find(src.begin(), src.end(), next) != src.end()) ++next;
        o = next++;
      }
      TensorType t = ctx.x();
      for (int i = 0; i < r; ++i) t.shape[i] = ctx.x().shape[order[i]];
      return std::vector<TensorType>{t};
    };
    add(c, std::move(s));
  }
  {
    // contiguous returns its input when it already is contiguous.
    OpSpec s = shapeOp("contiguous", "{0}.contiguous()", "aten::contiguous({0})");
    s.view = true;
    s.infer = [](const OpContext& ctx) { return std::vector<TensorType>{ctx.x()}; };
    add(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("clone", "torch.clone({0})", "aten::clone({0})");
    s.infer = [](const OpContext& ctx) { return std::vector<TensorType>{ctx.x()}; };
    add(c, std::move(s));
  }
}

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

// --- reorderings, repeats, triangles and windows ------------------------------------------------

void addReorderings(OpCatalog& c) {
  {
    OpSpec s = shapeOp("flip", "torch.flip({0}, {dims})", "aten::flip({0}, {dims})", 1);
    s.attrs = {intListAttr("dims", -8, 7)};
    s.sample = [](OpContext& ctx, Rng& rng) {
      int r = ctx.x().rank();
      ctx.attrs["dims"] = distinctDims(rng, r, static_cast<int>(rng.uniform(1, r)));
    };
    s.infer = [](const OpContext& ctx) {
      wrapDistinct(ctx.attrInts("dims"), ctx.x().rank(), "flip");
      return std::vector<TensorType>{ctx.x()};
    };
    add(c, std::move(s));
  }
  {
    // dims [] rolls the flattened tensor by a single shift.
    OpSpec s = shapeOp("roll", "torch.roll({0}, {shifts}, {dims})", "aten::roll({0}, {shifts}, {dims})");
    s.attrs = {intListAttr("shifts", -16, 16), intListAttr("dims", -8, 7)};
    s.sample = [](OpContext& ctx, Rng& rng) {
      int r = ctx.x().rank();
      Shape dims = r == 0 || rng.chance(0.2) ? Shape{} : distinctDims(rng, r, static_cast<int>(rng.uniform(1, r)));
      Shape shifts;
      for (size_t i = 0; i < std::max<size_t>(dims.size(), 1); ++i) shifts.push_back(rng.uniform(-6, 6));
      ctx.attrs["dims"] = dims;
      ctx.attrs["shifts"] = shifts;
    };
    s.infer = [](const OpContext& ctx) {
      Shape shifts = ctx.attrInts("shifts"), dims = ctx.attrInts("dims");
      if (dims.empty()) {
        require(shifts.size() == 1, "roll: without dims, exactly one shift");
      } else {
        require(shifts.size() == dims.size(), "roll: one shift per dim");
        for (auto d : dims) wrapDim(d, ctx.x().rank());
        require(ctx.x().rank() > 0, "roll: a 0-d tensor has no dims to roll");
      }
      return std::vector<TensorType>{ctx.x()};
    };
    add(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("rot90", "torch.rot90({0}, {k}, {dims})", "aten::rot90({0}, {k}, {dims})", 2);
    s.attrs = {intAttr("k", -4, 4), intListAttr("dims", -8, 7)};
    s.sample = [](OpContext& ctx, Rng& rng) { ctx.attrs["dims"] = distinctDims(rng, ctx.x().rank(), 2); };
    s.infer = [](const OpContext& ctx) {
      Shape dims = ctx.attrInts("dims");
      require(dims.size() == 2, "rot90: dims must name two dims");
      auto w = wrapDistinct(dims, ctx.x().rank(), "rot90");
      TensorType t = ctx.x();
      if (ctx.attrInt("k") % 2 != 0) std::swap(t.shape[w[0]], t.shape[w[1]]);
      return std::vector<TensorType>{t};
    };
    add(c, std::move(s));
  }
  {
    // repeat: one factor per dim, extra factors add leading dims. tile: shorter lists pad with 1s.
    for (auto [name, python, aten, attr] :
         {std::tuple{"repeat", "{0}.repeat({repeats})", "aten::repeat({0}, {repeats})", "repeats"},
          std::tuple{"tile", "torch.tile({0}, {dims})", "aten::tile({0}, {dims})", "dims"}}) {
      bool isTile = std::string(name) == "tile";
      OpSpec s = shapeOp(name, python, aten);
      s.attrs = {intListAttr(attr, 1, 16)};
      std::string key = attr;
      s.sample = [key, isTile](OpContext& ctx, Rng& rng) {
        int r = ctx.x().rank();
        int lo = isTile ? std::max(r - 1, 0) : r;
        int len = static_cast<int>(rng.uniform(lo, std::max(lo, std::min(r + 2, maxRankOf(ctx)))));
        Shape factors(len, 1);
        int64_t budget = maxElementsOf(ctx) / std::max<int64_t>(ctx.x().numel(), 1);
        for (auto& f : factors) {
          f = rng.uniform(1, std::clamp<int64_t>(budget, 1, 3));
          budget /= f;
        }
        ctx.attrs[key] = factors;
      };
      s.infer = [key, isTile](const OpContext& ctx) {
        Shape factors = ctx.attrInts(key);
        Shape shape = ctx.x().shape;
        require(isTile || factors.size() >= shape.size(), "repeat: one factor per dim at least");
        for (auto f : factors) require(f >= 1, "repeat: factors must be positive");
        while (factors.size() < shape.size()) factors.insert(factors.begin(), 1);
        while (shape.size() < factors.size()) shape.insert(shape.begin(), 1);
        TensorType t = ctx.x();
        t.shape.clear();
        for (size_t i = 0; i < shape.size(); ++i) t.shape.push_back(shape[i] * factors[i]);
        return std::vector<TensorType>{t};
      };
      add(c, std::move(s));
    }
  }
  {
    // dim None flattens first.
    OpSpec s = shapeOp("repeat_interleave", "torch.repeat_interleave({0}, {repeats}{?dim})",
                       "aten::repeat_interleave.self_int({0}, {repeats}, {dim})");
    s.attrs = {intAttr("repeats", 1, 4), optional(dimAttr())};
    s.sample = [](OpContext& ctx, Rng& rng) {
      if (ctx.hasAttr("dim")) ctx.attrs["dim"] = drawDim(rng, ctx.x().rank());
    };
    s.infer = [](const OpContext& ctx) {
      TensorType t = ctx.x();
      int64_t repeats = ctx.attrInt("repeats");
      require(repeats >= 1, "repeat_interleave: repeats must be positive");
      if (!ctx.hasAttr("dim")) {
        t.shape = {t.numel() * repeats};
      } else {
        require(t.rank() > 0, "repeat_interleave: a 0-d tensor takes no dim");
        t.shape[dimOf(ctx, "dim")] *= repeats;
      }
      return std::vector<TensorType>{t};
    };
    add(c, std::move(s));
  }
  for (auto name : {"tril", "triu"}) {
    OpSpec s = shapeOp(name, fmt::format("torch.{}({{0}}, {{diagonal}})", name), fmt::format("aten::{}({{0}}, {{diagonal}})", name), 2);
    s.attrs = {intAttr("diagonal", -16, 16)};
    s.sample = [](OpContext& ctx, Rng& rng) {
      const Shape& x = ctx.x().shape;
      ctx.attrs["diagonal"] = rng.uniform(-x[x.size() - 2], x.back());
    };
    s.infer = [](const OpContext& ctx) { return std::vector<TensorType>{ctx.x()}; };
    s.range = rangeWithFill("");
    add(c, std::move(s));
  }
  {
    OpSpec s = shapeOp("diagonal", "torch.diagonal({0}, {offset}, {dim1}, {dim2})", "aten::diagonal({0}, {offset}, {dim1}, {dim2})", 2);
    s.view = true;
    s.attrs = {intAttr("offset", -16, 16), dimAttr("dim1"), dimAttr("dim2")};
    s.sample = [](OpContext& ctx, Rng& rng) {
      Shape dims = distinctDims(rng, ctx.x().rank(), 2);
      int r = ctx.x().rank();
      int64_t rows = ctx.x().shape[wrapDim(dims[0], r)], cols = ctx.x().shape[wrapDim(dims[1], r)];
      ctx.attrs["dim1"] = dims[0];
      ctx.attrs["dim2"] = dims[1];
      ctx.attrs["offset"] = rng.uniform(1 - rows, cols - 1);
    };
    s.infer = [](const OpContext& ctx) {
      auto w = wrapDistinct({ctx.attrInt("dim1"), ctx.attrInt("dim2")}, ctx.x().rank(), "diagonal");
      int64_t rows = ctx.x().shape[w[0]], cols = ctx.x().shape[w[1]], offset = ctx.attrInt("offset");
      int64_t length = offset >= 0 ? std::min(rows, cols - offset) : std::min(rows + offset, cols);
      require(length >= 1, "diagonal: the offset leaves no diagonal");
      TensorType t = ctx.x();
      t.shape.clear();
      for (int d = 0; d < ctx.x().rank(); ++d)
        if (d != w[0] && d != w[1]) t.shape.push_back(ctx.x().shape[d]);
      t.shape.push_back(length);
      return std::vector<TensorType>{t};
    };
    add(c, std::move(s));
  }
  {
    // Sliding windows of `size` every `step` along `dimension`, appended as a new last dim.
    OpSpec s = shapeOp("unfold", "{0}.unfold({dimension}, {size}, {step})", "aten::unfold({0}, {dimension}, {size}, {step})", 1);
    s.view = true;
    s.attrs = {dimAttr("dimension"), intAttr("size", 1, 64), intAttr("step", 1, 8)};
    s.sample = [](OpContext& ctx, Rng& rng) {
      int64_t d = drawDim(rng, ctx.x().rank());
      int64_t n = ctx.x().shape[wrapDim(d, ctx.x().rank())];
      ctx.attrs["dimension"] = d;
      ctx.attrs["size"] = rng.uniform(1, std::min<int64_t>(n, 4));
      ctx.attrs["step"] = rng.uniform(1, 3);
    };
    s.constraints = intConstraints([](const auto& e) {
      int d = wrapDim(e.fixed("dimension"), e.rank(0));
      return std::vector{e.attr("size") <= e.dim(0, d)};
    });
    s.infer = [](const OpContext& ctx) {
      TensorType t = ctx.x();
      int d = dimOf(ctx, "dimension");
      int64_t size = ctx.attrInt("size"), step = ctx.attrInt("step");
      require(size >= 1 && size <= t.shape[d] && step >= 1, "unfold: size must lie in [1, size of dim], step positive");
      t.shape[d] = (t.shape[d] - size) / step + 1;
      t.shape.push_back(size);
      return std::vector<TensorType>{t};
    };
    add(c, std::move(s));
  }
}

// --- padding -------------------------------------------------------------------------------------

/// F.pad in one mode. The pad list holds (left, right) pairs from the last dim backwards.
/// constant: up to one pair per dim; reflect/replicate/circular: 1, 2 or 3 pairs on inputs with
/// one or two more dims than pairs (batch and channel). reflect needs pads below the dim's size,
/// circular pads at most the dim's size. Pads are kept non-negative.
void addPad(OpCatalog& c, const std::string& mode) {
  bool constant = mode == "constant";
  std::string python = constant ? "F.pad({0}, {pad}, value={value})" : "F.pad({0}, {pad}, mode=\"" + mode + "\")";
  std::string aten = constant ? "aten::pad({0}, {pad}, \"constant\", {value})" : "aten::pad({0}, {pad}, \"" + mode + "\", None)";
  OpSpec s = shapeOp("pad_" + mode, python, aten, constant ? 1 : 2);
  if (!constant) s.maxRank = 5;
  if (mode == "reflect" || mode == "replicate") s.accepts = {kNumeric};  // no Bool kernels
  s.attrs = {intListAttr("pad", 0, 16)};
  if (constant) s.attrs.push_back(floatAttr("value", -2, 2));
  // Largest pad a dim of size n takes in this mode.
  auto padLimit = [mode](int64_t n) -> int64_t {
    return mode == "reflect" ? n - 1 : mode == "circular" ? n : 16;
  };
  s.sample = [constant, padLimit](OpContext& ctx, Rng& rng) {
    int r = ctx.x().rank();
    int pairs = constant ? static_cast<int>(rng.uniform(1, std::min(r, 3)))
                         : static_cast<int>(std::clamp<int64_t>(r - rng.uniform(1, 2), 1, 3));
    Shape pad;
    int64_t numel = ctx.x().numel();
    for (int i = 0; i < pairs; ++i) {
      int64_t n = ctx.x().shape[r - 1 - i];
      int64_t hi = std::min<int64_t>(padLimit(n), 3);
      int64_t left = rng.uniform(0, hi), right = rng.uniform(0, hi);
      // Stay under the element cap: drop the pair when it would cross it.
      if (numel / n * (n + left + right) > maxElementsOf(ctx)) left = right = 0;
      numel = numel / n * (n + left + right);
      pad.push_back(left);
      pad.push_back(right);
    }
    ctx.attrs["pad"] = pad;
  };
  if (mode == "reflect" || mode == "circular") {
    // Z3 repairs pads that run past what a dim allows.
    s.constraints = intConstraints([mode](const auto& e) {
      using Cond = decltype(e.dim(0, 0) >= 1);
      std::vector<Cond> out;
      int pairs = std::min(e.length("pad") / 2, e.rank(0));
      int slack = mode == "reflect" ? 1 : 0;
      for (int i = 0; i < pairs; ++i) {
        out.push_back(e.attr("pad", 2 * i) + slack <= e.dim(0, -1 - i));
        out.push_back(e.attr("pad", 2 * i + 1) + slack <= e.dim(0, -1 - i));
      }
      return out;
    });
  }
  s.infer = [constant, padLimit, mode](const OpContext& ctx) {
    Shape pad = ctx.attrInts("pad");
    int r = ctx.x().rank();
    int pairs = static_cast<int>(pad.size() / 2);
    require(pad.size() % 2 == 0 && pairs >= 1, "pad: the pad list must hold (left, right) pairs");
    if (constant) {
      require(pairs <= r, "pad: more pairs than input dims");
    } else {
      require(pairs <= 3 && (r == pairs + 1 || r == pairs + 2),
              fmt::format("pad: {} padding of {} pairs needs rank {} or {}", mode, pairs, pairs + 1, pairs + 2));
    }
    TensorType t = ctx.x();
    for (int i = 0; i < pairs; ++i) {
      int64_t& n = t.shape[r - 1 - i];
      for (int side = 0; side < 2; ++side)
        require(pad[2 * i + side] >= 0 && pad[2 * i + side] <= padLimit(n),
                fmt::format("pad: {} padding of {} exceeds what a dim of size {} allows", mode, pad[2 * i + side], n));
      n += pad[2 * i] + pad[2 * i + 1];
    }
    return std::vector<TensorType>{t};
  };
  if (constant) s.range = rangeWithFill("value");
  add(c, std::move(s));
}

}  // namespace

void addShapeOps(OpCatalog& c) {
  addReshapes(c);
  addSplitsAndJoins(c);
  addSlicesAndGathers(c);
  addReorderings(c);
  for (auto mode : {"constant", "reflect", "replicate", "circular"}) addPad(c, mode);
}

}  // namespace tcfuzz::gen
