// findings.sqlite, the campaign's source of truth, on a real SQLite file in a temporary directory:
// what is committed reads back after the store is closed and opened again, the totals a resumed
// campaign starts from, queue and triage rows, secrets masked before anything is written, a night's
// merge of shards, and a file that is not a store (or is a newer one) refused with a clear error.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fuzzer/campaign/output/FindingStore.h"
#include "tests/TestWorkers.h"

namespace tcfuzz {
namespace {

namespace fs = std::filesystem;
using test_support::TempDir;

/// A tested program of `origin` with `verdict`, finished at `finishedAt`.
ProgramRecord program(int64_t index, const std::string& origin, const std::string& verdict, double finishedAt) {
  ProgramRecord p;
  p.index = index;
  p.hash = fmt::format("hash{}", index);
  p.origin = origin;
  p.config = R"({"backend": "inductor"})";
  p.verdict = verdict;
  p.reason = verdict == "agree" ? "" : "compiled differs";
  p.newFeatures = 2;
  p.wallSeconds = 1.5;
  p.torchSeconds = 1.25;
  p.finishedAt = finishedAt;
  return p;
}

/// A raw finding of program `index` under signature `signatureId`, found at `foundAt`.
FindingRecord finding(int64_t index, const std::string& signatureId, double foundAt) {
  FindingRecord f;
  f.programIndex = index;
  f.foundAt = foundAt;
  f.verdict = "numeric-divergence";
  f.reason = "leaf 0 differs";
  f.signatureId = signatureId;
  f.signature = R"({"symptom": "numeric-divergence"})";
  f.config = "{}";
  f.programJson = R"({"nodes": []})";
  f.programPy = "# program\n";
  f.result = R"({"seed": 3})";
  f.torch = "2.15.0+cpu";
  return f;
}

TEST(FindingStore, ACommittedProgramItsFindingsFeaturesAndQueueEntryReadBackAfterReopening) {
  TempDir dir("tcfuzz-store");
  fs::path file = dir.path() / "findings.sqlite";
  std::vector<FindingRecord> found{finding(0, "sig-a", 100), finding(0, "sig-b", 101)};
  {
    FindingStore store(file);
    store.setMeta("identity", R"({"seed": 3})");
    QueueRecord queued{"id:000000,src:gen,op:grammar", 0, "hash0", "", 2, 99.5, R"({"nodes": []})"};
    store.recordProgram(program(0, "grammar", "numeric-divergence", 100), found, {"op:sin", "op:cos"}, queued);
  }
  EXPECT_EQ(found[0].id, 1);  // the store numbers findings from 1, in commit order
  EXPECT_EQ(found[1].id, 2);

  FindingStore again(file);
  EXPECT_EQ(again.meta("identity"), std::optional<std::string>(R"({"seed": 3})"));
  EXPECT_EQ(again.meta("schema_version"), std::optional<std::string>("3"));
  EXPECT_EQ(again.meta("no_such_key"), std::nullopt);
  std::vector<FindingRecord> read = again.findings();
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].id, 1);
  EXPECT_EQ(read[0].signatureId, "sig-a");
  EXPECT_EQ(read[1].signatureId, "sig-b");
  EXPECT_EQ(read[1].foundAt, 101);
  EXPECT_EQ(read[1].programPy, "# program\n");
  EXPECT_EQ(read[1].torch, "2.15.0+cpu");
  std::vector<std::string> features = again.features();
  std::sort(features.begin(), features.end());
  EXPECT_EQ(features, (std::vector<std::string>{"op:cos", "op:sin"}));
  std::vector<QueueRecord> queue = again.queue();
  ASSERT_EQ(queue.size(), 1u);
  EXPECT_EQ(queue[0].name, "id:000000,src:gen,op:grammar");
  EXPECT_EQ(queue[0].newFeatures, 2);
  EXPECT_EQ(queue[0].addedAt, 99.5);
  std::vector<std::string> ids = again.signatureIds();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<std::string>{"sig-a", "sig-b"}));
}

