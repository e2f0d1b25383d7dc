#include "generators/NodeSampler.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tcfuzz::gen {

namespace {

/// A dtype drawn from `set` (float32 when the set is empty).
DType pickDType(DTypeSet set, Rng& rng) {
  std::vector<DType> members;
  for (int i = 0; i < kDTypeCount; ++i)
    if (set.has(static_cast<DType>(i))) members.push_back(static_cast<DType>(i));
  return members.empty() ? DType::Float32 : rng.pick(members);
}

constexpr double kOtherDTypeChance = 0.2;

DTypeSet acceptsAt(const OpSpec& op, size_t k) { return op.accepts[std::min(k, op.accepts.size() - 1)]; }

}  // namespace

OpContext SampledNode::context(const ShapeCaps* caps) const {
  OpContext ctx;
  ctx.in = inputs;
  ctx.ranges = ranges;
  ctx.attrs = attrs;
  ctx.caps = caps;
  return ctx;
}

Graph oneNodeGraph(const OpSpec& op, const SampledNode& node) {
  Graph g;
  Node n;
  n.op = op.name;
  n.attrs = node.attrs;
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    const TensorType& t = node.inputs[k];
    Interval r = node.ranges[k];
    Distribution d;
    if (t.dtype == DType::Bool) {
      d.kind = "bernoulli";
      d.p = r.lo > 0 ? 1.0 : r.hi < 1 ? 0.0 : 0.5;
    } else if (isInt(t.dtype)) {
      d.kind = op.uniqueIndex && r.hi - r.lo + 1 >= static_cast<double>(t.numel()) ? "randperm" : "randint";
      d.low = r.lo;
      d.high = r.hi + 1;
    } else {
      d.low = r.lo;
      d.high = r.hi;
    }
    int id = g.addValue(t);
    g.inputs.push_back(Source{id, fmt::format("x{}", k), d});
    n.inputs.push_back(id);
  }
  for (const auto& t : node.outputs) {
    n.outputs.push_back(g.addValue(t));
    g.outputs.push_back(n.outputs.back());
  }
  g.nodes.push_back(n);
  return g;
}

Interval defaultBox(DType d, Rng& rng) {
  if (d == DType::Bool) return {0, 1};
  if (isInt(d)) return rng.chance(0.75) ? Interval{0, 5} : Interval{-20, 20};
  double m = rng.pick(std::vector<double>{2, 2, 10, 100});
  return {-m, m};
}

Interval samplingRange(DType d, const std::optional<Interval>& need, Interval box) {
  if (!need) return box;
  Interval r{std::max(box.lo, need->lo), std::min(box.hi, need->hi)};
  if (r.lo > r.hi) {  // the need lies outside the box: take a finite piece of it
    r = *need;
    if (std::isinf(r.lo)) r.lo = r.hi - 4;
    if (std::isinf(r.hi)) r.hi = r.lo + 4;
  }
  if (d == DType::Bool || isInt(d)) {
    Interval whole{std::ceil(r.lo), std::floor(r.hi)};
    if (whole.lo <= whole.hi) r = whole;
  }
  return r;
}

std::optional<SampledNode> sampleNode(const OpSpec& op, Rng& rng, const ShapeCaps& caps, int attempts) {
  const int maxRank = std::min(op.maxRank, caps.maxRank + 1);
  if (maxRank < op.minRank) return std::nullopt;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    OpContext ctx;
    ctx.caps = &caps;
    TensorType x;
    int rank = static_cast<int>(rng.uniform(op.minRank, maxRank));
    for (int i = 0; i < rank; ++i) x.shape.push_back(rng.uniform(1, 6));
    x.dtype = pickDType(acceptsAt(op, 0), rng);
    ctx.in.push_back(x);
    try {
      sampleAttrs(op, ctx, rng);
      int arity = static_cast<int>(rng.uniform(op.minInputs, std::min(op.maxInputs, op.minInputs + 4)));
      for (int k = 1; k < arity; ++k) {
        TensorType t = op.propose ? op.propose(ctx, k, rng) : ctx.x();
        // Now and then another accepted dtype, so mixed-dtype promotion gets exercised.
        if (!acceptsAt(op, k).has(t.dtype) || rng.chance(kOtherDTypeChance)) t.dtype = pickDType(acceptsAt(op, k), rng);
        ctx.in.push_back(t);
      }
      for (size_t k = 0; k < ctx.in.size(); ++k)
        ctx.ranges.push_back(
            samplingRange(ctx.in[k].dtype, inputNeed(op, ctx, static_cast<int>(k)), defaultBox(ctx.in[k].dtype, rng)));
      auto outputs = inferTypes(op, ctx);
      return SampledNode{ctx.in, ctx.ranges, ctx.attrs, outputs};
    } catch (const ShapeError&) {
      continue;
    } catch (const std::exception&) {  // a sampler or propose reading a missing attribute
      continue;
    }
  }
  return std::nullopt;
}

}  // namespace tcfuzz::gen
