#include "fuzzer/triage/Triage.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "fuzzer/worker/BatchTester.h"
#include "generators/python/BatchProgram.h"
#include "generators/python/PythonEmitter.h"
#include "oracles/infra/AtomicFile.h"
#include "oracles/reporter/Deduper.h"
#include "oracles/reporter/IndexWriter.h"
#include "oracles/reporter/ReportWriter.h"
#include "oracles/reporter/repro/ReproWriter.h"

namespace tcfuzz {

namespace fs = std::filesystem;
using nlohmann::json;
using oracles::MinimizeCase;
using oracles::Signature;

namespace {

/// Candidates triage tests in all to shrink the members a batch-only finding needs (each a cold batch compile).
constexpr int kBatchOnlyCandidates = 40;

double unixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// A finding chosen to stand for its signature, and its node count.
struct Witness {
  FindingRecord finding;
  size_t nodes = 0;
};

/// The smallest program with signature `signatureId` (ties: the earliest); none when no finding of it
/// has a readable IR.
std::optional<Witness> smallestWitness(const FindingStore& store, const std::string& signatureId) {
  std::optional<Witness> witness;
  for (auto& f : store.findings()) {
    if (f.signatureId != signatureId) continue;
    size_t nodes = 0;
    try {
      nodes = gen::Graph::fromJson(json::parse(f.programJson), "finding").nodes.size();
    } catch (const std::exception&) {
      continue;  // an unreadable IR cannot be minimized; another witness may do
    }
    if (!witness || nodes < witness->nodes) witness = Witness{std::move(f), nodes};
  }
  return witness;
}

/// The op multisets of the numeric bugs triaged so far: a witness that reduces to one of them is that bug.
std::vector<std::vector<std::string>> knownNumericOps(const FindingStore& store) {
  std::vector<std::vector<std::string>> hints;
  for (const auto& other : store.triageRecords()) {
    if (other.status != "done") continue;
    json sig = json::parse(other.finalSignature, nullptr, false);
    if (!sig.is_object() || !oracles::isWrongResultSymptom(sig.value("symptom", ""))) continue;
    std::vector<std::string> ops = sig.value("ops", std::vector<std::string>{});
    if (std::find(hints.begin(), hints.end(), ops) == hints.end()) hints.push_back(ops);
  }
  return hints;
}

/// The deduplication input of every finding: the final signature and size of its triage row when
/// there is one, else its raw signature and program size. Unreadable findings are logged and left out.
std::vector<oracles::DedupInput> dedupInputs(const std::vector<FindingRecord>& findings,
                                            const std::map<std::string, TriageRecord>& rows,
                                            const std::function<void(const std::string&)>& log) {
  std::vector<oracles::DedupInput> inputs;
  for (const auto& f : findings) {
    oracles::DedupInput in;
    in.findingId = f.id;
    in.foundAt = f.foundAt;
    auto row = rows.find(f.signatureId);
    try {
      if (row != rows.end() && row->second.status != "failed") {
        in.signature = oracles::signatureFromJson(json::parse(row->second.finalSignature));
        in.witnessSize = json::parse(row->second.data).value("repro", json::object()).value("nodes", 0);
      } else {
        in.signature = oracles::signatureFromJson(json::parse(f.signature));
        in.witnessSize = static_cast<int64_t>(json::parse(f.programJson).value("nodes", json::array()).size());
      }
    } catch (const std::exception& e) {
      log(fmt::format("finding {}: unreadable signature or program, left out of the reports: {}", f.id, e.what()));
      continue;
    }
    inputs.push_back(std::move(in));
  }
  return inputs;
}

/// The triaged case that represents a group of raw signatures: a fully triaged one ("done": ablated
/// and verified) before a duplicate, a duplicate before an unreproducible one, then the smallest minimized
/// program. Null when none of them is triaged yet.
const TriageRecord* representativeRow(const std::vector<std::string>& rawIds,
                                      const std::map<std::string, TriageRecord>& rows) {
  const TriageRecord* best = nullptr;
  std::pair<int, int> bestRank;
  for (const auto& id : rawIds) {
    auto it = rows.find(id);
    if (it == rows.end() || it->second.status == "failed") continue;
    int nodes = json::parse(it->second.data).value("repro", json::object()).value("nodes", 0);
    const std::string& status = it->second.status;
    std::pair<int, int> rank{status == "done" ? 0 : status == "unreproducible" ? 2 : 1, nodes};
    if (!best || rank < bestRank) {
      bestRank = rank;
      best = &it->second;
    }
  }
  return best;
}

/// Removes the folders of crashes/ that no longer stand for a bug: a first witness whose signature is
/// now part of a report, and a report of an earlier pass whose findings a new grouping put under
/// another id. Untriaged first witnesses, those whose replay did not reproduce (no report stands for them)
/// and anything tcfuzz did not write stay.
void removeSupersededFolders(const fs::path& crashes, const std::set<std::string>& reportIds,
                             const std::map<std::string, TriageRecord>& rows,
                             const std::function<void(const std::string&)>& log) {
  if (!fs::is_directory(crashes)) return;
  for (const auto& entry : fs::directory_iterator(crashes)) {
    std::string name = entry.path().filename().string();
    if (!entry.is_directory() || reportIds.count(name)) continue;
    auto row = rows.find(name);
    bool triagedWitness = row != rows.end() && row->second.status != "failed" &&
                          row->second.status != "unreproducible" && row->second.status != "batch-only";
    json meta = json::object();
    if (std::ifstream in(entry.path() / "meta.json"); in) meta = json::parse(in, nullptr, false);
    bool staleReport = meta.is_object() && meta.contains("raw_signature_ids");
    if (triagedWitness || staleReport) {
      std::error_code ec;
      fs::remove_all(entry.path(), ec);
      if (ec) log(fmt::format("cannot remove the superseded folder {}: {}", entry.path().string(), ec.message()));
    }
  }
}

/// The "key : value" lines of <root>/fuzzer_stats, in order (none when there is no such file).
std::vector<std::pair<std::string, std::string>> fuzzerStats(const fs::path& root) {
  std::vector<std::pair<std::string, std::string>> stats;
  if (std::ifstream in(root / "fuzzer_stats"); in) {
    std::string line;
    while (std::getline(in, line)) {
      auto colon = line.find(" : ");
      if (colon == std::string::npos) continue;
      std::string k = line.substr(0, colon), v = line.substr(colon + 3);
      k.erase(k.find_last_not_of(' ') + 1);
      stats.emplace_back(k, v);
    }
  }
  return stats;
}

/// The witness's origin in the report, and how much of an LLM core survived minimization. A witness
/// whose IR does not parse (an older store) leaves them empty.
void setProvenance(oracles::BugReport& b, const std::string& witnessIr) {
  try {
    gen::Graph witness = gen::Graph::fromJson(json::parse(witnessIr), "finding");
    b.provenance = gen::originSummary(witness);
    auto core = [](const gen::Graph& g) {
      return static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(), [](const gen::Node& n) { return n.core; }));
    };
    b.coreNodes = core(witness);
    if (b.repro.programIr.is_object()) b.coreNodesKept = core(gen::Graph::fromJson(b.repro.programIr, "repro"));
  } catch (const std::exception&) {
    b.provenance.clear();
  }
}

}  // namespace

