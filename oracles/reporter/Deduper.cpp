#include "oracles/reporter/Deduper.h"

#include <algorithm>
#include <map>
#include <set>
#include <numeric>
#include <string_view>
#include <tuple>

namespace tcfuzz::oracles {
namespace {


/// Levenshtein distance over bytes (two-row DP; the texts are short normalized messages).
size_t editDistance(std::string_view a, std::string_view b) {
  if (a.size() < b.size()) std::swap(a, b);
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({above + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

double lineSimilarity(std::string_view a, std::string_view b) {
  size_t longest = std::max(a.size(), b.size());
  if (longest == 0) return 1.0;
  return 1.0 - static_cast<double>(editDistance(a, b)) / static_cast<double>(longest);
}

/// A finding's rank as a witness: smaller is better. Unknown sizes (<= 0) rank after known ones.
std::tuple<bool, int64_t, double, int64_t> witnessRank(const DedupInput& f) {
  return {f.witnessSize <= 0, f.witnessSize, f.foundAt, f.findingId};
}

/// Findings that share one signature key.
struct ExactGroup {
  std::string key;
  Signature signature;  ///< of the earliest finding (keys are canonical, so this only matters for odd escapes)
  std::vector<const DedupInput*> findings;
  double firstSeen = 0, lastSeen = 0;
  int64_t hits() const { return static_cast<int64_t>(findings.size()); }
};

/// Union-find over exact-group indices; the root of a set is its smallest index.
class DisjointSets {
 public:
  explicit DisjointSets(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), size_t{0}); }
  size_t find(size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  /// Joins the sets of a and b.
  void unite(size_t a, size_t b) {
    a = find(a);
    b = find(b);
    if (b < a) std::swap(a, b);
    parent_[b] = a;
  }

 private:
  std::vector<size_t> parent_;
};

/// Fields that two signatures must share to be near-duplicates; exact groups are compared only
/// within one bucket.
std::tuple<std::string_view, std::string_view, std::string_view, std::string_view, std::string_view> bucketOf(
    const Signature& s) {
  return {s.symptom, s.kind, s.failingMode, s.phase, s.exceptionType};
}

}  // namespace

size_t commonFrames(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<size_t> previous(b.size() + 1, 0), current(b.size() + 1, 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j)
      current[j] = a[i - 1] == b[j - 1] ? previous[j - 1] + 1 : std::max(previous[j], current[j - 1]);
    std::swap(previous, current);
  }
  return previous[b.size()];
}

double textSimilarity(const std::string& a, const std::string& b) {
  std::vector<std::string_view> linesA = splitLines(a), linesB = splitLines(b);
  size_t count = std::max(linesA.size(), linesB.size());
  if (count <= 1) return lineSimilarity(a.empty() ? "" : linesA[0], b.empty() ? "" : linesB[0]);
  double total = 0;
  for (size_t i = 0; i < std::min(linesA.size(), linesB.size()); ++i) total += lineSimilarity(linesA[i], linesB[i]);
  return total / static_cast<double>(count);  // unpaired lines count as 0
}

bool Deduper::nearDuplicate(const Signature& a, const Signature& b, std::string* rule) const {
  if (!a.raised() || bucketOf(a) != bucketOf(b)) return false;
  if (a.key() == b.key()) return false;  // an exact duplicate, not a near one
  const char* matched = nullptr;
  if (commonFrames(a.frames, b.frames) >= options_.minCommonFrames)
    matched = "frames";
  else if (!a.normalizedMessage.empty() && !b.normalizedMessage.empty() &&
           textSimilarity(a.normalizedMessage, b.normalizedMessage) > options_.messageSimilarity)
    matched = "message";
  if (matched && rule) *rule = matched;
  return matched != nullptr;
}

std::vector<BugGroup> Deduper::group(const std::vector<DedupInput>& findings) const {
  // 1. Exact groups, in a canonical order: first seen, then key.
  std::map<std::string, ExactGroup> byKey;
  for (const DedupInput& f : findings) {
    std::string key = f.signature.key();
    ExactGroup& g = byKey[key];
    if (g.findings.empty()) g.key = std::move(key);
    g.findings.push_back(&f);
  }
  std::vector<ExactGroup> exact;
  exact.reserve(byKey.size());
  for (auto& [key, g] : byKey) {
    std::sort(g.findings.begin(), g.findings.end(), [](const DedupInput* x, const DedupInput* y) {
      return std::tie(x->foundAt, x->findingId) < std::tie(y->foundAt, y->findingId);
    });
    g.signature = g.findings.front()->signature;
    g.firstSeen = g.findings.front()->foundAt;
    g.lastSeen = g.findings.front()->foundAt;
    for (const DedupInput* f : g.findings) g.lastSeen = std::max(g.lastSeen, f->foundAt);
    exact.push_back(std::move(g));
  }
  std::sort(exact.begin(), exact.end(), [](const ExactGroup& x, const ExactGroup& y) {
    return std::tie(x.firstSeen, x.key) < std::tie(y.firstSeen, y.key);
  });

  // 2. Single-linkage merging of near-duplicates, pairs visited in the canonical order. Every
  //    near-duplicate link is remembered with its rule, including links inside an already joined
  //    set, so that mergedBy does not depend on which link happened to join two sets first.
  DisjointSets sets(exact.size());
  std::vector<std::pair<size_t, std::string>> links;  // (one end of the link, rule)
  std::map<decltype(bucketOf(Signature{})), std::vector<size_t>> buckets;
  for (size_t i = 0; i < exact.size(); ++i)
    if (exact[i].signature.raised()) buckets[bucketOf(exact[i].signature)].push_back(i);
  for (const auto& [bucket, members] : buckets) {
    for (size_t x = 0; x < members.size(); ++x) {
      for (size_t y = x + 1; y < members.size(); ++y) {
        std::string rule;
        if (!nearDuplicate(exact[members[x]].signature, exact[members[y]].signature, &rule)) continue;
        sets.unite(members[x], members[y]);
        links.emplace_back(members[x], rule);
      }
    }
  }
  // Numeric divergences: a minimized program whose op multiset strictly contains that of exactly
  //    one minimal numeric bug is that bug, seen through ops it needed to show (a dtype that hides
  //    the error without an amplifying op, for example). Several candidates: ambiguous, kept apart.
  std::vector<size_t> numeric;
  for (size_t i = 0; i < exact.size(); ++i)
    if (isWrongResultSymptom(exact[i].signature.symptom) && !exact[i].signature.ops.empty()) numeric.push_back(i);
  auto strictlyContains = [&](size_t big, size_t small) {
    std::multiset<std::string> b(exact[big].signature.ops.begin(), exact[big].signature.ops.end());
    const auto& sm = exact[small].signature.ops;
    if (sm.size() >= b.size()) return false;
    for (const auto& op : sm) {
      auto it = b.find(op);
      if (it == b.end()) return false;
      b.erase(it);
    }
    return true;
  };
  std::vector<size_t> minimal;
  for (size_t i : numeric)
    if (std::none_of(numeric.begin(), numeric.end(), [&](size_t j) { return strictlyContains(i, j); }))
      minimal.push_back(i);
  for (size_t i : numeric) {
    std::vector<size_t> inside;
    for (size_t m : minimal)
      if (strictlyContains(i, m)) inside.push_back(m);
    if (inside.size() != 1) continue;
    sets.unite(i, inside.front());
    links.emplace_back(i, "ops");
  }

  std::map<size_t, std::vector<size_t>> components;  // root -> members, in canonical order
  for (size_t i = 0; i < exact.size(); ++i) components[sets.find(i)].push_back(i);
  std::map<size_t, std::set<std::string>> rulesUsed;  // root -> the rules of its links
  for (const auto& [index, rule] : links) rulesUsed[sets.find(index)].insert(rule);

  // 3. One bug per set.
  std::vector<BugGroup> bugs;
  bugs.reserve(components.size());
  for (const auto& [root, members] : components) {
    const ExactGroup* representative = &exact[members.front()];
    for (size_t i : members) {
      const ExactGroup& g = exact[i];
      if (std::make_tuple(-g.hits(), g.firstSeen, std::string_view(g.key)) <
          std::make_tuple(-representative->hits(), representative->firstSeen, std::string_view(representative->key)))
        representative = &g;
    }
    BugGroup bug;
    bug.signature = representative->signature;
    bug.id = bug.signature.id();
    bug.signatureIds.push_back(bug.id);
    bug.firstSeen = representative->firstSeen;
    bug.lastSeen = representative->lastSeen;
    const DedupInput* best = representative->findings.front();
    for (size_t i : members) {
      const ExactGroup& g = exact[i];
      if (&g != representative) bug.signatureIds.push_back(g.signature.id());
      bug.firstSeen = std::min(bug.firstSeen, g.firstSeen);
      bug.lastSeen = std::max(bug.lastSeen, g.lastSeen);
      for (const DedupInput* f : g.findings) {
        bug.findingIds.push_back(f->findingId);
        if (witnessRank(*f) < witnessRank(*best)) best = f;
      }
    }
    std::sort(bug.findingIds.begin(), bug.findingIds.end());
    bug.hits = static_cast<int64_t>(bug.findingIds.size());
    bug.bestFindingId = best->findingId;
    bug.bestWitnessSize = best->witnessSize;
    auto used = rulesUsed.find(root);
    if (used != rulesUsed.end()) {
      // "frames", "message", "frames+message" or "ops", in that order.
      std::string joined;
      for (const char* rule : {"frames", "message", "ops"})
        if (used->second.count(rule)) joined += (joined.empty() ? "" : "+") + std::string(rule);
      bug.mergedBy = joined;
    }
    bugs.push_back(std::move(bug));
  }
  std::sort(bugs.begin(), bugs.end(), [](const BugGroup& x, const BugGroup& y) {
    return std::make_tuple(-x.hits, x.firstSeen, std::string_view(x.id)) <
           std::make_tuple(-y.hits, y.firstSeen, std::string_view(y.id));
  });
  return bugs;
}

}  // namespace tcfuzz::oracles
