#pragma once
// findings.sqlite: the campaign's source of truth. Every tested program, every raw finding, the
// feature set and the queue are committed here before anything else happens to them, so that a
// campaign killed at any moment (kill -9 included) resumes without losing a finding.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "oracles/infra/AtomicFile.h"  // DiskFullError: a full disk stops the campaign with its state saved
#include "oracles/infra/SecretRedactor.h"

namespace SQLite {
class Database;
}

namespace tcfuzz {

/// The store cannot be opened or written (message names the file and SQLite's reason).
struct StoreError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One tested program.
struct ProgramRecord {
  int64_t index = 0;
  std::string hash;          ///< Graph::contentHash
  std::string origin;        ///< "grammar" or "mutation:<mutator>"
  std::string parent;        ///< queue entry name of the parent, "" for fresh programs
  std::string config;        ///< JSON: the non-default compile options
  std::string verdict, reason;
  int newFeatures = 0;
  double wallSeconds = 0;    ///< submit to verdict
  double torchSeconds = 0;   ///< summed child wall time of its jobs
  double finishedAt = 0;     ///< unix time
  /// JSON: where the time went (Campaign::phaseRecord): the compiled job's compile phases, run and
  /// backward seconds, the eager and fp64 job seconds, the worker process (persistent, jobs before),
  /// the confirmation; "" is stored as {}.
  std::string phases;
};

/// One raw finding, self-contained: the program, its config, the runs and the signature.
struct FindingRecord {
  int64_t id = 0;            ///< assigned by the store
  int64_t programIndex = 0;
  double foundAt = 0;        ///< unix time
  std::string verdict, reason;
  std::string signatureId;
  std::string signature;     ///< JSON
  std::string config;        ///< JSON
  std::string programJson;   ///< the IR
  std::string programPy;     ///< the emitted program
  std::string result;        ///< JSON of the whole test (runs and comparison)
  std::string torch;         ///< the worker torch's version it was found on ("" in stores before schema 3)
};

/// One queue entry (the file queue/<name>.json holds the same IR).
struct QueueRecord {
  std::string name;          ///< "id:000012,src:000003,op:replace_op"
  int64_t programIndex = 0;
  std::string hash;
  std::string parent;
  int newFeatures = 0;
  double addedAt = 0;
  std::string programJson;
};

/// The triage of one exact signature: its minimized, ablated and verified case (oracles/reporter/BugReport's
/// parts as JSON in `data`), or why it failed.
struct TriageRecord {
  std::string signatureId;       ///< the raw (exact) signature triaged
  int64_t findingId = 0;         ///< the witness that was minimized
  std::string status;            ///< "done", "duplicate" (reduced to a known bug's ops), "unreproducible" or "failed"
  std::string finalSignatureId;  ///< of the minimized program ("" unless done)
  std::string finalSignature;    ///< JSON ("{}" unless done)
  std::string data;              ///< JSON: repro case, minimizer stats, ablation, bisect, verification, error
  double updatedAt = 0;          ///< unix time
};

/// Counts rebuilt from the store (a resumed campaign starts from these).
struct StoreTotals {
  int64_t programs = 0;
  int64_t findings = 0;
  int64_t uniqueSignatures = 0;
  double lastNewSignatureAt = 0;  ///< unix time, 0 if none
  double lastFindingAt = 0;
  int64_t maxProgramIndex = -1;
  std::map<std::string, int64_t> verdicts;
  std::map<std::string, int64_t> origins;
  double torchSeconds = 0;
};

/// A SQLite database in WAL mode. Not thread-safe: the campaign serializes calls.
class FindingStore {
 public:
  /// Opens or creates the store; throws StoreError (or DiskFullError). Every text value written is
  /// masked with `secrets` first (the default masks nothing: a store that is only read).
  explicit FindingStore(const std::filesystem::path& file, SecretRedactor secrets = {});
  ~FindingStore();
  FindingStore(const FindingStore&) = delete;
  FindingStore& operator=(const FindingStore&) = delete;

  void setMeta(const std::string& key, const std::string& value);
  std::optional<std::string> meta(const std::string& key) const;

  /// Commits a tested program with its findings, the features it added and its queue entry, in one
  /// transaction. Fills in the findings' ids. Throws DiskFullError or StoreError.
  void recordProgram(const ProgramRecord& program, std::vector<FindingRecord>& findings,
                     const std::vector<std::string>& newFeatures, const std::optional<QueueRecord>& queued);
  /// Adds a queue entry found on disk only (a file a user placed in queue/).
  void addQueueRecord(const QueueRecord& entry);
  /// Removes a queue entry whose file was quarantined.
  void removeQueueRecord(const std::string& name);

  StoreTotals totals() const;
  std::vector<std::string> features() const;
  std::vector<QueueRecord> queue() const;
  std::vector<FindingRecord> findings() const;
  /// Inserts or replaces the triage row of record.signatureId (one transaction).
  void saveTriage(const TriageRecord& record);
  std::vector<TriageRecord> triageRecords() const;
  /// Gives finding `findingId` the signature `signatureId` (`signature`: its JSON): tcfuzz triage --resign.
  void updateSignature(int64_t findingId, const std::string& signatureId, const std::string& signature);
  /// Removes the triage row of `signatureId`, if any (its findings are then triaged again).
  void removeTriage(const std::string& signatureId);
  /// Signature ids seen so far.
  std::vector<std::string> signatureIds() const;
  /// Copies every program (its index shifted by `indexOffset`), raw finding (a new id, in the order of
  /// the old ones) and feature of `from` into this store in one transaction: a night's merge of its
  /// shards (rows are copied as `from` stored them, already masked). The queue, triage rows and meta
  /// are not copied. Returns `from`'s finding ids mapped to their new ids. Throws StoreError.
  std::map<int64_t, int64_t> importFrom(const FindingStore& from, int64_t indexOffset);
  const std::filesystem::path& file() const { return file_; }

 private:
  template <class F>
  void write(const char* what, F&& body);
  /// The queue row's INSERT, inside a transaction of the caller.
  void insertQueueRow(const QueueRecord& entry);

  std::filesystem::path file_;
  SecretRedactor secrets_;
  std::unique_ptr<SQLite::Database> db_;
};

}  // namespace tcfuzz
