#pragma once
// A batch: k programs judged as independent members of one module under one compile (one torch.compile, one call
// per member). Member k is its program as written alone, under names of its own (Member<k>, make_inputs_<k>, and
// each module global that holds state: CALLS_<k>, OFFSET_<k>). The batch's Model builds each member after reseeding
// torch's generator with its initial seed, as the worker seeds a program alone; make_inputs concatenates the members'
// inputs, each drawn from its own generator; forward calls each member on its own inputs and returns their outputs in
// member order. Members share no input, no parameter and no Python state (BATCH_STATE names each member's, which the
// worker compares and restores per member), so eager and fp64 compute every member's values exactly as they do alone.
// A member's Python constructs run inside its own submodule. Its call schedule's steps join the batch's SCHEDULE:
// step s makes each member's step s on that member's submodule, globals and inputs, then calls the batch again (a
// member with fewer steps is called again unchanged). A member whose Python state changes between calls
// (changesStateBetweenCalls) is called in a frame of its own, between graph breaks in forward: Dynamo's guards on
// that state then fail, and recompile, that frame only, as they would the member alone. A process-wide module hook acts on its own member's class only
// (the emitter names the member's class in it) and its handle and records are the member's globals. A random op's
// draws come from torch's global generator, after the members before it drew theirs: the values differ from the
// member's alone, but no leaf that depends on a draw is judged by its values (the eager job's random-op taint), and
// no other member's leaf depends on them.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "generators/ir/Graph.h"
#include "generators/python/PythonEmitter.h"

namespace tcfuzz::gen {

/// Where one member lies in the batch's inputs, outputs and module.
struct BatchMember {
  int firstInput = 0, inputs = 0;    ///< positions in make_inputs' list
  int firstOutput = 0, outputs = 0;  ///< positions among forward's output leaves
  std::string module;                ///< the submodule's name ("m0"): its parameters are "m0.<name>"
  int firstLine = 0, lastLine = 0;   ///< its program's lines in the batch's text (1-based, inclusive)
  bool ownFrame = false;             ///< called between graph breaks (changesStateBetweenCalls)
};

struct BatchProgram {
  std::string py;
  std::vector<BatchMember> members;
  /// The member owning input position `input` or output leaf `output`; -1 past the end.
  int memberOfInput(int input) const;
  int memberOfOutput(int output) const;
  /// The member whose submodule holds the parameter or buffer named `qualified` ("m2.linear0.weight"); -1 none.
  int memberOfState(const std::string& qualified) const;
  /// The member whose program text holds line `line` of the batch's text; -1 none.
  int memberOfLine(int line) const;
};

/// What a program drawn into a batch is judged as: `g` itself under `keepConstructs` (torch.compile without
/// fullgraph), else plainProgram(g) (under fullgraph one member's graph break would refuse the whole batch; an export
/// entry judges one trace).
Graph batchMemberProgram(const Graph& g, bool keepConstructs);

/// Whether Dynamo breaks `g`'s frame where its constructs hold: torch._dynamo.graph_break(), a form that breaks
/// (print), an `if` on a tensor's value. A batch puts such members last: a break inside a member's call ends the
/// batch's graph there, so members before and after it would be compiled as separate graphs.
bool breaksGraph(const Graph& g, const OpCatalog& catalog);

/// Whether `g`'s Python state changes between its calls where its constructs hold: a call schedule's step (an
/// attribute, a global, train/eval, its inputs), or state forward writes itself (the call counter, a pre-hook's
/// records, a form keeping state). Dynamo guards on that state, so each change recompiles the frame that reads it.
/// A batch calls such a member in a frame of its own and puts it after the members that share the first graph.
bool changesStateBetweenCalls(const Graph& g, const OpCatalog& catalog);

/// Where a member's call goes in a batch's forward, in the order members are placed: in the frame the members share,
/// in a frame of its own (changesStateBetweenCalls), or last because Dynamo breaks its frame (breaksGraph).
enum class BatchFrame { Shared = 0, Own = 1, Breaks = 2 };
BatchFrame batchFrame(const Graph& g, const OpCatalog& catalog);

/// `g`'s op graph without its Python constructs, call schedule and hook (origin.plain marks what was dropped: the
/// replay line adds --plain).
Graph plainProgram(const Graph& g);

/// Where a program drawn while a batch fills goes.
enum class BatchPlace {
  Join,       ///< it fits the room the batch has left
  NextBatch,  ///< it fits an empty batch but not the room left: it ends this batch and leads the next
  Alone,      ///< it is judged as given, or it passes the bound by itself: judged alone, as drawn
};

/// A filling batch's room: its members' nodes and their inputs' and parameters' elements, each bounded (the job's
/// memory and time).
class BatchRoom {
 public:
  static constexpr int64_t kMaxElements = int64_t{1} << 22;
  explicit BatchRoom(size_t maxNodes, int64_t maxElements = kMaxElements)
      : maxNodes_(maxNodes), maxElements_(maxElements) {}
  /// Where `program` goes (its nodes and tensors count, not its Python); `batchable`: false for a program judged as
  /// given (a seed-corpus program with Python constructs). An empty batch takes whatever passes the bound, so NextBatch comes only
  /// once a member is in.
  BatchPlace place(const Graph& program, bool batchable) const;
  /// Takes `program` in as a member.
  void add(const Graph& program);
  size_t nodes() const { return nodes_; }

 private:
  size_t maxNodes_;
  int64_t maxElements_;
  size_t nodes_ = 0;
  int64_t elements_ = 0;
};

/// The batch of `members` (at least one); `labels[k]` names member k in the header ("program 000012").
/// std::invalid_argument when a member cannot be written.
BatchProgram emitBatch(const PythonEmitter& emitter, const std::vector<Graph>& members,
                       const std::vector<std::string>& labels);

}  // namespace tcfuzz::gen
