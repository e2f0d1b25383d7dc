// The IR: JSON round trip, strict parsing with located errors, stable content hash, compaction.
#include <gtest/gtest.h>

#include "generators/ir/Graph.h"

namespace tcfuzz::gen {
namespace {

using nlohmann::json;

Graph twoNodeGraph() {
  Graph g;
  g.origin = {"grammar", 7, 3};
  int x = g.addValue({{2, 3}, DType::Float32});
  g.inputs.push_back({x, "x0", {"uniform", -2, 2, 0.5}});
  int p = g.addValue({{3}, DType::Float32});
  g.params.push_back({p, "p0", {"uniform", -1, 1, 0.5}});
  int y = g.addValue({{2, 3}, DType::Float32});
  g.nodes.push_back({"add", {x, p}, {y}, {{"alpha", 1}}});
  int z = g.addValue({{2, 3}, DType::Float32});
  g.nodes.push_back({"sin", {y}, {z}, json::object()});
  g.outputs = {z};
  return g;
}

std::string parseError(const json& doc) {
  try {
    Graph::fromJson(doc, "prog.json");
  } catch (const GraphFormatError& e) {
    return e.what();
  }
  return "";
}

TEST(Graph, AWriteIntoAnInputIsPartOfTheProgram) {
  // writes_input round-trips, changes the content hash and is written only when set (older files keep theirs).
  Graph g = twoNodeGraph();
  std::string before = g.contentHash();
  EXPECT_FALSE(g.toJson()["nodes"][0].contains("writes_input"));
  g.nodes[0].writesInput = true;
  json doc = g.toJson();
  EXPECT_EQ(doc["nodes"][0]["writes_input"], true);
  EXPECT_TRUE(Graph::fromJson(doc).nodes[0].writesInput);
  EXPECT_NE(g.contentHash(), before);
  // add reads x0 and nothing else does, but add is no in-place op: the emitter checks that; the IR says
  // the node would write into input 0.
  EXPECT_TRUE(writesIntoProgramInput(g, g.nodes[0]));
  EXPECT_EQ(writtenInputPositions(g), std::vector<int>{0});
  doc["nodes"][0]["writes_input"] = "yes";
  EXPECT_NE(parseError(doc).find("/nodes/0/writes_input"), std::string::npos) << parseError(doc);
}

TEST(Graph, JsonRoundTripKeepsEverything) {
  Graph g = twoNodeGraph();
  json doc = g.toJson();
  EXPECT_EQ(doc["version"], kGraphFormatVersion);
  Graph back = Graph::fromJson(doc);
  EXPECT_EQ(back.toJson(), doc);
  EXPECT_EQ(back.nodes[0].attrs["alpha"], 1);
  EXPECT_EQ(back.typeOf(2).shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(back.origin.seed, 7u);
}

TEST(Graph, ContentHashIgnoresOriginAndTracksContent) {
  Graph a = twoNodeGraph(), b = twoNodeGraph();
  b.origin = {"llm", 99, 1};
  EXPECT_EQ(a.contentHash(), b.contentHash());
  EXPECT_EQ(a.contentHash().size(), 64u);
  b.nodes[0].attrs["alpha"] = 2;
  EXPECT_NE(a.contentHash(), b.contentHash());
  // Stable across runs and builds: the SHA-256 of the canonical JSON.
  EXPECT_EQ(a.contentHash(), Graph::fromJson(a.toJson()).contentHash());
}

// Provenance: every kind of origin and the LLM core marks survive the JSON form; the marks
// and the origin stay out of the content hash; a graph without them writes no new keys.
TEST(Graph, OriginAndCoreMarksRoundTripOutsideTheHash) {
  Graph plain = twoNodeGraph();
  EXPECT_FALSE(plain.toJson()["origin"].contains("strategy"));
  EXPECT_FALSE(plain.toJson()["nodes"][0].contains("core"));
  Graph llm = twoNodeGraph();
  llm.nodes[1].core = true;
  llm.origin = Origin{};
  llm.origin.generator = "llm";
  llm.origin.seed = 11;
  llm.origin.index = 12;
  llm.origin.minNodes = 6;
  llm.origin.maxNodes = 14;
  llm.origin.strategy = "target-json";
  llm.origin.target = "aliased_mutation";
  llm.origin.model = "SmolLM2-135M-Instruct";
  llm.origin.replyId = 42;
  llm.origin.stored = "work/llm/programs/000012.json";
  llm.origin.minimized = true;
  Graph back = Graph::fromJson(llm.toJson());
  EXPECT_EQ(back.origin, llm.origin);
  EXPECT_EQ(back.origin.kind(), "llm");
  EXPECT_FALSE(back.nodes[0].core);
  EXPECT_TRUE(back.nodes[1].core);
  EXPECT_EQ(back.contentHash(), plain.contentHash());
  Graph mutant = twoNodeGraph();
  mutant.origin = Origin{};
  mutant.origin.generator = "mutation";
  mutant.origin.parent = "id:000003,src:gen,op:grammar";
  mutant.origin.donor = "id:000001,src:gen,op:grammar";
  mutant.origin.mutator = "splice";
  EXPECT_EQ(Graph::fromJson(mutant.toJson()).origin, mutant.origin);
  // Older files spelt the kind with its detail.
  Origin old{"mutation:splice", 0, 3};
  EXPECT_EQ(old.kind(), "mutation");
  json bad = llm.toJson();
  bad["nodes"][1]["core"] = "yes";
  EXPECT_NE(parseError(bad).find("/nodes/1/core"), std::string::npos) << parseError(bad);
  bad = llm.toJson();
  bad["origin"]["replay"] = "x";
  EXPECT_NE(parseError(bad).find("replay"), std::string::npos) << parseError(bad);
}

TEST(Graph, ParseErrorsNameTheFileAndThePlace) {
  json doc = twoNodeGraph().toJson();
  json bad = doc;
  bad["nodes"][1]["inputs"][0] = 3;  // read before defined

  EXPECT_EQ(parseError(bad), "prog.json: at /nodes/1/inputs/0: value 3 is read before it is defined");
  bad = doc;
  bad["values"][0]["dtype"] = "uint8";
  EXPECT_EQ(parseError(bad), "prog.json: at /values/0/dtype: unknown dtype 'uint8'");
  bad = doc;
  bad["version"] = 2;
  EXPECT_NE(parseError(bad).find("version 2 is not supported"), std::string::npos);
  bad = doc;
  bad["nodes"][0]["outputs"] = json::array({0});
  EXPECT_EQ(parseError(bad), "prog.json: at /nodes/0/outputs/0: value 0 is defined twice");
  bad = doc;
  bad["inputs"][0]["name"] = "x; import os";
  EXPECT_NE(parseError(bad).find("is not a Python identifier"), std::string::npos);
  bad = doc;
  bad["values"][0]["shape"] = json::array({-1, 3});
  EXPECT_NE(parseError(bad).find("at /values/0/shape/0: -1 is outside"), std::string::npos);
  bad = doc;
  bad["surprise"] = true;
  EXPECT_EQ(parseError(bad), "prog.json: at /: unknown field 'surprise'");
  bad = doc;
  bad["inputs"][0]["dist"] = {{"kind", "uniform"}, {"low", 3}, {"high", 1}};
  EXPECT_EQ(parseError(bad), "prog.json: at /inputs/0/dist: low must be below high");
  bad = doc;
  bad["outputs"] = json::array();
  EXPECT_NE(parseError(bad).find("returns at least one value"), std::string::npos);
}

TEST(Graph, HostileDocumentsNeverCrash) {
  // Every type confusion at every field gives a GraphFormatError, never another exception.
  json doc = twoNodeGraph().toJson();
  std::vector<json> junk{json(), json(1.5), json("s"), json::array(), json::object(), json(-7),
                         json(uint64_t{1} << 63), json::array({json::array()})};
  int errors = 0;
  std::function<void(json&)> visit = [&](json& node) {
    if (node.is_object() || node.is_array()) {
      for (auto& child : node) {
        json saved = child;
        for (const auto& j : junk) {
          child = j;
          try {
            Graph::fromJson(doc, "hostile.json");
          } catch (const GraphFormatError&) {
            ++errors;
          }
        }
        child = saved;
        visit(child);
      }
    }
  };
  visit(doc);
  EXPECT_GT(errors, 200);
}

TEST(Graph, LoadReportsUnreadableAndNonJsonFiles) {
  EXPECT_THROW(Graph::load("/nonexistent/prog.json"), GraphFormatError);
  std::string path = ::testing::TempDir() + "/garbage.json";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs("{\"format\": \"tcfuzz-graph\", ", f);
  std::fclose(f);
  try {
    Graph::load(path);
    FAIL() << "truncated JSON parsed";
  } catch (const GraphFormatError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": not JSON"), std::string::npos);
  }
}

TEST(Graph, CompactDropsUnreadSourcesAndRenumbers) {
  Graph g = twoNodeGraph();
  int unused = g.addValue({{4}, DType::Int64});
  g.inputs.push_back({unused, "x9", {"randint", 0, 4, 0.5}});
  Graph c = compactGraph(g);
  EXPECT_EQ(c.inputs.size(), 1u);
  EXPECT_EQ(c.values.size(), 4u);
  EXPECT_EQ(c.contentHash(), twoNodeGraph().contentHash());
}

}  // namespace
}  // namespace tcfuzz::gen
