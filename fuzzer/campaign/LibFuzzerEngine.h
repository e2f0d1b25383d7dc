#pragma once
// `tcfuzz fuzz --engine libfuzzer`: libFuzzer (LLVMFuzzerRunDriver, Debian's clang runtime) drives the
// search over serialized IR programs. Its coverage is the compiler's, not tcfuzz's: each judged
// program's features (runFeatures: ops x dtypes, Inductor's lowerings, fallbacks, patterns, fusions,
// kernels, graph breaks ...) are hashed into libFuzzer's extra counters, so a program that makes the
// compiler do something new joins libFuzzer's corpus. tcfuzz's own code is not instrumented: its
// branches say nothing about the compiler, and would keep inputs for what our repair code did.
// The mutator and crossover are tcfuzz's named mutators with repair, so every input stays a valid
// program; the campaign (store, queue, findings, triage, reports) is the native loop's.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fuzzer/campaign/Campaign.h"
#include "generators/Generator.h"
#include "generators/Mutator.h"
#include "generators/OpCatalog.h"

namespace tcfuzz {

/// The libFuzzer engine's fixed parts.
struct LibFuzzerSettings {
  std::filesystem::path dir;          ///< OUT/libfuzzer: corpus/, seeds/, artifacts/, features.jsonl, libfuzzer.log
  uint64_t seed = 0;                  ///< the campaign's seed (libFuzzer's -seed and the seed programs)
  int seedPrograms = 16;              ///< grammar programs written to seeds/ when it is empty
  std::vector<gen::Graph> seedCorpus; ///< written to seeds/ instead of those, when given (--seed-corpus)
  size_t maxLen = 1 << 16;            ///< libFuzzer's -max_len: bytes of one serialized program
  int configsPerInput = 1;            ///< compile configurations each input is judged under, at once (-j)
  std::vector<std::string> extraArgs; ///< more libFuzzer flags (--libfuzzer-arg), after tcfuzz's own
};

/// The extra-counter index of a feature string (FNV-1a, mixed, into kLibFuzzerCounters buckets).
size_t counterIndex(const std::string& feature);
/// Buckets of libFuzzer's extra counters that compiler features are hashed into.
inline constexpr size_t kLibFuzzerCounters = 1 << 16;
/// Whether a feature feeds the counters: "cfg:" features are the sampled compile configuration, not
/// something the program made the compiler do, so they are left out.
bool isCoverageFeature(const std::string& feature);

class LibFuzzerEngine {
 public:
  /// `finish` ends the session once the campaign stops (the native loop's epilogue: triage, final
  /// stats, messages) and returns the exit code. libFuzzer's loop never returns, so run() exits with it.
  LibFuzzerEngine(const gen::OpCatalog& catalog, const gen::GenPolicy& generation, Campaign& campaign,
                  LibFuzzerSettings settings, std::function<int(CampaignEnd)> finish);
  LibFuzzerEngine(const LibFuzzerEngine&) = delete;
  LibFuzzerEngine& operator=(const LibFuzzerEngine&) = delete;

  /// Seeds the corpus when it is new, reads the feature record of a resumed one, and runs libFuzzer's
  /// loop until the campaign stops; then calls `finish` and exits the process with its code.
  [[noreturn]] void run();
  /// The libFuzzer command line run() passes (argv[0] first), for the log and the tests.
  std::vector<std::string> libFuzzerArgs() const;

  // The bodies of libFuzzer's C entry points (one engine per process runs at a time).
  int testOneInput(const uint8_t* data, size_t size);
  size_t mutate(uint8_t* data, size_t size, size_t maxSize, unsigned seed);
  size_t crossOver(const uint8_t* a, size_t sizeA, const uint8_t* b, size_t sizeB, uint8_t* out, size_t maxOut,
                   unsigned seed);

  /// fuzzer_stats lines: engine, corpus size, counter features, cache hits, rejected inputs, mutators.
  std::vector<std::pair<std::string, std::string>> statsLines() const;

 private:
  /// The IR program in libFuzzer's bytes, repaired; nullopt when they are not one.
  std::optional<gen::Graph> programOf(const uint8_t* data, size_t size);
  /// `g` serialized into `out` (at most `maxSize` bytes); 0 when it does not fit.
  static size_t serialize(const gen::Graph& g, uint8_t* out, size_t maxSize);
  void setCounters(const std::vector<std::string>& features);
  void seedCorpus();
  void loadFeatureRecord();
  void recordFeatures(const std::string& hash, const std::vector<std::string>& features);
  [[noreturn]] void end();

  const gen::OpCatalog& catalog_;
  gen::GenPolicy generation_;
  Campaign& campaign_;
  LibFuzzerSettings settings_;
  std::function<int(CampaignEnd)> finish_;
  gen::Generator generator_;
  gen::Mutator mutator_;

  mutable std::mutex mutex_;  // guards the figures below (stats are read from the supervisor thread)
  std::unordered_map<std::string, std::vector<std::string>> judged_;  ///< content hash -> features
  std::set<uint32_t> counterFeatures_;  ///< libFuzzer's features from our counters: index * 8 + bucket
  int64_t executions_ = 0, replayed_ = 0, rejected_ = 0, notJudged_ = 0, mutations_ = 0, mutationFallbacks_ = 0;
};

}  // namespace tcfuzz
