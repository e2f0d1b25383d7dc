#pragma once
// Shape-constraint repair (YARPGen's `rebuild`): a candidate node that breaks its op's rules is
// fixed in place -- attributes solved with Z3, a fresh input resized, a cast, clamp, reshape,
// slice or pad inserted -- and rejected only when none of that works. Serves generated nodes,
// mutated programs and LLM proposals alike.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "generators/Graph.h"
#include "generators/IntConstraints.h"
#include "generators/OpCatalog.h"
#include "generators/Rng.h"

namespace tcfuzz::gen {

/// What repair did, summed over its calls.
struct RepairStats {
  int64_t accepted = 0;       // nodes appended
  int64_t validAsIs = 0;      // ... of which needed no repair
  int64_t casts = 0;          // dtype casts inserted
  int64_t clamps = 0;         // clamps inserted to respect a value domain or avoid overflow
  int64_t coercions = 0;      // reshape/slice/pad/expand nodes inserted to fit a shape
  int64_t resized = 0;        // fresh program inputs resized or redistributed
  int64_t solved = 0;         // Z3 solutions applied
  int64_t resampled = 0;      // attribute sets redrawn
  int64_t rejected = 0;       // nodes that could not be repaired
  std::map<std::string, int64_t> rejectedByOp;
  std::map<std::string, int64_t> rejectReasons;  // first words of the last ShapeError
  RepairStats& operator+=(const RepairStats& o);
  nlohmann::json toJson() const;
};

/// Appends nodes to a graph, keeping it valid: every node's inputs satisfy its op's dtype, shape,
/// integer and value-domain constraints, and no float value can overflow its dtype.
class GraphRepairer {
 public:
  GraphRepairer(const OpCatalog& catalog, const ShapeCaps& caps, Rng& rng, IntSolver& solver);

  /// Starts building on `g` (value ranges come from the input and parameter distributions).
  void attach(Graph& g);
  /// Makes `node` valid and appends it (its `outputs` are assigned here), possibly after fix-up
  /// nodes. On failure returns false and leaves the graph as it was; `reason` says why.
  bool append(Node node, std::string* reason = nullptr);
  /// A new program input (or parameter) of this type, its distribution fitted to `need`.
  int addSource(const TensorType& type, std::optional<Interval> need, bool parameter);
  /// The value range of `value` in the attached graph.
  const Interval& rangeOf(int value) const { return ranges_.at(value); }

  /// Repairs a whole foreign graph (mutated or proposed by an LLM): replays its nodes in order,
  /// dropping those that cannot be repaired together with the nodes that read them. The result's
  /// outputs are the surviving outputs, or its last value when none survives.
  Graph repair(const Graph& foreign, std::vector<std::string>* dropped = nullptr);

  const RepairStats& stats() const { return stats_; }

 private:
  /// `fixup`: a node repair itself inserts; it must be valid as built (no redraws).
  bool tryAppend(Node& node, std::string& reason, bool fixup = false);
  /// sampleAttrs that reports a throwing sampler as false.
  bool drawAttrs(const OpSpec& op, OpContext& ctx);
  int insert(const std::string& op, std::vector<int> inputs, nlohmann::json attrs);
  int castTo(int value, DType dtype);
  int clampInto(int value, Interval bounds);
  int coerce(int value, const TensorType& target);
  bool isFreshSource(int value) const;
  void fitSourceTo(int value, Interval need);
  OpContext contextFor(const OpSpec& op, const Node& node) const;
  std::map<std::string, UnknownBounds> boundsOf(const OpSpec& op) const;

  const OpCatalog& catalog_;
  ShapeCaps caps_;
  Rng& rng_;
  IntSolver& solver_;
  Graph* g_ = nullptr;
  std::vector<Interval> ranges_;
  RepairStats stats_;
};

/// Re-derives every node's output types from its inputs and attributes: "" when the graph is
/// valid, else the first problem ("node 3 (conv2d): ...").
std::string firstInvalidNode(const OpCatalog& catalog, const Graph& g);

/// The distribution a fresh source of `type` gets so that its values lie in `need`.
Distribution distributionFor(const TensorType& type, std::optional<Interval> need, bool unique);

}  // namespace tcfuzz::gen
