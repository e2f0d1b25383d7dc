// Batched compiles with real workers and torch.compile: a planted bug in one member judged against that member alone,
// a planted fault that needs two members kept as batch-only, members' constructs and failures (the batch program's
// layout without a worker: test_BatchProgram.cpp). The planted backends are TEST FIXTURES
// (tests/fixtures/planted_backends.py): they miscompile on purpose so that the oracle must fire.
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "fuzzer/campaign/output/FindingStore.h"
#include "fuzzer/triage/Triage.h"
#include "fuzzer/worker/BatchTester.h"
#include "generators/Generator.h"
#include "generators/python/BatchProgram.h"
#include "generators/python/PythonConstructs.h"
#include "oracles/judge/OutputLoader.h"
#include "tests/BatchGraphs.h"
#include "tests/ProgramTesterFixture.h"

namespace tcfuzz {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test_support::sourcePath;
using test_support::TempDir;
using test_support::chain;
using test_support::statefulPrograms;

/// The end-to-end fixture's worker pool and settings (tests/ProgramTesterFixture.h), for batches.
class BatchTesterTest : public test_support::ProgramTesterTest {
 protected:
  /// Writes the members alone and as a batch; returns the batch's layout.
  gen::BatchProgram write(const std::vector<gen::Graph>& members, const std::string& name,
                          std::vector<fs::path>& files, fs::path& batchFile) {
    files.clear();
    for (size_t k = 0; k < members.size(); ++k) {
      files.push_back(dir_->path() / fmt::format("{}-{}.py", name, k));
      std::ofstream(files.back()) << emitter_.emit(members[k]);
    }
    gen::BatchProgram batch = gen::emitBatch(emitter_, members, {});
    batchFile = dir_->path() / (name + "-batch.py");
    std::ofstream(batchFile) << batch.py;
    return batch;
  }
  static TestSettings settings(const std::string& backend) {
    TestSettings s = ProgramTesterTest::settings(backend);
    s.cheapChecksFirst = true;  // as campaigns test
    return s;
  }
  gen::OpCatalog catalog_ = gen::makeDefaultCatalog();
  gen::PythonEmitter emitter_{catalog_};
};

// TEST FIXTURE tcfuzz_planted_sigmoid miscompiles aten.sigmoid: only the member that calls it is a finding, judged
// again alone (a fresh process, a cold cache) and confirmed there; the others are judged in the batch.
TEST_F(BatchTesterTest, APlantedBugInOneMemberIsJudgedAgainstThatMemberAlone) {
  std::vector<fs::path> files;
  fs::path batchFile;
  gen::BatchProgram batch =
      write({chain({"sin"}, true), chain({"sigmoid"}, true), chain({"exp", "cos"}, true)}, "one", files, batchFile);
  BatchTester batchTester(*tester_);
  std::vector<BatchMemberResult> results = batchTester.test(batchFile, batch, files, settings("tcfuzz_planted_sigmoid"));
  ASSERT_EQ(results.size(), 3u);
  for (size_t k : {0u, 2u}) {
    EXPECT_EQ(results[k].judgement, BatchJudgement::InBatch) << k;
    EXPECT_EQ(results[k].result.verdict.verdict, oracles::Verdict::Agree) << results[k].result.verdict.reason;
    EXPECT_EQ(results[k].result.program, files[k]);
    EXPECT_GT(results[k].result.torchSeconds, 0.0);
  }
  const ProgramTestResult& bug = results[1].result;
  EXPECT_EQ(results[1].judgement, BatchJudgement::Alone);
  EXPECT_EQ(bug.verdict.verdict, oracles::Verdict::NumericDivergence) << bug.verdict.reason;
  EXPECT_EQ(bug.confirmation, Confirmation::Confirmed);
  EXPECT_EQ(bug.program, files[1]);  // the member's own program, its own run
  EXPECT_EQ(bug.runs.compiled.jobDir.filename().string().find("batch"), std::string::npos);
  ASSERT_TRUE(bug.runs.compiled.outputs);
  EXPECT_EQ(bug.runs.compiled.outputs->leaves.size(), results[0].result.runs.compiled.outputs->leaves.size());
  EXPECT_GT(bug.torchSeconds, results[0].result.torchSeconds);  // its alone run is its own cost
}

// With real torch.compile: a member whose schedule changes a module global between calls recompiles its own frame,
// not the plain member's, whose op Inductor lowers once over the batch's calls.
TEST_F(BatchTesterTest, AMembersStateChangesRecompileOnlyItsOwnFrame) {
  gen::Graph stepped = chain({"exp"}, true);
  stepped.nodes[1].python.outputState = "offset";  // forward reads OFFSET, which the schedule sets twice
  stepped.schedule = {{"global", 0.25}, {"global", 2}};
  ASSERT_TRUE(gen::changesStateBetweenCalls(stepped, catalog_));
  std::vector<fs::path> files;
  fs::path batchFile;
  gen::BatchProgram batch = write({chain({"tanh"}, true), stepped}, "frames", files, batchFile);
  BatchTester batchTester(*tester_);
  std::vector<BatchMemberResult> results = batchTester.test(batchFile, batch, files, settings("inductor"));
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    EXPECT_EQ(r.judgement, BatchJudgement::InBatch);
    EXPECT_EQ(r.result.verdict.verdict, oracles::Verdict::Agree) << r.result.verdict.reason;
  }
  const auto& facts = results[0].result.runs.compiled.compileFacts;
  ASSERT_TRUE(facts);
  // The first step recompiles member 1's frame (the second finds OFFSET dynamic by then): exp is lowered again, tanh
  // not; with both members in one frame, tanh was lowered twice.
  EXPECT_GE(facts->recompiles, 1);
  EXPECT_GE(facts->lowerings.at("aten.exp.default"), 2);
  EXPECT_EQ(facts->lowerings.at("aten.tanh.default"), 1);
}

