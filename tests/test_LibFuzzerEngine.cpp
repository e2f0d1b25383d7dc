// `tcfuzz fuzz --engine libfuzzer`: libFuzzer drives the search, the campaign judges. The end-to-end
// cases run the real binary with real worker zygotes; for speed they pin the planted numeric backend
// of tests/fixtures/planted_backends.py (a TEST FIXTURE: it perturbs the compiled outputs on purpose,
// so every program is a finding the oracle must report) or torch's own eager backend.
#include <signal.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

#include <SQLiteCpp/SQLiteCpp.h>
#include <boost/process.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "fuzzer/campaign/LibFuzzerEngine.h"
#include "tests/TestWorkers.h"

namespace tcfuzz {
namespace {

namespace fs = std::filesystem;
namespace bp = boost::process;
using test_support::fuzzerStat;
using test_support::readText;
using test_support::sandboxArg;
using test_support::sourcePath;
using test_support::TempDir;

std::vector<std::string> engineArgs(const fs::path& out, std::vector<std::string> extra) {
  std::vector<std::string> args{"fuzz",  "--engine", "libfuzzer", "-o",       out.string(), "--sandbox", sandboxArg(),
                                "--status", "log",   "-j",        "2",        "--timeout",  "120",       "--llm",
                                "off"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<std::string> plantedNumeric() {
  return {"--backend", "tcfuzz_planted_numeric", "--plugin", sourcePath("tests/fixtures/planted_backends.py").string()};
}

int64_t countRows(const fs::path& db, const std::string& sql) {
  SQLite::Database d(db.string(), SQLite::OPEN_READONLY);
  return d.execAndGet(sql).getInt64();
}

size_t filesIn(const fs::path& dir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

/// libFuzzer's `ft:` figures, in the order it printed them.
std::vector<int> ftCounts(const std::string& log) {
  std::vector<int> out;
  std::regex re(R"(ft: (\d+))");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back(std::stoi((*it)[1]));
  return out;
}

TEST(LibFuzzerEngine, FeaturesHashIntoTheCountersAndConfigurationIsNotCoverage) {
  EXPECT_EQ(counterIndex("op:add(float32,float32)"), counterIndex("op:add(float32,float32)"));
  EXPECT_NE(counterIndex("op:add(float32,float32)"), counterIndex("op:add(float16,float32)"));
  std::set<size_t> seen;
  for (int i = 0; i < 1000; ++i) {
    size_t c = counterIndex(fmt::format("fact:post_grad_op=aten.op{}.default:float32", i));
    EXPECT_LT(c, kLibFuzzerCounters);
    seen.insert(c);
  }
  EXPECT_GT(seen.size(), 980u);  // 1000 features into 65536 buckets: few collisions
  EXPECT_TRUE(isCoverageFeature("fact:kernel=reduction=1"));
  EXPECT_TRUE(isCoverageFeature("op:mm(float32,float32)"));
  EXPECT_TRUE(isCoverageFeature("verdict:numeric-divergence"));
  EXPECT_FALSE(isCoverageFeature("cfg:backend=inductor"));
  EXPECT_FALSE(isCoverageFeature("cfg:tpl=cpp_wrapper"));
}

// The issue's check in small: libFuzzer's corpus and ft: count grow from the seed programs, every
// judgement is in the campaign's store, the findings reach the usual report index, and a resumed
// session reads the corpus from the feature record instead of judging it again.
TEST(LibFuzzerEngine, GrowsItsCorpusReportsFindingsAndResumesFromTheRecord) {
  TempDir dir("tcfuzz-libfuzzer");
  fs::path out = dir.path() / "out";
  fs::path seeds = dir.path() / "seeds";  // the same seed corpus a native campaign could start from
  auto gen = test_support::runTcfuzz({"gen", "--seed", "7", "--count", "12", "--out", seeds.string()});
  ASSERT_EQ(gen.exitCode, 0) << gen.output;
  auto run = test_support::runTcfuzz(engineArgs(out, [&] {
    auto a = plantedNumeric();
    for (const char* s : {"--seed", "7", "--max-programs", "40", "--no-triage"}) a.push_back(s);
    a.push_back("--seed-corpus");
    a.push_back(seeds.string());
    return a;
  }()));
  ASSERT_EQ(run.exitCode, 0) << run.output;
  EXPECT_NE(run.output.find("INFO: 65536 Extra Counters"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("INITED"), std::string::npos) << run.output;
  // tcfuzz's mutator or crossover made the inputs libFuzzer kept.
  EXPECT_TRUE(std::regex_search(run.output, std::regex(R"(NEW .* MS: \d+ Custom)"))) << run.output;
  std::vector<int> ft = ftCounts(run.output);
  ASSERT_GE(ft.size(), 2u) << run.output;
  EXPECT_GT(ft.back(), ft.front()) << run.output;
  EXPECT_GT(filesIn(out / "libfuzzer" / "corpus"), 0u) << run.output;  // new inputs beyond the 12 seeds
  EXPECT_EQ(filesIn(out / "libfuzzer" / "seeds"), 12u);

  fs::path db = out / "findings.sqlite";
  EXPECT_EQ(countRows(db, "SELECT COUNT(*) FROM programs"), 40);
  EXPECT_EQ(countRows(db, "SELECT COUNT(*) FROM programs WHERE origin NOT LIKE 'libfuzzer:%'"), 0);
  EXPECT_GT(countRows(db, "SELECT COUNT(*) FROM programs WHERE origin = 'libfuzzer:seed'"), 0);
  EXPECT_GT(countRows(db, "SELECT COUNT(*) FROM programs WHERE origin != 'libfuzzer:seed'"), 0);
  EXPECT_GE(countRows(db, "SELECT COUNT(*) FROM findings WHERE verdict = 'numeric-divergence'"), 1);
  EXPECT_EQ(fuzzerStat(out, "engine"), "libfuzzer");
  EXPECT_EQ(fuzzerStat(out, "programs_done"), "40");
  EXPECT_GT(std::stoll(fuzzerStat(out, "libfuzzer_counter_features")), 0);
  EXPECT_EQ(fuzzerStat(out, "libfuzzer_replayed_from_record"), "0");
  // A queue entry's header names the libFuzzer engine and where its IR is.
  bool sawMutant = false;
  for (const auto& e : fs::directory_iterator(out / "queue")) {
    if (e.path().extension() != ".py" || e.path().filename().string().find("op:seed") != std::string::npos) continue;
    std::string py = readText(e.path());
    EXPECT_NE(py.find("# Made by tcfuzz's libFuzzer engine: mutator "), std::string::npos) << py.substr(0, 400);
    EXPECT_NE(py.find("its IR is the .json file beside this one"), std::string::npos) << py.substr(0, 400);
    sawMutant = true;
  }
  EXPECT_TRUE(sawMutant);

  // The findings reach the report index, as a native campaign's do.
  auto triage = test_support::runTcfuzz({"triage", out.string(), "--sandbox", sandboxArg(), "-j", "2", "--no-minimize",
                                         "--no-ablation", "--no-bisect", "--no-verify", "--no-tlparse", "--plugin",
                                         sourcePath("tests/fixtures/planted_backends.py").string()});
  ASSERT_EQ(triage.exitCode, 0) << triage.output;
  std::string index = readText(out / "index.md");
  EXPECT_NE(index.find("[tcfuzz_planted_numeric] compiled result is further from float64 than eager"), std::string::npos)
      << index;

  // --resume: every corpus input read again at start comes from the record, none is judged again.
  size_t inputs = filesIn(out / "libfuzzer" / "corpus") + filesIn(out / "libfuzzer" / "seeds");
  auto resumed = test_support::runTcfuzz({"fuzz", "--resume", out.string(), "--engine", "libfuzzer", "--sandbox",
                                          sandboxArg(), "--status", "log", "-j", "2", "--llm", "off", "--no-triage",
                                          "--max-programs", "4"});
  ASSERT_EQ(resumed.exitCode, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("judged programs recorded"), std::string::npos) << resumed.output;
  EXPECT_GE(std::stoull(fuzzerStat(out, "libfuzzer_replayed_from_record")), inputs - 1) << resumed.output;  // one may be a duplicate
  EXPECT_EQ(fuzzerStat(out, "programs_this_session"), "4");
  EXPECT_EQ(countRows(db, "SELECT COUNT(*) FROM programs"), 44);
}

// SIGINT stops a libFuzzer session as it stops the native loop: promptly, exit 0, state on disk.
TEST(LibFuzzerEngine, SigintStopsTheSessionAndKeepsWhatItFound) {
  TempDir dir("tcfuzz-libfuzzer-int");
  fs::path out = dir.path() / "out";
  fs::path log = dir.path() / "log.txt";
  auto args = engineArgs(out, plantedNumeric());
  args.push_back("--no-triage");
  bp::child c(TCFUZZ_BINARY, bp::args(args), (bp::std_out & bp::std_err) > log.string());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (std::chrono::steady_clock::now() < deadline) {
    std::string done = fuzzerStat(out, "programs_done");
    if (!done.empty() && std::stoll(done) >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  ASSERT_TRUE(c.running()) << readText(log);
  auto sent = std::chrono::steady_clock::now();
  ::kill(c.id(), SIGINT);
  c.wait();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  std::string text = readText(log);
  EXPECT_EQ(c.exit_code(), 0) << text;
  EXPECT_LT(seconds, 6.0) << text;
  EXPECT_NE(text.find("SIGINT received"), std::string::npos) << text;
  EXPECT_NE(text.find("stopped by a signal"), std::string::npos) << text;
  EXPECT_NE(text.find("--resume"), std::string::npos) << text;
  EXPECT_GE(std::stoll(fuzzerStat(out, "programs_done")), 3);
  EXPECT_EQ(std::stoll(fuzzerStat(out, "programs_done")), countRows(out / "findings.sqlite", "SELECT COUNT(*) FROM programs"));
}

TEST(LibFuzzerEngine, FlagsOnlyWithTheEngineAndUnknownEnginesAreRefused) {
  TempDir dir("tcfuzz-libfuzzer-flags");
  auto bad = test_support::runTcfuzz({"fuzz", "-o", (dir.path() / "a").string(), "--engine", "afl", "--llm", "off"});
  EXPECT_EQ(bad.exitCode, 2);
  EXPECT_NE(bad.output.find("--engine takes native or libfuzzer"), std::string::npos) << bad.output;
  auto stray = test_support::runTcfuzz(
      {"fuzz", "-o", (dir.path() / "b").string(), "--libfuzzer-arg=-mutate_depth=2", "--llm", "off"});
  EXPECT_EQ(stray.exitCode, 2);
  EXPECT_NE(stray.output.find("--libfuzzer-arg needs --engine libfuzzer"), std::string::npos) << stray.output;
}

}  // namespace
}  // namespace tcfuzz
