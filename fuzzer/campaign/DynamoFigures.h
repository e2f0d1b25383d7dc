#pragma once
// Dynamo's graph breaks and recompiles over a campaign session, by kind and by reason: campaign figures,
// never findings (a recompile storm is the judge's own verdict).
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "oracles/judge/RunResult.h"

namespace tcfuzz {

/// The kind of a graph break, from the first line of the reason Dynamo counted (counters["graph_break"]):
/// "graph_break_call", "item", "tolist", "dynamic_shape_op", "data_dependent_branch", "builtin", "hook",
/// "class_definition", "unsupported_call" or "other".
std::string graphBreakKindOf(const std::string& reason);
/// The kind of the guard whose failure made a recompile, from Dynamo's text ("tensor 'x' dtype mismatch...",
/// "G['OFFSET'] == 1.0", "___check_obj_id(...)"): "size", "stride", "dtype", "requires_grad", "device",
/// "dispatch_keys", "global_state", "object_identity", "training_mode", "class_attribute", "type",
/// "global_value", "length", "value" or "other".
std::string guardKindOf(const std::string& failure);
/// A reason's first line, at most 100 characters: the part that names it.
std::string reasonTitle(const std::string& reason);

class DynamoFigures {
 public:
  /// Counts one compiled job's facts (none: a job with no facts, counted as a program only).
  void add(const oracles::CompileFacts* facts);
  /// fuzzer_stats lines: programs with breaks and recompiles, totals, counts per kind (every kind, zeros
  /// included, so the keys are stable), and the most counted reasons.
  std::vector<std::pair<std::string, std::string>> statsLines() const;

 private:
  int64_t programs_ = 0, withBreaks_ = 0, withRecompiles_ = 0, breaks_ = 0, recompiles_ = 0;
  std::map<std::string, int64_t> breakKinds_, guardKinds_, breakReasons_, recompileReasons_;
};

}  // namespace tcfuzz
