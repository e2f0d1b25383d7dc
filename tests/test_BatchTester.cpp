// Batched compiles: the batch program's layout (generators/python/BatchProgram.h), which member each saved leaf
// belongs to, and, with real workers and torch.compile, a planted bug in one member judged against that member
// alone, and a planted fault that needs two members kept as batch-only. The planted backends are TEST FIXTURES
// (tests/fixtures/planted_backends.py): they miscompile on purpose so that the oracle must fire.
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "fuzzer/campaign/output/FindingStore.h"
#include "fuzzer/triage/Triage.h"
#include "fuzzer/worker/BatchTester.h"
#include "generators/Generator.h"
#include "generators/python/BatchProgram.h"
#include "generators/python/PythonConstructs.h"
#include "oracles/judge/OutputLoader.h"
#include "tests/ProgramTesterFixture.h"

namespace tcfuzz {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test_support::sourcePath;
using test_support::TempDir;

/// x0 [3, 4] float32 -> each op in turn -> the output; with `parameter`, a [3, 4] parameter added first.
gen::Graph chain(const std::vector<std::string>& ops, bool parameter = false) {
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
    g.nodes.push_back({op, {x}, {y}, json::object()});
    x = y;
  }
  g.outputs = {x};
  return g;
}

class BatchProgramTest : public ::testing::Test {
 protected:
  gen::OpCatalog catalog = gen::makeDefaultCatalog();
  gen::PythonEmitter emitter{catalog};
};

TEST_F(BatchProgramTest, EachMemberIsItsProgramUnderItsOwnNamesAndPlace) {
  gen::Generator generator(catalog, gen::GenPolicy{}, 7);
  std::vector<gen::Graph> members;
  for (uint64_t i = 0; members.size() < 3 && i < 200; ++i) {
    members.push_back(gen::plainProgram(generator.generate(i)));
  }
  ASSERT_EQ(members.size(), 3u);
  gen::BatchProgram batch = gen::emitBatch(emitter, members, {"program 000001", "program 000002", "program 000003"});
  ASSERT_EQ(batch.members.size(), 3u);
  std::vector<std::string> lines{""};  // 1-based
  std::istringstream in(batch.py);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  int input = 0, output = 0;
  for (size_t k = 0; k < 3; ++k) {
    const gen::BatchMember& m = batch.members[k];
    EXPECT_EQ(m.firstInput, input);
    EXPECT_EQ(m.inputs, static_cast<int>(members[k].inputs.size()));
    EXPECT_EQ(m.firstOutput, output);
    EXPECT_EQ(m.outputs, static_cast<int>(members[k].outputs.size()));
    EXPECT_EQ(m.module, "m" + std::to_string(k));
    input += m.inputs;
    output += m.outputs;
    // The member's text is its program alone under its own names, at the lines the layout names.
    std::string alone = emitter.emit(members[k]);
    std::string body = alone.substr(alone.find("class Model"));
    std::string renamed = body;
    renamed.replace(renamed.find("class Model"), 11, "class Member" + std::to_string(k));
    renamed.replace(renamed.find("def make_inputs("), 16, "def make_inputs_" + std::to_string(k) + "(");
    for (std::string declared : {"WRITTEN_INPUTS", "ALIASED_INPUTS"})
      if (size_t w = renamed.find(declared + " = "); w != std::string::npos)
        renamed.replace(w, declared.size(), declared + "_" + std::to_string(k));
    EXPECT_NE(batch.py.find(renamed), std::string::npos) << "member " << k << "\n" << renamed;
    int classLine = 0;
    for (int l = m.firstLine; l <= m.lastLine; ++l)
      if (lines.at(static_cast<size_t>(l)).rfind("class Member" + std::to_string(k), 0) == 0) classLine = l;
    EXPECT_GT(classLine, 0) << "member " << k;
    EXPECT_EQ(batch.memberOfLine(m.firstLine), static_cast<int>(k));
    EXPECT_EQ(batch.memberOfLine(m.lastLine), static_cast<int>(k));
    EXPECT_EQ(batch.memberOfInput(m.firstInput), static_cast<int>(k));
    EXPECT_EQ(batch.memberOfOutput(m.firstOutput + m.outputs - 1), static_cast<int>(k));
    EXPECT_EQ(batch.memberOfState(m.module + ".layer0.weight"), static_cast<int>(k));
  }
  EXPECT_EQ(batch.memberOfInput(input), -1);
  EXPECT_EQ(batch.memberOfLine(1), -1);
  EXPECT_NE(batch.py.find("        torch.manual_seed(seed)\n        self.m2 = Member2()\n"), std::string::npos);
  EXPECT_NE(batch.py.find("def make_inputs(seed):\n    return [*make_inputs_0(seed), *make_inputs_1(seed), "
                          "*make_inputs_2(seed), ]\n"),
            std::string::npos)
      << batch.py;
}

// Every construct batches; under fullgraph or an export entry a member is its op graph.
TEST_F(BatchProgramTest, AMemberKeepsItsConstructsOrIsItsOpGraph) {
  gen::Graph broken = chain({"sin", "cos"});
  broken.nodes[1].python.graphBreakBefore = true;
  broken.hook = "global-forward";
  std::string py = gen::emitBatch(emitter, {chain({"sin"}), broken}, {}).py;
  for (const char* text : {"torch._dynamo.graph_break()", "    if not isinstance(module, Member1):",
                           "\nGLOBAL_HOOK_1 = None", "        global GLOBAL_HOOK_1\n"})
    EXPECT_NE(py.find(text), std::string::npos) << text << "\n" << py;
  EXPECT_TRUE(gen::batchMemberProgram(broken, true).nodes[1].python.graphBreakBefore);
  EXPECT_FALSE(gen::batchMemberProgram(broken, false).nodes[1].python.graphBreakBefore);
  EXPECT_TRUE(gen::batchMemberProgram(broken, false).hook.empty());
  // A stripped program says so in its replay line, and gen --plain makes it again.
  gen::Graph made = gen::Generator(catalog, gen::GenPolicy{}, 5).generate(3);
  made.nodes[0].python.graphBreakBefore = true;
  gen::Graph plain = gen::plainProgram(made);
  EXPECT_TRUE(plain.origin.plain);
  EXPECT_FALSE(gen::plainProgram(chain({"sin"})).origin.plain);  // nothing dropped: its replay line as it was
  std::string header = gen::provenanceHeader(plain);
  EXPECT_NE(header.find("tcfuzz gen --seed 5 --start 3 --count 1 --plain\n"), std::string::npos) << header;
  EXPECT_TRUE(gen::Graph::fromJson(plain.toJson(), "plain").origin.plain);
}

