#pragma once
// Groups raw findings into bugs (docs/architecture.md, "Triage"): an exact signature key first, then
// near-duplicate grouping of the exact groups (ClusterFuzz's crash-state similarity):
//   - same symptom, kind, failing mode, phase and exception type, and
//   - at least `minCommonFrames` frames in the longest common subsequence of their frames, or a
//     normalized-message similarity (Levenshtein ratio, line by line) above `messageSimilarity`
//     between two non-empty messages (an empty message says nothing: two bare AssertionErrors
//     raised in different places are different bugs).
// Numeric divergences (signed by the minimized program's op multiset) also merge by rule "ops": a
// multiset that strictly contains the multiset of exactly one minimal numeric group joins it (the
// same faulty op, minimized under a dtype or input that needed one more op to show the error).
// Timeouts, out-of-memory and signals group by their exact key only.
// Merging is single linkage over the exact groups, visited in a canonical order (first seen, then
// key), so the result does not depend on the order of the input.
#include <cstdint>
#include <string>
#include <vector>

#include "oracles/judge/Signature.h"

namespace tcfuzz::oracles {

/// One raw finding as the deduper sees it.
struct DedupInput {
  int64_t findingId = 0;
  Signature signature;       ///< for numeric findings: the signature of the minimized program when known
  double foundAt = 0;        ///< unix time
  int64_t witnessSize = 0;   ///< nodes of the (minimized, when known) program; smaller is a better witness; <= 0: unknown
};

/// One bug: a set of exact signatures judged to be the same failure.
struct BugGroup {
  std::string id;                        ///< id() of the representative signature
  Signature signature;                   ///< the representative: the exact group with most hits, then earliest, then smallest key
  std::vector<std::string> signatureIds; ///< every exact signature id in the group, representative first, then by first seen
  std::vector<int64_t> findingIds;       ///< ascending
  int64_t hits = 0;                      ///< number of findings
  double firstSeen = 0, lastSeen = 0;
  int64_t bestFindingId = 0;             ///< the smallest known witness (ties: the earliest found, then the smallest id)
  int64_t bestWitnessSize = 0;
  std::string mergedBy = "exact";        ///< "exact" (one exact group), else the rules of the near-duplicate links
                                         ///< among its exact groups joined by '+': "frames", "message", "ops"
};

struct DeduperOptions {
  size_t minCommonFrames = 2;
  double messageSimilarity = 0.8;
};

class Deduper {
 public:
  explicit Deduper(DeduperOptions options = {}) : options_(options) {}

  /// Groups findings; deterministic for a given input set whatever its order. Groups are sorted by
  /// hits (descending), then first seen, then id.
  std::vector<BugGroup> group(const std::vector<DedupInput>& findings) const;

  /// Whether two signatures with different keys are the same bug by the near-duplicate rules (false
  /// for equal keys). When true and `rule` is given, it receives "frames" (checked first) or "message".
  bool nearDuplicate(const Signature& a, const Signature& b, std::string* rule = nullptr) const;

 private:
  DeduperOptions options_;
};

/// Length of the longest common subsequence of two frame lists.
size_t commonFrames(const std::vector<std::string>& a, const std::vector<std::string>& b);
/// Levenshtein similarity of two texts in [0, 1]: 1 - distance / max(length); 1 for two empty texts.
/// Multi-line texts are compared line by line (lines paired in order) and the mean is returned.
double textSimilarity(const std::string& a, const std::string& b);

}  // namespace tcfuzz::oracles
