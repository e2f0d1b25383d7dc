// Known upstream issues and possible duplicates: corpus/known-upstream.json loads, a bug matching a
// key is marked known in its report and sorted after the new ones in the index, a malformed list is a
// clear error, the tracker searches are built from the signature, and --check-upstream without a
// reachable API fails at once with the reason.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include <boost/process.hpp>
#include <nlohmann/json.hpp>

#include "TestWorkers.h"
#include "oracles/reporter/IndexWriter.h"
#include "oracles/reporter/KnownUpstream.h"
#include "oracles/reporter/ReportWriter.h"

using namespace tcfuzz;
using namespace tcfuzz::oracles;
using tcfuzz::test_support::Finished;
using tcfuzz::test_support::readText;
using tcfuzz::test_support::runTcfuzz;
using tcfuzz::test_support::sourcePath;
using tcfuzz::test_support::TempDir;
namespace bp = boost::process;
namespace fs = std::filesystem;

namespace {

/// A wrong gradient of avg_pool2d blamed on Inductor: the shape of upstream issue #198119.
BugReport avgPoolGradientBug() {
  BugReport bug;
  bug.id = "a0a0a0a0a0a0a0a0";
  bug.title = "[inductor] wrong gradient of avg_pool2d with ceil_mode=True";
  bug.severity = "wrong-result";
  bug.component = "inductor";
  bug.signature.symptom = "numeric-divergence";
  bug.signature.kind = "numeric";
  bug.signature.ops = {"avg_pool2d", "mul"};
  bug.repro.verdict = "numeric-divergence";
  bug.repro.backward = true;
  bug.repro.programPy = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                        "        return torch.nn.functional.avg_pool2d(x, [1, 4], stride=[1, 2], ceil_mode=True)\n"
                        "def make_inputs(seed):\n    return [torch.randn(1, 1, 2, 7)]\n";
  return bug;
}

BugReport crashBug() {
  BugReport bug;
  bug.id = "c1c1c1c1c1c1c1c1";
  bug.title = "[inductor] CppCompileError for cumsum";
  bug.severity = "crash";
  bug.component = "inductor";
  bug.signature.symptom = "crash-mismatch";
  bug.signature.kind = "exception";
  bug.signature.exceptionType = "InductorError(CppCompileError)";
  bug.signature.normalizedMessage = "C++ compile error <path> 'tmp3' was not declared in this scope";
  bug.repro.verdict = "crash-mismatch";
  bug.repro.programIr = {{"nodes", {{{"op", "cumsum"}}, {{"op", "sigmoid"}}}}};
  bug.repro.compile.inductorConfig = {{"cpp_wrapper", true}};
  return bug;
}

std::vector<KnownIssue> projectList() { return loadKnownIssues(sourcePath("corpus/known-upstream.json")); }

}  // namespace

TEST(KnownUpstream, TheProjectListLoadsAndMarksTheAvgPoolGradientBugAsIssue198119) {
  std::vector<KnownIssue> known = projectList();
  ASSERT_GE(known.size(), 3u);
  BugReport bug = avgPoolGradientBug();
  const KnownIssue* match = matchKnownIssue(known, bug);
  ASSERT_NE(match, nullptr);
  EXPECT_EQ(match->issue.number, 198119);
  EXPECT_EQ(match->issue.url, "https://github.com/pytorch/pytorch/issues/198119");
  EXPECT_EQ(match->issue.state, "open");

  // The key is the bug's shape: forward only, another op, or another component is not that issue.
  BugReport forwardOnly = bug;
  forwardOnly.repro.backward = false;
  EXPECT_EQ(matchKnownIssue(known, forwardOnly), nullptr);
  BugReport otherOp = bug;
  otherOp.signature.ops = {"max_pool2d"};
  EXPECT_EQ(matchKnownIssue(known, otherOp), nullptr);
  BugReport otherComponent = bug;
  otherComponent.component = "aot_autograd";
  EXPECT_EQ(matchKnownIssue(known, otherComponent), nullptr);
}

