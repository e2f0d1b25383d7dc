#pragma once
// The program IR: a graph of typed values, the nodes that compute them, and the program's
// inputs and parameters with the distributions their values are drawn from.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generators/ir/DType.h"

namespace tcfuzz::gen {

inline constexpr int kGraphFormatVersion = 1;

/// Shape, dtype and device of a tensor value.
struct TensorType {
  std::vector<int64_t> shape;
  DType dtype = DType::Float32;
  std::string device = "cpu";
  int rank() const { return static_cast<int>(shape.size()); }
  int64_t numel() const;
  bool operator==(const TensorType&) const = default;
  /// "[2, 3] float32".
  std::string str() const;
};

/// A closed range that contains every element of a value ([-inf, inf] when unknown).
struct Interval {
  double lo = -1.0 / 0.0, hi = 1.0 / 0.0;
  double magnitude() const;
  bool within(const Interval& other) const { return lo >= other.lo && hi <= other.hi; }
  bool operator==(const Interval&) const = default;
};

/// How a program input or parameter is filled: uniform(low, high), randint(low, high) with high
/// exclusive, randperm(low, high) (distinct values: the first numel of low + randperm(high - low)),
/// or bernoulli(p) for bool.
struct Distribution {
  std::string kind = "uniform";
  double low = -1, high = 1, p = 0.5;
  /// The range every drawn element lies in.
  Interval range() const;
  bool operator==(const Distribution&) const = default;
};

/// How a program input sits in memory (InputLayout.h): the same logical shape and values as drawn, with
/// other strides or a storage offset. kind "contiguous" (the default); "transposed": dims[0] and dims[1]
/// swapped in storage; "strided": dim dims[0] is every `step`-th element of a longer one, from index
/// `offset`; "expanded": dim dims[0] broadcast from size 1 (stride 0); "channels_last": rank 4 or 5.
struct Layout {
  std::string kind = "contiguous";
  std::vector<int> dims;
  int64_t step = 1, offset = 0;
  bool contiguous() const { return kind == "contiguous"; }
  bool operator==(const Layout&) const = default;
};

/// Boundary values in a program input (InputLayout.h): a share of its elements replaced by values of the
/// named kinds ("signed_zero", "denormal", "tiny", "extremes", "nonfinite"), after "ties" rounds the
/// draw to quarters. Empty `kinds`: plain draws.
struct BoundaryValues {
  std::vector<std::string> kinds;
  double share = 0;
  bool empty() const { return kinds.empty(); }
  bool operator==(const BoundaryValues&) const = default;
};

/// A program input that make_inputs derives from another input's storage instead of drawing its own
/// (InputAliases.h): forward receives two arguments that share memory. kind "same": the base tensor itself,
/// passed twice; "full-slice": base[:]; "transpose": base.transpose(dims[0], dims[1]); "narrow":
/// base.narrow(dims[0], start, size); "expand": base.expand(shape); "as-strided": a row-major view of the
/// base's storage `start` elements past the base's own storage offset. Empty `base`: no alias.
struct InputAlias {
  std::string base;
  std::string kind;
  std::vector<int> dims;
  int64_t start = 0;
  bool none() const { return base.empty(); }
  bool operator==(const InputAlias&) const = default;
};

/// One SSA value: a program input, a parameter, or a node output.
struct Value {
  int id = 0;
  TensorType type;
};

/// A program input (an argument of forward) or a parameter (held by the model).
struct Source {
  int value = 0;
  std::string name;
  Distribution dist;
  Layout layout;             // program inputs only; parameters are always contiguous
  BoundaryValues boundary;   // program inputs only
  InputAlias alias;          // program inputs only: a view of another input's storage
};

/// How an `if` around a node is decided (PythonConstructs.h). kind "item": `x.flatten()[0].item() > t`
/// (a graph break: a Python scalar from a tensor); "tensor": `x.flatten()[0] > t` (a tensor's truth value);
/// "any": `(x > t).any()`; "flag": the instance attribute `self.flag`, which a schedule step may flip;
/// "training": the module's `self.training` (False as built: the model runs in eval()), which a
/// schedule step may flip with model.train(); "calls": `self.calls % 2 == 1`, the call counter. `operand`
/// is the node input x the first three read (a program input nothing writes, so rounding never picks the
/// arm); `threshold` is t.
struct BranchTest {
  std::string kind = "item";
  int operand = 0;
  double threshold = 0;
  bool operator==(const BranchTest&) const = default;
};

/// The Python-level constructs on one node (PythonConstructs.h), all off by default. `graphBreakBefore`:
/// torch._dynamo.graph_break() before its code. `branch`: its code is the `if` arm, and the `else` arm
/// rolls its output by one element. `outputState`: "scale" multiplies its output by the class attribute
/// `scale`, "offset" adds the module global OFFSET. `counter`: before its code, forward counts the call in
/// an instance attribute, an instance list and a module global. `form`: after its code, its output passes
/// through a Python form (PythonConstructs.h's table: a loop over dim 0, a closure, a container, a
/// dataclass, a grad-mode region, a tensor hook, ...), "" for none. `hop`: a higher-order op runs the node
/// and the region above it (HigherOrderOps.h).
/// The Python forms a node's output may pass through, by name: the loops over dim 0 first ("enumerate",
/// "while", "zip", "generator", "grow-while-iterating"), then the others. PythonConstructs.cpp writes each.
const std::vector<std::string>& pythonFormNames();
bool isPythonForm(const std::string& name);

/// A higher-order op around a node (HigherOrderOps.h): the node and the ancestors only it reads become the body
/// of a function that `kind` runs (hopKindNames()). `input` and `threshold` are cond's predicate: the first
/// element of the program input at position `input` compared with `threshold`.
struct HopConstruct {
  std::string kind = "cond";
  int input = 0;
  double threshold = 0;
  bool operator==(const HopConstruct&) const = default;
};
/// The higher-order ops a region may be run by, in their table's order (HigherOrderOps.cpp).
const std::vector<std::string>& hopKindNames();

struct NodePython {
  bool graphBreakBefore = false;
  std::optional<BranchTest> branch;
  std::string outputState;
  bool counter = false;
  std::string form;
  std::optional<HopConstruct> hop;
  bool empty() const { return !graphBreakBefore && !branch && outputState.empty() && !counter && form.empty() && !hop; }
  bool operator==(const NodePython&) const = default;
};

/// One step of a program's call schedule (PythonConstructs.h): a state change, then a call. `change`:
/// "class-attr" (Model.scale = value), "instance-attr" (model.scale = value, shadowing the class
/// attribute), "global" (OFFSET = value), "flag" (model.flag = not model.flag), "train-mode"
/// (model.train(not model.training)), "remove-hook" (the module's hook removed) or "clear-cache"
/// (model.cache.clear(), the dict the "dict-state" form keeps), "requires-grad" (the call's floating
/// inputs that forward does not write get their requires_grad flipped) or "dtype" (model.double(), and the
/// call's floating inputs as float64: another dtype, which Dynamo must recompile for); value is used by the
/// first three only.
/// The schedule changes the IR knows, in the order ScheduleStep's comment gives them.
const std::vector<std::string>& scheduleChangeNames();

struct ScheduleStep {
  std::string change = "class-attr";
  double value = 0;
  bool operator==(const ScheduleStep&) const = default;
};

/// One op application: reads `inputs`, defines `outputs`, configured by `attrs` (a JSON object).
/// `core` marks the nodes an LLM proposed, in a program the generator grew around them: the
/// minimizer removes them last. It is not part of the content hash.
/// `writesInput`: an in-place op writes into its input 0 itself, never a clone, where input 0 is a
/// program input nothing else reads (writesIntoProgramInput): forward mutates its argument, which the
/// oracle compares after each call. The node's output is that input, written.
struct Node {
  std::string op;
  std::vector<int> inputs;
  std::vector<int> outputs;
  nlohmann::json attrs = nlohmann::json::object();
  bool core = false;
  bool writesInput = false;
  NodePython python;
};

/// Where a program came from, with what it takes to make it again (PythonEmitter prints the replay line):
///   "grammar"   Generator(policy, seed).generate(index, {minNodes, maxNodes});
///   "mutation"  Mutator(policy).mutate(queue entry `parent`, queue entry `donor`, index, `mutator`);
///   "llm"       a reply (`replyId` in work/llm/replies.jsonl) of `model` to `strategy` (aimed at `target`),
///               repaired, then grown by Generator(policy, seed).grow(core, index, {minNodes, maxNodes}).
/// `stored`: where the campaign keeps this program's IR (relative to its output directory), or "".
/// `minimized`: the minimizer reduced the program so made; its IR is kept beside it (program.json).
/// Node ranges of 0 mean the policy's own.
struct Origin {
  std::string generator = "grammar";
  uint64_t seed = 0;
  uint64_t index = 0;
  int minNodes = 0, maxNodes = 0;
  std::string parent, donor, mutator;
  std::string strategy, target, model;
  int64_t replyId = -1;
  std::string stored;
  bool minimized = false;
  /// `plain`: judged as its op graph, the Python constructs, call schedule and hook its making gave it dropped (a
  /// batch member: gen::plainProgram); the replay line adds --plain.
  bool plain = false;
  /// `singleTrace`: judged through an export entry, reduced to what one trace captures (gen::singleTraceProgram:
  /// no call schedule, hook, graph break, branch, Python state or input alias); the replay line adds --single-trace.
  bool singleTrace = false;
  /// "grammar", "mutation", "llm" or "libfuzzer" (older files spelt "mutation:<mutator>" and "llm:<strategy>").
  std::string kind() const { return generator.substr(0, generator.find(':')); }
  bool operator==(const Origin&) const = default;
};

/// Raised for a malformed IR document; the message names the file and the JSON pointer of the fault.
class GraphFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A whole program. Values are listed in definition order; nodes in execution order.
class Graph {
 public:
  std::vector<Value> values;
  std::vector<Source> inputs;
  std::vector<Source> params;
  std::vector<Node> nodes;
  std::vector<int> outputs;
  /// The calls after the first, each after a state change (PythonConstructs.h); empty: one call.
  std::vector<ScheduleStep> schedule;
  /// A hook on the model (PythonConstructs.h): "" none, "forward" (doubles the floating outputs) or
  /// "forward-pre" (records the input shapes in the attribute `seen`); "global-forward" and "global-pre" are
  /// process-wide module hooks (doubling the model's floating outputs; appending each module call to MODULE_CALLS).
  std::string hook;
  Origin origin;