// A batch puts members whose frame Dynamo breaks last: a graph break, an `if` on a tensor's value; an `if` on a
// Python flag or the call counter does not break.
TEST_F(BatchProgramTest, MembersThatBreakTheGraphAreKnownByTheirConstructs) {
  EXPECT_FALSE(gen::breaksGraph(chain({"sin", "cos"}), catalog));
  gen::Graph broken = chain({"sin", "cos"});
  broken.nodes[1].python.graphBreakBefore = true;
  EXPECT_TRUE(gen::breaksGraph(broken, catalog));
  for (const char* kind : {"item", "tensor", "any", "flag", "calls"}) {
    gen::Graph branched = chain({"sin"});  // the branch reads program input x0 and returns its node's output
    branched.nodes[0].python.branch = gen::BranchTest{kind, 0, 0.5};
    branched.nodes[0].python.counter = true;
    bool onValue = std::string_view(kind) == "item" || std::string_view(kind) == "tensor" || std::string_view(kind) == "any";
    EXPECT_EQ(gen::breaksGraph(branched, catalog), onValue) << kind;
  }
}

/// Two programs that keep Python state in module globals (a call counter, a global offset, a closure cell), each
/// as generation writes it; with `schedules`, the first changes its global in two steps, the second its inputs'
/// requires_grad in one.
std::vector<gen::Graph> statefulPrograms(bool schedules = false) {
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

// A member whose state changes between calls (its own schedule, or state forward writes) is called between graph
// breaks, so that Dynamo's recompiles on that state recompile its frame only; members without such state share one.
TEST_F(BatchProgramTest, AMemberWhoseStateChangesBetweenCallsIsCalledInAFrameOfItsOwn) {
  std::vector<gen::Graph> stateful = statefulPrograms(true);
  gen::Graph counted = statefulPrograms()[0];  // no schedule: its counter changes at every call
  EXPECT_FALSE(gen::changesStateBetweenCalls(chain({"sin"}), catalog));
  EXPECT_TRUE(gen::changesStateBetweenCalls(counted, catalog));
  EXPECT_TRUE(gen::changesStateBetweenCalls(stateful[1], catalog));
  gen::Graph scheduled = chain({"sin"}, true);  // state only a schedule step changes: its inputs' requires_grad
  scheduled.schedule = {{"requires-grad", 0}};
  ASSERT_EQ(gen::planPythonConstructs(scheduled, catalog).schedule.size(), 1u);
  EXPECT_TRUE(gen::changesStateBetweenCalls(scheduled, catalog));
  gen::Graph broken = counted;  // a member that breaks its frame goes last, whatever state it keeps
  broken.nodes[1].python.graphBreakBefore = true;
  EXPECT_EQ(gen::batchFrame(chain({"sin"}), catalog), gen::BatchFrame::Shared);
  EXPECT_EQ(gen::batchFrame(counted, catalog), gen::BatchFrame::Own);
  EXPECT_EQ(gen::batchFrame(broken, catalog), gen::BatchFrame::Breaks);
  gen::BatchProgram batch =
      gen::emitBatch(emitter, {chain({"sin"}), chain({"cos"}), counted, scheduled, chain({"exp"})}, {});
  std::vector<bool> own;
  for (const auto& m : batch.members) own.push_back(m.ownFrame);
  EXPECT_EQ(own, (std::vector<bool>{false, false, true, true, false}));
  const std::string breakLine =
      "        torch._dynamo.graph_break()  # a member whose state changes between calls: a frame of its own\n";
  std::string forward = "    def forward(self, m0_x0, m1_x0, m2_x0, m3_x0, m4_x0):\n"
                        "        outputs = (*self.m0(m0_x0), *self.m1(m1_x0), )\n" +
                        breakLine + "        outputs += (*self.m2(m2_x0), )\n" +
                        breakLine + "        outputs += (*self.m3(m3_x0), )\n" +
                        breakLine + "        outputs += (*self.m4(m4_x0), )\n        return outputs\n";
  EXPECT_NE(batch.py.find(forward), std::string::npos) << batch.py;
  // Without such a member, forward is one expression: one frame.
  std::string plain = gen::emitBatch(emitter, {chain({"sin"}), chain({"cos"})}, {}).py;
  EXPECT_NE(plain.find("        return (*self.m0(m0_x0), *self.m1(m1_x0), )\n"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("graph_break"), std::string::npos);
}

// A batch's schedule: step s makes each member's step s on its own submodule and inputs; the members' step functions
// keep their own names, globals and WRITTEN_INPUTS.
TEST_F(BatchProgramTest, MembersScheduleStepsJoinTheBatchSchedule) {
  std::vector<gen::Graph> members = statefulPrograms(true);
  ASSERT_EQ(gen::planPythonConstructs(members[0], catalog).schedule.size(), 2u);
  ASSERT_EQ(gen::planPythonConstructs(members[1], catalog).schedule.size(), 1u);
  gen::BatchProgram batch = gen::emitBatch(emitter, members, {});
  for (const char* text :
       {"def change_1_0(model):\n    \"\"\"OFFSET_0 = 0.25 (a module global)\"\"\"\n    global OFFSET_0\n    OFFSET_0 = 0.25\n",
        "SCHEDULE_0 = [change_1_0, change_2_0]\n", "def flip_requires_grad_1(inputs):", "globals().get(\"WRITTEN_INPUTS_1\", ())",
        "    return flip_requires_grad_1\n", "SCHEDULE_1 = [change_1_1]\n",
        "def change_1(model):\n    \"\"\"m0: OFFSET_0 = 0.25 (a module global); m1: inputs with requires_grad flipped (the "
        "floating inputs forward does not write)\"\"\"\n    return batch_step(model, [(\"m0\", 0, 1, change_1_0), (\"m1\", 1, 1, "
        "change_1_1)])\n",
        "def change_2(model):\n    \"\"\"m0: OFFSET_0 = 2.0 (a module global)\"\"\"\n    return batch_step(model, [(\"m0\", 0, 1, "
        "change_2_0)])\n",
        "\nSCHEDULE = [change_1, change_2]\n"})
    EXPECT_NE(batch.py.find(text), std::string::npos) << text << "\n" << batch.py;
  // Alone, the names are the program's own.
  std::string alone = emitter.emit(members[1]);
  EXPECT_NE(alone.find("def flip_requires_grad(inputs):"), std::string::npos) << alone;
  EXPECT_NE(alone.find("\nSCHEDULE = [change_1]\n"), std::string::npos) << alone;
}

// Each member's module globals that hold state are its own (CALLS_1, TALLY_1), and BATCH_STATE names them with the
// member's submodule, so that the worker compares and restores each member's state as alone.
TEST_F(BatchProgramTest, MembersKeepTheirPythonStateApart) {
  std::vector<gen::Graph> members = statefulPrograms();
  for (const auto& g : members) {
    gen::PythonPlan plan = gen::planPythonConstructs(g, catalog);
    ASSERT_TRUE(plan.counter);  // the constructs hold, so the emitter writes them
  }
  std::string alone = emitter.emit(members[1]);
  for (const char* text : {"\nCALLS = 0\n", "        global CALLS\n", "\nTALLY = make_tally()\n", " = TALLY(",
                           "STATE_GLOBALS = (\"CALLS\", \"TALLY\")"})
    EXPECT_NE(alone.find(text), std::string::npos) << text << "\n" << alone;
  gen::BatchProgram batch = gen::emitBatch(emitter, members, {});
  for (const char* text : {"\nOFFSET_0 = 0.5\n", "\nCALLS_0 = 0\n", "        global CALLS_0\n", "        CALLS_0 += 1\n",
                           " + OFFSET_0\n", "\nCALLS_1 = 0\n", "        global CALLS_1\n", "\nTALLY_1 = make_tally()\n",
                           " = TALLY_1(", "STATE_GLOBALS_1 = (\"CALLS_1\", \"TALLY_1\")", "self.calls % 2 == 1",
                           "BATCH_STATE = ((\"m0\", (\"OFFSET_0\", \"CALLS_0\", )), (\"m1\", (\"CALLS_1\", \"TALLY_1\", )), )\n"})
    EXPECT_NE(batch.py.find(text), std::string::npos) << text << "\n" << batch.py;
  for (const char* shared : {"\nCALLS = ", "\nOFFSET = ", "\nTALLY = ", "global CALLS\n", "+ OFFSET\n", "\nSTATE_GLOBALS = "})
    EXPECT_EQ(batch.py.find(shared), std::string::npos) << shared << "\n" << batch.py;
  // A batch of plain members declares no Python state.
  EXPECT_EQ(gen::emitBatch(emitter, {chain({"sin"}), chain({"cos"})}, {}).py.find("BATCH_STATE"), std::string::npos);
}

// A filling batch takes what fits its room; a program that fits only an empty batch ends it and leads the next,
// and only one past the bound by itself, or one that may not batch, is judged alone.
TEST_F(BatchProgramTest, AProgramPastTheRoomLeftLeadsTheNextBatchNeverRunsAlone) {
  gen::BatchRoom room(6);
  gen::Graph two = chain({"sin", "cos"}), three = chain({"sin", "cos", "tanh"});
  gen::Graph seven = chain({"sin", "cos", "tanh", "exp", "neg", "abs", "sin"});
  EXPECT_EQ(room.place(seven, true), gen::BatchPlace::Alone);   // past the bound by itself
  EXPECT_EQ(room.place(three, false), gen::BatchPlace::Alone);  // may not batch
  EXPECT_EQ(room.place(three, true), gen::BatchPlace::Join);
  room.add(three);
  EXPECT_EQ(room.place(two, true), gen::BatchPlace::Join);
  room.add(two);
  EXPECT_EQ(room.nodes(), 5u);
  EXPECT_EQ(room.place(two, true), gen::BatchPlace::NextBatch);  // 7 > 6: it leads the next batch
  EXPECT_EQ(room.place(seven, true), gen::BatchPlace::Alone);
  // Elements bound the room too: a [3, 4] input is 12 elements.
  gen::BatchRoom small(100, 20);
  EXPECT_EQ(small.place(two, true), gen::BatchPlace::Join);
  small.add(two);
  EXPECT_EQ(small.place(chain({"exp"}), true), gen::BatchPlace::NextBatch);
  EXPECT_EQ(small.place(chain({"exp"}, true), true), gen::BatchPlace::Alone);  // 24 elements by itself
}

TEST(BatchLeaves, EachLeafBelongsToTheMemberItNames) {
  gen::BatchProgram batch;
  batch.members = {{0, 2, 0, 1, "m0", 1, 1}, {2, 1, 1, 2, "m1", 2, 2}};
  auto leaf = [](std::string role, std::string name) {
    oracles::OutputLeaf l;
    l.role = std::move(role);
    l.name = std::move(name);
    return l;
  };
  EXPECT_EQ(batchMemberOfLeaf(batch, leaf("output", ""), 0), 0);
  EXPECT_EQ(batchMemberOfLeaf(batch, leaf("output", ""), 2), 1);
  EXPECT_EQ(batchMemberOfLeaf(batch, leaf("grad", "grad(input 1)"), 0), 0);
  EXPECT_EQ(batchMemberOfLeaf(batch, leaf("grad", "grad(input 2)"), 0), 1);
  EXPECT_EQ(batchMemberOfLeaf(batch, leaf("grad", "grad(param m1.layer0.weight)"), 0), 1);
  EXPECT_EQ(batchMemberOfLeaf(batch, leaf("alias", "output 1 storage"), 0), 1);
  EXPECT_EQ(batchMemberOfLeaf(batch, leaf("state", "input 0 after backward"), 0), 0);
  EXPECT_EQ(batchMemberOfLeaf(batch, leaf("state", "buffer m1.bn0.running_mean after forward"), 0), 1);
  EXPECT_EQ(batchMemberOfLeaf(batch, leaf("second-call", "second-call: output 0"), 0), 0);
  EXPECT_EQ(batchMemberOfLeaf(batch, leaf("resized", "resized (dim 0 of input 2: 3 -> 2): output 2"), 0), 1);
  EXPECT_EQ(batchMemberOfLeaf(batch, leaf("resized", "resized: inputs"), 0), -1);  // every member's
  // A member's Python state is named after its submodule (BATCH_STATE).
  EXPECT_EQ(batchMemberOfLeaf(batch, leaf("python-state", "m1.self.calls after forward"), 0), 1);
  EXPECT_EQ(batchMemberOfLeaf(batch, leaf("python-state", "m0.global CALLS_0 after forward"), 0), 0);
  EXPECT_EQ(batchMemberOfLeaf(batch, leaf("python-state", "m1.closure cell TALLY_1.count after forward"), 0), 1);
  EXPECT_EQ(batchMemberOfLeaf(batch, leaf("python-state", "m0.Member0.scale after forward"), 0), 0);
  EXPECT_EQ(batchMemberOfLeaf(batch, leaf("python-state", "m1.self.trace value 0 after forward"), 0), 1);
  // A run's part: its own leaves and the shared ones, in order.
  oracles::RunResult run;
  run.outputs = oracles::OutputSet{"outputs.safetensors",
                                   {leaf("output", ""), leaf("output", ""), leaf("output", ""),
                                    leaf("resized", "resized: inputs"), leaf("grad", "grad(input 2)")}};
  run.repeatOutputs = {*run.outputs};
  oracles::RunResult part = memberRun(batch, run, 1);
  ASSERT_EQ(part.outputs->leaves.size(), 4u);
  EXPECT_EQ(part.outputs->leaves[2].name, "resized: inputs");
  EXPECT_EQ(part.outputs->leaves[3].name, "grad(input 2)");
  EXPECT_EQ(part.repeatOutputs.at(0).leaves.size(), 4u);
  EXPECT_EQ(memberRun(batch, run, 0).outputs->leaves.size(), 2u);
  // An eager failure belongs to the member whose text holds its innermost frame in the batch's file.
  oracles::RunResult failed;
  failed.exception = oracles::ExceptionInfo{"RuntimeError", "builtins.RuntimeError", "boom",
                                            "  File \"/jobs/b.py\", line 9, in forward\n"
                                            "  File \"/x/child.py\", line 3, in call\n"
                                            "  File \"/jobs/b.py\", line 2, in forward\n"};
  EXPECT_EQ(batchMemberOfFailure(batch, "/jobs/b.py", failed), 1);
  EXPECT_EQ(batchMemberOfFailure(batch, "/work/b.py", failed), 1);  // a job runs a copy in its own folder
  EXPECT_EQ(batchMemberOfFailure(batch, "/jobs/other.py", failed), -1);
  // A compiled failure names the frames it was compiling in its message (Inductor's stack_traces).
  oracles::RunResult compiled;
  compiled.exception = oracles::ExceptionInfo{"RuntimeError", "builtins.RuntimeError",
                                              "lowering failed\n  stack_traces = {  File \"/jobs/c/b.py\", line 9, in forward\n"
                                              "  File \"/jobs/c/b.py\", line 1, in forward\n}",
                                              "  File \"/x/child.py\", line 3, in call\n"
                                              "  File \"/jobs/c/b.py\", line 9, in forward\n"};
  EXPECT_EQ(batchMemberOfFailure(batch, "/jobs/b.py", compiled), 0);
  // A failure inside torch's passes: the user frame of the FX node the pass held comes first.
  compiled.exception->nodeStackTrace = "  File \"/jobs/c/b.py\", line 1, in forward\n  File \"/jobs/c/b.py\", line 2, in forward\n";
  EXPECT_EQ(batchMemberOfFailure(batch, "/jobs/b.py", compiled), 1);
  // Without a frame, the one member whose inputs the message names.
  compiled.exception = oracles::ExceptionInfo{"AssertionError", "builtins.AssertionError",
                                              "Guard failed: m1_x2.stride()[1] < m1_x2._base.size()[0]", ""};
  EXPECT_EQ(batchMemberOfFailure(batch, "/jobs/b.py", compiled), 1);
  compiled.exception->message = "Guard failed: m1_x2.size()[0] == m0_x0.size()[0]";  // two members: neither
  EXPECT_EQ(batchMemberOfFailure(batch, "/jobs/b.py", compiled), -1);
}

// A batch whose compiled run was refused as documented (an exported batch's input guard refusing one member's
// size in the call at another size) refuses every member alike: none is a crash mismatch, as none is alone.
// Found in a campaign: the guard named m1_x2, and the batch was recorded as a batch-only crash.
TEST(BatchLeaves, ABatchRefusedAsDocumentedIsRefusedForEveryMember) {
  gen::BatchProgram batch;
  batch.members = {{0, 1, 0, 1, "m0", 1, 1}, {1, 1, 1, 1, "m1", 2, 2}};
  ProgramTestResult whole;
  whole.runs.eager.status = oracles::RunStatus::Ok;
  whole.runs.eager.outputs = oracles::OutputSet{"outputs.safetensors", {}};
  whole.runs.compiled.status = oracles::RunStatus::Exception;
  whole.runs.compiled.phase = "resized-call";
  whole.runs.compiled.exception =
      oracles::ExceptionInfo{"AssertionError", "builtins.AssertionError", "Guard failed: m1_x2.size()[0] % 2 <= 0", ""};
  oracles::Comparator comparator;
  for (int m : {0, 1})
    EXPECT_EQ(batchMemberResult(whole, batch, m, comparator).verdict.verdict, oracles::Verdict::CrashMismatch);
  whole.documentedRefusal = "the exported program's input guard refuses the size (Guard failed: m1_x2.size()[0] % 2 <= 0)";
  whole.verdict = {oracles::Verdict::Agree, "unsupported (documented): " + whole.documentedRefusal, {}};
  for (int m : {0, 1}) {
    ProgramTestResult r = batchMemberResult(whole, batch, m, comparator);
    EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree);
    EXPECT_EQ(r.verdict.reason.rfind("unsupported (documented): ", 0), 0u) << r.verdict.reason;
  }
}

/// The end-to-end fixture's worker pool and settings (tests/ProgramTesterFixture.h), for batches.
class BatchTesterTest : public test_support::ProgramTesterTest {
 protected:
  /// Writes the members alone and as a batch; returns the batch's layout.
  gen::BatchProgram write(const std::vector<gen::Graph>& members, const std::string& name,
                          std::vector<fs::path>& files, fs::path& batchFile) {
    files.clear();
    for (size_t k = 0; k < members.size(); ++k) {
      files.push_back(dir_->path() / fmt::format("{}-{}.py", name, k));
      std::ofstream(files.back()) << emitter_.emit(members[k]);
    }
    gen::BatchProgram batch = gen::emitBatch(emitter_, members, {});
    batchFile = dir_->path() / (name + "-batch.py");
    std::ofstream(batchFile) << batch.py;
    return batch;
  }
  static TestSettings settings(const std::string& backend) {
    TestSettings s = ProgramTesterTest::settings(backend);
    s.cheapChecksFirst = true;  // as campaigns test
    return s;
  }
  gen::OpCatalog catalog_ = gen::makeDefaultCatalog();
  gen::PythonEmitter emitter_{catalog_};
};

// TEST FIXTURE tcfuzz_planted_sigmoid miscompiles aten.sigmoid: only the member that calls it is a finding, judged
// again alone (a fresh process, a cold cache) and confirmed there; the others are judged in the batch.
TEST_F(BatchTesterTest, APlantedBugInOneMemberIsJudgedAgainstThatMemberAlone) {
  std::vector<fs::path> files;
  fs::path batchFile;
  gen::BatchProgram batch =
      write({chain({"sin"}, true), chain({"sigmoid"}, true), chain({"exp", "cos"}, true)}, "one", files, batchFile);
  BatchTester batchTester(*tester_);
  std::vector<BatchMemberResult> results = batchTester.test(batchFile, batch, files, settings("tcfuzz_planted_sigmoid"));
  ASSERT_EQ(results.size(), 3u);
  for (size_t k : {0u, 2u}) {
    EXPECT_EQ(results[k].judgement, BatchJudgement::InBatch) << k;
    EXPECT_EQ(results[k].result.verdict.verdict, oracles::Verdict::Agree) << results[k].result.verdict.reason;
    EXPECT_EQ(results[k].result.program, files[k]);
    EXPECT_GT(results[k].result.torchSeconds, 0.0);
  }
  const ProgramTestResult& bug = results[1].result;
  EXPECT_EQ(results[1].judgement, BatchJudgement::Alone);
  EXPECT_EQ(bug.verdict.verdict, oracles::Verdict::NumericDivergence) << bug.verdict.reason;
  EXPECT_EQ(bug.confirmation, Confirmation::Confirmed);
  EXPECT_EQ(bug.program, files[1]);  // the member's own program, its own run
  EXPECT_EQ(bug.runs.compiled.jobDir.filename().string().find("batch"), std::string::npos);
  ASSERT_TRUE(bug.runs.compiled.outputs);
  EXPECT_EQ(bug.runs.compiled.outputs->leaves.size(), results[0].result.runs.compiled.outputs->leaves.size());
  EXPECT_GT(bug.torchSeconds, results[0].result.torchSeconds);  // its alone run is its own cost
}

// With real torch.compile: a member whose schedule changes a module global between calls recompiles its own frame,
// not the plain member's, whose op Inductor lowers once over the batch's calls.
TEST_F(BatchTesterTest, AMembersStateChangesRecompileOnlyItsOwnFrame) {
  gen::Graph stepped = chain({"exp"}, true);
  stepped.nodes[1].python.outputState = "offset";  // forward reads OFFSET, which the schedule sets twice
  stepped.schedule = {{"global", 0.25}, {"global", 2}};
  ASSERT_TRUE(gen::changesStateBetweenCalls(stepped, catalog_));
  std::vector<fs::path> files;
  fs::path batchFile;
  gen::BatchProgram batch = write({chain({"tanh"}, true), stepped}, "frames", files, batchFile);
  BatchTester batchTester(*tester_);
  std::vector<BatchMemberResult> results = batchTester.test(batchFile, batch, files, settings("inductor"));
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    EXPECT_EQ(r.judgement, BatchJudgement::InBatch);
    EXPECT_EQ(r.result.verdict.verdict, oracles::Verdict::Agree) << r.result.verdict.reason;
  }
  const auto& facts = results[0].result.runs.compiled.compileFacts;
  ASSERT_TRUE(facts);
  // The first step recompiles member 1's frame (the second finds OFFSET dynamic by then): exp is lowered again, tanh
  // not; with both members in one frame, tanh was lowered twice.
  EXPECT_GE(facts->recompiles, 1);
  EXPECT_GE(facts->lowerings.at("aten.exp.default"), 2);
  EXPECT_EQ(facts->lowerings.at("aten.tanh.default"), 1);
}