TEST(KnownUpstream, AReducedPrecisionAmaxOrAminGradientBugIsIssue186799) {
  // Campaign seed 36 on torch 2.15: sigmoid then amax in bf16 (mul then amin in fp16), Inductor's backward
  // gives [inf, nan] where eager gives [0.0547, 0]; upstream #186799 has this class.
  std::vector<KnownIssue> known = projectList();
  using Ops = std::vector<std::string>;
  for (const Ops& ops : {Ops{"sigmoid", "amax"}, Ops{"mul", "amin"}}) {
    SCOPED_TRACE(ops.back());
    BugReport bug = avgPoolGradientBug();
    bug.signature.ops = ops;
    const KnownIssue* match = matchKnownIssue(known, bug);
    ASSERT_NE(match, nullptr);
    EXPECT_EQ(match->issue.number, 186799);
    BugReport forwardOnly = bug;
    forwardOnly.repro.backward = false;
    EXPECT_EQ(matchKnownIssue(known, forwardOnly), nullptr);
  }
}

TEST(KnownUpstream, AWriteThroughAnExpandedViewIsIssue197448WhateverItsSymptom) {
  // torch.compile on 2.15 loses or misplaces a scalar written through `v.expand(k, *v.shape)` (family
  // expand-write): into a clone it shows as a wrong output, into an input as a wrong input after the call.
  std::vector<KnownIssue> known = projectList();
  for (const char* symptom : {"numeric-divergence", "mutation-divergence"}) {
    SCOPED_TRACE(symptom);
    BugReport bug = avgPoolGradientBug();
    bug.signature.ops = {"expand_narrow_fill", "mul"};  // as a minimized signature spells in-place ops
    bug.signature.symptom = symptom;
    bug.repro.backward = false;
    const KnownIssue* match = matchKnownIssue(known, bug);
    ASSERT_NE(match, nullptr);
    EXPECT_EQ(match->issue.number, 197448);
  }
}

TEST(KnownUpstream, AViewOfACopysignOfATransposedInputThatFailsCompiledIsIssue198364) {
  // The TriageTest campaign on torch 2.15, under an AOTAutograd backend: copysign of a transposed input, to_dtype,
  // reshape raises "view size is not compatible" compiled (copysign's meta strides are contiguous, eager's follow the
  // input); eager runs. Upstream #198364 lists copysign and div(rounding_mode="floor").
  std::vector<KnownIssue> known = projectList();
  for (const char* op : {"copysign", "div_rounding"}) {
    SCOPED_TRACE(op);
    BugReport bug = crashBug();
    bug.signature.exceptionType = "RuntimeError";
    bug.signature.normalizedMessage =
        "view size is not compatible with input tensor's size and stride (at least one dimension spans across two "
        "contiguous subspaces). Use .reshape(...) instead.";
    bug.signature.ops = {op, "to_dtype", "reshape"};
    const KnownIssue* match = matchKnownIssue(known, bug);
    ASSERT_NE(match, nullptr);
    EXPECT_EQ(match->issue.number, 198364);
    bug.signature.normalizedMessage = "planted lowering failure";  // another crash of the same ops: another bug
    EXPECT_EQ(matchKnownIssue(known, bug), nullptr);
  }
}

TEST(KnownUpstream, AnInt64ArangeScaledPastInt32IsIssue175966) {
  // A default campaign on torch 2.15 (CPU): `x + torch.arange(n, dtype=torch.int64) * 1500767109` wraps at
  // 2^32 under Inductor, with dynamic=False too; aot_eager is right. Upstream #175966 (CUDA) is the class.
  std::vector<KnownIssue> known = projectList();
  BugReport bug = avgPoolGradientBug();
  bug.signature.ops = {"add_scaled_arange", "to_dtype"};
  bug.repro.backward = false;
  const KnownIssue* match = matchKnownIssue(known, bug);
  ASSERT_NE(match, nullptr);
  EXPECT_EQ(match->issue.number, 175966);
  bug.component = "aot_autograd";  // blamed elsewhere: another bug
  EXPECT_EQ(matchKnownIssue(known, bug), nullptr);
}

