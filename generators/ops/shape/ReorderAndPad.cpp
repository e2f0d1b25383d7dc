// Shape families: reorderings (flip, roll, rot90), repeats, triangular and diagonal views, windows
// (unfold), and padding in every mode.
#include "generators/ops/shape/ShapeCommon.h"

namespace tcfuzz::gen::ops {

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
    s.stridedOutput = true;  // an odd k is a flip of a transpose, not copied back to row-major
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

}  // namespace tcfuzz::gen::ops
