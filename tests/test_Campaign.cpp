// End-to-end tests of `tcfuzz fuzz` with real worker zygotes. For speed they pin the backend: the
// planted-bug backends of tests/fixtures/planted_backends.py (TEST FIXTURES: they corrupt or fail
// on purpose so that the oracle must fire) or torch's own "eager" backend (real torch.compile
// through Dynamo, no Inductor C++ compile).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "fuzzer/campaign/output/CampaignOutput.h"
#include "fuzzer/campaign/FeatureSet.h"
#include "fuzzer/campaign/output/FindingStore.h"
#include "fuzzer/campaign/output/GpuStats.h"
#include "fuzzer/cli/Settings.h"
#include "tests/TestWorkers.h"

namespace tcfuzz {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
namespace bp = boost::process;
using test_support::TempDir;
using test_support::sourcePath;
using test_support::Finished;
using test_support::readText;
using test_support::sandboxArg;
Finished runFuzz(const std::vector<std::string>& args) { return test_support::runTcfuzz(args); }

/// A fuzz command line: the common flags, then `extra`.
std::vector<std::string> fuzzArgs(std::vector<std::string> extra) {
  std::vector<std::string> args{"fuzz", "--sandbox", sandboxArg(), "--status", "log", "-j", "2", "--timeout", "120", "--llm", "off"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

int64_t countRows(const fs::path& db, const std::string& sql) {
  SQLite::Database d(db.string(), SQLite::OPEN_READONLY);
  return d.execAndGet(sql).getInt64();
}

std::map<std::string, std::string> stats(const fs::path& out) {
  std::map<std::string, std::string> kv;
  std::ifstream in(out / "fuzzer_stats");
  std::string line;
  std::regex re(R"(^(\w+)\s*:\s(.*)$)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, re)) kv[m[1]] = m[2];
  }
  return kv;
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<std::string> plantedNumeric() {
  return {"--backend", "tcfuzz_planted_numeric", "--plugin", sourcePath("tests/fixtures/planted_backends.py").string()};
}

TEST(FuzzCommand, UsageErrorsExitTwo) {
  TempDir dir("tcfuzz-campaign-usage");
  EXPECT_EQ(runFuzz({"fuzz", "--no-such-flag"}).exitCode, 2);
  auto noOut = runFuzz({"fuzz", "--max-programs", "1"});
  EXPECT_EQ(noOut.exitCode, 2);
  EXPECT_NE(noOut.output.find("-o OUT"), std::string::npos) << noOut.output;
  EXPECT_EQ(runFuzz({"fuzz", "--resume", (dir.path() / "none").string()}).exitCode, 2);
  EXPECT_EQ(runFuzz(fuzzArgs({"-o", (dir.path() / "x").string(), "--max-time", "soon"})).exitCode, 2);
  auto fp64 = runFuzz(fuzzArgs({"-o", (dir.path() / "y").string(), "--fp64", "sometimes"}));
  EXPECT_EQ(fp64.exitCode, 2);
  EXPECT_NE(fp64.output.find("--fp64 takes on-demand or always"), std::string::npos) << fp64.output;
  auto linker = runFuzz(fuzzArgs({"-o", (dir.path() / "z").string(), "--kernel-linker", "gold"}));
  EXPECT_EQ(linker.exitCode, 2);
  EXPECT_NE(linker.output.find("--kernel-linker takes auto, lld or default"), std::string::npos) << linker.output;
  auto batch = runFuzz(fuzzArgs({"-o", (dir.path() / "v").string(), "--batch", "17"}));
  EXPECT_EQ(batch.exitCode, 2);
  EXPECT_NE(batch.output.find("--batch must be 1 (each program alone) to 16"), std::string::npos) << batch.output;
  auto share = runFuzz(fuzzArgs({"-o", (dir.path() / "w").string(), "--triage-share", "0"}));
  EXPECT_EQ(share.exitCode, 2);
  EXPECT_NE(share.output.find("--triage-share must lie in (0, 1]"), std::string::npos) << share.output;
}

// --seed-corpus: a new campaign judges the given programs first, in name order, before generating.
TEST(Campaign, JudgesItsSeedCorpusFirstInNameOrder) {
  TempDir dir("tcfuzz-campaign-seeds");
  fs::path seeds = dir.path() / "seeds", out = dir.path() / "out";
  auto gen = runFuzz({"gen", "--seed", "4", "--count", "3", "--out", seeds.string()});
  ASSERT_EQ(gen.exitCode, 0) << gen.output;
  auto run = runFuzz(fuzzArgs({"-o", out.string(), "--seed", "2", "--max-programs", "4", "--backend", "eager",
                               "--no-triage", "--seed-corpus", seeds.string()}));
  ASSERT_EQ(run.exitCode, 0) << run.output;
  SQLite::Database d((out / "findings.sqlite").string(), SQLite::OPEN_READONLY);
  SQLite::Statement rows(d, "SELECT origin, hash FROM programs ORDER BY idx");
  std::vector<std::pair<std::string, std::string>> got;
  while (rows.executeStep()) got.emplace_back(rows.getColumn(0).getString(), rows.getColumn(1).getString());
  ASSERT_EQ(got.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(got[static_cast<size_t>(i)].first, "seed");
    EXPECT_EQ(got[static_cast<size_t>(i)].second,
              gen::Graph::load(seeds / fmt::format("g4_{:06d}.json", i)).contentHash());
  }
  EXPECT_NE(got[3].first, "seed");
  auto empty = runFuzz(fuzzArgs({"-o", (dir.path() / "none").string(), "--seed-corpus", out.string() + "/crashes"}));
  EXPECT_EQ(empty.exitCode, 2);
  EXPECT_NE(empty.output.find("holds no IR program"), std::string::npos) << empty.output;
}

// A campaign end to end: a planted numeric bug chosen by flag is found, recorded in
// findings.sqlite before anything else, reported under crashes/, and the AFL-style files exist.
TEST(Campaign, FindsAPlantedNumericBugAndWritesTheOutputDirectory) {
  TempDir dir("tcfuzz-campaign");
  fs::path out = dir.path() / "out";
  // A known issue that every planted divergence matches: each new signature is a rediscovery (recorded as any
  // finding, not credited to the scheduler).
  fs::path known = dir.path() / "known.json";
  std::ofstream(known) << R"({"issues": [{"number": 1, "url": "https://github.com/pytorch/pytorch/issues/1",
      "title": "planted", "state": "open", "key": {"symptom": "numeric-divergence"}}]})";
  auto run = runFuzz(fuzzArgs(
      concat({"-o", out.string(), "--seed", "11", "--max-programs", "4", "--known", known.string()}, plantedNumeric())));
  ASSERT_EQ(run.exitCode, 0) << run.output;
  fs::path db = out / "findings.sqlite";
  EXPECT_EQ(countRows(db, "SELECT COUNT(*) FROM programs"), 4);
  EXPECT_EQ(std::stoll(stats(out)["known_rediscoveries"]),
            countRows(db, "SELECT COUNT(DISTINCT signature_id) FROM findings WHERE verdict = 'numeric-divergence'"));
  int64_t numeric = countRows(db, "SELECT COUNT(*) FROM findings WHERE verdict = 'numeric-divergence'");
  EXPECT_GE(numeric, 1) << run.output;
  // Every signature has its folder with the first witness.
  SQLite::Database d(db.string(), SQLite::OPEN_READONLY);
  SQLite::Statement sigs(d, "SELECT DISTINCT signature_id FROM findings");
  int folders = 0;
  while (sigs.executeStep()) {
    fs::path f = out / "crashes" / sigs.getColumn(0).getString();
    EXPECT_TRUE(fs::exists(f / "program.py")) << f;
    EXPECT_TRUE(fs::exists(f / "meta.json")) << f;
    EXPECT_NE(readText(f / "meta.json").find("tcfuzz_planted_numeric"), std::string::npos);
    ++folders;
  }
  EXPECT_GE(folders, 1);
  auto kv = stats(out);
  EXPECT_EQ(kv["programs_done"], "4");
  EXPECT_EQ(kv["seed"], "11");
  EXPECT_EQ(kv["kernel_linker"], "lld");  // --kernel-linker auto, with scripts/setup's lld and torch 2.15
  // Worker time inside torch in any job, and the rest: the harness's share.
  double allJobs = std::stod(kv["torch_share_all_jobs"]), harness = std::stod(kv["harness_share"]);
  EXPECT_GT(allJobs, 0.0);
  EXPECT_LE(allJobs, 1.0);
  EXPECT_NEAR(harness, 1.0 - allJobs, 0.0011);
  // Background triage keeps to its 2% of the worker time: a four-program campaign leaves its signatures to
  // tcfuzz triage, and says so.
  EXPECT_EQ(kv["triage_share_cap"], "0.020");
  EXPECT_EQ(kv["triage_worker_s"], "0.0");
  EXPECT_EQ(kv["triage_share"], "0.000");
  EXPECT_TRUE(std::regex_search(run.output, std::regex("[1-9][0-9]* signature\\(s\\) not triaged yet; tcfuzz triage")))
      << run.output;
  EXPECT_EQ(std::stoll(kv["findings"]), countRows(db, "SELECT COUNT(*) FROM findings"));
  EXPECT_GE(std::stoll(kv["queue_size"]), 1);
  int queued = 0;
  for (const auto& e : fs::directory_iterator(out / "queue")) queued += e.path().extension() == ".json";
  EXPECT_EQ(queued, std::stoll(kv["queue_size"]));
  std::string plot = readText(out / "plot_data");
  EXPECT_TRUE(plot.starts_with("# unix_time")) << plot;
  EXPECT_GE(std::count(plot.begin(), plot.end(), '\n'), 3);
  EXPECT_NE(readText(out / "cmdline").find("--max-programs 4"), std::string::npos);
  // A new campaign refuses a directory that already holds one.
  auto again = runFuzz(fuzzArgs({"-o", out.string(), "--max-programs", "1"}));
  EXPECT_EQ(again.exitCode, 2);
  EXPECT_NE(again.output.find("--resume"), std::string::npos) << again.output;
}

