// End to end with real torch.compile: three workers per program, the verdict, and the CLI.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include <ATen/ATen.h>

#include <boost/process.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "ProgramTesterFixture.h"
#include "TestWorkers.h"
#include "fuzzer/worker/ProgramTester.h"
#include "oracles/judge/OutputLoader.h"
#include "oracles/judge/Signature.h"

using namespace tcfuzz;
using tcfuzz::test_support::sourcePath;
using tcfuzz::test_support::TempDir;
using tcfuzz::test_support::runCli;
using tcfuzz::test_support::CliRun;
namespace bp = boost::process;

using tcfuzz::test_support::ProgramTesterTest;

TEST_F(ProgramTesterTest, CorrectProgramAgreesUnderInductor) {
  ProgramTestResult r = tester_->test(sourcePath("corpus/conv1d_mean_linear.py"), settings("inductor"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  EXPECT_TRUE(r.runs.eager.ok());
  EXPECT_TRUE(r.runs.compiled.ok());
  EXPECT_TRUE(r.runs.fp64.ok());
  ASSERT_TRUE(r.runs.compiled.compileFacts);
  EXPECT_EQ(r.runs.compiled.compileFacts->graphCount, 1);
  EXPECT_EQ(r.runs.compiled.compileFacts->graphBreaks, 0);
  ASSERT_TRUE(r.verdict.comparison);
  // Call 1's output, what it shares storage with, then the input and each parameter as it left them,
  // then calls 2 and 3.
  std::vector<std::string> roles;
  for (const auto& l : r.verdict.comparison->leaves) roles.push_back(l.role);
  EXPECT_EQ(roles, (std::vector<std::string>{"output", "alias", "state", "state", "state", "state", "state",
                                             "second-call", "fresh-inputs"}));
  EXPECT_EQ(r.verdict.comparison->leaves[0].eagerDtype, "float32");
  ASSERT_TRUE(r.runs.fp64.outputs);
  EXPECT_EQ(r.runs.fp64.outputs->leaves[0].dtype, "float64");  // fp64 mode really ran in float64
  EXPECT_GT(r.runs.compiled.times.compile, 0.0);
}

TEST_F(ProgramTesterTest, AProgramWhoseEveryOutputIsRandomIsJudgedOnShapesOnly) {
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/random_dropout.py"), settings("inductor"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::RandomOnly) << r.verdict.reason;
  EXPECT_NE(r.verdict.reason.find("aten.bernoulli_"), std::string::npos) << r.verdict.reason;
  EXPECT_NE(r.verdict.reason.find("aten.rand_like"), std::string::npos) << r.verdict.reason;
  EXPECT_FALSE(oracles::isFinding(r.verdict.verdict));
}

TEST_F(ProgramTesterTest, OnlyTheOutputsThatDependOnARandomOpAreLeftUnjudged) {
  // TEST FIXTURE backend tcfuzz_planted_numeric perturbs the first output: the random one. It is not
  // judged on values, so the planted error there goes unseen, and the plain tanh output agrees.
  for (const char* backend : {"inductor", "tcfuzz_planted_numeric"}) {
    ProgramTestResult r = tester_->test(sourcePath("tests/programs/random_and_plain_outputs.py"), settings(backend));
    EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << backend << ": " << r.verdict.reason;
    ASSERT_TRUE(r.verdict.comparison);
    const auto& leaves = r.verdict.comparison->leaves;
    ASSERT_GE(leaves.size(), 2u);
    EXPECT_TRUE(leaves[0].random);   // dropout
    EXPECT_FALSE(leaves[1].random);  // tanh(x) * 3: judged
    EXPECT_TRUE(leaves[1].passed);
    EXPECT_NE(r.verdict.reason.find("depend on a random op"), std::string::npos) << r.verdict.reason;
  }
}

TEST_F(ProgramTesterTest, AProgramThatMutatesItsInputAndABufferIsComparedNotCalledNondeterministic) {
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/mutates_input_and_buffer.py"), settings("inductor"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  ASSERT_TRUE(r.verdict.comparison);
  std::vector<std::string> state;
  for (const auto& l : r.verdict.comparison->leaves)
    if (l.role == "state") state.push_back(l.name);
  EXPECT_EQ(state, (std::vector<std::string>{"input 0 after forward", "buffer total after forward"}));
}

TEST_F(ProgramTesterTest, PlantedBackwardWriteIntoAParameterIsAMutationDivergenceReadAfterBackward) {
  // TEST FIXTURE backend: exact forward; its backward adds 0.01 to a tensor the forward saved (here the
  // parameter itself). The state leaves of a backward job are read after the gradients and say so.
  TestSettings s = settings("tcfuzz_planted_bw_writes_input");
  s.backward = true;
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/scale_input_by_weight.py"), s);
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::MutationDivergence) << r.verdict.reason;
  EXPECT_NE(r.verdict.reason.find("param weight after backward"), std::string::npos) << r.verdict.reason;
  ASSERT_TRUE(r.verdict.comparison);
  std::vector<std::string> state;
  for (const auto& l : r.verdict.comparison->leaves)
    if (l.role == "state") state.push_back(l.name);
  EXPECT_EQ(state, (std::vector<std::string>{"input 0 after backward", "param weight after backward"}));
  // Without backward nothing writes: the same program agrees, its state named after forward.
  s.backward = false;
  ProgramTestResult forwardOnly = tester_->test(sourcePath("tests/programs/scale_input_by_weight.py"), s);
  EXPECT_EQ(forwardOnly.verdict.verdict, oracles::Verdict::Agree) << forwardOnly.verdict.reason;
}

TEST_F(ProgramTesterTest, PlantedLostMutationIsAMutationDivergence) {
  // TEST FIXTURE backend: runs the graph on clones of its inputs, so the writes to x and the buffer are lost.
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/mutates_input_and_buffer.py"),
                                      settings("tcfuzz_planted_drop_mutation"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::MutationDivergence) << r.verdict.reason;
  EXPECT_NE(r.verdict.reason.find("input 0 after forward"), std::string::npos) << r.verdict.reason;
  ASSERT_TRUE(r.verdict.comparison);
  EXPECT_TRUE(r.verdict.comparison->leaves[0].passed);  // the returned value itself is right
  EXPECT_EQ(r.verdict.comparison->failingRole, "state");
  oracles::Signature sig = oracles::signatureOf(r.runs, r.verdict, {"add", "mul_"});
  EXPECT_EQ(sig.symptom, "mutation-divergence");
  EXPECT_EQ(sig.kind, "numeric");
}

TEST_F(ProgramTesterTest, OutputsThatAliasInputsBuffersAndOutputsAgreeUnderInductor) {
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/returns_views_of_input.py"), settings("inductor"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  ASSERT_TRUE(r.verdict.comparison);
  std::vector<std::string> aliasNames;
  for (const auto& l : r.verdict.comparison->leaves)
    if (l.role == "alias") aliasNames.push_back(l.name);
  EXPECT_EQ(aliasNames, (std::vector<std::string>{"output 0 storage", "output 1 storage", "output 2 storage",
                                                  "output 3 storage", "output 4 storage"}));
  // What eager's outputs alias, as saved (a leaf of kind "other" each).
  oracles::LoadedOutputs eager = oracles::loadOutputs(*r.runs.eager.outputs, r.runs.eager.jobDir);
  std::vector<std::string> notes;
  for (const auto& l : eager.leaves)
    if (l.role == "alias") notes.push_back(l.repr);
  EXPECT_EQ(notes, (std::vector<std::string>{"input 0", "input 0", "buffer scale", "nothing", "output 3"}));
}

TEST_F(ProgramTesterTest, EagerSavesTheValuesAnIndexOutputPointsInto) {
  // topk's (values, indices): only the indices get a tie source, the (6, 16) input and dim 1.
  ProgramTestResult r = tester_->test(sourcePath("corpus/negative/argmax_tie_topk.py"), settings("inductor"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  oracles::LoadedOutputs eager = oracles::loadOutputs(*r.runs.eager.outputs, r.runs.eager.jobDir);
  ASSERT_GE(eager.leaves.size(), 2u);
  EXPECT_FALSE(eager.leaves[0].tieSource);
  ASSERT_TRUE(eager.leaves[1].tieSource);
  EXPECT_EQ(eager.leaves[1].tieSource->dim, 1);
  EXPECT_TRUE(eager.leaves[1].tieSource->sameRank);
  const at::Tensor& source = eager.tensors[eager.leaves[1].tieSource->index];
  EXPECT_EQ(source.sizes().vec(), (std::vector<int64_t>{6, 16}));
  // The values topk returned are the source's values at its indices.
  EXPECT_TRUE(at::equal(at::gather(source, 1, eager.tensors[eager.leaves[1].index]), eager.tensors[eager.leaves[0].index]));
  oracles::LoadedOutputs compiled = oracles::loadOutputs(*r.runs.compiled.outputs, r.runs.compiled.jobDir);
  EXPECT_FALSE(compiled.leaves[1].tieSource);  // only eager's job tracks them
}

TEST_F(ProgramTesterTest, EveryModeAndCallSeesTheInputsStridesAndStorageOffset) {
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/strided_input_with_offset.py"), settings("inductor"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  for (const oracles::RunResult* run : {&r.runs.eager, &r.runs.compiled, &r.runs.fp64}) {
    SCOPED_TRACE(run->jobDir.string());
    oracles::LoadedOutputs out = oracles::loadOutputs(*run->outputs, run->jobDir);
    std::vector<double> layout;  // storage offset, strides, contiguity of the input: calls 1, 2 and 3, then
    for (const auto& l : out.leaves)  // the moved call (the input at storage offset 0, its strides kept)
      if (l.kind == oracles::OutputLeaf::Kind::Scalar) layout.push_back(out.tensors[l.index].item<double>());
    EXPECT_EQ(layout, (std::vector<double>{8, 1, 6, 0, 8, 1, 6, 0, 8, 1, 6, 0, 0, 1, 6, 0}));
    EXPECT_EQ(out.leaves[out.leaves.size() - 6].repr, "input 0 at storage offset 0, not 8");
  }
}

TEST_F(ProgramTesterTest, PlantedCopiedOutputsAreAnAliasingDivergence) {
  // TEST FIXTURE backend: returns a copy of every graph output; the values stay right.
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/returns_views_of_input.py"),
                                      settings("tcfuzz_planted_copy_outputs"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::AliasingDivergence) << r.verdict.reason;
  EXPECT_EQ(oracles::exitCodeFor(r.verdict.verdict), 24);
  EXPECT_NE(r.verdict.reason.find("output 0 storage: shares storage with input 0 in eager but with nothing in compiled"),
            std::string::npos)
      << r.verdict.reason;
  ASSERT_TRUE(r.verdict.comparison);
  EXPECT_EQ(r.verdict.comparison->failingRole, "alias");
  for (const auto& l : r.verdict.comparison->leaves)
    if (l.role == "output") EXPECT_TRUE(l.passed) << l.name << ": " << l.reason;
  oracles::Signature sig = oracles::signatureOf(r.runs, r.verdict, {"mul", "t"});
  EXPECT_EQ(sig.symptom, "aliasing-divergence");
}

TEST_F(ProgramTesterTest, PlantedStaleResultIsASecondCallDivergence) {
  // TEST FIXTURE backend: returns call 1's results on every later call. Call 2 (same inputs) cannot
  // tell; call 3 (the inputs of seed + 1) can.
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/linear_tanh_sum.py"),
                                      settings("tcfuzz_planted_stale_result"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::SecondCallDivergence) << r.verdict.reason;
  ASSERT_TRUE(r.verdict.comparison);
  EXPECT_EQ(r.verdict.comparison->failingRole, "fresh-inputs");
  for (const auto& l : r.verdict.comparison->leaves)
    if (l.role != "fresh-inputs") EXPECT_TRUE(l.passed) << l.role << " " << l.name << ": " << l.reason;
}

TEST_F(ProgramTesterTest, UnderDynamicShapesCall4RunsOnAnotherSizeThatEagerAccepts) {
  TestSettings s = settings("inductor");
  s.compile.dynamic = true;
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/linear_tanh_sum.py"), s);
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  ASSERT_TRUE(r.runs.compiled.compileFacts);
  EXPECT_EQ(r.runs.compiled.compileFacts->graphCount, 1);  // the new size reuses the dynamic graph
  ASSERT_TRUE(r.verdict.comparison);
  std::vector<std::string> call4;
  for (const auto& l : r.verdict.comparison->leaves)
    if (l.role == "resized") call4.push_back(l.name + " " + fmt::format("[{}]", fmt::join(l.eagerShape, ",")));
  // The input (3, 8) loses its first row: the model's Linear(8, 4) accepts 2 rows.
  EXPECT_EQ(call4, (std::vector<std::string>{"resized: inputs []", "resized (dim 0 of input 0: 3 -> 2): output 0 [2]"}));
  oracles::LoadedOutputs eager = oracles::loadOutputs(*r.runs.eager.outputs, r.runs.eager.jobDir);
  EXPECT_EQ(eager.leaves[eager.leaves.size() - 2].repr, "dim 0 of input 0: 3 -> 2");

  s.compile.dynamic = false;  // static shapes: no call 4
  r = tester_->test(sourcePath("tests/programs/linear_tanh_sum.py"), s);
  ASSERT_TRUE(r.verdict.comparison);
  for (const auto& l : r.verdict.comparison->leaves) EXPECT_NE(l.role, "resized") << l.name;
}

TEST_F(ProgramTesterTest, PlantedBugsOnANewSizeAreASecondCallDivergenceAndAResizedCallCrash) {
  // TEST FIXTURE backends: right on the first input size; 1% off, or raising, on any other size.
  TestSettings s = settings("tcfuzz_planted_wrong_on_new_size");
  s.compile.dynamic = true;
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/linear_tanh_sum.py"), s);
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::SecondCallDivergence) << r.verdict.reason;
  ASSERT_TRUE(r.verdict.comparison);
  EXPECT_EQ(r.verdict.comparison->failingRole, "resized");
  EXPECT_NE(r.verdict.reason.find("resized (dim 0 of input 0: 3 -> 2): output 0: rmse(compiled, fp64)"), std::string::npos)
      << r.verdict.reason;
  for (const auto& l : r.verdict.comparison->leaves)
    if (l.role != "resized") EXPECT_TRUE(l.passed) << l.role << " " << l.name << ": " << l.reason;
  // The signature names the call that went wrong: a dynamic-shape bug is not a stale cache.
  EXPECT_EQ(oracles::signatureOf(r.runs, r.verdict, {"linear", "tanh"}).phase, "resized");

  s.compile.backend = "tcfuzz_planted_raise_on_new_size";
  r = tester_->test(sourcePath("tests/programs/linear_tanh_sum.py"), s);
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::CrashMismatch) << r.verdict.reason;
  EXPECT_EQ(r.runs.compiled.phase, "resized-call");
  EXPECT_TRUE(r.runs.eager.ok());
  oracles::Signature sig = oracles::signatureOf(r.runs, r.verdict, {"linear", "tanh"});
  EXPECT_EQ(sig.phase, "resized-call");
}