Triage::Triage(const gen::OpCatalog& catalog, TriageSettings settings, fs::path campaignRoot, FindingStore& store,
               ProgramTester* tester, std::function<void(const std::string&)> log)
    : catalog_(catalog),
      settings_(std::move(settings)),
      root_(std::move(campaignRoot)),
      store_(store),
      log_(std::move(log)),
      cases_(catalog, tester, root_ / "work" / "triage") {
  if (!log_) log_ = [](const std::string&) {};
}

TriagedCase Triage::triageCase(const MinimizeCase& start, const TestSettings& settings,
                               const std::vector<std::vector<std::string>>& opHints) {
  CaseInTriage c{start, settings, opHints, start, {}, {}};
  TriageTools tools{catalog_, settings_, cases_, log_, root_};
  runTriageSteps(c, tools);
  return std::move(c.result);
}

std::vector<std::string> Triage::pending() const {
  std::set<std::string> done;
  for (const auto& row : store_.triageRecords()) done.insert(row.signatureId);
  std::vector<std::string> out;
  for (const auto& f : store_.findings())  // ordered by id: oldest first
    if (!done.count(f.signatureId) && std::find(out.begin(), out.end(), f.signatureId) == out.end())
      out.push_back(f.signatureId);
  return out;
}

TriageRecord Triage::triageSignature(const std::string& signatureId) {
  std::optional<Witness> witness = smallestWitness(store_, signatureId);
  TriageRecord row;
  row.signatureId = signatureId;
  row.updatedAt = unixNow();
  if (!witness) {
    row.status = "failed";
    row.finalSignature = "{}";
    row.data = json{{"error", "no finding with a readable program has this signature"}}.dump();
    store_.saveTriage(row);
    return row;
  }
  const FindingRecord& finding = witness->finding;
  row.findingId = finding.id;
  log_(fmt::format("triage {}: finding {} ({}, {} nodes)", signatureId, finding.id, finding.verdict, witness->nodes));

  json result = json::parse(finding.result, nullptr, false);
  TestSettings s = settings_.test;
  if (result.is_object()) {
    if (result.contains("seed") && result["seed"].is_number_unsigned()) s.seed = result["seed"].get<uint64_t>();
    if (result.contains("threads") && result["threads"].is_number_integer()) s.threads = result["threads"].get<int>();
    // A CUDA finding replays on the GPU whose compiled run misbehaved (where the pool has that GPU).
    json gpu = result.value("/compiled/child/gpu"_json_pointer, json());
    if (gpu.is_string()) s.gpu = gpu.get<std::string>();
  }
  oracles::FindingCompile recorded = oracles::findingCompile(json::parse(finding.config, nullptr, false));
  if (result.is_object() && result.value("/batch/judged"_json_pointer, json()) == "batch-only") {
    // A fault that needs its batch's other members: its program alone agrees, so the replay and the minimizer
    // (which take one program) do not apply. Whole members are dropped instead, and the campaign's folder keeps
    // the batch it needs.
    s.compile = recorded.config;
    s.backward = recorded.backward;
    row.status = "batch-only";
    row.finalSignatureId = signatureId;
    row.finalSignature = finding.signature;
    json data{{"batch", result["batch"]}, {"repro", {{"nodes", witness->nodes}}}};
    data["batch"].erase("held_in");
    if (cases_.canRun() && result["batch"].contains("held_in")) data["needed"] = batchMembersNeeded(result["batch"]["held_in"], s, signatureId, finding);
    row.data = data.dump();
    if (data.contains("needed") && !data["needed"].value("reproduced", false)) {  // the fresh cold batch agrees: no bug
      row.status = "unreproducible";
      log_(fmt::format("triage {}: batch-only finding not reproduced by its batch in a fresh process with a cold cache",
                       signatureId));
    } else {
      log_(fmt::format("triage {}: batch-only (member {} of a batch of {}){}: kept with its batch in crashes/{}/", signatureId,
                       result["batch"].value("member", -1), result["batch"].value("size", 0),
                       data.contains("needed") ? fmt::format(", needs {} member(s)", data["needed"]["programs"].size()) : "",
                       signatureId));
    }
    store_.saveTriage(row);
    return row;
  }
  MinimizeCase start;
  start.graph = gen::Graph::fromJson(json::parse(finding.programJson), "finding");
  start.compile = recorded.config;
  start.backward = recorded.backward;

  // Numeric bugs already minimized are tried first: a witness that reduces to one of them is that bug.
  std::vector<std::vector<std::string>> hints;
  Signature raw = oracles::signatureFromJson(json::parse(finding.signature));
  if (oracles::isWrongResultSymptom(raw.symptom)) hints = knownNumericOps(store_);

  try {
    TriagedCase t = triageCase(start, s, hints);
    row.status = t.status;
    row.finalSignatureId = t.signature.id();
    row.finalSignature = oracles::toJson(t.signature).dump();
    row.data = toJson(t).dump();
  } catch (const JobCancelled&) {
    throw;
  } catch (const WorkerStartError&) {
    throw;
  } catch (const DiskFullError&) {
    throw;
  } catch (const std::exception& e) {
    row.status = "failed";
    row.finalSignatureId = signatureId;
    row.finalSignature = finding.signature;
    row.data = json{{"error", e.what()}}.dump();
    log_(fmt::format("triage {} failed: {}", signatureId, e.what()));
  }
  row.updatedAt = unixNow();
  store_.saveTriage(row);
  return row;
}

