#include <iostream>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "fuzzer/campaign/output/FindingStore.h"
#include "fuzzer/cli/Driver.h"
#include "fuzzer/cli/Settings.h"
#include "fuzzer/cli/commands/Commands.h"
#include "fuzzer/triage/NightMerge.h"
#include "fuzzer/triage/NightSummary.h"
#include "fuzzer/triage/Triage.h"
#include "fuzzer/worker/SourceTree.h"
#include "oracles/infra/AtomicFile.h"

namespace tcfuzz {

namespace fs = std::filesystem;

namespace {

/// The reports of the night as Triage writes them from its store (no torch runs): the summary's bugs.
std::vector<oracles::BugReport> nightReports(const Options& o, const fs::path& night, const SecretRedactor& secrets) {
  FindingStore store(night / "findings.sqlite", secrets);
  TriageSettings settings = triageSettingsFrom(o, 1, secrets);
  settings.torch = campaignTorch(store);
  gen::OpCatalog catalog = gen::makeDefaultCatalog();
  Triage reports(catalog, settings, night, store, nullptr, logLine);
  return reports.writeReports();
}

/// Regress over --regressions and the previous night's bugs not seen tonight, written as
/// NIGHT/regress.csv (and regress.md); none (with `note` saying why) when there is nothing to re-run.
std::optional<std::vector<KnownBugCheck>> regressKnownBugs(const Options& o, const fs::path& night,
                                                           const NightMerge& merge,
                                                           const std::vector<oracles::BugReport>& bugs,
                                                           const std::optional<fs::path>& previous,
                                                           const SecretRedactor& secrets, std::string& note) {
  std::vector<std::string> dirs;
  fs::path corpus = o.regressions.empty() ? sourceTree() / "corpus" / "regressions" : fs::path(o.regressions);
  if (fs::is_directory(corpus)) dirs.push_back(corpus.string());
  else logLine(fmt::format("--regressions {}: no such folder; only the previous night's bugs are re-run", corpus.string()));
  std::set<std::string> tonight, previousNames;
  for (const auto& s : merge.signatures) tonight.insert(s.id);
  for (const auto& b : bugs) tonight.insert(b.id);
  if (previous)
    for (const auto& folder : writePreviousBugs(*previous, tonight, night / "work" / "previous-bugs")) {
      dirs.push_back(folder.string());
      previousNames.insert(folder.filename().string());
    }
  if (dirs.empty()) {
    note = "no known bugs to re-run";
    return std::nullopt;
  }
  logLine(fmt::format("regress: {} folder(s) of known bugs, {} of them the previous night's", dirs.size(),
                      previousNames.size()));
  ReleaseMatrix matrix = regressMatrix(o, dirs, secrets);
  writeFileAtomically(night / "regress.csv", secrets.mask(matrix.csv()));
  writeFileAtomically(night / "regress.md", secrets.mask(matrix.markdown(false)));
  return knownBugChecks(matrix, previousNames);
}

}  // namespace

int mergeCommand(const Options& o, const std::vector<std::string>& shardDirs, const SecretRedactor& secrets) {
  if (o.output.empty()) throw std::invalid_argument("merge needs -o NIGHT, the night's output directory");
  fs::path night = fs::absolute(o.output).lexically_normal();
  if (night.filename().empty()) night = night.parent_path();
  std::optional<fs::path> previous = previousNight(night, o.previousNight);  // before this night has a night.json
  for (const char* stale : {"regress.csv", "regress.md", "night.json", "summary.md"}) fs::remove(night / stale);

  NightMerge merge = mergeShards(std::vector<fs::path>(shardDirs.begin(), shardDirs.end()), night, secrets);
  for (const auto& s : merge.shards)
    if (!s.ok()) logLine(fmt::format("shard {} skipped: {}", s.path.string(), s.status));
  logLine(fmt::format("merged {} shard(s) into {}: {} programs, {} raw findings, {} signature(s), {} triage row(s) "
                      "carried over",
                      merge.shards.size(), night.string(), merge.programs, merge.findings, merge.signatures.size(),
                      merge.triageCarried));
  logLine(previous ? "compared with the night " + previous->string() : "no previous night: this is the first");

  Options tonight = o;
  if (!o.pythons.empty()) tonight.python = o.pythons.front();  // triage replays on the first --python's torch
  if (!o.noTriage) triageCommand(tonight, night.string(), secrets);

  NightFacts facts;
  facts.night = night;
  facts.name = night.filename().string();
  facts.merge = &merge;
  facts.bugs = nightReports(tonight, night, secrets);
  facts.previous = previous;
  if (o.noRegress) facts.regressNote = "--no-regress";
  else facts.regress = regressKnownBugs(o, night, merge, facts.bugs, previous, secrets, facts.regressNote);
  writeNightSummary(facts, secrets);
  std::cout << fmt::format("night: {}\n", (night / "summary.md").string());
  return kExitOk;
}

}  // namespace tcfuzz
