// Report folders: report.md's sections (pt2 issue template), meta.json, and the files a folder holds
// after a write and a rewrite. The bugs are ReportFixtures.h's hand-built ones; no workers.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "oracles/reporter/ReportWriter.h"
#include "oracles/judge/Comparator.h"
#include "oracles/reporter/repro/ShortReproWriter.h"
#include "tests/ReportFixtures.h"

using namespace tcfuzz::oracles;
using namespace tcfuzz::test_support::reports;
using nlohmann::json;
namespace fs = std::filesystem;

TEST(ReportWriter, CrashReportHasTemplateSectionsInOrder) {
  BugReport bug = crashBug();
  std::string md = renderReportMarkdown(bug, kReproPy);
  std::vector<std::string> headings = {"# " + bug.title + "\n",
                                       "\n### 🐛 Describe the bug\n",
                                       "\n### Error logs\n",
                                       "\n### Ablation\n",
                                       "\n### Versions\n",
                                       "\n<details><summary>tcfuzz triage facts</summary>"};
  EXPECT_EQ(md.find(headings[0]), 0u);
  size_t previous = 0;
  for (const auto& h : headings) {
    size_t at = md.find(h);
    ASSERT_NE(at, std::string::npos) << h;
    EXPECT_GE(at, previous) << h;
    previous = at;
  }
}

TEST(ReportWriter, CrashReportDescribesSymptomConfigurationAndRepro) {
  BugReport bug = crashBug();
  std::string md = renderReportMarkdown(bug, kReproPy);
  size_t describe = md.find("### 🐛 Describe the bug"), logs = md.find("### Error logs");
  std::string section = md.substr(describe, logs - describe);
  EXPECT_NE(section.find("The compiled program raises `InductorError(CppCompileError)` during compile"),
            std::string::npos);
  EXPECT_NE(section.find("while eager mode runs the same program without error"), std::string::npos);
  EXPECT_NE(section.find("`torch.compile(backend=\"inductor\", dynamic=True)` with the Inductor option "
                         "`cpp_wrapper=True`"),
            std::string::npos);
  EXPECT_NE(section.find("with a backward pass"), std::string::npos);
  EXPECT_NE(section.find("The ablation blames **inductor**"), std::string::npos);
  // The short repro is quoted (not yet checked here); the full driver is linked, never inlined.
  EXPECT_NE(section.find("Minimized repro (2 nodes, from 23 in the program tcfuzz generated), "
                         "[short_repro.py](short_repro.py), not checked in a clean process:"),
            std::string::npos);
  EXPECT_NE(section.find(std::string("```python\n") + kReproPy + "```\n"), std::string::npos);
  EXPECT_NE(section.find("The full driver, [repro.py](repro.py)"), std::string::npos);
  EXPECT_NE(section.find("`python repro.py` exits with status 1 when the bug reproduces"), std::string::npos);
  EXPECT_NE(section.find("repro.py was verified in a clean process."), std::string::npos);
}

TEST(ReportWriter, ARunMinimizerThatRemovedNothingCallsTheReproMinimalNotSkipped) {
  BugReport bug = crashBug();
  bug.minimized = false;  // 57 candidates tested, none kept the bug
  bug.repro.nodes = 1;
  std::string md = renderReportMarkdown(bug, kReproPy);
  EXPECT_NE(md.find("Repro (1 node, already minimal: none of the minimizer's 57 smaller candidates kept the bug)"),
            std::string::npos);
  EXPECT_NE(md.find("- size: 1 nodes (already minimal; 57 candidates tested)"), std::string::npos);
  EXPECT_EQ(md.find("not minimized"), std::string::npos);
  bug.minimizeCandidates = 0;  // the minimizer never ran
  EXPECT_NE(renderReportMarkdown(bug, kReproPy).find("(not minimized: the minimizer was skipped or failed"),
            std::string::npos);
}

TEST(ReportWriter, TheReportEndsByDisclosingWhatTcfuzzAndItsLlmWrote) {
  BugReport bug = crashBug();
  std::string md = renderReportMarkdown(bug, kReproPy);
  EXPECT_NE(md.find("*Machine-written: tcfuzz, an automated differential fuzzer for torch.compile, wrote this whole "
                    "report"),
            std::string::npos);
  EXPECT_NE(md.find("No LLM wrote any part of the program: tcfuzz's grammar generator and mutators made it.*\n"),
            std::string::npos);
  bug.provenance = "Proposed by an LLM (model smollm2, strategy few_shot), repaired";
  bug.coreNodes = 4;
  EXPECT_NE(renderReportMarkdown(bug, kReproPy)
                .find("The program began as an LLM's output (Proposed by an LLM (model smollm2, strategy few_shot), "
                      "repaired), which tcfuzz parsed, checked, repaired and minimized.*\n"),
            std::string::npos);
}