// --batch 4: programs judged four under one compile, each recorded as a program of its own. The planted numeric bug
// (TEST FIXTURE) perturbs the first floating output of a compiled graph, so in a batch only one member's leaves
// differ; that member is judged again alone, and its finding is recorded against its own program.
TEST(Campaign, BatchedCompilesJudgeEachProgramOnItsOwn) {
  TempDir dir("tcfuzz-campaign-batch");
  fs::path out = dir.path() / "out";
  auto run = runFuzz(fuzzArgs(concat({"-o", out.string(), "--seed", "11", "--max-programs", "8", "--batch", "4",
                                      "--no-triage"},
                                     plantedNumeric())));
  ASSERT_EQ(run.exitCode, 0) << run.output;
  auto kv = stats(out);
  EXPECT_EQ(kv["programs_done"], "8");
  int64_t judged = 0, batched = 0;
  std::string sizes = kv["programs_by_batch_size"];
  std::regex size(R"((\d+)=(\d+))");
  for (std::sregex_iterator it(sizes.begin(), sizes.end(), size), end; it != end; ++it) {
    judged += std::stoll((*it)[2]);
    if (std::stoi((*it)[1]) > 1) batched += std::stoll((*it)[2]);
  }
  EXPECT_EQ(judged, 8) << sizes;
  EXPECT_GE(batched, 2) << sizes;
  fs::path db = out / "findings.sqlite";
  EXPECT_EQ(countRows(db, "SELECT COUNT(*) FROM programs WHERE json_extract(phases, '$.batch') > 1"), batched);
  EXPECT_EQ(countRows(db, "SELECT COUNT(*) FROM programs WHERE json_extract(phases, '$.nodes') > 0"), 8);
  // Each finding was judged alone (the planted bug is in every compiled graph, so nothing is batch-only) and its
  // witness is one program, never the batch.
  SQLite::Database d(db.string(), SQLite::OPEN_READONLY);
  SQLite::Statement findings(d, "SELECT signature_id, result FROM findings");
  int seen = 0;
  while (findings.executeStep()) {
    json result = json::parse(findings.getColumn(1).getString());
    if (result.contains("batch")) EXPECT_EQ(result["batch"]["judged"], "alone") << result["batch"];
    std::string py = readText(out / "crashes" / findings.getColumn(0).getString() / "program.py");
    EXPECT_EQ(py.find("tcfuzz batch"), std::string::npos);
    EXPECT_NE(py.find("class Model(nn.Module)"), std::string::npos);
    ++seen;
  }
  EXPECT_GE(seen, 1) << run.output;
  EXPECT_EQ(kv["batch_only_findings"], "0");
  EXPECT_GT(std::stoll(kv["batch_members_with_python"]), 0) << kv["batch_members_with_python"];  // Dynamo-level members
  EXPECT_EQ(kv.count("arm_batch_4"), 0u);  // pinned: no batch arm is drawn
}