TEST_F(ProgramTesterTest, PlantedBugAtAnotherStorageOffsetIsASecondCallDivergenceOfTheMovedCall) {
  // TEST FIXTURE backend: right at the first call's storage offsets, 1% off at any other. Only the moved
  // call (the input at storage offset 0, sizes and strides kept) sees it.
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/offset_input_tanh.py"),
                                      settings("tcfuzz_planted_wrong_on_new_offset"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::SecondCallDivergence) << r.verdict.reason;
  ASSERT_TRUE(r.verdict.comparison);
  EXPECT_EQ(r.verdict.comparison->failingRole, "moved");
  EXPECT_NE(r.verdict.reason.find("moved (input 0 at storage offset 0, not 6): output 0:"), std::string::npos)
      << r.verdict.reason;
  EXPECT_EQ(oracles::signatureOf(r.runs, r.verdict, {"tanh", "mul", "add", "sum"}).phase, "moved");

  // Real Inductor agrees, and a forward that never looks at the layout does not recompile for the offset.
  r = tester_->test(sourcePath("tests/programs/offset_input_tanh.py"), settings("inductor"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  ASSERT_TRUE(r.runs.compiled.compileFacts);
  EXPECT_EQ(r.runs.compiled.compileFacts->graphCount, 1);

  // A program whose inputs have no storage offset makes no moved call.
  r = tester_->test(sourcePath("tests/programs/linear_tanh_sum.py"), settings("tcfuzz_planted_wrong_on_new_offset"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  ASSERT_TRUE(r.verdict.comparison);
  for (const auto& l : r.verdict.comparison->leaves) EXPECT_NE(l.role, "moved") << l.name;
}

TEST_F(ProgramTesterTest, TheConditioningCheckMovesAnInputAlikeWhateverInputsComeBeforeIt) {
  // TEST FIXTURE backend tcfuzz_planted_ulp_noise (below). The same x after another input, as a batch member's
  // inputs follow the other members': eager's spread on x's sum is the same to the bit, so a member is
  // judged ill-conditioned or not as it is alone.
  TestSettings s = settings("tcfuzz_planted_ulp_noise");
  s.conditioningRuns = 3;
  ProgramTestResult alone = tester_->test(sourcePath("tests/programs/ulps_above_one_sum.py"), s);
  ProgramTestResult after = tester_->test(sourcePath("tests/programs/ulps_above_one_sum_after_another_input.py"), s);
  ASSERT_TRUE(alone.conditioning && after.conditioning) << alone.verdict.reason << "\n" << after.verdict.reason;
  ASSERT_FALSE(alone.conditioning->leaves.empty());
  // The failing leaves are x's alone (calls 1, 2 and 3; w's doubling agrees), in the same order.
  ASSERT_EQ(after.conditioning->leaves.size(), alone.conditioning->leaves.size());
  EXPECT_GT(alone.conditioning->leaves[0].spread, 0.0);
  for (size_t k = 0; k < alone.conditioning->leaves.size(); ++k)
    EXPECT_EQ(after.conditioning->leaves[k].spread, alone.conditioning->leaves[k].spread) << "failing leaf " << k;
  EXPECT_EQ(after.verdict.verdict, alone.verdict.verdict) << after.verdict.reason;
}

TEST_F(ProgramTesterTest, InputsHoldingInfinitiesAreNeverExcusedAsIllConditioned) {
  // Complex logaddexp with infinite parts: compiled gives nan+nanj where eager and fp64 give inf+infj. The
  // perturbed eager runs refuse such inputs (a few ulps cannot move an infinity), so no spread excuses it.
  TestSettings s = settings("inductor");
  s.conditioningRuns = 2;
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/complex_logaddexp_inf.py"), s);
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::NumericDivergence) << r.verdict.reason;
  ASSERT_TRUE(r.conditioning);
  EXPECT_FALSE(r.conditioning->illConditioned);
  EXPECT_NE(r.conditioning->reason.find("no perturbed run: ConditioningRefused: the inputs hold non-finite values"),
            std::string::npos)
      << r.conditioning->reason;
}

TEST_F(ProgramTesterTest, AnIllConditionedDivergenceIsFilteredAndAWellConditionedOneIsNot) {
  // TEST FIXTURE backend: runs the graph on inputs moved by one ulp. On reciprocal(x - 1) with x a few
  // ulps above 1 that is a large deviation from fp64 (eager is exact there), but eager's own spread on
  // inputs moved by up to 4 ulps covers it.
  TestSettings s = settings("tcfuzz_planted_ulp_noise");
  s.conditioningRuns = 0;
  ProgramTestResult raw = tester_->test(sourcePath("tests/programs/reciprocal_near_zero.py"), s);
  EXPECT_EQ(raw.verdict.verdict, oracles::Verdict::NumericDivergence) << raw.verdict.reason;
  EXPECT_FALSE(raw.conditioning);

  s.conditioningRuns = 3;
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/reciprocal_near_zero.py"), s);
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::IllConditioned) << r.verdict.reason;
  EXPECT_FALSE(oracles::isFinding(r.verdict.verdict));
  ASSERT_TRUE(r.conditioning);
  ASSERT_EQ(r.conditioning->leaves.size(), 3u);  // call 1's output, and calls 2 and 3: each diverges
  for (const auto& l : r.conditioning->leaves) {
    EXPECT_TRUE(l.covered) << "leaf " << l.leaf;
    EXPECT_GT(l.deviation, 0.0);
  }
  EXPECT_GT(r.conditioningSeconds, 0.0);
  // What the program cost the workers: its three jobs and the three perturbed eager runs.
  auto modes = [](const ProgramTestResult& t) {
    return t.runs.eager.times.childWall + t.runs.compiled.times.childWall + t.runs.fp64.times.childWall;
  };
  EXPECT_DOUBLE_EQ(raw.torchSeconds, modes(raw));
  EXPECT_GT(r.torchSeconds, modes(r));

  // The same one-ulp noise on a well-conditioned program is no divergence at all.
  ProgramTestResult calm = tester_->test(sourcePath("tests/programs/linear_tanh_sum.py"), s);
  EXPECT_EQ(calm.verdict.verdict, oracles::Verdict::Agree) << calm.verdict.reason;
}

TEST_F(ProgramTesterTest, PlantedSignedZerosAndFlushedSubnormalsAreLowSeverityFindings) {
  // Real Inductor keeps relu's +0.0 and x * 1e-39's subnormals as eager does.
  ProgramTestResult real = tester_->test(sourcePath("tests/programs/relu_and_subnormals.py"), settings("inductor"));
  EXPECT_EQ(real.verdict.verdict, oracles::Verdict::Agree) << real.verdict.reason;

  // TEST FIXTURE backends: one turns +0.0 into -0.0, the other flushes subnormals: allclose sees neither.
  ProgramTestResult sign =
      tester_->test(sourcePath("tests/programs/relu_and_subnormals.py"), settings("tcfuzz_planted_negative_zero"));
  EXPECT_EQ(sign.verdict.verdict, oracles::Verdict::SignedZero) << sign.verdict.reason;
  ASSERT_TRUE(sign.verdict.comparison);
  EXPECT_TRUE(sign.verdict.comparison->leaves[0].passed);
  EXPECT_GT(sign.verdict.comparison->leaves[0].signedZeros, 0);

  ProgramTestResult flush =
      tester_->test(sourcePath("tests/programs/relu_and_subnormals.py"), settings("tcfuzz_planted_flush_denormals"));
  EXPECT_EQ(flush.verdict.verdict, oracles::Verdict::DenormalFlush) << flush.verdict.reason;
  ASSERT_TRUE(flush.verdict.comparison);
  EXPECT_EQ(flush.verdict.comparison->leaves[1].flushedDenormals, 16);  // every element of x * 1e-39
  EXPECT_TRUE(oracles::isFinding(flush.verdict.verdict));
}

TEST_F(ProgramTesterTest, ARecompileOnTheRepeatedCallIsALowSeverityRecompileStorm) {
  // TEST FIXTURE program: a private counter changes at every call without changing a value, so Dynamo's guard
  // on it fails when call 2 repeats call 1, as an unstable guard would.
  ProgramTestResult storm = tester_->test(sourcePath("tests/programs/planted/unstable_guard.py"), settings("inductor"));
  EXPECT_EQ(storm.verdict.verdict, oracles::Verdict::RecompileStorm) << storm.verdict.reason;
  ASSERT_EQ(storm.runs.compiled.repeatRecompiles.size(), 1u);
  EXPECT_NE(storm.runs.compiled.repeatRecompiles[0].find("_calls"), std::string::npos)
      << storm.runs.compiled.repeatRecompiles[0];
  EXPECT_TRUE(oracles::isFinding(storm.verdict.verdict));
  EXPECT_FALSE(oracles::isWrongResult(storm.verdict.verdict));
  oracles::Signature sig = oracles::signatureOf(storm.runs, storm.verdict, {});
  EXPECT_EQ(sig.kind, "recompile");
  EXPECT_NE(sig.normalizedMessage.find("_calls"), std::string::npos) << sig.normalizedMessage;

  // Eager's own call 2 differs when the counter changes the values: the program drifts, and no storm is judged.
  ProgramTestResult drift = tester_->test(sourcePath("tests/programs/private_state_drift.py"), settings("inductor"));
  EXPECT_NE(drift.verdict.verdict, oracles::Verdict::RecompileStorm) << drift.verdict.reason;
  EXPECT_FALSE(oracles::isFinding(drift.verdict.verdict)) << drift.verdict.reason;

  // A plain program's repeated call runs Dynamo's cached code.
  ProgramTestResult calm = tester_->test(sourcePath("corpus/conv1d_mean_linear.py"), settings("inductor"));
  EXPECT_EQ(calm.verdict.verdict, oracles::Verdict::Agree) << calm.verdict.reason;
  EXPECT_TRUE(calm.runs.compiled.repeatRecompiles.empty());
}

TEST_F(ProgramTesterTest, AProgramDynamoCapturesNoGraphOfIsNothingCompiled) {
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/no_tensor_ops.py"), settings("inductor"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::NothingCompiled) << r.verdict.reason;
  ASSERT_TRUE(r.runs.compiled.compileFacts);
  EXPECT_EQ(r.runs.compiled.compileFacts->graphCount, 0);
  EXPECT_FALSE(oracles::isFinding(r.verdict.verdict));
}

TEST_F(ProgramTesterTest, PlantedNumericBugIsNumericDivergence) {
  // TEST FIXTURE backend: adds 1% of the output's scale to the first output.
  ProgramTestResult r = tester_->test(sourcePath("corpus/attention_block.py"), settings("tcfuzz_planted_numeric"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::NumericDivergence) << r.verdict.reason;
  ASSERT_TRUE(r.verdict.comparison);
  const auto& first = r.verdict.comparison->leaves.at(0);
  EXPECT_FALSE(first.passed);
  EXPECT_TRUE(first.fp64Used);
  EXPECT_GT(first.rmseCompiled, 100 * first.rmseEager);
  EXPECT_TRUE(r.verdict.comparison->leaves.at(1).passed);  // the untouched second output
  // The ill-conditioning filter ran, and eager's spread on perturbed inputs is far below a 1% error.
  ASSERT_TRUE(r.conditioning);
  EXPECT_FALSE(r.conditioning->illConditioned);
  ASSERT_FALSE(r.conditioning->leaves.empty());
  EXPECT_LT(r.conditioning->leaves[0].spread, r.conditioning->leaves[0].deviation / 100);
}

TEST_F(ProgramTesterTest, PlantedCompilerFailureIsCrashMismatch) {
  // TEST FIXTURE backend: raises on every compilation.
  ProgramTestResult r = tester_->test(sourcePath("corpus/conv1d_mean_linear.py"), settings("tcfuzz_planted_raise"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::CrashMismatch) << r.verdict.reason;
  ASSERT_TRUE(r.runs.compiled.exception);
  EXPECT_EQ(r.runs.compiled.exception->type, "BackendCompilerFailed");
  EXPECT_EQ(r.runs.compiled.phase, "compile");
  EXPECT_NE(r.runs.compiled.exception->message.find("planted compiler failure"), std::string::npos);
}

TEST_F(ProgramTesterTest, NondeterministicProgramIsNotJudgedNumerically) {
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/nondeterministic.py"), settings("aot_eager"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Nondeterministic) << r.verdict.reason;
}

TEST_F(ProgramTesterTest, Fp64ModeWidensExplicitCastsInsideForward) {
  // forward casts to float16 and back with .float(): in fp64 mode both casts become float64.
  ProgramTestResult r = tester_->test(sourcePath("corpus/mixed_dtype_reductions.py"), settings("aot_eager"));
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  ASSERT_TRUE(r.runs.eager.outputs && r.runs.fp64.outputs);
  EXPECT_EQ(r.runs.eager.outputs->leaves.at(0).dtype, "float32");
  EXPECT_EQ(r.runs.fp64.outputs->leaves.at(0).dtype, "float64");
  EXPECT_EQ(r.runs.fp64.outputs->leaves.at(1).dtype, "int64");  // integer results stay integer
  EXPECT_EQ(r.runs.fp64.outputs->leaves.at(2).dtype, "float64");
}

namespace {
/// The leaves' names (forward outputs have none) and shapes, as "name[shape]" strings.
std::vector<std::string> leafNames(const oracles::OutputSet& set) {
  std::vector<std::string> out;
  for (const auto& l : set.leaves) {
    std::string shape;
    for (size_t i = 0; i < l.shape.size(); ++i) shape += (i ? "," : "") + std::to_string(l.shape[i]);
    out.push_back(l.role + ":" + (l.name.empty() ? l.repr : l.name) + "[" + shape + "]");
  }
  return out;
}
const std::vector<std::string> kLinearLeaves = {"output:[3]",
                                                "grad:grad(input 0)[3,8]",
                                                "grad:grad(param linear.bias)[4]",
                                                "grad:grad(param linear.weight)[4,8]",
                                                "alias:output 0 storage[]",
                                                "state:input 0 after backward[3,8]",
                                                "state:param linear.bias after backward[4]",
                                                "state:param linear.weight after backward[4,8]",
                                                "second-call:second-call: output 0[3]",
                                                "fresh-inputs:fresh-inputs: output 0[3]"};
}  // namespace

TEST_F(ProgramTesterTest, BackwardAgreesUnderAotEagerAndSavesNamedGradients) {
  TestSettings s = settings("aot_eager");
  s.backward = true;
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/linear_tanh_sum.py"), s);
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  for (const oracles::RunResult* run : {&r.runs.eager, &r.runs.compiled, &r.runs.fp64}) {
    ASSERT_TRUE(run->ok()) << run->summary();
    ASSERT_TRUE(run->outputs);
    EXPECT_EQ(leafNames(*run->outputs), kLinearLeaves);
    EXPECT_EQ(run->backwardNote, "ok");
  }
  ASSERT_EQ(r.runs.eager.repeatOutputs.size(), 1u);  // the second eager run repeats forward and backward
  EXPECT_EQ(leafNames(r.runs.eager.repeatOutputs[0]), kLinearLeaves);
  EXPECT_EQ(r.runs.eager.outputs->leaves[3].dtype, "float32");
  EXPECT_EQ(r.runs.fp64.outputs->leaves[3].dtype, "float64");  // the fp64 reference for the gradients
  ASSERT_TRUE(r.verdict.comparison);
  ASSERT_EQ(r.verdict.comparison->leaves.size(), kLinearLeaves.size());
  for (const auto& l : r.verdict.comparison->leaves) EXPECT_TRUE(l.passed) << l.name << ": " << l.reason;
  EXPECT_GT(r.runs.eager.times.backward, 0.0);

  nlohmann::json j = toJson(r);
  ASSERT_EQ(j["outputs"].size(), kLinearLeaves.size());
  EXPECT_EQ(j["outputs"][0]["name"], "output 0");
  EXPECT_EQ(j["outputs"][0]["role"], "output");
  EXPECT_EQ(j["outputs"][3]["name"], "grad(param linear.weight)");
  EXPECT_EQ(j["outputs"][3]["role"], "grad");
  EXPECT_EQ(j["eager"]["backward"], "ok");
}

TEST_F(ProgramTesterTest, PlantedGradientBugIsFoundOnlyByTheBackwardOracle) {
  // TEST FIXTURE backend: exact forward; its AOTAutograd backward perturbs the first gradient.
  TestSettings s = settings("tcfuzz_planted_grad");
  ProgramTestResult forwardOnly = tester_->test(sourcePath("tests/programs/linear_tanh_sum.py"), s);
  EXPECT_EQ(forwardOnly.verdict.verdict, oracles::Verdict::Agree) << forwardOnly.verdict.reason;
  ASSERT_TRUE(forwardOnly.runs.compiled.outputs);
  EXPECT_EQ(forwardOnly.runs.compiled.outputs->leaves.size(), 7u);  // output, its alias note, 3 state, calls 2 and 3
  EXPECT_TRUE(forwardOnly.runs.compiled.backwardNote.empty());

  s.backward = true;
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/linear_tanh_sum.py"), s);
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::NumericDivergence) << r.verdict.reason;
  ASSERT_TRUE(r.verdict.comparison);
  ASSERT_EQ(r.verdict.comparison->leaves.size(), kLinearLeaves.size());
  EXPECT_TRUE(r.verdict.comparison->leaves[0].passed);  // the forward output is exact
  int failing = 0;
  for (const auto& l : r.verdict.comparison->leaves) {
    if (l.passed) continue;
    ++failing;
    EXPECT_EQ(l.role, "grad");
    EXPECT_EQ(l.name.rfind("grad(", 0), 0u) << l.name;
    EXPECT_TRUE(l.fp64Used);
    EXPECT_GT(l.rmseCompiled, 100 * l.rmseEager);
  }
  EXPECT_EQ(failing, 1);
  EXPECT_NE(r.verdict.reason.find("grad("), std::string::npos) << r.verdict.reason;
}

TEST_F(ProgramTesterTest, FailingLazyBackwardCompileIsABackwardPhaseCrash) {
  // TEST FIXTURE backend: the forward compiles; AOTAutograd's lazy backward compile raises.
  TestSettings s = settings("tcfuzz_planted_bw_raise");
  s.backward = true;
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/linear_tanh_sum.py"), s);
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::CrashMismatch) << r.verdict.reason;
  ASSERT_TRUE(r.runs.compiled.exception);
  EXPECT_EQ(r.runs.compiled.phase, "backward");  // not "compile": the forward compiled and ran
  EXPECT_NE(r.runs.compiled.exception->message.find("planted backward compiler failure"), std::string::npos);
  EXPECT_TRUE(r.runs.eager.ok());
}

TEST_F(ProgramTesterTest, BackwardWithNoDifferentiableOutputIsSkipped) {
  TestSettings s = settings("aot_eager");
  s.backward = true;
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/integer_output.py"), s);
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  for (const oracles::RunResult* run : {&r.runs.eager, &r.runs.compiled, &r.runs.fp64}) {
    ASSERT_TRUE(run->ok()) << run->summary();
    EXPECT_EQ(run->backwardNote, "skipped: no differentiable output");
    ASSERT_TRUE(run->outputs);
    EXPECT_EQ(leafNames(*run->outputs),
              (std::vector<std::string>{"output:[4]", "alias:output 0 storage[]", "state:input 0 after forward[4,5]",
                                        "second-call:second-call: output 0[4]",
                                        "fresh-inputs:fresh-inputs: output 0[4]"}));
  }
}

TEST_F(ProgramTesterTest, InductorBackwardReportsKernelMetricsAndAotCounters) {
  TestSettings s = settings("inductor");
  s.backward = true;
  ProgramTestResult r = tester_->test(sourcePath("tests/programs/linear_tanh_sum.py"), s);
  EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
  ASSERT_TRUE(r.runs.compiled.ok()) << r.runs.compiled.summary();
  ASSERT_TRUE(r.runs.compiled.outputs);
  EXPECT_EQ(leafNames(*r.runs.compiled.outputs), kLinearLeaves);
  ASSERT_TRUE(r.runs.compiled.compileFacts);
  const auto& facts = *r.runs.compiled.compileFacts;
  ASSERT_TRUE(facts.inductorMetrics.count("generated_kernel_count"));
  EXPECT_GE(facts.inductorMetrics.at("generated_kernel_count"), 1);
  ASSERT_TRUE(facts.aotAutogradCounters.count("total"));
  EXPECT_GE(facts.aotAutogradCounters.at("total"), 1);
  nlohmann::json j = toJson(r);
  EXPECT_GE(j["compiled"]["compile_facts"]["inductor_metrics"]["generated_kernel_count"].get<double>(), 1);
}

TEST_F(ProgramTesterTest, UnknownInductorOptionIsAConfigurationError) {
  TestSettings s = settings("inductor");
  s.compile.addInductorOverride("no_such_option=1");
  EXPECT_THROW(tester_->test(sourcePath("corpus/conv1d_mean_linear.py"), s), oracles::ConfigurationError);
}

TEST(Cli, RunPrintsTheVerdictAndExitsWithItsCode) {
  CliRun r = runCli({"run", "--plugin", sourcePath("tests/fixtures/planted_backends.py").string(), "--backend",
                     "tcfuzz_planted_raise", sourcePath("corpus/conv1d_mean_linear.py").string()});
  EXPECT_EQ(r.exitCode, 10) << r.out;
  EXPECT_NE(r.out.find("verdict   crash-mismatch"), std::string::npos) << r.out;
}

TEST(Cli, JsonOutputCarriesTheFiguresBehindTheVerdict) {
  CliRun r = runCli({"run", "--json", "--backend", "eager", sourcePath("corpus/mixed_dtype_reductions.py").string()});
  ASSERT_EQ(r.exitCode, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "agree");
  EXPECT_EQ(j["config"]["backend"], "eager");
  ASSERT_GE(j["outputs"].size(), 3u);
  EXPECT_EQ(j["outputs"][2]["role"], "output");
  EXPECT_NE(j["outputs"][3]["role"], "output");  // call 1 returns three leaves; then the state and calls 2, 3
  EXPECT_EQ(j["outputs"][1]["dtype"], "int64");
  EXPECT_TRUE(j["outputs"][0].contains("rmse_compiled_fp64"));
  // Eager and eager agree exactly: fp64 was not consulted, so its figures are null, not 0.0.
  EXPECT_EQ(j["outputs"][0]["fp64_used"], false);
  EXPECT_TRUE(j["outputs"][0]["rmse_compiled_fp64"].is_null()) << j["outputs"][0].dump();
  EXPECT_TRUE(j["outputs"][1]["mismatches_compiled_fp64"].is_null()) << j["outputs"][1].dump();
}

// --dynamic mark: the compiled run marks every input dimension of size >= 2 (torch._dynamo.maybe_mark_dynamic),
// so the first compile is already for symbolic sizes: the later call at another size (call 4) runs and
// compiles nothing new. Real torch.compile (backend eager: Dynamo alone).
TEST(Cli, MarkedDimensionsCompileOnceForACallAtAnotherSize) {
  TempDir dir("tcfuzz-mark");
  std::filesystem::path program = dir.path() / "program.py";
  std::ofstream(program) << "import torch\n\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                            "        return (x.sin() * 2).sum(0)\n\n\ndef make_inputs(seed):\n"
                            "    return [torch.randn(6, 5, generator=torch.Generator().manual_seed(seed))]\n";
  CliRun r = runCli({"run", "--json", "--backend", "eager", "--dynamic", "mark", program.string()});
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "agree");
  EXPECT_EQ(j["config"], (nlohmann::json{{"backend", "eager"}, {"mark_dynamic", true}}));
  int resized = 0;
  for (const auto& o : j["outputs"]) resized += o["name"].get<std::string>().starts_with("resized (dim 0 of input 0: 6 -> ");
  EXPECT_EQ(resized, 1) << j["outputs"].dump();
  const auto& facts = j["compiled"]["compile_facts"];
  EXPECT_EQ(facts.value("recompiles", 0), 0) << facts.dump();  // the key is left out at 0
  EXPECT_EQ(facts.value("graph_count", -1), 1) << facts.dump();
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(runCli({"run", "--no-such-flag", sourcePath("corpus/frexp_mul.py").string()}).exitCode, 2);
  EXPECT_EQ(runCli({"run", sourcePath("corpus/does_not_exist.py").string()}).exitCode, 2);
  EXPECT_EQ(runCli({"run", "--dynamic", "maybe", sourcePath("corpus/frexp_mul.py").string()}).exitCode, 2);
  EXPECT_EQ(runCli({"run", "--backend", "eager", "--inductor-config", "no_such_option=1",
                    sourcePath("corpus/frexp_mul.py").string()})
                .exitCode,
            2);
}

TEST(Cli, VersionNamesTheLinkedTorch) {
  CliRun r = runCli({"--version"});
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_NE(r.out.find("tcfuzz 0.1.0"), std::string::npos);
  EXPECT_NE(r.out.find(std::string("(git ") + TCFUZZ_TORCH_GIT_VERSION + ")"), std::string::npos) << r.out;
}

TEST(Cli, ARunStillGoingAtTheHarnessDeadlineIsStoppedAndSaysSo) {
  // The test harness's own bound (runTcfuzzBounded): a tcfuzz that outlives it is stopped, exits 124,
  // and stderr says so, where an unbounded wait would stall ctest until its timeout with nothing printed.
  // Starting a zygote alone (bubblewrap, then import torch) takes longer than the 1 s allowed here.
  CliRun r = test_support::runTcfuzzBounded(
      {"run", "--backend", "inductor", sourcePath("corpus/frexp_mul.py").string()}, false, 1.0);
  EXPECT_EQ(r.exitCode, 124) << r.out << r.err;
  EXPECT_NE(r.err.find("[test harness] tcfuzz run was still running after 1 s: stopped"), std::string::npos) << r.err;
}
