// Batched compiles, without a worker: the batch program's layout (generators/python/BatchProgram.h): each member its
// program under its own names and place, its constructs kept or its op graph, the frames members are called in, the
// batch's room; and which member each saved leaf belongs to (fuzzer/worker/BatchTester.h). The worker-level tests
// with real torch.compile are in test_BatchTester.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fuzzer/worker/BatchTester.h"
#include "generators/Generator.h"
#include "generators/python/BatchProgram.h"
#include "generators/python/PythonConstructs.h"
#include "tests/BatchGraphs.h"

namespace tcfuzz {
namespace {

using nlohmann::json;
using test_support::chain;
using test_support::statefulPrograms;

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

}  // namespace
}  // namespace tcfuzz
