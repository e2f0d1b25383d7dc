#pragma once
// Shape-constraint repair (YARPGen's `rebuild`): a candidate node that breaks its op's rules is
// fixed in place -- attributes solved with Z3, a fresh input resized, a cast, clamp, reshape,
// slice or pad inserted -- and rejected only when none of that works. Serves generated nodes,
// mutated programs and LLM proposals alike.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "generators/ir/Graph.h"
#include "generators/repair/IntConstraints.h"
#include "generators/OpCatalog.h"
#include "generators/ir/Rng.h"

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
  /// The node being appended and what the stages have derived for it so far (GraphRepair.cpp).
  struct AppendAttempt;
  /// One step of tryAppend: checks or repairs the attempt; false rejects the node (`reason` says why).
  using AppendStage = bool (GraphRepairer::*)(AppendAttempt& a);
  /// tryAppend's stages by name, run in order. The order is part of replay: it fixes the RNG draws.
  static const std::pair<std::string_view, AppendStage> kAppendStages[];

  /// Runs kAppendStages on `node`. `fixup`: a node repair itself inserts; it must be valid as built
  /// (no rank change, no redraws).
  bool tryAppend(Node& node, std::string& reason, bool fixup = false);

  // The stages, in table order.
  /// Finds the node's op in the catalog; rejects an unknown op.
  bool lookUpOp(AppendAttempt& a);
  /// Drops inputs beyond the op's arity; gives an input-less node one fresh input.
  bool fitArity(AppendAttempt& a);
  /// Casts each input the op does not accept to the closest accepted dtype (a fresh input changes dtype).
  bool fitDTypes(AppendAttempt& a);
  /// Brings input 0 into the op's rank range with a reshape (not for fix-up nodes).
  bool fitRank(AppendAttempt& a);
  /// Builds the context; redraws attributes outside their domains (rejects a fix-up node's).
  bool fitAttrs(AppendAttempt& a);
  /// Adds fresh inputs of the proposed types up to the op's minimum arity.
  bool addMissingInputs(AppendAttempt& a);
  /// Infers the output types, with up to 4 repair rounds: Z3, operand coercion, attribute redraw.
  bool inferWithRepair(AppendAttempt& a);
  /// Rejects an output beyond the element cap.
  bool capOutputElements(AppendAttempt& a);
  /// Fits a fresh input's distribution into the op's value domain, or clamps the input into it.
  bool fitValueDomains(AppendAttempt& a);
  /// Rejects index inputs of a uniqueIndex op that cannot hold distinct values.
  bool checkUniqueIndices(AppendAttempt& a);
  /// Clamps float inputs (to +-2, then +-0.5) until no float output can overflow its dtype.
  bool avoidOverflow(AppendAttempt& a);
  /// Appends the node and its outputs with their ranges, and counts it.
  bool commit(AppendAttempt& a);

  // What the stages share.
  /// Runs the shape rule into a.outs; false (and a.reason) on a ShapeError.
  bool inferOutputs(AppendAttempt& a);
  /// Rebuilds a.ctx from the node's current inputs, keeping its attributes.
  void refreshContext(AppendAttempt& a);
  /// Solves the op's integer constraints over the attributes (then also fresh inputs' dims) and
  /// applies the solution; false when Z3 finds none.
  bool solveIntConstraints(AppendAttempt& a);
  /// Makes inputs 1.. the types the op proposes (resizing fresh ones, coercing others); false
  /// (and a.reason) when an operand cannot be coerced.
  bool proposeOperands(AppendAttempt& a);
  /// Computes a.outRanges; false when a float output may exceed its dtype's safe magnitude.
  bool outputRangesFinite(AppendAttempt& a);

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

/// The type the op proposes for operand `k` (input 0's type when it proposes none); nullopt when its
/// rule cannot work from these inputs and attributes (it threw ShapeError or indexed a missing dim).
std::optional<TensorType> proposedOperand(const OpSpec& op, const OpContext& ctx, int k, Rng& rng);

/// Re-derives every node's output types from its inputs and attributes: "" when the graph is
/// valid, else the first problem ("node 3 (conv2d): ...").
std::string firstInvalidNode(const OpCatalog& catalog, const Graph& g);

/// The distribution a fresh source of `type` gets so that its values lie in `need`.
Distribution distributionFor(const TensorType& type, std::optional<Interval> need, bool unique);

}  // namespace tcfuzz::gen
