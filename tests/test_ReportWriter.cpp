// Report folders and the campaign index: report.md's sections (pt2 issue template), meta.json,
// the files a folder holds after a write and a rewrite, and the ordering and escaping of the index.
// BugReports are built by hand with the shapes ProgramTester's toJson produces; no workers.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "oracles/reporter/IndexWriter.h"
#include "oracles/reporter/MarkdownText.h"
#include "oracles/reporter/ReportWriter.h"
#include "oracles/judge/Comparator.h"
#include "oracles/reporter/ShortReproWriter.h"

using namespace tcfuzz::oracles;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr double kMay1Noon = 1714564800;  // 2024-05-01T12:00:00Z

const char* kReproPy = R"(# repro.py: tcfuzz finding (minimized)
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return torch.sigmoid(x).cumsum(0)

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 4, generator=g),)

if __name__ == "__main__":
    raise SystemExit(main())
)";

json okRun() {
  return {{"status", "ok"},
          {"phase", "done"},
          {"summary", "ok"},
          {"job_dir", "/tmp/tcfuzz/jobs/000001-eager"},
          {"times", {{"fork_s", 0.01}, {"setup_s", 0.2}, {"compile_s", 0.0}, {"run_s", 0.01}}}};
}

BugReport crashBug() {
  BugReport bug;
  Signature& s = bug.signature;
  s.symptom = "crash-mismatch";
  s.kind = "exception";
  s.failingMode = "compiled";
  s.phase = "compile";
  s.exceptionType = "InductorError(CppCompileError)";
  s.normalizedMessage = "C++ compile error Command: g++ <path> -shared -fPIC -O3 -o <path>";
  s.frames = {"torch/_inductor/cpp_builder.py:build", "torch/_inductor/codecache.py:load_async",
              "torch/_inductor/graph.py:compile_to_module"};
  bug.id = s.id();
  bug.title = "[inductor] CppCompileError for cumsum(sigmoid(x)) with cpp_wrapper=True";
  bug.severity = "crash";
  bug.component = "inductor";
  bug.hits = 17;
  bug.firstSeen = kMay1Noon;
  bug.lastSeen = kMay1Noon + 3600;
  bug.rawSignatureIds = {bug.id, "00ff00ff00ff00ff"};
  bug.findingIds = {3, 9, 41};
  bug.mergedBy = "frames";
  bug.originalConfig = {{"inductor_config", {{"cpp_wrapper", true}, {"freezing", true}}}};
  bug.originalNodes = 23;
  bug.originalProgramPy = "# original program\nclass Model(torch.nn.Module):\n    pass  # 23 nodes\n";
  bug.minimized = true;
  bug.minimizeCandidates = 57;
  ReproCase& r = bug.repro;
  r.programPy = kReproPy;
  r.programIr = {{"inputs", {{{"shape", {3, 4}}, {"dtype", "float32"}}}},
                 {"nodes", {{{"op", "sigmoid"}}, {{"op", "cumsum"}, {"attrs", {{"dim", 0}}}}}}};
  r.nodes = 2;
  r.compile.dynamic = true;
  r.compile.inductorConfig = {{"cpp_wrapper", true}};
  r.backward = true;
  r.seed = 1234;
  r.verdict = "crash-mismatch";
  const std::string message =
      "CppCompileError: C++ compile error\n\nCommand:\ng++ /tmp/torchinductor_u/ab/cab12.cpp -shared -fPIC -O3 "
      "-o /tmp/torchinductor_u/ab/cab12.so\n\nOutput:\n/tmp/torchinductor_u/ab/cab12.cpp:41:17: error: 'tmp3' "
      "was not declared in this scope\n   41 |     auto tmp4 = tmp3 | tmp2;\n";
  r.observed = {{"program", "/tmp/tcfuzz/min/program.py"},
                {"verdict", "crash-mismatch"},
                {"reason", "compiled raised InductorError during compile; eager ran"},
                {"eager", okRun()},
                {"fp64", okRun()},
                {"compiled",
                 {{"status", "exception"},
                  {"phase", "compile"},
                  {"summary", "exception InductorError: CppCompileError: C++ compile error (phase compile)"},
                  {"exception",
                   {{"type", "InductorError"},
                    {"qualified_type", "torch._inductor.exc.InductorError"},
                    {"message", message}}}}},
                {"wall_s", 4.2},
                {"compare_s", 0.01}};
  bug.ablation = {
      {"backend=eager", {{"backend", "eager"}}, "agree", false, "compiled ran"},
      {"backend=aot_eager", {{"backend", "aot_eager"}}, "agree", false, "compiled ran"},
      {"backend=aot_eager_decomp_partition", {{"backend", "aot_eager_decomp_partition"}}, "agree", false,
       "compiled ran"},
      {"backend=inductor", r.compile.toJson(), "crash-mismatch", true,
       "compiled raised InductorError: error: 'tmp3' | tmp2 not declared"},
      {"without cpp_wrapper", {{"dynamic", true}}, "agree", false, "compiled ran"},
  };
  bug.bisect.ran = true;
  bug.bisect.backend = "inductor";
  bug.bisect.subsystem = "lowerings";
  bug.bisect.bisectNumber = 3;
  bug.bisect.debugInfo = "aten.cumsum.default";
  bug.reproVerified = true;
  bug.reproOutput = "eager: ok\ncompiled: InductorError: CppCompileError: C++ compile error\ntcfuzz-verdict: "
                    "crash-mismatch\n";
  bug.torch.version = "2.11.0+cpu";
  bug.torch.git = "0123456789abcdef0123456789abcdef01234567";
  bug.torch.python = "3.11.7";
  bug.torch.devices = {"AMD EPYC"};
  bug.collectEnv = "PyTorch version: 2.11.0+cpu\nIs debug build: False\nOS: Debian GNU/Linux 12 (bookworm) (x86_64)\n"
                   "GCC version: (Debian 12.2.0-14) 12.2.0\n";
  bug.campaign = "/data/campaigns/nightly-0501";
  return bug;
}

