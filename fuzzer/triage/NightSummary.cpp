#include "fuzzer/triage/NightSummary.h"

#include <algorithm>
#include <ctime>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "fuzzer/campaign/output/FindingStore.h"
#include "oracles/infra/AtomicFile.h"

namespace tcfuzz {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// "2026-11-26 21:04:05 UTC".
std::string utcTime(double unixTime) {
  std::time_t t = static_cast<std::time_t>(unixTime);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return text;
}

/// The night's date: its name when that is a date, else today's (UTC).
std::string nightDate(const std::string& name) {
  if (std::regex_search(name, std::regex(R"(^\d{4}-\d{2}-\d{2})"))) return name.substr(0, 10);
  return utcTime(static_cast<double>(std::time(nullptr))).substr(0, 10);
}

json readJson(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return json();
  return json::parse(in, nullptr, false);
}

/// One line of markdown: no line breaks, no table pipes.
std::string inline_(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '|', '/');
  if (text.size() > 160) text = text.substr(0, 157) + "...";
  return text;
}

/// "shard-0 (3), shard-2 (1)".
std::string shardHits(const std::map<std::string, int64_t>& shards) {
  std::string out;
  for (const auto& [name, hits] : shards) out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", name, hits);
  return out;
}

/// A bug of tonight, or a signature no triaged bug holds yet: one line of the summary.
struct NightEntry {
  std::string link, label;  ///< link relative to NIGHT
  std::vector<const NightSignature*> signatures;
  bool seenBefore = false;
  std::string firstNight;   ///< the earliest night one of its signatures was seen (seen before only)
  int64_t hits = 0;
  double firstSeen = 0;
  std::map<std::string, int64_t> shards;
};

/// The raw signature ids of tonight's bugs, each mapped to its bug.
std::map<std::string, const oracles::BugReport*> bugsBySignature(const std::vector<oracles::BugReport>& bugs) {
  std::map<std::string, const oracles::BugReport*> bugOf;
  for (const auto& b : bugs)
    for (const auto& raw : b.rawSignatureIds) bugOf[raw] = &b;
  return bugOf;
}

/// The first night `known` (the cumulative set so far) saw raw signature `id` or its bug (a bug's id is
/// its representative signature: another raw signature may be minimized into a known bug); "" when new.
std::string seenSince(const json& known, const std::string& id, const oracles::BugReport* bug) {
  std::string first;
  for (const std::string& key : {id, bug ? bug->id : std::string()})
    if (!key.empty() && known.contains(key)) {
      std::string night = known[key].value("first_night", "");
      if (first.empty() || night < first) first = night;
    }
  return first;
}

/// Tonight's bugs and untriaged signatures, marked against `known` (the cumulative set so far).
std::vector<NightEntry> nightEntries(const NightFacts& facts, const json& known) {
  std::map<std::string, const oracles::BugReport*> bugOf = bugsBySignature(facts.bugs);
  std::vector<NightEntry> entries;
  std::map<std::string, size_t> entryOfBug;
  for (const auto& s : facts.merge->signatures) {
    const oracles::BugReport* bug = bugOf.count(s.id) ? bugOf[s.id] : nullptr;
    NightEntry* e = nullptr;
    if (bug && entryOfBug.count(bug->id)) {
      e = &entries[entryOfBug[bug->id]];
    } else {
      entries.emplace_back();
      e = &entries.back();
      e->firstSeen = s.firstSeen;
      if (bug) {
        entryOfBug[bug->id] = entries.size() - 1;
        e->link = fmt::format("crashes/{}/report.md", bug->id);
        e->label = fmt::format("{}: {}", bug->severity.empty() ? s.verdict : bug->severity, inline_(bug->title));
      } else {
        e->link = fmt::format("crashes/{}/", s.id);
        e->label = fmt::format("{}: {} (not triaged)", s.verdict, inline_(s.key.empty() ? s.id : s.key));
      }
    }
    e->signatures.push_back(&s);
    e->hits += s.hits;
    e->firstSeen = std::min(e->firstSeen, s.firstSeen);
    for (const auto& [name, hits] : s.shards) e->shards[name] += hits;
    if (std::string first = seenSince(known, s.id, bug); !first.empty()) {
      e->seenBefore = true;
      if (e->firstNight.empty() || first < e->firstNight) e->firstNight = first;
    }
  }
  return entries;
}

/// A link from NIGHT to a previous night's report of signature `id`, or "" when it has none.
std::string previousReportLink(const NightFacts& facts, const json& previousNight, const std::string& id) {
  if (!facts.previous || !previousNight.contains("signatures")) return "";
  for (const auto& s : previousNight["signatures"])
    if (s.value("id", "") == id && !s.value("bug", "").empty()) {
      fs::path report = fs::absolute(*facts.previous) / "crashes" / s.value("bug", "") / "report.md";
      return report.lexically_relative(fs::absolute(facts.night)).string();
    }
  return "";
}

