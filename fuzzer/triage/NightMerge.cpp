#include "fuzzer/triage/NightMerge.h"

#include <algorithm>
#include <optional>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "fuzzer/campaign/output/CampaignOutput.h"
#include "fuzzer/campaign/output/FindingStore.h"
#include "oracles/infra/AtomicFile.h"
#include "oracles/infra/TorchInfo.h"

namespace tcfuzz {

namespace fs = std::filesystem;
using nlohmann::json;

json ShardInfo::toJson() const {
  return {{"path", path.string()},
          {"name", name},
          {"status", status},
          {"seed", seed},
          {"device", device},
          {"devices", devices},
          {"torch", torch},
          {"programs", programs},
          {"findings", findings},
          {"unique_signatures", uniqueSignatures},
          {"index_offset", indexOffset}};
}

namespace {

/// A shard's folder name, also for a path given with a trailing slash.
std::string folderName(const fs::path& dir) {
  fs::path p = dir.lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

/// Fills `shard` from an open store: the recorded identity and torch, and the totals.
void readStoreFacts(const FindingStore& store, ShardInfo& shard) {
  if (auto id = store.meta("identity")) {
    json j = json::parse(*id, nullptr, false);
    if (j.is_object()) {
      if (j.contains("seed") && j["seed"].is_number_unsigned()) shard.seed = std::to_string(j["seed"].get<uint64_t>());
      else if (j.contains("seed") && j["seed"].is_number_integer()) shard.seed = std::to_string(j["seed"].get<int64_t>());
      shard.device = j.value("device", "");
    }
  }
  if (auto t = store.meta("torch")) {
    oracles::TorchInfo torch = oracles::TorchInfo::fromJson(json::parse(*t, nullptr, false));
    shard.torch = torch.version;
    shard.devices = torch.devices;
  }
  StoreTotals totals = store.totals();
  shard.programs = totals.programs;
  shard.findings = totals.findings;
  shard.uniqueSignatures = totals.uniqueSignatures;
}

/// Where each triage row's witness is found again after a rebuild: (signature id, found-at time).
using WitnessKey = std::pair<std::string, double>;

/// A triage row carried into the night, its witness named by WitnessKey (ids change in a merge).
struct CarriedTriage {
  TriageRecord row;
  WitnessKey witness;
};

/// The triage rows of `store` with their witnesses' keys.
std::vector<CarriedTriage> triageWithWitnesses(const FindingStore& store) {
  std::map<int64_t, WitnessKey> witnesses;
  for (const auto& f : store.findings()) witnesses[f.id] = {f.signatureId, f.foundAt};
  std::vector<CarriedTriage> out;
  for (auto& r : store.triageRecords()) {
    WitnessKey key = witnesses.count(r.findingId) ? witnesses[r.findingId] : WitnessKey{r.signatureId, 0};
    out.push_back({std::move(r), std::move(key)});
  }
  return out;
}

/// Removes a store with its WAL files, so that it is built again from nothing.
void removeStore(const fs::path& file) {
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(fs::path(file.string() + suffix));
}

/// Copies `from` to `to` when it exists (a shard killed early may have no plot_data yet).
void copyIfPresent(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  if (!fs::exists(from, ec)) return;
  fs::create_directories(to.parent_path());
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

/// The structured traces of a shard's triaged bugs (traces/<signature id>/, which their triage rows
/// name relative to the campaign), so that the night's reports find them; one already there stays.
void copyTraces(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  if (!fs::is_directory(from, ec)) return;
  for (const auto& e : fs::directory_iterator(from)) {
    if (fs::exists(to / e.path().filename())) continue;
    fs::create_directories(to);
    fs::copy(e.path(), to / e.path().filename(), fs::copy_options::recursive);
  }
}

/// The night's signatures from its store, each finding attributed to the shard whose index range holds it.
std::vector<NightSignature> nightSignatures(const std::vector<FindingRecord>& findings,
                                            const std::vector<ShardInfo>& shards) {
  std::map<std::string, NightSignature> bySignature;
  for (const auto& f : findings) {
    NightSignature& s = bySignature[f.signatureId];
    if (s.hits == 0) {
      s.id = f.signatureId;
      s.verdict = f.verdict;
      json sig = json::parse(f.signature, nullptr, false);
      s.key = sig.is_object() ? sig.value("key", "") : "";
      s.firstSeen = s.lastSeen = f.foundAt;
    }
    ++s.hits;
    s.firstSeen = std::min(s.firstSeen, f.foundAt);
    s.lastSeen = std::max(s.lastSeen, f.foundAt);
    const ShardInfo* owner = nullptr;
    for (const auto& shard : shards)
      if (shard.ok() && f.programIndex >= shard.indexOffset) owner = &shard;  // offsets ascend in shard order
    if (owner) ++s.shards[owner->name];
  }
  std::vector<NightSignature> out;
  for (auto& [id, s] : bySignature) out.push_back(std::move(s));
  std::stable_sort(out.begin(), out.end(),
                   [](const NightSignature& a, const NightSignature& b) { return a.firstSeen < b.firstSeen; });
  return out;
}

/// Carries `candidates` into `store`: per signature, a "done" row before any other, else the first
/// given; each row's witness is found again by its key, else the signature's first finding.
int carryTriage(FindingStore& store, const std::vector<CarriedTriage>& candidates) {
  std::map<WitnessKey, int64_t> idOf;
  std::map<std::string, int64_t> firstOf;
  for (const auto& f : store.findings()) {
    idOf.emplace(WitnessKey{f.signatureId, f.foundAt}, f.id);
    firstOf.emplace(f.signatureId, f.id);
  }
  std::map<std::string, const CarriedTriage*> chosen;
  for (const auto& c : candidates) {
    if (!firstOf.count(c.row.signatureId)) continue;  // no finding of it tonight
    auto [it, fresh] = chosen.emplace(c.row.signatureId, &c);
    if (!fresh && it->second->row.status != "done" && c.row.status == "done") it->second = &c;
  }
  for (const auto& [signature, c] : chosen) {
    TriageRecord row = c->row;
    auto witness = idOf.find(c->witness);
    row.findingId = witness != idOf.end() ? witness->second : firstOf[signature];
    store.saveTriage(row);
  }
  return static_cast<int>(chosen.size());
}

/// The night's fuzzer_stats: what the index shows at its top.
std::vector<std::pair<std::string, std::string>> nightStats(const NightMerge& m) {
  int usable = 0;
  for (const auto& s : m.shards) usable += s.ok() ? 1 : 0;
  std::vector<std::string> torch = m.torchVersions();
  std::string versions;
  for (const auto& v : torch) versions += (versions.empty() ? "" : ", ") + v;
  return {{"shards", fmt::format("{} ({} usable)", m.shards.size(), usable)},
          {"torch", versions.empty() ? "unknown" : versions},
          {"execs_done", std::to_string(m.programs)},
          {"findings", std::to_string(m.findings)},
          {"unique_signatures", std::to_string(m.signatures.size())}};
}

}  // namespace

ShardInfo readShard(const fs::path& dir) {
  ShardInfo shard;
  shard.path = dir;
  shard.name = folderName(dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    shard.status = "missing";
    return shard;
  }
  if (!fs::exists(dir / "findings.sqlite", ec)) {
    shard.status = "unreadable: no findings.sqlite (its task ended before the campaign started?)";
    return shard;
  }
  try {
    FindingStore store(dir / "findings.sqlite");
    readStoreFacts(store, shard);
  } catch (const std::exception& e) {
    shard.status = std::string("unreadable: ") + e.what();
  }
  return shard;
}

std::vector<std::string> NightMerge::torchVersions() const {
  std::vector<std::string> out;
  for (const auto& s : shards)
    if (s.ok() && !s.torch.empty() && std::find(out.begin(), out.end(), s.torch) == out.end()) out.push_back(s.torch);
  return out;
}

NightMerge mergeShards(const std::vector<fs::path>& shardDirs, const fs::path& night, const SecretRedactor& secrets) {
  NightMerge m;
  std::set<std::string> names;
  for (const auto& dir : shardDirs) {
    ShardInfo shard = readShard(dir);
    std::string base = shard.name;
    for (int n = 2; !names.insert(shard.name).second; ++n) shard.name = fmt::format("{}-{}", base, n);
    m.shards.push_back(std::move(shard));
  }
  if (std::none_of(m.shards.begin(), m.shards.end(), [](const ShardInfo& s) { return s.ok(); })) {
    std::string why;
    for (const auto& s : m.shards) why += fmt::format("\n  {}: {}", s.path.string(), s.status);
    throw std::invalid_argument("no usable shard to merge:" + why);
  }

  bool rebuilt = fs::exists(night / "findings.sqlite");
  CampaignOutput output(night, rebuilt ? CampaignOutput::OpenMode::Resume : CampaignOutput::OpenMode::Fresh, secrets);
  std::vector<CarriedTriage> lastMerge;
  if (rebuilt) {
    {
      FindingStore old(output.storePath(), secrets);
      lastMerge = triageWithWitnesses(old);
    }
    removeStore(output.storePath());
  }
  FindingStore store(output.storePath(), secrets);
  std::vector<CarriedTriage> candidates;
  int64_t offset = 0;
  for (auto& shard : m.shards) {
    if (!shard.ok()) continue;
    try {
      FindingStore from(shard.path / "findings.sqlite");
      readStoreFacts(from, shard);  // as of now: a shard may have been read while its campaign still ran
      shard.indexOffset = offset;
      store.importFrom(from, offset);
      offset += std::max<int64_t>(from.totals().maxProgramIndex + 1, 0);
      for (auto& c : triageWithWitnesses(from)) candidates.push_back(std::move(c));
      for (const char* key : {"identity", "torch"})
        if (auto value = from.meta(key); value && !store.meta(key)) store.setMeta(key, *value);
    } catch (const StoreError& e) {
      shard.status = std::string("unreadable: ") + e.what();
    }
  }
  candidates.insert(candidates.end(), lastMerge.begin(), lastMerge.end());
  m.triageCarried = carryTriage(store, candidates);

  json shardsJson = json::array();
  for (const auto& s : m.shards) shardsJson.push_back(s.toJson());
  store.setMeta("night_shards", shardsJson.dump());
  std::vector<FindingRecord> findings = store.findings();
  StoreTotals totals = store.totals();
  m.programs = totals.programs;
  m.findings = totals.findings;
  m.signatures = nightSignatures(findings, m.shards);
  std::map<std::string, const FindingRecord*> firstWitness;
  for (const auto& f : findings)
    if (auto [it, fresh] = firstWitness.emplace(f.signatureId, &f); !fresh && f.foundAt < it->second->foundAt)
      it->second = &f;
  for (const auto& [signature, f] : firstWitness)
    if (!output.hasFindingFolder(signature)) output.writeFindingFolder(*f);

  fs::remove_all(night / "shards");
  for (const auto& s : m.shards) {
    if (!s.ok()) continue;
    copyIfPresent(s.path / "plot_data", night / "shards" / s.name / "plot_data");
    copyIfPresent(s.path / "fuzzer_stats", night / "shards" / s.name / "fuzzer_stats");
    copyTraces(s.path / "traces", night / "traces");
  }
  output.writeStats(nightStats(m));
  writeFileAtomically(night / "shards.json", secrets.mask(shardsJson.dump(2) + "\n"));
  return m;
}

}  // namespace tcfuzz