json leaf(int index, const std::string& name, double maxAbs, double rmseEager, double rmseCompiled, bool passed) {
  return {{"leaf", index},
          {"role", index == 0 ? "output" : "grad"},
          {"name", name},
          {"dtype", "float32"},
          {"compiled_dtype", "float32"},
          {"shape", {8, 16}},
          {"compiled_shape", {8, 16}},
          {"dtype_match", true},
          {"shape_match", true},
          {"nan_inf_match", true},
          {"fp64_stable", true},
          {"fp64_used", true},
          {"max_abs_diff", maxAbs},
          {"rmse_eager_fp64", rmseEager},
          {"rmse_compiled_fp64", rmseCompiled},
          {"tolerance", 1e-4},
          {"multiplier", 2.0},
          {"passed", passed},
          {"note", passed ? "allclose" : "rmse(compiled) > 2 * rmse(eager) + tol/10"}};
}

BugReport numericBug() {
  BugReport bug;
  bug.signature.symptom = "numeric-divergence";
  bug.signature.kind = "numeric";
  bug.signature.ops = {"addmm", "log_softmax", "var_mean"};
  bug.id = bug.signature.id();
  bug.title = "[inductor] var_mean after addmm is less accurate than eager under max-autotune";
  bug.severity = "wrong-result";
  bug.component = "inductor";
  bug.hits = 4;
  bug.firstSeen = kMay1Noon;
  bug.lastSeen = kMay1Noon;
  bug.rawSignatureIds = {bug.id};
  bug.mergedBy = "exact";
  bug.originalNodes = 11;
  bug.minimized = true;
  bug.repro.nodes = 3;
  bug.repro.verdict = "numeric-divergence";
  bug.repro.compile.mode = "max-autotune";
  bug.repro.compile.fullgraph = true;
  bug.repro.divergingLeaves = {1};
  bug.repro.observed = {{"verdict", "numeric-divergence"},
                        {"reason", "leaf 1: compiled further from fp64 than eager"},
                        {"eager", okRun()},
                        {"compiled", okRun()},
                        {"fp64", okRun()},
                        {"outputs",
                         {leaf(0, "output 0", 1e-7, 2e-8, 3e-8, true),
                          leaf(1, "grad(param linear.weight)", 3.5e-3, 1.2e-7, 4.9e-5, false)}}};
  bug.ablation = {{"backend=aot_eager_decomp_partition", {{"backend", "aot_eager_decomp_partition"}}, "agree", false,
                   "rmse ratio 1.0"},
                  {"backend=inductor", bug.repro.compile.toJson(), "numeric-divergence", true, "rmse ratio 408.3"}};
  bug.bisect.note = "not available in this torch";
  return bug;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::set<std::string> filesIn(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

/// A fresh directory per test under the GoogleTest temp dir.
fs::path freshDir(const std::string& name) {
  fs::path dir = fs::path(testing::TempDir()) / fmt::format("tcfuzz-report-{}-{}", name, ::getpid());
  fs::remove_all(dir);
  return dir;
}

/// The line of `text` that contains `needle` ("" when none).
std::string lineWith(const std::string& text, const std::string& needle) {
  size_t at = text.find(needle);
  if (at == std::string::npos) return "";
  size_t begin = text.rfind('\n', at);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return text.substr(begin, text.find('\n', at) - begin);
}

}  // namespace

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
      "  File \"/work/fuzzer/worker/child.py\", line 186, in call\n    out = fn(*args)\n"
      "  File \"/work/fuzzer/worker/child.py\", line 223, in run\n    self.call()\n"
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

TEST(ReportWriter, SeverityRanks) {
  EXPECT_EQ(severityRank("crash"), 0);
  EXPECT_EQ(severityRank("hang"), 1);
  EXPECT_EQ(severityRank("wrong-result"), 2);
  EXPECT_EQ(severityRank("accepts-invalid"), 3);
  EXPECT_EQ(severityRank("low"), 4);
  EXPECT_EQ(severityRank("other"), 5);
  EXPECT_EQ(severityRank(""), 5);
}

TEST(ReportWriter, IndexOrdersBySeverityThenHitsAndEscapesHtml) {
  BugReport crashFew = crashBug(), crashMany = crashBug(), wrong = numericBug(), hang = crashBug();
  crashFew.id = "c0000000000000f1";
  crashFew.hits = 2;
  crashMany.id = "c0000000000000f2";
  crashMany.hits = 9;
  crashMany.title = "<script>alert(1)</script> in relu | sigmoid";
  hang.id = "b0000000000000a1";
  hang.severity = "hang";
  hang.hits = 1;
  hang.seenOnTorch = {"2.11.0+cu130", "2.15.0+cu132"};  // found on two releases, triaged on 2.11.0+cpu
  wrong.hits = 50;
  fs::path root = freshDir("index");
  writeIndex({wrong, crashFew, hang, crashMany}, {{"run_time", "3600"}, {"execs_done", "12000"}}, root, tcfuzz::SecretRedactor{});
  EXPECT_EQ(filesIn(root), (std::set<std::string>{"index.md", "index.html"}));

  std::string md = slurp(root / "index.md");
  EXPECT_EQ(md.rfind("# tcfuzz findings\n\n4 unique bugs from 62 raw findings.\n\n| rank | id | title |", 0), 0u) << md;
  size_t a = md.find("[c0000000000000f2](crashes/c0000000000000f2/report.md)");
  size_t b = md.find("[c0000000000000f1](crashes/c0000000000000f1/report.md)");
  size_t c = md.find("[b0000000000000a1](crashes/b0000000000000a1/report.md)");
  size_t d = md.find("[" + wrong.id + "](crashes/" + wrong.id + "/report.md)");
  ASSERT_NE(d, std::string::npos);
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_LT(c, d);
  EXPECT_NE(md.find("4 unique bugs from 62 raw findings"), std::string::npos);
  EXPECT_NE(md.find("&lt;script>alert(1)&lt;/script> in relu \\| sigmoid"), std::string::npos);
  EXPECT_TRUE(lineWith(md, "c0000000000000f2").rfind("| 1 |", 0) == 0);
  std::string shortRepro = renderShortRepro(crashMany.repro, crashMany.title, ComparatorOptions{});
  EXPECT_NE(lineWith(md, "c0000000000000f2")
                .find(fmt::format("| 2024-05-01T12:00:00Z | 2024-05-01T13:00:00Z | 2.11.0+cpu | 2 (from 23) | {} | yes |",
                                  std::count(shortRepro.begin(), shortRepro.end(), '\n'))),
            std::string::npos)
      << md;
  EXPECT_NE(lineWith(md, "c0000000000000f2").find(" | new | crash | "), std::string::npos) << md;
  EXPECT_NE(lineWith(md, "b0000000000000a1").find(" | 2.11.0+cu130, 2.15.0+cu132 | "), std::string::npos) << md;
  EXPECT_NE(renderReportMarkdown(hang, "").find("Its findings were made on torch 2.11.0+cu130, 2.15.0+cu132.\n"),
            std::string::npos);
  EXPECT_EQ(renderReportMarkdown(crashMany, "").find("Its findings were made on"), std::string::npos);

  std::string html = slurp(root / "index.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt; in relu | sigmoid"), std::string::npos);
  EXPECT_NE(html.find("<dt>programs judged</dt><dd>12000</dd>"), std::string::npos);
  EXPECT_NE(html.find("4 unique bugs from 62 raw findings"), std::string::npos);
  EXPECT_LT(html.find("</table>"), html.find("<h2>Campaign</h2>"));
  EXPECT_LT(html.find("crashes/c0000000000000f2/report.md"), html.find("crashes/c0000000000000f1/report.md"));
  EXPECT_LT(html.find("crashes/b0000000000000a1/report.md"), html.find("crashes/" + wrong.id + "/report.md"));
  EXPECT_EQ(html.find("http"), std::string::npos) << "nothing is fetched from anywhere";
  fs::remove_all(root);
}

