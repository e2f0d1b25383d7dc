#pragma once
// The ill-conditioning filter. Maintainers close wrong-result reports whose
// difference comes from amplification (a reciprocal near zero, inverse of a near-singular matrix, an
// argmax over near-ties): there, any rounding difference is magnified, compiled's included. Before a
// wrong result is reported, eager runs again on inputs moved by a few ulps (ProgramTester); if eager's
// own spread covers compiled's deviation, the verdict is ill-conditioned: recorded, never reported.
#include <string>
#include <vector>

#include "oracles/judge/Comparator.h"

namespace tcfuzz::oracles {

/// One failing leaf, measured against eager: floating leaves by rmse over eager's finite elements (inf
/// when NaN/Inf placement differs), integer and bool leaves by the count of differing elements.
struct LeafSpread {
  size_t leaf = 0;
  double spread = 0;     ///< the largest distance from eager of a perturbed eager run (inf: NaN/Inf moved)
  double deviation = 0;  ///< compiled's distance from eager
  bool covered = false;  ///< deviation <= spread (so moved NaN/Inf placement is covered only by moved placement)
};

struct ConditioningVerdict {
  bool illConditioned = false;  ///< every failing leaf is covered
  std::string reason;           ///< the figures, for the verdict's reason
  std::vector<LeafSpread> leaves;
};

/// Judges the failing leaves of `cmp` (a comparison of eager and compiled that did not pass) against
/// `perturbed`, eager's outputs on perturbed inputs. A leaf that failed on structure (kind, dtype,
/// shape) is never covered; so is any leaf when `perturbed` is empty or has another structure.
ConditioningVerdict judgeConditioning(const Comparison& cmp, const LoadedOutputs& eager, const LoadedOutputs& compiled,
                                      const std::vector<LoadedOutputs>& perturbed);

}  // namespace tcfuzz::oracles
