// The lift table built from the op catalog, and "lift" jobs in real sandboxed workers: the AST
// allowlist, the traced eager run, and the proposal it lifts to.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "TestWorkers.h"
#include "fuzzer/worker/ProgramTester.h"
#include "generators/Generator.h"
#include "generators/llm/LlmProgram.h"
#include "generators/llm/PythonLift.h"
#include "generators/python/PythonEmitter.h"

using namespace tcfuzz;
using nlohmann::json;
using tcfuzz::test_support::sourcePath;
using tcfuzz::test_support::TempDir;

namespace {

const gen::OpCatalog& catalog() {
  static const gen::OpCatalog c = gen::makeDefaultCatalog();
  return c;
}

/// The table entry of `op`, without its rank range (checked on its own where it matters).
json entryOf(const std::string& op) {
  auto entry = gen::liftEntry(catalog().at(op));
  if (!entry) return nullptr;
  entry->erase("rank");
  return *entry;
}

}  // namespace

TEST(PythonLift, EntriesFollowTheOpSpellings) {
  EXPECT_EQ(entryOf("softmax"), json::parse(R"({"op": "softmax", "callee": "F.softmax", "args": [{"input": 0}],
      "kwargs": {"dim": {"attr": "dim", "kind": "int"}}})"));
  EXPECT_EQ(entryOf("mul"), json::parse(R"({"op": "mul", "callee": "torch.Tensor.__mul__",
      "args": [{"input": 0}, {"input": 1}], "kwargs": {}})"));
  EXPECT_EQ(entryOf("mul_scalar"), json::parse(R"({"op": "mul_scalar", "callee": "torch.Tensor.__mul__",
      "args": [{"input": 0}, {"attr": "value", "kind": "float"}], "kwargs": {}})"));
  EXPECT_EQ(entryOf("rsub_scalar"), json::parse(R"({"op": "rsub_scalar", "callee": "torch.Tensor.__rsub__",
      "args": [{"input": 0}, {"attr": "value", "kind": "float"}], "kwargs": {}})"));
  EXPECT_EQ(entryOf("pow_scalar")["callee"], "torch.Tensor.__pow__");
  EXPECT_EQ(entryOf("sub")["callee"], "torch.Tensor.__sub__");
  EXPECT_EQ(entryOf("cat"), json::parse(R"({"op": "cat", "callee": "torch.cat", "args": [{"inputs": "*"}],
      "kwargs": {"dim": {"attr": "dim", "kind": "int"}}})"));
  EXPECT_EQ(entryOf("pad_reflect"), json::parse(R"({"op": "pad_reflect", "callee": "F.pad",
      "args": [{"input": 0}, {"attr": "pad", "kind": "int_list"}], "kwargs": {"mode": {"literal": "reflect"}}})"));
  // torch.median(...).values: the trailing .values is dropped, the node reads output 0.
  EXPECT_EQ(entryOf("median_dim"), json::parse(R"({"op": "median_dim", "callee": "torch.median",
      "args": [{"input": 0}, {"attr": "dim", "kind": "int"}], "kwargs": {"keepdim": {"attr": "keepdim", "kind": "bool"}}})"));
  EXPECT_EQ(entryOf("mse_loss"), json::parse(R"({"op": "mse_loss", "callee": "F.mse_loss",
      "args": [{"input": 0}, {"input": 1}],
      "kwargs": {"reduction": {"attr": "reduction", "kind": "int", "choices_index": ["none", "mean", "sum"]}}})"));
  // Methods: {0}.m(...) is torch.Tensor.m with input 0 first; .contiguous() before a view is dropped.
  EXPECT_EQ(entryOf("view"), json::parse(R"({"op": "view", "callee": "torch.Tensor.view",
      "args": [{"input": 0}, {"attr": "shape", "kind": "int_list"}], "kwargs": {}})"));
  EXPECT_EQ(entryOf("to_dtype")["callee"], "torch.Tensor.to");
  EXPECT_EQ(entryOf("to_dtype")["args"][1]["kind"], "dtype");
  // {?name}: an optional keyword.
  EXPECT_EQ(entryOf("take_along_dim")["kwargs"]["dim"], json::parse(R"({"attr": "dim", "kind": "int", "optional": true})"));
  // Same spelling, told apart by the rank of input 0.
  auto nearest1d = gen::liftEntry(catalog().at("interpolate_nearest1d"));
  auto nearest2d = gen::liftEntry(catalog().at("interpolate_nearest2d"));
  ASSERT_TRUE(nearest1d && nearest2d);
  EXPECT_EQ((*nearest1d)["rank"], json::array({3, 3}));
  EXPECT_EQ((*nearest2d)["rank"], json::array({4, 4}));
  EXPECT_EQ((*nearest2d)["kwargs"]["mode"], json::parse(R"({"literal": "nearest"})"));
  // Not single calls: statements, layers, subscripts, method chains.
  EXPECT_TRUE(entryOf("add_").is_null());
  EXPECT_TRUE(entryOf("nn_linear").is_null());
  EXPECT_TRUE(entryOf("slice").is_null());
  EXPECT_TRUE(entryOf("index_put_accumulate").is_null());
}

