#include "oracles/judge/Comparator.h"
#include "oracles/judge/OutputLoader.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tcfuzz::oracles {
namespace {

bool isFloating(const at::Tensor& t) { return t.is_floating_point() || t.is_complex(); }

/// NaN, +Inf and -Inf in the same places.
bool sameNonFinite(const at::Tensor& a, const at::Tensor& b) {
  return at::equal(at::isnan(a), at::isnan(b)) && at::equal(at::isposinf(a), at::isposinf(b)) &&
         at::equal(at::isneginf(a), at::isneginf(b));
}

/// The smallest normal value of a floating dtype (below it, nonzero values are subnormal).
double smallestNormal(at::ScalarType type) {
  switch (type) {
    case at::kHalf: return 6.103515625e-05;
    case at::kDouble: return 2.2250738585072014e-308;
    default: return 1.1754943508222875e-38;  // float32 and bfloat16 share the exponent range
  }
}

/// Fills leaf.signedZeros and leaf.flushedDenormals (LeafComparison) from eager, compiled and fp64 in double.
void countZeroSlips(LeafComparison& leaf, const at::Tensor& e, const at::Tensor& c, const at::Tensor& r,
                    at::ScalarType type) {
  at::Tensor zeros = at::logical_and(at::logical_and(e == 0, c == 0), r == 0);
  at::Tensor agreed = at::eq(at::signbit(e), at::signbit(r));
  leaf.signedZeros =
      at::logical_and(at::logical_and(zeros, agreed), at::ne(at::signbit(e), at::signbit(c))).sum().item<int64_t>();
  double normal = smallestNormal(type);
  at::Tensor subnormal = at::logical_and(e != 0, e.abs() < normal);
  at::Tensor keptByFp64 = at::logical_and(r != 0, r.abs() < normal);
  leaf.flushedDenormals = at::logical_and(at::logical_and(subnormal, keptByFp64), c == 0).sum().item<int64_t>();
}

/// The values of `source` at `indices` (an index output as TieSource describes it), or nullopt when the
/// indices do not fit the source (out of range, or another shape): then they cannot be ties.
std::optional<at::Tensor> valuesAt(const at::Tensor& source, const at::Tensor& indices, const TieSource& tie) {
  try {
    if (!tie.dim || source.dim() == 0) {
      if (indices.numel() && (indices.min().item<int64_t>() < 0 || indices.max().item<int64_t>() >= source.numel()))
        return std::nullopt;
      return at::take(source, indices);
    }
    int64_t dim = *tie.dim < 0 ? *tie.dim + source.dim() : *tie.dim;
    at::Tensor index = tie.sameRank ? indices : indices.unsqueeze(dim);
    if (index.dim() != source.dim()) return std::nullopt;
    if (index.numel() && (index.min().item<int64_t>() < 0 || index.max().item<int64_t>() >= source.size(dim)))
      return std::nullopt;
    return at::gather(source, dim, index);
  } catch (const c10::Error&) {
    return std::nullopt;
  }
}

/// Equal values, NaN equal to NaN.
bool sameValues(const at::Tensor& a, const at::Tensor& b) {
  if (!a.is_floating_point()) return at::equal(a, b);
  at::Tensor nan = at::isnan(a);
  return at::equal(nan, at::isnan(b)) && at::equal(a.masked_select(nan.logical_not()), b.masked_select(nan.logical_not()));
}

double rmse(const at::Tensor& ref, const at::Tensor& res) {
  if (ref.numel() == 0) return 0.0;
  return at::sqrt(at::mean(at::square(ref - res))).item<double>();
}

}  // namespace

double ComparatorOptions::toleranceFor(const std::string& dtype) const {
  if (dtype == "float16") return tolFloat16;
  if (dtype == "bfloat16") return tolBFloat16;
  return tolFloat32;
}

nlohmann::json ComparatorOptions::toleranceTable() const {
  return {{"float32", tolFloat32},
          {"float64", tolFloat32},
          {"float16", tolFloat16},
          {"bfloat16", tolBFloat16},
          {"unarbitrated_factor", unarbitratedTolFactor}};
}