// The bugs come first; the campaign gets a handful of lines under them, and fuzzer_stats keeps every figure.
TEST(ReportWriter, IndexPutsTheBugsFirstAndSumsUpTheCampaignUnderThem) {
  BugReport crash = crashBug();
  fs::path root = freshDir("index-summary");
  fs::create_directories(root / "plots");
  std::ofstream(root / "fuzzer_stats") << "run_time : 3725\n";
  std::ofstream(root / "plots" / "campaign.svg") << "<svg/>";
  writeIndex({crash}, {{"start_time", "1714564800"}, {"run_time", "3725"}, {"torch_version", "2.11.0+cu130"},
                       {"programs_done", "4711"}, {"findings", "3"}, {"unique_signatures", "2"}, {"arm_x", "pulls=9"}},
             root, tcfuzz::SecretRedactor{});
  std::string md = slurp(root / "index.md"), row = lineWith(md, "](crashes/");
  EXPECT_EQ(md, "# tcfuzz findings\n\n1 unique bug from 17 raw findings.\n\n| rank | id | title | upstream | severity | "
                "component | hits | first seen | last seen | torch | nodes (original) | short repro lines | verified |\n"
                "|---:|---|---|---|---|---|---:|---|---|---|---|---:|---|\n" + row + "\n\n## Campaign\n\n"
                "- duration: 1h 02m 05s\n- programs judged: 4711\n- findings: 3 (2 unique signatures)\n"
                "- torch: 2.11.0+cu130\n\nEvery figure of the campaign: [fuzzer_stats](fuzzer_stats).\n\n"
                "![the campaign over run time](plots/campaign.svg)\n");
  std::string html = slurp(root / "index.html");
  EXPECT_LT(html.find("crashes/" + crash.id + "/report.md"), html.find("<h2>Campaign</h2>"));
  EXPECT_NE(html.find("<dt>duration</dt><dd>1h 02m 05s</dd>"), std::string::npos) << html;
  EXPECT_NE(html.find("<a href=\"fuzzer_stats\">fuzzer_stats</a>"), std::string::npos) << html;
  EXPECT_EQ(html.find("arm_x"), std::string::npos) << html;
  // A merged night's keys, no fuzzer_stats file, no figure, no bug: no table, no link.
  fs::remove_all(root);
  writeIndex({}, {{"shards", "2 (2 usable)"}, {"torch", "2.15.0+cu132"}, {"execs_done", "80"}}, root, tcfuzz::SecretRedactor{});
  EXPECT_EQ(slurp(root / "index.md"), "# tcfuzz findings\n\n0 unique bugs from 0 raw findings.\n\n## Campaign\n\n"
                                      "- programs judged: 80\n- torch: 2.15.0+cu132\n- shards: 2 (2 usable)\n");
  fs::remove_all(root);
}

