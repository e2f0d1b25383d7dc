#pragma once
// What each origin of programs costs and yields in a campaign session: grammar generation, mutation,
// and each LLM strategy. The yield per CPU-second it computes is the figure fuzzer_stats and
// scripts/bench report per origin, and the LLM bandit's reward (LlmProposer::feedback).
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tcfuzz {

/// Per-origin tallies. Not thread-safe: the campaign guards it. A ledger with another prefix tallies programs
/// by another key the same way (the campaign's "entry" ledger: by the compiled run's entry point).
class OriginLedger {
 public:
  /// `prefix` starts each fuzzer_stats key; only the "origin" ledger adds llm_cpu_share and yield_per_cpu_s.
  explicit OriginLedger(std::string prefix = "origin") : prefix_(std::move(prefix)) {}

  /// The ledger's key for a program's origin: "grammar", "mutation" (every mutator together) or
  /// "llm:<strategy>".
  static std::string keyOf(const std::string& programOrigin);

  /// One tested program of `origin` (a key or a program origin): the CPU seconds testing it took
  /// (its three runs and their confirmation), the features and signatures it added, its size in nodes
  /// and how many of them reach no output.
  void record(const std::string& origin, double cpuSeconds, int newFeatures, int newSignatures, int nodes = 0,
              int deadNodes = 0);
  /// The LLM's own CPU seconds so far per strategy (server time and lift jobs, rejected replies
  /// included), charged to "llm:<strategy>" beside the testing time. Replaces the previous figures.
  void setLlmCpu(const std::map<std::string, double>& cpuByStrategy);

  /// (new features + signatureWorth x new signatures) per CPU-second over every origin, the LLM's CPU
  /// included; 0 before any CPU was spent.
  double rate() const;
  /// Per origin: programs, mean_nodes, dead_nodes, cpu_s (llm_cpu_s of it for LLM strategies), new_features, new_signatures,
  /// features_per_cpu_s, signatures_per_cpu_hour, yield_per_cpu_s; and "llm_cpu_share" overall.
  nlohmann::json toJson() const;
  /// toJson() as fuzzer_stats lines: <prefix>_<key>_<figure> (key with ':' and '+' spelt '_'), llm_cpu_share.
  std::vector<std::pair<std::string, std::string>> statsLines() const;

  static constexpr double kSignatureWorth = 10;  ///< a new signature, in new features (as LlmProposer's)

 private:
  struct Tally {
    int64_t programs = 0, newFeatures = 0, newSignatures = 0, nodes = 0, deadNodes = 0;
    double testSeconds = 0, llmSeconds = 0;
    double cpu() const { return testSeconds + llmSeconds; }
  };
  std::string prefix_;
  std::map<std::string, Tally> tallies_;
};

}  // namespace tcfuzz