double Comparator::toleranceFor(const std::string& dtype) const { return options_.toleranceFor(dtype); }

Comparison Comparator::compare(const LoadedOutputs& eager, const LoadedOutputs& compiled,
                               const LoadedOutputs* fp64) const {
  Comparison result;
  result.fp64Available = fp64 != nullptr;
  if (eager.leaves.size() != compiled.leaves.size()) {
    result.passed = false;
    result.reason = fmt::format("output structure differs: eager has {} leaves, compiled {}", eager.leaves.size(),
                                compiled.leaves.size());
    // The first leaf whose name differs: what one side has and the other lacks.
    size_t common = std::min(eager.leaves.size(), compiled.leaves.size());
    size_t i = 0;
    while (i < common && eager.leaves[i].name == compiled.leaves[i].name) ++i;
    const auto& longer = eager.leaves.size() > compiled.leaves.size() ? eager : compiled;
    if (i < longer.leaves.size() && !longer.leaves[i].name.empty())
      result.reason += fmt::format(" (first difference at leaf {}: {} '{}')", i,
                                   &longer == &eager ? "eager's" : "compiled's", longer.leaves[i].name);
    result.failingRole = "output";
    return result;
  }
  // Only call 4 and the moved call (roles "resized" and "moved", saved last) may differ in fp64, whose forward
  // may reject inputs eager accepts.
  auto callsBefore4 = [](const LoadedOutputs& o) {
    return std::count_if(o.leaves.begin(), o.leaves.end(),
                         [](const OutputLeaf& l) { return l.role != "resized" && l.role != "moved"; });
  };
  if (fp64 && fp64->leaves.size() != eager.leaves.size() && callsBefore4(*fp64) != callsBefore4(eager))
    fp64 = nullptr;  // cannot arbitrate
  for (size_t i = 0; i < eager.leaves.size(); ++i) {
    LeafComparison leaf = compareLeaf(i, eager, compiled, fp64);
    if (!leaf.fp64Stable) result.unstable = true;
    if (!leaf.passed && result.passed) {
      result.passed = false;
      result.failingRole = leaf.role;
      result.reason = leaf.name.empty() ? fmt::format("output {}: {}", i, leaf.reason)
                                        : fmt::format("output {} {}: {}", i, leaf.name, leaf.reason);
    }
    result.leaves.push_back(std::move(leaf));
  }
  return result;
}