// Through AOTInductor the batch is one package of independent members: each member's leaves, calls 2 and 3
// included, agree on their own.
TEST_F(BatchTesterTest, AnAotInductorBatchJudgesEachMember) {
  std::vector<fs::path> files;
  fs::path batchFile;
  gen::BatchProgram batch = write({chain({"sin"}, true), chain({"exp", "cos"})}, "aoti", files, batchFile);
  TestSettings s = settings("inductor");
  s.compile.entry = oracles::kAotiEntry;
  BatchTester batchTester(*tester_);
  std::vector<BatchMemberResult> results = batchTester.test(batchFile, batch, files, s);
  ASSERT_EQ(results.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(results[k].judgement, BatchJudgement::InBatch) << k;
    EXPECT_EQ(results[k].result.verdict.verdict, oracles::Verdict::Agree) << results[k].result.verdict.reason;
    ASSERT_TRUE(results[k].result.runs.compiled.outputs);
    int roles = 0;
    for (const auto& leaf : results[k].result.runs.compiled.outputs->leaves)
      roles += leaf.role == "second-call" || leaf.role == "fresh-inputs";
    EXPECT_EQ(roles, 2) << k;  // its own output in calls 2 and 3
  }
}

// TEST FIXTURES tcfuzz_planted_cumsum_raise_traced and _in_pass fail compiling any graph with aten.cumsum, the first's
// message naming the frame (as Inductor's lowering errors do), the second raised in a pass that holds the node (its
// user frame found by the worker): the batch's compiled job fails at member 1's text, member 1 alone fails the same
// way and is its finding, and the others are batched again and judged there, not each alone.
TEST_F(BatchTesterTest, ACompiledFailureAtOneMembersTextIsThatMembersAndTheOthersAreBatchedAgain) {
  gen::Graph summed = chain({"exp"});
  int y = summed.addValue({{3, 4}, gen::DType::Float32});
  summed.nodes.push_back({"cumsum", {summed.outputs[0]}, {y}, {{"dim", 1}}});
  summed.outputs = {y};
  std::vector<gen::Graph> members{chain({"sin"}, true), summed, chain({"cos"}, true), chain({"tanh"})};
  for (const char* backend : {"tcfuzz_planted_cumsum_raise_traced", "tcfuzz_planted_cumsum_raise_in_pass"}) {
    SCOPED_TRACE(backend);
    std::vector<fs::path> files;
    fs::path batchFile;
    gen::BatchProgram batch = write(members, backend, files, batchFile);
    BatchTester batchTester(*tester_);
    int rebatched = 0;
    BatchTester::Rebatch rebatch = [&](const std::vector<int>& keep) {
      ++rebatched;
      std::vector<gen::Graph> kept;
      for (int m : keep) kept.push_back(members[static_cast<size_t>(m)]);
      gen::BatchProgram again = gen::emitBatch(emitter_, kept, {});
      fs::path file = dir_->path() / fmt::format("crash-{}-again-{}.py", backend, rebatched);
      std::ofstream(file) << again.py;
      return std::make_pair(file, again);
    };
    std::vector<BatchMemberResult> results = batchTester.test(batchFile, batch, files, settings(backend), rebatch);
    ASSERT_EQ(results.size(), 4u);
    EXPECT_EQ(rebatched, 1);
    EXPECT_EQ(results[1].judgement, BatchJudgement::Alone);
    EXPECT_EQ(results[1].result.verdict.verdict, oracles::Verdict::CrashMismatch) << results[1].result.verdict.reason;
    EXPECT_EQ(results[1].result.confirmation, Confirmation::Confirmed);
    EXPECT_EQ(results[1].result.program, files[1]);
    for (size_t k : {0u, 2u, 3u}) {
      EXPECT_EQ(results[k].judgement, BatchJudgement::InBatch) << k;
      EXPECT_EQ(results[k].result.verdict.verdict, oracles::Verdict::Agree) << k << ": " << results[k].result.verdict.reason;
    }
  }
}

