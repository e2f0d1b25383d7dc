#pragma once
// Grammar generation: a seeded Generator grows a graph op by op under a GenPolicy, repairing
// each candidate node (GraphRepairer) instead of discarding it.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generators/ir/Graph.h"
#include "generators/repair/GraphRepair.h"
#include "generators/features/InputWrites.h"
#include "generators/repair/IntConstraints.h"
#include "generators/OpCatalog.h"
#include "generators/python/PythonConstructs.h"

namespace tcfuzz::gen {

/// What to generate, as plain data (JSON-loadable so a campaign can tune it without a rebuild).
struct GenPolicy {
  int minNodes = 6, maxNodes = 14;   // target node count per program (fix-up and merge nodes included)
  int maxInputs = 2;                 // program inputs created up front
  int maxOutputs = 3;                // dangling values returned
  ShapeCaps caps;                    // rank, dim and element caps
  double freshOperandChance = 0.5;   // an extra operand is a new input rather than an existing value
  double parameterChance = 0.3;      // a new float operand is a model parameter, not an input
  double reuseChance = 0.2;          // a node's input 0 is a value another node reads already (fan-out)
  std::map<std::string, double> dtypeWeights{{"float32", 6}, {"float16", 1}, {"bfloat16", 1}, {"float64", 0.5},
                                             {"int64", 0.6}, {"int32", 0.3}, {"bool", 0.3},
                                             {"complex64", 0.4}, {"complex128", 0.2}};
  std::map<std::string, double> familyWeights{{"buffer-update", 4}, {"param-data", 2}, {"expand-write", 2}, {"aten-backward", 0.3},
                                              {"noop-view", 0.25}};  // family -> weight (default 1)
  std::map<std::string, double> opWeights;      // op -> weight, overrides the family weight
  double inputLayoutChance = 0.15;              // a program input gets a non-contiguous layout (InputLayout.h)
  std::map<std::string, double> layoutWeights{{"transposed", 2}, {"strided", 2}, {"expanded", 1}, {"channels_last", 1}};
  std::vector<std::string> mergeOps{"add", "mul", "sub"};  // join surplus dangling values (no dead nodes)
  double idiomChance = 0.1;                     // a growth step appends an idiom (Idioms.h) instead of one op
  std::map<std::string, double> idiomWeights{{"attention", 1}, {"sdpa", 1}, {"matmul_chain", 1},
                                             {"norm_activation", 1}, {"reduce_after_pointwise", 1}, {"cat_then_index", 1}};
  // +-max and +-inf/NaN are off by default: which formula overflows differs between eager and compiled
  // code without a bug (bilinear interpolation of +-max gave inf in one and not the other), and the
  // oracle has no rule yet that tells that apart. Integer limits are off for the same reason: the IR's
  // value ranges do not know them, so a sum or a cast downstream may overflow in one formula only.
  // A policy can turn them on.
  // Writes into program inputs (InputWrites.h): an in-place node that can write into the input it reads
  // does so instead of into a clone; a program starts with a fill of one floating input.
  double inputWriteChance = 0.75;
  double inputFillChance = 0.1;
  // Aliased inputs (InputAliases.h): where forward writes into an input, a new input aliases it and is read
  // after the write; else an existing program input becomes a view of another's storage.
  double aliasReadAfterWriteChance = 0.35;
  double inputAliasChance = 0.08;
  std::map<std::string, double> aliasWeights{{"same", 1}, {"full-slice", 1}, {"transpose", 1},
                                             {"narrow", 2}, {"expand", 1}, {"as-strided", 2}};
  double boundaryChance = 0.05;                 // a floating input gets boundary values (InputLayout.h)
  // A complex input gets them (in its real part, imaginary part or both), as often as a floating one. The
  // kinds are boundaryWeights', so +-inf and NaN parts come only where a policy turns "nonfinite" on.
  double complexBoundaryChance = 0.05;
  std::map<std::string, double> boundaryWeights{{"signed_zero", 2}, {"denormal", 2}, {"tiny", 1},
                                                {"ties", 2},        {"extremes", 0},   {"nonfinite", 0},
                                                {"int_limits", 0}};
  // Python-level constructs around the op graph (python/PythonConstructs.h): graph breaks, branches,
  // Python state and call schedules.
  PythonConstructChances pythonConstructs;