TEST(ReportWriter, AShortReproThatDidNotReproduceIsNotQuoted) {
  BugReport bug = crashBug();
  bug.shortReproVerified = true;
  EXPECT_NE(renderReportMarkdown(bug, kReproPy).find("[short_repro.py](short_repro.py), verified in a clean process:"),
            std::string::npos);
  bug.shortReproVerified = false;
  std::string md = renderReportMarkdown(bug, kReproPy);
  EXPECT_EQ(md.find(kReproPy), std::string::npos);
  EXPECT_NE(md.find("did **not** reproduce in a clean process, so it is not quoted here"), std::string::npos);
  EXPECT_NE(md.find("The full driver, [repro.py](repro.py)"), std::string::npos);
}

TEST(ReportWriter, TracebacksKeepOnlyTheFramesInsideTorch) {
  BugReport bug = crashBug();
  bug.repro.observed["compiled"]["exception"]["traceback"] =
      "Traceback (most recent call last):\n"
      "  File \"/work/fuzzer/worker/python/child.py\", line 186, in call\n    out = fn(*args)\n"
      "  File \"/work/fuzzer/worker/python/child.py\", line 223, in run\n    self.call()\n"
      "  File \"/venv/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py\", line 563, in __call__\n"
      "    return fn(*args)\n           ^^^^^^^^^\n"
      "  File \"/venv/lib/python3.11/site-packages/torch/_inductor/cpp_builder.py\", line 99, in build\n"
      "    run_compile_cmd(cmd)\n"
      "torch._inductor.exc.InductorError: CppCompileError: C++ compile error\n";
  std::string md = renderReportMarkdown(bug, kReproPy);
  EXPECT_NE(md.find("Traceback (the frames inside torch):\n\n```\nTraceback (most recent call last):\n"
                    "  ... (2 frames outside torch)\n"
                    "  File \"torch/_dynamo/eval_frame.py\", line 563, in __call__\n"  // named inside torch
                    "    return fn(*args)\n"  // its caret line goes
                    "  File \"torch/_inductor/cpp_builder.py\", line 99, in build\n"
                    "    run_compile_cmd(cmd)\n"
                    "torch._inductor.exc.InductorError: CppCompileError: C++ compile error\n```"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("child.py"), std::string::npos);
}

TEST(ReportWriter, ACrashInsideTorchsPassesNamesTheProgramLineOfItsFxNode) {
  BugReport bug = crashBug();
  std::string md = renderReportMarkdown(bug, kReproPy);
  EXPECT_EQ(md.find("FX node of this program line"), std::string::npos) << "no node trace, no line";
  // The node's stack_trace of a batched compile: the batch's forward, then the member's own line.
  bug.repro.observed["compiled"]["exception"]["node_stack_trace"] =
      "  File \"/tmp/tcfuzz-jobs/j17/000042-batch.py\", line 88, in forward\n    o1 = self.m1(m1_x0)\n"
      "  File \"/tmp/tcfuzz-jobs/j17/000042-batch.py\", line 41, in forward\n"
      "    v3 = torch.copysign(v1, v2)\n         ^^^^^^^^^^^^^^^^^^^^^^\n";
  md = renderReportMarkdown(bug, kReproPy);
  EXPECT_NE(md.find("Torch was working on the FX node of this program line when it raised (the node's "
                    "`stack_trace`, innermost frame):\n\n```\nforward: v3 = torch.copysign(v1, v2)\n```\n"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("000042-batch.py"), std::string::npos) << "the tested file's name and lines are not repro.py's";
}

TEST(ReportWriter, CrashReportQuotesTheException) {
  BugReport bug = crashBug();
  std::string md = renderReportMarkdown(bug, kReproPy);
  size_t logs = md.find("### Error logs"), ablation = md.find("### Ablation");
  std::string section = md.substr(logs, ablation - logs);
  EXPECT_NE(section.find("compiled : exception InductorError: CppCompileError"), std::string::npos);
  EXPECT_NE(section.find("eager    : ok"), std::string::npos);
  EXPECT_NE(section.find("torch._inductor.exc.InductorError: CppCompileError: C++ compile error"), std::string::npos);
  EXPECT_NE(section.find("error: 'tmp3' was not declared in this scope"), std::string::npos);
  EXPECT_EQ(section.find("tcfuzz-verdict: crash-mismatch"), std::string::npos) << "repro.py's output stays out";
  // A message inside a code block is quoted as it is: no table escaping there.
  EXPECT_NE(section.find("auto tmp4 = tmp3 | tmp2;"), std::string::npos);
}

TEST(ReportWriter, AblationTableRowsEscapePipes) {
  BugReport bug = crashBug();
  std::string md = renderReportMarkdown(bug, kReproPy);
  size_t ablation = md.find("### Ablation"), versions = md.find("### Versions");
  std::string section = md.substr(ablation, versions - ablation);
  EXPECT_NE(section.find("| variant | verdict | reproduces | evidence |"), std::string::npos);
  EXPECT_EQ(lineWith(section, "`backend=eager`"), "| `backend=eager` | agree | no | `compiled ran` |");
  EXPECT_EQ(lineWith(section, "`backend=inductor`"),
            "| `backend=inductor` | crash-mismatch | yes | "
            "`compiled raised InductorError: error: 'tmp3' \\| tmp2 not declared` |");
  EXPECT_NE(section.find("| `without cpp_wrapper` | agree | no |"), std::string::npos);
  // Every table row has exactly 5 unescaped pipes (4 cells).
  std::istringstream lines(section);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '|') continue;
    int pipes = 0;
    for (size_t i = 0; i < line.size(); ++i) pipes += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
    EXPECT_EQ(pipes, 5) << line;
  }
  EXPECT_NE(section.find("first failing backend: `inductor`"), std::string::npos);
  EXPECT_NE(section.find("subsystem: `lowerings`"), std::string::npos);
  EXPECT_NE(section.find("bisect number: 3"), std::string::npos);
  EXPECT_NE(section.find("debug info: `aten.cumsum.default`"), std::string::npos);
}