// TEST FIXTURE tcfuzz_planted_cumsum_raise fails compiling any graph with aten.cumsum and names no frame: the batch's
// compiled job fails as a whole, at no member's text. Each member is then tested as it would be unbatched, in a warm
// child: member 1's failure holds and is confirmed fresh and cold by the tester; the others agree there.
TEST_F(BatchTesterTest, ACompiledFailureNamingNoMemberTestsEachMemberAsUnbatched) {
  gen::Graph summed = chain({"exp"});
  int y = summed.addValue({{3, 4}, gen::DType::Float32});
  summed.nodes.push_back({"cumsum", {summed.outputs[0]}, {y}, {{"dim", 1}}});
  summed.outputs = {y};
  std::vector<fs::path> files;
  fs::path batchFile;
  gen::BatchProgram batch = write({chain({"sin"}, true), summed, chain({"cos"})}, "whole", files, batchFile);
  TestSettings s = settings("tcfuzz_planted_cumsum_raise");
  s.persistent = true;  // as campaigns test
  s.confirmFindings = true;
  BatchTester batchTester(*tester_);
  std::vector<BatchMemberResult> results = batchTester.test(batchFile, batch, files, s);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[1].judgement, BatchJudgement::Alone);
  EXPECT_EQ(results[1].result.verdict.verdict, oracles::Verdict::CrashMismatch) << results[1].result.verdict.reason;
  EXPECT_EQ(results[1].result.confirmation, Confirmation::Confirmed);
  EXPECT_GT(results[1].result.confirmSeconds, 0.0);  // a test as unbatched, then the tester's fresh cold confirmation
  for (size_t k : {0u, 2u}) {
    const ProgramTestResult& r = results[k].result;
    EXPECT_EQ(results[k].judgement, BatchJudgement::NotAlone) << k;
    EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << k << ": " << r.verdict.reason;
    EXPECT_NE(r.verdict.reason.find("is another member's"), std::string::npos) << r.verdict.reason;
    EXPECT_EQ(r.program, files[k]);
    EXPECT_EQ(r.confirmation, Confirmation::NotChecked) << k;
  }
}