// Through AOTInductor the batch is one package of independent members: each member's leaves, calls 2 and 3
// included, agree on their own.
TEST_F(BatchTesterTest, AnAotInductorBatchJudgesEachMember) {
  std::vector<fs::path> files;
  fs::path batchFile;
  gen::BatchProgram batch = write({chain({"sin"}, true), chain({"exp", "cos"})}, "aoti", files, batchFile);
  TestSettings s = settings("inductor");
  s.compile.entry = oracles::kAotiEntry;
  BatchTester batchTester(*tester_);
  std::vector<BatchMemberResult> results = batchTester.test(batchFile, batch, files, s);
  ASSERT_EQ(results.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(results[k].judgement, BatchJudgement::InBatch) << k;
    EXPECT_EQ(results[k].result.verdict.verdict, oracles::Verdict::Agree) << results[k].result.verdict.reason;
    ASSERT_TRUE(results[k].result.runs.compiled.outputs);
    int roles = 0;
    for (const auto& leaf : results[k].result.runs.compiled.outputs->leaves)
      roles += leaf.role == "second-call" || leaf.role == "fresh-inputs";
    EXPECT_EQ(roles, 2) << k;  // its own output in calls 2 and 3
  }
}

// TEST FIXTURES tcfuzz_planted_cumsum_raise_traced and _in_pass fail compiling any graph with aten.cumsum, the first's
// message naming the frame (as Inductor's lowering errors do), the second raised in a pass that holds the node (its
// user frame found by the worker): the batch's compiled job fails at member 1's text, member 1 alone fails the same
// way and is its finding, and the others are batched again and judged there, not each alone.
TEST_F(BatchTesterTest, ACompiledFailureAtOneMembersTextIsThatMembersAndTheOthersAreBatchedAgain) {
  gen::Graph summed = chain({"exp"});
  int y = summed.addValue({{3, 4}, gen::DType::Float32});
  summed.nodes.push_back({"cumsum", {summed.outputs[0]}, {y}, {{"dim", 1}}});
  summed.outputs = {y};
  std::vector<gen::Graph> members{chain({"sin"}, true), summed, chain({"cos"}, true), chain({"tanh"})};
  for (const char* backend : {"tcfuzz_planted_cumsum_raise_traced", "tcfuzz_planted_cumsum_raise_in_pass"}) {
    SCOPED_TRACE(backend);
    std::vector<fs::path> files;
    fs::path batchFile;
    gen::BatchProgram batch = write(members, backend, files, batchFile);
    BatchTester batchTester(*tester_);
    int rebatched = 0;
    BatchTester::Rebatch rebatch = [&](const std::vector<int>& keep) {
      ++rebatched;
      std::vector<gen::Graph> kept;
      for (int m : keep) kept.push_back(members[static_cast<size_t>(m)]);
      gen::BatchProgram again = gen::emitBatch(emitter_, kept, {});
      fs::path file = dir_->path() / fmt::format("crash-{}-again-{}.py", backend, rebatched);
      std::ofstream(file) << again.py;
      return std::make_pair(file, again);
    };
    std::vector<BatchMemberResult> results = batchTester.test(batchFile, batch, files, settings(backend), rebatch);
    ASSERT_EQ(results.size(), 4u);
    EXPECT_EQ(rebatched, 1);
    EXPECT_EQ(results[1].judgement, BatchJudgement::Alone);
    EXPECT_EQ(results[1].result.verdict.verdict, oracles::Verdict::CrashMismatch) << results[1].result.verdict.reason;
    EXPECT_EQ(results[1].result.confirmation, Confirmation::Confirmed);
    EXPECT_EQ(results[1].result.program, files[1]);
    for (size_t k : {0u, 2u, 3u}) {
      EXPECT_EQ(results[k].judgement, BatchJudgement::InBatch) << k;
      EXPECT_EQ(results[k].result.verdict.verdict, oracles::Verdict::Agree) << k << ": " << results[k].result.verdict.reason;
    }
  }
}

