#include "fuzzer/campaign/output/FindingStore.h"

#include <sqlite3.h>

#include <string_view>
#include <type_traits>

#include <SQLiteCpp/SQLiteCpp.h>
#include <SQLiteCpp/VariadicBind.h>
#include <fmt/format.h>

namespace tcfuzz {

namespace {

// Version 2 added programs.phases, version 3 findings.torch; an older store is migrated in place
// (the columns are added).
constexpr int kSchemaVersion = 3;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS campaign (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS programs (
  idx INTEGER PRIMARY KEY, hash TEXT NOT NULL, origin TEXT NOT NULL, parent TEXT NOT NULL,
  config TEXT NOT NULL, verdict TEXT NOT NULL, reason TEXT NOT NULL, new_features INTEGER NOT NULL,
  wall_s REAL NOT NULL, torch_s REAL NOT NULL, finished_at REAL NOT NULL, phases TEXT NOT NULL DEFAULT '{}');
CREATE TABLE IF NOT EXISTS findings (
  id INTEGER PRIMARY KEY AUTOINCREMENT, program_idx INTEGER NOT NULL, found_at REAL NOT NULL,
  verdict TEXT NOT NULL, reason TEXT NOT NULL, signature_id TEXT NOT NULL, signature TEXT NOT NULL,
  config TEXT NOT NULL, program_json TEXT NOT NULL, program_py TEXT NOT NULL, result TEXT NOT NULL,
  torch TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS findings_by_signature ON findings(signature_id);
CREATE TABLE IF NOT EXISTS features (feature TEXT PRIMARY KEY, first_idx INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS queue (
  name TEXT PRIMARY KEY, idx INTEGER NOT NULL, hash TEXT NOT NULL, parent TEXT NOT NULL,
  new_features INTEGER NOT NULL, added_at REAL NOT NULL, program_json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS triage (
  signature_id TEXT PRIMARY KEY, finding_id INTEGER NOT NULL, status TEXT NOT NULL,
  final_signature_id TEXT NOT NULL, final_signature TEXT NOT NULL, data TEXT NOT NULL,
  updated_at REAL NOT NULL);
)sql";

bool isDiskFull(const SQLite::Exception& e) {
  int code = e.getErrorCode();
  return code == SQLITE_FULL || code == SQLITE_IOERR;
}

}  // namespace

namespace {

/// `value` as stored: text masked, numbers as they are.
template <class T>
auto storedValue(const SecretRedactor& secrets, const T& value) {
  if constexpr (std::is_convertible_v<const T&, std::string_view>) return secrets.mask(value);
  else return value;
}

/// SQLite::bind of every value, text masked with `secrets`: the one way a row is written.
template <class... Values>
void bindMasked(SQLite::Statement& s, const SecretRedactor& secrets, const Values&... values) {
  SQLite::bind(s, storedValue(secrets, values)...);
}

}  // namespace

template <class F>
void FindingStore::write(const char* what, F&& body) {
  try {
    SQLite::Transaction tx(*db_);
    body();
    tx.commit();
  } catch (const SQLite::Exception& e) {
    if (isDiskFull(e))
      throw DiskFullError(fmt::format("{}: cannot {} (disk full?): {}", file_.string(), what, e.what()));
    throw StoreError(fmt::format("{}: cannot {}: {}", file_.string(), what, e.what()));
  }
}

FindingStore::FindingStore(const std::filesystem::path& file, SecretRedactor secrets)
    : file_(file), secrets_(std::move(secrets)) {
  try {
    db_ = std::make_unique<SQLite::Database>(file.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db_->setBusyTimeout(5000);
    // WAL with synchronous=NORMAL: a committed transaction survives the death of this process.
    db_->exec("PRAGMA journal_mode=WAL");
    db_->exec("PRAGMA synchronous=NORMAL");
    db_->exec(kSchema);
    auto addColumn = [&](const char* table, const char* column, const char* declaration) {
      SQLite::Statement columns(*db_, fmt::format("SELECT COUNT(*) FROM pragma_table_info('{}') WHERE name = '{}'",
                                                  table, column));
      if (columns.executeStep() && columns.getColumn(0).getInt() == 0)
        db_->exec(fmt::format("ALTER TABLE {} ADD COLUMN {} {}", table, column, declaration));
    };
    addColumn("programs", "phases", "TEXT NOT NULL DEFAULT '{}'");
    addColumn("findings", "torch", "TEXT NOT NULL DEFAULT ''");
  } catch (const SQLite::Exception& e) {
    if (isDiskFull(e)) throw DiskFullError(fmt::format("{}: cannot create the store (disk full?): {}", file.string(), e.what()));
    throw StoreError(fmt::format("{} is not a usable findings store: {}", file.string(), e.what()));
  }
  auto version = meta("schema_version");
  if (!version || *version == "1" || *version == "2") setMeta("schema_version", std::to_string(kSchemaVersion));
  else if (*version != std::to_string(kSchemaVersion))
    throw StoreError(fmt::format("{} has schema version {}, this tcfuzz writes version {}", file.string(), *version,
                                 kSchemaVersion));
}

FindingStore::~FindingStore() = default;

void FindingStore::setMeta(const std::string& key, const std::string& value) {
  write("record campaign metadata", [&] {
    SQLite::Statement s(*db_, "INSERT OR REPLACE INTO campaign(key, value) VALUES (?, ?)");
    bindMasked(s, secrets_, key, value);
    s.exec();
  });
}

std::optional<std::string> FindingStore::meta(const std::string& key) const {
  SQLite::Statement s(*db_, "SELECT value FROM campaign WHERE key = ?");
  s.bind(1, key);
  if (!s.executeStep()) return std::nullopt;
  return s.getColumn(0).getString();
}

void FindingStore::recordProgram(const ProgramRecord& p, std::vector<FindingRecord>& findings,
                                 const std::vector<std::string>& newFeatures, const std::optional<QueueRecord>& queued) {
  write("record a tested program", [&] {
    SQLite::Statement prog(*db_,
                           "INSERT OR REPLACE INTO programs(idx, hash, origin, parent, config, verdict, reason, "
                           "new_features, wall_s, torch_s, finished_at, phases) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
    bindMasked(prog, secrets_, p.index, p.hash, p.origin, p.parent, p.config, p.verdict, p.reason, p.newFeatures,
                 p.wallSeconds, p.torchSeconds, p.finishedAt, p.phases.empty() ? std::string("{}") : p.phases);
    prog.exec();
    for (auto& f : findings) {
      SQLite::Statement s(*db_,
                          "INSERT INTO findings(program_idx, found_at, verdict, reason, signature_id, signature, config, "
                          "program_json, program_py, result, torch) VALUES (?,?,?,?,?,?,?,?,?,?,?)");
      bindMasked(s, secrets_, f.programIndex, f.foundAt, f.verdict, f.reason, f.signatureId, f.signature, f.config,
                   f.programJson, f.programPy, f.result, f.torch);
      s.exec();
      f.id = db_->getLastInsertRowid();
    }
    for (const auto& feature : newFeatures) {
      SQLite::Statement s(*db_, "INSERT OR IGNORE INTO features(feature, first_idx) VALUES (?, ?)");
      bindMasked(s, secrets_, feature, p.index);
      s.exec();
    }
    if (queued) insertQueueRow(*queued);
  });
}

void FindingStore::insertQueueRow(const QueueRecord& q) {
  SQLite::Statement s(*db_,
                      "INSERT OR REPLACE INTO queue(name, idx, hash, parent, new_features, added_at, program_json) "
                      "VALUES (?,?,?,?,?,?,?)");
  bindMasked(s, secrets_, q.name, q.programIndex, q.hash, q.parent, q.newFeatures, q.addedAt, q.programJson);
  s.exec();
}

void FindingStore::addQueueRecord(const QueueRecord& q) {
  write("record a queue entry", [&] { insertQueueRow(q); });
}

void FindingStore::removeQueueRecord(const std::string& name) {
  write("remove a queue entry", [&] {
    SQLite::Statement s(*db_, "DELETE FROM queue WHERE name = ?");
    bindMasked(s, secrets_, name);  // as stored
    s.exec();
  });
}

StoreTotals FindingStore::totals() const {
  StoreTotals t;
  {
    SQLite::Statement s(*db_, "SELECT COUNT(*), COALESCE(MAX(idx), -1), COALESCE(SUM(torch_s), 0) FROM programs");
    s.executeStep();
    t.programs = s.getColumn(0).getInt64();
    t.maxProgramIndex = s.getColumn(1).getInt64();
    t.torchSeconds = s.getColumn(2).getDouble();
  }
  {
    SQLite::Statement s(*db_, "SELECT verdict, COUNT(*) FROM programs GROUP BY verdict");
    while (s.executeStep()) t.verdicts[s.getColumn(0).getString()] = s.getColumn(1).getInt64();
  }
  {
    SQLite::Statement s(*db_, "SELECT origin, COUNT(*) FROM programs GROUP BY origin");
    while (s.executeStep()) t.origins[s.getColumn(0).getString()] = s.getColumn(1).getInt64();
  }
  {
    SQLite::Statement s(*db_,
                        "SELECT COUNT(*), COUNT(DISTINCT signature_id), COALESCE(MAX(found_at), 0) FROM findings");
    s.executeStep();
    t.findings = s.getColumn(0).getInt64();
    t.uniqueSignatures = s.getColumn(1).getInt64();
    t.lastFindingAt = s.getColumn(2).getDouble();
  }
  {
    SQLite::Statement s(*db_,
                        "SELECT COALESCE(MAX(first), 0) FROM (SELECT MIN(found_at) AS first FROM findings GROUP BY "
                        "signature_id)");
    s.executeStep();
    t.lastNewSignatureAt = s.getColumn(0).getDouble();
  }
  return t;
}

std::vector<std::string> FindingStore::features() const {
  std::vector<std::string> out;
  SQLite::Statement s(*db_, "SELECT feature FROM features");
  while (s.executeStep()) out.push_back(s.getColumn(0).getString());
  return out;
}

std::vector<QueueRecord> FindingStore::queue() const {
  std::vector<QueueRecord> out;
  SQLite::Statement s(*db_,
                      "SELECT name, idx, hash, parent, new_features, added_at, program_json FROM queue ORDER BY idx");
  while (s.executeStep())
    out.push_back({s.getColumn(0).getString(), s.getColumn(1).getInt64(), s.getColumn(2).getString(),
                   s.getColumn(3).getString(), s.getColumn(4).getInt(), s.getColumn(5).getDouble(),
                   s.getColumn(6).getString()});
  return out;
}

std::vector<FindingRecord> FindingStore::findings() const {
  std::vector<FindingRecord> out;
  SQLite::Statement s(*db_,
                      "SELECT id, program_idx, found_at, verdict, reason, signature_id, signature, config, program_json, "
                      "program_py, result, torch FROM findings ORDER BY id");
  while (s.executeStep()) {
    FindingRecord f;
    f.id = s.getColumn(0).getInt64();
    f.programIndex = s.getColumn(1).getInt64();
    f.foundAt = s.getColumn(2).getDouble();
    f.verdict = s.getColumn(3).getString();
    f.reason = s.getColumn(4).getString();
    f.signatureId = s.getColumn(5).getString();
    f.signature = s.getColumn(6).getString();
    f.config = s.getColumn(7).getString();
    f.programJson = s.getColumn(8).getString();
    f.programPy = s.getColumn(9).getString();
    f.result = s.getColumn(10).getString();
    f.torch = s.getColumn(11).getString();
    out.push_back(std::move(f));
  }
  return out;
}

void FindingStore::saveTriage(const TriageRecord& row) {
  write("record a triage result", [&] {
    SQLite::Statement s(*db_,
                        "INSERT OR REPLACE INTO triage(signature_id, finding_id, status, final_signature_id, "
                        "final_signature, data, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)");
    bindMasked(s, secrets_, row.signatureId, row.findingId, row.status, row.finalSignatureId, row.finalSignature, row.data,
                 row.updatedAt);
    s.exec();
  });
}

void FindingStore::updateSignature(int64_t findingId, const std::string& signatureId, const std::string& signature) {
  write("re-sign a finding", [&] {
    SQLite::Statement s(*db_, "UPDATE findings SET signature_id = ?, signature = ? WHERE id = ?");
    bindMasked(s, secrets_, signatureId, signature, findingId);
    s.exec();
  });
}

void FindingStore::removeTriage(const std::string& signatureId) {
  write("remove a triage result", [&] {
    SQLite::Statement s(*db_, "DELETE FROM triage WHERE signature_id = ?");
    bindMasked(s, secrets_, signatureId);
    s.exec();
  });
}

std::vector<TriageRecord> FindingStore::triageRecords() const {
  std::vector<TriageRecord> out;
  SQLite::Statement s(*db_,
                      "SELECT signature_id, finding_id, status, final_signature_id, final_signature, data, updated_at "
                      "FROM triage ORDER BY signature_id");
  while (s.executeStep()) {
    TriageRecord r;
    r.signatureId = s.getColumn(0).getString();
    r.findingId = s.getColumn(1).getInt64();
    r.status = s.getColumn(2).getString();
    r.finalSignatureId = s.getColumn(3).getString();
    r.finalSignature = s.getColumn(4).getString();
    r.data = s.getColumn(5).getString();
    r.updatedAt = s.getColumn(6).getDouble();
    out.push_back(std::move(r));
  }
  return out;
}

std::map<int64_t, int64_t> FindingStore::importFrom(const FindingStore& from, int64_t indexOffset) {
  std::vector<int64_t> oldIds;
  {
    SQLite::Statement s(*from.db_, "SELECT id FROM findings ORDER BY id");
    while (s.executeStep()) oldIds.push_back(s.getColumn(0).getInt64());
  }
  std::map<int64_t, int64_t> ids;
  try {
    SQLite::Statement attach(*db_, "ATTACH DATABASE ? AS source");  // not inside a transaction
    attach.bind(1, from.file_.string());
    attach.exec();
  } catch (const SQLite::Exception& e) {
    throw StoreError(fmt::format("{}: cannot read {}: {}", file_.string(), from.file_.string(), e.what()));
  }
  struct Detach {
    SQLite::Database& db;
    ~Detach() {
      try {
        db.exec("DETACH DATABASE source");
      } catch (const SQLite::Exception&) {
      }
    }
  } detach{*db_};
  write("import another store", [&] {
    SQLite::Statement programs(*db_,
                               "INSERT OR REPLACE INTO programs(idx, hash, origin, parent, config, verdict, reason, "
                               "new_features, wall_s, torch_s, finished_at, phases) SELECT idx + ?, hash, origin, parent, "
                               "config, verdict, reason, new_features, wall_s, torch_s, finished_at, phases FROM "
                               "source.programs");
    programs.bind(1, indexOffset);
    programs.exec();
    // One row at a time in the old ids' order, so the new ids keep it; each new id is read back.
    SQLite::Statement insert(*db_,
                             "INSERT INTO findings(program_idx, found_at, verdict, reason, signature_id, signature, "
                             "config, program_json, program_py, result, torch) SELECT program_idx + ?, found_at, "
                             "verdict, reason, signature_id, signature, config, program_json, program_py, result, torch "
                             "FROM source.findings WHERE id = ?");
    for (int64_t old : oldIds) {
      insert.reset();
      insert.bind(1, indexOffset);
      insert.bind(2, old);
      insert.exec();
      ids[old] = db_->getLastInsertRowid();
    }
    SQLite::Statement features(*db_,
                               "INSERT OR IGNORE INTO features(feature, first_idx) SELECT feature, first_idx + ? FROM "
                               "source.features");
    features.bind(1, indexOffset);
    features.exec();
  });
  return ids;
}

std::vector<std::string> FindingStore::signatureIds() const {
  std::vector<std::string> out;
  SQLite::Statement s(*db_, "SELECT DISTINCT signature_id FROM findings");
  while (s.executeStep()) out.push_back(s.getColumn(0).getString());
  return out;
}

}  // namespace tcfuzz