// Members with Python constructs under real torch.compile: a graph break, call counters, a branch on the call count,
// a closure cell, call schedules and process-wide hooks, each member's own, beside a member with a random op. Each
// member agrees in the batch (the random one by dtype and shape), its Python state is compared under its submodule's name, each call
// starts from the member's state as built (call 2 repeats call 1: the branch on the call count takes the same arm),
// as it does alone, and the batch's schedule makes each member's steps.
TEST_F(BatchTesterTest, MembersWithPythonConstructsAreJudgedAsTheyAreAlone) {
  std::vector<gen::Graph> members = statefulPrograms(true);
  members[0].nodes[1].python.graphBreakBefore = true;
  members.push_back(chain({"dropout", "sin"}));  // a random op: its draws taint only its own member's leaves
  members.back().nodes[0].attrs = {{"p", 0.5}};
  members.push_back(chain({"cos"}, true));  // process-wide hooks, each acting on its own member
  members.back().hook = "global-pre";
  members[0].hook = "global-forward";
  std::vector<fs::path> files;
  fs::path batchFile;
  gen::BatchProgram batch = write(members, "python", files, batchFile);
  BatchTester batchTester(*tester_);
  std::vector<BatchMemberResult> results = batchTester.test(batchFile, batch, files, settings("inductor"));
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[2].judgement, BatchJudgement::InBatch);
  EXPECT_EQ(results[2].result.verdict.verdict, oracles::Verdict::RandomOnly) << results[2].result.verdict.reason;
  EXPECT_EQ(results[3].judgement, BatchJudgement::InBatch);
  EXPECT_EQ(results[3].result.verdict.verdict, oracles::Verdict::Agree) << results[3].result.verdict.reason;
  int recorded = 0;
  for (const auto& leaf : results[3].result.runs.compiled.outputs->leaves)
    recorded += leaf.name == "m3.global MODULE_CALLS_3 after forward";
  EXPECT_EQ(recorded, 1);
  for (size_t k = 0; k < 2; ++k) {
    const ProgramTestResult& r = results[k].result;
    EXPECT_EQ(results[k].judgement, BatchJudgement::InBatch) << k;
    EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
    ASSERT_TRUE(r.runs.eager.outputs);
    std::string own = fmt::format("m{}.", k), other = fmt::format("m{}.", 1 - k);
    int state = 0;
    for (const auto& leaf : r.runs.eager.outputs->leaves) {
      if (leaf.role != "python-state") continue;
      EXPECT_EQ(leaf.name.rfind(own, 0), 0u) << leaf.name;  // its own state only
      state += leaf.name == own + "self.calls after forward";
      if (leaf.name == own + "self.calls after forward") EXPECT_EQ(leaf.repr, "1");  // one call since the state as built
    }
    EXPECT_EQ(state, 1) << k;
  }
  // Member 1's output in call 2 is its call 1's: its counter was restored to the state as built in between.
  const oracles::RunResult& eager = results[1].result.runs.eager;
  oracles::LoadedOutputs loaded = oracles::loadOutputs(*eager.outputs, eager.jobDir);
  std::optional<at::Tensor> first, second;
  std::string names;
  for (const auto& leaf : loaded.leaves) {  // member 1's own leaves: its output is the first output leaf
    names += leaf.role + ": " + leaf.name + "\n";
    if (leaf.role == "output" && !first) first = loaded.tensors.at(leaf.index);
    if (leaf.role == "second-call" && leaf.name.ends_with(fmt::format("output {}", batch.members[1].firstOutput)))
      second = loaded.tensors.at(leaf.index);
  }
  ASSERT_TRUE(first && second) << names;
  EXPECT_TRUE(first->equal(*second));
  // The batch's schedule changed member 0's global in its two steps, and called member 1 in both.
  const oracles::RunResult& eager0 = results[0].result.runs.eager;
  oracles::LoadedOutputs loaded0 = oracles::loadOutputs(*eager0.outputs, eager0.jobDir);
  std::vector<double> offsets;
  int scheduled = 0;
  for (const auto& leaf : loaded0.leaves)
    if (leaf.role == "schedule" && leaf.name.ends_with("): m0.global OFFSET_0"))
      offsets.push_back(loaded0.tensors.at(leaf.index).item<double>());
  for (const auto& leaf : loaded.leaves)
    scheduled += leaf.role == "schedule" && leaf.name.ends_with(fmt::format("output {}", batch.members[1].firstOutput));
  EXPECT_EQ(offsets, (std::vector<double>{0.25, 2.0})) << names;
  EXPECT_EQ(scheduled, 2) << names;
}

