// The compiled run's entry points through torch.export (docs/oracle.md, "Entry points"), end to end through
// `tcfuzz run --entry`: real torch.export, run_decompositions, save/load and AOTInductor on real programs.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "TestWorkers.h"

using namespace tcfuzz;
using tcfuzz::test_support::CliRun;
using tcfuzz::test_support::runCli;
using tcfuzz::test_support::sourcePath;
using tcfuzz::test_support::TempDir;
namespace fs = std::filesystem;

namespace {

/// `tcfuzz run --json --entry ENTRY program` in a kept work directory `work`: the parsed JSON line.
nlohmann::json runThrough(const std::string& entry, const fs::path& program, const fs::path& work,
                          std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"run", "--json", "--keep", "--work-dir", work.string(), "--entry", entry};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back(program.string());
  CliRun r = runCli(args);
  EXPECT_EQ(r.exitCode, 0) << entry << "\n" << r.out << r.err;
  return nlohmann::json::parse(r.out, nullptr, false);
}

/// The files under `dir` whose name ends in ".pt2" (a saved program or an AOTInductor package).
std::vector<std::string> packagesUnder(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied))
    if (e.is_regular_file() && e.path().extension() == ".pt2") found.push_back(e.path().string());
  return found;
}

}  // namespace

TEST(EntryPoints, EveryEntryJudgesWritesIntoABufferAndAnInputAsEagerDoesAndKeepsNoPackage) {
  // forward adds into a buffer and doubles its input: the writes land in the model and the caller's tensor under
  // every entry point (a loaded program's copies are written back; AOTInductor's constants are the model's own).
  TempDir dir("tcfuzz-entry");
  fs::path program = sourcePath("tests/programs/mutates_input_and_buffer.py");
  // Two entries export with Dim ranges (--dynamic true): call 4 then runs at another size (dim 0: 3 -> 2).
  for (std::string entry : {"export", "export+decompose", "export+saveload", "aoti"}) {
    fs::path work = dir.path() / entry;
    bool ranges = entry == "export+decompose" || entry == "aoti";
    nlohmann::json j = runThrough(entry, program, work, ranges ? std::vector<std::string>{"--dynamic", "true"}
                                                               : std::vector<std::string>{});
    ASSERT_TRUE(j.is_object()) << entry;
    EXPECT_EQ(j["verdict"], "agree") << entry << ": " << j.value("reason", "");
    nlohmann::json config{{"entry", entry}};
    if (ranges) config["dynamic"] = true;
    EXPECT_EQ(j["config"], config);
    int resized = 0;
    for (const auto& o : j["outputs"]) resized += o["name"].get<std::string>().starts_with("resized (dim 0 of input 0: 3 -> 2)");
    EXPECT_EQ(resized, ranges ? 1 : 0) << entry << ": " << j["outputs"].dump();
    EXPECT_EQ(j["compiled"]["phase"], "done") << entry;
    EXPECT_FALSE(j["compiled"].contains("compile_facts")) << entry;  // Dynamo's facts are torch.compile's
    int states = 0;
    for (const auto& o : j["outputs"]) states += o["role"] == "state";
    EXPECT_GE(states, 2) << entry << ": the buffer and the input after forward are compared";
    EXPECT_GT(j["compiled"]["times"].value("compile_s", 0.0), 0.0) << entry;
    EXPECT_TRUE(packagesUnder(work).empty()) << entry << ": " << nlohmann::json(packagesUnder(work)).dump();
  }
}

TEST(EntryPoints, WhatExportRefusesByDesignIsUnsupportedDocumentedNotAFinding) {
  // A Python branch on a tensor's value: export cannot trace it (torch.cond is the documented way), strict or not.
  TempDir dir("tcfuzz-entry-refusal");
  fs::path program = sourcePath("tests/programs/item_branch.py");
  nlohmann::json loose = runThrough("export", program, dir.path() / "nonstrict");
  EXPECT_EQ(loose["verdict"], "agree");
  EXPECT_EQ(loose["compiled"]["phase"], "export");
  EXPECT_TRUE(loose.value("reason", "").starts_with("unsupported (documented): torch.")) << loose.value("reason", "");
  nlohmann::json strict = runThrough("export", program, dir.path() / "strict", {"--export-strict"});
  EXPECT_EQ(strict["verdict"], "agree");
  EXPECT_EQ(strict["config"], (nlohmann::json{{"entry", "export"}, {"export_strict", true}}));
  EXPECT_TRUE(strict.value("reason", "").starts_with("unsupported (documented): ")) << strict.value("reason", "");
}

TEST(EntryPoints, TorchCompilesOptionsBesideAnExportEntryAreAUsageError) {
  CliRun r = runCli({"run", "--entry", "aoti", "--backward", sourcePath("corpus/frexp_mul.py").string()});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--entry aoti runs torch.export"), std::string::npos) << r.err;
  EXPECT_EQ(runCli({"run", "--entry", "torchscript", sourcePath("corpus/frexp_mul.py").string()}).exitCode, 2);
}
