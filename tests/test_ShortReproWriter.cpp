// short_repro.py: what it holds (a few lines, only what the case needs), and end to end, run as a plain
// script in a real worker child with the planted TEST FIXTURE backends (tests/fixtures/planted_backends.py,
// copied beside the script as the report folder holds it): it fails while the bug reproduces and passes
// where there is none.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "TestWorkers.h"
#include "fuzzer/worker/ProgramTester.h"
#include "oracles/judge/Comparator.h"
#include "oracles/reporter/repro/ShortReproWriter.h"

using namespace tcfuzz;
using oracles::renderShortRepro;
using oracles::ReproCase;
using oracles::shortReproReproduces;
using tcfuzz::test_support::readText;
using tcfuzz::test_support::sourcePath;
using tcfuzz::test_support::TempDir;

namespace {

/// TEST FIXTURE: registers the planted-bug backends.
const std::filesystem::path kPlantedPlugin = sourcePath("tests/fixtures/planted_backends.py");

/// A case for `program` (repo-relative) under `backend`, expecting `verdict`; seed 3.
ReproCase makeCase(const std::string& program, const std::string& backend, const std::string& verdict) {
  ReproCase c;
  c.programPy = readText(sourcePath(program));
  c.compile.backend = backend;
  c.exactBackend = backend == "eager";  // as the judge decides for a forward program
  c.seed = 3;
  c.verdict = verdict;
  c.plugins = {kPlantedPlugin.string()};
  return c;
}

size_t lineCount(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

oracles::Signature crashSignature(const std::string& kind, const std::string& type) {
  oracles::Signature s;
  s.symptom = "crash-mismatch";
  s.kind = kind;
  s.exceptionType = type;
  return s;
}

class ShortReproEndToEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { workers_ = std::make_unique<test_support::OneWorkerTester>("tcfuzz-short-repro"); }
  static void TearDownTestSuite() { workers_.reset(); }
  /// Renders `c` and runs it as `python short_repro.py` with the plugin beside it.
  static oracles::RunResult run(const ReproCase& c, const std::string& name) {
    std::filesystem::path script = workers_->dir.path() / (name + ".py");
    std::ofstream(script) << renderShortRepro(c, name, oracles::ComparatorOptions{});
    return workers_->runScript(script, {kPlantedPlugin});
  }
  static std::string describe(const oracles::RunResult& r) { return test_support::describeRun(r); }
  static inline std::unique_ptr<test_support::OneWorkerTester> workers_;
};

}  // namespace

TEST(ShortReproWriter, HoldsTheProgramTheCompileCallAndTheSameAssertionInAFewLines) {
  ReproCase c = makeCase("tests/programs/linear_tanh_sum.py", "inductor", "numeric-divergence");
  c.plugins.clear();
  c.compile.dynamic = true;
  c.compile.inductorConfig = {{"cpp_wrapper", true}};
  c.divergingLeaves = {0};
  c.observed = {{"outputs", {{{"leaf", 0}, {"dtype", "float16"}, {"passed", false}}}}};
  std::string text = renderShortRepro(c, "[inductor] wrong tanh", oracles::ComparatorOptions{});
  EXPECT_LE(lineCount(text), 26u) << text;
  EXPECT_TRUE(text.starts_with("# tcfuzz short repro (fails while the bug reproduces; full driver: repro.py): "
                               "[inductor] wrong tanh\nimport torch\n"))
      << text;
  EXPECT_EQ(text.find("# Linear -> tanh"), std::string::npos) << "the program's comment lines go";
  EXPECT_NE(text.find("torch._inductor.config.cpp_wrapper = True\n"), std::string::npos) << text;
  EXPECT_NE(text.find("torch.compile(model, backend=\"inductor\", dynamic=True)"), std::string::npos) << text;
  // float16's tolerance from the oracle's own table, on the diverging leaf.
  EXPECT_NE(text.find(fmt::format("assert torch._dynamo.utils.same(eager[0], compiled[0], fp64_ref=fp64[0], tol={}, "
                                  "equal_nan=True)",
                                  oracles::ComparatorOptions{}.tolFloat16)),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("runpy"), std::string::npos) << "no plugin, nothing loaded";
  EXPECT_EQ(text.find("fallback_random"), std::string::npos) << "no random op";
}