TEST(PythonLift, TableCoversMostOfTheCatalog) {
  json table = gen::liftTable(catalog());
  size_t skipped = catalog().size() - table.size();
  std::vector<std::string> unparsed;  // single-call spellings the parser does not take
  for (const auto& op : catalog().ops())
    if (!gen::liftEntry(*op) && op->init.empty() && op->python.rfind("stmt:", 0) != 0) unparsed.push_back(op->name);
  std::cout << "lift table: " << table.size() << " entries, " << skipped << " ops skipped, of which "
            << unparsed.size() << " not single calls:";
  for (const auto& name : unparsed) std::cout << ' ' << name;
  std::cout << '\n';
  EXPECT_GE(table.size(), 200u);
  for (const auto& entry : table) {
    EXPECT_TRUE(entry.contains("op") && entry.contains("callee") && entry["args"].is_array() &&
                entry["kwargs"].is_object())
        << entry.dump();
    std::string callee = entry["callee"];
    EXPECT_TRUE(callee.rfind("torch.", 0) == 0 || callee.rfind("F.", 0) == 0) << callee;
  }
}

namespace {

class PythonLiftWorkers : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("tcfuzz-lift");
    pool_ = new WorkerPool(test_support::testWorkerSpec(dir_->path()), 2);
    tester_ = new ProgramTester(*pool_, oracles::Comparator{}, dir_->path() / "jobs");
    table_ = new json(gen::liftTable(catalog()));
  }
  static void TearDownTestSuite() {
    delete table_;
    delete tester_;
    delete pool_;
    delete dir_;
  }
  static TestSettings settings() {
    TestSettings s;
    s.limits = Limits{120, 4096};
    s.seed = 0;
    s.threads = 1;
    return s;
  }
  /// Writes `source` as a program file in the work directory (readable and writable in the sandbox).
  static std::filesystem::path writeProgram(const std::string& name, const std::string& source) {
    std::filesystem::path p = dir_->path() / "programs" / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << source;
    return p;
  }
  static oracles::RunResult lift(const std::filesystem::path& program) {
    return tester_->lift(program, settings(), *table_);
  }
  static TempDir* dir_;
  static WorkerPool* pool_;
  static ProgramTester* tester_;
  static json* table_;
};

TempDir* PythonLiftWorkers::dir_ = nullptr;
WorkerPool* PythonLiftWorkers::pool_ = nullptr;
ProgramTester* PythonLiftWorkers::tester_ = nullptr;
json* PythonLiftWorkers::table_ = nullptr;

/// A valid program around `body` (module-level statements) and `forward` (the forward's body).
std::string programWith(const std::string& body, const std::string& forward = "        return x\n") {
  return "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n" + body +
         "\n\nclass Model(nn.Module):\n    def forward(self, x):\n" + forward +
         "\n\ndef make_inputs(seed):\n    g = torch.Generator().manual_seed(seed)\n"
         "    return (torch.randn(4, 8, generator=g),)\n";
}

}  // namespace