// A default campaign's programs run in warm persistent children, and each program row says where its
// time went: the compile phases, the job seconds, the child it ran in; every finding is confirmed.
TEST(Campaign, ProgramsRunInWarmChildrenAndRecordTheirCompilePhases) {
  TempDir dir("tcfuzz-campaign");
  fs::path out = dir.path() / "out";
  auto run = runFuzz(fuzzArgs({"-o", out.string(), "--seed", "5", "--max-programs", "6", "--backend", "inductor",
                               "--no-triage"}));
  ASSERT_EQ(run.exitCode, 0) << run.output;
  SQLite::Database d((out / "findings.sqlite").string(), SQLite::OPEN_READONLY);
  SQLite::Statement rows(d, "SELECT verdict, phases FROM programs");
  int compiled = 0, judgedWarm = 0;
  // A batch's members share its job (their compile seconds and jobs_before): a job counts once.
  std::set<std::pair<int, double>> warmJobs, coldJobs;
  while (rows.executeStep()) {
    nlohmann::json p = nlohmann::json::parse(rows.getColumn(1).getString());
    ASSERT_TRUE(p.contains("eager_s") && p.contains("fp64_s") && p.contains("compile_phases")) << p.dump();
    if (p.value("compile_skipped", false)) continue;
    ++compiled;
    double sum = 0;
    for (const auto& [phase, seconds] : p["compile_phases"].items()) sum += seconds.get<double>();
    EXPECT_NEAR(sum, p["compile_s"].get<double>(), 1e-6) << p.dump();
    std::string verdict = rows.getColumn(0).getString();
    if (verdict == "crash-mismatch" || verdict == "numeric-divergence" || verdict == "state-leak-suspect")
      EXPECT_TRUE(p.contains("confirmation")) << p.dump();
    if (p.contains("confirmation")) {  // a finding's row may hold its confirming run: a fresh child by design
      EXPECT_EQ(p["confirmation"], "fresh-cold-cache") << p.dump();
      continue;
    }
    if (p.value("batch_judged", "") == "not-alone") {  // its batch's finding did not hold alone: the row is that run
      EXPECT_FALSE(p["persistent"].get<bool>()) << p.dump();
      continue;
    }
    ++judgedWarm;
    EXPECT_TRUE(p["persistent"].get<bool>()) << p.dump();
    int before = p["jobs_before"].get<int>();
    (before > 0 ? warmJobs : coldJobs).insert({before, p["compile_s"].get<double>()});
  }
  EXPECT_GE(compiled, 4);
  EXPECT_GE(judgedWarm, 1);
  EXPECT_LE(coldJobs.size(), 2u) << run.output;  // two zygotes: at most one cold first job each
}