// Training steps: the eager and float64 runs step the plain model, the compiled run the compiled model and step.
TEST(ShortReproWriter, TrainingStepsCompileTheModelOnlyInTheCompiledRun) {
  ReproCase c = makeCase("tests/programs/linear_tanh_sum.py", "inductor", "numeric-divergence");
  c.plugins.clear();
  c.compile.setEntry(oracles::kTrainEntry);
  c.compile.training = oracles::TrainingLoop::parse("optimizer=adam,steps=3,compiled=both");
  c.divergingLeaves = {0};
  c.observed = {{"outputs", {{{"leaf", 0}, {"dtype", "float32"}, {"passed", false}}}}};
  std::string text = renderShortRepro(c, "[inductor] wrong training step", oracles::ComparatorOptions{});
  EXPECT_NE(text.find("    fn = (torch.compile(model, backend=\"inductor\") if compiled else model)  # training steps "
                      "compile the model and the optimizer step\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    step_fn = torch.compile(step, backend=\"inductor\") if compiled else step\n"), std::string::npos)
      << text;
}

TEST(ShortReproWriter, AddsOnlyWhatTheCaseNeeds) {
  ReproCase dropout = makeCase("tests/programs/random_dropout.py", "inductor", "crash-mismatch");
  std::string text = renderShortRepro(dropout, "t", oracles::ComparatorOptions{});
  EXPECT_NE(text.find("torch._inductor.config.fallback_random = True"), std::string::npos) << text;
  EXPECT_NE(text.find("runpy.run_path(str(pathlib.Path(__file__).with_name(\"planted_backends.py\")))"),
            std::string::npos);
  EXPECT_EQ(text.find("same("), std::string::npos) << "a crash needs no comparison";
  EXPECT_NE(text.find("run()\nprint(\"tcfuzz: the reference run passed (eager); now the compiled run:\", "
                      "flush=True)\nrun(compiled=True)\n"),
            std::string::npos)
      << text;

  ReproCase invalid = dropout;
  invalid.verdict = "invalid-program";
  EXPECT_THROW(renderShortRepro(invalid, "t", oracles::ComparatorOptions{}), std::invalid_argument);
}

TEST(ShortReproWriter, VerificationNeedsTheBugsOwnFailureNotJustAnyError) {
  ReproCase numeric = makeCase("tests/programs/linear_tanh_sum.py", "inductor", "numeric-divergence");
  oracles::RunResult r;
  r.exitCode = 1;
  r.stderrTail = "AssertionError: leaf 0: compiled is further from the float64 reference than eager\n";
  EXPECT_TRUE(shortReproReproduces(numeric, {}, r));
  r.stderrTail = "ImportError: cannot import name 'same'\n";
  EXPECT_FALSE(shortReproReproduces(numeric, {}, r));

  ReproCase crash = makeCase("tests/programs/linear_tanh_sum.py", "inductor", "crash-mismatch");
  oracles::RunResult raised;
  raised.exitCode = 1;
  raised.stderrTail = "torch._dynamo.exc.BackendCompilerFailed: backend raised RuntimeError\n";
  EXPECT_FALSE(shortReproReproduces(crash, crashSignature("exception", "BackendCompilerFailed"), raised))
      << "eager failed too: the marker after the reference run is missing";
  raised.stdoutTail = "tcfuzz: the reference run passed (eager); now the compiled run:\n";
  EXPECT_TRUE(shortReproReproduces(crash, crashSignature("exception", "BackendCompilerFailed"), raised));
  // A signature names a wrapped exception with its cause; either name in the traceback will do.
  EXPECT_TRUE(shortReproReproduces(crash, crashSignature("exception", "BackendCompilerFailed(RuntimeError)"), raised));
  EXPECT_FALSE(shortReproReproduces(crash, crashSignature("exception", "CppCompileError"), raised));
  oracles::RunResult killed;
  killed.status = oracles::RunStatus::Signal;
  killed.stdoutTail = raised.stdoutTail;
  EXPECT_TRUE(shortReproReproduces(crash, crashSignature("signal SIGSEGV", ""), killed));
  EXPECT_FALSE(shortReproReproduces(crash, crashSignature("exception", "RuntimeError"), killed));
}

