#pragma once
// Delta debugging on the program IR (docs/architecture.md, "Triage"): reduction passes behind one small
// interface, their order kept as data (cvise). A candidate replaces the current case only when it
// is strictly smaller and the caller's test says it still shows the same bug: for crashes the
// signature is unchanged (libFuzzer's DEDUP_TOKEN rule), for numeric divergences the divergence
// from fp64 still reproduces (the accuracy minifier's rule). Candidates are handed to the test in
// batches, so the caller can run a batch in parallel through the worker pool.
//
// Passes (a table of name -> function in Minimizer.cpp; MinimizerPolicy::passes orders them):
//   hinted-ops     keep only the nodes whose op is in a known bug's op multiset (one candidate per hint)
//   remove-grown   in a program grown around an LLM core (nodes marked core): remove the grown nodes,
//                  all at once, then ddmin over them alone, before remove-nodes may take core nodes
//   drop-config    reset one non-default compile option (mode, dynamic, fullgraph, backward, an Inductor option)
//   plain-python   drop the Python-level constructs (generators/python/PythonConstructs.h): all at once, then
//                  the hook, then one schedule step (a state change and its call), then one node's graph
//                  break, branch (its first arm kept), output state, call counter or loop
//   drop-outputs   keep one output, or drop one output
//   remove-nodes   ddmin over the nodes: remove a chunk (halves, quarters, ... single nodes); a removed
//                  value still read elsewhere becomes a fresh program input of its type, and a kept
//                  value only removed nodes read becomes an output
//   bypass-nodes   replace a node by one of its inputs of the same type
//   reset-attrs    set one attribute to its simplest value (null, false, the first choice, the value
//                  in its domain closest to 0)
//   plain-inputs   make every program input contiguous and plain-valued, or one input, or reset one
//                  input's layout or boundary values alone
//   shrink-ranks   drop a dimension of one program input or parameter
//   shrink-shapes  halve every dimension of all inputs, of one input, or one dimension of one input
// Every candidate goes through shape repair (generators/repair/GraphRepair) and dead-node elimination,
// and is dropped unless the whole graph is valid.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generators/ir/Graph.h"
#include "generators/OpCatalog.h"
#include "oracles/judge/CompileConfig.h"

namespace tcfuzz::oracles {

/// A program and the configuration it is tested under: what the minimizer shrinks.
struct MinimizeCase {
  gen::Graph graph;
  CompileConfig compile;
  bool backward = false;
  std::string pass;  ///< the pass that made this case ("" for the start)
};

/// The order in which cases compare: fewer nodes first, then outputs, config options, input
/// elements, the sum of input ranks, attributes not at their simplest value.
struct CaseSize {
  int64_t nodes = 0, outputs = 0, configOptions = 0;
  int64_t pythonConstructs = 0;  ///< Python-level constructs on nodes, the hook and the schedule steps
  int64_t elements = 0, rankSum = 0, complexAttrs = 0;
  int64_t specialInputs = 0;  ///< program inputs with a non-contiguous layout or boundary values
  auto operator<=>(const CaseSize&) const = default;
  std::string str() const;
};

/// Tests candidates: for each one, whether it still shows the bug. May run them in parallel.
using CandidateTest = std::function<std::vector<bool>(const std::vector<MinimizeCase>&)>;

/// The minimizer's knobs, as data (JSON keys: passes, batch, max_candidates, max_rounds). `passes`
/// is the order the named passes run in; each name is one of Minimizer::passNames().
struct MinimizerPolicy {
  std::vector<std::string> passes = {"hinted-ops",   "remove-grown", "drop-outputs", "remove-nodes",
                                     "bypass-nodes", "drop-config",  "plain-python", "reset-attrs",
                                     "plain-inputs", "shrink-ranks", "shrink-shapes"};
  int batch = 2;              ///< candidates per call of the test (the pool's parallelism)
  int maxCandidates = 300;    ///< tested candidates in all; the best case so far is kept when reached
  int maxRounds = 3;          ///< passes over the whole list; stops early at a fixpoint
  std::vector<std::vector<std::string>> opHints;  ///< op multisets of bugs already minimized
  bool stopOnHint = true;     ///< a case reduced to a known bug's ops is that bug: stop there
  uint64_t seed = 0;          ///< repair's random draws (deterministic per candidate)

  nlohmann::json toJson() const;
  /// Unknown keys, unknown pass names and bad values raise std::invalid_argument naming them.
  static MinimizerPolicy fromJson(const nlohmann::json& doc);
};

/// What one minimization did.
struct MinimizeResult {
  MinimizeCase best;
  int candidatesTested = 0;
  int accepted = 0;
  std::map<std::string, int> acceptedByPass;
  bool budgetExhausted = false;
  std::vector<std::string> log;  ///< one line per accepted candidate: "remove-nodes: 20 -> 10 nodes"
};

class Minimizer {
 public:
  Minimizer(const gen::OpCatalog& catalog, MinimizerPolicy policy);

  /// Shrinks `start` while `test` keeps accepting candidates. `start` itself is assumed to show the bug.
  MinimizeResult minimize(const MinimizeCase& start, const CandidateTest& test) const;

  /// The valid candidates one pass proposes for `c`, most reducing first (exposed for tests).
  std::vector<MinimizeCase> candidates(const std::string& pass, const MinimizeCase& c) const;

  /// Every pass name, in the default order.
  static std::vector<std::string> passNames();

 private:
  /// Repair, dead-node elimination and compaction; nullopt when the result is invalid or empty.
  std::optional<gen::Graph> finish(gen::Graph g) const;

  const gen::OpCatalog& catalog_;
  MinimizerPolicy policy_;
};

/// The size a case is ordered by.
CaseSize sizeOf(const MinimizeCase& c, const gen::OpCatalog& catalog);

/// The compile options of a case that differ from their defaults: "mode", "dynamic", "fullgraph",
/// "backward" and the Inductor option names.
std::vector<std::string> configOptionNames(const MinimizeCase& c);
/// A copy with option `name` (one of configOptionNames) reset to its default.
MinimizeCase withoutConfigOption(const MinimizeCase& c, const std::string& name);

/// An op's name in a signature: an in-place variant is named as its op ("sigmoid_" is "sigmoid",
/// "narrow_mul_" is "narrow_mul"), so one lowering bug met through both spellings is one report.
std::string signatureOpName(const std::string& op);
/// The program's operator names in node order, as signatureOpName gives them (the signature's op multiset).
std::vector<std::string> opsOf(const gen::Graph& g);

}  // namespace tcfuzz::oracles
