// The LLM's JSON program form: strict parse, shape repair, the GBNF grammar, and recorded real
// replies of SmolLM2-135M-Instruct (tests/programs/llm/replies/, listed in replies.json).
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "generators/repair/GraphRepair.h"
#include "generators/features/InputLayout.h"
#include "generators/llm/LlmProgram.h"
#include "generators/OpCatalog.h"

using namespace tcfuzz::gen;
using nlohmann::json;

namespace {

const OpCatalog& catalog() {
  static const OpCatalog c = makeDefaultCatalog();
  return c;
}

ProposalOutcome build(const std::string& text, uint64_t seed = 1) {
  IntSolver solver(seed);
  return proposalFromText(text, catalog(), ShapeCaps{}, seed, solver);
}

std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const char* kValid = R"({"inputs": [{"name": "x", "shape": [4, 8], "dtype": "float32"}],
  "nodes": [{"out": "a", "op": "softmax", "args": ["x"], "attrs": {"dim": 1}},
            {"out": "b", "op": "mul", "args": ["a", "x"]},
            {"out": "c", "op": "sum", "args": ["b"], "attrs": {"dim": [0], "keepdim": false}}],
  "outputs": ["c"]})";

}  // namespace

TEST(LlmProgram, AValidProgramBuildsAsWrittenWithoutRepair) {
  ProposalOutcome out = build(kValid);
  ASSERT_TRUE(out.graph) << out.rejection << ": " << out.detail;
  EXPECT_EQ(out.rejection, "");
  EXPECT_FALSE(out.repaired);
  const Graph& g = *out.graph;
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[0].op, "softmax");
  EXPECT_EQ(g.nodes[0].attrs["dim"], 1);
  EXPECT_EQ(g.nodes[2].attrs["dim"], json::array({0}));
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.typeOf(g.inputs[0].value).shape, (std::vector<int64_t>{4, 8}));
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.typeOf(g.outputs[0]).shape, (std::vector<int64_t>{8}));
  EXPECT_EQ(firstInvalidNode(catalog(), g), "");
  // The reverse direction gives the same program back.
  ProposalOutcome again = build(proposalOf(g).dump());
  ASSERT_TRUE(again.graph);
  EXPECT_EQ(again.graph->contentHash(), g.contentHash());
}

TEST(LlmProgram, ProseAndFencesAroundTheObjectAreIgnored) {
  ProposalOutcome out = build(std::string("Sure! Here is the program:\n```json\n") + kValid + "\n```\nEnjoy.");
  ASSERT_TRUE(out.graph) << out.rejection;
  EXPECT_EQ(out.graph->nodes.size(), 3u);
}

