// tcfuzz merge: shards built as real findings.sqlite stores (FindingStore), merged into a night, and
// nights compared. No torch runs here: the command runs with --no-triage --no-regress, and the regress
// sections are fed their checks directly.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fuzzer/campaign/output/FindingStore.h"
#include "fuzzer/triage/NightMerge.h"
#include "fuzzer/triage/NightSummary.h"
#include "fuzzer/triage/TriagedCase.h"
#include "oracles/judge/Signature.h"

namespace tcfuzz {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/tcfuzz-nightmerge-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string readText(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json readJson(const fs::path& file) { return json::parse(readText(file)); }

/// A crash signature told apart by its message.
oracles::Signature crash(const std::string& message) {
  oracles::Signature s;
  s.symptom = "crash-mismatch";
  s.kind = "exception";
  s.failingMode = "compiled";
  s.phase = "compile";
  s.exceptionType = "RuntimeError";
  s.normalizedMessage = message;
  return s;
}

/// One raw finding a shard makes: its signature's message and when.
struct Hit {
  std::string message;
  double foundAt;
};

/// A finished campaign directory: findings.sqlite (identity, torch, a program per hit plus one that
/// agreed), plot_data and fuzzer_stats.
void makeShard(const fs::path& dir, uint64_t seed, const std::vector<Hit>& hits) {
  fs::create_directories(dir);
  FindingStore store(dir / "findings.sqlite");
  store.setMeta("identity", json{{"seed", seed}, {"device", "cpu"}}.dump());
  store.setMeta("torch", json{{"version", "2.15.0+cpu"}, {"devices", {"Test CPU"}}}.dump());
  int64_t index = 0;
  for (const auto& h : hits) {
    ProgramRecord p;
    p.index = index++;
    p.hash = fmt::format("h{}", p.index);
    p.origin = "grammar";
    p.config = "{}";
    p.verdict = "crash-mismatch";
    p.finishedAt = h.foundAt;
    oracles::Signature sig = crash(h.message);
    FindingRecord f;
    f.programIndex = p.index;
    f.foundAt = h.foundAt;
    f.verdict = "crash-mismatch";
    f.reason = h.message;
    f.signatureId = sig.id();
    f.signature = oracles::toJson(sig).dump();
    f.config = "{}";
    f.programJson = R"({"nodes": []})";
    f.programPy = "# program\n";
    f.result = json{{"seed", seed}, {"threads", 1}}.dump();
    f.torch = "2.15.0+cpu";
    std::vector<FindingRecord> findings{f};
    store.recordProgram(p, findings, {fmt::format("feature-{}-{}", seed, p.index)}, std::nullopt);
  }
  ProgramRecord agreed;
  agreed.index = index;
  agreed.hash = "agreed";
  agreed.origin = "grammar";
  agreed.config = "{}";
  agreed.verdict = "agree";
  std::vector<FindingRecord> none;
  store.recordProgram(agreed, none, {}, std::nullopt);
  std::ofstream(dir / "plot_data") << "# unix_time, programs\n" << seed << ", 1\n";
  std::ofstream(dir / "fuzzer_stats") << "execs_done : " << hits.size() + 1 << "\n";
}

const NightSignature* find(const NightMerge& m, const std::string& message) {
  for (const auto& s : m.signatures)
    if (s.id == crash(message).id()) return &s;
  return nullptr;
}

/// tcfuzz merge ARGS; returns its exit status.
int runMerge(const std::string& args) {
  int status = std::system(fmt::format("{} merge {} >/dev/null 2>&1", TCFUZZ_BINARY, args).c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class NightMergeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    makeShard(dir_.path() / "shards" / "shard-0", 1, {{"shared", 1000}, {"shared", 1001}, {"only zero", 1005}});
    makeShard(dir_.path() / "shards" / "shard-1", 2, {{"shared", 990}, {"only one", 1010}});
    fs::create_directories(dir_.path() / "shards" / "shard-3");
    std::ofstream(dir_.path() / "shards" / "shard-3" / "findings.sqlite") << "not a database, a killed task's leftovers";
  }
  std::vector<fs::path> shards() const {
    fs::path s = dir_.path() / "shards";
    return {s / "shard-0", s / "shard-1", s / "shard-2", s / "shard-3"};
  }
  TempDir dir_;
};

TEST_F(NightMergeTest, SumsHitsKeepsEarliestFirstSeenAndTheShardsEachCameFrom) {
  NightMerge m = mergeShards(shards(), dir_.path() / "night", {});
  ASSERT_EQ(m.shards.size(), 4u);
  EXPECT_TRUE(m.shards[0].ok());
  EXPECT_TRUE(m.shards[1].ok());
  EXPECT_EQ(m.shards[2].status, "missing");
  EXPECT_EQ(m.shards[3].status.rfind("unreadable: ", 0), 0u) << m.shards[3].status;
  EXPECT_EQ(m.shards[0].seed, "1");
  EXPECT_EQ(m.shards[1].seed, "2");
  EXPECT_EQ(m.shards[1].indexOffset, 4);  // shard-0's programs are 0..3
  EXPECT_EQ(m.programs, 7);
  EXPECT_EQ(m.findings, 5);
  ASSERT_EQ(m.signatures.size(), 3u);

  const NightSignature* shared = find(m, "shared");
  ASSERT_TRUE(shared);
  EXPECT_EQ(shared->hits, 3);
  EXPECT_EQ(shared->firstSeen, 990);
  EXPECT_EQ(shared->lastSeen, 1001);
  EXPECT_EQ(shared->shards, (std::map<std::string, int64_t>{{"shard-0", 2}, {"shard-1", 1}}));
  EXPECT_EQ(find(m, "only one")->shards, (std::map<std::string, int64_t>{{"shard-1", 1}}));
  EXPECT_EQ(m.signatures.front().id, shared->id);  // oldest first
  EXPECT_EQ(m.torchVersions(), std::vector<std::string>{"2.15.0+cpu"});

  fs::path night = dir_.path() / "night";
  FindingStore store(night / "findings.sqlite");
  EXPECT_EQ(store.totals().findings, 5);
  EXPECT_EQ(store.totals().uniqueSignatures, 3);
  EXPECT_EQ(store.features().size(), 5u);
  json shardsJson = readJson(night / "shards.json");
  ASSERT_EQ(shardsJson.size(), 4u);
  EXPECT_EQ(shardsJson[0]["name"], "shard-0");
  EXPECT_EQ(shardsJson[0]["programs"], 4);
  EXPECT_EQ(shardsJson[0]["findings"], 3);
  EXPECT_EQ(shardsJson[0]["unique_signatures"], 2);
  EXPECT_EQ(shardsJson[0]["torch"], "2.15.0+cpu");
  EXPECT_EQ(shardsJson[0]["devices"], json({"Test CPU"}));
  EXPECT_EQ(shardsJson[2]["status"], "missing");
  EXPECT_EQ(readText(night / "shards" / "shard-1" / "plot_data"), "# unix_time, programs\n2, 1\n");
  EXPECT_FALSE(fs::exists(night / "shards" / "shard-2"));
  EXPECT_TRUE(fs::exists(night / "crashes" / shared->id / "meta.json"));  // the first witness: shard-1's
  EXPECT_EQ(readJson(night / "crashes" / shared->id / "meta.json")["first_seen"], 990);
}

TEST_F(NightMergeTest, MergingAgainRebuildsWithoutDuplicatesAndKeepsTriage) {
  // shard-0 triaged "only zero" already: the row comes over with its witness found again.
  oracles::Signature onlyZero = crash("only zero");
  {
    FindingStore shard(dir_.path() / "shards" / "shard-0" / "findings.sqlite");
    TriagedCase t;
    t.signature = onlyZero;
    t.title = "planted: only zero";
    t.severity = "crash";
    TriageRecord row{onlyZero.id(), 3, "done", onlyZero.id(), oracles::toJson(onlyZero).dump(), toJson(t).dump(), 1100};
    shard.saveTriage(row);
  }
  fs::create_directories(dir_.path() / "shards" / "shard-0" / "traces" / onlyZero.id() / "tlparse");
  std::ofstream(dir_.path() / "shards" / "shard-0" / "traces" / onlyZero.id() / "tlparse" / "index.html") << "trace";
  fs::path night = dir_.path() / "night";
  NightMerge first = mergeShards(shards(), night, {});
  EXPECT_EQ(first.triageCarried, 1);
  NightMerge second = mergeShards(shards(), night, {});
  EXPECT_EQ(second.findings, 5);
  EXPECT_EQ(second.programs, 7);
  FindingStore store(night / "findings.sqlite");
  EXPECT_EQ(store.totals().findings, 5);
  std::vector<TriageRecord> rows = store.triageRecords();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].signatureId, onlyZero.id());
  int64_t witness = 0;
  for (const auto& f : store.findings())
    if (f.signatureId == onlyZero.id()) witness = f.id;
  EXPECT_EQ(rows[0].findingId, witness);
  EXPECT_EQ(readText(night / "traces" / onlyZero.id() / "tlparse" / "index.html"), "trace");  // the row names it
}

