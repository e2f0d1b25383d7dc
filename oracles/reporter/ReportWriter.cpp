#include "oracles/reporter/ReportWriter.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <optional>
#include <regex>
#include <set>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "oracles/infra/AtomicFile.h"
#include "oracles/judge/Comparator.h"
#include "oracles/reporter/IndexWriter.h"
#include "oracles/reporter/KnownUpstream.h"
#include "oracles/reporter/MarkdownText.h"
#include "oracles/reporter/repro/ReproWriter.h"
#include "oracles/reporter/repro/ShortReproWriter.h"

namespace tcfuzz::oracles {

using namespace markdown;

namespace {

using nlohmann::json;

// Bounds on what a report quotes, so that one pathological message cannot blow up an issue
// (GitHub caps an issue body at 65536 characters).
constexpr size_t kMessageLimit = 2000;     // an exception message
constexpr size_t kTracebackLimit = 4000;   // the tail of a traceback or stderr
constexpr size_t kTracebackLines = 30;

// The folder's files, in the order they are written; meta.json last (its presence marks a complete folder).
constexpr const char* kReproFile = "repro.py";
constexpr const char* kShortReproFile = "short_repro.py";
constexpr const char* kCollectEnvFile = "collect_env.txt";
constexpr const char* kTraceFolder = "tlparse";  ///< tlparse's rendering of the failing compile's TORCH_TRACE
constexpr const char* kReportFile = "report.md";
constexpr const char* kProgramFile = "program.json";
constexpr const char* kOriginalFile = "original.py";
constexpr const char* kMetaFile = "meta.json";

/// A figure for the report: 4 significant digits, or nan, inf, -inf.
std::string number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.4g}", v);
}

// --- Guarded JSON access (observed results come from other processes and may lack anything) -------