TEST_F(ShortReproEndToEnd, PlantedNumericBugFailsTheAssertion) {
  // TEST FIXTURE backend: adds 1% of the output's scale to the first output.
  ReproCase c = makeCase("corpus/conv1d_mean_linear.py", "tcfuzz_planted_numeric", "numeric-divergence");
  c.divergingLeaves = {0};
  oracles::RunResult r = run(c, "planted_numeric");
  EXPECT_TRUE(shortReproReproduces(c, {}, r)) << describe(r);
}

TEST_F(ShortReproEndToEnd, ARecompileOnTheRepeatedCallRaisesRecompileError) {
  // TEST FIXTURE program: a private counter changes at every call without changing a value, so Dynamo's guard
  // on it fails when call 2 repeats call 1, as an unstable guard would.
  ReproCase c = makeCase("tests/programs/planted/unstable_guard.py", "inductor", "recompile-storm");
  oracles::RunResult r = run(c, "unstable_guard");
  EXPECT_TRUE(shortReproReproduces(c, {}, r)) << describe(r);
  EXPECT_NE(r.stderrTail.find("_calls"), std::string::npos) << describe(r);  // the guard that failed
  // A program whose repeated call hits Dynamo's cache passes the same check.
  ReproCase calm = makeCase("tests/programs/linear_tanh_sum.py", "inductor", "recompile-storm");
  r = run(calm, "no_recompile");
  EXPECT_FALSE(shortReproReproduces(calm, {}, r)) << describe(r);
  EXPECT_EQ(r.exitCode.value_or(-1), 0) << describe(r);
}

TEST_F(ShortReproEndToEnd, ANaNThatCompiledTurnsFiniteFailsAlthoughSameWithAFloat64ReferenceExcusesIt) {
  // TEST FIXTURE backend: every NaN comes back as 0. log of a negative value is NaN in eager and in float64
  // alike, so same(fp64_ref=...) passes; the placement check does not. The first call and a later one.
  ReproCase c = makeCase("tests/programs/log_of_signed.py", "tcfuzz_planted_nan_to_zero", "numeric-divergence");
  c.divergingLeaves = {0};
  oracles::RunResult r = run(c, "nan_to_zero");
  EXPECT_TRUE(shortReproReproduces(c, {}, r)) << describe(r);
  ReproCase later = makeCase("tests/programs/log_of_signed.py", "tcfuzz_planted_nan_to_zero", "second-call-divergence");
  later.divergingLeaves = {2};
  later.observed = {{"outputs", nlohmann::json::array({{{"leaf", 2}, {"role", "second-call"}, {"passed", false},
                                                        {"name", "second-call: output 0"}}})}};
  r = run(later, "nan_to_zero_later");
  EXPECT_TRUE(shortReproReproduces(later, {}, r)) << describe(r);
  c.compile.backend = "aot_eager";  // log keeps its NaNs: the check holds
  oracles::RunResult right = run(c, "nan_to_zero_kept");
  EXPECT_EQ(right.exitCode.value_or(-1), 0) << describe(right);
}

TEST_F(ShortReproEndToEnd, AliasedInputsStayAliasedInEveryRunSoOnlyACompilerThatPartsThemFails) {
  // Three views of x0 (and x0 itself) as arguments; forward writes x0. TEST FIXTURE backend: runs the graph
  // on copies of the inputs that share storage with an earlier one. Output 1 reads x0.t() after the write.
  ReproCase c = makeCase("tests/programs/aliased_inputs.py", "tcfuzz_planted_parted_aliases", "numeric-divergence");
  c.divergingLeaves = {1};
  oracles::RunResult r = run(c, "parted_aliases");
  EXPECT_TRUE(shortReproReproduces(c, {}, r)) << describe(r);
  c.compile.backend = "eager";  // bit for bit: eager, compiled and the float64 reference all keep the sharing
  c.exactBackend = true;
  r = run(c, "aliases_eager");
  EXPECT_EQ(r.exitCode.value_or(-1), 0) << describe(r);
}

