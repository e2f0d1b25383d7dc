#pragma once
// Building blocks shared by the shape families (ops/shape/Shape.cpp, SplitAndSlice.cpp,
// ReorderAndPad.cpp), and the parts addShapeOps registers.
#include <algorithm>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "generators/ops/Common.h"

namespace tcfuzz::gen::ops {

using Shape = std::vector<int64_t>;

// Sampling bounds: the caps when the context has them, small defaults otherwise.
inline int64_t maxDimOf(const OpContext& ctx) { return ctx.caps ? ctx.caps->maxDim : 8; }
inline int maxRankOf(const OpContext& ctx) { return ctx.caps ? ctx.caps->maxRank : 4; }
inline int64_t maxElementsOf(const OpContext& ctx) { return ctx.caps ? ctx.caps->maxElements : 1 << 14; }

/// Outputs must respect the caps: at most maxElements elements, and no rank beyond the caps'
/// (or the inputs', when they already exceed it).
inline void requireCaps(const OpContext& ctx, const std::vector<TensorType>& outs) {
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
inline OpSpec shapeOp(std::string name, std::string python, std::string aten, int minRank = 0) {
  OpSpec s = entry(std::move(name), "shape", std::move(python), std::move(aten), kAllDTypes);
  s.minRank = minRank;
  return s;
}

/// Adds an entry whose shape rule also enforces the caps.
inline OpSpec& add(OpCatalog& c, OpSpec s) {
  s.infer = [rule = std::move(s.infer)](const OpContext& ctx) {
    auto outs = rule(ctx);
    requireCaps(ctx, outs);
    return outs;
  };
  return c.add(std::move(s));
}

/// `count` distinct dims of a rank-`rank` tensor in random order, some written negative.
inline Shape distinctDims(Rng& rng, int rank, int count) {
  Shape all(rank);
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng.engine());
  all.resize(std::min(count, rank));
  for (auto& d : all)
    if (rng.chance(0.3)) d -= rank;
  return all;
}

/// Wraps each dim; ShapeError when one repeats.
inline std::vector<int> wrapDistinct(const Shape& dims, int rank, const std::string& what) {
  std::vector<int> out;
  for (auto d : dims) {
    int w = wrapDim(d, rank);
    require(std::find(out.begin(), out.end(), w) == out.end(), what + ": dim " + std::to_string(w) + " repeats");
    out.push_back(w);
  }
  return out;
}

/// movedim's dim order: output dim i is input dim order[i]. Moved dims land at their destinations;
/// the others keep their order in the free slots.
inline std::vector<int> movedimOrder(const OpContext& ctx) {
  int r = ctx.x().rank();
  auto src = wrapDistinct(ctx.attrInts("source"), r, "movedim source");
  auto dst = wrapDistinct(ctx.attrInts("destination"), r, "movedim destination");
  require(src.size() == dst.size(), "movedim: source and destination must have the same length");
  std::vector<int> order(r, -1);
  for (size_t i = 0; i < src.size(); ++i) order[dst[i]] = src[i];
  int next = 0;
  for (auto& o : order) {
    if (o >= 0) continue;
    while (std::find(src.begin(), src.end(), next) != src.end()) ++next;
    o = next++;
  }
  return order;
}

/// The dim attribute `name` wrapped against input 0 (or `rank` when given).
inline int dimOf(const OpContext& ctx, const std::string& name, int rank = -1) {
  return wrapDim(ctx.attrInt(name), rank < 0 ? ctx.x().rank() : rank);
}

/// Input 0's range joined with a filled-in scalar attribute (or 0 when `attr` is empty).
inline std::function<std::vector<Interval>(const OpContext&)> rangeWithFill(std::string attr) {
  return [attr](const OpContext& ctx) {
    double v = attr.empty() ? 0.0 : ctx.attrFloat(attr);
    return std::vector<Interval>{unionI(ctx.ranges.at(0), {v, v})};
  };
}

// --- the parts of addShapeOps (Shape.cpp), each in the file named --------------------------------

/// chunk, split, tensor_split, unbind, cat and stack (SplitAndSlice.cpp).
void addSplitsAndJoins(OpCatalog& c);
/// narrow, slice, select, index_select, gather, take_along_dim and masked_fill (SplitAndSlice.cpp).
void addSlicesAndGathers(OpCatalog& c);
/// flip, roll, rot90, repeats and tiles, tril/triu, diagonal and unfold (ReorderAndPad.cpp).
void addReorderings(OpCatalog& c);
/// F.pad in one `mode`: constant, reflect, replicate or circular (ReorderAndPad.cpp).
void addPad(OpCatalog& c, const std::string& mode);

}  // namespace tcfuzz::gen::ops