const json* child(const json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string text(const json* j, std::string_view key) {
  if (!j) return "";
  const json* v = child(*j, key);
  if (!v) return "";
  return v->is_string() ? v->get<std::string>() : v->dump();
}

std::optional<double> real(const json* j, std::string_view key) {
  const json* v = j ? child(*j, key) : nullptr;
  if (!v || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

// --- Report pieces -------------------------------------------------------------------------------

/// The verdict the report is about: the repro's expected verdict, else the signature's symptom.
std::string verdictOf(const BugReport& bug) {
  return bug.repro.verdict.empty() ? bug.signature.symptom : bug.repro.verdict;
}

/// " with the Inductor options `cpp_wrapper=True`", or "" without any.
std::string inductorOptionsText(const CompileConfig& c) {
  if (!c.inductorConfig.is_object() || c.inductorConfig.empty()) return "";
  std::vector<std::string> items;
  for (const auto& [k, v] : c.inductorConfig.items()) items.push_back(code(k + "=" + pythonLiteral(v)));
  return fmt::format(" with the Inductor option{} {}", items.size() == 1 ? "" : "s", fmt::join(items, ", "));
}

/// "`torch.compile(backend="inductor", dynamic=True)` with the Inductor options `cpp_wrapper=True`"; an export
/// entry's chain of calls.
std::string describeCompile(const CompileConfig& c) {
  if (!c.compiles()) return "no `torch.compile` (eager's own higher-order ops, against their Python meaning)";
  if (c.exports()) {
    std::string strict = c.exportStrict ? "True" : "False";
    std::string out = code("torch.export.export(model, inputs, strict=" + strict + ")");
    if (c.dynamic.value_or(false))
      out += " with a " + code("Dim.AUTO") + " range [2, n + 1] on every input dimension of size n >= 2";
    if (c.entry == "export") out += ", then " + code("ep.module()");
    if (c.entry == "export+decompose") out += ", then " + code("ep.run_decompositions().module()");
    if (c.entry == "export+saveload") out += ", a " + code("torch.export.save") + "/" + code("load") + " round trip, then " + code(".module()");
    if (c.entry == "aoti") out += ", then AOTInductor: " + code("aoti_compile_and_package") + " and " + code("aoti_load_package");
    return out + inductorOptionsText(c);
  }
  std::string args;
  auto add = [&](const std::string& arg) { args += (args.empty() ? "" : ", ") + arg; };
  add(fmt::format("backend=\"{}\"", c.backend));
  if (!c.defaultMode()) add("mode=" + pythonLiteral(c.mode));
  if (c.dynamic) add("dynamic=" + pythonLiteral(*c.dynamic));
  if (c.fullgraph) add("fullgraph=True");
  std::string out = code("torch.compile(" + args + ")");
  if (c.markDynamic) out += " called with every input dimension of size >= 2 marked by " + code("torch._dynamo.maybe_mark_dynamic");
  return out + inductorOptionsText(c);
}

/// The run that misbehaved in the observed test, and its exception object (either may be null).
struct FailingRun {
  std::string mode;
  const json* run = nullptr;
  const json* exception = nullptr;
};

FailingRun failingRun(const BugReport& bug) {
  const json& observed = bug.repro.observed;
  std::string preferred = bug.signature.failingMode;
  if (preferred.empty()) preferred = bug.repro.verdict == "status-mismatch" ? "eager" : "compiled";
  FailingRun f{preferred, child(observed, preferred), nullptr};
  if (f.run) f.exception = child(*f.run, "exception");
  if (f.exception) return f;
  for (const char* mode : {"compiled", "eager", "fp64"})
    if (const json* run = child(observed, mode))
      if (const json* exception = child(*run, "exception")) return {mode, run, exception};
  return f;
}

/// The observed output leaves that diverged: those listed in repro.divergingLeaves, else those that failed.
std::vector<const json*> divergingLeaves(const BugReport& bug) {
  std::vector<const json*> out;
  const json* outputs = child(bug.repro.observed, "outputs");
  if (!outputs || !outputs->is_array()) return out;
  for (const auto& leaf : *outputs) {
    if (!leaf.is_object()) continue;
    bool listed = false;
    if (const json* index = child(leaf, "leaf"); index && index->is_number_integer())
      listed = std::find(bug.repro.divergingLeaves.begin(), bug.repro.divergingLeaves.end(), index->get<int>()) !=
               bug.repro.divergingLeaves.end();
    const json* passed = child(leaf, "passed");
    bool failed = passed && passed->is_boolean() && !passed->get<bool>();
    if (bug.repro.divergingLeaves.empty() ? failed : listed) out.push_back(&leaf);
  }
  return out;
}

/// "12.5x", or "eager exact" when eager matches fp64 exactly and compiled does not (an infinite ratio).
std::string ratioText(double ratio) { return std::isinf(ratio) ? "eager exact" : number(ratio) + "x"; }

/// rmse(compiled, fp64) / rmse(eager, fp64) of a leaf; nullopt when either is missing.
std::optional<double> rmseRatio(const json& leaf) {
  auto eager = real(&leaf, "rmse_eager_fp64"), compiled = real(&leaf, "rmse_compiled_fp64");
  if (!eager || !compiled) return std::nullopt;
  if (*eager == 0) return *compiled == 0 ? 1.0 : INFINITY;
  return *compiled / *eager;
}

std::string symptomSentence(const BugReport& bug) {
  const Signature& sig = bug.signature;
  std::string verdict = verdictOf(bug);
  FailingRun failing = failingRun(bug);
  std::string phase = sig.phase.empty() ? text(failing.run, "phase") : sig.phase;
  std::string during = phase.empty() ? "" : fmt::format(" during {}", phase);
  std::string type = sig.exceptionType.empty() ? text(failing.exception, "type") : sig.exceptionType;
  std::string message = text(failing.exception, "message");
  if (message.empty()) message = sig.normalizedMessage;
  std::string head = messageHeadline(message);  // the full message is under "Error logs"
  std::string quoted = head.empty() ? "" : fmt::format(" ({})", code(head));

  if (auto v = parseVerdict(verdict); v && !wrongResultStory(*v).empty()) return std::string(wrongResultStory(*v));
  if (isWrongResultSymptom(verdict)) {
    auto leaves = divergingLeaves(bug);
    const json* worst = nullptr;
    double worstRatio = -1;
    for (const json* leaf : leaves)
      if (auto r = rmseRatio(*leaf); r && *r > worstRatio) worstRatio = *r, worst = leaf;
    std::string s =
        "The compiled program returns results that are further from a float64 reference than eager mode's "
        "results are (the criterion of `torch._dynamo.utils.same` with `fp64_ref`)";
    if (worst)
      s += fmt::format(": on {} diverging output leaf{}, the worst ({}) has rmse(compiled, fp64) = {} against "
                       "rmse(eager, fp64) = {} ({})",
                       leaves.size(), leaves.size() == 1 ? "" : "s", code(text(worst, "name")),
                       number(*real(worst, "rmse_compiled_fp64")), number(*real(worst, "rmse_eager_fp64")),
                       ratioText(worstRatio));
    return s + ".";
  }
  if (verdict == "status-mismatch") {
    return fmt::format("Eager mode raises {}{}{}, but the compiled program runs without error: torch.compile "
                       "accepts a program that eager mode rejects.",
                       type.empty() ? "an exception" : code(type), during, quoted);
  }
  std::string who = failing.mode == "compiled" ? "The compiled program" : fmt::format("The {} run", failing.mode);
  std::string other = failing.mode == "compiled" ? "while eager mode runs the same program without error"
                                                 : "while the compiled run does not";
  if (sig.kind == "timeout") return fmt::format("{} does not finish within the time limit{}, {}.", who, during, other);
  if (sig.kind == "oom") return fmt::format("{} runs out of memory{}, {}.", who, during, other);
  if (sig.kind.rfind("signal", 0) == 0)
    return fmt::format("{} is killed by {}{}, {}.", who, sig.kind.substr(std::min<size_t>(7, sig.kind.size())),
                       during, other);
  if (sig.kind.rfind("exit", 0) == 0)
    return fmt::format("{}'s worker process exits on its own ({}){}, {}.", who, sig.kind, during, other);
  if (!type.empty() || verdict == "crash-mismatch")
    return fmt::format("{} raises {}{}{}, {}.", who, type.empty() ? "an exception" : code(type), during, quoted,
                       other);
  return fmt::format("tcfuzz's verdict on this program is {}.", code(verdict));
}

std::string ablationSentence(const BugReport& bug) {
  std::vector<std::string> yes, no;
  for (const auto& row : bug.ablation)
    if (row.verdict != "error") (row.reproduces ? yes : no).push_back(code(row.variant));
  std::string s = bug.component.empty() ? "The ablation did not name a component"
                                        : fmt::format("The ablation blames **{}**", bug.component);
  if (!yes.empty() || !no.empty()) {
    s += ": the bug reproduces under ";
    s += yes.empty() ? "none of the variants" : fmt::format("{}", fmt::join(yes, ", "));
    if (!no.empty()) s += fmt::format(" and not under {}", fmt::join(no, ", "));
  }
  return s + " (see [Ablation](#ablation)).";
}

/// "verified in a clean process", "did **not** reproduce in a clean process" or "not checked in a clean process".
std::string verification(const std::optional<bool>& verified) {
  if (!verified) return "not checked in a clean process";
  return *verified ? "verified in a clean process" : "did **not** reproduce in a clean process";
}

void renderDescribe(std::string& md, const BugReport& bug, const std::string& shortReproPy) {
  const ReproCase& r = bug.repro;
  md += "### 🐛 Describe the bug\n\n";
  md += symptomSentence(bug);
  md += fmt::format(" Configuration: {}", describeCompile(r.compile));
  if (r.backward) md += ", with a backward pass (gradients are compared as well)";
  md += fmt::format(", on {}", r.device.empty() ? "cpu" : r.device);
  if (r.threads > 0) md += fmt::format(" with {} intra-op thread{}", r.threads, r.threads == 1 ? "" : "s");
  md += ". ";
  md += ablationSentence(bug);
  md += "\n\n";
  std::string full = fmt::format(
      "The full driver, [repro.py](repro.py), compares every output leaf of the eager, compiled and float64 runs and "
      "prints `{}<verdict>` (expected: {}); `python repro.py` exits with status 1 when the bug reproduces and 0 when "
      "it does not. repro.py was {}.\n\n",
      kReproVerdictPrefix, code(verdictOf(bug)), verification(bug.reproVerified));
  if (shortReproPy.empty() || (bug.shortReproVerified && !*bug.shortReproVerified)) {
    md += shortReproPy.empty() ? "No short repro could be written for this case. "
                               : "The short repro ([short_repro.py](short_repro.py)) did **not** reproduce in a clean "
                                 "process, so it is not quoted here. ";
    md += full;
    return;
  }
  if (bug.minimized)
    md += fmt::format("Minimized repro ({} node{}, from {} in the program tcfuzz generated), "
                      "[short_repro.py](short_repro.py), {}:\n\n",
                      r.nodes, r.nodes == 1 ? "" : "s", bug.originalNodes, verification(bug.shortReproVerified));
  else if (bug.minimizeCandidates > 0)
    md += fmt::format("Repro ({} node{}, already minimal: none of the minimizer's {} smaller candidates kept the "
                      "bug), [short_repro.py](short_repro.py), {}:\n\n",
                      r.nodes, r.nodes == 1 ? "" : "s", bug.minimizeCandidates, verification(bug.shortReproVerified));
  else
    md += fmt::format("Repro, [short_repro.py](short_repro.py), {} (not minimized: the minimizer was skipped or "
                      "failed, so this is the program as generated):\n\n",
                      verification(bug.shortReproVerified));
  md += codeBlock(shortReproPy, "python");
  md += "\n`python short_repro.py` needs only torch and fails (an assertion, or the failing call) while the bug "
        "reproduces. ";
  md += full;
}

/// A sentence when some output leaves depend on a random op (their values were not compared), naming
/// the random ops eager drew from; nothing when randomness played no part.
void renderRandomness(std::string& md, const BugReport& bug) {
  const json* outputs = child(bug.repro.observed, "outputs");
  if (!outputs || !outputs->is_array()) return;
  std::vector<std::string> random;
  for (const auto& leaf : *outputs)
    if (const json* r = child(leaf, "random"); r && r->is_boolean() && r->get<bool>())
      random.push_back(text(&leaf, "leaf"));
  if (random.empty()) return;
  std::vector<std::string> ops;
  if (const json* eager = child(bug.repro.observed, "eager"))
    if (const json* named = child(*eager, "random_ops"); named && named->is_array())
      for (const auto& op : *named)
        if (op.is_string()) ops.push_back(code(op.get<std::string>()));
  md += fmt::format("Randomness: leaves {} depend on a random op{}; their values were not compared (only dtype and "
                    "shape), and the divergence above does not depend on them.\n\n",
                    fmt::join(random, ", "), ops.empty() ? "" : fmt::format(" ({})", fmt::join(ops, ", ")));
}

void renderNumericTable(std::string& md, const BugReport& bug) {
  auto leaves = divergingLeaves(bug);
  if (leaves.empty()) {
    md += "No per-leaf figures were recorded for the diverging outputs.\n\n";
    return;
  }
  md += "Diverging output leaves (rmse against the float64 eager reference):\n\n";
  md += "| leaf | name | dtype | shape | max abs diff | rmse(eager, fp64) | rmse(compiled, fp64) | ratio |\n";
  md += "|---:|---|---|---|---:|---:|---:|---:|\n";
  for (const json* leaf : leaves) {
    auto fmtReal = [&](std::string_view key) {
      auto v = real(leaf, key);
      return v ? number(*v) : std::string("n/a");
    };
    auto ratio = rmseRatio(*leaf);
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", cell(text(leaf, "leaf")),
                      cell(text(leaf, "name"), true), cell(text(leaf, "dtype")), cell(text(leaf, "shape")),
                      fmtReal("max_abs_diff"), fmtReal("rmse_eager_fp64"), fmtReal("rmse_compiled_fp64"),
                      ratio ? ratioText(*ratio) : std::string("n/a"));
  }
  md += "\n";
  std::vector<std::string> notes;
  for (const json* leaf : leaves)
    if (std::string note = text(leaf, "note"); !note.empty())
      notes.push_back(fmt::format("- leaf {}: {}", text(leaf, "leaf"), oneLine(note, kCellLimit)));
  if (!notes.empty()) md += fmt::format("{}\n\n", fmt::join(notes, "\n"));
  renderRandomness(md, bug);
}

/// A Python traceback (or faulthandler dump) with only the frames inside torch (a file under a torch/
/// folder), each named by its path inside torch: the header, the exception lines and chained-exception
/// separators stay, each run of other frames becomes one "... (N frames outside torch)" line; caret
/// lines and faulthandler's module list go.
std::string torchFrames(const std::string& traceback) {
  std::vector<std::string> lines;
  for (size_t at = 0; at < traceback.size();) {
    size_t end = traceback.find('\n', at);
    lines.push_back(traceback.substr(at, end == std::string::npos ? std::string::npos : end - at));
    at = end == std::string::npos ? traceback.size() : end + 1;
  }
  std::string out;
  int skipped = 0;
  auto flushSkipped = [&] {
    if (skipped > 0) out += fmt::format("  ... ({} frame{} outside torch)\n", skipped, skipped == 1 ? "" : "s");
    skipped = 0;
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].starts_with("Extension modules:")) continue;  // faulthandler's list of loaded modules: noise
    if (!lines[i].starts_with("  File \"")) {
      flushSkipped();
      out += lines[i] + "\n";
      continue;
    }
    size_t last = i;  // the frame's own lines: its code line and caret markers are indented further
    while (last + 1 < lines.size() && lines[last + 1].starts_with("    ")) ++last;
    if (size_t torch = lines[i].find("/torch/"); torch != std::string::npos) {
      flushSkipped();
      // The file as a path inside torch ("torch/_inductor/graph.py"): where torch is installed is the
      // reporter's machine, not the bug.
      size_t installed = lines[i].find("site-packages/torch/");
      out += "  File \"" + lines[i].substr(installed != std::string::npos ? installed + 14 : torch + 1) + "\n";
      for (size_t k = i + 1; k <= last; ++k)  // the caret lines under a frame's code say little in a report
        if (lines[k].find_first_not_of(" ^~") != std::string::npos) out += lines[k] + "\n";
    } else {
      ++skipped;
    }
    i = last;
  }
  flushSkipped();
  return out;
}