TEST_F(ShortReproEndToEnd, PlantedGradientBugFailsTheAssertionOnTheGradient) {
  // TEST FIXTURE backend: exact forward; its AOTAutograd backward perturbs the first gradient
  // (leaves: output 0, then grad(input 0), grad(linear.bias), grad(linear.weight)).
  ReproCase c = makeCase("tests/programs/linear_tanh_sum.py", "tcfuzz_planted_grad", "numeric-divergence");
  c.backward = true;
  c.divergingLeaves = {3};
  oracles::RunResult r = run(c, "planted_grad");
  EXPECT_TRUE(shortReproReproduces(c, {}, r)) << describe(r);
  c.divergingLeaves = {0};  // the forward output is exact: that assertion holds
  oracles::RunResult forward = run(c, "planted_grad_forward");
  EXPECT_EQ(forward.exitCode.value_or(-1), 0) << describe(forward);
}

TEST_F(ShortReproEndToEnd, PlantedBackwardWriteIntoStateFailsTheCheckReadAfterBackward) {
  // TEST FIXTURE backend: exact forward; its backward writes into the parameter the forward saved. The
  // short repro of a backward job's mutation finding runs the backward with the worker's gradient
  // outputs and reads the state after it; the exact eager backend passes.
  ReproCase c = makeCase("tests/programs/scale_input_by_weight.py", "tcfuzz_planted_bw_writes_input", "mutation-divergence");
  c.backward = true;
  std::string text = renderShortRepro(c, "t", oracles::ComparatorOptions{});
  EXPECT_NE(text.find("torch.autograd.grad("), std::string::npos) << text;
  EXPECT_NE(text.find("dtype=torch.float32"), std::string::npos) << text;
  EXPECT_EQ(text.find("WRITTEN_INPUTS"), std::string::npos) << text;  // the program writes into no input
  ReproCase writing = c;  // one that declares its written inputs keeps them plain tensors, as the worker does
  writing.programPy += "\nWRITTEN_INPUTS = (0,)\n";
  EXPECT_NE(renderShortRepro(writing, "t", oracles::ComparatorOptions{}).find("x if i in WRITTEN_INPUTS else"), std::string::npos);
  oracles::RunResult r = run(c, "planted_bw_writes_input");
  EXPECT_TRUE(shortReproReproduces(c, {}, r)) << describe(r);
  EXPECT_NE(r.stderrTail.find("(read after backward)"), std::string::npos) << describe(r);
  c.compile.backend = "aot_eager";
  oracles::RunResult exact = run(c, "planted_bw_writes_input_exact");
  EXPECT_EQ(exact.exitCode.value_or(-1), 0) << describe(exact);
}

TEST_F(ShortReproEndToEnd, ExplicitCastsStayInFloat64AndAnExactBackendPasses) {
  // The program casts to float32 inside forward; with the exact eager backend there is no bug, and the
  // float64 reference (casts widened) must not make one up.
  ReproCase c = makeCase("tests/programs/linear_tanh_sum.py", "eager", "numeric-divergence");
  c.programPy = "import random\n" + c.programPy;
  size_t at = c.programPy.find("return torch.tanh(self.linear(x))");
  ASSERT_NE(at, std::string::npos);
  c.programPy.replace(at, 33, "return torch.tanh(self.linear(x).float() * random.uniform(0.5, 2.0))");
  std::string text = renderShortRepro(c, "casts", oracles::ComparatorOptions{});
  ASSERT_NE(text.find("class Fp64Casts"), std::string::npos) << text;
  ASSERT_NE(text.find("random.seed(SEED)"), std::string::npos) << text;
  oracles::RunResult r = run(c, "explicit_casts");
  EXPECT_EQ(r.exitCode.value_or(-1), 0) << describe(r);
}

TEST_F(ShortReproEndToEnd, PlantedBugOnlyTheScheduleReachesFailsTheScheduleCheck) {
  // TEST FIXTURE backend: wrong once a float attribute changed, which the program's first schedule step
  // does. The short repro replays the schedule from the state as built and compares each call's outputs
  // and Python state; the exact eager backend passes it.
  ReproCase c = makeCase("tests/programs/python_state_schedule.py", "tcfuzz_planted_scaled_constant", "second-call-divergence");
  c.divergingLeaves = {20};
  c.observed = {{"outputs", nlohmann::json::array({{{"leaf", 20}, {"role", "schedule"}, {"passed", false}}})}};
  std::string text = renderShortRepro(c, "t", oracles::ComparatorOptions{});
  EXPECT_NE(text.find("        for change in SCHEDULE:\n"), std::string::npos) << text;
  EXPECT_NE(text.find("state_as_built(model, attrs)"), std::string::npos) << text;
  oracles::RunResult r = run(c, "planted_schedule");
  EXPECT_TRUE(shortReproReproduces(c, {}, r)) << describe(r);
  c.compile.backend = "eager";
  c.exactBackend = true;
  oracles::RunResult exact = run(c, "planted_schedule_exact");
  EXPECT_EQ(exact.exitCode.value_or(-1), 0) << describe(exact);
}