TEST(LlmProgram, RejectionsNameTheirReason) {
  EXPECT_EQ(build("I cannot write programs.").rejection, "no-json");
  EXPECT_EQ(build(std::string(kValid).substr(0, 120)).rejection, "truncated");
  EXPECT_EQ(build(R"({"inputs": [}, "nodes": 3})").rejection, "json-syntax");
  ProposalOutcome wrongKey = build(R"({"inputs": [], "nodes": [{"out": "a", "op": "relu", "args": []}], "extra": 1})");
  EXPECT_EQ(wrongKey.rejection, "schema");
  EXPECT_NE(wrongKey.detail.find("unknown key 'extra'"), std::string::npos) << wrongKey.detail;
  ProposalOutcome badDtype = build(R"({"inputs": [{"name": "x", "shape": [2], "dtype": "uint8"}], "nodes": [{"out": "a", "op": "relu", "args": ["x"]}]})");
  EXPECT_EQ(badDtype.rejection, "schema");
  // A name defined again rebinds it, as in Python (SmolLM2 writes this often): x = relu(x), then
  // y = sigmoid(x) reads the relu; an input named twice leaves the first one unread.
  ProposalOutcome twice = build(R"({"inputs": [{"name": "x", "shape": [2], "dtype": "float32"}, {"name": "x", "shape": [3], "dtype": "float32"}],
                                    "nodes": [{"out": "x", "op": "relu", "args": ["x"]}, {"out": "y", "op": "sigmoid", "args": ["x"]}],
                                    "outputs": ["y"]})");
  ASSERT_TRUE(twice.graph) << twice.rejection << ": " << twice.detail;
  EXPECT_TRUE(twice.repaired);
  EXPECT_NE(twice.detail.find("inputs[1]: 'x' defined again rebinds the name"), std::string::npos) << twice.detail;
  EXPECT_NE(twice.detail.find("nodes[0]: 'x' defined again rebinds the name"), std::string::npos) << twice.detail;
  ASSERT_EQ(twice.graph->nodes.size(), 2u);
  EXPECT_EQ(twice.graph->nodes[1].op, "sigmoid");
  EXPECT_EQ(twice.graph->nodes[1].inputs[0], twice.graph->nodes[0].outputs[0]);
  ASSERT_EQ(twice.graph->inputs.size(), 1u);
  EXPECT_EQ(twice.graph->typeOf(twice.graph->inputs[0].value).shape, (std::vector<int64_t>{3}));
  ProposalOutcome negative = build(R"({"inputs": [{"name": "x", "shape": [-3], "dtype": "float32"}], "nodes": [{"out": "a", "op": "relu", "args": ["x"]}]})");
  EXPECT_EQ(negative.rejection, "schema");
  ProposalOutcome onlyUnknown = build(R"({"inputs": [{"name": "x", "shape": [2], "dtype": "float32"}], "nodes": [{"out": "a", "op": "frobnicate", "args": ["x"]}]})");
  EXPECT_EQ(onlyUnknown.rejection, "unknown-op");
  std::string big = R"({"inputs": [{"name": "x", "shape": [2], "dtype": "float32"}], "nodes": [)";
  for (int i = 0; i < 41; ++i) big += fmt::format(R"({}{{"out": "v{}", "op": "relu", "args": ["x"]}})", i ? "," : "", i);
  EXPECT_EQ(build(big + "]}").rejection, "too-large");
}

TEST(LlmProgram, RepairFixesShapesDtypesArityAndDropsWhatItCannotKeep) {
  // matmul of [3, 5] by [3, 5]; a bool input to sin; an unknown op; an undefined argument; no attrs for cumsum.
  ProposalOutcome out = build(R"({"inputs": [{"name": "x", "shape": [3, 5], "dtype": "float32"},
                                              {"name": "m", "shape": [4], "dtype": "bool"}],
    "nodes": [{"out": "a", "op": "matmul", "args": ["x", "x"]},
              {"out": "b", "op": "sin", "args": ["m"]},
              {"out": "c", "op": "frobnicate", "args": ["a"]},
              {"out": "d", "op": "add", "args": ["a", "ghost"]},
              {"out": "e", "op": "cumsum", "args": ["d"]}],
    "outputs": ["b", "e"]})");
  ASSERT_TRUE(out.graph) << out.rejection << ": " << out.detail;
  EXPECT_TRUE(out.repaired);
  EXPECT_EQ(out.unknownOps, 1);
  EXPECT_EQ(out.undefinedArgs, 1);
  EXPECT_EQ(firstInvalidNode(catalog(), *out.graph), "");
  std::vector<std::string> ops;
  for (const auto& n : out.graph->nodes) ops.push_back(n.op);
  for (const char* want : {"matmul", "sin", "add", "cumsum"})
    EXPECT_NE(std::find(ops.begin(), ops.end(), want), ops.end()) << want;
  EXPECT_EQ(out.graph->outputs.size(), 2u);
}