TEST(ReportWriter, VersionsHoldTorchAndCollectEnv) {
  BugReport bug = crashBug();
  std::string md = renderReportMarkdown(bug, kReproPy);
  size_t versions = md.find("### Versions"), facts = md.find("<details><summary>tcfuzz triage facts");
  std::string section = md.substr(versions, facts - versions);
  EXPECT_NE(section.find("torch `2.11.0+cpu` (git `0123456789abcdef0123456789abcdef01234567`), CPU build, "
                         "Python `3.11.7`; devices: AMD EPYC"),
            std::string::npos)
      << section;
  EXPECT_NE(section.find("[collect_env.txt](collect_env.txt)"), std::string::npos);
  EXPECT_EQ(section.find(bug.collectEnv), std::string::npos) << "collect_env is linked, not inlined";

  bug.collectEnv.clear();
  md = renderReportMarkdown(bug, kReproPy);
  EXPECT_NE(md.find("### Versions\n\ntorch `2.11.0+cpu`"), std::string::npos);
  EXPECT_NE(md.find("collect_env not captured"), std::string::npos);
}

TEST(ReportWriter, TriageFactsListSignatureHitsAndOriginalProgram) {
  BugReport bug = crashBug();
  std::string md = renderReportMarkdown(bug, kReproPy);
  std::string facts = md.substr(md.find("<details><summary>tcfuzz triage facts</summary>"));
  EXPECT_NE(facts.find("- signature: `" + bug.signature.id() + "`"), std::string::npos);
  EXPECT_NE(facts.find("exception type: `InductorError(CppCompileError)`"), std::string::npos);
  EXPECT_NE(facts.find("frames: `torch/_inductor/cpp_builder.py:build`"), std::string::npos);
  EXPECT_NE(facts.find("- hits: 17"), std::string::npos);
  EXPECT_NE(facts.find("first seen: 2024-05-01T12:00:00Z; last seen: 2024-05-01T13:00:00Z"), std::string::npos);
  EXPECT_NE(facts.find("`00ff00ff00ff00ff` (merged by `frames`)"), std::string::npos);
  EXPECT_NE(facts.find("23 nodes originally, 2 after minimization (57 candidates tested)"), std::string::npos);
  EXPECT_NE(facts.find("campaign: `/data/campaigns/nightly-0501`"), std::string::npos);
  EXPECT_NE(facts.find("- the program before minimization: [original.py](original.py)"), std::string::npos);
  EXPECT_EQ(facts.find(bug.originalProgramPy), std::string::npos);
  // The facts are the last section; only the machine-written disclosure follows them.
  EXPECT_NE(facts.find("</details>\n\n*Machine-written: "), std::string::npos);
}