TEST_F(ShortReproEndToEnd, PlantedCompilerFailureEndsInItsException) {
  // TEST FIXTURE backend: raises on every compilation.
  ReproCase c = makeCase("corpus/conv1d_mean_linear.py", "tcfuzz_planted_raise", "crash-mismatch");
  oracles::RunResult r = run(c, "planted_raise");
  EXPECT_TRUE(shortReproReproduces(c, crashSignature("exception", "BackendCompilerFailed"), r)) << describe(r);
  EXPECT_NE(r.stderrTail.find("planted compiler failure (tcfuzz test fixture)"), std::string::npos) << describe(r);
}

TEST_F(ShortReproEndToEnd, PlantedCompilerSegfaultKillsTheScriptAfterTheEagerRun) {
  // TEST FIXTURE backend: the compiler sends itself SIGSEGV for graphs with aten.tanh.
  ReproCase c = makeCase("tests/programs/linear_tanh_sum.py", "tcfuzz_planted_tanh_segv", "crash-mismatch");
  oracles::RunResult r = run(c, "planted_segv");
  EXPECT_TRUE(shortReproReproduces(c, crashSignature("signal SIGSEGV", ""), r)) << describe(r);
}

TEST_F(ShortReproEndToEnd, PlantedBugsOnANewSizeAndOffsetFailOnTheLaterCallsInputs) {
  // TEST FIXTURE backend: right on the first input size, 1% off on any other. The case's diverging leaf is
  // call 4's output; its name holds the resize the short repro makes.
  ReproCase c = makeCase("tests/programs/linear_tanh_sum.py", "tcfuzz_planted_wrong_on_new_size", "second-call-divergence");
  c.compile.dynamic = true;
  c.divergingLeaves = {8};
  c.observed = {{"outputs", nlohmann::json::array({{{"leaf", 8}, {"role", "resized"}, {"passed", false},
                                                    {"name", "resized (dim 0 of input 0: 3 -> 2): output 0"}}})}};
  std::string text = renderShortRepro(c, "t", oracles::ComparatorOptions{});
  EXPECT_NE(text.find("resized = [x.narrow(0, 1, 2) if i in (0,) else x for i, x in enumerate(inputs)]  # size 3 -> 2"),
            std::string::npos) << text;
  EXPECT_NE(text.find("dynamic=True"), std::string::npos) << text;
  oracles::RunResult r = run(c, "wrong_on_new_size");
  EXPECT_TRUE(shortReproReproduces(c, {}, r)) << describe(r);
  EXPECT_NE(r.stderrTail.find("a later compiled call is further from the float64 reference than eager"), std::string::npos)
      << describe(r);
  c.compile.dynamic = std::nullopt;  // marked dimensions instead: the same call 4, the marks outside the compile
  c.compile.markDynamic = true;
  text = renderShortRepro(c, "t", oracles::ComparatorOptions{});
  EXPECT_NE(text.find("(marking_dynamic(torch.compile(model, backend=\"tcfuzz_planted_wrong_on_new_size\")) if compiled"),
            std::string::npos) << text;
  r = run(c, "wrong_on_new_size_marked");
  EXPECT_TRUE(shortReproReproduces(c, {}, r)) << describe(r);
  c.compile.backend = "eager";  // no bug: the check holds on the new size too
  c.exactBackend = true;
  oracles::RunResult right = run(c, "wrong_on_new_size_exact");
  EXPECT_EQ(right.exitCode.value_or(-1), 0) << describe(right);

  // TEST FIXTURE backend: right at the first storage offset, 1% off at any other: the moved call.
  ReproCase moved = makeCase("tests/programs/offset_input_tanh.py", "tcfuzz_planted_wrong_on_new_offset",
                             "second-call-divergence");
  moved.divergingLeaves = {21};
  moved.observed = {{"outputs", nlohmann::json::array({{{"leaf", 21}, {"role", "moved"}, {"passed", false},
                                                        {"name", "moved (input 0 at storage offset 0, not 6): output 0"}}})}};
  text = renderShortRepro(moved, "t", oracles::ComparatorOptions{});
  EXPECT_NE(text.find("if i in (0,) else x for i, x in enumerate(inputs)]  # at storage offset 0"), std::string::npos)
      << text;
  r = run(moved, "wrong_on_new_offset");
  EXPECT_TRUE(shortReproReproduces(moved, {}, r)) << describe(r);
}