TEST_F(PythonLiftWorkers, HostileProgramsAreRejectedWithTheirReason) {
  struct Case {
    std::string source, reason;
  };
  const std::vector<Case> cases = {
      {programWith("import os"), "import of os"},
      {programWith("from subprocess import run"), "import of subprocess"},
      {programWith("__import__('os')"), "call of __import__"},
      {programWith("().__class__.__bases__[0].__subclasses__()"), "dunder attribute __class__"},
      {programWith("eval('1')"), "call of eval"},
      {programWith("exec('y = 1')"), "call of exec"},
      {programWith("open('/etc/passwd')"), "call of open"},
      {programWith("", "        return getattr(torch, 'load')('w.pt')\n"), "call of getattr"},
      {programWith("", "        return torch.load('w.pt')\n"), "attribute torch.load"},
      {programWith("torch.hub.load('pytorch/vision', 'resnet18')"), "attribute torch.hub"},
      {programWith("torch._C._get_tracing_state()"), "attribute torch._C"},
      // Only the graph break's exact path passes below torch._dynamo, nothing under it or beside it.
      {programWith("torch._dynamo.config.suppress_errors = True"), "attribute torch._dynamo"},
      {programWith("", "        return torch._dynamo.graph_break.__globals__\n"), "attribute torch._dynamo"},
      {programWith("torch.os.system('id')"), "attribute torch.os"},
      {programWith("t = torch"), "module torch used as a value"},
      {programWith("", "        while True:\n            pass\n"), "while loop"},
      {programWith("with open('f') as f:\n    pass"), "with statement"},
      {programWith("", "        return '{0.__class__}'.format(x)\n"), "attribute format"},
      {programWith("", "        for _ in range(100):\n            x = x + 1\n        return x\n"),
       "for loop of 100 iterations"},
      {programWith("", "        for t in [x, x]:\n            x = x + t\n        return x\n"),
       "for loop over a non-literal range"},
      {programWith("", "        try:\n            return x\n        except Exception:\n            return x\n"),
       "try statement"},
      {programWith("", "        global y\n        return x\n"), "global statement"},
      {programWith("", "        return x.__class__\n"), "dunder attribute __class__"},
      {programWith("if __name__ == '__main__':\n    pass"), "dunder name __name__"},
      // LLM output cut off mid-line.
      {"import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
       "        return torch.relu(torch.tanh(x\n",
       "syntax error: '(' was never closed (line 6)"},
      {"import torch\n\ndef make_inputs(seed):\n    return (torch.zeros(2),)\n", "no Model class"},
      {"import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n        return x\n",
       "no make_inputs"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    oracles::RunResult r = lift(writeProgram("hostile_" + std::to_string(i) + ".py", cases[i].source));
    ASSERT_TRUE(r.ok()) << cases[i].source << "\n" << r.summary();
    ASSERT_TRUE(r.lift.is_object()) << cases[i].source;
    EXPECT_EQ(r.lift.value("rejected", ""), cases[i].reason) << cases[i].source;
    EXPECT_FALSE(r.lift.contains("proposal"));
  }
}

TEST_F(PythonLiftWorkers, RejectedProgramNeverRuns) {
  std::filesystem::path marker = dir_->path() / "marker.txt";
  std::string source = "import os\nopen(" + json(marker.string()).dump() + ", 'w').write('ran')\n" +
                       programWith("");
  std::filesystem::path program = writeProgram("writes_marker.py", source);
  // As an ordinary program job it runs: its write (which the OS sandbox would allow there) is what the
  // program guard refuses.
  ProgramTester::PendingRun run = tester_->submitOne(program, RunMode::Eager, settings());
  oracles::RunResult ran = run.result.get();
  EXPECT_EQ(ran.status, oracles::RunStatus::Refused) << ran.summary();
  ASSERT_EQ(ran.refusals.size(), 1u);
  EXPECT_TRUE(ran.refusals[0].starts_with("filesystem write: open")) << ran.refusals[0];
  EXPECT_FALSE(std::filesystem::exists(marker));
  // As a lift job it is rejected by the AST allowlist before anything of it runs: no refusal to record.
  oracles::RunResult r = lift(program);
  ASSERT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.lift["rejected"], "import of os");
  EXPECT_TRUE(r.refusals.empty());
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST_F(PythonLiftWorkers, RecordedProgramLiftsToTheExpectedProposal) {
  oracles::RunResult r = lift(sourcePath("tests/programs/llm/linear_relu_sum_cat.py"));
  ASSERT_TRUE(r.ok()) << r.summary() << r.stderrTail;
  ASSERT_TRUE(r.lift.contains("proposal")) << r.lift.dump();
  json expected = json::parse(R"({
    "inputs": [
      {"name": "x0", "shape": [4, 8], "dtype": "float32", "parameter": false},
      {"name": "x1", "shape": [4, 3], "dtype": "float32", "parameter": false},
      {"name": "p0", "shape": [6, 8], "dtype": "float32", "parameter": true},
      {"name": "p1", "shape": [6], "dtype": "float32", "parameter": true}],
    "nodes": [
      {"out": "v0", "op": "linear", "args": ["x0", "p0", "p1"], "attrs": {}},
      {"out": "v1", "op": "relu", "args": ["v0"], "attrs": {}},
      {"out": "v2", "op": "sum", "args": ["v1"], "attrs": {"dim": [1], "keepdim": true}},
      {"out": "v3", "op": "mul_scalar", "args": ["v1"], "attrs": {"value": 2.0}},
      {"out": "v4", "op": "cat", "args": ["v3", "v2", "x1"], "attrs": {"dim": 1}}],
    "outputs": ["v4"]})");
  EXPECT_EQ(r.lift["proposal"], expected) << r.lift["proposal"].dump(2);
  EXPECT_EQ(r.lift["calls"], 5);
  EXPECT_EQ(r.lift["mapped"], 5);
  EXPECT_EQ(r.lift["unmapped"], json::object());
}