// TEST FIXTURE tcfuzz_planted_cumsum_raise fails compiling any graph with aten.cumsum and names no frame: the batch's
// compiled job fails as a whole, at no member's text. Each member is then tested as it would be unbatched, in a warm
// child: member 1's failure holds and is confirmed fresh and cold by the tester; the others agree there.
TEST_F(BatchTesterTest, ACompiledFailureNamingNoMemberTestsEachMemberAsUnbatched) {
  gen::Graph summed = chain({"exp"});
  int y = summed.addValue({{3, 4}, gen::DType::Float32});
  summed.nodes.push_back({"cumsum", {summed.outputs[0]}, {y}, {{"dim", 1}}});
  summed.outputs = {y};
  std::vector<fs::path> files;
  fs::path batchFile;
  gen::BatchProgram batch = write({chain({"sin"}, true), summed, chain({"cos"})}, "whole", files, batchFile);
  TestSettings s = settings("tcfuzz_planted_cumsum_raise");
  s.persistent = true;  // as campaigns test
  s.confirmFindings = true;
  BatchTester batchTester(*tester_);
  std::vector<BatchMemberResult> results = batchTester.test(batchFile, batch, files, s);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[1].judgement, BatchJudgement::Alone);
  EXPECT_EQ(results[1].result.verdict.verdict, oracles::Verdict::CrashMismatch) << results[1].result.verdict.reason;
  EXPECT_EQ(results[1].result.confirmation, Confirmation::Confirmed);
  EXPECT_GT(results[1].result.confirmSeconds, 0.0);  // a test as unbatched, then the tester's fresh cold confirmation
  for (size_t k : {0u, 2u}) {
    const ProgramTestResult& r = results[k].result;
    EXPECT_EQ(results[k].judgement, BatchJudgement::NotAlone) << k;
    EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << k << ": " << r.verdict.reason;
    EXPECT_NE(r.verdict.reason.find("is another member's"), std::string::npos) << r.verdict.reason;
    EXPECT_EQ(r.program, files[k]);
    EXPECT_EQ(r.confirmation, Confirmation::NotChecked) << k;
  }
}