json Triage::batchMembersNeeded(const json& heldIn, TestSettings settings, const std::string& signatureId,
                                const FindingRecord& finding) {
  std::vector<gen::Graph> graphs;
  for (const auto& g : heldIn.at("members")) graphs.push_back(gen::Graph::fromJson(g, "batch member"));
  std::vector<std::string> labels = heldIn.at("programs").get<std::vector<std::string>>();
  int member = heldIn.at("member").get<int>();
  settings.coldCache = true;  // every try fresh, with a cold cache: what the campaign confirmed it with
  settings.persistent = false;
  settings.limits.timeoutSeconds *= static_cast<double>(graphs.size());
  // The fault a try must show on the finding's member: its verdict, and for a crash its signature too (the
  // recorded kind without its "batch-only " prefix), so that shrinking a member cannot slip to another bug.
  Signature wanted = oracles::signatureFromJson(json::parse(finding.signature));
  if (wanted.kind.starts_with("batch-only ")) wanted.kind = wanted.kind.substr(std::string("batch-only ").size());
  bool crash = !oracles::isWrongResultSymptom(wanted.symptom);
  std::vector<int> keep(graphs.size());
  for (size_t k = 0; k < keep.size(); ++k) keep[k] = static_cast<int>(k);
  int tries = 0;
  // Whether the batch of `members` (their graphs from `current`) still shows the finding on `member`'s own leaves.
  auto holds = [&](const std::vector<int>& members, const std::vector<gen::Graph>& current) {
    std::vector<gen::Graph> g;
    std::vector<std::string> l;
    int at = -1;
    for (int k : members) {
      if (k == member) at = static_cast<int>(g.size());
      g.push_back(current[k]);
      l.push_back(labels[k]);
    }
    gen::BatchProgram batch = gen::emitBatch(cases_.emitter(), g, l);
    ProgramTestResult whole = cases_.screen(batch.py, settings, "batch-" + signatureId);
    ProgramTestResult mine = batchMemberResult(whole, batch, at, cases_.comparator());
    bool found = toString(mine.verdict.verdict) == finding.verdict &&
                 (!crash || oracles::signatureOf(mine.runs, mine.verdict, {}).key() == wanted.key());
    ++tries;
    std::error_code ignored;
    for (const auto* run : {&whole.runs.eager, &whole.runs.compiled, &whole.runs.fp64}) fs::remove_all(run->jobDir, ignored);
    return found;
  };
  bool reproduced = holds(keep, graphs);
  // Drops whole members, one at a time, while the finding holds; a batch keeps two members at least (alone, it agrees).
  for (size_t k = 0; reproduced && k < graphs.size(); ++k) {
    if (static_cast<int>(k) == member || keep.size() <= 2) continue;
    std::vector<int> fewer;
    for (int m : keep)
      if (m != static_cast<int>(k)) fewer.push_back(m);
    if (holds(fewer, graphs)) keep = fewer;
  }
  int memberTries = tries;
  // Then each member needed is shrunk on its own (the others first, the finding's member last) by the minimizer's
  // graph passes, every candidate judged as part of the batch; the shared configuration is left as recorded.
  size_t nodesBefore = 0;
  for (int k : keep) nodesBefore += graphs[k].nodes.size();
  if (reproduced) {
    oracles::MinimizerPolicy policy;
    policy.passes = {"drop-outputs", "remove-nodes", "bypass-nodes", "reset-attrs", "plain-inputs", "shrink-ranks",
                     "shrink-shapes"};
    policy.batch = 1;
    policy.maxRounds = 2;
    policy.seed = settings.seed;
    int budget = std::min(kBatchOnlyCandidates, settings_.minimizer.maxCandidates);
    std::vector<int> order;
    for (int k : keep)
      if (k != member) order.push_back(k);
    order.push_back(member);
    for (int k : order) {
      if (budget <= 0) break;
      policy.maxCandidates = budget;
      oracles::Minimizer minimizer(catalog_, policy);
      MinimizeCase start{graphs[k], settings.compile, settings.backward, ""};
      oracles::MinimizeResult shrunk = minimizer.minimize(start, [&](const std::vector<MinimizeCase>& candidates) {
        std::vector<bool> shows;
        for (const MinimizeCase& c : candidates) {
          std::vector<gen::Graph> current = graphs;
          current[k] = c.graph;
          shows.push_back(holds(keep, current));
        }
        return shows;
      });
      budget -= shrunk.candidatesTested;
      graphs[k] = shrunk.best.graph;
    }
  }
  size_t nodesAfter = 0;
  for (int k : keep) nodesAfter += graphs[k].nodes.size();
  json needed{{"reproduced", reproduced}, {"tries", memberTries}, {"shrink_tries", tries - memberTries},
              {"nodes", {{"before", nodesBefore}, {"after", nodesAfter}}}, {"programs", json::array()}};
  for (int k : keep) needed["programs"].push_back(labels[k]);
  if (reproduced) {
    fs::path folder = root_ / "crashes" / signatureId;
    fs::create_directories(folder);
    std::vector<gen::Graph> kept;
    std::vector<std::string> keptLabels;
    for (int k : keep) {
      kept.push_back(graphs[k]);
      keptLabels.push_back(labels[k]);
    }
    // The last batch that held: the members needed, each as shrunk, as one program.
    writeFileAtomically(folder / "batch_needed.py", gen::emitBatch(cases_.emitter(), kept, keptLabels).py);
    std::string list;
    for (int k : keep) list += fmt::format("- {}{}: {} nodes\n", labels[k], k == member ? " (the member whose leaves differ)" : "",
                                           graphs[k].nodes.size());
    writeFileAtomically(
        folder / "batch_only.md",
        fmt::format("# batch-only: a fault only a batched compile shows\n\n"
                    "These programs, compiled together as independent members of one module, make member {}'s result "
                    "differ; each alone agrees. Triage dropped whole members while the fault held in a fresh process with "
                    "a cold Inductor cache ({} runs), then shrank each member needed inside the batch ({} runs, {} -> {} "
                    "nodes in all). Members needed:\n\n{}\n"
                    "`batch_needed.py` is that batch as one program: `tcfuzz run batch_needed.py` under {}.\n\n"
                    "Written by tcfuzz from its own runs (no LLM wrote this text).\n",
                    labels[member], memberTries, tries - memberTries, nodesBefore, nodesAfter, list,
                    settings.compile.describe()));
  }
  return needed;
}