LeafComparison Comparator::compareLeaf(size_t index, const LoadedOutputs& eager, const LoadedOutputs& compiled,
                                       const LoadedOutputs* fp64) const {
  const OutputLeaf& el = eager.leaves[index];
  const OutputLeaf& cl = compiled.leaves[index];
  LeafComparison out;
  out.leaf = index;
  out.role = el.role;
  out.name = el.name;
  out.eagerDtype = el.dtype;
  out.compiledDtype = cl.dtype;
  out.eagerShape = el.shape;
  out.compiledShape = cl.shape;
  auto fail = [&out](std::string reason) {
    out.passed = false;
    out.reason = std::move(reason);
    return out;
  };
  if (el.kind != cl.kind) {
    // A gradient that is None (no path from the input to any output) on one side and an all-zero tensor on
    // the other: the compiled backward materialized it. Autograd's own materialize_grads makes the same
    // choice; no value differs, so it is not a wrong result.
    const OutputLeaf& tensorSide = el.kind == OutputLeaf::Kind::Tensor ? el : cl;
    const OutputLeaf& otherSide = el.kind == OutputLeaf::Kind::Tensor ? cl : el;
    const LoadedOutputs& tensorOwner = el.kind == OutputLeaf::Kind::Tensor ? eager : compiled;
    if (el.role == "grad" && otherSide.kind == OutputLeaf::Kind::Other && otherSide.repr == "None" &&
        tensorSide.kind == OutputLeaf::Kind::Tensor && tensorSide.index >= 0 &&
        !tensorOwner.tensors[tensorSide.index].count_nonzero().item<int64_t>()) {
      out.reason = fmt::format("gradient None in {} and all zeros in {}: not judged", &el == &otherSide ? "eager" : "compiled",
                               &el == &otherSide ? "compiled" : "eager");
      return out;
    }
    return fail("one output is a tensor, the other is not");
  }
  if (el.kind == OutputLeaf::Kind::Other) {
    if (el.repr == cl.repr) return out;
    if (el.role == "alias")
      return fail(fmt::format("shares storage with {} in eager but with {} in compiled", el.repr, cl.repr));
    return fail(fmt::format("values differ: {} vs {}", el.repr, cl.repr));
  }
  out.dtypeMatch = el.dtype == cl.dtype;
  if (!out.dtypeMatch) return fail(fmt::format("dtype differs: eager {} vs compiled {}", el.dtype, cl.dtype));
  const at::Tensor& e = eager.tensors[el.index];
  const at::Tensor& c = compiled.tensors[cl.index];
  out.shapeMatch = e.sizes().equals(c.sizes());
  if (!out.shapeMatch)
    return fail(fmt::format("shape differs: eager [{}] vs compiled [{}]", fmt::join(e.sizes(), ", "),
                            fmt::join(c.sizes(), ", ")));
  if (el.random) {
    out.random = true;
    out.reason = "depends on a random op: dtype and shape judged, values not";
    return out;
  }
  std::optional<at::Tensor> r;
  // fp64 arbitrates a leaf where its own leaf at that place is the same one: the same role and name (call 4's
  // names hold the resize, which fp64 may pick apart from eager when its own forward rejects a size).
  if (fp64 && index < fp64->leaves.size() && fp64->leaves[index].role == el.role && fp64->leaves[index].name == el.name) {
    const OutputLeaf& rl = fp64->leaves[index];
    if (rl.kind == el.kind && rl.index >= 0 && fp64->tensors[rl.index].sizes().equals(e.sizes()))
      r = fp64->tensors[rl.index];
  }
  out.tolerance = toleranceFor(el.dtype) * el.steps;  // accumulated over a training leaf's steps (ComparatorOptions)

  if (!isFloating(e)) {  // integer and bool: exact, unless compiled is no further from fp64 than eager
    if (at::equal(e, c)) return out;
    out.maxAbsDiff = (e.to(at::kDouble) - c.to(at::kDouble)).abs().max().item<double>();
    if (el.tieSource && el.tieSource->index < static_cast<int>(eager.tensors.size())) {
      const at::Tensor& source = eager.tensors[el.tieSource->index];
      auto atEager = valuesAt(source, e, *el.tieSource), atCompiled = valuesAt(source, c, *el.tieSource);
      if (atEager && atCompiled && sameValues(*atEager, *atCompiled)) {
        out.tiedIndices = true;
        out.reason = "indices differ only where the values they point to are ties";
        return out;
      }
    }
    if (r && !isFloating(*r)) {
      out.fp64Used = true;
      out.mismatchesEager = at::ne(e, *r).sum().item<int64_t>();
      out.mismatchesCompiled = at::ne(c, *r).sum().item<int64_t>();
      if (out.mismatchesCompiled <= out.mismatchesEager) {
        out.reason = "integer values differ, but compiled is no further from fp64 than eager";
        return out;
      }
    }
    return fail(fmt::format("{} values differ (max abs diff {:.6g})", el.dtype, out.maxAbsDiff));
  }

  at::Tensor ed = e.to(at::kDouble), cd = c.to(at::kDouble);
  std::optional<at::Tensor> rd;
  if (r && isFloating(*r)) rd = r->to(at::kDouble);
  if (rd && !sameNonFinite(ed, *rd)) {  // the program is numerically unstable: drop, never flag
    out.fp64Stable = false;
    out.reason = "eager and fp64 disagree on NaN/Inf placement; not judged";
    return out;
  }
  out.nonFiniteMatch = sameNonFinite(ed, cd);
  if (!out.nonFiniteMatch) return fail("NaN/Inf placement differs between eager and compiled");
  // A float64 leaf has no independent reference (the fp64 run is eager again), so a zero slip there is a
  // formula's rounding at 1e-308, never confirmed by a wider computation: not counted.
  if (rd && !e.is_complex() && e.scalar_type() != at::kDouble) countZeroSlips(out, ed, cd, *rd, e.scalar_type());
  at::Tensor finite = at::isfinite(ed);
  at::Tensor ef = ed.masked_select(finite), cf = cd.masked_select(finite);
  out.maxAbsDiff = ef.numel() ? (ef - cf).abs().max().item<double>() : 0.0;
  out.allclose = at::allclose(ef, cf, out.tolerance, out.tolerance);
  if (out.allclose) return out;
  if (!rd) {
    double loose = out.tolerance * options_.unarbitratedTolFactor;
    if (at::allclose(ef, cf, loose, loose)) {
      out.reason = "beyond tolerance, no fp64 reference to arbitrate; within the loose bound";
      return out;
    }
    return fail(fmt::format("max abs diff {:.6g} beyond {:.1g} with no fp64 reference", out.maxAbsDiff, loose));
  }
  out.fp64Used = true;
  at::Tensor rf = rd->masked_select(finite);
  out.rmseEager = rmse(rf, ef);
  out.rmseCompiled = rmse(rf, cf);
  out.multiplier = (el.dtype == "float16" || el.dtype == "bfloat16") ? options_.lowPrecisionMultiplier
                                                                      : options_.multiplier;
  if (e.numel() < options_.smallTensorNumel) out.multiplier = std::max(out.multiplier, options_.smallTensorMultiplier);
  if (out.rmseCompiled <= out.multiplier * out.rmseEager + out.tolerance / 10.0) {
    out.reason = "beyond tolerance, but compiled is no further from fp64 than eager allows";
    return out;
  }
  return fail(fmt::format("rmse(compiled, fp64) {:.6g} > {:.3g} * rmse(eager, fp64) {:.6g} + {:.1g}",
                          out.rmseCompiled, out.multiplier, out.rmseEager, out.tolerance / 10.0));
}