// One eager campaign (seed 9, 40 programs, no triage) that several tests read, run once by
// SetUpTestSuite: ctest runs this suite as one test in one process (CMakeLists.txt, +suite). A test
// that changes a campaign works on its own copy of it.
class EagerCampaign : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<TempDir>("tcfuzz-eager-campaign");
    run_ = std::make_unique<Finished>(runFuzz(fuzzArgs(
        {"-o", campaign().string(), "--seed", "9", "--max-programs", "40", "--backend", "eager", "--no-triage"})));
  }
  static void TearDownTestSuite() {
    run_.reset();
    dir_.reset();
  }
  void SetUp() override { ASSERT_EQ(run_->exitCode, 0) << run_->output; }
  /// The shared campaign's output directory (read it, never change it).
  static fs::path campaign() { return dir_->path() / "out"; }
  /// A copy of the shared campaign's output directory at `to`, for a test that changes it.
  static fs::path copyOfCampaign(const fs::path& to) {
    fs::copy(campaign(), to, fs::copy_options::recursive);
    return to;
  }

 private:
  static inline std::unique_ptr<TempDir> dir_;
  static inline std::unique_ptr<Finished> run_;
};

// Honest provenance: every queue entry's header says where it came from, and its replay line,
// run in the campaign's output directory, makes the same program (the header's graph hash) again: grammar
// programs through gen --seed/--start/--nodes, mutants through gen --mutate of their parent queue entry.
// fuzzer_stats counts each origin's programs, their size, dead nodes and cost.
TEST_F(EagerCampaign, EveryQueueEntrysHeaderReplaysItsProgram) {
  TempDir dir("tcfuzz-provenance");
  const fs::path out = campaign();
  std::regex hashLine(R"(^# Graph ([0-9a-f]{16}); replay[^:]*: tcfuzz (gen .*)$)");
  std::map<std::string, int> replayed;
  int n = 0;
  for (const auto& entry : fs::directory_iterator(out / "queue")) {
    if (entry.path().extension() != ".py") continue;
    std::istringstream text(readText(entry.path()));
    std::string first, second;
    std::getline(text, first);
    std::getline(text, second);
    std::smatch m;
    ASSERT_TRUE(std::regex_match(second, m, hashLine)) << entry.path() << "\n" << first << "\n" << second;
    std::string kind = first.find("(grammar generator)") != std::string::npos ? "grammar"
                       : first.find("(mutation)") != std::string::npos        ? "mutation"
                                                                               : "other";
    std::vector<std::string> args;
    std::istringstream words(m[2].str());
    for (std::string w; words >> w;) args.push_back(w.starts_with("queue/") ? (out / w).string() : w);
    fs::path replayDir = dir.path() / fmt::format("replay{}", n++);
    args.insert(args.end(), {"--out", replayDir.string()});
    Finished again = runFuzz(args);
    ASSERT_EQ(again.exitCode, 0) << m[2] << "\n" << again.output;
    int found = 0;
    for (const auto& made : fs::directory_iterator(replayDir)) {
      if (made.path().extension() != ".py") continue;
      ++found;
      EXPECT_NE(readText(made.path()).find("# Graph " + m[1].str() + ";"), std::string::npos)
          << entry.path() << " replayed by " << m[2] << " as another program:\n" << readText(made.path()).substr(0, 400);
    }
    EXPECT_EQ(found, 1) << m[2];
    replayed[kind]++;
  }
  EXPECT_GE(replayed["grammar"], 3);
  EXPECT_GE(replayed["mutation"], 3);
  EXPECT_EQ(replayed["other"], 0);
  auto kv = stats(out);
  EXPECT_EQ(std::stoi(kv["origin_grammar_programs"]) + std::stoi(kv["origin_mutation_programs"]),
            std::stoi(kv["programs_done"]));
  EXPECT_EQ(kv["origin_grammar_dead_nodes"], "0");
  EXPECT_EQ(kv["origin_mutation_dead_nodes"], "0");
  EXPECT_GT(std::stod(kv["origin_grammar_mean_nodes"]), 3.0);
  EXPECT_GT(std::stod(kv["origin_grammar_cpu_s"]), 0.0);
  EXPECT_EQ(kv["llm_cpu_share"], "0.000");
}

