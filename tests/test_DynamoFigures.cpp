// Dynamo's graph breaks and recompiles as campaign figures: kinds read from the reasons torch 2.15 writes.
#include <gtest/gtest.h>

#include <map>

#include "fuzzer/campaign/DynamoFigures.h"

namespace tcfuzz {
namespace {

std::map<std::string, std::string> lines(const DynamoFigures& figures) {
  std::map<std::string, std::string> kv;
  for (const auto& [k, v] : figures.statsLines()) kv[k] = v;
  return kv;
}

TEST(DynamoFigures, GraphBreakKindsComeFromTheReasonsFirstLine) {
  // First lines as torch 2.15's counters["graph_break"] keys begin (copied from a run).
  EXPECT_EQ(graphBreakKindOf("Call to `torch._dynamo.graph_break()`\n  Explanation: User-inserted graph break."),
            "graph_break_call");
  EXPECT_EQ(graphBreakKindOf("Unsupported Tensor.item() call with capture_scalar_outputs=False\n  Explanation: ..."),
            "item");
  EXPECT_EQ(graphBreakKindOf("Tensor.tolist() with non-integer tensor\n  Explanation: ..."), "tolist");
  EXPECT_EQ(graphBreakKindOf("Dynamic shape operator\n  Explanation: Operator `aten.nonzero.default`'s output"),
            "dynamic_shape_op");
  EXPECT_EQ(graphBreakKindOf("Failed to trace builtin operator\n  Explanation: `print` ..."), "builtin");
  EXPECT_EQ(graphBreakKindOf("Data-dependent branching\n  Explanation: ..."), "data_dependent_branch");
  EXPECT_EQ(graphBreakKindOf("Invalid call to __build_class__\n  Explanation: a class statement"), "class_definition");
  // The explanation lines never decide the kind: only the title does.
  EXPECT_EQ(graphBreakKindOf("Something new\n  Explanation: Tensor.item() is mentioned here"), "other");
}

TEST(DynamoFigures, GuardKindsComeFromDynamosGuardFailureText) {
  EXPECT_EQ(guardKindOf("tensor 'x' size mismatch at index N. expected N, actual N"), "size");
  EXPECT_EQ(guardKindOf("tensor 'a' dtype mismatch. expected Float, actual Double"), "dtype");
  EXPECT_EQ(guardKindOf("tensor 'y' requires_grad mismatch. expected requires_grad=N"), "requires_grad");
  EXPECT_EQ(guardKindOf("dict(type(s).__dict__)['scale'] == N.N # return a * s.scale  # gb.py:N"), "class_attribute");
  EXPECT_EQ(guardKindOf("G['OFFSET'] == N.N # return a + OFFSET  # gb.py:N in forward"), "global_value");
  EXPECT_EQ(guardKindOf("s.flag == True # if s.flag: a = a - N  # gb.py:N"), "value");
  EXPECT_EQ(guardKindOf("L['self'].training == False"), "training_mode");
  EXPECT_EQ(guardKindOf("___check_obj_id(L['self'].Scaler, N)"), "object_identity");
  EXPECT_EQ(guardKindOf("GLOBAL_STATE changed: grad_mode "), "global_state");
  // What a '#' comment quotes (the user's line) never decides the kind.
  EXPECT_EQ(guardKindOf("s.ready # x = y.size(0) if len(z) else dtype mismatch"), "other");
  EXPECT_EQ(reasonTitle("G['OFFSET'] == N.N    # return a + OFFSET  # gb.py:N"), "G['OFFSET'] == N.N");
}

TEST(DynamoFigures, StatsCountProgramsKindsAndTheMostCountedReasons) {
  DynamoFigures figures;
  oracles::CompileFacts breaking;
  breaking.graphBreaks = 3;
  breaking.breakReasons = {{"Call to `torch._dynamo.graph_break()`\n  Explanation: x", 2},
                           {"Failed to trace builtin operator\n  Explanation: print", 1}};
  oracles::CompileFacts recompiling;
  recompiling.recompiles = 2;
  recompiling.recompileReasons = {{"tensor 'x' dtype mismatch. expected Float, actual Double", 1},
                                  {"G['OFFSET'] == N.N # return x + OFFSET", 1}};
  figures.add(&breaking);
  figures.add(&recompiling);
  figures.add(&recompiling);
  figures.add(nullptr);  // a job without facts (eager failed first) is a program all the same
  auto kv = lines(figures);
  EXPECT_EQ(kv["programs_with_graph_breaks"], "1 (25.0%)");
  EXPECT_EQ(kv["graph_breaks"], "3");
  EXPECT_EQ(kv["graph_breaks_graph_break_call"], "2");
  EXPECT_EQ(kv["graph_breaks_builtin"], "1");
  EXPECT_EQ(kv["graph_breaks_item"], "0");  // every kind has its key, zeros included
  EXPECT_EQ(kv["graph_break_reasons_top"], "Call to `torch._dynamo.graph_break()` x2; Failed to trace builtin operator x1");
  EXPECT_EQ(kv["programs_with_recompiles"], "2 (50.0%)");
  EXPECT_EQ(kv["recompiles"], "4");
  EXPECT_EQ(kv["recompiles_guard_dtype"], "2");
  EXPECT_EQ(kv["recompiles_guard_global_value"], "2");
  EXPECT_EQ(kv["recompiles_guard_size"], "0");
  EXPECT_EQ(kv["recompile_guards_top"],
            "G['OFFSET'] == N.N x2; tensor 'x' dtype mismatch. expected Float, actual Double x2");  // ties: by text
}

}  // namespace
}  // namespace tcfuzz