std::string Triage::collectEnv() {
  const std::string key = "collect_env:" + settings_.torch.git;
  if (auto cached = store_.meta(key)) return *cached;
  if (!cases_.canRun()) return "";
  oracles::RunResult r =
      cases_.runScript("collect_env.py", "from torch.utils import collect_env\ncollect_env.main()\n", settings_.test);
  if (!r.ok() || r.stdoutTail.empty()) return "";
  store_.setMeta(key, r.stdoutTail);
  return r.stdoutTail;
}

std::vector<oracles::BugReport> Triage::writeReports() {
  std::vector<FindingRecord> findings = store_.findings();
  std::map<std::string, TriageRecord> rows;
  for (auto& r : store_.triageRecords()) rows[r.signatureId] = std::move(r);
  std::map<int64_t, const FindingRecord*> byId;
  std::map<int64_t, std::string> rawSignatureOf;  // finding id -> its exact signature id (the triage row's key)
  for (const auto& f : findings) {
    byId[f.id] = &f;
    rawSignatureOf[f.id] = f.signatureId;
  }
  std::vector<oracles::BugGroup> groups = oracles::Deduper{}.group(dedupInputs(findings, rows, log_));

  std::string env = collectEnv();
  bool upstreamRefused = false;
  std::vector<oracles::BugReport> bugs;
  std::set<std::string> reportIds;
  int64_t notReproduced = 0, batchOnly = 0;
  for (const auto& g : groups) {
    // The group's signatures are the final (minimized) ones; triage rows are keyed by the raw ones.
    std::vector<std::string> rawIds;
    for (int64_t id : g.findingIds)
      if (std::find(rawIds.begin(), rawIds.end(), rawSignatureOf[id]) == rawIds.end()) rawIds.push_back(rawSignatureOf[id]);
    const TriageRecord* best = representativeRow(rawIds, rows);
    if (!best) continue;  // not triaged yet: the campaign's first-witness folder stands in
    if (best->status == "unreproducible") {  // the replay agrees: no bug to report
      notReproduced += static_cast<int64_t>(rawIds.size());
      continue;
    }
    if (best->status == "batch-only") {  // its first-witness folder holds the batch it needs
      batchOnly += static_cast<int64_t>(rawIds.size());
      continue;
    }
    oracles::BugReport b = bugReportOf(triagedCaseFromJson(json::parse(best->data)), root_);
    b.id = g.id;
    b.hits = g.hits;
    b.firstSeen = g.firstSeen;
    b.lastSeen = g.lastSeen;
    b.rawSignatureIds = rawIds;
    b.findingIds = g.findingIds;
    b.mergedBy = g.mergedBy;
    if (auto w = byId.find(best->findingId); w != byId.end()) {
      b.originalConfig = json::parse(w->second->config, nullptr, false);
      b.originalProgramPy = w->second->programPy;
      setProvenance(b, w->second->programJson);
    }
    b.torch = settings_.torch;
    for (int64_t id : g.findingIds)
      if (auto f = byId.find(id); f != byId.end() && !f->second->torch.empty() &&
                                  std::find(b.seenOnTorch.begin(), b.seenOnTorch.end(), f->second->torch) ==
                                      b.seenOnTorch.end())
        b.seenOnTorch.push_back(f->second->torch);
    std::sort(b.seenOnTorch.begin(), b.seenOnTorch.end(), [](const std::string& x, const std::string& y) {
      return oracles::versionKey(x) < oracles::versionKey(y);
    });
    b.collectEnv = env;
    b.campaign = fs::absolute(root_).string();
    b.knownFamily = oracles::matchKnownFamily(settings_.knownIssues, b);
    if (const oracles::KnownIssue* known = oracles::matchKnownIssue(settings_.knownIssues, b)) b.knownUpstream = known->issue;
    else findPossibleDuplicates(b, upstreamRefused);
    oracles::writeReportFolder(b, oracles::renderRepro(b.repro, b.title), root_ / "crashes" / b.id, settings_.secrets);
    reportIds.insert(b.id);
    bugs.push_back(std::move(b));
  }
  removeSupersededFolders(root_ / "crashes", reportIds, rows, log_);

  std::vector<std::pair<std::string, std::string>> stats = fuzzerStats(root_);
  stats.emplace_back("raw_findings", std::to_string(findings.size()));
  stats.emplace_back("unique_bugs", std::to_string(bugs.size()));
  stats.emplace_back("signatures_not_reproduced", std::to_string(notReproduced));
  stats.emplace_back("signatures_batch_only", std::to_string(batchOnly));
  oracles::writeIndex(bugs, stats, root_, settings_.secrets);
  return bugs;
}

