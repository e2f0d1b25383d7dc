// In-place writes through a view (family "inplace-view"), and views read before their base
// is written (family "stale-view", below): `v.narrow(1, 2, 3).mul_(y)`,
// `v.select(0, 1).add_(y)`, `v[:, ::2].copy_(y)`, `v.diagonal(0, 0, 1).add_(y)`, `v[:, 1:3].fill_(s)` with a
// 0-d s, and assignment to a subscripted view (`v[:, 1:3] = y`). The written tensor is
// input 0 itself when nothing else reads it, else its clone (the emitter's in-place rule), and the
// result is that tensor after the write: functionalization must turn the view's mutation back into
// a write of its base. The operand has exactly the view's shape and input 0's dtype, so each entry's
// ATen spelling is the functional scatter with the same shape rule (slice_scatter, select_scatter,
// diagonal_scatter).
#include <algorithm>

#include "generators/ops/Common.h"

namespace tcfuzz::gen {
namespace {

using namespace ops;

/// One way of taking a view of input 0: its spellings, attributes and the view's shape.
struct ViewKind {
  std::string name;    // "narrow"
  std::string python;  // the view of {out0}: ".narrow({dim}, {start}, {length})"
  bool subscript;      // python is a subscript, so the view can be assigned to
  std::string aten;    // the functional scatter, with {1} the written values
  std::string atenView;  // the view itself in ATen (the shape of what reads it)
  int minRank = 1;
  std::vector<AttrSpec> attrs;
  std::function<void(OpContext&, Rng&)> sample;
  /// The view's shape (ShapeError when the attributes do not fit input 0).
  std::function<std::vector<int64_t>(const OpContext&)> shape;
  std::string family;  // its writes' and stale reads' family when not "inplace-view" and "stale-view"
};

/// A write through the view: its name, statement and the range of the written elements.
struct WriteMethod {
  std::string name;       // "mul_"
  std::string statement;  // "{view}.mul_({1})", with {view} the view of {out0}
  bool needsSubscript;    // an assignment: only to a subscripted view
  bool scalarOperand;     // the written value is a 0-d tensor (fill_), not the view's shape
  std::function<Interval(Interval self, Interval other)> range;
};

int checkedDim(const OpContext& ctx, const std::string& attr) {
  int64_t d = ctx.attrInt(attr);
  require(d >= 0 && d < ctx.x().rank(), attr + " must be a dim of input 0");
  return static_cast<int>(d);
}

/// Input 0's shape with dim `dim` cut to [start, end) (ShapeError when that is no non-empty part of it).
std::vector<int64_t> slicedShape(const OpContext& ctx) {
  int d = checkedDim(ctx, "dim");
  int64_t start = ctx.attrInt("start"), end = ctx.attrInt("end");
  require(start < end && end <= ctx.x().shape[d], "the sliced part must be a non-empty part of dim");
  std::vector<int64_t> s = ctx.x().shape;
  s[d] = end - start;
  return s;
}

std::vector<ViewKind> viewKinds() {
  std::vector<ViewKind> kinds;
  kinds.push_back({"narrow", ".narrow({dim}, {start}, {length})", false, "aten::slice_scatter({0}, {1}, {dim}, {start}, {end}, 1)",
                   "aten::narrow({0}, {dim}, {start}, {length})", 1,
                   {intAttr("dim", 0, 7), intAttr("start", 0, 64), intAttr("end", 1, 64), intAttr("length", 1, 64)},
                   [](OpContext& ctx, Rng& rng) {
                     drawSliceAttrs(ctx, rng);
                     ctx.attrs["length"] = ctx.attrInt("end") - ctx.attrInt("start");
                   },
                   [](const OpContext& ctx) {
                     require(ctx.attrInt("length") == ctx.attrInt("end") - ctx.attrInt("start"), "length must be end - start");
                     return slicedShape(ctx);
                   }});
  kinds.push_back({"slice", "[(slice(None),) * {dim} + (slice({start}, {end}),)]", true,
                   "aten::slice_scatter({0}, {1}, {dim}, {start}, {end}, 1)",
                   "aten::slice.Tensor({0}, {dim}, {start}, {end}, 1)", 1,
                   {intAttr("dim", 0, 7), intAttr("start", 0, 64), intAttr("end", 1, 64)},
                   [](OpContext& ctx, Rng& rng) { drawSliceAttrs(ctx, rng); }, slicedShape});
  kinds.push_back({"select", ".select({dim}, {index})", false, "aten::select_scatter({0}, {1}, {dim}, {index})", "aten::select.int({0}, {dim}, {index})", 1,
                   {intAttr("dim", 0, 7), intAttr("index", 0, 64)},
                   [](OpContext& ctx, Rng& rng) {
                     int64_t d = rng.uniform(0, ctx.x().rank() - 1);
                     ctx.attrs["dim"] = d;
                     ctx.attrs["index"] = rng.uniform(0, std::max<int64_t>(ctx.x().shape[d] - 1, 0));
                   },
                   [](const OpContext& ctx) {
                     int d = checkedDim(ctx, "dim");
                     require(ctx.attrInt("index") < ctx.x().shape[d], "index must be below the size of dim");
                     std::vector<int64_t> s = ctx.x().shape;
                     s.erase(s.begin() + d);
                     return s;
                   }});
  kinds.push_back({"stepslice", "[(slice(None),) * {dim} + (slice(None, None, {step}),)]", true,
                   "aten::slice_scatter({0}, {1}, {dim}, None, None, {step})",
                   "aten::slice.Tensor({0}, {dim}, None, None, {step})", 1, {intAttr("dim", 0, 7), intAttr("step", 2, 3)},
                   [](OpContext& ctx, Rng& rng) {
                     ctx.attrs["dim"] = rng.uniform(0, ctx.x().rank() - 1);
                     ctx.attrs["step"] = rng.uniform(2, 3);
                   },
                   [](const OpContext& ctx) {
                     int d = checkedDim(ctx, "dim");
                     int64_t step = ctx.attrInt("step");
                     require(step >= 1, "step must be positive");
                     std::vector<int64_t> s = ctx.x().shape;
                     s[d] = (s[d] + step - 1) / step;
                     return s;
                   }});
  kinds.push_back({"diagonal", ".diagonal(0, {dim1}, {dim2})", false, "aten::diagonal_scatter({0}, {1}, 0, {dim1}, {dim2})",
                   "aten::diagonal({0}, 0, {dim1}, {dim2})", 2,
                   {intAttr("dim1", 0, 7), intAttr("dim2", 0, 7)},
                   [](OpContext& ctx, Rng& rng) {
                     int64_t a = rng.uniform(0, ctx.x().rank() - 1), b = a;
                     while (b == a) b = rng.uniform(0, ctx.x().rank() - 1);
                     ctx.attrs["dim1"] = std::min(a, b);
                     ctx.attrs["dim2"] = std::max(a, b);
                   },
                   [](const OpContext& ctx) {
                     int a = checkedDim(ctx, "dim1"), b = checkedDim(ctx, "dim2");
                     require(a != b, "the diagonal's dims must differ");
                     std::vector<int64_t> s;
                     for (int i = 0; i < ctx.x().rank(); ++i)
                       if (i != a && i != b) s.push_back(ctx.x().shape[i]);
                     s.push_back(std::min(ctx.x().shape[a], ctx.x().shape[b]));
                     return s;
                   }});
  // No-op views: the whole tensor again (a full slice, a view or reshape to its own shape). A compiler
  // may drop them as no-ops (remove_noop_ops), and a write through one is a write into its base.
  auto whole = [](const OpContext& ctx) { return ctx.x().shape; };
  auto noAttrs = [](OpContext&, Rng&) {};
  kinds.push_back({"full_slice", "[:]", true, "aten::slice_scatter({0}, {1}, 0, None, None, 1)",
                   "aten::slice.Tensor({0}, 0, None, None, 1)", 1, {}, noAttrs, whole, "noop-view"});
  kinds.push_back({"same_view", ".view({0}.shape)", false, "aten::slice_scatter({0}, {1}, 0, None, None, 1)",
                   "aten::slice.Tensor({0}, 0, None, None, 1)", 1, {}, noAttrs, whole, "noop-view"});
  kinds.push_back({"same_reshape", ".reshape({0}.shape)", false, "aten::slice_scatter({0}, {1}, 0, None, None, 1)",
                   "aten::slice.Tensor({0}, 0, None, None, 1)", 1, {}, noAttrs, whole, "noop-view"});
  return kinds;
}

/// What a write through `view` with `method` and a view read across a write of its base share: two
/// numeric inputs, the view's attributes and rank, in place, and the written range joined to input 0's.
OpSpec viewWriteEntry(const std::string& name, const std::string& family, const std::string& python,
                      const std::string& aten, const ViewKind& view, const WriteMethod& method) {
  OpSpec s = entry(name, family, python, aten, kNumeric);
  s.accepts = {kNumeric, kNumeric};
  s.minInputs = s.maxInputs = 2;
  s.minRank = view.minRank;
  s.inplace = true;
  s.attrs = view.attrs;
  // A repair may offer input 0 below the view's rank: refuse it before the sampler indexes a dim.
  s.sample = [sample = view.sample, minRank = view.minRank](OpContext& ctx, Rng& rng) {
    require(ctx.x().rank() >= minRank, "the view needs more dims than input 0 has");
    sample(ctx, rng);
  };
  s.range = [written = method.range](const OpContext& ctx) {
    Interval r = unionI(ctx.ranges[0], written(ctx.ranges[0], ctx.ranges[1]));
    if (isInt(ctx.x().dtype)) r = {std::floor(r.lo), std::ceil(r.hi)};
    return std::vector<Interval>{r};
  };
  return s;
}

void addViewWrite(OpCatalog& c, const ViewKind& view, const WriteMethod& method) {
  std::string write = method.statement;
  write.replace(write.find("{view}"), 6, "{out0}" + view.python);
  // fill_'s ATen proxy: maximum with the 0-d value has input 0's shape and dtype, and its values lie
  // between input 0's and the fill value's, as the filled tensor's do.
  OpSpec s = viewWriteEntry(view.name + "_" + method.name, view.family.empty() ? "inplace-view" : view.family, "stmt:{out0} = {0}\n" + write,
                            method.scalarOperand ? "aten::maximum({0}, {1})" : view.aten, view, method);
  auto shapeOf = view.shape;
  bool scalar = method.scalarOperand;
  s.propose = [shapeOf, scalar](const OpContext& ctx, int, Rng&) {
    return TensorType{scalar ? std::vector<int64_t>{} : shapeOf(ctx), ctx.x().dtype, ctx.x().device};
  };
  s.infer = [shapeOf, scalar](const OpContext& ctx) {
    std::vector<int64_t> viewShape = shapeOf(ctx);  // checks the attributes
    if (scalar) require(ctx.x(1).rank() == 0, "fill_ takes a 0-d tensor");
    else require(ctx.x(1).shape == viewShape, "the written values must have the view's shape");
    require(ctx.x(1).dtype == ctx.x().dtype, "the written values must have input 0's dtype");
    return std::vector<TensorType>{ctx.x()};
  };
  c.add(std::move(s));
}

/// A view read before its base is written (family "stale-view"): `{out0} = base.narrow(...)`, then
/// `base.mul_(y)`; the program reads the view, which must show the write. Functionalization has to
/// replay the base's mutation onto every live view of it. The base is input 0 itself when nothing
/// else reads it, else its clone (the emitter's in-place rule), and the written operand has input
/// 0's shape. The ATen spelling is the view alone (the output's shape).
void addStaleView(OpCatalog& c, const ViewKind& view, const WriteMethod& method) {
  std::string python = "stmt:{out0}_base = {0}\n{out0} = {out0}_base" + view.python + "\n{out0}_base." + method.name + "({1})";
  OpSpec s = viewWriteEntry(view.name + "_read_before_" + method.name, view.family.empty() ? "stale-view" : view.family,
                            python, view.atenView, view, method);
  s.view = true;  // returns a view of the input 0 it writes (or of its clone)
  s.propose = [](const OpContext& ctx, int, Rng&) { return ctx.x(); };
  auto shapeOf = view.shape;
  s.infer = [shapeOf](const OpContext& ctx) {
    TensorType t = ctx.x();
    t.shape = shapeOf(ctx);  // checks the attributes
    require(ctx.x(1).shape == ctx.x().shape, "the written values must have input 0's shape");
    require(ctx.x(1).dtype == ctx.x().dtype, "the written values must have input 0's dtype");
    return std::vector<TensorType>{t};
  };
  c.add(std::move(s));
}

/// Scalar writes through an expanded view of input 0 (family "expand-write"):
/// `{out0}.expand(k, *{out0}.shape).fill_(v)`, or narrowed along one of input 0's dims first. Each element
/// of input 0 that the view repeats k times gets the same scalar every time, so eager defines the result:
/// the written part holds v. The target is input 0 itself or its clone (the emitter's in-place rule). The
/// ATen spelling is the fill of input 0 (the same shape and dtype).
void addExpandWrites(OpCatalog& c) {
  auto base = [](std::string name, std::string write) {
    OpSpec s = entry(std::move(name), "expand-write", "stmt:{out0} = {0}\n{out0}.expand({k}, *{out0}.shape)" + write,
                     "aten::fill.Scalar({0}, {value})", kNumeric);
    s.inplace = true;
    s.infer = [](const OpContext& ctx) { return std::vector<TensorType>{ctx.x()}; };
    return s;
  };
  {
    OpSpec s = base("expand_fill_", ".fill_({value})");
    s.attrs = {intAttr("k", 2, 3), floatAttr("value", -3, 3)};
    s.range = [](const OpContext& ctx) {
      double v = ctx.attrFloat("value");
      return std::vector<Interval>{castRange({v, v}, ctx.x().dtype)};
    };
    c.add(std::move(s));
  }
  {
    // The view's dim `dim` (1..rank) is input 0's dim `dim - 1`: the narrowed part of it is written.
    OpSpec s = base("expand_narrow_fill_", ".narrow({dim}, {start}, {length}).fill_({value})");
    s.minRank = 1;
    s.attrs = {intAttr("k", 2, 3), intAttr("dim", 1, 8), intAttr("start", 0, 64), intAttr("length", 1, 64),
               floatAttr("value", -3, 3)};
    s.sample = [](OpContext& ctx, Rng& rng) {
      require(ctx.x().rank() >= 1, "the narrowed dim must be a dim of input 0");
      int64_t d = rng.uniform(1, ctx.x().rank());
      int64_t size = ctx.x().shape[static_cast<size_t>(d - 1)];
      int64_t start = rng.uniform(0, size - 1);
      ctx.attrs["dim"] = d;
      ctx.attrs["start"] = start;
      ctx.attrs["length"] = rng.uniform(1, size - start);
    };
    s.infer = [](const OpContext& ctx) {
      int64_t d = ctx.attrInt("dim");
      require(d >= 1 && d <= ctx.x().rank(), "dim must name a dim of input 0 (shifted by the expanded one)");
      int64_t size = ctx.x().shape[static_cast<size_t>(d - 1)];
      require(ctx.attrInt("start") + ctx.attrInt("length") <= size, "the narrowed part must lie within the dim");
      return std::vector<TensorType>{ctx.x()};
    };
    s.range = [](const OpContext& ctx) {
      double v = ctx.attrFloat("value");
      return std::vector<Interval>{unionI(ctx.ranges[0], castRange({v, v}, ctx.x().dtype))};
    };
    c.add(std::move(s));
  }
}

}  // namespace

/// Reinplacing bait (family "reinplace-bait"): a functional result that a later write must not reach. A
/// zero `pad` is a copy in eager, then written in place (`{out0} = F.pad(x, (0, 0)); {out0}.add_(y)`): a
/// compiler that drops the pad as a no-op must not write into x. A `slice_scatter` result whose input a
/// later `zero_()` overwrites: a compiler that reinplaces the scatter into its input loses the result. The
/// zeroed tensor is input 0 itself when nothing else reads it, else its clone (the emitter's in-place rule).
void addReinplaceBait(OpCatalog& c) {
  {
    OpSpec s = entry("pad_zero_add_", "reinplace-bait", "stmt:{out0} = torch.nn.functional.pad({0}, (0, 0))\n{out0}.add_({1})",
                     "aten::add.Tensor({0}, {1})", kFloats);
    s.accepts = {kFloats, kFloats};
    s.minInputs = s.maxInputs = 2;
    s.minRank = 1;
    s.propose = [](const OpContext& ctx, int, Rng&) { return ctx.x(); };
    s.infer = [](const OpContext& ctx) {
      require(ctx.x(1).shape == ctx.x().shape && ctx.x(1).dtype == ctx.x().dtype, "the added values must match input 0");
      return std::vector<TensorType>{ctx.x()};
    };
    s.range = [](const OpContext& ctx) { return std::vector<Interval>{addI(ctx.ranges[0], ctx.ranges[1])}; };
    c.add(std::move(s));
  }
  {
    OpSpec s = entry("slice_scatter_then_zero_", "reinplace-bait",
                     "stmt:{out0} = torch.slice_scatter({0}, {1}, {dim}, {start}, {end})\n{0}.zero_()",
                     "aten::slice_scatter({0}, {1}, {dim}, {start}, {end}, 1)", kNumeric);
    s.accepts = {kNumeric, kNumeric};
    s.minInputs = s.maxInputs = 2;
    s.minRank = 1;
    s.inplace = true;  // it writes input 0 (zeros), and returns the scatter's result
    s.attrs = {intAttr("dim", 0, 7), intAttr("start", 0, 64), intAttr("end", 1, 64)};
    s.sample = [](OpContext& ctx, Rng& rng) { drawSliceAttrs(ctx, rng); };
    s.propose = [](const OpContext& ctx, int, Rng&) { return TensorType{slicedShape(ctx), ctx.x().dtype, ctx.x().device}; };
    s.infer = [](const OpContext& ctx) {
      require(ctx.x(1).shape == slicedShape(ctx) && ctx.x(1).dtype == ctx.x().dtype,
              "the scattered values must have the slice's shape and input 0's dtype");
      return std::vector<TensorType>{ctx.x()};
    };
    s.range = [](const OpContext& ctx) { return std::vector<Interval>{unionI(ctx.ranges[0], ctx.ranges[1])}; };
    c.add(std::move(s));
  }
}

void addInplaceViewOps(OpCatalog& c) {
  addExpandWrites(c);
  addReinplaceBait(c);
  auto written = [](Interval, Interval other) { return other; };
  const std::vector<WriteMethod> methods{{"add_", "{view}.add_({1})", false, false, addI},
                                         {"mul_", "{view}.mul_({1})", false, false, mulI},
                                         {"copy_", "{view}.copy_({1})", false, false, written},
                                         {"fill_", "{view}.fill_({1})", false, true, written},
                                         {"assign", "{view} = {1}", true, false, written}};
  for (const ViewKind& view : viewKinds())
    for (const WriteMethod& method : methods)
      if (view.subscript || !method.needsSubscript) addViewWrite(c, view, method);
  for (const ViewKind& view : viewKinds())
    for (const WriteMethod& method : methods)
      if (!method.needsSubscript && !method.scalarOperand) addStaleView(c, view, method);
}

}  // namespace tcfuzz::gen