namespace {

/// True when a and b have the same leaves (kind, dtype; Other leaves the same repr) and `same` holds for
/// every pair of tensor leaves.
template <typename SameTensors>
bool leafForLeaf(const LoadedOutputs& a, const LoadedOutputs& b, SameTensors same) {
  if (a.leaves.size() != b.leaves.size()) return false;
  for (size_t i = 0; i < a.leaves.size(); ++i) {
    const OutputLeaf &al = a.leaves[i], &bl = b.leaves[i];
    if (al.kind != bl.kind || al.dtype != bl.dtype) return false;
    if (al.kind == OutputLeaf::Kind::Other) {
      if (al.repr != bl.repr) return false;
      continue;
    }
    if (!same(a.tensors[al.index], b.tensors[bl.index])) return false;
  }
  return true;
}

/// sameValues of two tensors of one shape.
bool equalValues(const at::Tensor& x, const at::Tensor& y) { return x.sizes().equals(y.sizes()) && sameValues(x, y); }

}  // namespace

bool Comparator::settledWithoutFp64(const LoadedOutputs& eager, const LoadedOutputs& compiled) const {
  return leafForLeaf(eager, compiled, [](const at::Tensor& e, const at::Tensor& c) {
    at::Tensor x = e.contiguous(), y = c.contiguous();
    if (x.scalar_type() != y.scalar_type() || !x.sizes().equals(y.sizes())) return false;
    if (isFloating(x) && !at::isfinite(x).all().item<bool>()) return false;
    return x.nbytes() == y.nbytes() && std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
  });
}

bool Comparator::identical(const LoadedOutputs& a, const LoadedOutputs& b) const { return leafForLeaf(a, b, equalValues); }

std::optional<size_t> Comparator::firstDifference(const LoadedOutputs& a, const LoadedOutputs& b,
                                                  const std::vector<bool>& skip) const {
  for (size_t i = 0; i < a.leaves.size(); ++i) {
    if (i < skip.size() && skip[i]) continue;
    if (i >= b.leaves.size()) return i;
    LoadedOutputs one{{a.leaves[i]}, a.tensors}, other{{b.leaves[i]}, b.tensors};
    if (!leafForLeaf(one, other, equalValues)) return i;
  }
  return std::nullopt;
}

}  // namespace tcfuzz::oracles