std::string TriageSummary::describe(const fs::path& root) const {
  return fmt::format("triaged {} signature(s) ({} unreproducible, {} failed{}{}); {} unique bug(s) from {} raw "
                     "finding(s)\nindex: {}\n",
                     triaged, unreproducible, failed, batchOnly ? fmt::format(", {} batch-only", batchOnly) : "",
                     pending ? fmt::format(", {} left for later", pending) : "", bugs, rawFindings,
                     (root / "index.md").string());
}

TriageSummary Triage::run(const std::atomic<bool>* stop, const std::function<bool()>& mayStart) {
  TriageSummary summary;
  std::vector<std::string> waiting = pending();
  for (size_t i = 0; i < waiting.size(); ++i) {
    if ((stop && *stop) || (mayStart && !mayStart())) {
      summary.pending = static_cast<int>(waiting.size() - i);
      break;
    }
    TriageRecord row;
    try {
      row = triageSignature(waiting[i]);
    } catch (const JobCancelled&) {
      summary.pending = static_cast<int>(waiting.size() - i);
      break;
    }
    finished_++;
    if (row.status == "done" || row.status == "duplicate") summary.triaged++;
    else if (row.status == "batch-only") {
      summary.triaged++;
      summary.batchOnly++;
    }
    else if (row.status == "unreproducible") summary.unreproducible++;
    else summary.failed++;
  }
  TriageSummary reports = rewriteReports();
  summary.bugs = reports.bugs;
  summary.rawFindings = reports.rawFindings;
  return summary;
}

