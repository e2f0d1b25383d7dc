// Python-level constructs: what generation draws, which constructs hold after a transform, the Python the
// emitter writes for them, their JSON form and the policy. Running such programs through the workers:
// test_ProgramTester.cpp (PythonStatePrograms).
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "generators/Generator.h"
#include "generators/python/PythonEmitter.h"
#include "generators/python/PythonConstructs.h"
#include "generators/python/PythonForms.h"
#include "generators/ir/ProgramFigures.h"

namespace tcfuzz::gen {
namespace {

using nlohmann::json;

class PythonConstructsTest : public ::testing::Test {
 protected:
  OpCatalog catalog = makeDefaultCatalog();

  /// x0 [4] float32 -> tanh -> returned; x0 -> exp -> neg -> returned (exp's output is read again).
  Graph smallProgram() {
    Graph g;
    int x0 = g.addValue({{4}, DType::Float32});
    g.inputs.push_back({x0, "x0", {"uniform", -2, 2}});
    int t = g.addValue({{4}, DType::Float32});
    g.nodes.push_back({"tanh", {x0}, {t}});
    int e = g.addValue({{4}, DType::Float32});
    g.nodes.push_back({"exp", {x0}, {e}});
    int n = g.addValue({{4}, DType::Float32});
    g.nodes.push_back({"neg", {e}, {n}});
    g.outputs = {t, n};
    return g;
  }
};

TEST_F(PythonConstructsTest, TheDefaultPolicyMeetsTheProgramShareTargets) {
  // At the default policy: 40% of programs hold a Python-level construct, 10% a graph break, 10% write
  // Python state, 10% a schedule of 2 calls or more with a state change; every drawn construct holds.
  Generator gen(catalog, GenPolicy{}, 11);
  int any = 0, breaks = 0, writes = 0, schedules = 0, branches = 0;
  constexpr int kPrograms = 300;
  for (uint64_t i = 0; i < kPrograms; ++i) {
    Graph g = gen.generate(i);
    PythonPlan plan = planPythonConstructs(g, catalog);
    for (size_t k = 0; k < g.nodes.size(); ++k) EXPECT_EQ(plan.nodes[k], g.nodes[k].python) << "program " << i << " node " << k;
    EXPECT_EQ(plan.schedule, g.schedule) << "program " << i;
    any += plan.anyConstruct();
    breaks += plan.graphBreak();
    writes += plan.mutatesState();
    schedules += !plan.schedule.empty();
    branches += std::any_of(plan.nodes.begin(), plan.nodes.end(), [](const NodePython& p) { return p.branch.has_value(); });
  }
  EXPECT_GE(any, kPrograms * 40 / 100);
  EXPECT_GE(breaks, kPrograms * 10 / 100);
  EXPECT_GE(writes, kPrograms * 10 / 100);
  EXPECT_GE(schedules, kPrograms * 10 / 100);
  EXPECT_GE(branches, kPrograms * 10 / 100);
}

TEST_F(PythonConstructsTest, ConstructsDrawFromTheirOwnStreamSoTheOpGraphStaysTheSame) {
  GenPolicy none;
  none.pythonConstructs = PythonConstructChances::fromJson(
      {{"graph_break", 0}, {"branch", 0}, {"output_state", 0}, {"counter", 0}, {"loop", 0}, {"form", 0}, {"hook", 0}, {"schedule", 0}, {"hop", 0}});
  Generator with(catalog, GenPolicy{}, 7), without(catalog, none, 7);
  int differing = 0;
  for (uint64_t i = 0; i < 40; ++i) {
    Graph a = with.generate(i), b = without.generate(i);
    EXPECT_TRUE(b.schedule.empty());
    EXPECT_TRUE(b.hook.empty());
    for (Node& n : a.nodes) n.python = {};
    a.schedule.clear();
    a.hook.clear();
    EXPECT_EQ(a.contentHash(), b.contentHash()) << "program " << i;
    differing += with.generate(i).contentHash() != b.contentHash();
  }
  EXPECT_GT(differing, 10);
}

TEST_F(PythonConstructsTest, TheEmitterWritesEachConstruct) {
  Graph g = smallProgram();
  g.nodes[0].python.branch = BranchTest{"item", 0, 0.25};
  g.nodes[0].python.outputState = "scale";
  g.nodes[1].python.graphBreakBefore = true;
  g.nodes[1].python.counter = true;
  g.nodes[2].python.outputState = "offset";
  g.schedule = {{"class-attr", 0.5}, {"global", -1.25}, {"instance-attr", 2.0}};
  std::string py = PythonEmitter(catalog).emit(g);
  for (const char* expected : {
           "OFFSET = 0.5\nCALLS = 0\n",
           "class Model(nn.Module):\n    scale = 2.0",
           "        self.calls = 0\n        self.trace = []\n",
           "        global CALLS\n",
           "        if x0.flatten()[0].item() > 0.25:\n            v1 = torch.tanh(x0)  # [4] float32\n"
           "        else:  # the other arm: the output rolled by one\n            v1 = (torch.tanh(x0)).roll(1)  # [4] float32\n"
           "        v1 = v1 * self.scale\n",
           "        CALLS += 1\n        self.calls += 1\n        self.trace.append(self.calls)\n"
           "        torch._dynamo.graph_break()\n        v2 = torch.exp(x0)",
           "        v3 = v3 + OFFSET\n",
           "def change_1(model):\n    \"\"\"Model.scale = 0.5 (a class attribute)\"\"\"\n    Model.scale = 0.5\n",
           "def change_2(model):\n    \"\"\"OFFSET = -1.25 (a module global)\"\"\"\n    global OFFSET\n    OFFSET = -1.25\n",
           "    model.scale = 2.0\n",
           "SCHEDULE = [change_1, change_2, change_3]\nSTATE_GLOBALS = (\"OFFSET\", \"CALLS\")\n"})
    EXPECT_NE(py.find(expected), std::string::npos) << "missing:\n" << expected << "\nin:\n" << py;
}

TEST_F(PythonConstructsTest, LoopsAndHooksAreWrittenAndAScheduleStepRemovesTheHook) {
  Graph g = smallProgram();
  g.nodes[0].python.form = "enumerate";
  g.hook = "forward-pre";
  g.schedule = {{"remove-hook", 0}};
  std::string py = PythonEmitter(catalog).emit(g);
  for (const char* expected : {
           "        v1 = torch.tanh(x0)  # [4] float32\n        parts = []\n"
           "        for i, part in enumerate(v1.unbind(0)):  # a loop over dim 0 that fills a list\n"
           "            parts.append(part * (i % 3 + 1))\n        v1 = torch.stack(parts)\n",
           "def record_input_shapes(module, args):",
           "        self.seen = []\n        self._hook = self.register_forward_pre_hook(record_input_shapes)\n",
           "    \"\"\"the forward-pre hook removed\"\"\"\n    model._hook.remove()\n"})
    EXPECT_NE(py.find(expected), std::string::npos) << "missing:\n" << expected << "\nin:\n" << py;
  EXPECT_TRUE(planPythonConstructs(g, catalog).mutatesState());  // the pre-hook appends to self.seen
  g.hook = "forward";
  EXPECT_NE(PythonEmitter(catalog).emit(g).find("self._hook = self.register_forward_hook(double_floating_outputs)"), std::string::npos);
  // The process-wide hooks: one at a time per process, the pre-hook's list a compared global.
  g.hook = "global-pre";
  py = PythonEmitter(catalog).emit(g);
  for (const char* expected : {
           "MODULE_CALLS = []  # the global pre-hook appends each module call's class name\n"
           "GLOBAL_HOOK = None  # the handle of the one global hook this program registers\n",
           "    if not isinstance(module, (torch._dynamo.eval_frame.OptimizedModule, torch.fx.GraphModule)):  # compiler-made\n"
           "        MODULE_CALLS.append(type(module).__name__)\n",
           "        global GLOBAL_HOOK\n"
           "        if GLOBAL_HOOK is not None:  # a model built again in this process: one global hook at a time\n"
           "            GLOBAL_HOOK.remove()\n"
           "        GLOBAL_HOOK = torch.nn.modules.module.register_module_forward_pre_hook(record_module_calls)\n"
           "        self._hook = GLOBAL_HOOK\n",
           "    \"\"\"the global-pre hook removed\"\"\"\n    model._hook.remove()\n",
           "STATE_GLOBALS = (\"MODULE_CALLS\",)\n"})
    EXPECT_NE(py.find(expected), std::string::npos) << "missing:\n" << expected << "\nin:\n" << py;
  EXPECT_TRUE(planPythonConstructs(g, catalog).mutatesState());
  g.hook = "global-forward";
  py = PythonEmitter(catalog).emit(g);
  EXPECT_NE(py.find("GLOBAL_HOOK = torch.nn.modules.module.register_module_forward_hook(double_model_outputs)"), std::string::npos);
  EXPECT_NE(py.find("    if not isinstance(module, Model):  # submodules and the compiled wrapper keep their outputs\n"),
            std::string::npos);
  EXPECT_EQ(py.find("MODULE_CALLS"), std::string::npos);
  EXPECT_EQ(Graph::fromJson(g.toJson()).hook, "global-forward");  // the IR keeps it
  g.hook = "forward";
  // A loop needs an element along dim 0 (torch.stack refuses an empty list).
  g.typeOf(1).shape = {0};
  EXPECT_TRUE(planPythonConstructs(g, catalog).nodes[0].form.empty());
  g.nodes[0].python.form = "dict";  // a form that iterates nothing holds on an empty dim 0
  EXPECT_EQ(planPythonConstructs(g, catalog).nodes[0].form, "dict");
}

TEST_F(PythonConstructsTest, ConstructsThatNoLongerHoldAreLeftOutNeverWrittenWrong) {
  Graph g = smallProgram();
  // exp's output is read by neg: a branch or state on it would change what neg relies on.
  g.nodes[1].python.branch = BranchTest{"flag", 0, 0};
  g.nodes[1].python.outputState = "scale";
  // Operand 3 does not exist; neg's operand is no program input, so rounding could pick its arm.
  g.nodes[0].python.branch = BranchTest{"tensor", 3, 0.5};
  g.nodes[2].python.branch = BranchTest{"item", 0, 0.5};
  g.schedule = {{"class-attr", 0.5}, {"flag", 0}, {"global", 1}};
  PythonPlan plan = planPythonConstructs(g, catalog);
  EXPECT_FALSE(plan.nodes[0].branch);
  EXPECT_FALSE(plan.nodes[1].branch);
  EXPECT_TRUE(plan.nodes[1].outputState.empty());
  EXPECT_FALSE(plan.nodes[2].branch);
  EXPECT_TRUE(plan.schedule.empty());  // no state the steps could change
  EXPECT_FALSE(plan.anyConstruct());
  std::string py = PythonEmitter(catalog).emit(g);
  EXPECT_EQ(py.find("if "), std::string::npos) << py;
  EXPECT_EQ(py.find("SCHEDULE"), std::string::npos) << py;

  // A "calls" test needs the counter; with it, the branch holds.
  Graph c = smallProgram();
  c.nodes[0].python.branch = BranchTest{"calls", 0, 0};
  EXPECT_FALSE(planPythonConstructs(c, catalog).nodes[0].branch);
  c.nodes[1].python.counter = true;
  EXPECT_TRUE(planPythonConstructs(c, catalog).nodes[0].branch);
  EXPECT_NE(PythonEmitter(catalog).emit(c).find("        if self.calls % 2 == 1:\n"), std::string::npos);
}

TEST_F(PythonConstructsTest, ATrainingBranchIsWrittenAndOnlyItLetsAScheduleStepCallTrain) {
  // The model runs in eval() as built, so `if self.training:` takes the else arm until a schedule step
  // calls model.train(not model.training); without such a branch, that step has nothing to change.
  Graph g = smallProgram();
  g.schedule = {{"train-mode", 0}, {"train-mode", 0}};
  EXPECT_TRUE(planPythonConstructs(g, catalog).schedule.empty());
  g.nodes[2].python.branch = BranchTest{"training", 0, 0};
  PythonPlan plan = planPythonConstructs(g, catalog);
  ASSERT_TRUE(plan.nodes[2].branch);
  EXPECT_TRUE(plan.training);
  EXPECT_EQ(plan.schedule.size(), 2u);
  EXPECT_FALSE(plan.mutatesState());  // forward reads the flag only
  std::string py = PythonEmitter(catalog).emit(g);
  for (const char* expected :
       {"        if self.training:\n",
        "def change_1(model):\n    \"\"\"model.train(not model.training): eval() to train() and back\"\"\"\n"
        "    model.train(not model.training)\n",
        "SCHEDULE = [change_1, change_2]\n"})
    EXPECT_NE(py.find(expected), std::string::npos) << "missing:\n" << expected << "\nin:\n" << py;
  EXPECT_EQ(Graph::fromJson(g.toJson()).schedule, g.schedule);
  // The generator draws the kind and the step when the policy asks for nothing else.
  GenPolicy policy;
  policy.pythonConstructs.branch = 1.0;
  policy.pythonConstructs.schedule = 1.0;
  policy.pythonConstructs.branchWeights = {{"training", 1}};
  Generator generator(catalog, policy, 7);
  int trainingBranches = 0, trainSteps = 0;
  for (uint64_t i = 0; i < 30; ++i) {
    Graph p = generator.generate(i);
    for (const Node& n : p.nodes) trainingBranches += n.python.branch && n.python.branch->kind == "training";
    for (const ScheduleStep& s : p.schedule) trainSteps += s.change == "train-mode";
  }
  EXPECT_GT(trainingBranches, 10);
  EXPECT_GT(trainSteps, 0);
}

TEST_F(PythonConstructsTest, TheJsonFormKeepsEveryConstructAndRejectsUnknownOnes) {
  Graph g = smallProgram();
  g.nodes[0].python = {true, BranchTest{"tensor", 0, -0.5}, "offset", true, "enumerate"};
  g.schedule = {{"global", 0.75}, {"flag", 0}, {"remove-hook", 0}};
  g.hook = "forward";
  Graph back = Graph::fromJson(g.toJson());
  EXPECT_EQ(back.nodes[0].python, g.nodes[0].python);
  EXPECT_EQ(back.schedule, g.schedule);
  EXPECT_EQ(back.hook, "forward");
  EXPECT_NE(back.contentHash(), smallProgram().contentHash());
  EXPECT_EQ(Graph::fromJson(smallProgram().toJson()).contentHash(), smallProgram().contentHash());
  json doc = g.toJson();
  doc["nodes"][0]["python"]["branch"]["kind"] = "while";
  EXPECT_THROW(
      {
        try {
          Graph::fromJson(doc, "p.json");
        } catch (const GraphFormatError& e) {
          EXPECT_NE(std::string(e.what()).find("/nodes/0/python/branch/kind: unknown branch test 'while'"), std::string::npos)
              << e.what();
          throw;
        }
      },
      GraphFormatError);
  doc = g.toJson();
  doc["schedule"][0]["change"] = "train";
  EXPECT_THROW(Graph::fromJson(doc), GraphFormatError);
  // The first loop form keeps its older key, so programs written before forms had names hash the same.
  EXPECT_EQ(g.toJson()["nodes"][0]["python"]["loop"], true);
  g.nodes[0].python.form = "dataclass";
  doc = g.toJson();
  EXPECT_EQ(doc["nodes"][0]["python"]["form"], "dataclass");
  EXPECT_EQ(Graph::fromJson(doc).nodes[0].python.form, "dataclass");
  doc["nodes"][0]["python"]["form"] = "coroutine";
  EXPECT_THROW(Graph::fromJson(doc), GraphFormatError);
  doc["nodes"][0]["python"]["form"] = "zip";
  doc["nodes"][0]["python"]["loop"] = true;  // two forms on one node
  EXPECT_THROW(Graph::fromJson(doc), GraphFormatError);
}

TEST_F(PythonConstructsTest, EveryFormIsWrittenWithItsModuleTextOnceAndItsStateCompared) {
  // The table names every form the IR accepts, in the same order.
  std::vector<std::string> tableNames;
  for (const PythonForm& f : pythonForms()) tableNames.emplace_back(f.name);
  EXPECT_EQ(tableNames, pythonFormNames());
  // Two nodes with a form each, over every pair of forms, so each module text must be written once.
  for (const std::string& first : pythonFormNames()) {
    Graph g = smallProgram();
    g.nodes[0].python.form = first;
    g.nodes[2].python.form = first == "dataclass" ? "dict-state" : "dataclass";
    PythonPlan plan = planPythonConstructs(g, catalog);
    EXPECT_EQ(plan.nodes[0].form, first);
    std::string py = PythonEmitter(catalog).emit(g);
    EXPECT_NE(py.find(formForwardText(pythonForm(first), "v1")), std::string::npos) << py;
    size_t at = py.find("class Carry:");
    ASSERT_NE(at, std::string::npos) << py;
    EXPECT_EQ(py.find("class Carry:", at + 1), std::string::npos) << py;
    EXPECT_NE(py.find("\nimport dataclasses\n"), std::string::npos) << py;
    EXPECT_EQ(plan.mutatesState(), first == "closure-state" || first == "dict-state" || first == "dataclass") << first;
  }
  // The state forms: a global whose closure cells the oracle reads, a dict the schedule may clear.
  Graph g = smallProgram();
  g.nodes[0].python.form = "closure-state";
  g.nodes[2].python.form = "dict-state";
  g.schedule = {{"clear-cache", 0}};
  PythonPlan plan = planPythonConstructs(g, catalog);
  EXPECT_EQ(plan.stateGlobals(), (std::vector<std::string>{"TALLY"}));
  EXPECT_EQ(plan.schedule.size(), 1u);
  std::string py = PythonEmitter(catalog).emit(g);
  for (const char* expected :
       {"TALLY = make_tally()\n", "        self.cache = {}", "        v1 = TALLY(v1)",
        "        self.cache = remember(self.cache, len(self.cache), tuple(v3.shape))\n",
        "    \"\"\"model.cache.clear() (the dict forward passes to remember)\"\"\"\n    model.cache.clear()\n",
        "STATE_GLOBALS = (\"TALLY\",)\n"})
    EXPECT_NE(py.find(expected), std::string::npos) << "missing:\n" << expected << "\nin:\n" << py;
  g.nodes[2].python.form.clear();  // without the dict, the step has nothing to clear
  EXPECT_TRUE(planPythonConstructs(g, catalog).schedule.empty());
  // A step that flips requires_grad returns the function the worker applies to the call's inputs.
  g.schedule = {{"requires-grad", 0}};
  ASSERT_EQ(planPythonConstructs(g, catalog).schedule.size(), 1u);
  py = PythonEmitter(catalog).emit(g);
  for (const char* expected :
       {"def flip_requires_grad(inputs):", "    return [x.detach().requires_grad_(not x.requires_grad)\n",
        "    \"\"\"inputs with requires_grad flipped (the floating inputs forward does not write)\"\"\"\n"
        "    return flip_requires_grad\n"})
    EXPECT_NE(py.find(expected), std::string::npos) << "missing:\n" << expected << "\nin:\n" << py;
  // A step that moves the program to float64: model.double(), and the function that widens the inputs.
  g.schedule = {{"dtype", 0}};
  ASSERT_EQ(planPythonConstructs(g, catalog).schedule.size(), 1u);
  py = PythonEmitter(catalog).emit(g);
  for (const char* expected :
       {"def as_float64(inputs):",
        "    return [x.detach().to(torch.complex128 if x.is_complex() else torch.float64).requires_grad_(x.requires_grad)\n",
        "    \"\"\"model.double(), and the floating inputs as float64 (another dtype)\"\"\"\n"
        "    model.double()\n    return as_float64\n"})
    EXPECT_NE(py.find(expected), std::string::npos) << "missing:\n" << expected << "\nin:\n" << py;
  g.nodes[1].attrs["dtype"] = "float16";  // a node that names a dtype would mix it with float64
  EXPECT_TRUE(planPythonConstructs(g, catalog).schedule.empty());
  g.nodes[1].attrs.erase("dtype");
  g.typeOf(0).dtype = DType::Int64;  // no floating input to flip or widen
  g.schedule = {{"requires-grad", 0}, {"dtype", 0}};
  EXPECT_TRUE(planPythonConstructs(g, catalog).schedule.empty());
}

TEST_F(PythonConstructsTest, GenerationDrawsEveryFormAndTheFiguresCountEach) {
  GenPolicy policy;
  policy.pythonConstructs.loop = policy.pythonConstructs.form = 1.0;
  Generator generator(catalog, policy, 5);
  std::map<std::string, int> drawn;
  ProgramFigures figures;
  constexpr uint64_t kPrograms = 400;  // the rarest form (tensor-hook, one weight among about forty) drawn several times
  for (uint64_t i = 0; i < kPrograms; ++i) {
    Graph p = generator.generate(i);
    figures.add(p, catalog);
    for (const Node& n : p.nodes)
      if (!n.python.form.empty()) ++drawn[n.python.form];
  }
  for (const std::string& name : pythonFormNames()) EXPECT_GT(drawn[name], 0) << name;
  json shares = figures.toJson()["programs_with_each_python_form"];
  EXPECT_EQ(shares.size(), pythonFormNames().size());
  EXPECT_NEAR(shares["closure"].get<double>() * kPrograms, drawn["closure"], 1e-9);  // one per program at most here
  // Each schedule change has its share, counted once per program; every one is drawn here.
  std::map<std::string, int> scheduling;
  for (uint64_t i = 0; i < kPrograms; ++i) {
    std::set<std::string> changes;
    for (const ScheduleStep& s : generator.generate(i).schedule) changes.insert(s.change);
    for (const std::string& c : changes) ++scheduling[c];
  }
  json changeShares = figures.toJson()["programs_with_each_schedule_change"];
  ASSERT_EQ(changeShares.size(), scheduleChangeNames().size());
  for (const std::string& change : scheduleChangeNames()) {
    EXPECT_GT(scheduling[change], 0) << change;
    EXPECT_NEAR(changeShares[change].get<double>() * kPrograms, scheduling[change], 1e-9) << change;
  }
  // A zero weight turns a form off.
  policy.pythonConstructs.formWeights["closure"] = 0;
  Generator without(catalog, policy, 5);
  for (uint64_t i = 0; i < 200; ++i)
    for (const Node& n : without.generate(i).nodes) EXPECT_NE(n.python.form, "closure");
}

TEST_F(PythonConstructsTest, GenerationDrawsEveryHookKindAndTheFiguresCountTheGlobalOnes) {
  GenPolicy policy;
  policy.pythonConstructs.hook = 1.0;
  Generator generator(catalog, policy, 9);
  std::map<std::string, int> drawn;
  ProgramFigures figures;
  for (uint64_t i = 0; i < 200; ++i) {
    Graph p = generator.generate(i);
    figures.add(p, catalog);
    ++drawn[p.hook];
  }
  for (const char* kind : {"forward", "forward-pre", "global-forward", "global-pre"}) EXPECT_GT(drawn[kind], 20) << kind;
  EXPECT_EQ(drawn[""], 0);
  json shares = figures.toJson();
  EXPECT_NEAR(shares["programs_with_a_hook"].get<double>(), 1.0, 1e-9);
  EXPECT_NEAR(shares["programs_with_a_global_module_hook"].get<double>() * 200, drawn["global-forward"] + drawn["global-pre"], 1e-9);
  policy.pythonConstructs.globalHook = 0;  // the policy's global_hook turns them off
  Generator without(catalog, policy, 9);
  for (uint64_t i = 0; i < 200; ++i) EXPECT_FALSE(without.generate(i).hook.starts_with("global-"));
  EXPECT_EQ(PythonConstructChances::fromJson({{"global_hook", 0.25}}).globalHook, 0.25);
}

TEST_F(PythonConstructsTest, TransformsOfTheOpGraphCarryTheConstructsAlong) {
  Graph g = smallProgram();
  g.nodes[0].python.graphBreakBefore = true;
  g.schedule = {{"class-attr", 0.5}};
  Graph compact = compactGraph(g);
  EXPECT_TRUE(compact.nodes[0].python.graphBreakBefore);
  EXPECT_EQ(compact.schedule, g.schedule);
  EXPECT_EQ(eliminateDeadNodes(g).schedule, g.schedule);
}

TEST_F(PythonConstructsTest, ThePolicyReadsItsChancesStrictly) {
  GenPolicy p = GenPolicy::fromJson({{"python_constructs", {{"graph_break", 1.0}, {"branch_weights", {{"flag", 3}}}}}});
  EXPECT_EQ(p.pythonConstructs.graphBreak, 1.0);
  EXPECT_EQ(p.pythonConstructs.branchWeights.at("flag"), 3);
  EXPECT_EQ(p.pythonConstructs.branchWeights.at("item"), 2);  // the others keep their defaults
  EXPECT_EQ(GenPolicy::fromJson(p.toJson()).pythonConstructs.toJson(), p.pythonConstructs.toJson());
  EXPECT_THROW(GenPolicy::fromJson({{"python_constructs", {{"loops", 0.5}}}}), std::invalid_argument);
  EXPECT_THROW(GenPolicy::fromJson({{"python_constructs", {{"branch", 1.5}}}}), std::invalid_argument);
  EXPECT_THROW(GenPolicy::fromJson({{"python_constructs", {{"branch_weights", {{"while", 1}}}}}}), std::invalid_argument);
  p = GenPolicy::fromJson({{"python_constructs", {{"form", 0.5}, {"form_weights", {{"generator", 4}}}}}});
  EXPECT_EQ(p.pythonConstructs.form, 0.5);
  EXPECT_EQ(p.pythonConstructs.formWeights.at("generator"), 4);
  EXPECT_EQ(p.pythonConstructs.formWeights.at("zip"), 1);
  EXPECT_THROW(GenPolicy::fromJson({{"python_constructs", {{"form_weights", {{"coroutine", 1}}}}}}), std::invalid_argument);
  EXPECT_THROW(GenPolicy::fromJson({{"python_constructs", {{"form_weights", {{"zip", -1}}}}}}), std::invalid_argument);
}

}  // namespace
}  // namespace tcfuzz::gen