// Members with Python constructs under real torch.compile: a graph break, call counters, a branch on the call count,
// a closure cell, call schedules and process-wide hooks, each member's own, beside a member with a random op. Each
// member agrees in the batch (the random one by dtype and shape), its Python state is compared under its submodule's name, each call
// starts from the member's state as built (call 2 repeats call 1: the branch on the call count takes the same arm),
// as it does alone, and the batch's schedule makes each member's steps.
TEST_F(BatchTesterTest, MembersWithPythonConstructsAreJudgedAsTheyAreAlone) {
  std::vector<gen::Graph> members = statefulPrograms(true);
  members[0].nodes[1].python.graphBreakBefore = true;
  members.push_back(chain({"dropout", "sin"}));  // a random op: its draws taint only its own member's leaves
  members.back().nodes[0].attrs = {{"p", 0.5}};
  members.push_back(chain({"cos"}, true));  // process-wide hooks, each acting on its own member
  members.back().hook = "global-pre";
  members[0].hook = "global-forward";
  std::vector<fs::path> files;
  fs::path batchFile;
  gen::BatchProgram batch = write(members, "python", files, batchFile);
  BatchTester batchTester(*tester_);
  std::vector<BatchMemberResult> results = batchTester.test(batchFile, batch, files, settings("inductor"));
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[2].judgement, BatchJudgement::InBatch);
  EXPECT_EQ(results[2].result.verdict.verdict, oracles::Verdict::RandomOnly) << results[2].result.verdict.reason;
  EXPECT_EQ(results[3].judgement, BatchJudgement::InBatch);
  EXPECT_EQ(results[3].result.verdict.verdict, oracles::Verdict::Agree) << results[3].result.verdict.reason;
  int recorded = 0;
  for (const auto& leaf : results[3].result.runs.compiled.outputs->leaves)
    recorded += leaf.name == "m3.global MODULE_CALLS_3 after forward";
  EXPECT_EQ(recorded, 1);
  for (size_t k = 0; k < 2; ++k) {
    const ProgramTestResult& r = results[k].result;
    EXPECT_EQ(results[k].judgement, BatchJudgement::InBatch) << k;
    EXPECT_EQ(r.verdict.verdict, oracles::Verdict::Agree) << r.verdict.reason;
    ASSERT_TRUE(r.runs.eager.outputs);
    std::string own = fmt::format("m{}.", k), other = fmt::format("m{}.", 1 - k);
    int state = 0;
    for (const auto& leaf : r.runs.eager.outputs->leaves) {
      if (leaf.role != "python-state") continue;
      EXPECT_EQ(leaf.name.rfind(own, 0), 0u) << leaf.name;  // its own state only
      state += leaf.name == own + "self.calls after forward";
      if (leaf.name == own + "self.calls after forward") EXPECT_EQ(leaf.repr, "1");  // one call since the state as built
    }
    EXPECT_EQ(state, 1) << k;
  }
  // Member 1's output in call 2 is its call 1's: its counter was restored to the state as built in between.
  const oracles::RunResult& eager = results[1].result.runs.eager;
  oracles::LoadedOutputs loaded = oracles::loadOutputs(*eager.outputs, eager.jobDir);
  std::optional<at::Tensor> first, second;
  std::string names;
  for (const auto& leaf : loaded.leaves) {  // member 1's own leaves: its output is the first output leaf
    names += leaf.role + ": " + leaf.name + "\n";
    if (leaf.role == "output" && !first) first = loaded.tensors.at(leaf.index);
    if (leaf.role == "second-call" && leaf.name.ends_with(fmt::format("output {}", batch.members[1].firstOutput)))
      second = loaded.tensors.at(leaf.index);
  }
  ASSERT_TRUE(first && second) << names;
  EXPECT_TRUE(first->equal(*second));
  // The batch's schedule changed member 0's global in its two steps, and called member 1 in both.
  const oracles::RunResult& eager0 = results[0].result.runs.eager;
  oracles::LoadedOutputs loaded0 = oracles::loadOutputs(*eager0.outputs, eager0.jobDir);
  std::vector<double> offsets;
  int scheduled = 0;
  for (const auto& leaf : loaded0.leaves)
    if (leaf.role == "schedule" && leaf.name.ends_with("): m0.global OFFSET_0"))
      offsets.push_back(loaded0.tensors.at(leaf.index).item<double>());
  for (const auto& leaf : loaded.leaves)
    scheduled += leaf.role == "schedule" && leaf.name.ends_with(fmt::format("output {}", batch.members[1].firstOutput));
  EXPECT_EQ(offsets, (std::vector<double>{0.25, 2.0})) << names;
  EXPECT_EQ(scheduled, 2) << names;
}