TEST_F(ShortReproEndToEnd, PlantedLostMutationStaleResultAndCopiedViewFailTheirOwnChecks) {
  // TEST FIXTURE backends: one loses the writes to the input and the buffer, one returns call 1's
  // results on every later call, one returns copies where eager returns views. Each short repro fails
  // with its check's own message; under the exact eager backend, each passes.
  struct Planted {
    const char *program, *backend, *verdict, *message;
  };
  for (const Planted& p :
       {Planted{"tests/programs/mutates_input_and_buffer.py", "tcfuzz_planted_drop_mutation", "mutation-divergence",
                "leaf 0: compiled forward leaves this input, buffer or parameter further from the float64 reference"},
        Planted{"tests/programs/linear_tanh_sum.py", "tcfuzz_planted_stale_result", "second-call-divergence",
                "a later compiled call is further from the float64 reference than eager"},
        Planted{"tests/programs/returns_views_of_input.py", "tcfuzz_planted_copy_outputs", "aliasing-divergence",
                "compiled outputs share storage with other tensors than eager's: eager ['input 0', 'input 0', "
                "'scale', 'nothing', 'output 3'], compiled ['nothing', 'nothing', 'nothing', 'nothing', 'nothing']"}}) {
    SCOPED_TRACE(p.backend);
    ReproCase c = makeCase(p.program, p.backend, p.verdict);
    oracles::RunResult r = run(c, std::string(p.backend));
    EXPECT_TRUE(shortReproReproduces(c, {}, r)) << describe(r);
    EXPECT_NE(r.stderrTail.find(p.message), std::string::npos) << describe(r);
    EXPECT_LE(lineCount(renderShortRepro(c, "t", oracles::ComparatorOptions{})), 40u);
    c.compile.backend = "eager";  // no bug: every check holds
    c.exactBackend = true;
    oracles::RunResult exact = run(c, std::string(p.backend) + "_exact");
    EXPECT_EQ(exact.exitCode.value_or(-1), 0) << describe(exact);
  }
}

TEST_F(ShortReproEndToEnd, EagersOwnHigherOrderOpIsCheckedAgainstItsPythonMeaningWithoutACompile) {
  // TEST FIXTURE tests/programs/planted/eager_cond_bug.py: a cond whose eager call scales its result by 1.5.
  // Under the backend "none" the "compiled" side is the model itself with the program's own cond, and eager and
  // float64 run cond's Python meaning, as tcfuzz's references did.
  ReproCase c = makeCase("tests/programs/planted/eager_cond_bug.py", oracles::kNoCompileBackend, "numeric-divergence");
  c.divergingLeaves = {0};
  std::string text = renderShortRepro(c, "t", oracles::ComparatorOptions{});
  EXPECT_NE(text.find("def _desugared_cond(pred, true_fn, false_fn, operands=()):"), std::string::npos) << text;
  EXPECT_NE(text.find("PYTHON_MEANING = {\"cond\": _desugared_cond}"), std::string::npos) << text;
  EXPECT_NE(text.find("    globals().update(OWN_HOPS if compiled else PYTHON_MEANING)"), std::string::npos) << text;
  EXPECT_EQ(text.find("torch.compile(model"), std::string::npos) << text;
  oracles::RunResult r = run(c, "eager_cond_bug");
  EXPECT_TRUE(shortReproReproduces(c, {}, r)) << describe(r);

  // A program without higher-order ops carries none of it.
  ReproCase plain = makeCase("tests/programs/linear_tanh_sum.py", "inductor", "numeric-divergence");
  EXPECT_EQ(renderShortRepro(plain, "t", oracles::ComparatorOptions{}).find("PYTHON_MEANING"), std::string::npos);
}