// A program Dynamo compiled nothing of is counted, but it is no coverage, never a seed, and its
// arms are charged its cost with no yield, so the bandit learns to avoid what causes it.
TEST(Campaign, NothingCompiledProgramsAddNoCoverageNoSeedAndNoYield) {
  TempDir dir("tcfuzz-campaign");
  fs::path out = dir.path() / "out";
  // TEST FIXTURE plugin: turns Dynamo off in the compiled job, so no program reaches a compiler.
  auto run = runFuzz(fuzzArgs({"-o", out.string(), "--seed", "5", "--max-programs", "4", "--backend", "inductor",
                               "--no-triage", "--plugin", sourcePath("tests/fixtures/planted_dynamo_off.py").string()}));
  ASSERT_EQ(run.exitCode, 0) << run.output;
  fs::path db = out / "findings.sqlite";
  int64_t nothing = countRows(db, "SELECT COUNT(*) FROM programs WHERE verdict = 'nothing-compiled'");
  EXPECT_EQ(nothing, countRows(db, "SELECT COUNT(*) FROM programs WHERE verdict != 'invalid-program'"));
  EXPECT_GE(nothing, 3);
  EXPECT_EQ(countRows(db, "SELECT COUNT(*) FROM queue"), 0);
  EXPECT_EQ(countRows(db, "SELECT COUNT(*) FROM programs WHERE verdict = 'nothing-compiled' AND new_features > 0"), 0);
  auto kv = stats(out);
  EXPECT_EQ(kv["verdict_nothing_compiled"], std::to_string(nothing));
  int arms = 0;
  for (const auto& [key, value] : kv)
    if (key.starts_with("arm_")) {
      ++arms;
      EXPECT_NE(value.find(" yield=0 "), std::string::npos) << key << ": " << value;
    }
  EXPECT_GT(arms, 0);
}

