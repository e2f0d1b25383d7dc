// The Python a finding's report shows: a Model with one op per line and its shape comment,
// make_inputs(seed) drawing the inputs from the seed, the provenance header with its replay line, and
// attribute values as Python literals.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "generators/Generator.h"
#include "generators/python/PythonEmitter.h"

namespace tcfuzz::gen {
namespace {

using nlohmann::json;

class PythonEmitterTest : public ::testing::Test {
 protected:
  OpCatalog catalog = makeDefaultCatalog();
};

/// x0 [3, 4] float32 -> sin -> the output.
Graph sinOfOneInput() {
  Graph g;
  int x = g.addValue({{3, 4}, DType::Float32});
  g.inputs.push_back({x, "x0", {"uniform", -2, 2, 0.5}});
  int y = g.addValue({{3, 4}, DType::Float32});
  g.nodes.push_back({"sin", {x}, {y}, json::object()});
  g.outputs = {y};
  return g;
}

TEST_F(PythonEmitterTest, EmittedProgramFollowsTheContract) {
  Generator gen(catalog, GenPolicy{}, 3);
  PythonEmitter emitter(catalog);
  for (uint64_t i = 0; i < 100; ++i) {
    Graph g = gen.generate(i);
    std::vector<int> lines;
    std::string py = emitter.emit(g, &lines);
    EXPECT_NE(py.find("class Model(nn.Module):"), std::string::npos);
    EXPECT_NE(py.find("def make_inputs(seed):\n    g = torch.Generator().manual_seed(seed)"), std::string::npos);
    ASSERT_EQ(lines.size(), g.nodes.size());
    // Each node's line carries its output shape comment.
    std::vector<std::string> text;
    std::istringstream in(py);
    for (std::string l; std::getline(in, l);) text.push_back(l);
    for (size_t k = 0; k < g.nodes.size(); ++k)
      EXPECT_NE(text.at(lines[k] - 1).find("# " + g.typeOf(g.nodes[k].outputs[0]).str()), std::string::npos)
          << text.at(lines[k] - 1);
  }
}

TEST_F(PythonEmitterTest, AWriteIntoAnInputSkipsTheCloneAndDeclaresTheInput) {
  // x0.add_(x1): into a clone of x0 by default; into x0 itself when the node writes into its input, and
  // WRITTEN_INPUTS names x0's position so the worker keeps it from autograd's leaves.
  Graph g;
  int x0 = g.addValue({{3, 4}, DType::Float32}), x1 = g.addValue({{3, 4}, DType::Float32});
  g.inputs.push_back({x0, "x0", {"uniform", -2, 2, 0.5}});
  g.inputs.push_back({x1, "x1", {"uniform", -2, 2, 0.5}});
  int y = g.addValue({{3, 4}, DType::Float32});
  g.nodes.push_back({"add_", {x0, x1}, {y}, json::object()});
  g.outputs = {y};
  PythonEmitter emitter(catalog);
  std::string cloned = emitter.emit(g);
  EXPECT_NE(cloned.find("v2 = x0.clone().add_(x1)"), std::string::npos) << cloned;
  EXPECT_EQ(cloned.find("WRITTEN_INPUTS"), std::string::npos);
  g.nodes[0].writesInput = true;
  std::string written = emitter.emit(g);
  EXPECT_NE(written.find("v2 = x0.add_(x1)"), std::string::npos) << written;
  EXPECT_NE(written.find("\nWRITTEN_INPUTS = (0,)\n"), std::string::npos) << written;
  // A second reader of x0 would see the write: the node writes into a clone again, and nothing is declared.
  int z = g.addValue({{3, 4}, DType::Float32});
  g.nodes.push_back({"sin", {x0}, {z}, json::object()});
  g.outputs = {y, z};
  std::string shared = emitter.emit(g);
  EXPECT_NE(shared.find("x0.clone().add_(x1)"), std::string::npos) << shared;
  EXPECT_EQ(shared.find("WRITTEN_INPUTS"), std::string::npos);
}

TEST(PythonLiteral, RendersEachAttributeKind) {
  EXPECT_EQ(pythonLiteral(json("float16"), AttrKind::DType), "torch.float16");
  EXPECT_EQ(pythonLiteral(json("reflect"), AttrKind::Choice), "'reflect'");
  EXPECT_EQ(pythonLiteral(json::array({1, 2}), AttrKind::IntList), "[1, 2]");
  EXPECT_EQ(pythonLiteral(json(2.0), AttrKind::Float), "2.0");
  EXPECT_EQ(pythonLiteral(json(2), AttrKind::Float), "2");  // an integer bound keeps int dtypes
  EXPECT_EQ(pythonLiteral(json(0.25), AttrKind::Float), "0.25");
  EXPECT_EQ(pythonLiteral(json(), AttrKind::Int), "None");
  EXPECT_EQ(pythonLiteral(json(true), AttrKind::Bool), "True");
}

// A hand-made one-node graph: its input is drawn from the seed with its distribution, forward calls
// the op on it with the shape comment, and the text is the same on every call.
TEST_F(PythonEmitterTest, AOneNodeGraphCallsItsOpOnItsInput) {
  PythonEmitter emitter(catalog);
  Graph g = sinOfOneInput();
  std::vector<int> lines;
  std::string py = emitter.emit(g, &lines);
  EXPECT_EQ(emitter.emit(g), py);
  EXPECT_NE(py.find("def forward(self, x0):"), std::string::npos) << py;
  EXPECT_NE(py.find("torch.sin(x0)"), std::string::npos) << py;
  EXPECT_NE(py.find("# [3, 4] float32"), std::string::npos) << py;
  ASSERT_EQ(lines.size(), 1u);
  std::vector<std::string> text;
  std::istringstream in(py);
  for (std::string l; std::getline(in, l);) text.push_back(l);
  EXPECT_NE(text.at(static_cast<size_t>(lines[0] - 1)).find("torch.sin("), std::string::npos) << py;
}

TEST_F(PythonEmitterTest, AnOpTheCatalogLacksIsRefused) {
  Graph g = sinOfOneInput();
  g.nodes[0].op = "no_such_op";
  EXPECT_THROW(PythonEmitter(catalog).emit(g), std::invalid_argument);
}

// The header of a grammar program names its seed and index and the gen command that makes it again;
// programs of two seeds differ, the same (seed, index) emits the same text.
TEST_F(PythonEmitterTest, AGrammarProgramsHeaderNamesItsSeedIndexAndReplayLine) {
  Generator a(catalog, GenPolicy{}, 5), b(catalog, GenPolicy{}, 6);
  PythonEmitter emitter(catalog);
  Graph g = a.generate(3);
  std::string header = provenanceHeader(g);
  EXPECT_NE(header.find("(grammar generator)"), std::string::npos) << header;
  EXPECT_NE(header.find("# Graph " + g.contentHash().substr(0, 16) + ";"), std::string::npos) << header;
  EXPECT_NE(header.find("tcfuzz gen --seed 5 --start 3"), std::string::npos) << header;
  EXPECT_NE(originSummary(g).find("seed 5"), std::string::npos) << originSummary(g);
  EXPECT_EQ(emitter.emit(a.generate(3)), emitter.emit(g));
  EXPECT_NE(emitter.emit(b.generate(3)), emitter.emit(g));
}

}  // namespace
}  // namespace tcfuzz::gen