TEST(MarkdownText, QuotesCannotBreakOutOfTheirCodeSpanCellOrBlock) {
  EXPECT_EQ(markdown::code("a `b` c"), "``a `b` c``");
  EXPECT_EQ(markdown::code("`x`"), "`` `x` ``");
  EXPECT_EQ(markdown::code(""), "``");
  EXPECT_EQ(markdown::cell("a | b <i>"), "a \\| b &lt;i>");
  EXPECT_EQ(markdown::cell("a|b", true), "`a\\|b`");
  EXPECT_EQ(markdown::codeBlock("x ``` y", "python"), "````python\nx ``` y\n````\n");
  EXPECT_EQ(markdown::oneLine("  one\n two\tthree  ", 100), "one two three");
  EXPECT_EQ(markdown::oneLine("abcdef", 3), "abc...");
  EXPECT_EQ(markdown::headBounded("abcdef", 4), "abcd\n[... cut by tcfuzz: 4 of 6 bytes shown]");
  EXPECT_EQ(markdown::tailBounded("1\n2\n3\n", 100, 2), "[... cut by tcfuzz: last 3 of 5 bytes shown]\n2\n3");
  EXPECT_EQ(markdown::htmlEscape("<a href='x'>&\"</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
  EXPECT_EQ(markdown::isoTime(kMay1Noon), "2024-05-01T12:00:00Z");
  EXPECT_EQ(markdown::isoOrUnknown(0), "unknown");
}