void Triage::findPossibleDuplicates(oracles::BugReport& bug, bool& refused) const {
  auto queries = oracles::upstreamSearchQueries(bug);
  if (!settings_.upstream || refused || queries.empty()) return;
  try {
    bug.possibleDuplicates = settings_.upstream->closest(queries.front().second, 3);
  } catch (const UpstreamUnavailable& e) {
    refused = true;  // the API stopped answering (a rate limit): the remaining reports keep their search links
    log_(fmt::format("{}; the remaining reports are not checked", e.what()));
  }
}

TriageSummary Triage::rewriteReports() {
  TriageSummary summary;
  std::vector<oracles::BugReport> bugs = writeReports();
  summary.bugs = static_cast<int>(bugs.size());
  for (const auto& b : bugs) summary.rawFindings += static_cast<int>(b.hits);
  summary.pending = static_cast<int>(pending().size());
  return summary;
}

// --- BackgroundTriage ---------------------------------------------------------------------------

namespace {

TriageSettings freshProcessTriage(TriageSettings settings) {
  settings.test.persistent = false;  // triage replays every finding in fresh processes
  settings.test.confirmFindings = false;
  return settings;
}

}  // namespace

BackgroundTriage::BackgroundTriage(const gen::OpCatalog& catalog, TriageSettings settings, const fs::path& campaignRoot,
                                   const fs::path& storePath, const SecretRedactor& secrets, ProgramTester& tester,
                                   TriageBudget budget, std::function<void(const std::string&)> event)
    : store_(storePath, secrets),
      triage_(catalog, freshProcessTriage(std::move(settings)), campaignRoot, store_, &tester,
              [event](const std::string& line) { event("triage: " + line); }),
      budget_(std::move(budget)),
      event_(std::move(event)) {}