TEST(ReportWriter, TheFactsNameTheHigherOrderOpsTheMinimizedReproStillNeeds) {
  BugReport bug = crashBug();
  EXPECT_EQ(renderReportMarkdown(bug, kReproPy).find("higher-order ops"), std::string::npos);
  bug.repro.programIr["nodes"][1]["python"] = {{"hop", {{"kind", "scan"}}}};
  std::string md = renderReportMarkdown(bug, kReproPy);
  EXPECT_NE(md.find("- higher-order ops in the repro: scan (the minimizer inlines a region whenever the bug survives "
                    "without its op: these are needed)"),
            std::string::npos)
      << md;
}

TEST(ReportWriter, EachWrongResultOpensWithWhatItsCheckSaw) {
  // The numeric sentence (further from fp64) would misdescribe a flipped zero or a lost mutation.
  for (auto [symptom, opening] :
       {std::pair{"signed-zero", "### 🐛 Describe the bug\n\nThe compiled program returns zeros of the other sign"},
        {"mutation-divergence", "### 🐛 Describe the bug\n\nThe compiled forward leaves an input, buffer or parameter"},
        {"second-call-divergence", "### 🐛 Describe the bug\n\nThe compiled module's first call agrees with eager"},
        {"aliasing-divergence", "### 🐛 Describe the bug\n\nAn output of the compiled program shares storage"}}) {
    BugReport bug = numericBug();
    bug.signature.symptom = bug.repro.verdict = symptom;
    std::string md = renderReportMarkdown(bug, "print('repro')\n");
    EXPECT_NE(md.find(opening), std::string::npos) << md.substr(0, 600);
    EXPECT_EQ(md.find("further from a float64 reference than eager mode's results are"), std::string::npos) << symptom;
  }
}

TEST(ReportWriter, NumericReportTablesDivergingLeaves) {
  BugReport bug = numericBug();
  std::string md = renderReportMarkdown(bug, "print('repro')\n");
  EXPECT_NE(md.find("further from a float64 reference than eager mode's"), std::string::npos);
  EXPECT_NE(md.find("`torch.compile(backend=\"inductor\", mode=\"max-autotune\", fullgraph=True)`"),
            std::string::npos);
  EXPECT_NE(md.find("| leaf | name | dtype | shape | max abs diff | rmse(eager, fp64) | rmse(compiled, fp64) | ratio |"),
            std::string::npos);
  EXPECT_EQ(lineWith(md, "`grad(param linear.weight)` |"),
            "| 1 | `grad(param linear.weight)` | float32 | [8,16] | 0.0035 | 1.2e-07 | 4.9e-05 | 408.3x |");
  EXPECT_EQ(md.find("| 0 | `output 0`"), std::string::npos) << "a leaf that passed is not listed";
  EXPECT_NE(md.find("compiler_bisector` was not run: not available in this torch"), std::string::npos);
  EXPECT_NE(md.find("repro.py was not checked in a clean process"), std::string::npos);
  EXPECT_NE(md.find("ops: `addmm`, `log_softmax`, `var_mean`"), std::string::npos);

  // Eager exactly on fp64 and compiled off it: an infinite ratio reads "eager exact".
  bug.repro.observed["outputs"][1] = leaf(1, "grad(param linear.weight)", 3.5e-3, 0, 4.9e-5, false);
  md = renderReportMarkdown(bug, "print('repro')\n");
  EXPECT_EQ(lineWith(md, "`grad(param linear.weight)` |"),
            "| 1 | `grad(param linear.weight)` | float32 | [8,16] | 0.0035 | 0 | 4.9e-05 | eager exact |");
  EXPECT_NE(md.find("rmse(compiled, fp64) = 4.9e-05 against rmse(eager, fp64) = 0 (eager exact)."), std::string::npos)
      << md;
}

