#pragma once
// fp64-arbitrated comparison of eager and compiled outputs, after torch._dynamo.utils.same.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tcfuzz::oracles {

// Declared in OutputLoader.h, which brings in ATen: a file that only names comparisons compiles without it.
struct LoadedOutputs;

/// Tolerances and RMSE multipliers; the defaults are those of torch._dynamo.utils.same.
struct ComparatorOptions {
  double tolFloat32 = 1e-4;    ///< also float64 and complex
  double tolFloat16 = 1e-3;
  double tolBFloat16 = 1e-2;
  double multiplier = 2.0;             ///< rmse(compiled, fp64) <= m * rmse(eager, fp64) + tol / 10
  double lowPrecisionMultiplier = 3.0; ///< for float16 and bfloat16 results
  double smallTensorMultiplier = 3.0;  ///< for tensors with fewer than smallTensorNumel elements
  int64_t smallTensorNumel = 1000;
  double unarbitratedTolFactor = 100.0;  ///< without an fp64 reference, fail only beyond tol * this
  /// Accumulated error: a leaf that carries the rounding of N optimizer steps (OutputLeaf::steps) is judged with
  /// N times its dtype's tolerance, in allclose and in the fp64 rule's floor. Each step adds rounding of the same
  /// order to a parameter (its update is computed from values rounded once more), so the bound grows linearly;
  /// the fp64 rule itself (compiled no further from fp64 than m times eager's distance) needs no change, because
  /// eager's distance from fp64 accumulates over the same steps.

  /// The allclose tolerance of a result dtype ("float16", "bfloat16"; anything else: tolFloat32).
  double toleranceFor(const std::string& dtype) const;
  /// The one tolerance table every judge shares: the harness's bisect check and repro.py receive
  /// it in their job or case data. {"float32", "float64", "float16", "bfloat16": tol,
  /// "unarbitrated_factor": unarbitratedTolFactor}.
  nlohmann::json toleranceTable() const;
};

/// The figures behind the verdict for one output leaf.
struct LeafComparison {
  size_t leaf = 0;
  std::string role = "output";  ///< the eager leaf's role (OutputLeaf::role): "output", "grad", "state", ...
  std::string name;             ///< the eager leaf's name, e.g. "grad(param linear.weight)"; may be empty
  std::string eagerDtype, compiledDtype;
  std::vector<int64_t> eagerShape, compiledShape;
  bool dtypeMatch = true, shapeMatch = true;
  bool nonFiniteMatch = true;  ///< eager and compiled put NaN/+Inf/-Inf in the same places
  bool fp64Stable = true;      ///< eager and fp64 agree on NaN/Inf placement (else: not judged)
  bool fp64Used = false;
  bool random = false;         ///< eager's value depends on a random op: dtype and shape judged, values not
  /// Invisible to allclose, counted where fp64 was available: zeros whose sign compiled flips where eager
  /// and fp64 agree on it, and eager's subnormals (fp64's value subnormal in eager's dtype too) that
  /// compiled flushes to zero.
  int64_t signedZeros = 0, flushedDenormals = 0;
  double tolerance = 0, multiplier = 0;
  double maxAbsDiff = 0;       ///< eager vs compiled over finite elements
  double rmseEager = 0, rmseCompiled = 0;  ///< vs the fp64 reference, when used
  int64_t mismatchesEager = 0, mismatchesCompiled = 0;  ///< integer/bool leaves vs fp64
  bool tiedIndices = false;  ///< an index output whose differing indices all point to tied values (passed)
  bool allclose = false;
  bool passed = true;
  std::string reason;          ///< why it failed or was not judged; empty when it simply passed
};

/// The comparison of a whole output.
struct Comparison {
  bool passed = true;
  bool unstable = false;  ///< some leaf had NaN/Inf in eager where fp64 did not (or the reverse)
  bool fp64Available = false;
  std::string reason;     ///< the first failing leaf's reason, or the structure problem
  std::string failingRole;  ///< the first failing leaf's role ("output" for a structure problem); "" when passed
  std::vector<LeafComparison> leaves;
};

/// Compares outputs leaf by leaf. Stateless apart from its options; safe to share between threads.
class Comparator {
 public:
  explicit Comparator(ComparatorOptions options = {}) : options_(options) {}

  /// same(ref=eager, res=compiled, fp64_ref=fp64): dtype, shape, NaN/Inf placement, then allclose,
  /// then the RMSE rule against fp64. fp64 may be null (fp64 run failed): then only a gross
  /// deviation fails. Integer and bool leaves must be equal unless compiled is no further from fp64.
  /// A leaf that eager marks random is judged on kind, dtype and shape only.
  Comparison compare(const LoadedOutputs& eager, const LoadedOutputs& compiled, const LoadedOutputs* fp64) const;

  /// Bitwise equality with NaN equal to NaN: two eager runs of a deterministic program.
  bool identical(const LoadedOutputs& a, const LoadedOutputs& b) const;
  /// The first leaf where `b` is not identical() to `a`, leaves whose `skip` entry is true left out (their
  /// values are not judged); nullopt when every other leaf is.
  std::optional<size_t> firstDifference(const LoadedOutputs& a, const LoadedOutputs& b, const std::vector<bool>& skip) const;

  /// True when fp64 has nothing to arbitrate: every leaf of `compiled` equals eager's bit for bit (signed
  /// zeros included) and every floating value is finite. Then compare() passes whatever fp64 says, no
  /// signed-zero slip exists, and eager has no NaN/Inf that fp64 could show unstable.
  bool settledWithoutFp64(const LoadedOutputs& eager, const LoadedOutputs& compiled) const;

  /// The allclose tolerance for a dtype name ("float16", "bfloat16", anything else: float32's).
  double toleranceFor(const std::string& dtype) const;
  const ComparatorOptions& options() const { return options_; }

 private:
  LeafComparison compareLeaf(size_t index, const LoadedOutputs& eager, const LoadedOutputs& compiled,
                             const LoadedOutputs* fp64) const;
  ComparatorOptions options_;
};

}  // namespace tcfuzz::oracles