void writeShardTable(std::ostringstream& md, const NightMerge& merge) {
  md << "| shard | status | seed | device | torch | programs | findings | signatures |\n";
  md << "|---|---|---|---|---|---:|---:|---:|\n";
  for (const auto& s : merge.shards)
    md << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", s.name, inline_(s.status), s.seed,
                      s.device.empty() ? "" : s.device, s.torch, s.programs, s.findings, s.uniqueSignatures);
}

/// The Fixed or Signature changed section's lines from the regress checks with `status`.
void writeKnownBugs(std::ostringstream& md, const NightFacts& facts, const json& previousNight,
                    const std::string& status) {
  if (!facts.regress) {
    md << "Regress did not run" << (facts.regressNote.empty() ? "." : ": " + facts.regressNote + ".") << "\n";
    return;
  }
  int lines = 0;
  for (const auto& c : *facts.regress) {
    if (c.status != status) continue;
    ++lines;
    std::string where = c.source;
    if (std::string link = previousReportLink(facts, previousNight, c.name); !link.empty())
      where = fmt::format("[previous night's report]({})", link);
    if (status == "fixed")
      md << fmt::format("- `{}` ({}): no longer reproduces under torch {}\n", c.name, where, c.torch);
    else
      md << fmt::format("- `{}` ({}): signature {} is now {} under torch {}\n", c.name, where, c.expectedSignature,
                        c.observedSignature, c.torch);
  }
  if (lines == 0) md << "None.\n";
}

}  // namespace

std::optional<fs::path> previousNight(const fs::path& night, const std::string& given) {
  if (!given.empty()) {
    if (!fs::exists(fs::path(given) / "night.json"))
      throw std::invalid_argument(fmt::format("--previous {}: no night.json there (not a merged night)", given));
    return fs::path(given);
  }
  fs::path self = fs::absolute(night).lexically_normal();
  if (self.filename().empty()) self = self.parent_path();
  std::error_code ec;
  std::optional<fs::path> best;
  for (const auto& e : fs::directory_iterator(self.parent_path(), ec)) {
    std::string name = e.path().filename().string();
    if (!e.is_directory() || name >= self.filename().string() || !fs::exists(e.path() / "night.json")) continue;
    if (!best || name > best->filename().string()) best = e.path();
  }
  return best;
}

std::vector<fs::path> writePreviousBugs(const fs::path& previous, const std::set<std::string>& tonight,
                                        const fs::path& dir) {
  fs::remove_all(dir);
  std::vector<fs::path> written;
  if (!fs::exists(previous / "findings.sqlite")) return written;
  std::map<std::string, std::string> previousBug;  // signature id -> its bug, per the previous night.json
  if (json night = readJson(previous / "night.json"); night.is_object() && night.contains("signatures"))
    for (const auto& s : night["signatures"]) previousBug[s.value("id", "")] = s.value("bug", "");
  FindingStore store(previous / "findings.sqlite");
  std::map<std::string, FindingRecord> firstWitness;
  for (auto& f : store.findings()) {
    if (tonight.count(f.signatureId) || tonight.count(previousBug[f.signatureId])) continue;
    auto it = firstWitness.find(f.signatureId);
    if (it == firstWitness.end() || f.foundAt < it->second.foundAt) firstWitness[f.signatureId] = std::move(f);
  }
  for (const auto& [id, f] : firstWitness) {
    json result = json::parse(f.result, nullptr, false);
    json finding = {{"verdict", f.verdict},
                    {"signature", json::parse(f.signature, nullptr, false)},
                    {"config", json::parse(f.config, nullptr, false)},
                    {"torch", f.torch},
                    {"found", fmt::format("{}, night {}", utcTime(f.foundAt), previous.filename().string())}};
    if (result.is_object())
      for (const char* key : {"seed", "threads"})
        if (result.contains(key)) finding[key] = result[key];
    fs::path folder = dir / id;
    fs::create_directories(folder);
    writeFileAtomically(folder / "finding.json", finding.dump(1) + "\n");
    writeFileAtomically(folder / "program.json", f.programJson);
    written.push_back(folder);
  }
  return written;
}

std::vector<KnownBugCheck> knownBugChecks(const ReleaseMatrix& matrix, const std::set<std::string>& previousNightNames) {
  std::vector<KnownBugCheck> out;
  if (matrix.columnCount() == 0) return out;
  size_t col = matrix.columnCount() - 1;
  for (size_t c = matrix.columnCount(); c-- > 0;)
    if (matrix.column(c).started()) {
      col = c;
      break;
    }
  for (size_t r = 0; r < matrix.findingCount(); ++r) {
    const RegressCell& cell = matrix.cell(r, col);
    out.push_back({matrix.finding(r), previousNightNames.count(matrix.finding(r)) ? "previous night" : "regressions",
                   std::string(toString(cell.status)), cell.expectedSignature, cell.observedSignature,
                   matrix.column(col).torch.version, cell.reason});
  }
  return out;
}