// torch._dynamo.graph_break() or a print() in an LLM's forward is a Dynamo-level construct the lift keeps: the
// next lifted node breaks the graph before it, and the proposal builds into an IR node with graph_break_before.
// A print at import time breaks nothing. Each program twice, in one child: the lift gives the child's torch its
// graph_break back.
TEST_F(PythonLiftWorkers, AGraphBreakLiftsOntoTheNextNode) {
  std::vector<std::filesystem::path> programs{
      writeProgram("graph_break.py", programWith("", "        y = torch.sigmoid(x)\n        torch._dynamo.graph_break()\n"
                                                     "        return torch.tanh(y)\n")),
      writeProgram("print_break.py", programWith("print('loading')", "        y = torch.sigmoid(x)\n        print(y.shape, y)\n"
                                                                       "        return torch.tanh(y)\n"))};
  for (int run = 0; run < 4; ++run) {
    oracles::RunResult r = lift(programs[static_cast<size_t>(run % 2)]);
    ASSERT_TRUE(r.ok()) << r.summary() << r.stderrTail;
    ASSERT_TRUE(r.lift.contains("proposal")) << r.lift.dump();
    const json& nodes = r.lift["proposal"]["nodes"];
    ASSERT_EQ(nodes.size(), 2u) << nodes.dump();
    EXPECT_EQ(nodes[0]["op"], "sigmoid");
    EXPECT_FALSE(nodes[0].contains("python"));
    EXPECT_EQ(nodes[1]["op"], "tanh");
    EXPECT_EQ(nodes[1]["python"], json::parse(R"({"graph_break_before": true})"));
    gen::IntSolver solver(1);
    gen::ProposalOutcome built = gen::buildProposal(r.lift["proposal"], catalog(), gen::GenPolicy{}.caps, 1, solver);
    ASSERT_TRUE(built.graph) << built.rejection << ": " << built.detail;
    ASSERT_EQ(built.graph->nodes.size(), 2u);
    EXPECT_FALSE(built.graph->nodes[0].python.graphBreakBefore);
    EXPECT_TRUE(built.graph->nodes[1].python.graphBreakBefore);
  }
}

TEST_F(PythonLiftWorkers, ForwardThatRaisesIsAnExceptionResult) {
  oracles::RunResult r = lift(sourcePath("tests/programs/llm/matmul_shape_mismatch.py"));
  EXPECT_EQ(r.status, oracles::RunStatus::Exception) << r.summary();
  EXPECT_EQ(r.phase, "run");
  ASSERT_TRUE(r.exception);
  EXPECT_EQ(r.exception->type, "RuntimeError");
  // torch 2.15 prefixes the op ("mm: mat1 and ..."); older releases do not.
  EXPECT_TRUE(r.exception->message.ends_with("mat1 and mat2 shapes cannot be multiplied (4x8 and 5x3)"))
      << r.exception->message;
  EXPECT_TRUE(r.lift.is_null());
}