TEST(KnownUpstream, AComplexValueViewedAsRealThatCompileRefusesIsIssue162561ByWhatItsMessageSays) {
  // A complex-heavy campaign on torch 2.15 (dynamic=True): BackendCompilerFailed(RuntimeError) "self.stride(-1)
  // must be 1 to view ComplexFloat as Float ..., but got s11". The wrapper type alone names many bugs.
  std::vector<KnownIssue> known = projectList();
  BugReport bug = crashBug();
  bug.signature.exceptionType = "BackendCompilerFailed(RuntimeError)";
  bug.signature.normalizedMessage =
      "self.stride(N) must be N to view ComplexFloat as Float (different element sizes), but got <name>";
  const KnownIssue* match = matchKnownIssue(known, bug);
  ASSERT_NE(match, nullptr);
  EXPECT_EQ(match->issue.number, 162561);
  bug.signature.normalizedMessage = "self.stride(N) must be N to view Float as Half";  // another message
  EXPECT_EQ(matchKnownIssue(known, bug), nullptr);
}

TEST(KnownUpstream, AGradientThroughABufferUpdatedInForwardIsTheOpenPartitionerFix197039) {
  // `tcfuzz gen --seed 11` program 27 on torch 2.15, judged with --backward: erf, masked_fill, then
  // buffer.lerp_(v.detach()) and dot(v, v + buffer); Inductor's backward recomputes the lerp from the
  // updated buffer (aot_eager is right), the class upstream PR #197039 fixes.
  std::vector<KnownIssue> known = projectList();
  BugReport bug = avgPoolGradientBug();
  bug.signature.ops = {"buffer_lerp_", "dot", "erf", "masked_fill"};
  const KnownIssue* match = matchKnownIssue(known, bug);
  ASSERT_NE(match, nullptr);
  EXPECT_EQ(match->issue.number, 197039);
  BugReport forwardOnly = bug;
  forwardOnly.repro.backward = false;
  EXPECT_EQ(matchKnownIssue(known, forwardOnly), nullptr);
}