// kill -9 in the middle of a campaign, then --resume: every finding committed before the kill is
// still there, its crashes/ folder exists, and program indices continue after the last one.
TEST(Campaign, ResumeAfterKillNineLosesNoFinding) {
  TempDir dir("tcfuzz-campaign-kill");
  fs::path out = dir.path() / "out";
  fs::path db = out / "findings.sqlite";
  auto args = fuzzArgs(concat({"-o", out.string(), "--seed", "5"}, plantedNumeric()));
  bp::child c(TCFUZZ_BINARY, bp::args(args), bp::std_out > bp::null, bp::std_err > bp::null);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(4);
  int64_t before = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    if (!fs::exists(db)) continue;
    try {
      before = countRows(db, "SELECT COUNT(*) FROM findings");
    } catch (const SQLite::Exception&) {
      continue;  // the schema is being created
    }
    if (before >= 2) break;
  }
  ASSERT_GE(before, 2) << "no findings within 4 minutes";
  ::kill(c.id(), SIGKILL);
  c.wait();
  before = countRows(db, "SELECT COUNT(*) FROM findings");  // what the kill left
  int64_t maxIndex = countRows(db, "SELECT MAX(idx) FROM programs");
  int64_t maxFinding = countRows(db, "SELECT MAX(id) FROM findings");

  // No --llm on the resume's command line: the session keeps the campaign's --llm off.
  auto resumed = runFuzz({"fuzz", "--resume", out.string(), "--sandbox", sandboxArg(), "--status", "log", "-j", "2",
                          "--max-programs", "2"});
  ASSERT_EQ(resumed.exitCode, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("tcfuzz: the LLM is off as when the campaign started"), std::string::npos)
      << resumed.output;
  EXPECT_FALSE(fs::exists(out / "work" / "llm-server.log"));
  EXPECT_GE(countRows(db, "SELECT COUNT(*) FROM findings"), before);
  EXPECT_EQ(countRows(db, fmt::format("SELECT COUNT(*) FROM findings WHERE id <= {}", maxFinding)), before);
  EXPECT_EQ(countRows(db, fmt::format("SELECT COUNT(*) FROM programs WHERE idx > {}", maxIndex)), 2);
  SQLite::Database d(db.string(), SQLite::OPEN_READONLY);
  SQLite::Statement sigs(d, "SELECT DISTINCT signature_id FROM findings");
  while (sigs.executeStep()) EXPECT_TRUE(fs::exists(out / "crashes" / sigs.getColumn(0).getString() / "meta.json"));
  // The resumed session keeps the campaign's seed and records its own command line.
  EXPECT_EQ(stats(out)["seed"], "5");
  EXPECT_NE(readText(out / "cmdline").find("--resume"), std::string::npos);
}

// A hand-edited queue file and a corrupt fuzzer_stats are reported, moved aside and skipped.
TEST_F(EagerCampaign, CorruptQueueAndStatsFilesAreQuarantined) {
  TempDir dir("tcfuzz-campaign-corrupt");
  fs::path out = copyOfCampaign(dir.path() / "out");
  const int done = std::stoi(stats(out)["programs_done"]);
  fs::path bad = out / "queue" / "id:999999,src:gen,op:grammar.json";
  std::ofstream(bad) << "{\"format\": \"tcfuzz-graph\", \"version\": 1, \"nodes\": [";
  std::ofstream(out / "fuzzer_stats") << "programs_done : " << done << "\nthis line is garbage\n";
  auto resumed = runFuzz(fuzzArgs({"--resume", out.string(), "--max-programs", "1"}));
  ASSERT_EQ(resumed.exitCode, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("id:999999,src:gen,op:grammar.json is not a valid program"), std::string::npos)
      << resumed.output;
  EXPECT_NE(resumed.output.find("fuzzer_stats line 2 is not 'key : value'"), std::string::npos) << resumed.output;
  EXPECT_FALSE(fs::exists(bad));
  int quarantined = 0;
  for (const auto& e : fs::directory_iterator(out / "quarantine")) {
    std::string name = e.path().filename().string();
    quarantined += name.starts_with("id:999999") || name.starts_with("fuzzer_stats");
  }
  EXPECT_EQ(quarantined, 2);
  EXPECT_EQ(stats(out)["programs_done"], std::to_string(done + 1));
}