TEST_F(PythonLiftWorkers, UnmappedCallResultBecomesAFreshInput) {
  oracles::RunResult r = lift(sourcePath("tests/programs/llm/indexing_unmapped.py"));
  ASSERT_TRUE(r.ok()) << r.summary() << r.stderrTail;
  json expected = json::parse(R"({
    "inputs": [
      {"name": "x0", "shape": [4, 8], "dtype": "float32", "parameter": false},
      {"name": "p0", "shape": [8], "dtype": "float32", "parameter": false}],
    "nodes": [
      {"out": "v0", "op": "tanh", "args": ["p0"], "attrs": {}},
      {"out": "v1", "op": "sigmoid", "args": ["x0"], "attrs": {}},
      {"out": "v2", "op": "add", "args": ["v0", "v1"], "attrs": {"alpha": 1}}],
    "outputs": ["v2"]})");
  EXPECT_EQ(r.lift["proposal"], expected) << r.lift["proposal"].dump(2);
  EXPECT_EQ(r.lift["calls"], 4);
  EXPECT_EQ(r.lift["mapped"], 3);
  EXPECT_EQ(r.lift["unmapped"], json::parse(R"({"torch.Tensor.__getitem__": 1})"));
}

// A write through a view (h.narrow(1, 2, 3).mul_(y)) lifts to the catalog's inplace-view op on the
// view's base, and later reads of the base read that node.
TEST_F(PythonLiftWorkers, WriteThroughAViewLiftsToAnInplaceViewNode) {
  oracles::RunResult r = lift(sourcePath("tests/programs/llm/write_through_view.py"));
  ASSERT_TRUE(r.ok()) << r.summary() << r.stderrTail;
  ASSERT_TRUE(r.lift.contains("proposal")) << r.lift.dump();
  json expected = json::parse(R"([
      {"out": "v0", "op": "sigmoid", "args": ["x0"], "attrs": {}},
      {"out": "v1", "op": "narrow", "args": ["v0"], "attrs": {"dim": 1, "start": 2, "length": 3}},
      {"out": "v2", "op": "narrow_mul_", "args": ["v0", "x1"], "attrs": {"dim": 1, "start": 2, "end": 5, "length": 3}},
      {"out": "v3", "op": "diagonal", "args": ["v2"], "attrs": {"offset": 0, "dim1": 0, "dim2": 1}},
      {"out": "v4", "op": "tanh", "args": ["v2"], "attrs": {}}])");
  EXPECT_EQ(r.lift["proposal"]["nodes"], expected) << r.lift["proposal"].dump(2);
  EXPECT_EQ(r.lift["proposal"]["outputs"], json::parse(R"(["v4", "v3"])"));
  EXPECT_EQ(r.lift["unmapped"], json::object());
}

// A plain in-place write (h.mul_(y), h.relu_()) lifts to the out-of-place op's node, which later reads
// of h see; a view taken before such a write and read after it refuses the lift.
TEST_F(PythonLiftWorkers, PlainInPlaceWritesLiftToTheirOutOfPlaceOps) {
  oracles::RunResult r = lift(sourcePath("tests/programs/llm/plain_inplace.py"));
  ASSERT_TRUE(r.ok()) << r.summary() << r.stderrTail;
  ASSERT_TRUE(r.lift.contains("proposal")) << r.lift.dump();
  std::vector<std::string> ops;
  for (const auto& node : r.lift["proposal"]["nodes"]) ops.push_back(node["op"]);
  EXPECT_EQ(ops, (std::vector<std::string>{"sigmoid", "mul", "relu", "tanh"})) << r.lift["proposal"].dump(2);
  EXPECT_EQ(r.lift["proposal"]["nodes"][1]["args"], json::parse(R"(["v0", "x1"])"));
  EXPECT_EQ(r.lift["proposal"]["nodes"][2]["args"], json::parse(R"(["v1"])"));
  EXPECT_EQ(r.lift["proposal"]["nodes"][3]["args"], json::parse(R"(["v2"])"));
  EXPECT_EQ(r.lift["unmapped"], json::object());

  oracles::RunResult stale = lift(sourcePath("tests/programs/llm/stale_view_read.py"));
  ASSERT_TRUE(stale.ok()) << stale.summary() << stale.stderrTail;
  ASSERT_TRUE(stale.lift.contains("rejected")) << stale.lift.dump();
  EXPECT_NE(stale.lift["rejected"].get<std::string>().find("a view is read after a write"), std::string::npos)
      << stale.lift.dump();
}

