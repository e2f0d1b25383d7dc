// `tcfuzz gen` end to end: files on disk, replay from (seed, index), eager validity through real
// workers, and a generated program judged by `tcfuzz run` with real Inductor.
#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "generators/ir/Graph.h"
#include "TestWorkers.h"

namespace tcfuzz {
namespace {

using nlohmann::json;
using test_support::runCli;
using test_support::TempDir;

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(GenerateCommand, WritesReplayablePrograms) {
  TempDir dir("tcfuzz-gen");
  auto all = runCli({"gen", "--seed", "5", "--count", "3", "--out", (dir.path() / "all").string()});
  ASSERT_EQ(all.exitCode, 0) << all.out;
  EXPECT_NE(all.out.find("generated 3 programs (seed 5, indexes 0..2)"), std::string::npos) << all.out;
  for (int i = 0; i < 3; ++i) {
    std::string stem = "g5_00000" + std::to_string(i);
    ASSERT_TRUE(std::filesystem::exists(dir.path() / "all" / (stem + ".py")));
    gen::Graph g = gen::Graph::load((dir.path() / "all" / (stem + ".json")).string());
    EXPECT_EQ(g.origin.seed, 5u);
    EXPECT_EQ(g.origin.index, static_cast<uint64_t>(i));
    EXPECT_NE(slurp(dir.path() / "all" / (stem + ".py")).find(g.contentHash().substr(0, 16)), std::string::npos);
  }
  // Program 1 alone, from (seed, index), is the same file byte for byte.
  auto one = runCli({"gen", "--seed", "5", "--start", "1", "--count", "1", "--out", (dir.path() / "one").string()});
  ASSERT_EQ(one.exitCode, 0);
  EXPECT_EQ(slurp(dir.path() / "one" / "g5_000001.py"), slurp(dir.path() / "all" / "g5_000001.py"));
  EXPECT_EQ(slurp(dir.path() / "one" / "g5_000001.json"), slurp(dir.path() / "all" / "g5_000001.json"));
}

TEST(GenerateCommand, GeneratedProgramsRunInEager) {
  auto r = runCli({"gen", "--seed", "9", "--count", "40", "--validate", "--workers", "2", "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.out;
  json stats = json::parse(r.out);
  const json& v = stats["eager_validation"];
  EXPECT_EQ(v["programs"], 40);
  EXPECT_EQ(v["ran_without_exception"], 40) << v.dump(2);
  // Programs whose inputs hold +-inf, NaN or +-max on purpose (boundary values) are not judged on it.
  EXPECT_EQ(v["finite_outputs"].get<int>() + v["nonfinite_inputs_by_design"].get<int>(), 40) << v.dump(2);
  EXPECT_GE(v["finite_outputs"].get<int>(), 30) << v.dump(2);
  EXPECT_GE(stats["distinct_ops"].get<int>(), 100);
}

TEST(GenerateCommand, GeneratedProgramAgreesUnderInductor) {
  TempDir dir("tcfuzz-gen-run");
  ASSERT_EQ(runCli({"gen", "--seed", "3", "--count", "1", "--out", dir.path().string()}).exitCode, 0);
  auto r = runCli({"run", "--json", (dir.path() / "g3_000000.py").string()});
  json result = json::parse(r.out);
  EXPECT_EQ(result["verdict"], "agree") << r.out;
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_EQ(result["eager"]["status"], "ok");
  EXPECT_EQ(result["compiled"]["status"], "ok");
}

TEST(GenerateCommand, AProgramWritingIntoAFloatingInputRunsBackwardThroughItsDeclaration) {
  // The first of seed 11's programs that writes into a floating input and runs no region, judged with backward:
  // the input it declares in WRITTEN_INPUTS stays a plain tensor and every run completes. Without the declaration
  // the worker makes that input a leaf that requires grad, and eager itself refuses the write.
  TempDir dir("tcfuzz-gen-writes");
  ASSERT_EQ(runCli({"gen", "--seed", "11", "--count", "40", "--out", dir.path().string()}).exitCode, 0);
  std::filesystem::path chosen;
  for (int i = 0; i < 40 && chosen.empty(); ++i) {
    std::filesystem::path ir = dir.path() / fmt::format("g11_{:06d}.json", i);
    gen::Graph g = gen::Graph::load(ir.string());
    // Not one with a region: a map region's own Inductor crash (open here) would stand in the way.
    if (std::any_of(g.nodes.begin(), g.nodes.end(), [](const gen::Node& n) { return n.python.hop.has_value(); })) continue;
    for (int position : gen::writtenInputPositions(g))
      if (gen::isFloat(g.typeOf(g.inputs[position].value).dtype)) chosen = ir.replace_extension(".py");
  }
  ASSERT_FALSE(chosen.empty()) << "none of seed 11's first 40 programs writes into a floating input";
  std::string program = slurp(chosen);
  ASSERT_NE(program.find("\nWRITTEN_INPUTS = ("), std::string::npos);

  auto declared = runCli({"run", "--json", "--backward", chosen.string()});
  json result = json::parse(declared.out);
  EXPECT_EQ(result["eager"]["status"], "ok") << declared.out;
  EXPECT_EQ(result["compiled"]["status"], "ok") << declared.out;
  EXPECT_EQ(result["fp64"]["status"], "ok") << declared.out;

  std::ofstream(chosen) << program.substr(0, program.find("\n\n# forward writes into these inputs")) << "\n";
  auto undeclared = runCli({"run", "--json", "--backward", chosen.string()});
  json refused = json::parse(undeclared.out);
  EXPECT_EQ(refused["eager"]["status"], "exception") << undeclared.out;
  EXPECT_NE(refused["eager"]["exception"]["message"].get<std::string>().find("requires grad"), std::string::npos)
      << undeclared.out;
}

TEST(GenerateCommand, BadPolicyIsAUsageError) {
  TempDir dir("tcfuzz-gen-policy");
  std::ofstream(dir.path() / "p.json") << R"({"max_nodez": 3})";
  EXPECT_EQ(runCli({"gen", "--policy", (dir.path() / "p.json").string()}).exitCode, 2);
  EXPECT_EQ(runCli({"gen", "--policy", (dir.path() / "missing.json").string()}).exitCode, 2);
}

TEST(GenerateCommand, RepairsAndEmitsAForeignGraph) {
  TempDir dir("tcfuzz-gen-from");
  // An edited program: narrow past the end of its dim, then an op tcfuzz does not know.
  json doc = {{"format", "tcfuzz-graph"},
              {"version", 1},
              {"values", json::array({{{"shape", {3, 6}}, {"dtype", "float32"}, {"device", "cpu"}},
                                      {{"shape", {3, 2}}, {"dtype", "float32"}, {"device", "cpu"}},
                                      {{"shape", {3, 2}}, {"dtype", "float32"}, {"device", "cpu"}}})},
              {"inputs", json::array({{{"value", 0}, {"name", "x"}, {"dist", {{"kind", "uniform"}, {"low", -1}, {"high", 1}}}}})},
              {"nodes", json::array({{{"op", "narrow"}, {"inputs", {0}}, {"outputs", {1}},
                                      {"attrs", {{"dim", 1}, {"start", 5}, {"length", 4}}}},
                                     {{"op", "frobnicate"}, {"inputs", {1}}, {"outputs", {2}}, {"attrs", json::object()}}})},
              {"outputs", {1, 2}}};
  std::ofstream(dir.path() / "edited.json") << doc.dump();
  auto r = runCli({"gen", "--from", (dir.path() / "edited.json").string()});
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_NE(r.out.find("torch.narrow(x, 1, "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("frobnicate"), std::string::npos);
  ASSERT_EQ(runCli({"gen", "--from", (dir.path() / "edited.json").string(), "--out", dir.path().string()}).exitCode, 0);
  gen::Graph fixed = gen::Graph::load((dir.path() / "edited_repaired.json").string());
  ASSERT_EQ(fixed.nodes.size(), 1u);
  EXPECT_LE(fixed.nodes[0].attrs["start"].get<int>() + fixed.nodes[0].attrs["length"].get<int>(), 6);
  // A file that is not an IR document is a usage error, not a crash.
  std::ofstream(dir.path() / "broken.json") << R"({"format": "tcfuzz-graph", "version": 1, "values": [)";
  EXPECT_EQ(runCli({"gen", "--from", (dir.path() / "broken.json").string()}).exitCode, 2);
}

TEST(OpsCommand, ListsTheCatalogWithCoverage) {
  auto r = runCli({"ops", "--json"});
  ASSERT_EQ(r.exitCode, 0);
  json doc = json::parse(r.out);
  EXPECT_GE(doc["ops"].size(), 150u);
  EXPECT_GT(doc["coverage"]["covered"].get<int>(), 100);
  EXPECT_GT(doc["coverage"]["aten_ops"].get<int>(), 1000);
}

}  // namespace
}  // namespace tcfuzz
