#pragma once
// The AFL-style output directory of a campaign (docs/architecture.md, "Campaign output directory"):
//   queue/       interesting programs (IR .json, and the emitted .py beside it)
//   crashes/     one folder per finding signature: the first witness (program, config, meta)
//   quarantine/  queue or stats files that could not be read, moved aside
//   fuzzer_stats key : value lines, replaced atomically (temp file + rename)
//   plot_data    CSV over time
//   findings.sqlite, cmdline, work/ (job directories and the Inductor cache; scratch)
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzzer/campaign/output/FindingStore.h"
#include "oracles/infra/AtomicFile.h"
#include "oracles/infra/SecretRedactor.h"
#include "generators/ir/Graph.h"

namespace tcfuzz {

/// The directory cannot be used as asked (exists already, is locked, is not a campaign).
struct CampaignDirError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One line of plot_data.
struct PlotRow {
  double unixTime = 0, runSeconds = 0;
  int64_t programs = 0;
  double programsPerMinute = 0;
  int64_t queue = 0, features = 0, findings = 0, uniqueSignatures = 0;
  double torchShare = 0;
};

class CampaignOutput {
 public:
  enum class OpenMode { Fresh, Resume };
  /// Fresh: creates the layout; refuses a directory that already holds a campaign. Resume: requires
  /// one. Either way takes an exclusive lock (a second tcfuzz on the same directory is refused).
  /// Every file it writes is masked with `secrets` first.
  CampaignOutput(std::filesystem::path root, OpenMode mode, SecretRedactor secrets);
  ~CampaignOutput();
  CampaignOutput(const CampaignOutput&) = delete;
  CampaignOutput& operator=(const CampaignOutput&) = delete;

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path queueDir() const { return root_ / "queue"; }
  std::filesystem::path crashesDir() const { return root_ / "crashes"; }
  std::filesystem::path quarantineDir() const { return root_ / "quarantine"; }
  std::filesystem::path workDir() const { return root_ / "work"; }
  std::filesystem::path storePath() const { return root_ / "findings.sqlite"; }
  /// The scheduler's arm statistics (CostAwareScheduler::toJson), carried across --resume.
  std::filesystem::path schedulePath() const { return root_ / "schedule.json"; }

  /// Appends the command line of this session to `cmdline` (a resumed campaign adds a line).
  void appendCmdline(const std::vector<std::string>& argv);

  /// Writes queue/<name>.json (and .py) atomically.
  void writeQueueEntry(const std::string& name, const gen::Graph& graph, const std::string& python);
  /// Where an LLM program's IR is kept (relative to root()): its header's replay line names it.
  static std::string llmProgramPath(int64_t index);
  /// Writes `graph` at llmProgramPath(index).
  void writeLlmProgram(int64_t index, const gen::Graph& graph);
  /// A finding only a persistent worker showed (Verdict::StateLeakSuspect): state-leaks/<index>.py and
  /// its test result as <index>.json. Not a torch bug; kept for whoever looks after the harness.
  void writeStateLeakSuspect(int64_t index, const std::string& python, const nlohmann::json& result);

  /// A queue file that parsed.
  struct QueueFile {
    std::string name;
    gen::Graph graph;
  };
  /// Reads every queue/*.json. A file that does not parse as an IR is moved to quarantine/ and
  /// described in `problems` (file, reason, where it went); the rest are returned in name order.
  std::vector<QueueFile> loadQueue(std::vector<std::string>& problems);

  /// Writes crashes/<signature id>/ for the first witness of a signature: program.py, program.json,
  /// result.json and meta.json. Leaves an existing folder alone (a later hit of the same signature).
  void writeFindingFolder(const FindingRecord& finding);
  bool hasFindingFolder(const std::string& signatureId) const;

  /// Replaces fuzzer_stats with `key : value` lines.
  void writeStats(const std::vector<std::pair<std::string, std::string>>& stats);
  /// Checks fuzzer_stats: a file whose lines are not all `key : value` is moved to quarantine/ and
  /// described in `problems`. Returns what it holds when it is sound.
  std::optional<std::map<std::string, std::string>> checkStats(std::vector<std::string>& problems);
  /// Appends a line to plot_data (writing the header first when the file is new).
  void appendPlot(const PlotRow& row);

  /// Moves `file` into quarantine/ under a unique name and returns the new path.
  std::filesystem::path quarantine(const std::filesystem::path& file);
  const SecretRedactor& secrets() const { return secrets_; }

 private:
  /// writeFileAtomically of `content` masked: the one way this class writes a whole file.
  void writeMasked(const std::filesystem::path& path, std::string_view content) const;

  std::filesystem::path root_;
  SecretRedactor secrets_;
  int lockFd_ = -1;
};

}  // namespace tcfuzz
