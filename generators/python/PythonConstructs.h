#pragma once
// Python-level constructs around the op graph: what Dynamo must trace beyond tensor ops (docs/programs.md,
// "Python-level constructs"). A graph break before a node; an `if` around a node, decided by a tensor
// value, by module state or by the call count; a loop over an output's dim 0 that fills a list; Python
// state that forward reads and writes (an instance counter, a list it appends to, a module global, a class
// attribute scaling an output, a global offsetting one); an output through a Python form (PythonForms.h:
// other loops, closures, containers, dataclasses, grad-mode regions, gradient hooks, state kept in a closure
// cell or a dict); a forward hook or pre-hook on the model; and a schedule of calls with state changes in between.
//
// Each construct sits on a node (Node::python) or on the program (Graph::schedule), so every transform of
// the op graph (repair, mutation, minimization) carries it along. The emitter writes only the constructs
// that hold on the program as it now is (planPythonConstructs): a construct whose node or operand changed
// under a mutation is left out, never emitted wrong. The rules that keep the oracle sound:
//   - a branch reads a program input that nothing writes, with exact operations (an element, a comparison,
//     any), so eager, compiled and the float64 reference always take the same arm: rounding never picks it;
//   - a branch sits only around a node whose output forward returns and nothing else reads, so the other
//     arm (the output rolled by one element) breaks no property a downstream op relies on (sortedness);
//   - Python state, forms and hooks touch only returned floating outputs, by small factors and constants.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "generators/ir/Graph.h"
#include "generators/OpCatalog.h"
#include "generators/ir/Rng.h"
#include "generators/python/HigherOrderOps.h"

namespace tcfuzz::gen {

/// How often generation adds each construct (GenPolicy's python_constructs).
struct PythonConstructChances {
  double graphBreak = 0.3;   // a graph break before a random node; with the same chance again, a second one
  double branch = 0.35;      // an `if` around a node whose output only forward returns
  double outputState = 0.3;  // a returned floating output scaled by a class attribute or offset by a global
  double counter = 0.25;     // forward counts its calls in an attribute, a list and a global
  double loop = 0.2;         // a returned floating output rebuilt by a loop over its dim 0 (a loop form)
  double form = 0.35;        // a returned floating output through another Python form (PythonForms.h)
  double hook = 0.15;        // a forward hook (doubles floating outputs) or pre-hook (records input shapes)
  double globalHook = 0.4;   // a drawn hook is process-wide (register_module_forward[_pre]_hook) instead of the model's
  double schedule = 0.7;     // a program that keeps state gets a schedule of 1 to 3 state changes
  double hop = 0.4;          // a higher-order op or torch.func transform runs a region (HigherOrderOps.h)
  std::map<std::string, double> branchWeights{{"item", 2}, {"tensor", 2}, {"any", 1}, {"flag", 1}, {"training", 1}, {"calls", 1}};
  /// Each form's weight among the loop forms (drawn with `loop`) or the others (drawn with `form`).
  std::map<std::string, double> formWeights = defaultFormWeights();

  static std::map<std::string, double> defaultFormWeights();

  nlohmann::json toJson() const;
  /// Reads the policy's python_constructs object; unknown keys and bad values raise std::invalid_argument.
  static PythonConstructChances fromJson(const nlohmann::json& doc);
};

/// The constructs that hold on a program, as the emitter writes them.
struct PythonPlan {
  std::vector<NodePython> nodes;       ///< per node: its constructs that hold (the others cleared)
  std::vector<ScheduleStep> schedule;  ///< the schedule's steps whose state the program keeps
  bool classScale = false;             ///< class attribute `scale` (read through self.scale)
  bool globalOffset = false;           ///< module global OFFSET
  bool flag = false;                   ///< instance attribute self.flag
  bool training = false;               ///< a branch reads self.training (nn.Module's train/eval flag)
  bool counter = false;                ///< self.calls, self.trace and the global CALLS
  std::string hook;                    ///< Graph::hook
  std::set<std::string> forms;         ///< the forms the nodes use (their module text is written once)
  std::vector<std::optional<HopRegion>> hops;  ///< per node: the region its higher-order op runs, where it holds
  std::set<std::string> hopKinds;      ///< the higher-order ops the regions use

