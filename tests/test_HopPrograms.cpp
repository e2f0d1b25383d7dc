// End to end with real torch.compile: programs whose regions run under higher-order ops and torch.func, judged
// against the ops' Python meaning (repro_shared.DESUGARED_HOPS), and a program that breaks a higher-order op's
// contract, which eager's own op rejects. Linked into test_ProgramTester, whose suite and worker pool these tests
// share (ProgramTesterFixture.h).
#include <gtest/gtest.h>

#include <fstream>

#include "ProgramTesterFixture.h"
#include "generators/python/PythonEmitter.h"

using namespace tcfuzz;
using tcfuzz::test_support::ProgramTesterTest;
using tcfuzz::test_support::sourcePath;
using tcfuzz::test_support::TempDir;

namespace {

/// One region per kind in `kinds`, each sin(x0) * x1 -> tanh returned, the tanh the region's head; cond reads x1.
gen::Graph everyKind(const std::vector<std::string>& kinds) {
  gen::Graph g;
  int x0 = g.addValue({{3, 4}, gen::DType::Float32});
  int x1 = g.addValue({{3, 4}, gen::DType::Float32});
  g.inputs.push_back({x0, "x0", {"uniform", -2, 2}});
  g.inputs.push_back({x1, "x1", {"uniform", -2, 2}});
  for (const std::string& kind : kinds) {
    int s = g.addValue({{3, 4}, gen::DType::Float32});
    g.nodes.push_back({"sin", {x0}, {s}});
    int m = g.addValue({{3, 4}, gen::DType::Float32});
    g.nodes.push_back({"mul", {s, x1}, {m}});
    int t = g.addValue({{3, 4}, gen::DType::Float32});
    g.nodes.push_back({"tanh", {m}, {t}});
    g.nodes.back().python.hop = gen::HopConstruct{kind, 1, 0.0};
    g.outputs.push_back(t);
  }
  return g;
}

}  // namespace

