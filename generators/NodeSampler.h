#pragma once
// Draws one valid node of an op in isolation: random input types, the op's attributes, and
// input value ranges inside what the op needs. Used by the catalog's ground-truth tests (also as
// one-node programs) and as the seed of a fresh node in generation.
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "generators/OpCatalog.h"

namespace tcfuzz::gen {

/// One valid application of an op: input types with the value ranges the inputs are drawn from,
/// the attributes, and the output types the op's shape rule predicts.
struct SampledNode {
  std::vector<TensorType> inputs;
  std::vector<Interval> ranges;  // finite, inside inputNeed for each input
  nlohmann::json attrs = nlohmann::json::object();
  std::vector<TensorType> outputs;

  /// What the op's rules see for this node: its inputs, their ranges and its attributes.
  OpContext context(const ShapeCaps* caps = nullptr) const;
};

/// Draws up to `attempts` candidate nodes of `op` and returns the first its shape rule accepts.
/// Input 0: rank in [op.minRank, min(op.maxRank, caps.maxRank + 1)], dims in [1, 6], dtype from
/// op.accepts[0]. Attributes: sampleAttrs. Inputs 1..: arity drawn in [minInputs, maxInputs]
/// (at most minInputs + 4), types from op.propose (input 0's type when unset) with the dtype forced
/// into op.accepts[k] (and replaced by another accepted dtype one time in five, so the shape rule's
/// type promotion and dtype checks get exercised). Ranges: inputNeed clipped to defaultBox.
/// nullopt when no attempt is valid. Deterministic for a given rng state.
std::optional<SampledNode> sampleNode(const OpSpec& op, Rng& rng, const ShapeCaps& caps, int attempts = 200);

/// The node as a one-node program of `op`: input k is program input "x<k>", drawn from ranges[k]
/// (distinct values for an integer index of a uniqueIndex op when the range holds enough); the
/// node's outputs are the program's.
Graph oneNodeGraph(const OpSpec& op, const SampledNode& node);

/// A box values of dtype `d` are drawn in: [0, 1] for bool, [0, 5] or [-20, 20] for ints,
/// [-m, m] with m in {2, 10, 100} for floats.
Interval defaultBox(DType d, Rng& rng);

/// The finite range an input is drawn from when the op needs `need` (nullopt: no constraint):
/// `need` clipped to `box`, or `need` made finite when they do not meet; integer dtypes (and
/// bool) get integer bounds.
Interval samplingRange(DType d, const std::optional<Interval>& need, Interval box);

}  // namespace tcfuzz::gen