TEST(ReportWriter, ANumericReportSaysWhenRandomnessWasInvolved) {
  BugReport bug = numericBug();
  std::string md = renderReportMarkdown(bug, "print('repro')\n");
  EXPECT_EQ(md.find("Randomness:"), std::string::npos) << "no random leaf, no sentence";

  bug.repro.observed["outputs"][0]["random"] = true;
  bug.repro.observed["eager"]["random_ops"] = {"aten.bernoulli_"};
  md = renderReportMarkdown(bug, "print('repro')\n");
  EXPECT_NE(md.find("Randomness: leaves 0 depend on a random op (`aten.bernoulli_`); their values were not compared"),
            std::string::npos)
      << md;
}

TEST(ReportWriter, StatusMismatchAndTimeoutAreDescribed) {
  BugReport accepts = crashBug();
  accepts.severity = "accepts-invalid";
  accepts.repro.verdict = accepts.signature.symptom = "status-mismatch";
  accepts.signature.failingMode = "eager";
  accepts.signature.phase = "run";
  accepts.signature.exceptionType = "RuntimeError";
  accepts.repro.observed = {{"eager",
                             {{"status", "exception"},
                              {"phase", "run"},
                              {"exception",
                               {{"type", "RuntimeError"},
                                {"qualified_type", "RuntimeError"},
                                {"message", "index 7 is out of bounds for dimension 0 with size 4\nmore"}}}}},
                            {"compiled", okRun()}};
  std::string md = renderReportMarkdown(accepts, kReproPy);
  EXPECT_NE(md.find("Eager mode raises `RuntimeError` during run (`index 7 is out of bounds for dimension 0 with "
                    "size 4`), but the compiled program runs without error"),
            std::string::npos);
  EXPECT_NE(md.find("The eager run raised:\n\n```\nRuntimeError: index 7 is out of bounds"), std::string::npos);

  BugReport hang = crashBug();
  hang.severity = "hang";
  hang.signature.kind = "timeout";
  hang.signature.phase = "run";
  md = renderReportMarkdown(hang, kReproPy);
  EXPECT_NE(md.find("The compiled program does not finish within the time limit during run, while eager mode runs "
                    "the same program without error."),
            std::string::npos);
}

TEST(ReportWriter, LongMessagesAreCutWithANote) {
  BugReport bug = crashBug();
  bug.repro.observed["compiled"]["exception"]["message"] = std::string(10000, 'x');
  std::string md = renderReportMarkdown(bug, kReproPy);
  EXPECT_EQ(md.find(std::string(2100, 'x')), std::string::npos);
  EXPECT_NE(md.find("[... cut by tcfuzz:"), std::string::npos);
}

TEST(ReportWriter, MissingObservedFieldsDoNotThrow) {
  BugReport bug = crashBug();
  bug.repro.observed = json::array({1, 2});
  EXPECT_NO_THROW(renderReportMarkdown(bug, kReproPy));
  bug.repro.observed = {{"compiled", {{"exception", "not an object"}, {"status", 3}}}, {"outputs", {{"leaf", "x"}}}};
  EXPECT_NO_THROW(renderReportMarkdown(bug, kReproPy));
  BugReport numeric = numericBug();
  numeric.repro.observed = {{"outputs", {{{"leaf", 1}, {"rmse_eager_fp64", nullptr}}, 7}}};
  std::string md;
  EXPECT_NO_THROW(md = renderReportMarkdown(numeric, kReproPy));
  EXPECT_NE(md.find("| n/a | n/a | n/a | n/a |"), std::string::npos);
  EXPECT_NO_THROW(renderReportMarkdown(BugReport{}, ""));
}