// TEST FIXTURE tcfuzz_planted_two_sigmoids miscompiles sigmoid only in a graph with two of them: each member alone
// agrees, the batch holds the fault again in a fresh cold run, so both members are batch-only, with their batch.
TEST_F(BatchTesterTest, AFaultOnlyTheBatchShowsIsBatchOnly) {
  std::vector<fs::path> files;
  fs::path batchFile;
  gen::BatchProgram batch = write({chain({"sigmoid"}, true), chain({"sin", "sigmoid"}, true), chain({"cos"}, true)},
                                  "two", files, batchFile);
  BatchTester batchTester(*tester_);
  std::vector<BatchMemberResult> results =
      batchTester.test(batchFile, batch, files, settings("tcfuzz_planted_two_sigmoids"));
  ASSERT_EQ(results.size(), 3u);
  for (size_t k : {0u, 1u}) {
    EXPECT_EQ(results[k].judgement, BatchJudgement::BatchOnly) << results[k].result.verdict.reason;
    EXPECT_EQ(results[k].result.verdict.verdict, oracles::Verdict::NumericDivergence);
    EXPECT_EQ(results[k].result.verdict.reason.rfind("batch-only (member " + std::to_string(k) + " alone agrees", 0), 0u)
        << results[k].result.verdict.reason;
    EXPECT_EQ(results[k].batch, (std::vector<int>{0, 1, 2}));
  }
  EXPECT_EQ(results[2].judgement, BatchJudgement::InBatch);
  EXPECT_EQ(results[2].result.verdict.verdict, oracles::Verdict::Agree);
}

