#pragma once
// tcfuzz triage --resign: every raw finding of a store gets its signature again from its recorded
// runs under today's rules (oracles/judge/Signature), so that an old campaign's bugs split (or merge) as a
// new one's would: two C++ codegen bugs once filed under one "C++ compile error" become two.
#include <map>
#include <set>
#include <string>

#include "fuzzer/campaign/output/FindingStore.h"

namespace tcfuzz {

/// What a re-signing changed.
struct ResignSummary {
  int findings = 0;     ///< findings read
  int changed = 0;      ///< findings whose signature id changed
  int unreadable = 0;   ///< findings whose recorded result or program could not be read (left as they were)
  int triageRowsDropped = 0;  ///< triage rows of signatures no finding carries any more
  std::map<std::string, std::set<std::string>> splits;  ///< old signature id -> the new ids its findings got

  /// "re-signed N finding(s): M changed (old -> new, new), K unreadable; T triage row(s) dropped".
  std::string describe() const;
};

/// Recomputes each finding's signature from its stored result (the runs' status, phase, exception and
/// signal as recorded, the verdict, the program's ops) and stores the ones that changed; then drops the
/// triage rows of signature ids no finding has any more, so that triage picks up the new ones. A cache-only
/// finding keeps its "cache-only" kind; a finding whose recorded traceback was cut keeps its frames.
/// Idempotent: a second pass changes nothing.
ResignSummary resignFindings(FindingStore& store);

}  // namespace tcfuzz