// The report names where the witness came from: for an LLM program, its strategy and target, and how
// much of the LLM's core survived minimization.
TEST(ReportWriter, ProvenanceNamesTheLlmStrategyAndTarget) {
  BugReport bug = crashBug();
  bug.provenance = "Proposed by an LLM (model SmolLM2, strategy target-json, target aliased_mutation, reply 7 in "
                   "work/llm/replies.jsonl), repaired, and grown by the grammar generator (seed 3, index 94) around its "
                   "2 core nodes, marked [LLM core]";
  bug.coreNodes = 2;
  bug.coreNodesKept = 1;
  std::string md = renderReportMarkdown(bug, kReproPy);
  EXPECT_NE(md.find("- made by: Proposed by an LLM (model SmolLM2, strategy target-json, target aliased_mutation"),
            std::string::npos) << md;
  EXPECT_NE(md.find("- LLM core: 1 of its 2 nodes remain in the minimized program"), std::string::npos) << md;
  json meta = reportMeta(bug);
  EXPECT_EQ(meta["provenance"]["core_nodes"], 2);
  EXPECT_EQ(meta["provenance"]["core_nodes_kept"], 1);
  EXPECT_EQ(meta["provenance"]["made_by"], bug.provenance);
  // A grammar witness has no core line.
  BugReport grammar = crashBug();
  grammar.provenance = "Generated by tcfuzz (grammar generator): seed 5, index 0";
  md = renderReportMarkdown(grammar, kReproPy);
  EXPECT_NE(md.find("- made by: Generated by tcfuzz (grammar generator): seed 5, index 0"), std::string::npos);
  EXPECT_EQ(md.find("- LLM core:"), std::string::npos);
}

TEST(ReportWriter, MetaHasTimesSizesConfigsAndSignature) {
  BugReport bug = crashBug();
  json meta = reportMeta(bug);
  EXPECT_EQ(meta["id"], bug.id);
  EXPECT_EQ(meta["hits"], 17);
  EXPECT_EQ(meta["first_seen"], "2024-05-01T12:00:00Z");
  EXPECT_EQ(meta["last_seen"], "2024-05-01T13:00:00Z");
  EXPECT_DOUBLE_EQ(meta["first_seen_unix"].get<double>(), kMay1Noon);
  EXPECT_EQ(meta["sizes"], json({{"original_nodes", 23}, {"minimized_nodes", 2}}));
  EXPECT_EQ(meta["verdict"], "crash-mismatch");
  EXPECT_EQ(meta["severity"], "crash");
  EXPECT_EQ(meta["component"], "inductor");
  EXPECT_EQ(meta["signature"], toJson(bug.signature));
  EXPECT_EQ(meta["config"]["original"], bug.originalConfig);
  EXPECT_EQ(meta["config"]["minimized"]["backward"], true);
  EXPECT_EQ(meta["config"]["minimized"]["inductor_config"]["cpp_wrapper"], true);
  EXPECT_EQ(meta["raw_signature_ids"], json({bug.id, "00ff00ff00ff00ff"}));
  EXPECT_EQ(meta["finding_ids"], json({3, 9, 41}));
  EXPECT_EQ(meta["repro"]["verified"], true);
  EXPECT_EQ(meta["ablation"].size(), 5u);
  EXPECT_EQ(meta["ablation"][3]["reproduces"], true);
  EXPECT_EQ(meta["bisect"]["bisect_number"], 3);
  EXPECT_EQ(meta["torch"]["version"], "2.11.0+cpu");
  EXPECT_EQ(meta["torch"]["python"], "3.11.7");
  EXPECT_EQ(meta["torch"]["devices"], json({"AMD EPYC"}));

  bug.reproVerified.reset();
  bug.firstSeen = 0;
  meta = reportMeta(bug);
  EXPECT_TRUE(meta["repro"]["verified"].is_null());
  EXPECT_TRUE(meta["first_seen"].is_null());
}

TEST(ReportWriter, FolderHoldsExactlyItsFilesAndRewritesIdempotently) {
  fs::path dir = freshDir("folder") / "crashes" / "abc";
  BugReport bug = crashBug();
  writeReportFolder(bug, kReproPy, dir, tcfuzz::SecretRedactor{});
  EXPECT_EQ(filesIn(dir), (std::set<std::string>{"repro.py", "short_repro.py", "collect_env.txt", "report.md",
                                                 "program.json", "original.py", "meta.json"}));
  EXPECT_EQ(slurp(dir / "repro.py"), kReproPy);
  std::string shortRepro = renderShortRepro(bug.repro, bug.title, ComparatorOptions{});
  EXPECT_EQ(slurp(dir / "short_repro.py"), shortRepro);
  EXPECT_EQ(slurp(dir / "collect_env.txt"), bug.collectEnv);
  EXPECT_EQ(slurp(dir / "report.md"), renderReportMarkdown(bug, shortRepro));
  EXPECT_EQ(slurp(dir / "program.json"), bug.repro.programIr.dump(2) + "\n");
  EXPECT_EQ(slurp(dir / "original.py"), bug.originalProgramPy);
  json meta = json::parse(slurp(dir / "meta.json"));
  EXPECT_EQ(meta, reportMeta(bug));

  std::map<std::string, std::string> before;
  for (const auto& name : filesIn(dir)) before[name] = slurp(dir / name);
  writeReportFolder(bug, kReproPy, dir, tcfuzz::SecretRedactor{});
  std::map<std::string, std::string> after;
  for (const auto& name : filesIn(dir)) after[name] = slurp(dir / name);
  EXPECT_EQ(before, after);

  // A later triage without an original program drops the stale original.py, and only that.
  std::ofstream(dir / "notes.txt") << "mine\n";
  bug.originalProgramPy.clear();
  bug.hits = 18;
  writeReportFolder(bug, kReproPy, dir, tcfuzz::SecretRedactor{});
  EXPECT_EQ(filesIn(dir), (std::set<std::string>{"repro.py", "short_repro.py", "collect_env.txt", "report.md",
                                                 "program.json", "meta.json", "notes.txt"}));
  EXPECT_EQ(json::parse(slurp(dir / "meta.json"))["hits"], 18);
  fs::remove_all(dir.parent_path().parent_path());
}

