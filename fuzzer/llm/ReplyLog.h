#pragma once
// The reply log: every LLM reply and what became of it, appended as one JSON line to replies.jsonl
// (for people reading a campaign), and the per-strategy counters that fuzzer_stats and bench report
// (requests, tokens, replies, valid, rejections by reason, testing outcomes, CPU).
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "generators/llm/PromptStrategy.h"
#include "oracles/infra/SecretRedactor.h"

namespace tcfuzz {

/// Counters of one strategy (all strategies together under "all").
struct LlmStrategyStats {
  int64_t requests = 0, failedRequests = 0, promptTokens = 0, completionTokens = 0;
  int64_t replies = 0;      ///< replies that came back (each is valid or rejected)
  int64_t valid = 0;        ///< became a valid program (after repair)
  int64_t shapeRepaired = 0, eagerRepaired = 0;
  int64_t tested = 0, newFeatures = 0, findings = 0, newSignatures = 0;
  int64_t featuresFound = 0;  ///< new features summed over its tested programs (newFeatures counts programs)
  /// CPU seconds spent on its requests and lift jobs, rejected replies included: the local server's CPU
  /// (a remote endpoint's is not ours and not counted), the sandboxed lift runs. Testing is counted by the campaign.
  double cpuSeconds = 0;
  double requestSeconds = 0;  ///< wall seconds waiting for replies
  std::map<std::string, int64_t> rejections;  ///< reason -> count
  double validRate() const { return replies > 0 ? static_cast<double>(valid) / static_cast<double>(replies) : 0; }
  nlohmann::json toJson() const;
};

/// The on-disk log of LLM replies and the counters of every strategy. Thread-safe: each request
/// thread counts its own requests and replies, the campaign's thread counts testing outcomes.
/// A line that cannot be written (a full disk) is lost; nothing else is.
class ReplyLog {
 public:
  /// Appends to `file` (its folder must exist), masking `secrets`; counts every strategy of `book`
  /// (so that each has a stats entry from the start), leaving repair strategies out of "all"'s
  /// reply, valid and testing figures (a repair reply finishes another strategy's proposal).
  ReplyLog(std::filesystem::path file, SecretRedactor secrets, const gen::PromptBook& book);

  /// One line: id, time, strategy, target, outcome, detail (first 500 chars), reply (first 4000).
  void append(int64_t id, const std::string& strategy, const std::string& target, const std::string& reply,
              const std::string& outcome, const std::string& detail);

  /// A request was sent.
  void countRequest(const std::string& strategy);
  /// A request was answered after `wallSeconds`, having cost `cpuSeconds` of the local server.
  void countAnswered(const std::string& strategy, double cpuSeconds, double wallSeconds, int64_t promptTokens,
                     int64_t completionTokens);
  /// A request failed (or was cancelled at shutdown) after `wallSeconds` and `cpuSeconds`.
  void countFailed(const std::string& strategy, double cpuSeconds, double wallSeconds, bool cancelled);
  /// A reply came back (valid or not).
  void countReply(const std::string& strategy);
  /// CPU seconds spent for the strategy outside its requests (its lift jobs).
  void addCpu(const std::string& strategy, double seconds);
  /// A reply became a valid program, `shapeRepaired` by shape repair, `eagerRepaired` after repair rounds
  /// (a repair strategy's own reply that fixed a program counts as valid for it, neither flag set).
  void countValid(const std::string& strategy, bool shapeRepaired, bool eagerRepaired);
  /// A reply was rejected for `reason` (counted by a stats-safe key of it); the calling thread's
  /// last rejection becomes "reason: detail" until takeRejection().
  void reject(const std::string& strategy, const std::string& reason, const std::string& detail);
  /// The calling thread's last rejection ("" when none), cleared.
  std::string takeRejection();
  /// What testing one of the strategy's proposals gave.
  void countTesting(const std::string& strategy, bool tested, int newFeatures, int findings, bool newSignature);

  /// {"strategies": {name: counters}, "all": the sum} (LlmStrategyStats::toJson's keys).
  nlohmann::json toJson() const;

 private:
  std::filesystem::path file_;
  SecretRedactor secrets_;
  std::set<std::string> repairStrategies_;
  mutable std::mutex mutex_;  // guards the counters and rejections
  std::map<std::string, LlmStrategyStats> stats_;
  std::map<std::thread::id, std::string> lastRejection_;  ///< per request thread
  std::mutex fileMutex_;  // one line at a time
};

}  // namespace tcfuzz