  /// Adds a value of this type and returns its id.
  int addValue(TensorType type);
  const TensorType& typeOf(int value) const;
  TensorType& typeOf(int value);
  /// The input or parameter that defines `value`, or nullptr for a node output.
  const Source* sourceOf(int value) const;
  Source* sourceOf(int value);
  /// Index of the node defining `value`, or -1.
  int producerOf(int value) const;
  /// Number of nodes reading `value` (several reads by one node count each).
  int useCount(int value) const;

  /// The versioned JSON form.
  nlohmann::json toJson() const;
  /// Strict parse: every field checked; errors name `source` and the JSON pointer of the fault.
  static Graph fromJson(const nlohmann::json& doc, const std::string& source = "<json>");
  /// Reads and parses a file (GraphFormatError for unreadable or malformed files).
  static Graph load(const std::string& path);
  /// SHA-256 (hex) of the canonical JSON without `origin` and core marks: equal programs hash equal
  /// whatever made them.
  std::string contentHash() const;
};

/// A node's Python constructs in the IR's JSON vocabulary ({"graph_break_before": true, "branch": {...},
/// "output_state": ..., "counter": true, "form": ...}), and back; GraphFormatError naming `source` when malformed.
nlohmann::json nodePythonToJson(const NodePython& p);
NodePython nodePythonFromJson(const nlohmann::json& doc, const std::string& source);
/// A program's call schedule and hook ({"schedule": [{"change": ..., "value": ...}], "hook": ...}; keys
/// only when set), and back into `g` (other keys of `doc` are not read).
nlohmann::json programPythonToJson(const Graph& g);
void programPythonFromJson(const nlohmann::json& doc, Graph& g, const std::string& source);

/// Whether `n` writes into a program input itself: it asks to (writesInput), it reads that input as input 0,
/// nothing else reads the input and no output returns it. The op must be in place (the emitter's check).
bool writesIntoProgramInput(const Graph& g, const Node& n);
/// The positions in `inputs` of the program inputs some node writes into (writesIntoProgramInput), in order,
/// with every input that shares storage with one of them (InputAlias): a write through one is a write into all.
std::vector<int> writtenInputPositions(const Graph& g);

/// A copy without the inputs and parameters nothing reads or returns (an input another kept input aliases
/// stays), values renumbered densely.
Graph compactGraph(const Graph& g);
/// A copy with values renumbered in the order repair gives them: program inputs, parameters, then node
/// outputs in node order. A graph in this order passes through GraphRepairer::repair (gen --from) with
/// its content hash unchanged.
Graph sourcesFirst(const Graph& g);
/// A copy without the nodes whose outputs reach no program output (then compacted): the code a
/// compiler would drop, which tests nothing.
Graph eliminateDeadNodes(const Graph& g);
/// The number of nodes whose outputs reach no program output.
int deadNodeCount(const Graph& g);

}  // namespace tcfuzz::gen