  /// An op's weight: its op weight, else its family's, else 1. Generation and mutation never add an
  /// op of weight 0 or less.
  double weightOf(const OpSpec& op) const;

  nlohmann::json toJson() const;
  /// Reads a policy; unknown keys and bad values raise std::invalid_argument naming them.
  static GenPolicy fromJson(const nlohmann::json& doc);
};

/// A program's target node count range, both ends included.
struct NodeRange {
  int minNodes = 6, maxNodes = 14;
};

/// Grows programs from a seed. One Generator per thread; programs replay from (seed, index).
class Generator {
 public:
  Generator(const OpCatalog& catalog, GenPolicy policy, uint64_t seed);
  /// Program `index` of this generator's seed: the same (seed, index) always gives the same graph.
  Graph generate(uint64_t index);
  /// As generate(index), with `nodes` in place of the policy's node range: the same (seed, index,
  /// nodes) always gives the same graph, and generate(i, {minNodes, maxNodes}) == generate(i).
  Graph generate(uint64_t index, NodeRange nodes);
  /// An LLM proposal's program `core` with a graph of a size drawn from `nodes` grown around it: core inputs may be fed by
  /// pointwise neighbours, then ops that read the core's values (pointwise neighbours, views and
  /// layout changes, in-place writes, and the policy's other ops) follow, until the size is reached;
  /// no dead nodes. The core's nodes are marked `core`; its input layouts are kept. Deterministic in
  /// (seed, core, index, nodes); the result's origin is core's with seed, index and `nodes` set.
  Graph grow(const Graph& core, uint64_t index, NodeRange nodes);
  /// Repair counters summed over every program generated so far.
  const RepairStats& stats() const { return stats_; }
  int64_t solverCalls() const { return solver_.calls(); }

 private:
  const OpSpec& pickOp(Rng& rng) const;
  /// The policy's chances of writes into inputs, with the fill ops it gives a weight.
  InputWriteChances inputWrites() const;
  /// Appends ops (or idioms) until the graph, with the merges settleOutputs will add, has `target`
  /// nodes or attempts run out. `neighbours`: half the ops come from neighbours_.
  void growNodes(Graph& g, GraphRepairer& repairer, Rng& rng, int target, bool neighbours) const;
  /// Joins dangling values pairwise with the policy's merge ops until at most maxOutputs remain, then
  /// returns them and drops whatever still reaches no output: a program without dead nodes.
  void settleOutputs(Graph& g, GraphRepairer& repairer, Rng& rng) const;
  /// Appends an idiom drawn with the policy's weights on a value it fits; false when none was appended.
  bool growIdiom(Graph& g, GraphRepairer& repairer, Rng& rng) const;
  /// Gives each program input not named in `keep` a random layout, and each floating one boundary values,
  /// with the policy's chances.
  void drawLayouts(Graph& g, Rng& rng, const std::set<std::string>& keep) const;
  TensorType randomType(Rng& rng, const OpSpec& op, int k) const;
  DType pickDType(Rng& rng, DTypeSet allowed) const;

  const OpCatalog& catalog_;
  GenPolicy policy_;
  uint64_t seed_;
  IntSolver solver_;
  std::vector<const OpSpec*> ops_;
  std::vector<double> weights_;
  std::vector<const OpSpec*> neighbours_;  ///< ops of weight > 0 that grow around an LLM core (kNeighbourFamilies, views, in-place)
  RepairStats stats_;
};

}  // namespace tcfuzz::gen