TEST(LlmProgram, LaterOutputsOfAMultiOutputOpAreNamedWithASuffix) {
  ProposalOutcome out = build(R"({"inputs": [{"name": "x", "shape": [4, 6], "dtype": "float32"}],
    "nodes": [{"out": "s", "op": "max_dim", "args": ["x"], "attrs": {"dim": 1, "keepdim": false}},
              {"out": "f", "op": "frexp", "args": ["x"]},
              {"out": "p", "op": "mul", "args": ["f", "f.1"]}],
    "outputs": ["s", "p"]})");
  ASSERT_TRUE(out.graph) << out.rejection << ": " << out.detail;
  const Graph& g = *out.graph;
  const Node& mul = g.nodes.back();
  EXPECT_EQ(mul.op, "mul");
  int frexp = -1;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].op == "frexp") frexp = static_cast<int>(i);
  ASSERT_GE(frexp, 0);
  // Input 1 of mul is frexp's second output (the exponent), possibly through a cast repair inserted.
  int value = mul.inputs[1];
  if (int p = g.producerOf(value); p >= 0 && g.nodes[p].op != "frexp") value = g.nodes[p].inputs[0];
  EXPECT_EQ(value, g.nodes[frexp].outputs[1]);
}

TEST(LlmProgram, GrammarRestrictsOpsAndBoundsTheSize) {
  std::string g = proposalGrammar(catalog(), {"relu", "add", "no_such_op"}, 6);
  EXPECT_NE(g.find("op ::= \"\\\"relu\\\"\" | \"\\\"add\\\"\""), std::string::npos) << g;
  EXPECT_EQ(g.find("no_such_op"), std::string::npos);
  EXPECT_NE(g.find("(\",\" ws node){0,5}"), std::string::npos);
  EXPECT_NE(g.find("root ::="), std::string::npos);
  // An input may name a layout, in the JSON form layoutFromJson reads.
  for (const auto& kind : layoutKinds()) EXPECT_NE(g.find("\\\"" + kind + "\\\""), std::string::npos) << kind;
  EXPECT_NE(g.find("(\",\" ws \"\\\"layout\\\":\" ws layout)?"), std::string::npos) << g;
  EXPECT_THROW(proposalGrammar(catalog(), {"no_such_op"}), std::invalid_argument);
  // Every catalog op when none is named.
  std::string all = proposalGrammar(catalog());
  for (const auto& op : catalog().ops()) EXPECT_NE(all.find("\\\"" + op->name + "\\\""), std::string::npos) << op->name;
}

TEST(LlmProgram, RecordedRepliesOfTheLocalModelParseAsRecorded) {
  std::filesystem::path dir = std::filesystem::path(TCFUZZ_SOURCE_DIR) / "tests/programs/llm";
  json manifest = json::parse(readFile(dir / "replies.json"));
  int valid = 0, rejected = 0;
  for (const auto& entry : manifest["json"]) {
    std::string file = entry["file"].get<std::string>();
    ProposalOutcome out = build(readFile(dir / "replies" / file), entry.value("seed", 1));
    std::string expect = entry["expect"].get<std::string>();
    if (expect == "valid") {
      EXPECT_TRUE(out.graph) << file << ": " << out.rejection << ": " << out.detail;
      if (out.graph) {
        EXPECT_EQ(firstInvalidNode(catalog(), *out.graph), "") << file;
        EXPECT_EQ(static_cast<int>(out.graph->nodes.size()) >= entry.value("min_nodes", 1), true) << file;
        valid++;
      }
    } else {
      EXPECT_EQ(out.rejection, expect) << file << ": " << out.detail;
      rejected++;
    }
  }
  EXPECT_GE(valid, 3);
  EXPECT_GE(rejected, 2);
}