TEST_F(PythonLiftWorkers, OrdinaryModelCodePassesTheAllowlist) {
  oracles::RunResult r = lift(sourcePath("tests/programs/llm/ordinary_code.py"));
  ASSERT_TRUE(r.ok()) << r.summary() << r.stderrTail;
  ASSERT_TRUE(r.lift.contains("proposal")) << r.lift.dump();
  const json& proposal = r.lift["proposal"];
  std::vector<std::string> ops;
  for (const auto& node : proposal["nodes"]) ops.push_back(node["op"]);
  EXPECT_EQ(ops, (std::vector<std::string>{"gelu", "mul_scalar", "gelu", "mul_scalar", "exp", "exp", "permute",
                                           "max_dim", "view"}));
  EXPECT_EQ(proposal["nodes"][0]["attrs"], json::parse(R"({"approximate": "none"})"));
  EXPECT_EQ(proposal["nodes"][6]["attrs"], json::parse(R"({"dims": [1, 0]})"));
  EXPECT_EQ(proposal["nodes"][7]["attrs"], json::parse(R"({"dim": 1, "keepdim": false})"));
  EXPECT_EQ(proposal["nodes"][8]["attrs"], json::parse(R"({"shape": [2, 12]})"));
  // torch.max with a dim returns (values, indices): both are outputs of node v7.
  EXPECT_EQ(proposal["outputs"], json::parse(R"(["v7", "v7.1", "v8"])"));
  EXPECT_EQ(proposal["inputs"], json::parse(R"([{"name": "x0", "shape": [4, 6], "dtype": "float32", "parameter": false}])"));
  EXPECT_EQ(r.lift["unmapped"], json::object());
}

TEST_F(PythonLiftWorkers, InputsOutsideTheIrAreRefused) {
  const std::string model = "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                            "    def forward(self, x):\n        return torch.abs(x)\n\n";
  oracles::RunResult bare = lift(writeProgram(
      "bare_tensor.py", model + "def make_inputs(seed):\n    return torch.zeros(2, 3)\n"));
  ASSERT_TRUE(bare.ok()) << bare.summary();
  EXPECT_EQ(bare.lift["rejected"], "make_inputs returned Tensor");
  oracles::RunResult bytes = lift(writeProgram(
      "uint8_input.py", model + "def make_inputs(seed):\n    return (torch.zeros(2, 3, dtype=torch.uint8),)\n"));
  ASSERT_TRUE(bytes.ok()) << bytes.summary();
  EXPECT_EQ(bytes.lift["rejected"], "unsupported dtype uint8");
  oracles::RunResult rank7 = lift(writeProgram(
      "rank7_input.py", model + "def make_inputs(seed):\n    return (torch.zeros(1, 1, 1, 1, 1, 1, 2),)\n"));
  ASSERT_TRUE(rank7.ok()) << rank7.summary();
  EXPECT_EQ(rank7.lift["rejected"], "unsupported shape [1, 1, 1, 1, 1, 1, 2]");
}