// tlparse's rendering of the failing compile is copied into tlparse/ (masked like every file) and linked;
// a trace that was not rendered says why, and a rendering gone from the campaign is not linked.
TEST(ReportWriter, TheRenderedTraceIsCopiedMaskedAndLinked) {
  fs::path root = freshDir("trace");
  fs::path rendered = root / "traces" / "abc" / "tlparse";
  fs::create_directories(rendered / "-_0_0_0");
  std::ofstream(rendered / "index.html") << "<html>compile [0/0] token sk-planted-0123456789</html>\n";
  std::ofstream(rendered / "-_0_0_0" / "dynamo_output_graph_0.txt") << "graph\n";
  BugReport bug = crashBug();
  bug.trace = {true, rendered.string(), "short_repro.py", ""};
  tcfuzz::SecretRedactor secrets;
  secrets.add("TCFUZZ_LLM_API_KEY", "sk-planted-0123456789");
  fs::path dir = root / "crashes" / "abc";
  writeReportFolder(bug, kReproPy, dir, secrets);
  EXPECT_EQ(slurp(dir / "tlparse" / "index.html"), "<html>compile [0/0] token [REDACTED:TCFUZZ_LLM_API_KEY]</html>\n");
  EXPECT_EQ(slurp(dir / "tlparse" / "-_0_0_0" / "dynamo_output_graph_0.txt"), "graph\n");
  std::string md = slurp(dir / "report.md");
  EXPECT_NE(md.find("Structured trace of the failing compile (`TORCH_TRACE` of `short_repro.py`, rendered by tlparse): "
                    "[tlparse/index.html](tlparse/index.html)."),
            std::string::npos)
      << md;
  EXPECT_EQ(json::parse(slurp(dir / "meta.json"))["trace"],
            (json{{"rendered", true}, {"script", "short_repro.py"}, {"note", ""}}));

  // The campaign's rendering removed since triage: the report says so and the stale copy goes.
  fs::remove_all(root / "traces");
  writeReportFolder(bug, kReproPy, dir, secrets);
  EXPECT_FALSE(fs::exists(dir / "tlparse"));
  md = slurp(dir / "report.md");
  EXPECT_EQ(md.find("(tlparse/index.html)"), std::string::npos) << md;
  EXPECT_NE(md.find("No structured trace: the rendered trace " + rendered.string() + " no longer exists."),
            std::string::npos)
      << md;

  bug.trace = {false, "", "", "tlparse is not installed (scripts/setup installs it into .venv)"};
  EXPECT_NE(renderReportMarkdown(bug, "").find("No structured trace: tlparse is not installed"), std::string::npos);
  bug.trace = {};  // the step did not run (--no-tlparse): nothing said
  EXPECT_EQ(renderReportMarkdown(bug, "").find("structured trace"), std::string::npos);
  fs::remove_all(root);
}

TEST(ReportWriter, FolderWriteFailureNamesThePath) {
  fs::path root = freshDir("fail");
  fs::create_directories(root);
  std::ofstream(root / "file") << "x";
  try {
    writeReportFolder(crashBug(), kReproPy, root / "file" / "abc", tcfuzz::SecretRedactor{});
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find((root / "file").string()), std::string::npos) << e.what();
  }
  fs::remove_all(root);
}