  bool anyConstruct() const;
  /// A form holds submodules that act differently in train() (a train-mode step changes them).
  bool submodulesReadTraining() const;
  bool graphBreak() const;
  /// Forward writes Python state: an attribute, a list or a global (the counter, the pre-hook's list).
  bool mutatesState() const;
  /// The globals the program names in STATE_GLOBALS.
  std::vector<std::string> stateGlobals() const;
};

/// What a branch test of `kind` reads: an operand of the node, a tensor (item, tensor, any: Dynamo breaks its graph
/// there unless it captures scalars), or else the call counter (calls) or a flag only a schedule step changes.
bool branchReadsTensor(const std::string& kind);

/// The constructs of `g` that hold (see the rules above).
PythonPlan planPythonConstructs(const Graph& g, const OpCatalog& catalog);

/// Adds constructs to a generated program with `chances`; their places and values are drawn from `rng`.
/// Draws only constructs that hold, so planPythonConstructs keeps every one. Returns how many were added.
int addPythonConstructs(Graph& g, const OpCatalog& catalog, const PythonConstructChances& chances, Rng& rng);

/// A mutation: drops one construct (a graph break, branch, output state, counter, form or schedule step) or, as
/// often, adds constructs of one kind, drawn as generation draws them with that kind's chance at 1 and the
/// others' at 0. False when nothing changed.
bool mutatePythonConstructs(Graph& g, const OpCatalog& catalog, const PythonConstructChances& chances, Rng& rng);

/// `g` as one trace captures it whole, for the entry points through torch.export: without a call schedule, a
/// hook, graph breaks, Python branches, Python state (output state, the counter, forms that keep state or break
/// the graph) and aliased inputs. Export runs forward once and keeps one graph, so those would judge export's
/// documented single trace rather than the compiler. Higher-order ops, data-dependent forms, input and buffer
/// writes stay: export captures them. So do the regions of the higher-order ops export documents
/// (kExportedHopKinds); the others (checkpoint, the torch.func transforms but vmap, autograd.Function,
/// nested_compile_region) run inline. A parameter written outside autograd (family "param-data") becomes a
/// buffer written the same way (buffer_add_, buffer_lerp_): export keeps parameters as constants.
Graph singleTraceProgram(const Graph& g);
/// The higher-order op kinds a program judged through torch.export keeps.
inline const std::set<std::string> kExportedHopKinds{"cond",  "map",  "while_loop",     "scan",
                                                     "associative_scan", "vmap", "flex_attention", "functional_call"};


/// The program's Python text for its constructs, for PythonEmitter. `names` are the values' Python names.
/// `suffix` follows each module-level name that holds state (OFFSET, CALLS, a form's global, STATE_GLOBALS) and
/// the class's name in a schedule step: a batch member's ("_2") keeps its state apart from the other members'.
struct PythonText {
  const PythonPlan& plan;
  std::string suffix;
  std::string model = "Model";  ///< the nn.Module class's name
  /// `name` as this program's text names a module global: name + suffix.
  std::string global(std::string_view name) const { return std::string(name) + suffix; }
  /// Import lines the forms need after torch's ("import dataclasses\n"), "" without any.
  std::string imports() const;
  /// Module-level state after the imports ("OFFSET = 0.0\n"), then the forms' definitions; "" without any.
  std::string moduleState() const;
  /// Class-body lines before __init__ ("    scale = 1.0\n"), "" without any.
  std::string classAttributes() const;
  /// __init__ lines ("        self.calls = 0\n").
  std::string initState() const;
  /// forward's first lines: the `global` statement of the globals forward writes.
  std::string forwardPrologue() const;
  /// Whether node `i`'s code is written inside a region's body (at the region's head), not in place.
  bool inBody(size_t i) const;
  /// forward lines before node `i`'s code: the counter, then the graph break.
  std::string beforeNode(size_t i) const;
  /// Node `i`'s one-line code `lhs = rhs  # comment`, inside its branch when it has one.
  std::string nodeCode(const Graph& g, size_t i, const std::vector<std::string>& names, const std::string& lhs,
                       const std::string& rhs, const std::string& comment) const;
  /// Module-level functions after the globals: the hook function, "" without a hook.
  std::string hookFunction() const;
  /// forward lines after node `i`'s code: its output's form, then its scale or offset.
  std::string afterNode(const Graph& g, size_t i, const std::vector<std::string>& names) const;
  /// The schedule's step functions, SCHEDULE and STATE_GLOBALS after make_inputs, "" without any.
  std::string scheduleAndState() const;
  /// Schedule step `k` (0-based) as scheduleAndState writes it: its function's name ("change_1", suffixed), its
  /// docstring (what it changes) and its body.
  struct StepText {
    std::string name, doc, body;
  };
  StepText scheduleStep(size_t k) const;
};

}  // namespace tcfuzz::gen