TEST(KnownUpstream, AMalformedListIsAnErrorNamingTheFileAndTheEntry) {
  TempDir dir("tcfuzz-known");
  auto write = [&](const std::string& text) {
    std::ofstream(dir.path() / "known.json") << text;
    return dir.path() / "known.json";
  };
  auto errorOf = [&](const std::filesystem::path& file) {
    try {
      loadKnownIssues(file);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(errorOf(dir.path() / "absent.json").find("cannot read the known-issues file"), std::string::npos);
  EXPECT_NE(errorOf(write("{\"issues\": [")).find("is not valid JSON"), std::string::npos);
  EXPECT_NE(errorOf(write("[]")).find("expected an object with an \"issues\" array"), std::string::npos);
  EXPECT_NE(errorOf(write(R"({"issues": [{"number": 1, "key": {"ops": "avg_pool2d"}}]})"))
                .find("issues[0].key.ops must be an array"),
            std::string::npos);
  EXPECT_NE(errorOf(write(R"({"issues": [{"number": 1, "key": {}}]})")).find("needs a non-empty \"key\""),
            std::string::npos);
  std::string named = errorOf(write(R"({"issues": [{"title": "no number", "key": {"symptom": "x"}}]})"));
  EXPECT_NE(named.find((dir.path() / "known.json").string()), std::string::npos) << named;
  EXPECT_NE(named.find("issues[0] needs an integer \"number\""), std::string::npos) << named;
}

TEST(KnownUpstream, SearchesComeFromTheOpsTheExceptionAndItsMessageAndTheConfig) {
  auto queries = upstreamSearchQueries(crashBug());
  ASSERT_EQ(queries.size(), 3u);
  EXPECT_EQ(queries[0], (std::pair<std::string, std::string>{"by ops", "cumsum sigmoid CppCompileError"}));
  EXPECT_EQ(queries[1], (std::pair<std::string, std::string>{"by message", "CppCompileError compile error tmp3 declared scope"}));
  EXPECT_EQ(queries[2], (std::pair<std::string, std::string>{"by config", "cumsum cpp_wrapper"}));
  EXPECT_EQ(trackerSearchUrl("cumsum cpp_wrapper"),
            "https://github.com/pytorch/pytorch/issues?q=is%3Aissue+cumsum+cpp_wrapper");
  EXPECT_EQ(upstreamSearchQueries(avgPoolGradientBug()).front().second, "avg_pool2d mul torch.compile");
}

TEST(KnownUpstream, ABugWhoseBisectionNamesRemoveNoopOpsListsThatFamilyWithoutBeingMarkedKnown) {
  // A 25-minute campaign's finding: the compiled backward of a diagonal write into a clone of a 1x1 input
  // overwrites the input; the bisector names joint_graph_passes / remove_noop_ops, the pass of three open
  // upstream issues. The report lists them to compare; it does not claim the bug is one of them.
  std::vector<KnownIssue> known = projectList();
  BugReport bug = avgPoolGradientBug();
  bug.signature.ops = {"diagonal_mul_"};
  bug.repro.verdict = "mutation-divergence";
  bug.bisect = {true, "inductor", "joint_graph_passes", 3, "remove_noop_ops", ""};
  EXPECT_EQ(matchKnownIssue(known, bug), nullptr);
  std::vector<UpstreamIssue> family = matchKnownFamily(known, bug);
  std::vector<int64_t> numbers;
  for (const UpstreamIssue& i : family) numbers.push_back(i.number);
  EXPECT_EQ(numbers, (std::vector<int64_t>{197893, 198031, 198131}));
  bug.knownFamily = family;
  std::string md = renderReportMarkdown(bug, "");
  EXPECT_NE(md.find("**A known family.** The bisected culprit (`joint_graph_passes / remove_noop_ops`)"), std::string::npos)
      << md;
  EXPECT_NE(md.find("- [#198031](https://github.com/pytorch/pytorch/issues/198031) (open)"), std::string::npos) << md;
  EXPECT_EQ(reportMeta(bug)["upstream"]["known_family"].size(), 3u);
  bug.bisect.debugInfo = "pointless_view";  // another culprit: no family
  EXPECT_TRUE(matchKnownFamily(known, bug).empty());
}

TEST(KnownUpstream, AKnownBugIsMarkedInItsReportAndListedAfterTheNewOnes) {
  BugReport known = avgPoolGradientBug(), fresh = crashBug();
  known.hits = 40;  // more hits and still after the new crash: new bugs come first
  known.knownUpstream = matchKnownIssue(projectList(), known)->issue;
  std::string md = renderReportMarkdown(known, "");
  EXPECT_NE(md.find("**Known upstream issue** [#198119](https://github.com/pytorch/pytorch/issues/198119) (open)"),
            std::string::npos)
      << md;
  EXPECT_NE(renderReportMarkdown(fresh, "").find("[by ops](https://github.com/pytorch/pytorch/issues?q="),
            std::string::npos);
  nlohmann::json meta = reportMeta(known);
  EXPECT_EQ(meta["upstream"]["known"]["number"], 198119);

  TempDir dir("tcfuzz-known-index");
  writeIndex({known, fresh}, {}, dir.path(), SecretRedactor{});
  std::string index = readText(dir.path() / "index.md");
  size_t freshRow = index.find(fresh.id), knownRow = index.find(known.id);
  ASSERT_NE(knownRow, std::string::npos);
  EXPECT_LT(freshRow, knownRow);
  EXPECT_NE(index.find("| known #198119 (open) |"), std::string::npos) << index;
  EXPECT_NE(index.find("| new |"), std::string::npos) << index;
}

TEST(KnownUpstream, CheckUpstreamWithoutAReachableApiFailsAtOnceWithTheReason) {
  TempDir dir("tcfuzz-upstream");
  std::ofstream(dir.path() / "findings.sqlite");  // an empty store: a campaign with nothing found yet
  auto began = std::chrono::steady_clock::now();
  // Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
  Finished r = runTcfuzz({"report", dir.path().string(), "--check-upstream", "--upstream-api", "http://127.0.0.1:9"});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  EXPECT_NE(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("--check-upstream: cannot reach http://127.0.0.1:9"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("run without --check-upstream offline"), std::string::npos) << r.output;
  EXPECT_LT(seconds, 20.0) << "it must not hang";
}

TEST(KnownUpstream, CheckUpstreamListsTheTrackersClosestIssuesAsPossibleDuplicates) {
  // TEST FIXTURES: tests/fixtures/github_search_fixture.py stands in for GitHub's API (every search finds
  // the made-up issue #4242), and the planted sigmoid backend makes the finding; neither is real.
  TempDir dir("tcfuzz-upstream-api");
  fs::path queries = dir.path() / "queries.txt", out = dir.path() / "campaign", policy = dir.path() / "policy.json";
  bp::ipstream portLine;
  bp::child api(std::string(TCFUZZ_DEFAULT_PYTHON), sourcePath("tests/fixtures/github_search_fixture.py").string(),
                queries.string(), bp::std_out > portLine);
  std::string port;
  ASSERT_TRUE(std::getline(portLine, port)) << "the API fixture did not start";
  std::ofstream(policy) << R"({"mutation_share": 0, "schedule": {"bandit": false},
    "generation": {"min_nodes": 2, "max_nodes": 3, "dtype_weights": {"float32": 1}, "op_weights": {"sigmoid": 100000}},
    "compile": {"backends": {"tcfuzz_planted_sigmoid": 1}, "entries": {"compile": 1}, "fullgraph_share": 0,
                  "backward_share": 0}})";
  std::string plugin = sourcePath("tests/fixtures/planted_backends.py").string();
  Finished fuzz = runTcfuzz({"fuzz", "-o", out.string(), "--seed", "5", "--policy", policy.string(), "--plugin", plugin,
                             "--max-programs", "2", "--status", "log", "--no-triage", "--llm", "off", "-j", "1",
                             "--sandbox", test_support::sandboxArg()});
  ASSERT_EQ(fuzz.exitCode, 0) << fuzz.output;
  Finished triage = runTcfuzz({"triage", out.string(), "--plugin", plugin, "-j", "1", "--no-ablation", "--no-bisect",
                               "--sandbox", test_support::sandboxArg(), "--check-upstream", "--upstream-api",
                               "http://127.0.0.1:" + port});
  api.terminate();
  ASSERT_EQ(triage.exitCode, 0) << triage.output;

  std::vector<fs::path> reports;
  for (const auto& e : fs::directory_iterator(out / "crashes")) reports.push_back(e.path());
  ASSERT_EQ(reports.size(), 1u) << triage.output;
  std::string md = readText(reports[0] / "report.md");
  EXPECT_NE(md.find("Possible duplicates (the tracker's closest matches):\n\n- "
                    "[#4242](https://github.com/pytorch/pytorch/issues/4242) (closed): made-up issue for: "),
            std::string::npos)
      << md;
  nlohmann::json meta = nlohmann::json::parse(readText(reports[0] / "meta.json"));
  EXPECT_EQ(meta["upstream"]["possible_duplicates"][0]["number"], 4242);
  EXPECT_NE(readText(out / "index.md").find("| possible duplicates: 1 |"), std::string::npos);
  // The query is the bug's first search ("by ops"), limited to PyTorch's issues.
  std::string asked = readText(queries);
  EXPECT_NE(asked.find("sigmoid"), std::string::npos) << asked;
  EXPECT_NE(asked.find(" torch.compile repo:pytorch/pytorch is:issue\n"), std::string::npos) << asked;
}