// TEST FIXTURE tcfuzz_planted_two_sigmoids miscompiles sigmoid only in a graph with two of them: each member alone
// agrees, the batch holds the fault again in a fresh cold run, so both members are batch-only, with their batch.
TEST_F(BatchTesterTest, AFaultOnlyTheBatchShowsIsBatchOnly) {
  std::vector<fs::path> files;
  fs::path batchFile;
  gen::BatchProgram batch = write({chain({"sigmoid"}, true), chain({"sin", "sigmoid"}, true), chain({"cos"}, true)},
                                  "two", files, batchFile);
  BatchTester batchTester(*tester_);
  std::vector<BatchMemberResult> results =
      batchTester.test(batchFile, batch, files, settings("tcfuzz_planted_two_sigmoids"));
  ASSERT_EQ(results.size(), 3u);
  for (size_t k : {0u, 1u}) {
    EXPECT_EQ(results[k].judgement, BatchJudgement::BatchOnly) << results[k].result.verdict.reason;
    EXPECT_EQ(results[k].result.verdict.verdict, oracles::Verdict::NumericDivergence);
    EXPECT_EQ(results[k].result.verdict.reason.rfind("batch-only (member " + std::to_string(k) + " alone agrees", 0), 0u)
        << results[k].result.verdict.reason;
    EXPECT_EQ(results[k].batch, (std::vector<int>{0, 1, 2}));
  }
  EXPECT_EQ(results[2].judgement, BatchJudgement::InBatch);
  EXPECT_EQ(results[2].result.verdict.verdict, oracles::Verdict::Agree);
}

// TEST FIXTURE tcfuzz_planted_refused_alone miscompiles two sigmoids in one graph and refuses one as documented: each
// member alone was refused, never judged, so the batch's divergence is not batch-only (as an export guard once did).
TEST_F(BatchTesterTest, AMemberRefusedAloneIsNotBatchOnly) {
  std::vector<fs::path> files;
  fs::path batchFile;
  gen::BatchProgram batch = write({chain({"sigmoid"}, true), chain({"sin", "sigmoid"}, true)}, "refused", files, batchFile);
  TestSettings s = settings("tcfuzz_planted_refused_alone");
  s.compile.fullgraph = true;
  std::vector<BatchMemberResult> results = BatchTester(*tester_).test(batchFile, batch, files, s);
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    EXPECT_EQ(r.judgement, BatchJudgement::NotAlone) << r.result.verdict.reason;
    EXPECT_EQ(r.result.verdict.verdict, oracles::Verdict::Agree) << r.result.verdict.reason;
    EXPECT_NE(r.result.verdict.reason.find("a graph break under fullgraph=True"), std::string::npos)
        << r.result.verdict.reason;
    EXPECT_NE(r.result.verdict.reason.find("numeric-divergence is not batch-only: alone it was refused, not judged"),
              std::string::npos)
        << r.result.verdict.reason;
    EXPECT_TRUE(r.batch.empty());
  }
}