// SIGINT stops the campaign gracefully: exit 0, final stats written, the resume hint printed.
TEST(Campaign, SigintStopsGracefully) {
  TempDir dir("tcfuzz-campaign-sigint");
  fs::path out = dir.path() / "out";
  bp::ipstream log;
  auto args = fuzzArgs({"-o", out.string(), "--seed", "8", "--backend", "eager"});
  bp::child c(TCFUZZ_BINARY, bp::args(args), (bp::std_out & bp::std_err) > log);
  fs::path db = out / "findings.sqlite";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  int64_t done = 0;
  while (std::chrono::steady_clock::now() < deadline && done < 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    try {
      if (fs::exists(db)) done = countRows(db, "SELECT COUNT(*) FROM programs");
    } catch (const SQLite::Exception&) {
    }
  }
  ASSERT_GE(done, 1);
  auto sent = std::chrono::steady_clock::now();
  ::kill(c.id(), SIGINT);
  std::string all, line;
  while (std::getline(log, line)) all += line + "\n";
  c.wait();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  EXPECT_EQ(c.exit_code(), 0) << all;
  EXPECT_LT(seconds, 30) << "a stop request must not wait for running jobs";
  EXPECT_NE(all.find("SIGINT received"), std::string::npos) << all;
  EXPECT_NE(all.find("stopped by a signal"), std::string::npos) << all;
  EXPECT_EQ(stats(out)["programs_done"], std::to_string(countRows(db, "SELECT COUNT(*) FROM programs")));
}

