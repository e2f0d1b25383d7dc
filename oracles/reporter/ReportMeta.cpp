#include "oracles/reporter/ReportWriter.h"

#include <algorithm>
#include <string>

#include "oracles/reporter/IndexWriter.h"
#include "oracles/reporter/KnownUpstream.h"
#include "oracles/reporter/MarkdownText.h"

namespace tcfuzz::oracles {

namespace {

using nlohmann::json;

/// The number of lines of `text` (a last line without its newline counts).
int lineCount(const std::string& text) {
  int lines = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  return lines + (!text.empty() && text.back() != '\n' ? 1 : 0);
}

json issueJson(const UpstreamIssue& i) {
  return {{"number", i.number}, {"url", i.url}, {"title", i.title}, {"state", i.state}};
}

/// meta.json's "upstream": the known issue matched (or null), the tracker's possible duplicates, the searches.
json upstreamJson(const BugReport& bug) {
  json duplicates = json::array(), searches = json::array();
  for (const UpstreamIssue& i : bug.possibleDuplicates) duplicates.push_back(issueJson(i));
  for (const auto& [label, terms] : upstreamSearchQueries(bug))
    searches.push_back({{"label", label}, {"terms", terms}, {"url", trackerSearchUrl(terms)}});
  json family = json::array();
  for (const UpstreamIssue& i : bug.knownFamily) family.push_back(issueJson(i));
  return {{"known", bug.knownUpstream ? issueJson(*bug.knownUpstream) : json()},
          {"known_family", family},
          {"possible_duplicates", duplicates},
          {"searches", searches}};
}

json timeJson(double unixSeconds) {
  std::string iso = markdown::isoTime(unixSeconds);
  return iso.empty() ? json() : json(iso);
}

}  // namespace

nlohmann::json reportMeta(const BugReport& bug) {
  json ablation = json::array();
  for (const auto& row : bug.ablation)
    ablation.push_back({{"variant", row.variant},
                        {"config", row.config},
                        {"verdict", row.verdict},
                        {"reproduces", row.reproduces},
                        {"summary", row.summary}});
  const BisectOutcome& b = bug.bisect;
  json minimizedConfig = bug.repro.compile.toJson();
  minimizedConfig["backward"] = bug.repro.backward;
  return json{
      {"schema_version", 1},
      {"id", bug.id},
      {"title", bug.title},
      {"severity", bug.severity},
      {"severity_rank", severityRank(bug.severity)},
      {"component", bug.component},
      {"verdict", bug.repro.verdict},
      {"signature", toJson(bug.signature)},
      {"hits", bug.hits},
      {"first_seen", timeJson(bug.firstSeen)},
      {"first_seen_unix", bug.firstSeen},
      {"last_seen", timeJson(bug.lastSeen)},
      {"last_seen_unix", bug.lastSeen},
      {"raw_signature_ids", bug.rawSignatureIds},
      {"merged_by", bug.mergedBy},
      {"finding_ids", bug.findingIds},
      {"config", {{"original", bug.originalConfig.is_null() ? json::object() : bug.originalConfig},
                  {"minimized", minimizedConfig}}},
      {"sizes", {{"original_nodes", bug.originalNodes}, {"minimized_nodes", bug.repro.nodes}}},
      {"provenance", {{"made_by", bug.provenance}, {"core_nodes", bug.coreNodes}, {"core_nodes_kept", bug.coreNodesKept}}},
      {"minimized", bug.minimized},
      {"minimize_candidates", bug.minimizeCandidates},
      {"repro",
       {{"seed", bug.repro.seed},
        {"device", bug.repro.device},
        {"threads", bug.repro.threads},
        {"backward", bug.repro.backward},
        {"plugins", bug.repro.plugins},
        {"diverging_leaves", bug.repro.divergingLeaves},
        {"verified", bug.reproVerified ? json(*bug.reproVerified) : json()},
        {"short_verified", bug.shortReproVerified ? json(*bug.shortReproVerified) : json()},
        {"short_lines", lineCount(shortReproText(bug))}}},
      {"trace", {{"rendered", bug.trace.rendered}, {"script", bug.trace.script}, {"note", bug.trace.note}}},
      {"ablation", ablation},
      {"bisect",
       {{"ran", b.ran},
        {"backend", b.backend},
        {"subsystem", b.subsystem},
        {"bisect_number", b.bisectNumber},
        {"debug_info", b.debugInfo},
        {"note", b.note}}},
      {"upstream", upstreamJson(bug)},
      {"torch", bug.torch.toJson()},
      {"seen_on_torch", bug.seenOnTorch},
      {"campaign", bug.campaign},
  };
}

}  // namespace tcfuzz::oracles
