// The stride rules of the view ops, exact: for each op whose output aliases input 0
// (OpSpec::view), the strides and storage offset eager gives each output from input 0's geometry.
// One table, op name -> rule, checked against ATen on strided inputs by tests/test_Strides.cpp;
// addViewStrideRules refuses a catalog whose view ops the table does not cover (a view of a base the
// op also writes, family stale-view, views input 0 or its clone: its strides are not known).
#include <map>
#include <stdexcept>

#include "generators/ops/shape/ShapeCommon.h"

namespace tcfuzz::gen {
namespace {

using namespace ops;
using Geometries = std::optional<std::vector<Geometry>>;
using StrideRule = std::function<Geometries(const OpContext&, const Geometry&, const std::vector<TensorType>&)>;

Geometries one(std::vector<int64_t> strides, int64_t offset) { return std::vector<Geometry>{{std::move(strides), offset}}; }

/// A view that reorders input 0's dims: output dim i is input dim order[i].
Geometries reordered(const Geometry& in, const std::vector<int>& order) {
  std::vector<int64_t> s;
  for (int d : order) s.push_back(in.strides[d]);
  return one(s, in.offset);
}

/// `.view(shape)`-like ops: the view strides when the layout allows it; else `copies` says whether
/// the op copies (reshape, flatten) or raises (view: nullopt either way, the caller tells which).
Geometries viewLike(const OpContext& ctx, const Geometry& in, const std::vector<TensorType>& outs) {
  auto s = viewStrides(ctx.x().shape, in.strides, outs.at(0).shape);
  if (!s) return std::nullopt;
  return one(*s, in.offset);
}

/// Pieces along `dim` (chunk, split, tensor_split): each a narrow at the running start.
Geometries pieces(const Geometry& in, int dim, const std::vector<TensorType>& outs) {
  std::vector<Geometry> out;
  int64_t start = 0;
  for (const TensorType& t : outs) {
    out.push_back({in.strides, in.offset + start * in.strides[dim]});
    start += t.shape[dim];
  }
  return out;
}

/// Strides of input 0 scaled by 2 (a complex tensor seen as its real parts), with `extra` appended.
std::vector<int64_t> realStrides(const Geometry& in, std::optional<int64_t> extra) {
  std::vector<int64_t> s;
  for (auto v : in.strides) s.push_back(2 * v);
  if (extra) s.push_back(*extra);
  return s;
}

std::map<std::string, StrideRule> strideRules() {
  std::map<std::string, StrideRule> r;
  r["view"] = viewLike;
  r["reshape"] = viewLike;
  r["flatten"] = [](const OpContext& ctx, const Geometry& in, const std::vector<TensorType>& outs) -> Geometries {
    if (ctx.x().rank() > 0 && dimOf(ctx, "start_dim") == dimOf(ctx, "end_dim")) return one(in.strides, in.offset);
    return viewLike(ctx, in, outs);
  };
  r["unflatten"] = viewLike;
  r["permute"] = [](const OpContext& ctx, const Geometry& in, const auto&) {
    return reordered(in, wrapDistinct(ctx.attrInts("dims"), ctx.x().rank(), "permute"));
  };
  r["transpose"] = [](const OpContext& ctx, const Geometry& in, const auto&) {
    std::vector<int64_t> s = in.strides;
    if (!s.empty()) std::swap(s[dimOf(ctx, "dim0")], s[dimOf(ctx, "dim1")]);
    return one(s, in.offset);
  };
  r["t"] = [](const OpContext&, const Geometry& in, const auto&) {
    return one(std::vector<int64_t>(in.strides.rbegin(), in.strides.rend()), in.offset);
  };
  r["movedim"] = [](const OpContext& ctx, const Geometry& in, const auto&) { return reordered(in, movedimOrder(ctx)); };
  r["expand"] = [](const OpContext& ctx, const Geometry& in, const std::vector<TensorType>& outs) {
    // From the last dim out: a dim that keeps its size keeps its stride, one that grows from 1 (or a
    // new leading dim) reads one element again (stride 0); a new leading dim of size 1 gets the
    // stride a row-major tensor would, or 0 when it is the last dim.
    const auto& from = ctx.x().shape;
    const auto& to = outs.at(0).shape;
    std::vector<int64_t> s(to.size());
    int lead = static_cast<int>(to.size() - from.size());
    for (int i = static_cast<int>(to.size()) - 1; i >= 0; --i) {
      int d = i - lead;
      int64_t size = d >= 0 ? from[d] : 1;
      int64_t stride = d >= 0 ? in.strides[d] : (i + 1 < static_cast<int>(to.size()) ? to[i + 1] * s[i + 1] : 0);
      s[i] = size != to[i] ? 0 : stride;
    }
    return one(s, in.offset);
  };
  r["squeeze"] = [](const OpContext& ctx, const Geometry& in, const auto&) {
    std::vector<int64_t> s = in.strides;
    if (ctx.x().rank() > 0) {
      int d = dimOf(ctx, "dim");
      if (ctx.x().shape[d] == 1) s.erase(s.begin() + d);
    }
    return one(s, in.offset);
  };
  r["squeeze_dims"] = [](const OpContext& ctx, const Geometry& in, const auto&) {
    auto dims = wrapDistinct(ctx.attrInts("dims"), ctx.x().rank(), "squeeze");
    std::vector<int64_t> s;
    for (int d = 0; d < ctx.x().rank(); ++d)
      if (ctx.x().shape[d] != 1 || std::find(dims.begin(), dims.end(), d) == dims.end()) s.push_back(in.strides[d]);
    return one(s, in.offset);
  };
  r["unsqueeze"] = [](const OpContext& ctx, const Geometry& in, const auto&) {
    int r = ctx.x().rank();
    int d = dimOf(ctx, "dim", r + 1);
    std::vector<int64_t> s = in.strides;
    s.insert(s.begin() + d, d >= r ? 1 : ctx.x().shape[d] * in.strides[d]);
    return one(s, in.offset);
  };
  r["narrow"] = [](const OpContext& ctx, const Geometry& in, const auto&) {
    int d = dimOf(ctx, "dim");
    int64_t start = ctx.attrInt("start");
    if (start < 0) start += ctx.x().shape[d];
    return one(in.strides, in.offset + start * in.strides[d]);
  };
  r["slice"] = [](const OpContext& ctx, const Geometry& in, const auto&) {
    int d = static_cast<int>(ctx.attrInt("dim"));
    int64_t start = std::min(ctx.attrInt("start"), ctx.x().shape[d]);
    std::vector<int64_t> s = in.strides;
    s[d] *= ctx.attrInt("step");
    return one(s, in.offset + start * in.strides[d]);
  };
  r["select"] = [](const OpContext& ctx, const Geometry& in, const auto&) {
    int d = dimOf(ctx, "dim");
    int64_t index = ctx.attrInt("index");
    if (index < 0) index += ctx.x().shape[d];
    std::vector<int64_t> s = in.strides;
    s.erase(s.begin() + d);
    return one(s, in.offset + index * in.strides[d]);
  };
  r["diagonal"] = [](const OpContext& ctx, const Geometry& in, const auto&) {
    auto w = wrapDistinct({ctx.attrInt("dim1"), ctx.attrInt("dim2")}, ctx.x().rank(), "diagonal");
    int64_t k = ctx.attrInt("offset");
    int64_t offset = in.offset + (k >= 0 ? k * in.strides[w[1]] : -k * in.strides[w[0]]);
    std::vector<int64_t> s;
    for (int d = 0; d < ctx.x().rank(); ++d)
      if (d != w[0] && d != w[1]) s.push_back(in.strides[d]);
    s.push_back(in.strides[w[0]] + in.strides[w[1]]);
    return one(s, offset);
  };
  r["unfold"] = [](const OpContext& ctx, const Geometry& in, const auto&) {
    std::vector<int64_t> s = in.strides;
    if (s.empty()) return one({1}, in.offset);
    int d = dimOf(ctx, "dimension");
    s.push_back(in.strides[d]);
    s[d] *= ctx.attrInt("step");
    return one(s, in.offset);
  };
  auto piecesAlongDim = [](const OpContext& ctx, const Geometry& in, const std::vector<TensorType>& outs) {
    return pieces(in, dimOf(ctx, "dim"), outs);
  };
  for (auto name : {"chunk", "split", "split_sizes", "tensor_split"}) r[name] = piecesAlongDim;
  r["unbind"] = [](const OpContext& ctx, const Geometry& in, const std::vector<TensorType>& outs) -> Geometries {
    int d = dimOf(ctx, "dim");
    std::vector<int64_t> s = in.strides;
    s.erase(s.begin() + d);
    std::vector<Geometry> out;
    for (size_t i = 0; i < outs.size(); ++i) out.push_back({s, in.offset + static_cast<int64_t>(i) * in.strides[d]});
    return out;
  };
  // as_strided reads a fresh row-major copy of input 0 (its Python spelling clones first), so its
  // sizes, strides and offset are the attributes whatever input 0's layout; ATen's as_strided on
  // input 0 itself gives the same numbers.
  r["as_strided"] = [](const OpContext& ctx, const Geometry&, const auto&) {
    return one(ctx.attrInts("stride"), ctx.attrInt("storage_offset"));
  };
  // contiguous returns input 0 itself when it is contiguous, else a fresh row-major copy.
  r["contiguous"] = [](const OpContext& ctx, const Geometry& in, const auto&) -> Geometries {
    if (!isContiguous(ctx.x().shape, in.strides)) return std::nullopt;
    return one(in.strides, in.offset);
  };
  r["view_as_real"] = [](const OpContext&, const Geometry& in, const auto&) {
    return one(realStrides(in, 1), 2 * in.offset);
  };
  r["complex_real"] = [](const OpContext&, const Geometry& in, const auto&) {
    return one(realStrides(in, std::nullopt), 2 * in.offset);
  };
  r["complex_imag"] = [](const OpContext&, const Geometry& in, const auto&) {
    return one(realStrides(in, std::nullopt), 2 * in.offset + 1);
  };
  return r;
}

}  // namespace

void addViewStrideRules(OpCatalog& catalog) {
  auto rules = strideRules();
  for (auto& [name, rule] : rules) catalog.edit(name).strides = rule;
  for (const auto& op : catalog.ops())
    if (op->view && !op->inplace && !op->strides) throw std::logic_error("view op " + op->name + " has no stride rule");
}

}  // namespace tcfuzz::gen