// A full disk (here: the file size limit, which fails writes with EFBIG as ENOSPC would) stops the
// campaign with exit 3 and a message; what was committed stays readable and the campaign resumes.
TEST(Campaign, FullDiskStopsCleanlyAndResumes) {
  TempDir dir("tcfuzz-campaign-full");
  fs::path out = dir.path() / "out";
  std::string cmd = "trap '' XFSZ; ulimit -f 160; exec '" + std::string(TCFUZZ_BINARY) + "'";
  for (const auto& a : fuzzArgs(concat({"-o", out.string(), "--seed", "9", "--max-programs", "40"}, plantedNumeric())))
    cmd += " '" + a + "'";
  bp::ipstream log;
  bp::child c(bp::search_path("bash"), "-c", cmd, (bp::std_out & bp::std_err) > log);
  std::string all, line;
  while (std::getline(log, line)) all += line + "\n";
  c.wait();
  EXPECT_EQ(c.exit_code(), 3) << all;
  EXPECT_NE(all.find("the disk is full"), std::string::npos) << all;
  fs::path db = out / "findings.sqlite";
  int64_t findings = countRows(db, "SELECT COUNT(*) FROM findings");
  auto resumed = runFuzz(fuzzArgs({"--resume", out.string(), "--max-programs", "1"}));
  ASSERT_EQ(resumed.exitCode, 0) << resumed.output;
  EXPECT_GE(countRows(db, "SELECT COUNT(*) FROM findings"), findings);
}

}  // namespace
TEST(FeatureSet, WhatInductorDidIsFeatures) {
  ProgramTestResult result;
  oracles::CompileFacts f;
  f.graphCount = 1;
  f.postGradOps = {{"aten.addmm.default:float32", 1}, {"aten.cumsum.default:float32", 1}};
  f.lowerings = {{"aten.relu.default", 1}};
  f.fallbacks = {{"aten.cumsum.default", 1}};
  f.patterns = {{"addmm", 1}};
  f.fusions = {{"pointwise+reduction", 5}};
  f.kernelKinds = {{"extern", 2}, {"reduction", 1}};
  f.externKernels = {{"extern_kernels.addmm", 1}};
  f.recompiles = 2;
  f.recompileReasons = {{std::string(200, 'r'), 2}};
  f.dynamoCounters = {{"frames.total", 3}};
  result.runs.compiled.compileFacts = f;
  SampledCompile compile;
  std::vector<std::string> features = runFeatures(gen::Graph{}, compile, result);
  std::set<std::string> got(features.begin(), features.end());
  for (const std::string& want :
       {"fact:post_grad_op=aten.addmm.default:float32", "fact:post_grad_op=aten.cumsum.default:float32",
        "fact:lowering=aten.relu.default", "fact:fallback=aten.cumsum.default", "fact:pattern=addmm",
        "fact:fusion=pointwise+reduction=4", "fact:kernel=extern=2", "fact:kernel=reduction=1",
        "fact:extern=extern_kernels.addmm", "fact:recompiles=2", "fact:dynamo.frames.total=3", "fact:graphs=1"})
    EXPECT_TRUE(got.count(want)) << want;
  const std::string recompile = "fact:recompile=" + std::string(kMaxFeatureChars - 15, 'r');  // cut at 120 chars
  EXPECT_TRUE(got.count(recompile));
  for (const std::string& feature : features) EXPECT_LE(feature.size(), kMaxFeatureChars) << feature;

  result.runs.compiled.compileFacts = oracles::CompileFacts{};  // a torch without the hooks: none of them
  for (const std::string& feature : runFeatures(gen::Graph{}, compile, result))
    for (const char* prefix : {"fact:post_grad_op=", "fact:lowering=", "fact:kernel=", "fact:recompiles="})
      EXPECT_FALSE(feature.starts_with(prefix)) << feature;

  // An export entry's program ops, per entry; the training loop's choices.
  result.runs.compiled.exportOps = {{"addmm.default", 2}};
  compile.config.setEntry("export+decompose");
  std::vector<std::string> exported = runFeatures(gen::Graph{}, compile, result);
  EXPECT_EQ(std::count(exported.begin(), exported.end(), "fact:export_op=addmm.default"), 1);
  result.runs.compiled.exportOps.clear();
  compile.config.setEntry("train");
  compile.config.training = oracles::TrainingLoop::parse("optimizer=sgd,compiled=step,foreach=true");
  std::vector<std::string> trained = runFeatures(gen::Graph{}, compile, result);
  for (const char* want : {"cfg:train.optimizer=sgd", "cfg:train.compiled=step", "cfg:train.scheduler=none",
                           "cfg:train=sgd/step/none/foreach=true/clip=false"})
    EXPECT_EQ(std::count(trained.begin(), trained.end(), want), 1) << want;
}


TEST(GpuStats, CountsEachProgramAndStickyErrorOnItsGpu) {
  Nvml nvml;  // unavailable on a machine without a driver: the health figures say unknown
  GpuStats stats({"0", "1"}, nvml);
  oracles::RunResult onOne;
  onOne.child.gpu = "1";
  stats.record(onOne);
  oracles::RunResult sticky = onOne;
  sticky.status = oracles::RunStatus::Exception;
  sticky.exception = oracles::ExceptionInfo{"AcceleratorError", "torch.AcceleratorError",
                                            "CUDA error: device-side assert triggered", ""};
  stats.record(sticky);
  stats.record(oracles::RunResult{});  // an unpinned run (CPU) counts nowhere
  std::map<std::string, std::string> kv;
  for (const auto& [k, v] : stats.statsLines()) kv[k] = v;
  EXPECT_EQ(kv["gpu_0_device"], "0");
  EXPECT_EQ(kv["gpu_0_programs"], "0");
  EXPECT_EQ(kv["gpu_1_device"], "1");
  EXPECT_EQ(kv["gpu_1_programs"], "2");
  EXPECT_EQ(kv["gpu_1_sticky_cuda_errors"], "1");
  if (!nvml.available()) {
    EXPECT_EQ(kv["gpu_1_utilization_percent"], "unknown");
    EXPECT_EQ(kv["gpu_driver"], nvml.unavailableReason());
  }
  auto view = stats.viewLines();
  ASSERT_EQ(view.size(), 2u);
  EXPECT_EQ(view[1].rfind("GPU 1   2 programs, 1 sticky CUDA errors", 0), 0u) << view[1];
}

}  // namespace tcfuzz