/// The innermost program frame of an FX node's stack_trace ("File ..., line N, in F" and its source line), as
/// "F: source"; "" when the trace holds no such pair. Line numbers name the tested file, not repro.py: they go.
std::string nodeProgramLine(const std::string& stackTrace) {
  static const std::regex kFrame(R"(File "[^"]*", line \d+, in (\S+)\n[ \t]*([^\n]+))");
  std::string found;
  for (auto it = std::sregex_iterator(stackTrace.begin(), stackTrace.end(), kFrame); it != std::sregex_iterator(); ++it)
    found = fmt::format("{}: {}", (*it)[1].str(), (*it)[2].str());
  return found;
}

void renderErrorLogs(std::string& md, const BugReport& bug) {
  const json& observed = bug.repro.observed;
  md += "### Error logs\n\n";
  std::string runs;
  for (const char* mode : {"eager", "compiled", "fp64"})
    if (const json* run = child(observed, mode)) {
      std::string summary = text(run, "summary");
      if (summary.empty()) summary = text(run, "status");
      runs += fmt::format("{:<8} : {}\n", mode, oneLine(summary, kMessageLimit));
    }
  if (!runs.empty() || !text(&observed, "reason").empty()) {
    md += "The three runs of the minimized program as tcfuzz observed them (eager, compiled, float64 eager):\n\n";
    if (std::string reason = text(&observed, "reason"); !reason.empty())
      runs += fmt::format("verdict  : {}: {}\n", text(&observed, "verdict"), oneLine(reason, kMessageLimit));
    md += codeBlock(runs) + "\n";
  } else {
    md += "The observed runs were not recorded.\n\n";
  }

  if (isWrongResultSymptom(verdictOf(bug))) {
    renderNumericTable(md, bug);
  } else {
    FailingRun failing = failingRun(bug);
    if (failing.exception) {
      std::string type = text(failing.exception, "qualified_type");
      if (type.empty()) type = text(failing.exception, "type");
      md += fmt::format("The {} run raised:\n\n", failing.mode);
      md += codeBlock(headBounded(fmt::format("{}: {}", type, text(failing.exception, "message")), kMessageLimit));
      md += "\n";
      if (std::string line = nodeProgramLine(text(failing.exception, "node_stack_trace")); !line.empty())
        md += "Torch was working on the FX node of this program line when it raised (the node's `stack_trace`, "
              "innermost frame):\n\n" + codeBlock(oneLine(line, kMessageLimit)) + "\n";
      if (std::string tb = text(failing.exception, "traceback"); !tb.empty())
        md += "Traceback (the frames inside torch):\n\n" +
              codeBlock(tailBounded(torchFrames(tb), kTracebackLimit, kTracebackLines)) + "\n";
    } else if (!bug.signature.exceptionType.empty()) {
      md += fmt::format("Exception (from the signature; the observed run did not record it): {}: {}\n\n",
                        code(bug.signature.exceptionType), code(bug.signature.normalizedMessage, kMessageLimit));
    }
    if (std::string tail = text(failing.run, "stderr_tail"); !tail.empty() && !failing.exception)
      md += "stderr (tail; the frames inside torch):\n\n" +
            codeBlock(tailBounded(torchFrames(tail), kTracebackLimit, kTracebackLines)) + "\n";
  }
}

/// Where the structured trace of the failing compile is, or why there is none (nothing when not run).
void renderTrace(std::string& md, const BugReport& bug) {
  const TraceOutcome& t = bug.trace;
  if (t.rendered)
    md += fmt::format("Structured trace of the failing compile (`TORCH_TRACE` of {}, rendered by tlparse): "
                      "[{}/index.html]({}/index.html).\n\n",
                      code(t.script), kTraceFolder, kTraceFolder);
  else if (!t.note.empty())
    md += fmt::format("No structured trace: {}.\n\n", oneLine(t.note, kMessageLimit));
}

void renderAblation(std::string& md, const BugReport& bug) {
  md += "### Ablation\n\n";
  if (bug.ablation.empty()) {
    md += "No ablation was run.\n\n";
  } else {
    md += "The minimized program under variants of its configuration:\n\n";
    md += "| variant | verdict | reproduces | evidence |\n|---|---|---|---|\n";
    for (const auto& row : bug.ablation)
      md += fmt::format("| {} | {} | {} | {} |\n", cell(row.variant, true), cell(row.verdict),
                        row.reproduces ? "yes" : "no", cell(row.summary, true));
    md += "\n";
  }
  if (!bug.component.empty()) md += fmt::format("Component at fault: **{}**.\n\n", oneLine(bug.component, kCellLimit));
  const BisectOutcome& b = bug.bisect;
  if (b.ran) {
    md += "`torch._inductor.compiler_bisector`:\n\n";
    md += fmt::format("- first failing backend: {}\n", b.backend.empty() ? "(none found)" : code(b.backend));
    md += fmt::format("- subsystem: {}\n", b.subsystem.empty() ? "(not narrowed down)" : code(b.subsystem));
    if (b.bisectNumber >= 0) md += fmt::format("- bisect number: {}\n", b.bisectNumber);
    if (!b.debugInfo.empty()) md += fmt::format("- debug info: {}\n", code(b.debugInfo, kMessageLimit));
    if (!b.note.empty()) md += fmt::format("- note: {}\n", oneLine(b.note, kMessageLimit));
    md += "\n";
  } else {
    md += fmt::format("`torch._inductor.compiler_bisector` was not run{}.\n\n",
                      b.note.empty() ? "" : ": " + oneLine(b.note, kMessageLimit));
  }
}

void renderUpstream(std::string& md, const BugReport& bug) {
  md += "### Upstream\n\n";
  auto issueLine = [](const UpstreamIssue& i) {
    return fmt::format("[#{}]({}){}{}", i.number, i.url, i.state.empty() ? "" : " (" + i.state + ")",
                       i.title.empty() ? "" : ": " + oneLine(i.title, kCellLimit));
  };
  if (bug.knownUpstream)
    md += fmt::format("**Known upstream issue** {}.\n\n", issueLine(*bug.knownUpstream));
  if (!bug.knownFamily.empty()) {
    md += fmt::format("**A known family.** The bisected culprit ({}) is where these upstream issues live; compare "
                      "them before filing, this may be one of them:\n\n",
                      code(oneLine(bug.bisect.subsystem + (bug.bisect.debugInfo.empty() ? "" : " / " + bug.bisect.debugInfo),
                                   kCellLimit)));
    for (const UpstreamIssue& i : bug.knownFamily) md += "- " + issueLine(i) + "\n";
    md += "\n";
  }
  if (!bug.possibleDuplicates.empty()) {
    md += "Possible duplicates (the tracker's closest matches):\n\n";
    for (const UpstreamIssue& i : bug.possibleDuplicates) md += "- " + issueLine(i) + "\n";
    md += "\n";
  }
  std::vector<std::string> links;
  for (const auto& [label, terms] : upstreamSearchQueries(bug))
    links.push_back(fmt::format("[{}]({})", label, trackerSearchUrl(terms)));
  if (!links.empty())
    md += fmt::format("Search PyTorch's issues, open and closed, for duplicates: {}.\n\n", fmt::join(links, " · "));
  else if (!bug.knownUpstream)
    md += "No search terms: the bug names no op and no exception.\n\n";
}

void renderVersions(std::string& md, const BugReport& bug) {
  md += "### Versions\n\n";
  const TorchInfo& t = bug.torch;
  md += fmt::format("torch {}", t.version.empty() ? "(version unknown)" : code(t.version));
  if (!t.git.empty()) md += fmt::format(" (git {})", code(t.git));
  md += t.cuda.empty() ? ", CPU build" : fmt::format(", CUDA {}", code(t.cuda));
  if (!t.triton.empty()) md += fmt::format(", Triton {}", code(t.triton));
  if (!t.python.empty()) md += fmt::format(", Python {}", code(t.python));
  if (!t.devices.empty()) md += fmt::format("; devices: {}", fmt::join(t.devices, ", "));
  md += "\n\n";
  if (bug.seenOnTorch.size() > 1 || (bug.seenOnTorch.size() == 1 && bug.seenOnTorch[0] != t.version))
    md += fmt::format("Its findings were made on torch {}.\n\n", fmt::join(bug.seenOnTorch, ", "));
  if (bug.collectEnv.empty())
    md += "collect_env not captured.\n\n";
  else
    md += "The output of `python -m torch.utils.collect_env`: [collect_env.txt](collect_env.txt).\n\n";
}

std::string listOrNone(const std::vector<std::string>& items) {
  if (items.empty()) return "(none)";
  std::vector<std::string> coded;
  for (const auto& i : items) coded.push_back(code(i));
  return fmt::format("{}", fmt::join(coded, ", "));
}

void renderFacts(std::string& md, const BugReport& bug) {
  const Signature& s = bug.signature;
  md += "<details><summary>tcfuzz triage facts</summary>\n\n";
  md += fmt::format("- signature: {}\n", code(s.id()));
  auto field = [&](std::string_view name, const std::string& value) {
    if (!value.empty()) md += fmt::format("  - {}: {}\n", name, code(value, kMessageLimit));
  };
  field("symptom", s.symptom);
  field("kind", s.kind);
  field("failing mode", s.failingMode);
  field("phase", s.phase);
  field("exception type", s.exceptionType);
  field("normalized message", s.normalizedMessage);
  if (!s.frames.empty()) md += fmt::format("  - frames: {}\n", listOrNone(s.frames));
  if (!s.ops.empty()) md += fmt::format("  - ops: {}\n", listOrNone(s.ops));
  md += fmt::format("- severity: {}; component: {}\n", bug.severity.empty() ? "(unset)" : bug.severity,
                    bug.component.empty() ? "(unknown)" : oneLine(bug.component, kCellLimit));
  md += fmt::format("- hits: {}\n", bug.hits);
  md += fmt::format("- first seen: {}; last seen: {}\n", isoOrUnknown(bug.firstSeen), isoOrUnknown(bug.lastSeen));
  md += fmt::format("- raw signatures merged: {}{}\n", listOrNone(bug.rawSignatureIds),
                    bug.mergedBy.empty() ? "" : fmt::format(" (merged by {})", code(bug.mergedBy)));
  if (!bug.findingIds.empty()) md += fmt::format("- findings.sqlite rows: {}\n", fmt::join(bug.findingIds, ", "));
  if (bug.minimized)
    md += fmt::format("- size: {} nodes originally, {} after minimization ({} candidates tested)\n", bug.originalNodes,
                      bug.repro.nodes, bug.minimizeCandidates);
  else if (bug.minimizeCandidates > 0)
    md += fmt::format("- size: {} nodes (already minimal; {} candidates tested)\n", bug.repro.nodes,
                      bug.minimizeCandidates);
  else
    md += fmt::format("- size: {} nodes (not minimized)\n", bug.repro.nodes);
  std::set<std::string> hops;  // the higher-order ops the repro's regions run
  if (bug.repro.programIr.contains("nodes") && bug.repro.programIr["nodes"].is_array())
    for (const auto& node : bug.repro.programIr["nodes"])
      if (node.contains("python") && node["python"].contains("hop")) hops.insert(node["python"]["hop"].value("kind", ""));
  if (!hops.empty())
    md += fmt::format("- higher-order ops in the repro: {}{}\n", fmt::join(hops, ", "),
                      bug.minimized ? " (the minimizer inlines a region whenever the bug survives without its op: "
                                      "these are needed)"
                                    : "");
  md += fmt::format("- original config: {}\n",
                    code(bug.originalConfig.is_null() ? std::string("{}") : bug.originalConfig.dump(), kMessageLimit));
  md += fmt::format("- minimized config: {} (backward: {})\n",
                    code(bug.repro.compile.toJson().dump(), kMessageLimit),
                    bug.repro.backward ? "yes" : "no");
  md += fmt::format("- seed: {}; device: {}; threads: {}\n", bug.repro.seed, bug.repro.device,
                    bug.repro.threads > 0 ? std::to_string(bug.repro.threads) : "default");
  if (!bug.campaign.empty()) md += fmt::format("- campaign: {}\n", code(bug.campaign, kMessageLimit));
  if (!bug.provenance.empty()) md += fmt::format("- made by: {}\n", oneLine(bug.provenance, kMessageLimit));
  if (bug.coreNodes > 0)
    md += fmt::format("- LLM core: {} of its {} nodes remain in the minimized program\n", bug.coreNodesKept, bug.coreNodes);
  if (!bug.originalProgramPy.empty()) md += "- the program before minimization: [original.py](original.py)\n";
  md += "\n</details>\n";
}

/// The disclosure maintainers ask for: which parts a machine wrote. The whole report is tcfuzz's; the
/// program is an LLM's first draft (checked, repaired and minimized by tcfuzz) when its origin says so.
void renderDisclosure(std::string& md, const BugReport& bug) {
  md += "\n*Machine-written: tcfuzz, an automated differential fuzzer for torch.compile, wrote this whole "
        "report (title, description, repro programs, logs, ablation and facts) from its own runs; no person "
        "edited it. ";
  if (bug.coreNodes > 0 || bug.provenance.find("LLM") != std::string::npos)
    md += fmt::format("The program began as an LLM's output ({}), which tcfuzz parsed, checked, repaired and "
                      "minimized.*\n",
                      bug.provenance.empty() ? std::string("model not recorded") : oneLine(bug.provenance, kMessageLimit));
  else
    md += "No LLM wrote any part of the program: tcfuzz's grammar generator and mutators made it.*\n";
}

// --- Files ------------------------------------------------------------------------------------------

/// A plugin file's text, to copy beside short_repro.py; throws std::runtime_error naming a file it cannot read.
std::string readWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) throw std::runtime_error("cannot read plugin file '" + path + "' for short_repro.py");
  return text.str();
}