// Triage of a batch-only finding drops whole members while the fault holds (fresh, cold), names the members it
// needs and writes their batch: here the cos member is not needed, both sigmoid members are (TEST FIXTURE
// tcfuzz_planted_two_sigmoids needs two sigmoids in one graph).
TEST_F(BatchTesterTest, TriageOfABatchOnlyFindingDropsTheMembersItDoesNotNeed) {
  TempDir campaign("tcfuzz-batch-triage");
  FindingStore store(campaign.path() / "findings.sqlite");
  std::vector<gen::Graph> members{chain({"cos"}, true), chain({"sigmoid"}, true), chain({"sin", "sigmoid"}, true)};
  json heldIn{{"programs", {"program 000001", "program 000002", "program 000003"}}, {"member", 1},
              {"members", json::array()}};
  for (const auto& g : members) heldIn["members"].push_back(g.toJson());
  ProgramRecord program{2, "h2", "grammar", "", "{}", "numeric-divergence", "", 0, 1, 1, 100, "{}"};
  FindingRecord f;
  f.programIndex = 2;
  f.foundAt = 100;
  f.verdict = "numeric-divergence";
  f.signatureId = "sig-two";
  f.signature = R"({"symptom": "numeric-divergence", "kind": "batch-only numeric", "ops": ["sigmoid"]})";
  f.config = json{{"backend", "tcfuzz_planted_two_sigmoids"}}.dump();
  f.programJson = members[1].toJson().dump();
  f.programPy = gen::emitBatch(emitter_, members, {}).py;
  f.result = json{{"seed", 0}, {"batch", {{"size", 3}, {"member", 1}, {"judged", "batch-only"}, {"held_in", heldIn}}}}.dump();
  // The same batch under plain Inductor: nothing is planted, so its fresh cold batch agrees.
  FindingRecord none = f;
  none.signatureId = "sig-none";
  none.config = json{{"backend", "inductor"}}.dump();
  std::vector<FindingRecord> found{f, none};
  store.recordProgram(program, found, {}, std::nullopt);
  TriageSettings ts;
  ts.test = settings("inductor");
  ts.minimizer.maxCandidates = 6;  // enough to take the sin out of the third member (its first candidates)
  Triage triage(catalog_, ts, campaign.path(), store, tester_, [](const std::string&) {});
  TriageRecord row = triage.triageSignature("sig-two");
  ASSERT_EQ(row.status, "batch-only") << row.data;
  json data = json::parse(row.data);
  EXPECT_EQ(data["needed"]["reproduced"], true) << data;
  EXPECT_EQ(data["needed"]["programs"], (json{"program 000002", "program 000003"})) << data;
  EXPECT_EQ(data["needed"]["tries"], 2);  // the whole batch, then without the cos member
  EXPECT_GE(data["needed"]["shrink_tries"], 1);
  EXPECT_LE(data["needed"]["shrink_tries"], 6);
  // Shrunk inside the batch (the third member first): its add and sin go (two sigmoids are the fault), no sigmoid does.
  EXPECT_EQ(data["needed"]["nodes"]["before"], 5) << data;
  EXPECT_LE(data["needed"]["nodes"]["after"], 3) << data;
  std::string needed = test_support::readText(campaign.path() / "crashes" / "sig-two" / "batch_needed.py");
  EXPECT_NE(needed.find("2 independent programs"), std::string::npos) << needed;
  EXPECT_EQ(needed.find("torch.cos"), std::string::npos) << needed;
  EXPECT_EQ(needed.find("torch.sin("), std::string::npos) << needed;
  EXPECT_NE(needed.find("sigmoid"), needed.rfind("sigmoid")) << needed;  // one in each member
  std::string note = test_support::readText(campaign.path() / "crashes" / "sig-two" / "batch_only.md");
  EXPECT_NE(note.find("- program 000002 (the member whose leaves differ): "), std::string::npos) << note;
  EXPECT_NE(note.find("- program 000003: 1 nodes\n"), std::string::npos) << note;
  // A batch-only finding its batch no longer shows is unreproducible, as any finding its replay does not show.
  TriageRecord gone = triage.triageSignature("sig-none");
  EXPECT_EQ(gone.status, "unreproducible") << gone.data;
  EXPECT_EQ(json::parse(gone.data)["needed"]["reproduced"], false);
  EXPECT_FALSE(fs::exists(campaign.path() / "crashes" / "sig-none" / "batch_needed.py"));
}

}  // namespace
}  // namespace tcfuzz
