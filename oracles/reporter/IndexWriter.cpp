#include "oracles/reporter/IndexWriter.h"

#include <algorithm>
#include <cstdlib>
#include <initializer_list>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "oracles/infra/AtomicFile.h"
#include "oracles/judge/Comparator.h"
#include "oracles/reporter/MarkdownText.h"
#include "oracles/reporter/repro/ShortReproWriter.h"

namespace tcfuzz::oracles {

using namespace markdown;

namespace {

/// "yes", "no", or "not checked" for a repro.py verification.
std::string verifiedText(const std::optional<bool>& verified) {
  if (!verified) return "not checked";
  return *verified ? "yes" : "no";
}

/// "3 (from 20)", "1 (minimal)" when the minimizer tested candidates and kept none, or "20 (not minimized)".
std::string sizeText(const BugReport& bug) {
  if (bug.minimized) return fmt::format("{} (from {})", bug.repro.nodes, bug.originalNodes);
  return fmt::format("{} ({})", bug.repro.nodes, bug.minimizeCandidates > 0 ? "minimal" : "not minimized");
}

/// "known #198119 (open)", "possible duplicates: 3", or "new".
std::string upstreamText(const BugReport& bug) {
  if (bug.knownUpstream)
    return fmt::format("known #{}{}", bug.knownUpstream->number,
                       bug.knownUpstream->state.empty() ? "" : " (" + bug.knownUpstream->state + ")");
  if (!bug.possibleDuplicates.empty()) return fmt::format("possible duplicates: {}", bug.possibleDuplicates.size());
  return "new";
}

/// The torch versions the bug's findings were made on ("2.11.0+cu130, 2.15.0+cu132"); else the one it was triaged on.
std::string torchText(const BugReport& bug) {
  if (bug.seenOnTorch.empty()) return bug.torch.version;
  return fmt::format("{}", fmt::join(bug.seenOnTorch, ", "));
}

/// The line count of the bug's short_repro.py, "-" when none can be written.
std::string shortReproLines(const BugReport& bug) {
  try {
    std::string text = renderShortRepro(bug.repro, bug.title, ComparatorOptions{});
    return std::to_string(std::count(text.begin(), text.end(), '\n'));
  } catch (const std::invalid_argument&) {
    return "-";
  }
}

/// The campaign's figure that `tcfuzz plot` drew, relative to `root` (the SVG before the PNG); "" when none.
std::string campaignPlot(const std::filesystem::path& root) {
  for (const char* figure : {"plots/campaign.svg", "plots/campaign.png"})
    if (std::filesystem::is_regular_file(root / figure)) return figure;
  return "";
}

/// The value of the first of `keys` that `stats` holds; "" when none.
std::string statOf(const std::vector<std::pair<std::string, std::string>>& stats,
                   std::initializer_list<const char*> keys) {
  for (const char* key : keys)
    for (const auto& [k, v] : stats)
      if (k == key) return v;
  return "";
}

/// Whole seconds as "1h 02m 03s", "2m 03s" or "3s"; any other text as it is.
std::string durationText(const std::string& seconds) {
  char* end = nullptr;
  double value = std::strtod(seconds.c_str(), &end);
  if (seconds.empty() || *end != '\0' || !(value >= 0)) return seconds;
  auto total = static_cast<int64_t>(value + 0.5);
  int64_t h = total / 3600, m = total / 60 % 60, s = total % 60;
  if (h > 0) return fmt::format("{}h {:02}m {:02}s", h, m, s);
  if (m > 0) return fmt::format("{}m {:02}s", m, s);
  return fmt::format("{}s", s);
}

/// The handful of campaign figures the index shows under its bugs, as (label, value), from fuzzer_stats keys
/// (a campaign's, or a merged night's): duration, programs judged, findings, torch, shards. Absent keys give no line.
std::vector<std::pair<std::string, std::string>> campaignSummary(
    const std::vector<std::pair<std::string, std::string>>& stats) {
  std::vector<std::pair<std::string, std::string>> lines;
  auto add = [&](const char* label, const std::string& value) {
    if (!value.empty()) lines.emplace_back(label, value);
  };
  add("duration", durationText(statOf(stats, {"run_time"})));
  add("programs judged", statOf(stats, {"programs_done", "execs_done"}));
  std::string findings = statOf(stats, {"findings", "raw_findings"});
  std::string signatures = statOf(stats, {"unique_signatures"});
  if (!findings.empty() && !signatures.empty()) findings += fmt::format(" ({} unique signatures)", signatures);
  add("findings", findings);
  std::string notReproduced = statOf(stats, {"signatures_not_reproduced"});
  if (!notReproduced.empty() && notReproduced != "0")
    add("not reproduced on replay",
        notReproduced + " signature(s), no report (findings.sqlite: triage rows with status unreproducible)");
  std::string batchOnly = statOf(stats, {"signatures_batch_only"});
  if (!batchOnly.empty() && batchOnly != "0")
    add("batch-only (need their batch's other members)",
        batchOnly + " signature(s), each kept in crashes/ under its signature id: the members it needs in "
                    "batch_only.md and batch_needed.py");
  add("torch", statOf(stats, {"torch_version", "torch"}));
  add("shards", statOf(stats, {"shards"}));
  return lines;
}

}  // namespace

int severityRank(const std::string& severity) {
  if (severity == "crash") return 0;
  if (severity == "hang") return 1;
  if (severity == "wrong-result") return 2;
  if (severity == "accepts-invalid") return 3;
  if (severity == "low") return 4;  // signed zeros, flushed subnormals, recompile storms
  return 5;
}

void writeIndex(const std::vector<BugReport>& bugs, const std::vector<std::pair<std::string, std::string>>& campaignStats,
                const std::filesystem::path& root, const SecretRedactor& secrets) {
  std::vector<const BugReport*> sorted;
  int64_t rawFindings = 0;
  for (const auto& bug : bugs) {
    sorted.push_back(&bug);
    rawFindings += bug.hits;
  }
  std::stable_sort(sorted.begin(), sorted.end(), [](const BugReport* a, const BugReport* b) {
    if (a->knownUpstream.has_value() != b->knownUpstream.has_value()) return !a->knownUpstream;  // new ones first
    int ra = severityRank(a->severity), rb = severityRank(b->severity);
    if (ra != rb) return ra < rb;
    if (a->hits != b->hits) return a->hits > b->hits;
    if (a->firstSeen != b->firstSeen) return a->firstSeen < b->firstSeen;
    return a->id < b->id;
  });
  std::string countLine = fmt::format("{} unique bug{} from {} raw finding{}", sorted.size(),
                                      sorted.size() == 1 ? "" : "s", rawFindings, rawFindings == 1 ? "" : "s");

  const std::string plot = campaignPlot(root);
  const std::vector<std::pair<std::string, std::string>> summary = campaignSummary(campaignStats);
  const bool statsFile = std::filesystem::is_regular_file(root / "fuzzer_stats");
  const bool campaignSection = !summary.empty() || statsFile || !plot.empty();

  // The bugs first; then a few lines on the campaign, whose every figure stays in fuzzer_stats.
  std::string md = "# tcfuzz findings\n\n" + countLine + ".\n\n";
  if (!sorted.empty()) {
    md += "| rank | id | title | upstream | severity | component | hits | first seen | last seen | torch | "
          "nodes (original) | short repro lines | verified |\n";  // torch: the versions its findings were made on
    md += "|---:|---|---|---|---|---|---:|---|---|---|---|---:|---|\n";
    int rank = 0;
    for (const BugReport* bug : sorted)
      md += fmt::format("| {} | [{}](crashes/{}/report.md) | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                        ++rank, cell(bug->id), bug->id, cell(bug->title), cell(upstreamText(*bug)), cell(bug->severity),
                        cell(bug->component), bug->hits, isoOrUnknown(bug->firstSeen), isoOrUnknown(bug->lastSeen),
                        cell(torchText(*bug)), sizeText(*bug), shortReproLines(*bug),
                        verifiedText(bug->reproVerified));
    md += "\n";
  }
  if (campaignSection) {
    md += "## Campaign\n\n";
    for (const auto& [label, value] : summary) md += fmt::format("- {}: {}\n", label, cell(value));
    if (!summary.empty()) md += "\n";
    if (statsFile) md += "Every figure of the campaign: [fuzzer_stats](fuzzer_stats).\n\n";
    if (!plot.empty()) md += fmt::format("![the campaign over run time]({})\n\n", plot);
  }
  md.pop_back();  // one newline at the end

  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>tcfuzz findings</title>\n"
      "<style>\n"
      "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\n"
      "table{border-collapse:collapse}\n"
      "th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}\n"
      "th{background:#f0f0f0}\n"
      "td.num{text-align:right}\n"
      "dl.stats{display:grid;grid-template-columns:max-content auto;gap:2px 1em}\n"
      "dl.stats dt{font-weight:bold}\n"
      "dl.stats dd{margin:0}\n"
      ".sev-crash{color:#b00}.sev-hang{color:#a60}.sev-wrong-result{color:#06a}\n"
      "code{font-size:90%}\n"
      "figure.plots{margin:1em 0}figure.plots img{max-width:100%;width:1200px;height:auto}\n"
      "</style>\n</head>\n<body>\n<h1>tcfuzz findings</h1>\n";
  html += fmt::format("<p>{}.</p>\n", htmlEscape(countLine));
  if (!sorted.empty()) {
    html += "<table>\n<thead><tr><th>rank</th><th>id</th><th>title</th><th>upstream</th><th>severity</th>"
            "<th>component</th><th>hits</th><th>first seen</th><th>last seen</th><th>torch</th><th>nodes (original)</th>"
            "<th>short repro lines</th><th>verified</th></tr></thead>\n<tbody>\n";
    int rank = 0;
    for (const BugReport* bug : sorted)
      html += fmt::format(
          "<tr><td class=\"num\">{}</td><td><a href=\"crashes/{}/report.md\"><code>{}</code></a></td><td>{}</td>"
          "<td>{}</td><td class=\"sev-{}\">{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td>"
          "<td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
          ++rank, htmlEscape(bug->id), htmlEscape(bug->id), htmlEscape(oneLine(bug->title, kCellLimit)),
          htmlEscape(upstreamText(*bug)), htmlEscape(bug->severity), htmlEscape(bug->severity),
          htmlEscape(bug->component), bug->hits, htmlEscape(isoOrUnknown(bug->firstSeen)),
          htmlEscape(isoOrUnknown(bug->lastSeen)), htmlEscape(torchText(*bug)), htmlEscape(sizeText(*bug)),
          htmlEscape(shortReproLines(*bug)), htmlEscape(verifiedText(bug->reproVerified)));
    html += "</tbody>\n</table>\n";
  }
  if (campaignSection) {
    html += "<h2>Campaign</h2>\n";
    if (!summary.empty()) {
      html += "<dl class=\"stats\">\n";
      for (const auto& [label, value] : summary)
        html += fmt::format("<dt>{}</dt><dd>{}</dd>\n", htmlEscape(label), htmlEscape(value));
      html += "</dl>\n";
    }
    if (statsFile) html += "<p>Every figure of the campaign: <a href=\"fuzzer_stats\">fuzzer_stats</a>.</p>\n";
    if (!plot.empty())
      html += fmt::format("<figure class=\"plots\"><a href=\"{0}\"><img src=\"{0}\" alt=\"the campaign over run time: "
                          "programs judged, speed, features, queue, findings, unique bugs\"></a></figure>\n",
                          htmlEscape(plot));
  }
  html += "</body>\n</html>\n";

  makeDirectories(root);
  writeFileAtomically(root / "index.md", secrets.mask(md));
  writeFileAtomically(root / "index.html", secrets.mask(html));
}

}  // namespace tcfuzz::oracles