// TEST FIXTURE tcfuzz_planted_refused_alone miscompiles two sigmoids in one graph and refuses one as documented: each
// member alone was refused, never judged, so the batch's divergence is not batch-only (as an export guard once did).
TEST_F(BatchTesterTest, AMemberRefusedAloneIsNotBatchOnly) {
  std::vector<fs::path> files;
  fs::path batchFile;
  gen::BatchProgram batch = write({chain({"sigmoid"}, true), chain({"sin", "sigmoid"}, true)}, "refused", files, batchFile);
  TestSettings s = settings("tcfuzz_planted_refused_alone");
  s.compile.fullgraph = true;
  std::vector<BatchMemberResult> results = BatchTester(*tester_).test(batchFile, batch, files, s);
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    EXPECT_EQ(r.judgement, BatchJudgement::NotAlone) << r.result.verdict.reason;
    EXPECT_EQ(r.result.verdict.verdict, oracles::Verdict::Agree) << r.result.verdict.reason;
    EXPECT_NE(r.result.verdict.reason.find("a graph break under fullgraph=True"), std::string::npos)
        << r.result.verdict.reason;
    EXPECT_NE(r.result.verdict.reason.find("numeric-divergence is not batch-only: alone it was refused, not judged"),
              std::string::npos)
        << r.result.verdict.reason;
    EXPECT_TRUE(r.batch.empty());
  }
}