BackgroundTriage::~BackgroundTriage() {
  stop();
  join();
}

void BackgroundTriage::start() {
  if (!thread_.joinable()) thread_ = std::thread(&BackgroundTriage::loop, this);
}

void BackgroundTriage::stop() { stop_ = true; }

void BackgroundTriage::join() {
  if (thread_.joinable()) thread_.join();
}

size_t BackgroundTriage::pendingCount() const { return triage_.pending().size(); }

bool triageMayStart(const TriageBudget& budget, double spent, int finished, double campaignWorkerSeconds) {
  if (budget.share >= 1.0) return true;
  double next = finished > 0 ? spent / finished : budget.firstSignatureSeconds;
  return spent + next <= budget.share * campaignWorkerSeconds;
}

bool BackgroundTriage::withinBudget() const {
  if (!budget_.campaignWorkerSeconds) return true;
  return triageMayStart(budget_, triage_.workerSeconds(), triage_.signaturesFinished(), budget_.campaignWorkerSeconds());
}

std::vector<std::pair<std::string, std::string>> BackgroundTriage::statsLines() const {
  double campaign = budget_.campaignWorkerSeconds ? budget_.campaignWorkerSeconds() : 0.0;
  double spent = triage_.workerSeconds();
  return {{"triage_share", fmt::format("{:.3f}", campaign > 0 ? std::min(1.0, spent / campaign) : 0.0)},
          {"triage_share_cap", fmt::format("{:.3f}", budget_.share)},
          {"triage_worker_s", fmt::format("{:.1f}", spent)},
          {"triage_pending", std::to_string(pending_.load())}};
}

void BackgroundTriage::loop() {
  while (!stop_) {
    try {
      size_t waiting = triage_.pending().size();
      pending_ = waiting;
      if (waiting > 0 && !withinBudget()) {
        if (!waitingForBudget_)
          event_(fmt::format("triage: {} signature(s) wait for triage's share of the worker time ({:.0f}%, "
                             "--triage-share); tcfuzz triage OUT finishes them after the campaign",
                             waiting, 100 * budget_.share));
        waitingForBudget_ = true;
      } else if (waiting > 0) {
        waitingForBudget_ = false;
        TriageSummary s = triage_.run(&stop_, [this] { return withinBudget(); });
        pending_ = static_cast<size_t>(s.pending);
        if (!stop_)
          event_(fmt::format("triage: {} unique bug(s) reported from {} raw finding(s)", s.bugs, s.rawFindings));
      }
    } catch (const std::exception& e) {
      if (!stop_) event_(fmt::format("triage stopped on an error, retrying later: {}", e.what()));
    }
    for (int i = 0; i < 10 && !stop_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace tcfuzz
