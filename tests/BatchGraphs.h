#pragma once
// The batch tests' graphs: chains of unary ops on one input, and programs that keep Python state.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generators/ir/Graph.h"

namespace tcfuzz::test_support {

/// x0 [3, 4] float32 -> each op in turn -> the output; with `parameter`, a [3, 4] parameter added first.
inline gen::Graph chain(const std::vector<std::string>& ops, bool parameter = false) {
  gen::Graph g;
  int x = g.addValue({{3, 4}, gen::DType::Float32});
  g.inputs.push_back({x, "x0", {"uniform", -2, 2, 0.5}});
  if (parameter) {
    int p = g.addValue({{3, 4}, gen::DType::Float32});
    g.params.push_back({p, "w", {"uniform", -1, 1, 0.5}});
    int y = g.addValue({{3, 4}, gen::DType::Float32});
    g.nodes.push_back({"add", {x, p}, {y}, {{"alpha", 1}}});
    x = y;
  }
  for (const auto& op : ops) {
    int y = g.addValue({{3, 4}, gen::DType::Float32});
    g.nodes.push_back({op, {x}, {y}, nlohmann::json::object()});
    x = y;
  }
  g.outputs = {x};
  return g;
}

/// Two programs that keep Python state in module globals (a call counter, a global offset, a closure cell), each
/// as generation writes it; with `schedules`, the first changes its global in two steps, the second its inputs'
/// requires_grad in one.
inline std::vector<gen::Graph> statefulPrograms(bool schedules = false) {
  gen::Graph counted = chain({"sin", "cos"}, true);
  counted.nodes[2].python.counter = true;
  counted.nodes[2].python.outputState = "offset";
  gen::Graph tallied = chain({"exp", "tanh"});
  tallied.nodes[1].python.counter = true;
  tallied.nodes[1].python.branch = gen::BranchTest{"calls", 0, 0};
  tallied.nodes[1].python.form = "closure-state";
  if (schedules) {
    counted.schedule = {{"global", 0.25}, {"global", 2}};
    tallied.schedule = {{"requires-grad", 0}};
  }
  return {counted, tallied};
}

}  // namespace tcfuzz::test_support