/// Copies tlparse's output `from` into `to` (replaced), every file masked with `secrets` (they quote
/// the program and its paths); throws std::filesystem::filesystem_error when a file cannot be copied.
void copyTraceFolder(const std::filesystem::path& from, const std::filesystem::path& to,
                     const SecretRedactor& secrets) {
  std::filesystem::remove_all(to);
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive);
  secrets.maskFilesUnder(to);
}

}  // namespace

std::string shortReproText(const BugReport& bug) {
  try {
    return renderShortRepro(bug.repro, bug.title, ComparatorOptions{});
  } catch (const std::invalid_argument&) {
    return "";
  }
}

std::string renderReportMarkdown(const BugReport& bug, const std::string& shortReproPy) {
  std::string md = fmt::format("# {}\n\n", oneLine(bug.title.empty() ? bug.id : bug.title, 256));
  renderDescribe(md, bug, shortReproPy);
  renderErrorLogs(md, bug);
  renderTrace(md, bug);
  renderAblation(md, bug);
  renderUpstream(md, bug);
  renderVersions(md, bug);
  renderFacts(md, bug);
  renderDisclosure(md, bug);
  return md;
}

void writeReportFolder(const BugReport& bug, const std::string& reproPy, const std::filesystem::path& dir,
                       const SecretRedactor& secrets) {
  auto write = [&](const std::filesystem::path& file, std::string_view text) {
    writeFileAtomically(file, secrets.mask(text));
  };
  makeDirectories(dir);
  // A rewrite drops meta.json first: until the new one lands, the folder reads as incomplete rather
  // than as complete with files from two versions.
  removeIfPresent(dir / kMetaFile);
  write(dir / kReproFile, reproPy);
  std::string shortRepro = shortReproText(bug);
  if (shortRepro.empty()) {
    removeIfPresent(dir / kShortReproFile);
  } else {
    write(dir / kShortReproFile, shortRepro);
    std::vector<std::string> names = shortReproCompanions(bug.repro);
    for (size_t i = 0; i < names.size(); ++i) write(dir / names[i], readWholeFile(bug.repro.plugins[i]));
  }
  if (bug.collectEnv.empty())
    removeIfPresent(dir / kCollectEnvFile);
  else
    write(dir / kCollectEnvFile, bug.collectEnv);
  std::filesystem::remove_all(dir / kTraceFolder);  // an earlier triage's, if any
  if (bug.trace.rendered && !std::filesystem::is_directory(bug.trace.dir)) {
    BugReport shown = bug;  // the campaign's traces/ folder was removed since triage: say so, link nothing
    shown.trace = {false, "", bug.trace.script, "the rendered trace " + bug.trace.dir + " no longer exists"};
    write(dir / kReportFile, renderReportMarkdown(shown, shortRepro));
  } else {
    if (bug.trace.rendered) copyTraceFolder(bug.trace.dir, dir / kTraceFolder, secrets);
    write(dir / kReportFile, renderReportMarkdown(bug, shortRepro));
  }
  write(dir / kProgramFile, bug.repro.programIr.dump(2) + "\n");
  if (bug.originalProgramPy.empty())
    removeIfPresent(dir / kOriginalFile);  // stale from an earlier triage that had one
  else
    write(dir / kOriginalFile, bug.originalProgramPy);
  write(dir / kMetaFile, reportMeta(bug).dump(2) + "\n");
}

}  // namespace tcfuzz::oracles