// An LLM's `if` and `for` are Dynamo-level constructs the lift keeps, where the IR can hold them: each branch and
// loop on a node forward only returns. A branch on tensor data reads a forward input the node reads (the IR's rule:
// rounding must never pick the arm); one with no such node is counted as not placed. The test's own calls are no
// nodes, and the flattened path is still the path eager took.
TEST_F(PythonLiftWorkers, BranchesAndLoopsLiftOntoReturnedNodes) {
  oracles::RunResult r = lift(sourcePath("tests/programs/llm/branches_and_loop.py"));
  ASSERT_TRUE(r.ok()) << r.summary() << r.stderrTail;
  ASSERT_TRUE(r.lift.contains("proposal")) << r.lift.dump();
  EXPECT_EQ(r.lift["constructs"], json::parse(R"({"branches": 3, "loops": 1, "hops": [], "not_placed": 1})")) << r.lift.dump();
  const json& nodes = r.lift["proposal"]["nodes"];
  std::vector<std::string> ops;
  for (const auto& n : nodes) ops.push_back(n["op"].get<std::string>());
  EXPECT_EQ(ops, (std::vector<std::string>{"linear", "relu", "mul_scalar", "sigmoid", "sigmoid", "tanh", "add_scalar",
                                           "mul"}));
  // The last sigmoid is returned: the flag branch (the first branch that needs no operand) and the loop.
  EXPECT_EQ(nodes[4]["python"], json::parse(R"({"branch": {"kind": "flag", "operand": 0, "threshold": 0.0},
                                                "form": "enumerate"})"));
  // y * z reads the forward input y: the item() branch reads it (operand 0).
  EXPECT_EQ(nodes[7]["args"][0], "x1");
  EXPECT_EQ(nodes[7]["python"], json::parse(R"({"branch": {"kind": "item", "operand": 0, "threshold": 0.25}})"));
  for (size_t i : {0u, 1u, 2u, 3u, 5u, 6u}) EXPECT_FALSE(nodes[i].contains("python")) << nodes[i].dump();

  gen::IntSolver solver(1);
  gen::ProposalOutcome built = gen::buildProposal(r.lift["proposal"], catalog(), gen::GenPolicy{}.caps, 1, solver);
  ASSERT_TRUE(built.graph) << built.rejection << ": " << built.detail;
  std::string python = gen::PythonEmitter(catalog()).emit(*built.graph);
  EXPECT_NE(python.find(".flatten()[0].item() > 0.25:"), std::string::npos) << python;
  EXPECT_NE(python.find("if self.flag:"), std::string::npos) << python;
  EXPECT_NE(python.find("enumerate("), std::string::npos) << python;
}

// An LLM's higher-order ops are constructs the lift keeps too: torch.cond, torch.func.vmap and checkpoint run
// their Python meaning (what the references run), so the recorded calls are their bodies' plain ops, and each
// becomes the IR's region of its kind on a returned node. The program built from the proposal calls the real ops.
TEST_F(PythonLiftWorkers, HigherOrderOpsLiftOntoReturnedNodesAsRegions) {
  oracles::RunResult r = lift(sourcePath("tests/programs/llm/higher_order_ops.py"));
  ASSERT_TRUE(r.ok()) << r.summary() << r.stderrTail;
  ASSERT_TRUE(r.lift.contains("proposal")) << r.lift.dump();
  EXPECT_EQ(r.lift["constructs"], json::parse(R"({"branches": 0, "loops": 0, "hops": ["cond", "vmap", "checkpoint"],
                                                  "not_placed": 0})")) << r.lift.dump();
  std::vector<std::string> hops;
  for (const auto& n : r.lift["proposal"]["nodes"])
    if (n.contains("python")) hops.push_back(n["python"]["hop"]["kind"].get<std::string>() + ":" + n["op"].get<std::string>());
  // x.sum() > 0 on seed 0's uniform inputs: cond's true branch, sin; vmap's body is one node per row plus a stack,
  // the last one returned; checkpoint's body ends in a mul.
  ASSERT_EQ(hops.size(), 3u) << r.lift.dump();
  EXPECT_EQ(hops[0], "cond:sin") << r.lift.dump();
  EXPECT_TRUE(hops[1].starts_with("vmap:")) << r.lift.dump();
  EXPECT_TRUE(hops[2].starts_with("checkpoint:")) << r.lift.dump();

  gen::IntSolver solver(1);
  gen::ProposalOutcome built = gen::buildProposal(r.lift["proposal"], catalog(), gen::GenPolicy{}.caps, 1, solver);
  ASSERT_TRUE(built.graph) << built.rejection << ": " << built.detail;
  std::string python = gen::PythonEmitter(catalog()).emit(*built.graph);
  for (std::string call : {"cond(", "vmap(", "checkpoint("}) EXPECT_NE(python.find(call), std::string::npos) << call << "\n" << python;
}
