#pragma once
// Grammar mutation (libFuzzer's named mutator table, over the IR): each mutator edits a copy of a
// queue entry, then GraphRepairer makes the result valid again.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "generators/Generator.h"
#include "generators/ir/Graph.h"
#include "generators/repair/IntConstraints.h"
#include "generators/OpCatalog.h"

namespace tcfuzz::gen {

/// How often each mutator ran and how often its result survived repair as a new program.
struct MutatorStats {
  int64_t applied = 0;   // the mutator found something to change
  int64_t produced = 0;  // ... and repair gave a valid program that differs from the parent
  int64_t dropped = 0;   // nodes repair had to drop afterwards
};

/// The result of one mutation.
struct Mutant {
  Graph graph;
  std::string mutator;
  std::vector<std::string> dropped;  // what repair could not keep
};

class Mutator {
 public:
  /// An edit in place; returns false when it does not apply to this graph.
  using Edit = std::function<bool(Graph& g, const Graph* donor, Rng& rng)>;

  Mutator(const OpCatalog& catalog, GenPolicy policy);
  /// Mutant `index` of `parent` (deterministic in parent, donor and index) with the named
  /// mutator, or one drawn from the table when `name` is empty. `donor` feeds "splice".
  /// nullopt when the mutator does not apply or repair leaves nothing new.
  std::optional<Mutant> mutate(const Graph& parent, const Graph* donor, uint64_t index, const std::string& name = "");
  /// The table's names, in order.
  std::vector<std::string> names() const;
  const std::map<std::string, MutatorStats>& stats() const { return stats_; }

 private:
  bool replaceOp(Graph& g, Rng& rng) const;
  bool insertNode(Graph& g, Rng& rng) const;
  bool deleteNode(Graph& g, Rng& rng) const;
  bool changeAttr(Graph& g, Rng& rng) const;
  bool changeShape(Graph& g, Rng& rng) const;
  bool changeDType(Graph& g, Rng& rng) const;
  bool splice(Graph& g, const Graph* donor, Rng& rng) const;
  /// Redraws one program input's layout (a contiguous input becomes non-contiguous, or back).
  bool changeLayout(Graph& g, Rng& rng) const;
  /// A view op (transpose, narrow, ...) on a value, read by every later reader of that value.
  bool insertView(Graph& g, Rng& rng) const;
  /// An in-place op (add_, narrow_mul_, ...) on a value, read by every later reader of that value.
  bool insertInplace(Graph& g, Rng& rng) const;
  /// Turns a node into its op's in-place twin (relu -> relu_): the emitter writes into the value or its clone.
  bool makeInplace(Graph& g, Rng& rng) const;
  /// Turns a write into a clone of a program input into a write into the input itself, or back (Node::writesInput).
  bool toggleInputWrite(Graph& g, Rng& rng) const;
  /// Adds or drops a Python-level construct (python/PythonConstructs.h: mutatePythonConstructs).
  bool changePythonConstruct(Graph& g, Rng& rng) const;
  /// Inserts a node of an op that `fits` right after a random value is defined, reading it as input 0;
  /// one later reader of the value (every later reader when `everyReader`) reads the node instead.
  bool insertReader(Graph& g, Rng& rng, const std::function<bool(const OpSpec&)>& fits, bool everyReader) const;

  const OpCatalog& catalog_;
  GenPolicy policy_;
  std::vector<std::pair<std::string, Edit>> table_;
  std::map<std::string, MutatorStats> stats_;
};

}  // namespace tcfuzz::gen