TEST_F(ProgramTesterTest, EveryHigherOrderOpAgreesWithItsPythonMeaningWithBackwardThroughIt) {
  // The references (eager, fp64) run each op's Python meaning, compiled the ops themselves: under aot_eager every
  // kind agrees, gradients included, and the eager run names the ops it desugared. backend="eager" is judged
  // under fp64 arbitration here, not bit for bit: the reference ran other kernels (a loop for vmap).
  gen::OpCatalog catalog = gen::makeDefaultCatalog();
  TempDir dir("tcfuzz-hops");
  const auto program = dir.path() / "every_hop.py";
  std::ofstream(program) << gen::PythonEmitter(catalog).emit(everyKind(gen::hopKindNames()));
  TestSettings s = settings("aot_eager");
  s.backward = true;
  ProgramTestResult r = tester_->test(program, s);
  ASSERT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  EXPECT_EQ(r.runs.eager.desugaredHops,
            (std::vector<std::string>{"associative_scan", "checkpoint", "cond", "functional_call", "grad", "hop_map", "jacfwd",
                                      "jacrev", "jvp", "nested_compile_region", "scan", "vjp", "vmap", "while_loop"}));
  int grads = 0;
  for (const auto& l : r.verdict.comparison->leaves) grads += l.role == "grad";
  EXPECT_EQ(grads, 2);  // x0 and x1, through every region
  r = tester_->test(program, settings("eager"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  EXPECT_FALSE(r.runs.exactBackend);

  // Inductor lowers the ops it has lowerings for (cond, while_loop, checkpoint, invoke_subgraph, vmap's and grad's
  // traced graphs, each style of autograd.Function, functional_call) and agrees with their meaning.
  std::string py = gen::PythonEmitter(catalog).emit(everyKind({"cond", "while_loop", "checkpoint", "nested_compile_region",
                                                               "vmap", "grad", "autograd_function", "autograd_function",
                                                               "autograd_function", "functional_call"}));
  for (const char* style : {"RegionFunction.apply(", "RegionSplitFunction.apply(", "RegionDoubleFunction.apply("})
    EXPECT_NE(py.find(style), std::string::npos) << style << "\n" << py;
  std::ofstream(program) << py;
  r = tester_->test(program, settings("inductor"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  // With backward through the two autograd.Function styles that write nothing in place (the in-place one under
  // Inductor meets the open upstream #185497: the compiled forward saves the output that mark_dirty then writes).
  std::ofstream(program) << gen::PythonEmitter(catalog).emit(everyKind({"autograd_function", "autograd_function"}));
  s = settings("inductor");
  s.backward = true;
  r = tester_->test(program, s);
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
}

TEST_F(ProgramTesterTest, FlexAttentionAgreesWithExplicitMaskedSoftmaxAttentionUnderInductor) {
  // Two regions over (1, 2, 5, 4) float32 values, a causal mask and a sliding window, each with its own score_mod:
  // Inductor's flex_attention (its CPU template) against the reference's explicit attention.
  gen::OpCatalog catalog = gen::makeDefaultCatalog();
  gen::Graph g = everyKind({"flex_attention", "flex_attention"});
  for (auto& v : g.values) v.type.shape = {1, 2, 5, 4};
  TempDir dir("tcfuzz-flex");
  const auto program = dir.path() / "flex.py";
  std::string py = gen::PythonEmitter(catalog).emit(g);
  for (const char* mask : {"return q_idx >= kv_idx\n", "return (q_idx - kv_idx).abs() <= 3\n"})
    EXPECT_NE(py.find(mask), std::string::npos) << mask;
  std::ofstream(program) << py;
  ProgramTestResult r = tester_->test(program, settings("inductor"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  EXPECT_EQ(r.runs.eager.desugaredHops, (std::vector<std::string>{"flex_attention"}));
}

TEST_F(ProgramTesterTest, AProgramThatBreaksAHigherOrderOpsContractIsInvalidNeverAFinding) {
  // TEST FIXTURE tests/programs/hop_contract_violation.py: cond's true branch returns its operand. The reference's
  // if/else would run it, but eager's own cond refuses it first: the program is invalid, in phase hop-eager.
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/hop_contract_violation.py"), settings("inductor"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::InvalidProgram) << r.verdict.reason;
  EXPECT_EQ(r.runs.eager.status, oracles::RunStatus::Exception);
  EXPECT_EQ(r.runs.eager.phase, "hop-eager");
  EXPECT_NE(r.runs.eager.summary().find("aliasing"), std::string::npos) << r.runs.eager.summary();
}

TEST_F(ProgramTesterTest, AGraphBreakInsideARegionThatDynamoDocumentsIsUnsupportedNeverAFinding) {
  // TEST FIXTURE tests/programs/hop_body_graph_break.py: cond's true branch calls .item(). Eager runs it; Dynamo
  // refuses a HOP body it cannot capture whole, and its graph-break registry documents why (gb0124).
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/hop_body_graph_break.py"), settings("aot_eager"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  ASSERT_TRUE(r.runs.compiled.exception);
  EXPECT_EQ(r.runs.compiled.exception->type, "UncapturedHigherOrderOpError");
  EXPECT_TRUE(r.verdict.reason.starts_with("unsupported (documented): a graph break inside a higher-order op's body"))
      << r.verdict.reason;
  EXPECT_NE(r.verdict.reason.find("gb0124: Unsupported Tensor.item() call with capture_scalar_outputs=False"),
            std::string::npos)
      << r.verdict.reason;
}

TEST_F(ProgramTesterTest, EagersOwnHigherOrderOpIsJudgedAgainstItsPythonMeaningWithoutACompile) {
  // TEST FIXTURE tests/programs/planted/eager_cond_bug.py: a cond that is right under torch.compile and scales
  // its result by 1.5 when called in eager. The compiled run agrees with the if/else reference; the run of
  // eager's own HOPs (no torch.compile) does not, and the verdict says so under the backend "none".
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/planted/eager_cond_bug.py"), settings("aot_eager"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::NumericDivergence) << r.verdict.reason;
  ASSERT_TRUE(r.judgedUnder);
  EXPECT_EQ(r.judgedUnder->backend, oracles::kNoCompileBackend);
  EXPECT_EQ(r.runs.eager.desugaredHops, (std::vector<std::string>{"cond"}));
  EXPECT_FALSE(r.runs.compiled.compileFacts) << "no torch.compile ran, so there are no compile facts";

  // Without the check, the same program agrees: the compiled run is right.
  TestSettings off = settings("aot_eager");
  off.judgeEagerHops = false;
  ProgramTestResult plain = tester_->test(sourcePath("tests/programs/planted/eager_cond_bug.py"), off);
  EXPECT_EQ(plain.verdict.verdict, oracles::Verdict::Agree) << plain.verdict.reason;
  EXPECT_FALSE(plain.judgedUnder);
}