// The counts a resumed campaign starts from: programs, verdicts and origins, findings, distinct
// signatures, the last new signature and the last finding, the highest index and torch's time.
TEST(FindingStore, TotalsCountProgramsVerdictsOriginsAndSignatures) {
  TempDir dir("tcfuzz-store-totals");
  FindingStore store(dir.path() / "findings.sqlite");
  EXPECT_EQ(store.totals().programs, 0);
  EXPECT_EQ(store.totals().maxProgramIndex, -1);
  std::vector<FindingRecord> none, first{finding(0, "sig-a", 100)}, second{finding(4, "sig-a", 140), finding(4, "sig-b", 130)};
  store.recordProgram(program(0, "grammar", "numeric-divergence", 100), first, {"f0"}, std::nullopt);
  store.recordProgram(program(1, "mutation", "agree", 110), none, {}, std::nullopt);
  store.recordProgram(program(4, "grammar", "numeric-divergence", 140), second, {"f0", "f1"}, std::nullopt);
  StoreTotals t = store.totals();
  EXPECT_EQ(t.programs, 3);
  EXPECT_EQ(t.maxProgramIndex, 4);
  EXPECT_DOUBLE_EQ(t.torchSeconds, 3 * 1.25);
  EXPECT_EQ(t.verdicts, (std::map<std::string, int64_t>{{"agree", 1}, {"numeric-divergence", 2}}));
  EXPECT_EQ(t.origins, (std::map<std::string, int64_t>{{"grammar", 2}, {"mutation", 1}}));
  EXPECT_EQ(t.findings, 3);
  EXPECT_EQ(t.uniqueSignatures, 2);
  EXPECT_EQ(t.lastFindingAt, 140);
  EXPECT_EQ(t.lastNewSignatureAt, 130);  // sig-b first seen at 130, sig-a at 100
  EXPECT_EQ(store.features().size(), 2u);  // a feature is recorded once, for the first program that had it
}

TEST(FindingStore, QueueEntriesAreAddedAndRemovedByName) {
  TempDir dir("tcfuzz-store-queue");
  FindingStore store(dir.path() / "findings.sqlite");
  store.addQueueRecord({"id:000007,src:user", 7, "h7", "", 0, 10, "{}"});
  store.addQueueRecord({"id:000002,src:gen,op:grammar", 2, "h2", "", 1, 11, "{}"});
  std::vector<QueueRecord> q = store.queue();
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].programIndex, 2);  // in program order
  EXPECT_EQ(q[1].name, "id:000007,src:user");
  store.removeQueueRecord("id:000007,src:user");
  store.removeQueueRecord("id:999999,src:none");  // not there: nothing happens
  q = store.queue();
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].name, "id:000002,src:gen,op:grammar");
}

// A triage row per exact signature: saved again it is replaced, removed it is gone; a re-signed
// finding reads back with its new signature.
TEST(FindingStore, TriageRowsAreReplacedAndRemovedAndAFindingIsResigned) {
  TempDir dir("tcfuzz-store-triage");
  FindingStore store(dir.path() / "findings.sqlite");
  std::vector<FindingRecord> found{finding(0, "sig-a", 100)};
  store.recordProgram(program(0, "grammar", "numeric-divergence", 100), found, {}, std::nullopt);
  store.saveTriage({"sig-a", found[0].id, "failed", "", "{}", R"({"error": "timeout"})", 200});
  store.saveTriage({"sig-a", found[0].id, "done", "sig-final", R"({"ops": ["sin"]})", "{}", 300});
  store.saveTriage({"sig-z", found[0].id, "unreproducible", "", "{}", "{}", 250});
  std::vector<TriageRecord> rows = store.triageRecords();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].signatureId, "sig-a");
  EXPECT_EQ(rows[0].status, "done");
  EXPECT_EQ(rows[0].finalSignatureId, "sig-final");
  EXPECT_EQ(rows[0].updatedAt, 300);
  EXPECT_EQ(rows[1].status, "unreproducible");
  store.removeTriage("sig-z");
  EXPECT_EQ(store.triageRecords().size(), 1u);

  store.updateSignature(found[0].id, "sig-new", R"({"symptom": "crash-mismatch"})");
  EXPECT_EQ(store.findings().at(0).signatureId, "sig-new");
  EXPECT_EQ(store.findings().at(0).signature, R"({"symptom": "crash-mismatch"})");
  EXPECT_EQ(store.signatureIds(), std::vector<std::string>{"sig-new"});
}

