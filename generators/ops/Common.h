#pragma once
// Building blocks shared by the catalog families: interval arithmetic and entry makers.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "generators/OpCatalog.h"

namespace tcfuzz::gen::ops {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline const Interval kAnything{};
inline const Interval kPositive{0.05, kInf};
inline const Interval kUnit{-1, 1};
inline const Interval kOpenUnit{-0.95, 0.95};
inline const Interval kProbability{0, 1};

/// Product of two bounds where 0 * inf is 0.
inline double mulBound(double a, double b) { return (a == 0 || b == 0) ? 0 : a * b; }
inline Interval hull(std::initializer_list<double> xs) {
  Interval r{kInf, -kInf};
  for (double x : xs) r = {std::min(r.lo, x), std::max(r.hi, x)};
  return r;
}
inline Interval addI(Interval a, Interval b) { return {a.lo + b.lo, a.hi + b.hi}; }
inline Interval subI(Interval a, Interval b) { return {a.lo - b.hi, a.hi - b.lo}; }
inline Interval mulI(Interval a, Interval b) {
  return hull({mulBound(a.lo, b.lo), mulBound(a.lo, b.hi), mulBound(a.hi, b.lo), mulBound(a.hi, b.hi)});
}
inline Interval scaleI(Interval a, double k) { return mulI(a, {k, k}); }
inline Interval absI(Interval a) {
  double m = a.magnitude();
  return {a.lo <= 0 && a.hi >= 0 ? 0 : std::min(std::abs(a.lo), std::abs(a.hi)), m};
}
inline Interval symmetric(double m) { return {-m, m}; }
/// Image of an increasing function.
template <class F>
Interval increasing(Interval a, F f) {
  return {std::isinf(a.lo) ? f(-1e300) : f(a.lo), std::isinf(a.hi) ? f(1e300) : f(a.hi)};
}
inline Interval unionI(Interval a, Interval b) { return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; }
/// The range of values of range `r` after conversion to dtype `d`.
inline Interval castRange(Interval r, DType d) {
  if (d == DType::Bool) return {0, 1};
  if (isInt(d)) return {std::trunc(r.lo), std::trunc(r.hi)};
  return r;
}
/// Range of a sum of `n` terms each in `a`.
inline Interval sumI(Interval a, double n) { return {mulBound(a.lo, n), mulBound(a.hi, n)}; }

/// Rule: one output of input 0's type with dtype `d`.
inline std::vector<TensorType> like(const TensorType& t, DType d) {
  TensorType o = t;
  o.dtype = d;
  return {o};
}

/// The number of elements of input 0, as a double (for sum ranges).
inline double numelOf(const OpContext& c, int i = 0) { return static_cast<double>(c.x(i).numel()); }

/// Draws a dim of a tensor of rank `rank` (negative half the time, as people write them).
inline int64_t drawDim(Rng& rng, int rank) {
  if (rank == 0) return 0;
  int64_t d = rng.uniform(0, rank - 1);
  return rng.chance(0.3) ? d - rank : d;
}

/// Draws a slice of input 0 into attributes dim (non-negative), start and end; with probability
/// `overshootChance` end may pass the dim's size by up to 4 (torch clamps it).
inline void drawSliceAttrs(OpContext& ctx, Rng& rng, double overshootChance = 0) {
  require(ctx.x().rank() >= 1, "a slice needs a dim");  // a repair may offer a 0-d value
  int64_t d = rng.uniform(0, ctx.x().rank() - 1);
  int64_t size = ctx.x().shape[d];
  int64_t start = rng.uniform(0, size - 1);
  ctx.attrs["dim"] = d;
  ctx.attrs["start"] = start;
  int64_t overshoot = overshootChance > 0 && rng.chance(overshootChance) ? 4 : 0;
  ctx.attrs["end"] = rng.uniform(start + 1, size + overshoot);
}

/// A shape of `rank` dims broadcastable to `s` (some dims 1, some leading dims dropped).
inline std::vector<int64_t> broadcastableTo(const std::vector<int64_t>& s, Rng& rng) {
  std::vector<int64_t> out;
  size_t drop = rng.chance(0.3) ? static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(s.size()))) : 0;
  for (size_t i = drop; i < s.size(); ++i) out.push_back(rng.chance(0.25) ? 1 : s[i]);
  return out;
}

/// A catalog entry with its identity and spellings set; the caller adds the rules.
inline OpSpec entry(std::string name, std::string family, std::string python, std::string aten,
                    DTypeSet accepts = kFloats) {
  OpSpec s;
  s.name = std::move(name);
  s.family = std::move(family);
  s.python = std::move(python);
  s.aten = std::move(aten);
  s.accepts = {accepts};
  return s;
}

inline AttrSpec intAttr(std::string name, int64_t lo, int64_t hi) {
  AttrSpec a;
  a.name = std::move(name);
  a.kind = AttrKind::Int;
  a.lo = lo;
  a.hi = hi;
  return a;
}
inline AttrSpec intListAttr(std::string name, int64_t lo, int64_t hi) {
  AttrSpec a = intAttr(std::move(name), lo, hi);
  a.kind = AttrKind::IntList;
  return a;
}
inline AttrSpec floatAttr(std::string name, double lo, double hi) {
  AttrSpec a;
  a.name = std::move(name);
  a.kind = AttrKind::Float;
  a.flo = lo;
  a.fhi = hi;
  return a;
}
inline AttrSpec boolAttr(std::string name) {
  AttrSpec a;
  a.name = std::move(name);
  a.kind = AttrKind::Bool;
  return a;
}
inline AttrSpec choiceAttr(std::string name, std::vector<std::string> choices) {
  AttrSpec a;
  a.name = std::move(name);
  a.kind = AttrKind::Choice;
  a.choices = std::move(choices);
  return a;
}
inline AttrSpec dtypeAttr(std::string name, std::vector<std::string> choices) {
  AttrSpec a = choiceAttr(std::move(name), std::move(choices));
  a.kind = AttrKind::DType;
  return a;
}
/// A dim attribute: its domain is checked by the shape rule against the input's rank.
inline AttrSpec dimAttr(std::string name = "dim") { return intAttr(std::move(name), -8, 7); }
inline AttrSpec optional(AttrSpec a) {
  a.optional = true;
  return a;
}

}  // namespace tcfuzz::gen::ops