TEST_F(NightMergeTest, NoUsableShardIsAUsageError) {
  fs::path s = dir_.path() / "shards";
  EXPECT_THROW(mergeShards({s / "shard-2", s / "shard-3"}, dir_.path() / "night", {}), std::invalid_argument);
  EXPECT_EQ(runMerge(fmt::format("{} {} -o {}", (s / "shard-2").string(), (s / "shard-3").string(),
                                 (dir_.path() / "night").string())),
            2);
  EXPECT_EQ(runMerge((s / "shard-0").string()), 2);  // no -o
}

// Two nights through the command: the first says so; the second finds one bug seen before (since the
// first night), two new, and carries the known set (the first night's bug not seen tonight too).
TEST_F(NightMergeTest, TheSecondNightComparesWithTheFirst) {
  fs::path nights = dir_.path() / "nights";
  makeShard(dir_.path() / "yesterday" / "shard-0", 7, {{"shared", 500}, {"gone", 510}});
  ASSERT_EQ(runMerge(fmt::format("{} -o {} --no-triage --no-regress", (dir_.path() / "yesterday" / "shard-0").string(),
                                 (nights / "2026-11-25").string())),
            0);
  std::string first = readText(nights / "2026-11-25" / "summary.md");
  EXPECT_NE(first.find("# tcfuzz night 2026-11-25: torch 2.15.0+cpu"), std::string::npos) << first;
  EXPECT_NE(first.find("This is the first night"), std::string::npos) << first;

  std::string shardArgs;
  for (const auto& s : shards()) shardArgs += s.string() + " ";
  ASSERT_EQ(runMerge(shardArgs + fmt::format("-o {} --no-triage --no-regress", (nights / "2026-11-26").string())), 0);
  fs::path night = nights / "2026-11-26";
  json j = readJson(night / "night.json");
  EXPECT_EQ(j["previous"], fs::absolute(nights / "2026-11-25").string());
  EXPECT_EQ(j["first_night"], false);
  std::map<std::string, json> byId;
  for (const auto& s : j["signatures"]) byId[s["id"]] = s;
  ASSERT_EQ(byId.size(), 3u);
  EXPECT_EQ(byId[crash("shared").id()]["status"], "seen-before");
  EXPECT_EQ(byId[crash("shared").id()]["first_night"], "2026-11-25");
  EXPECT_EQ(byId[crash("shared").id()]["hits"], 3);
  EXPECT_EQ(byId[crash("only one").id()]["status"], "new");
  EXPECT_EQ(j["known"][crash("gone").id()]["first_night"], "2026-11-25");
  EXPECT_EQ(j["known"][crash("gone").id()]["last_night"], "2026-11-25");
  EXPECT_EQ(j["known"][crash("shared").id()]["last_night"], "2026-11-26");
  EXPECT_EQ(j["known"][crash("only zero").id()]["first_night"], "2026-11-26");

  std::string md = readText(night / "summary.md");
  size_t fresh = md.find("## New tonight"), before = md.find("## Seen before"), fixed = md.find("## Fixed");
  ASSERT_NE(fresh, std::string::npos);
  ASSERT_NE(before, std::string::npos);
  ASSERT_NE(fixed, std::string::npos);
  std::string newSection = md.substr(fresh, before - fresh), seenSection = md.substr(before, fixed - before);
  EXPECT_NE(newSection.find("message=only one"), std::string::npos) << md;
  EXPECT_NE(newSection.find(fmt::format("(crashes/{}/)", crash("only zero").id())), std::string::npos) << md;
  EXPECT_EQ(newSection.find("message=shared"), std::string::npos) << md;
  EXPECT_NE(seenSection.find("seen since 2026-11-25; 3 hit(s) tonight on shard-0 (2), shard-1 (1)"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| shard-2 | missing |"), std::string::npos) << md;
  EXPECT_NE(md.find("Compared with [2026-11-25](../2026-11-25/summary.md)"), std::string::npos) << md;
  EXPECT_NE(md.find("Regress did not run: --no-regress."), std::string::npos) << md;

  // The previous night's bug not seen tonight, ready for regress.
  std::vector<fs::path> previous = writePreviousBugs(nights / "2026-11-25", {crash("shared").id()}, dir_.path() / "prev");
  ASSERT_EQ(previous.size(), 1u);
  EXPECT_EQ(previous[0].filename(), crash("gone").id());
  json finding = readJson(previous[0] / "finding.json");
  EXPECT_EQ(finding["verdict"], "crash-mismatch");
  EXPECT_EQ(finding["seed"], 7);
  EXPECT_EQ(oracles::signatureFromJson(finding["signature"]).id(), crash("gone").id());
  EXPECT_TRUE(fs::exists(previous[0] / "program.json"));

  // Default --previous: the newest earlier sibling with a night.json.
  EXPECT_EQ(previousNight(nights / "2026-11-27", ""), std::optional<fs::path>(fs::absolute(nights) / "2026-11-26"));
  EXPECT_EQ(previousNight(nights / "2026-11-25", ""), std::nullopt);
  EXPECT_THROW(previousNight(nights / "2026-11-27", (dir_.path() / "shards").string()), std::invalid_argument);

  // Merging the same night again rebuilds it.
  ASSERT_EQ(runMerge(shardArgs + fmt::format("-o {} --no-triage --no-regress", night.string())), 0);
  EXPECT_EQ(FindingStore(night / "findings.sqlite").totals().findings, 5);
  EXPECT_EQ(readJson(night / "night.json")["signatures"].size(), 3u);
}

TEST(NightSummary, FixedAndChangedComeFromRegressUnderTheNewestTorch) {
  TempDir dir;
  ReleaseMatrix matrix({"old_bug", "0123456789abcdef", "still"},
                       {{"py-old", {}, {}}, {"py-new", {}, {}}});
  oracles::TorchInfo older, newer;
  older.version = "2.11.0";
  newer.version = "2.15.0";
  matrix.setTorch(0, older);
  matrix.setTorch(1, newer);
  RegressCell fixed, changed, failing;
  fixed.status = RegressStatus::Fixed;
  changed.status = RegressStatus::ChangedSignature;
  changed.expectedSignature = "aaaa";
  changed.observedSignature = "bbbb";
  failing.status = RegressStatus::StillFailing;
  for (size_t r = 0; r < 3; ++r) matrix.setCell(r, 0, failing);
  matrix.setCell(0, 1, fixed);
  matrix.setCell(1, 1, changed);
  matrix.setCell(2, 1, failing);
  std::vector<KnownBugCheck> checks = knownBugChecks(matrix, {"0123456789abcdef"});
  ASSERT_EQ(checks.size(), 3u);
  EXPECT_EQ(checks[0].status, "fixed");
  EXPECT_EQ(checks[0].source, "regressions");
  EXPECT_EQ(checks[0].torch, "2.15.0");
  EXPECT_EQ(checks[1].source, "previous night");
  EXPECT_EQ(checks[1].status, "changed-signature");

  NightMerge merge;
  ShardInfo shard;
  shard.name = "shard-0";
  shard.torch = "2.15.0";
  merge.shards = {shard};
  NightFacts facts;
  facts.night = dir.path() / "first";
  fs::create_directories(facts.night);
  facts.name = "first";
  facts.merge = &merge;
  facts.regress = checks;
  std::string md = writeNightSummary(facts, {});
  size_t fixedAt = md.find("## Fixed"), changedAt = md.find("## Signature changed");
  ASSERT_NE(fixedAt, std::string::npos);
  ASSERT_NE(changedAt, std::string::npos);
  EXPECT_NE(md.find("- `old_bug` (regressions): no longer reproduces under torch 2.15.0", fixedAt), std::string::npos)
      << md;
  EXPECT_NE(md.find("- `0123456789abcdef` (previous night): signature aaaa is now bbbb under torch 2.15.0", changedAt),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("`still`"), std::string::npos) << md;
  EXPECT_NE(md.find("## New tonight\n\nNone."), std::string::npos) << md;
  json j = readJson(facts.night / "night.json");
  EXPECT_EQ(j["fixed"], json({"old_bug"}));
  EXPECT_EQ(j["changed"], json({"0123456789abcdef"}));
  EXPECT_EQ(j["first_night"], true);
}

}  // namespace
}  // namespace tcfuzz

