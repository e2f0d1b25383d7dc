#pragma once
// What a person watching a campaign sees: one screen redrawn in place on a terminal, plain log
// lines otherwise (a pipe, a log file, a cluster job).
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

namespace tcfuzz {

/// The campaign's figures at one moment.
struct CampaignSnapshot {
  double runSeconds = 0;         ///< this session
  int64_t programs = 0;          ///< tested, all sessions
  int64_t sessionPrograms = 0;
  double programsPerMinute = 0;  ///< this session
  std::map<std::string, int64_t> verdicts;
  int64_t findings = 0, uniqueSignatures = 0;
  double sinceLastNewSignature = -1;  ///< seconds; -1: none yet
  int64_t queue = 0, features = 0;
  int64_t generated = 0, mutated = 0, duplicates = 0, errors = 0;
  double torchShare = 0;         ///< share of worker time spent inside torch on the campaign's programs
  /// Share of worker time inside torch in any job (programs, confirmations, background triage, LLM lifts);
  /// 1 - this is the harness's share: IPC, saving outputs, comparing, and workers waiting for work.
  double jobShare = 0;
  int workers = 0;
  std::string device, outDir;
  std::vector<std::string> gpuLines;  ///< a GPU campaign: GpuStats::viewLines()
  uint64_t seed = 0;
};

/// Thread-safe: lanes report events while the campaign's main thread updates the figures.
class StatusView {
 public:
  /// `screen`: redraw a full screen (a terminal); otherwise print a summary line every `logInterval`.
  StatusView(std::ostream& out, bool screen, std::chrono::seconds logInterval = std::chrono::seconds(30));
  /// Shows the figures (throttled: a screen at most once a second, a log line once per interval).
  void update(const CampaignSnapshot& snapshot);
  /// Something worth a line of its own (a new signature, a quarantined file).
  void event(const std::string& line);
  /// The last figures, always printed.
  void finish(const CampaignSnapshot& snapshot, const std::string& why);

 private:
  std::string summaryLine(const CampaignSnapshot& s) const;
  void draw(const CampaignSnapshot& s);

  std::mutex mutex_;
  std::ostream& out_;
  bool screen_;
  std::chrono::seconds logInterval_;
  std::chrono::steady_clock::time_point lastShown_{};
  std::deque<std::string> recent_;
  CampaignSnapshot last_;
};

}  // namespace tcfuzz
