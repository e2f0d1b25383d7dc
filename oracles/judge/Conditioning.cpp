#include "oracles/judge/Conditioning.h"
#include "oracles/judge/OutputLoader.h"

#include <cmath>
#include <limits>

#include <ATen/ATen.h>
#include <fmt/format.h>

namespace tcfuzz::oracles {
namespace {

const at::Tensor* tensorOf(const LoadedOutputs& out, size_t leaf) {
  if (leaf >= out.leaves.size()) return nullptr;
  const OutputLeaf& l = out.leaves[leaf];
  if (l.kind == OutputLeaf::Kind::Other || l.index < 0 || l.index >= static_cast<int>(out.tensors.size())) return nullptr;
  return &out.tensors[l.index];
}

/// The distance of `other` from `eager` (see LeafSpread); inf when NaN/Inf placement differs.
double distance(const at::Tensor& eager, const at::Tensor& other) {
  if (!eager.sizes().equals(other.sizes()) || eager.scalar_type() != other.scalar_type())
    return std::numeric_limits<double>::infinity();
  if (!(eager.is_floating_point() || eager.is_complex())) return at::ne(eager, other).sum().item<double>();
  at::Tensor e = eager.to(at::kDouble), o = other.to(at::kDouble);
  if (!at::equal(at::isfinite(e), at::isfinite(o))) return std::numeric_limits<double>::infinity();
  at::Tensor finite = at::isfinite(e);
  at::Tensor ef = e.masked_select(finite), of = o.masked_select(finite);
  if (ef.numel() == 0) return 0.0;
  return at::sqrt(at::mean(at::square(ef - of))).item<double>();
}

}  // namespace

ConditioningVerdict judgeConditioning(const Comparison& cmp, const LoadedOutputs& eager, const LoadedOutputs& compiled,
                                      const std::vector<LoadedOutputs>& perturbed) {
  ConditioningVerdict v;
  bool all = !perturbed.empty();
  std::string figures;
  for (const LeafComparison& leaf : cmp.leaves) {
    if (leaf.passed) continue;
    LeafSpread s;
    s.leaf = leaf.leaf;
    const at::Tensor* e = tensorOf(eager, leaf.leaf);
    const at::Tensor* c = tensorOf(compiled, leaf.leaf);
    bool structural = !leaf.dtypeMatch || !leaf.shapeMatch || !e || !c;
    if (!structural) {
      s.deviation = distance(*e, *c);
      for (const LoadedOutputs& p : perturbed) {
        const at::Tensor* q = p.leaves.size() == eager.leaves.size() ? tensorOf(p, leaf.leaf) : nullptr;
        s.spread = std::max(s.spread, q ? distance(*e, *q) : 0.0);
      }
      // NaN/Inf placement that moves when eager's inputs move by a few ulps is itself ill-conditioned:
      // an infinite deviation is covered by an infinite spread.
      s.covered = !perturbed.empty() && s.deviation <= s.spread;
    }
    all = all && s.covered;
    figures += fmt::format("{}leaf {}: compiled deviates {:.3g} from eager, eager's own spread {:.3g}",
                           figures.empty() ? "" : "; ", s.leaf, s.deviation, s.spread);
    v.leaves.push_back(s);
  }
  v.illConditioned = all && !v.leaves.empty();
  v.reason = fmt::format("{} ({} eager runs on inputs moved by a few ulps): {}",
                         v.illConditioned ? "eager's own spread covers compiled's deviation"
                                          : "eager's own spread does not cover compiled's deviation",
                         perturbed.size(), figures);
  return v;
}

}  // namespace tcfuzz::oracles