// The JSON form speaks the IR's Python constructs: a node's "python" (a graph break before it, a branch, output
// state, a counter, a form) and the program's "hook" and "schedule". They build into the graph, come back out of
// proposalOf (what few-shot and mutate prompts show), and the grammar lets a constrained model write them; a
// construct outside the vocabulary is a schema rejection that names it.
TEST(LlmProgram, PythonConstructsBuildFromTheFormAndComeBackOut) {
  const char* text = R"({"inputs": [{"name": "x", "shape": [4, 8], "dtype": "float32"}],
    "nodes": [{"out": "a", "op": "sigmoid", "args": ["x"]},
              {"out": "b", "op": "tanh", "args": ["a"], "python": {"graph_break_before": true, "output_state": "scale"}},
              {"out": "c", "op": "mul", "args": ["b", "x"], "python": {"form": "closure"}}],
    "outputs": ["c"], "hook": "global-forward", "schedule": [{"change": "class-attr", "value": 0.5}]})";
  ProposalOutcome out = build(text);
  ASSERT_TRUE(out.graph) << out.rejection << ": " << out.detail;
  const Graph& g = *out.graph;
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_TRUE(g.nodes[0].python.empty());
  EXPECT_TRUE(g.nodes[1].python.graphBreakBefore);
  EXPECT_EQ(g.nodes[1].python.outputState, "scale");
  EXPECT_EQ(g.nodes[2].python.form, "closure");
  EXPECT_EQ(g.hook, "global-forward");
  ASSERT_EQ(g.schedule.size(), 1u);
  EXPECT_EQ(g.schedule[0], (ScheduleStep{"class-attr", 0.5}));
  json back = proposalOf(g);
  EXPECT_EQ(back["nodes"][1]["python"], json::parse(R"({"graph_break_before": true, "output_state": "scale"})"));
  EXPECT_EQ(back["hook"], "global-forward");
  EXPECT_EQ(back["schedule"], json::parse(R"([{"change": "class-attr", "value": 0.5}])"));
  ProposalOutcome again = build(back.dump());
  ASSERT_TRUE(again.graph) << again.rejection << ": " << again.detail;
  EXPECT_EQ(again.graph->contentHash(), g.contentHash());

  ProposalOutcome unknown = build(R"({"inputs": [{"name": "x", "shape": [4], "dtype": "float32"}],
    "nodes": [{"out": "a", "op": "relu", "args": ["x"], "python": {"form": "metaclass"}}]})");
  EXPECT_FALSE(unknown.graph);
  EXPECT_EQ(unknown.rejection, "schema");
  EXPECT_NE(unknown.detail.find("unknown Python form 'metaclass'"), std::string::npos) << unknown.detail;
  ProposalOutcome badHook = build(R"({"inputs": [{"name": "x", "shape": [4], "dtype": "float32"}],
    "nodes": [{"out": "a", "op": "relu", "args": ["x"]}], "hook": "backward"})");
  EXPECT_EQ(badHook.rejection, "schema");
  EXPECT_NE(badHook.detail.find("unknown hook 'backward'"), std::string::npos) << badHook.detail;

  std::string grammar = proposalGrammar(catalog(), {"relu"}, 4);
  for (const char* key : {"graph_break_before", "output_state", "branch", "counter", "\\\"closure\\\"", "global-pre", "hopkind",
                          "\\\"while_loop\\\"", "\\\"item-size\\\""})
    EXPECT_NE(grammar.find(key), std::string::npos) << key;
  // A region run by a higher-order op: the node's "hop" (cond reads program input 0).
  ProposalOutcome hop = build(R"({"inputs": [{"name": "x", "shape": [4], "dtype": "float32"}],
    "nodes": [{"out": "a", "op": "sin", "args": ["x"]},
              {"out": "b", "op": "tanh", "args": ["a"], "python": {"hop": {"kind": "cond", "input": 0, "threshold": 0.25}}}],
    "outputs": ["b"]})");
  ASSERT_TRUE(hop.graph) << hop.rejection << ": " << hop.detail;
  ASSERT_EQ(hop.graph->nodes.size(), 2u);
  EXPECT_EQ(hop.graph->nodes[1].python.hop, (HopConstruct{"cond", 0, 0.25}));
}