// Triage of a batch-only finding drops whole members while the fault holds (fresh, cold), names the members it
// needs and writes their batch: here the cos member is not needed, both sigmoid members are (TEST FIXTURE
// tcfuzz_planted_two_sigmoids needs two sigmoids in one graph).
TEST_F(BatchTesterTest, TriageOfABatchOnlyFindingDropsTheMembersItDoesNotNeed) {
  TempDir campaign("tcfuzz-batch-triage");
  FindingStore store(campaign.path() / "findings.sqlite");
  std::vector<gen::Graph> members{chain({"cos"}, true), chain({"sigmoid"}, true), chain({"sin", "sigmoid"}, true)};
  json heldIn{{"programs", {"program 000001", "program 000002", "program 000003"}}, {"member", 1},
              {"members", json::array()}};
  for (const auto& g : members) heldIn["members"].push_back(g.toJson());
  ProgramRecord program{2, "h2", "grammar", "", "{}", "numeric-divergence", "", 0, 1, 1, 100, "{}"};
  FindingRecord f;
  f.programIndex = 2;
  f.foundAt = 100;
  f.verdict = "numeric-divergence";
  f.signatureId = "sig-two";
  f.signature = R"({"symptom": "numeric-divergence", "kind": "batch-only numeric", "ops": ["sigmoid"]})";
  f.config = json{{"backend", "tcfuzz_planted_two_sigmoids"}}.dump();
  f.programJson = members[1].toJson().dump();
  f.programPy = gen::emitBatch(emitter_, members, {}).py;
  f.result = json{{"seed", 0}, {"batch", {{"size", 3}, {"member", 1}, {"judged", "batch-only"}, {"held_in", heldIn}}}}.dump();
  // The same batch under plain Inductor: nothing is planted, so its fresh cold batch agrees.
  FindingRecord none = f;
  none.signatureId = "sig-none";
  none.config = json{{"backend", "inductor"}}.dump();
  std::vector<FindingRecord> found{f, none};
  store.recordProgram(program, found, {}, std::nullopt);
  TriageSettings ts;
  ts.test = settings("inductor");
  ts.minimizer.maxCandidates = 6;  // enough to take the sin out of the third member (its first candidates)
  Triage triage(catalog_, ts, campaign.path(), store, tester_, [](const std::string&) {});
  TriageRecord row = triage.triageSignature("sig-two");
  ASSERT_EQ(row.status, "batch-only") << row.data;
  json data = json::parse(row.data);
  EXPECT_EQ(data["needed"]["reproduced"], true) << data;
  EXPECT_EQ(data["needed"]["programs"], (json{"program 000002", "program 000003"})) << data;
  EXPECT_EQ(data["needed"]["tries"], 2);  // the whole batch, then without the cos member
  EXPECT_GE(data["needed"]["shrink_tries"], 1);
  EXPECT_LE(data["needed"]["shrink_tries"], 6);
  // Shrunk inside the batch (the third member first): its add and sin go (two sigmoids are the fault), no sigmoid does.
  EXPECT_EQ(data["needed"]["nodes"]["before"], 5) << data;
  EXPECT_LE(data["needed"]["nodes"]["after"], 3) << data;
  std::string needed = test_support::readText(campaign.path() / "crashes" / "sig-two" / "batch_needed.py");
  EXPECT_NE(needed.find("2 independent programs"), std::string::npos) << needed;
  EXPECT_EQ(needed.find("torch.cos"), std::string::npos) << needed;
  EXPECT_EQ(needed.find("torch.sin("), std::string::npos) << needed;
  EXPECT_NE(needed.find("sigmoid"), needed.rfind("sigmoid")) << needed;  // one in each member
  std::string note = test_support::readText(campaign.path() / "crashes" / "sig-two" / "batch_only.md");
  EXPECT_NE(note.find("- program 000002 (the member whose leaves differ): "), std::string::npos) << note;
  EXPECT_NE(note.find("- program 000003: 1 nodes\n"), std::string::npos) << note;
  // A batch-only finding its batch no longer shows is unreproducible, as any finding its replay does not show.
  TriageRecord gone = triage.triageSignature("sig-none");
  EXPECT_EQ(gone.status, "unreproducible") << gone.data;
  EXPECT_EQ(json::parse(gone.data)["needed"]["reproduced"], false);
  EXPECT_FALSE(fs::exists(campaign.path() / "crashes" / "sig-none" / "batch_needed.py"));
}

}  // namespace
}  // namespace tcfuzz
