// End to end with real torch.compile: aliased inputs, and programs that hold Python-level constructs (state compared after
// every call, call schedules, every Python form) and what Dynamo refuses by design. Linked into
// test_ProgramTester, whose suite and worker pool these tests share (ProgramTesterFixture.h).
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "ProgramTesterFixture.h"
#include "generators/python/PythonEmitter.h"
#include "oracles/judge/OutputLoader.h"

using namespace tcfuzz;
using tcfuzz::test_support::ProgramTesterTest;
using tcfuzz::test_support::sourcePath;
using tcfuzz::test_support::TempDir;

TEST_F(ProgramTesterTest, PythonStateIsComparedAfterEveryCallAndOnlyTheScheduleReachesAPlantedBug) {
  // The program keeps Python state (a counter, a list, a flag, a class attribute, two globals, a pre-hook
  // that appends to a list) and declares four state changes, the last one removing the hook. Under backend="eager" every leaf agrees and the state leaves hold what forward
  // left; under a TEST FIXTURE backend that is wrong only once a float attribute changed, only the
  // schedule's calls fail.
  const auto program = sourcePath("tests/programs/python_state_schedule.py");
  ProgramTestResult r = tester_->test(program, settings("eager"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  ASSERT_TRUE(r.runs.eager.outputs);
  std::map<std::string, std::string> state;
  for (const auto& l : r.runs.eager.outputs->leaves)
    if (l.role == "python-state" || l.role == "schedule") state[l.name] = l.repr;
  EXPECT_EQ(state["self.calls after forward"], "1");
  EXPECT_EQ(state["self.trace after forward"], "[1]");
  EXPECT_EQ(state["global CALLS after forward"], "1");
  EXPECT_EQ(state["schedule 3 (model.flag = not model.flag): self.flag"], "False");
  EXPECT_EQ(state["schedule 3 (model.flag = not model.flag): self.trace"], "[1, 2, 3]");
  EXPECT_TRUE(state.contains("schedule 1 (Model.scale = 0.5 (a class attribute)): Model.scale"));
  EXPECT_EQ(state["self.seen after forward"], "[((4, 3), (5,))]");
  EXPECT_EQ(state["schedule 4 (the forward-pre hook removed): self.trace"], "[1, 2, 3, 4]");
  EXPECT_EQ(state["schedule 4 (the forward-pre hook removed): self.seen"], "[((4, 3), (5,)), ((4, 3), (5,)), ((4, 3), (5,))]");

  r = tester_->test(program, settings("tcfuzz_planted_scaled_constant"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::SecondCallDivergence) << r.verdict.reason;
  ASSERT_TRUE(r.verdict.comparison);
  EXPECT_EQ(r.verdict.comparison->failingRole, "schedule");
  for (const auto& l : r.verdict.comparison->leaves)
    if (l.role != "schedule") EXPECT_TRUE(l.passed) << l.role << " " << l.name << ": " << l.reason;
}

TEST_F(ProgramTesterTest, EveryPythonFormRunsBitIdenticalUnderTheEagerBackendAndAgreesUnderInductor) {
  // One program with every Python form (loops, closures, containers, dataclasses, grad-mode regions,
  // gradient hooks, a closure cell and a dict kept between calls, submodules in containers), each on its
  // own returned output of tanh, and a schedule that clears the dict twice, calls model.train(), then
  // flips the input's requires_grad. With backward, backend="eager" must agree exactly;
  // inductor must agree under fp64 arbitration.
  gen::OpCatalog catalog = gen::makeDefaultCatalog();
  gen::Graph g;
  int x0 = g.addValue({{3, 4}, gen::DType::Float32});
  g.inputs.push_back({x0, "x0", {"uniform", -2, 2}});
  for (const std::string& form : gen::pythonFormNames()) {
    int out = g.addValue({{3, 4}, gen::DType::Float32});
    g.nodes.push_back({"tanh", {x0}, {out}});
    g.nodes.back().python.form = form;
    g.outputs.push_back(out);
  }
  // train(): the submodules double; then x0 without requires_grad, so the compiled module must recompile;
  // then model.double() with x0 as float64: another dtype, another recompile.
  g.schedule = {{"clear-cache", 0}, {"clear-cache", 0}, {"train-mode", 0}, {"requires-grad", 0}, {"dtype", 0}};
  TempDir dir("tcfuzz-forms");
  const auto program = dir.path() / "every_form.py";
  std::ofstream(program) << gen::PythonEmitter(catalog).emit(g);

  TestSettings s = settings("eager");
  s.backward = true;
  ProgramTestResult r = tester_->test(program, s);
  ASSERT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  ASSERT_TRUE(r.verdict.comparison);
  std::map<std::string, std::string> state;
  int grads = 0;
  for (const auto& l : r.verdict.comparison->leaves) {
    if (l.role == "output" || l.role == "grad" || l.role == "schedule")
      EXPECT_EQ(l.maxAbsDiff, 0.0) << l.role << " " << l.name;  // the eager backend runs eager's kernels
    grads += l.role == "grad";
  }
  EXPECT_EQ(grads, 1);  // x0's gradient, through every form (the hook doubles one share, no_grad drops one)
  for (const auto& l : r.runs.eager.outputs->leaves)
    if (l.role == "python-state" || l.role == "schedule") state[l.name] = l.repr;
  EXPECT_EQ(state["closure cell TALLY.count after backward"], "1");
  EXPECT_EQ(state["self.cache after backward"], "{0: (3, 4)}");
  EXPECT_EQ(state["schedule 1 (model.cache.clear() (the dict forward passes to remember)): closure cell TALLY.count"], "1");
  EXPECT_EQ(state["schedule 2 (model.cache.clear() (the dict forward passes to remember)): closure cell TALLY.count"], "2");
  EXPECT_EQ(state["schedule 2 (model.cache.clear() (the dict forward passes to remember)): self.cache"], "{0: (3, 4)}");
  EXPECT_EQ(state["schedule 3 (model.train(not model.training): eval() to train() and back): closure cell TALLY.count"], "3");
  // The local-class form makes a new class at every call: Dynamo's guard on its identity fails on call 2 by
  // design, which is no recompile storm.
  ASSERT_FALSE(r.runs.compiled.repeatRecompiles.empty());
  EXPECT_NE(r.runs.compiled.repeatRecompiles[0].find("<locals>"), std::string::npos);
  EXPECT_NE(r.verdict.reason.find("anew at every call"), std::string::npos) << r.verdict.reason;
  int flipped = 0;
  for (const auto& l : r.verdict.comparison->leaves)
    flipped += l.name.starts_with("schedule 4 (inputs with requires_grad flipped") && l.name.find(": output ") != std::string::npos;
  EXPECT_EQ(flipped, static_cast<int>(g.outputs.size()));
  int widened = 0;
  for (const auto& l : r.runs.eager.outputs->leaves)
    widened += l.name.starts_with("schedule 5 (model.double(), and the floating inputs as float64") &&
               l.name.find(": output ") != std::string::npos && l.dtype == "float64";
  EXPECT_EQ(widened, static_cast<int>(g.outputs.size()));
  // Every later call starts from the model as built: call 1 of the eager job's second run is float32 again.
  for (const auto& l : r.runs.eager.outputs->leaves)
    if (l.role == "output") EXPECT_EQ(l.dtype, "float32") << l.name;

  r = tester_->test(program, settings("inductor"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
}

TEST_F(ProgramTesterTest, GlobalModuleHooksRunForEveryModuleButTheCompiledWrapperAndTheirRemovalIsCompared) {
  // A global pre-hook records every module call (the model, then its ModuleList's three Scale blocks); a
  // global forward hook doubles the model's floating outputs. A schedule step removes the hook: the compiled
  // module must stop running it. Eager agrees with aot_eager (whose graphs, split by a graph break, run as
  // GraphModules the hooks must skip) and with Inductor on the outputs and on MODULE_CALLS after every call.
  gen::OpCatalog catalog = gen::makeDefaultCatalog();
  gen::Graph g;
  int x0 = g.addValue({{3, 4}, gen::DType::Float32});
  g.inputs.push_back({x0, "x0", {"uniform", -2, 2}});
  int out = g.addValue({{3, 4}, gen::DType::Float32});
  g.nodes.push_back({"tanh", {x0}, {out}});
  g.nodes.back().python.form = "module-list";
  g.nodes.back().python.graphBreakBefore = true;  // aot_eager then runs two graphs, each a GraphModule
  g.outputs.push_back(out);
  g.schedule = {{"remove-hook", 0}};
  TempDir dir("tcfuzz-global-hooks");
  for (const char* hook : {"global-pre", "global-forward"}) {
    SCOPED_TRACE(hook);
    g.hook = hook;
    const auto program = dir.path() / (std::string(hook) + ".py");
    std::ofstream(program) << gen::PythonEmitter(catalog).emit(g);
    ProgramTestResult r = tester_->test(program, settings("aot_eager"));
    EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
    r = tester_->test(program, settings("inductor"));
    EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
    EXPECT_EQ(r.runs.compiled.status, oracles::RunStatus::Ok);
    ASSERT_TRUE(r.runs.eager.outputs);
    oracles::LoadedOutputs eager = oracles::loadOutputs(*r.runs.eager.outputs, r.runs.eager.jobDir);
    std::map<std::string, std::string> state;
    std::map<std::string, at::Tensor> values;
    for (const auto& l : eager.leaves) {
      state[l.name] = l.repr;
      if (l.index >= 0) values[l.role == "output" ? "output" : l.name] = eager.tensors[static_cast<size_t>(l.index)];
    }
    const std::string removed = std::string("schedule 1 (the ") + hook + " hook removed): ";
    if (std::string(hook) == "global-pre") {
      EXPECT_EQ(state["global MODULE_CALLS after forward"], "['Model', 'Scale', 'Scale', 'Scale']");
      EXPECT_EQ(state[removed + "global MODULE_CALLS"], "[]");  // the state as built, and no hook since
    } else {
      ASSERT_TRUE(values.contains("output") && values.contains(removed + "output 0"));
      at::Tensor hooked = values["output"].contiguous(), plain = values[removed + "output 0"].contiguous();
      ASSERT_EQ(hooked.numel(), 12);
      ASSERT_EQ(plain.numel(), 12);
      for (int64_t k = 0; k < 12; ++k)  // the hook doubled the first call's output
        EXPECT_EQ(hooked.data_ptr<float>()[k], 2 * plain.data_ptr<float>()[k]) << "element " << k;
    }
  }
}

TEST_F(ProgramTesterTest, UnderDynamicShapesCall4KeepsTheSizeOfAnAliasedPairAndResizesTheOtherInputs) {
  // x1 = x0[:]; forward fills x0. Call 4 resizes x2 alone: resizing x0 and x1 one by one would give x1 a base
  // that no argument is, which AOTAutograd refuses (an AssertionError the program itself never meets).
  TestSettings s = settings("inductor");
  s.compile.dynamic = true;
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/aliased_fill_resized.py"), s);
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  EXPECT_EQ(r.runs.compiled.status, oracles::RunStatus::Ok) << r.verdict.reason;
  ASSERT_TRUE(r.runs.eager.outputs);
  oracles::LoadedOutputs eager = oracles::loadOutputs(*r.runs.eager.outputs, r.runs.eager.jobDir);
  std::vector<std::string> call4;
  for (const auto& l : eager.leaves)
    if (l.role == "resized") call4.push_back(l.name == "resized: inputs" ? l.repr : l.name);
  EXPECT_EQ(call4, (std::vector<std::string>{"dim 0 of input 2: 5 -> 4", "resized (dim 0 of input 2: 5 -> 4): output 0",
                                             "resized (dim 0 of input 2: 5 -> 4): output 1"}));
}

TEST_F(ProgramTesterTest, ABranchOnTensorDataUnderFullgraphIsUnsupportedByDesignNeverAFinding) {
  TestSettings s = settings("eager");
  s.compile.fullgraph = true;
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/item_branch.py"), s);
  ASSERT_EQ(r.runs.compiled.status, oracles::RunStatus::Exception);  // Dynamo did refuse it
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  EXPECT_TRUE(r.verdict.reason.starts_with("unsupported (documented): ")) << r.verdict.reason;
  s.compile.fullgraph = false;  // Dynamo breaks the graph instead, and the outputs agree
  r = tester_->test(sourcePath("tests/programs/item_branch.py"), s);
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  EXPECT_EQ(r.runs.compiled.status, oracles::RunStatus::Ok);
}


TEST_F(ProgramTesterTest, AliasedInputsStayAliasedInEveryModeAndAPlantedCompilerThatPartsThemIsCaught) {
  // Four arguments over one storage (x0, x0.narrow(0, 1, 3), x0.t(), x0); forward reads x1, writes x0 in
  // place, then reads x2 and x3. Every mode's copies must keep the sharing, or the outputs after the write
  // would not follow from x0 as forward left it.
  const auto program = sourcePath("tests/programs/aliased_inputs.py");
  ProgramTestResult r = tester_->test(program, settings("eager"));
  ASSERT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  for (const auto& l : r.verdict.comparison->leaves)
    if (l.role == "output" || l.role == "state") EXPECT_EQ(l.maxAbsDiff, 0.0) << l.role << " " << l.name;
  for (const oracles::RunResult* run : {&r.runs.eager, &r.runs.compiled, &r.runs.fp64}) {
    SCOPED_TRACE(run->jobDir.string());
    oracles::LoadedOutputs out = oracles::loadOutputs(*run->outputs, run->jobDir);
    std::map<std::string, at::Tensor> leaf;
    std::vector<at::Tensor> outputs;
    for (const auto& l : out.leaves) {
      if (l.role == "state") leaf[l.name] = out.tensors[l.index];
      if (l.role == "output") outputs.push_back(out.tensors[l.index]);
    }
    ASSERT_EQ(outputs.size(), 3u);
    ASSERT_TRUE(leaf.contains("input 0 after forward") && leaf.contains("input 2 after forward"));
    const at::Tensor& x0 = leaf["input 0 after forward"];  // doubled by forward
    EXPECT_TRUE(leaf["input 2 after forward"].equal(x0.t()));
    EXPECT_TRUE(outputs[0].allclose(x0.narrow(0, 1, 3).div(2).tanh()));  // read before the write
    EXPECT_TRUE(outputs[1].allclose(x0.t().sin()));
    EXPECT_TRUE(outputs[2].allclose(x0.mul(1.5)));
  }

  r = tester_->test(program, settings("tcfuzz_planted_parted_aliases"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::NumericDivergence) << r.verdict.reason;
  ASSERT_TRUE(r.verdict.comparison);
  EXPECT_EQ(r.verdict.comparison->failingRole, "output");

  r = tester_->test(program, settings("inductor"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
}
