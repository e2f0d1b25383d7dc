#pragma once
// A batch: k programs judged as independent members of one module under one compile (one torch.compile, one call
// per member). Member k is its program as written alone, under names of its own (Member<k>, make_inputs_<k>). The
// batch's Model builds each member after reseeding torch's generator with its initial seed, as the worker seeds a
// program alone; make_inputs concatenates the members' inputs, each drawn from its own generator; forward calls each
// member on its own inputs and returns their outputs in member order. Members share no input and no parameter, so
// eager and fp64 compute every member's values exactly as they do alone.
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

/// Why `g` may not join a batch ("" when it may): a Python construct, a call schedule or a hook (Python state and
/// calls that the members would share or order), a random op (its draws would move the next member's).
std::string whyNotBatchable(const Graph& g, const OpCatalog& catalog);

/// `g`'s op graph without its Python constructs, call schedule and hook: what a program drawn into a batch is judged
/// as (the constructs' programs run alone, BatchTester).
Graph plainProgram(const Graph& g);

/// Where a program drawn while a batch fills goes.
enum class BatchPlace {
  Join,       ///< it fits the room the batch has left
  NextBatch,  ///< it fits an empty batch but not the room left: it ends this batch and leads the next
  Alone,      ///< it may not batch, or it passes the bound by itself: judged alone, as drawn
};

/// A filling batch's room: its members' nodes and their inputs' and parameters' elements, each bounded (the job's
/// memory and time).
class BatchRoom {
 public:
  static constexpr int64_t kMaxElements = int64_t{1} << 22;
  explicit BatchRoom(size_t maxNodes, int64_t maxElements = kMaxElements)
      : maxNodes_(maxNodes), maxElements_(maxElements) {}
  /// Where `plain` (a plainProgram) goes; `batchable`: whyNotBatchable found nothing (and it is no program judged
  /// as given). An empty batch takes whatever passes the bound, so NextBatch comes only once a member is in.
  BatchPlace place(const Graph& plain, bool batchable) const;
  /// Takes `plain` in as a member.
  void add(const Graph& plain);
  size_t nodes() const { return nodes_; }

 private:
  size_t maxNodes_;
  int64_t maxElements_;
  size_t nodes_ = 0;
  int64_t elements_ = 0;
};

/// The batch of `members` (at least one, each batchable); `labels[k]` names member k in the header ("program
/// 000012"). std::invalid_argument when a member cannot be written or is not batchable.
BatchProgram emitBatch(const PythonEmitter& emitter, const std::vector<Graph>& members,
                       const std::vector<std::string>& labels);

}  // namespace tcfuzz::gen