namespace tcfuzz::gen {
namespace {

TEST(SingleTraceProgram, KeepsWhatOneTraceCapturesAndDropsWhatExportRunsOnce) {
  OpCatalog catalog = makeDefaultCatalog();
  Generator gen(catalog, GenPolicy{}, 11);
  int schedules = 0, hops = 0, keptHops = 0, dataDependent = 0, keptDataDependent = 0;
  for (uint64_t i = 0; i < 200; ++i) {
    Graph g = gen.generate(i);
    Graph single = singleTraceProgram(g);
    ASSERT_EQ(single.nodes.size(), g.nodes.size());  // the op graph is the same
    EXPECT_EQ(single.outputs, g.outputs);
    schedules += !g.schedule.empty();
    EXPECT_TRUE(single.schedule.empty());
    EXPECT_TRUE(single.hook.empty());
    for (const Source& s : single.inputs) EXPECT_TRUE(s.alias.none());
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      const NodePython &p = single.nodes[k].python, &before = g.nodes[k].python;
      EXPECT_FALSE(p.graphBreakBefore || p.branch || !p.outputState.empty() || p.counter) << "program " << i;
      if (!p.form.empty()) EXPECT_FALSE(pythonForm(p.form).keepsState || pythonForm(p.form).breaksGraph) << p.form;
      hops += before.hop && kExportedHopKinds.count(before.hop->kind);
      keptHops += p.hop.has_value();
      if (p.hop) EXPECT_TRUE(kExportedHopKinds.count(p.hop->kind)) << p.hop->kind;
      bool dd = !before.form.empty() && pythonForm(before.form).dataDependent && !pythonForm(before.form).breaksGraph;
      dataDependent += dd;
      keptDataDependent += dd && p.form == before.form;
    }
    // What stays still holds: the constructs the plan of the single-trace program keeps are all of its own.
    PythonPlan plan = planPythonConstructs(single, catalog);
    EXPECT_TRUE(plan.schedule.empty());
    EXPECT_FALSE(plan.graphBreak());
    EXPECT_FALSE(plan.mutatesState()) << "program " << i;
  }
  EXPECT_GT(schedules, 0);
  EXPECT_GT(hops, 0);
  EXPECT_EQ(keptHops, hops);  // the higher-order ops export documents and data-dependent forms stay
  EXPECT_EQ(keptDataDependent, dataDependent);
}

// A reduced program's replay line says so, and `tcfuzz gen --single-trace` makes it again; one that
// lost nothing keeps its replay line as it was.
TEST(SingleTraceProgram, AReducedProgramSaysSoInItsReplayLine) {
  OpCatalog catalog = makeDefaultCatalog();
  Generator gen(catalog, GenPolicy{}, 11);
  int reduced = 0, kept = 0;
  for (uint64_t i = 0; i < 60; ++i) {
    Graph g = gen.generate(i);
    Graph single = singleTraceProgram(g);
    bool changed = single.contentHash() != g.contentHash();
    EXPECT_EQ(single.origin.singleTrace, changed) << "program " << i;
    std::string header = provenanceHeader(single);
    std::string replay = fmt::format("tcfuzz gen --seed 11 --start {} --count 1", i);
    EXPECT_NE(header.find(replay + (changed ? " --single-trace\n" : "\n")), std::string::npos) << header;
    EXPECT_EQ(Graph::fromJson(single.toJson(), "single").origin.singleTrace, changed);
    EXPECT_EQ(singleTraceProgram(single).contentHash(), single.contentHash());  // once is enough
    (changed ? reduced : kept)++;
  }
  EXPECT_GT(reduced, 0);
  EXPECT_GT(kept, 0);
}

TEST(SingleTraceProgram, AParameterWrittenOutsideAutogradBecomesABufferWrittenTheSameWay) {
  OpCatalog catalog = makeDefaultCatalog();
  PythonEmitter emitter(catalog);
  Graph g;
  int x0 = g.addValue({{4}, DType::Float32});
  g.inputs.push_back({x0, "x0", {"uniform", -2, 2}});
  int a = g.addValue({{4}, DType::Float32});
  g.nodes.push_back({"param_data_add_", {x0}, {a}, json{{"shape", {4}}, {"dtype", "float32"}, {"alpha", 0.1}}});
  int b = g.addValue({{4}, DType::Float32});
  g.nodes.push_back({"param_detach_lerp_", {a}, {b}, json{{"shape", {4}}, {"dtype", "float32"}}});
  g.outputs = {b};
  Graph single = singleTraceProgram(g);
  EXPECT_EQ(single.nodes[0].op, "buffer_add_");
  EXPECT_FALSE(single.nodes[0].attrs.contains("alpha"));
  EXPECT_EQ(single.nodes[1].op, "buffer_lerp_");
  EXPECT_EQ(single.nodes[1].attrs["weight"], 0.5);
  std::string py = emitter.emit(single);  // export keeps a parameter as a constant, a buffer as state it writes
  EXPECT_EQ(py.find("nn.Parameter"), std::string::npos) << py;
  EXPECT_NE(py.find(".add_(x0.detach())"), std::string::npos) << py;
  EXPECT_NE(py.find(".lerp_("), std::string::npos) << py;
}

}  // namespace
}  // namespace tcfuzz::gen
