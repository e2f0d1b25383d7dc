// Shape families: views and reshapes, concatenation and splitting, slicing, gathers and
// scatters, padding in every mode, and indexing writes.
#include "generators/ops/Common.h"

namespace tcfuzz::gen {

void addShapeOps(OpCatalog& c) {
  using namespace ops;
  {
    // Example of an op with integer constraints: Z3 solves start/length when a node violates them.
    OpSpec s;
    s.name = "narrow";
    s.family = "shape";
    s.python = "torch.narrow({0}, {dim}, {start}, {length})";
    s.aten = "aten::narrow({0}, {dim}, {start}, {length})";
    s.accepts = {kAllDTypes};
    s.minRank = 1;
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
    c.add(std::move(s));
  }
}

}  // namespace tcfuzz::gen