namespace tcfuzz {
namespace {

// A raw signature never seen before that triage minimized into a bug the nights before knew is not new.
TEST(NightSummary, ASignatureMinimizedIntoAKnownBugIsSeenBefore) {
  TempDir dir;
  fs::path previous = dir.path() / "2026-11-20", night = dir.path() / "2026-11-21";
  fs::create_directories(previous);
  fs::create_directories(night);
  std::ofstream(previous / "night.json") << json{{"known", {{"bug0000000000001", {{"first_night", "2026-11-20"}}}}}}.dump();
  NightMerge merge;
  NightSignature raw;
  raw.id = "raw0000000000001";
  raw.verdict = "numeric-divergence";
  raw.hits = 2;
  raw.shards = {{"shard-0", 2}};
  merge.signatures = {raw};
  oracles::BugReport bug;
  bug.id = "bug0000000000001";
  bug.title = "a known numeric bug";
  bug.severity = "wrong-result";
  bug.rawSignatureIds = {raw.id};
  NightFacts facts;
  facts.night = night;
  facts.name = "2026-11-21";
  facts.merge = &merge;
  facts.bugs = {bug};
  facts.previous = previous;
  std::string md = writeNightSummary(facts, {});
  EXPECT_NE(md.find("## New tonight\n\nNone."), std::string::npos) << md;
  EXPECT_NE(md.find("- [wrong-result: a known numeric bug](crashes/bug0000000000001/report.md): seen since 2026-11-20; "
                    "2 hit(s) tonight on shard-0 (2)"),
            std::string::npos)
      << md;
  json j = readJson(night / "night.json");
  EXPECT_EQ(j["signatures"][0]["status"], "seen-before");
  EXPECT_EQ(j["signatures"][0]["bug"], "bug0000000000001");
  EXPECT_EQ(j["known"]["raw0000000000001"]["first_night"], "2026-11-20");
  EXPECT_EQ(j["known"]["bug0000000000001"]["last_night"], "2026-11-21");
}

}  // namespace
}  // namespace tcfuzz