std::string writeNightSummary(const NightFacts& facts, const SecretRedactor& secrets) {
  const NightMerge& merge = *facts.merge;
  json previous = facts.previous ? readJson(*facts.previous / "night.json") : json();
  json known = previous.is_object() && previous.contains("known") ? previous["known"] : json::object();
  std::vector<NightEntry> entries = nightEntries(facts, known);

  // night.json: the facts, and the cumulative known set the next night compares with.
  json signatures = json::array(), before = known;
  std::map<std::string, const oracles::BugReport*> bugOf = bugsBySignature(facts.bugs);
  for (const auto& s : merge.signatures) {
    const oracles::BugReport* bug = bugOf.count(s.id) ? bugOf[s.id] : nullptr;
    std::string since = seenSince(before, s.id, bug);
    signatures.push_back({{"id", s.id},
                          {"verdict", s.verdict},
                          {"key", s.key},
                          {"hits", s.hits},
                          {"first_seen", s.firstSeen},
                          {"last_seen", s.lastSeen},
                          {"shards", s.shards},
                          {"bug", bug ? bug->id : ""},
                          {"status", since.empty() ? "new" : "seen-before"},
                          {"first_night", since.empty() ? facts.name : since}});
    json& k = known[s.id];
    if (!k.contains("first_night")) k["first_night"] = since.empty() ? facts.name : since;
    k["last_night"] = facts.name;
    k["key"] = s.key;
    if (bug) {  // the bug too: a later raw signature minimized into it is not new
      json& b = known[bug->id];
      if (!b.contains("first_night")) b["first_night"] = since.empty() ? facts.name : since;
      b["last_night"] = facts.name;
      if (!b.contains("key")) b["key"] = bug->title;
    }
  }
  json shards = json::array(), regress = json::array(), fixed = json::array(), changed = json::array();
  for (const auto& s : merge.shards) shards.push_back(s.toJson());
  if (facts.regress)
    for (const auto& c : *facts.regress) {
      regress.push_back({{"name", c.name}, {"source", c.source}, {"status", c.status},
                         {"expected_signature", c.expectedSignature}, {"observed_signature", c.observedSignature},
                         {"torch", c.torch}, {"reason", c.reason}});
      if (c.status == "fixed") fixed.push_back(c.name);
      if (c.status == "changed-signature") changed.push_back(c.name);
    }
  json night = {{"night", facts.name},
                {"created_at", static_cast<double>(std::time(nullptr))},
                {"torch", merge.torchVersions()},
                {"previous", facts.previous ? json(fs::absolute(*facts.previous).string()) : json(nullptr)},
                {"first_night", !facts.previous},
                {"programs", merge.programs},
                {"findings", merge.findings},
                {"shards", shards},
                {"signatures", signatures},
                {"bugs", facts.bugs.size()},
                {"regress", facts.regress ? regress : json(nullptr)},
                {"fixed", fixed},
                {"changed", changed},
                {"known", known}};
  writeFileAtomically(facts.night / "night.json", secrets.mask(night.dump(1) + "\n"));

  std::ostringstream md;
  std::string torch;
  for (const auto& v : merge.torchVersions()) torch += (torch.empty() ? "" : ", ") + v;
  std::string date = nightDate(facts.name);
  md << fmt::format("# tcfuzz night {}{}: torch {}\n\n", date, date == facts.name ? "" : " (" + facts.name + ")",
                    torch.empty() ? "unknown" : torch);
  int usable = static_cast<int>(std::count_if(merge.shards.begin(), merge.shards.end(),
                                              [](const ShardInfo& s) { return s.ok(); }));
  md << fmt::format("{} shard(s), {} usable: {} programs, {} raw findings, {} signature(s), {} triaged bug(s). ",
                    merge.shards.size(), usable, merge.programs, merge.findings, merge.signatures.size(),
                    facts.bugs.size());
  if (facts.previous)
    md << fmt::format("Compared with [{}]({}).\n\n", facts.previous->filename().string(),
                      (fs::absolute(*facts.previous) / "summary.md").lexically_relative(fs::absolute(facts.night)).string());
  else
    md << "This is the first night: there is no earlier night to compare with, so every bug is new.\n\n";
  md << "[index](index.md) · [shards.json](shards.json) · [night.json](night.json)"
     << (facts.regress ? " · [regress.csv](regress.csv)" : "") << "\n\n## Shards\n\n";
  writeShardTable(md, merge);

  auto section = [&](const char* title, bool seenBefore) {
    md << "\n## " << title << "\n\n";
    int lines = 0;
    for (const auto& e : entries) {
      if (e.seenBefore != seenBefore) continue;
      ++lines;
      if (seenBefore)
        md << fmt::format("- [{}]({}): seen since {}; {} hit(s) tonight on {}\n", e.label, e.link, e.firstNight, e.hits,
                          shardHits(e.shards));
      else
        md << fmt::format("- [{}]({}): {} hit(s) on {}; first seen {}\n", e.label, e.link, e.hits, shardHits(e.shards),
                          utcTime(e.firstSeen));
    }
    if (lines == 0) md << "None.\n";
  };
  section("New tonight", false);
  section("Seen before", true);
  md << "\n## Fixed\n\n";
  writeKnownBugs(md, facts, previous, "fixed");
  md << "\n## Signature changed\n\n";
  writeKnownBugs(md, facts, previous, "changed-signature");
  std::string text = secrets.mask(md.str());
  writeFileAtomically(facts.night / "summary.md", text);
  return text;
}

}  // namespace tcfuzz
