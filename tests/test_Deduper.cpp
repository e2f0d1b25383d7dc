#include "oracles/reporter/Deduper.h"

#include <algorithm>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

namespace tcfuzz::oracles {
namespace {

const std::vector<std::string> kLoweringFrames = {"torch/_inductor/lowering.py:inner_fn",
                                                  "torch/_inductor/graph.py:call_function",
                                                  "torch/_inductor/graph.py:run_node"};

Signature crash(std::string type, std::string message, std::vector<std::string> frames) {
  Signature s;
  s.symptom = "crash-mismatch";
  s.kind = "exception";
  s.failingMode = "compiled";
  s.phase = "compile";
  s.exceptionType = std::move(type);
  s.normalizedMessage = std::move(message);
  s.frames = std::move(frames);
  return s;
}

Signature segfault() {
  Signature s;
  s.symptom = "crash-mismatch";
  s.kind = "signal SIGSEGV";
  s.failingMode = "compiled";
  s.phase = "run";
  return s;
}

Signature numeric(std::vector<std::string> ops) {
  Signature s;
  s.symptom = "numeric-divergence";
  s.kind = "numeric";
  s.ops = std::move(ops);
  return s;
}

/// Every field of a grouping, one group per line, for whole-result comparisons.
std::string describe(const std::vector<BugGroup>& bugs) {
  std::ostringstream out;
  for (const BugGroup& b : bugs) {
    out << b.id << " key=" << b.signature.key() << " sigs=";
    for (const std::string& id : b.signatureIds) out << id << ',';
    out << " findings=";
    for (int64_t id : b.findingIds) out << id << ',';
    out << " hits=" << b.hits << " seen=" << b.firstSeen << ".." << b.lastSeen << " best=" << b.bestFindingId << '/'
        << b.bestWitnessSize << " by=" << b.mergedBy << '\n';
  }
  return out.str();
}

// The three failures of the synthetic campaign. The crash comes in four message variants that the
// normalizer keeps apart (dtype names and a trailing op are words, not numbers): C1 shares C0's
// frames, C2 and C3 have unrelated frames and are linked by their messages only.
const Signature kC0 = crash("InductorError(RuntimeError)", "expected scalar type Float but found Half", kLoweringFrames);
const Signature kC1 = crash("InductorError(RuntimeError)", "expected scalar type Float but found BFloat16", kLoweringFrames);
const Signature kC2 = crash("InductorError(RuntimeError)", "expected scalar type Float but found Half in mm",
                            {"torch/_inductor/kernel/mm.py:tuned_mm", "torch/_inductor/select_algorithm.py:autotune"});
const Signature kC3 = crash("InductorError(RuntimeError)", "expected scalar type Double but found Half",
                            {"torch/_decomp/decompositions.py:addmm"});
const Signature kSegv = segfault();
const Signature kNumeric = numeric({"add", "mm", "relu"});

/// 50 findings: ids 1-22 the crash (C0 1-8, C1 9-14, C2 15-19, C3 20-22), 23-37 the segfault,
/// 38-50 the numeric divergence. Found at 1000 + id and witness size 30 unless set below.
std::vector<DedupInput> campaign() {
  std::vector<DedupInput> findings;
  for (int64_t id = 1; id <= 50; ++id) {
    DedupInput f;
    f.findingId = id;
    f.foundAt = 1000.0 + static_cast<double>(id);
    f.witnessSize = 30;
    f.signature = id <= 8 ? kC0 : id <= 14 ? kC1 : id <= 19 ? kC2 : id <= 22 ? kC3 : id <= 37 ? kSegv : kNumeric;
    findings.push_back(f);
  }
  auto at = [&](int64_t id) -> DedupInput& { return findings[static_cast<size_t>(id - 1)]; };
  at(17).foundAt = 500;  // the crash was first seen through a variant
  at(5).witnessSize = 4;  // crash: two equal witnesses, the earlier wins
  at(21).witnessSize = 4;
  at(30).witnessSize = 5;  // segfault: two equal witnesses found at the same time, the smaller id wins
  at(31).witnessSize = 5;
  at(31).foundAt = 1030;
  at(40).witnessSize = 0;  // numeric: an unknown size is never the best witness
  at(44).witnessSize = 6;
  return findings;
}

std::vector<int64_t> range(int64_t first, int64_t last) {
  std::vector<int64_t> ids;
  for (int64_t id = first; id <= last; ++id) ids.push_back(id);
  return ids;
}

TEST(CommonFrames, LongestCommonSubsequenceLength) {
  using V = std::vector<std::string>;
  EXPECT_EQ(commonFrames({}, {}), 0u);
  EXPECT_EQ(commonFrames({"a", "b", "c"}, {}), 0u);
  EXPECT_EQ(commonFrames({"a", "b", "c"}, {"a", "b", "c"}), 3u);
  EXPECT_EQ(commonFrames({"a", "b", "c"}, {"a", "x", "c"}), 2u);
  EXPECT_EQ(commonFrames({"a", "b", "c"}, {"c", "b", "a"}), 1u);  // order matters
  EXPECT_EQ(commonFrames({"a", "b", "c", "d"}, {"x", "b", "d", "a"}), 2u);
  EXPECT_EQ(commonFrames(V{"a", "b", "c", "b", "d", "a", "b"}, V{"b", "d", "c", "a", "b", "a"}), 4u);
  EXPECT_EQ(commonFrames({"a"}, {"b"}), 0u);
}

TEST(TextSimilarity, LevenshteinRatio) {
  EXPECT_DOUBLE_EQ(textSimilarity("", ""), 1.0);
  EXPECT_DOUBLE_EQ(textSimilarity("abc", ""), 0.0);
  EXPECT_DOUBLE_EQ(textSimilarity("abc", "abc"), 1.0);
  EXPECT_DOUBLE_EQ(textSimilarity("kitten", "sitting"), 1.0 - 3.0 / 7.0);
  EXPECT_DOUBLE_EQ(textSimilarity("flaw", "lawn"), 0.5);
  EXPECT_DOUBLE_EQ(textSimilarity("abc", "xyz"), 0.0);
  EXPECT_DOUBLE_EQ(textSimilarity("expected scalar type Float but found Half",
                                  "expected scalar type Float but found Half in mm"),
                   1.0 - 6.0 / 47.0);
  EXPECT_DOUBLE_EQ(textSimilarity("abc\n", "abc"), 1.0);  // a trailing newline adds no line
}

TEST(TextSimilarity, LineByLineMean) {
  EXPECT_DOUBLE_EQ(textSimilarity("kitten\nabc", "sitting\nabd"), ((1.0 - 3.0 / 7.0) + (1.0 - 1.0 / 3.0)) / 2.0);
  EXPECT_DOUBLE_EQ(textSimilarity("abc\ndef", "abc"), 0.5);  // a missing line counts as 0
  EXPECT_DOUBLE_EQ(textSimilarity("abc\ndef\nghi", "abc\nxyz"), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(textSimilarity("a\r\nb", "a\nb"), 1.0);
  // Lines are paired in order: a moved line is not found elsewhere.
  EXPECT_DOUBLE_EQ(textSimilarity("abc\nxyz", "xyz\nabc"), 0.0);
}

TEST(Deduper, CampaignGroupsIntoThreeBugs) {
  // Preconditions of the scenario: the variants are distinct exact signatures whose messages are
  // close, and C2 and C3 share fewer than two frames with C0.
  EXPECT_GT(textSimilarity(kC0.normalizedMessage, kC1.normalizedMessage), 0.8);
  EXPECT_GT(textSimilarity(kC0.normalizedMessage, kC2.normalizedMessage), 0.8);
  EXPECT_GT(textSimilarity(kC0.normalizedMessage, kC3.normalizedMessage), 0.8);
  EXPECT_EQ(commonFrames(kC0.frames, kC2.frames), 0u);
  EXPECT_EQ(commonFrames(kC0.frames, kC3.frames), 0u);

  std::vector<DedupInput> findings = campaign();
  std::shuffle(findings.begin(), findings.end(), std::mt19937(7));
  std::vector<BugGroup> bugs = Deduper().group(findings);
  ASSERT_EQ(bugs.size(), 3u) << describe(bugs);

  const BugGroup& crashBug = bugs[0];
  EXPECT_EQ(crashBug.id, kC0.id());  // the variant with most hits represents the bug
  EXPECT_EQ(crashBug.signature, kC0);
  EXPECT_EQ(crashBug.signatureIds, (std::vector<std::string>{kC0.id(), kC2.id(), kC1.id(), kC3.id()}));
  EXPECT_EQ(crashBug.findingIds, range(1, 22));
  EXPECT_EQ(crashBug.hits, 22);
  EXPECT_DOUBLE_EQ(crashBug.firstSeen, 500);
  EXPECT_DOUBLE_EQ(crashBug.lastSeen, 1022);
  EXPECT_EQ(crashBug.bestFindingId, 5);
  EXPECT_EQ(crashBug.bestWitnessSize, 4);
  EXPECT_EQ(crashBug.mergedBy, "frames+message");

  const BugGroup& segvBug = bugs[1];
  EXPECT_EQ(segvBug.id, kSegv.id());
  EXPECT_EQ(segvBug.signatureIds, (std::vector<std::string>{kSegv.id()}));
  EXPECT_EQ(segvBug.findingIds, range(23, 37));
  EXPECT_EQ(segvBug.hits, 15);
  EXPECT_DOUBLE_EQ(segvBug.firstSeen, 1023);
  EXPECT_DOUBLE_EQ(segvBug.lastSeen, 1037);
  EXPECT_EQ(segvBug.bestFindingId, 30);
  EXPECT_EQ(segvBug.bestWitnessSize, 5);
  EXPECT_EQ(segvBug.mergedBy, "exact");

  const BugGroup& numericBug = bugs[2];
  EXPECT_EQ(numericBug.id, kNumeric.id());
  EXPECT_EQ(numericBug.findingIds, range(38, 50));
  EXPECT_EQ(numericBug.hits, 13);
  EXPECT_DOUBLE_EQ(numericBug.firstSeen, 1038);
  EXPECT_DOUBLE_EQ(numericBug.lastSeen, 1050);
  EXPECT_EQ(numericBug.bestFindingId, 44);
  EXPECT_EQ(numericBug.bestWitnessSize, 6);
  EXPECT_EQ(numericBug.mergedBy, "exact");
}

TEST(Deduper, DifferentExceptionTypesNeverMerge) {
  Signature plain = crash("RuntimeError", "expected scalar type Float but found Half", kLoweringFrames);
  Signature wrapped = crash("InductorError(RuntimeError)", "expected scalar type Float but found Half", kLoweringFrames);
  Deduper deduper;
  EXPECT_FALSE(deduper.nearDuplicate(plain, wrapped));
  std::vector<BugGroup> bugs = deduper.group({{1, plain, 10, 5}, {2, wrapped, 20, 5}, {3, plain, 30, 5}});
  ASSERT_EQ(bugs.size(), 2u) << describe(bugs);
  EXPECT_EQ(bugs[0].id, plain.id());
  EXPECT_EQ(bugs[0].findingIds, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(bugs[1].id, wrapped.id());
  EXPECT_EQ(bugs[1].findingIds, (std::vector<int64_t>{2}));
}

TEST(Deduper, OtherFieldsMustMatchToo) {
  Deduper deduper;
  Signature a = crash("RuntimeError", "boom", kLoweringFrames);
  Signature b = crash("RuntimeError", "boom!", kLoweringFrames);
  ASSERT_TRUE(deduper.nearDuplicate(a, b));
  Signature other = b;
  other.phase = "run";
  EXPECT_FALSE(deduper.nearDuplicate(a, other));
  other = b;
  other.failingMode = "eager";
  EXPECT_FALSE(deduper.nearDuplicate(a, other));
  other = b;
  other.symptom = "status-mismatch";
  EXPECT_FALSE(deduper.nearDuplicate(a, other));
  EXPECT_FALSE(deduper.nearDuplicate(a, a));  // an exact duplicate is not a near one
}

TEST(Deduper, FramesSharingTwoOfThreeInOrderMerge) {
  Deduper deduper;
  Signature a = crash("AssertionError", "unexpected stride in lowering", {"torch/a.py:f", "torch/b.py:g", "torch/c.py:h"});
  Signature b = crash("AssertionError", "index out of range", {"torch/a.py:f", "torch/x.py:y", "torch/c.py:h"});
  ASSERT_LT(textSimilarity(a.normalizedMessage, b.normalizedMessage), 0.8);
  std::string rule;
  EXPECT_TRUE(deduper.nearDuplicate(a, b, &rule));
  EXPECT_EQ(rule, "frames");

  // The same two frames out of order share only one.
  Signature swapped = crash("AssertionError", "shape mismatch in view", {"torch/c.py:h", "torch/a.py:f", "torch/z.py:w"});
  EXPECT_FALSE(deduper.nearDuplicate(a, swapped));

  std::vector<BugGroup> bugs = deduper.group({{1, a, 10, 9}, {2, b, 20, 7}, {3, b, 30, 8}, {4, swapped, 40, 1}});
  ASSERT_EQ(bugs.size(), 2u) << describe(bugs);
  EXPECT_EQ(bugs[0].id, b.id());  // two hits beat one
  EXPECT_EQ(bugs[0].signatureIds, (std::vector<std::string>{b.id(), a.id()}));
  EXPECT_EQ(bugs[0].findingIds, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_DOUBLE_EQ(bugs[0].firstSeen, 10);
  EXPECT_EQ(bugs[0].bestFindingId, 2);
  EXPECT_EQ(bugs[0].mergedBy, "frames");
  EXPECT_EQ(bugs[1].id, swapped.id());
  EXPECT_EQ(bugs[1].mergedBy, "exact");
}

TEST(Deduper, MessageRuleMergesAndNeedsAMessage) {
  Deduper deduper;
  std::string rule;
  EXPECT_TRUE(deduper.nearDuplicate(kC0, kC2, &rule));
  EXPECT_EQ(rule, "message");
  EXPECT_FALSE(deduper.nearDuplicate(kC0, crash("InductorError(RuntimeError)", "index out of range in self",
                                                {"torch/_inductor/kernel/mm.py:tuned_mm"})));
  // Two bare assertions raised in unrelated places are not linked by their (empty) messages.
  Signature bareA = crash("AssertionError", "", {"torch/_inductor/ir.py:realize"});
  Signature bareB = crash("AssertionError", "", {"torch/_inductor/scheduler.py:fuse"});
  EXPECT_FALSE(deduper.nearDuplicate(bareA, bareB));
  // A stricter threshold keeps the variants apart.
  EXPECT_FALSE(Deduper({.minCommonFrames = 2, .messageSimilarity = 0.9}).nearDuplicate(kC0, kC2));
}

TEST(Deduper, NonExceptionKindsGroupExactly) {
  Deduper deduper;
  Signature add = numeric({"add", "mm", "relu"});
  Signature addTwice = numeric({"add", "add", "mm", "relu"});
  Signature sigmoid = numeric({"add", "mm", "sigmoid"});
  EXPECT_FALSE(deduper.nearDuplicate(add, addTwice));
  EXPECT_FALSE(deduper.nearDuplicate(add, sigmoid));
  Signature sigabrt = segfault();
  sigabrt.kind = "signal SIGABRT";
  Signature segvInBackward = segfault();
  segvInBackward.phase = "backward";
  Signature timeoutA = segfault(), timeoutB = segfault();
  timeoutA.kind = timeoutB.kind = "timeout";
  timeoutB.normalizedMessage = "x";  // would be "similar enough" by frames or message rules if they applied
  EXPECT_FALSE(deduper.nearDuplicate(timeoutA, timeoutB));

  Signature both = numeric({"add", "mm", "relu", "sigmoid"});  // contains two minimal bugs: ambiguous
  std::vector<BugGroup> bugs = deduper.group({{1, add, 1, 3},
                                              {2, addTwice, 2, 4},
                                              {3, sigmoid, 3, 3},
                                              {4, add, 4, 3},
                                              {5, sigabrt, 5, 3},
                                              {6, segfault(), 6, 3},
                                              {7, segvInBackward, 7, 3},
                                              {8, both, 8, 4}});
  ASSERT_EQ(bugs.size(), 6u) << describe(bugs);
  // addTwice strictly contains exactly one minimal numeric multiset (add): rule "ops".
  EXPECT_EQ(bugs[0].id, add.id());
  EXPECT_EQ(bugs[0].findingIds, (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(bugs[0].mergedBy, "ops");
  for (size_t i = 1; i < bugs.size(); ++i) {
    EXPECT_EQ(bugs[i].hits, 1);
    EXPECT_EQ(bugs[i].mergedBy, "exact");
  }
  // Equal hits: ordered by first seen.
  EXPECT_EQ(bugs[1].id, sigmoid.id());
  EXPECT_EQ(bugs[4].id, segvInBackward.id());
  EXPECT_EQ(bugs[5].id, both.id());
}

TEST(Deduper, ChainsMergeBySingleLinkage) {
  // A-B share frames, B-C share a message, A and C share nothing: one bug.
  Signature a = crash("ValueError", "first message about something", {"torch/p.py:a", "torch/q.py:b", "torch/r.py:c"});
  Signature b = crash("ValueError", "totally different text here", {"torch/p.py:a", "torch/r.py:c"});
  Signature c = crash("ValueError", "totally different text there", {"torch/z.py:z"});
  Deduper deduper;
  ASSERT_FALSE(deduper.nearDuplicate(a, c));
  std::vector<BugGroup> bugs = deduper.group({{3, c, 30, 2}, {1, a, 10, 2}, {2, b, 20, 2}});
  ASSERT_EQ(bugs.size(), 1u) << describe(bugs);
  EXPECT_EQ(bugs[0].id, a.id());  // one hit each: the earliest represents the bug
  EXPECT_EQ(bugs[0].signatureIds, (std::vector<std::string>{a.id(), b.id(), c.id()}));
  EXPECT_EQ(bugs[0].bestFindingId, 1);  // equal witnesses: the earliest found
  EXPECT_EQ(bugs[0].mergedBy, "frames+message");
}

TEST(Deduper, InputOrderDoesNotMatter) {
  std::vector<DedupInput> findings = campaign();
  // Extra groups where ties decide: a chain whose members have equal hits and first-seen times.
  Signature a = crash("ValueError", "first message about something", {"torch/p.py:a", "torch/q.py:b", "torch/r.py:c"});
  Signature b = crash("ValueError", "totally different text here", {"torch/p.py:a", "torch/r.py:c"});
  Signature c = crash("ValueError", "totally different text there", {"torch/z.py:z"});
  findings.push_back({101, a, 2000, 3});
  findings.push_back({102, b, 2000, 3});
  findings.push_back({103, c, 2000, 3});
  findings.push_back({104, numeric({"sum"}), 2000, 3});
  findings.push_back({105, numeric({"mean"}), 2000, 3});

  Deduper deduper;
  const std::string expected = describe(deduper.group(findings));
  EXPECT_EQ(std::count(expected.begin(), expected.end(), '\n'), 6);
  std::mt19937 rng(20240611);
  for (int trial = 0; trial < 25; ++trial) {
    std::shuffle(findings.begin(), findings.end(), rng);
    EXPECT_EQ(describe(deduper.group(findings)), expected) << "trial " << trial;
  }
}

TEST(Deduper, EmptyInput) { EXPECT_TRUE(Deduper().group({}).empty()); }

}  // namespace
}  // namespace tcfuzz::oracles