// Every text value is masked before it is written: a secret in a reason, a program or the metadata
// never reaches the file (nor its WAL), its marker does.
TEST(FindingStore, SecretsAreMaskedBeforeTheyAreWritten) {
  TempDir dir("tcfuzz-store-secrets");
  const std::string secret = "sk-planted-4f1c9a7e20";
  SecretRedactor secrets;
  secrets.add("TCFUZZ_LLM_API_KEY", secret);
  fs::path file = dir.path() / "findings.sqlite";
  {
    FindingStore store(file, secrets);
    store.setMeta("cmdline", "tcfuzz fuzz --llm-model " + secret);
    FindingRecord f = finding(0, "sig-a", 100);
    f.reason = "RuntimeError: bad key " + secret;
    f.programPy = "KEY = \"" + secret + "\"\n";
    std::vector<FindingRecord> found{f};
    store.recordProgram(program(0, "grammar", "crash-mismatch", 100), found, {}, std::nullopt);
  }
  FindingStore reader(file);
  EXPECT_EQ(reader.meta("cmdline"), std::optional<std::string>("tcfuzz fuzz --llm-model [REDACTED:TCFUZZ_LLM_API_KEY]"));
  EXPECT_EQ(reader.findings().at(0).reason, "RuntimeError: bad key [REDACTED:TCFUZZ_LLM_API_KEY]");
  EXPECT_EQ(reader.findings().at(0).programPy, "KEY = \"[REDACTED:TCFUZZ_LLM_API_KEY]\"\n");
  for (const char* name : {"findings.sqlite", "findings.sqlite-wal"}) {
    std::string bytes = test_support::readText(dir.path() / name);
    EXPECT_EQ(bytes.find(secret), std::string::npos) << name;
  }
}

// A night's merge: every program (its index shifted), raw finding (new ids, old order) and feature of a
// shard is copied; its queue, triage rows and metadata are not.
TEST(FindingStore, ImportFromShiftsIndicesAndRenumbersFindings) {
  TempDir dir("tcfuzz-store-import");
  FindingStore night(dir.path() / "night.sqlite");
  std::vector<FindingRecord> own{finding(0, "sig-own", 50)};
  night.recordProgram(program(0, "grammar", "numeric-divergence", 50), own, {"f-night"}, std::nullopt);

  FindingStore shard(dir.path() / "shard.sqlite");
  shard.setMeta("identity", R"({"seed": 9})");
  std::vector<FindingRecord> first{finding(0, "sig-a", 100)}, second{finding(1, "sig-b", 110)};
  shard.recordProgram(program(0, "grammar", "numeric-divergence", 100), first, {"f-shard"},
                      QueueRecord{"id:000000,src:gen,op:grammar", 0, "hash0", "", 1, 100, "{}"});
  shard.recordProgram(program(1, "mutation", "numeric-divergence", 110), second, {"f-night"}, std::nullopt);
  shard.saveTriage({"sig-a", first[0].id, "done", "sig-a", "{}", "{}", 120});

  std::map<int64_t, int64_t> ids = night.importFrom(shard, 1000);
  EXPECT_EQ(ids, (std::map<int64_t, int64_t>{{first[0].id, 2}, {second[0].id, 3}}));
  StoreTotals t = night.totals();
  EXPECT_EQ(t.programs, 3);
  EXPECT_EQ(t.maxProgramIndex, 1001);
  std::vector<FindingRecord> all = night.findings();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1].signatureId, "sig-a");
  EXPECT_EQ(all[1].programIndex, 1000);
  EXPECT_EQ(all[2].signatureId, "sig-b");
  EXPECT_EQ(all[2].programIndex, 1001);
  EXPECT_EQ(night.features().size(), 2u);  // f-night once, f-shard
  EXPECT_TRUE(night.queue().empty());
  EXPECT_TRUE(night.triageRecords().empty());
  EXPECT_EQ(night.meta("identity"), std::nullopt);
}

// A file that is not a SQLite database (a killed task's leftovers, a wrong path) is refused with an
// error naming the file and what is wrong, not a crash or an empty campaign.
TEST(FindingStore, AFileThatIsNotADatabaseIsAStoreErrorNamingTheFile) {
  TempDir dir("tcfuzz-store-corrupt");
  fs::path file = dir.path() / "findings.sqlite";
  std::ofstream(file) << "not a database, a killed task's leftovers\n" << std::string(4096, 'x');
  try {
    FindingStore store(file);
    ADD_FAILURE() << "a corrupt file opened as a store";
  } catch (const StoreError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(file.string() + " is not a usable findings store: ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a database"), std::string::npos) << e.what();
  }
  EXPECT_EQ(test_support::readText(file).rfind("not a database, a killed task's leftovers", 0), 0u)
      << "the file is left as it was";
}

// A store a newer tcfuzz wrote (a later schema) is refused rather than written in a form it cannot read.
TEST(FindingStore, AStoreOfANewerSchemaIsRefused) {
  TempDir dir("tcfuzz-store-newer");
  fs::path file = dir.path() / "findings.sqlite";
  {
    FindingStore store(file);
    store.setMeta("schema_version", "99");
  }
  try {
    FindingStore store(file);
    ADD_FAILURE() << "a schema 99 store was opened";
  } catch (const StoreError& e) {
    EXPECT_EQ(std::string(e.what()), file.string() + " has schema version 99, this tcfuzz writes version 3");
  }
}

}  // namespace
}  // namespace tcfuzz
