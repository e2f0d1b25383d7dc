#include "fuzzer/triage/ReleaseMatrix.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "oracles/reporter/MarkdownText.h"

namespace tcfuzz {

namespace md = oracles::markdown;

/// The CSV's reason: one line (a row per line for grep and wc), at most this many bytes.
constexpr size_t kReasonLimit = 1000;

std::string_view toString(RegressStatus status) {
  switch (status) {
    case RegressStatus::StillFailing: return "still-failing";
    case RegressStatus::Fixed: return "fixed";
    case RegressStatus::ChangedSignature: return "changed-signature";
    case RegressStatus::Error: return "error";
  }
  return "error";
}

bool isFailing(RegressStatus status) {
  return status == RegressStatus::StillFailing || status == RegressStatus::ChangedSignature;
}

std::vector<ReleaseTransition> releaseTransitions(const std::vector<RegressStatus>& history) {
  std::vector<ReleaseTransition> out;
  std::optional<bool> failing;   // the state of the last release that ran it
  std::optional<size_t> last;    // that release
  bool appeared = false;
  for (size_t i = 0; i < history.size(); ++i) {
    if (history[i] == RegressStatus::Error) continue;
    bool now = isFailing(history[i]);
    if (!failing) {
      if (now) out.push_back({ReleaseTransition::Kind::Appears, i, std::nullopt});
    } else if (now != *failing) {
      auto kind = !now ? ReleaseTransition::Kind::Fixed
                       : appeared ? ReleaseTransition::Kind::Reappears : ReleaseTransition::Kind::Appears;
      out.push_back({kind, i, last});
    }
    appeared = appeared || now;
    failing = now;
    last = i;
  }
  return out;
}

namespace {

std::string_view verb(ReleaseTransition::Kind kind) {
  switch (kind) {
    case ReleaseTransition::Kind::Appears: return "appears";
    case ReleaseTransition::Kind::Fixed: return "fixed";
    case ReleaseTransition::Kind::Reappears: return "reappears";
  }
  return "";
}

/// The releases a transition lies between: "2.11.0 or earlier" (none before), "2.15.0 (after
/// 2.9.1)" when error cells separate it from the last release of the old state.
std::string where(const ReleaseTransition& t, const std::vector<std::string>& labels) {
  if (!t.previous) return labels[t.column] + " or earlier";
  if (*t.previous + 1 != t.column) return fmt::format("{} (after {})", labels[t.column], labels[*t.previous]);
  return labels[t.column];
}

std::optional<size_t> lastRan(const std::vector<RegressStatus>& history) {
  for (size_t i = history.size(); i-- > 0;)
    if (history[i] != RegressStatus::Error) return i;
  return std::nullopt;
}

std::string csvField(const std::string& v) {
  if (v.find_first_of(",\"\n\r") == std::string::npos) return v;
  std::string q = "\"";
  for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string describeHistory(const std::vector<RegressStatus>& history, const std::vector<std::string>& labels) {
  std::optional<size_t> newest = lastRan(history);
  std::vector<std::string> errors;
  for (size_t i = 0; i < history.size(); ++i)
    if (history[i] == RegressStatus::Error) errors.push_back(labels[i]);
  if (!newest) return "no release ran it (error in every one)";
  std::vector<ReleaseTransition> transitions = releaseTransitions(history);
  std::vector<std::string> parts;
  for (const auto& t : transitions) parts.push_back(fmt::format("{} {}", verb(t.kind), where(t, labels)));
  std::string line;
  if (parts.empty()) {
    size_t oldest = 0;
    while (history[oldest] == RegressStatus::Error) ++oldest;
    line = oldest == *newest ? fmt::format("fails in no release tested ({})", labels[oldest])
                             : fmt::format("fails in no release tested ({} .. {})", labels[oldest], labels[*newest]);
  } else {
    line = fmt::format("{}", fmt::join(parts, ", "));
    if (isFailing(history[*newest])) {
      line += ", not fixed";
      if (transitions.back().column != *newest) line += fmt::format(" (still failing in {})", labels[*newest]);
    }
  }
  if (!errors.empty()) line += fmt::format("; error in {}", fmt::join(errors, ", "));
  return line;
}

ReleaseMatrix::ReleaseMatrix(std::vector<std::string> findings, std::vector<ReleaseColumn> columns)
    : findings_(std::move(findings)), columns_(std::move(columns)) {
  RegressCell notRun;
  notRun.reason = "not run";
  cells_.assign(findings_.size(), std::vector<RegressCell>(columns_.size(), notRun));
}

void ReleaseMatrix::setStartError(size_t col, const std::string& why) {
  columns_[col].startError = why.empty() ? std::string("its workers did not start") : why;
  columns_[col].torch = {};
  for (auto& row : cells_) {
    RegressCell& c = row[col];
    RegressCell e;
    e.expectedVerdict = c.expectedVerdict;
    e.expectedSignature = c.expectedSignature;
    e.config = c.config;
    e.reason = columns_[col].startError;
    c = std::move(e);
  }
}

void ReleaseMatrix::sortByRelease() {
  std::vector<size_t> order(columns_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const ReleaseColumn& x = columns_[a];
    const ReleaseColumn& y = columns_[b];
    if (x.started() != y.started()) return x.started();
    if (!x.started()) return false;
    return oracles::versionKey(x.torch.version) < oracles::versionKey(y.torch.version);
  });
  std::vector<ReleaseColumn> columns;
  for (size_t i : order) columns.push_back(columns_[i]);
  columns_ = std::move(columns);
  for (auto& row : cells_) {
    std::vector<RegressCell> sorted;
    for (size_t i : order) sorted.push_back(std::move(row[i]));
    row = std::move(sorted);
  }
}

std::string ReleaseMatrix::label(size_t col) const {
  const ReleaseColumn& c = columns_[col];
  if (!c.started()) return c.python;
  std::string release = oracles::releaseOf(c.torch.version);
  bool sameVersion = false, sameRelease = false;
  for (size_t j = 0; j < columns_.size(); ++j) {
    if (j == col || !columns_[j].started()) continue;
    if (columns_[j].torch.version == c.torch.version) sameVersion = true;
    else if (oracles::releaseOf(columns_[j].torch.version) == release) sameRelease = true;
  }
  if (sameVersion) return fmt::format("{} ({})", c.torch.version, c.python);
  if (sameRelease) return c.torch.version;
  return release;
}

std::vector<RegressStatus> ReleaseMatrix::history(size_t row) const {
  std::vector<RegressStatus> h;
  for (const auto& c : cells_[row]) h.push_back(c.status);
  return h;
}

std::string ReleaseMatrix::csv() const {
  std::string out =
      "name,status,expected_verdict,observed_verdict,expected_signature,observed_signature,config,torch,reason,"
      "python,torch_git\n";
  for (size_t r = 0; r < findings_.size(); ++r)
    for (size_t c = 0; c < columns_.size(); ++c) {
      const RegressCell& x = cells_[r][c];
      const ReleaseColumn& col = columns_[c];
      out += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", csvField(findings_[r]), toString(x.status),
                         csvField(x.expectedVerdict), csvField(x.observedVerdict), csvField(x.expectedSignature),
                         csvField(x.observedSignature), csvField(x.config), csvField(col.torch.version),
                         csvField(md::oneLine(x.reason, kReasonLimit)), csvField(col.python),
                         csvField(col.torch.git));
    }
  return out;
}

std::string ReleaseMatrix::markdown(bool histories) const {
  std::vector<std::string> labels;
  for (size_t c = 0; c < columns_.size(); ++c) labels.push_back(label(c));

  std::string out = "# Known findings across torch releases\n\n";
  out += fmt::format("{} known finding(s) under {} interpreter(s), oldest torch first.\n\n", findings_.size(),
                     columns_.size());
  out += "| finding |";
  for (const auto& l : labels) out += " " + md::cell(l) + " |";
  if (histories) out += " appears in | fixed in |";
  out += "\n|---|";
  for (size_t c = 0; c < columns_.size(); ++c) out += "---|";
  if (histories) out += "---|---|";
  out += "\n";
  for (size_t r = 0; r < findings_.size(); ++r) {
    out += "| " + md::cell(findings_[r], true) + " |";
    for (size_t c = 0; c < columns_.size(); ++c) out += fmt::format(" {} |", toString(cells_[r][c].status));
    if (histories) {
      std::vector<RegressStatus> h = history(r);
      std::optional<size_t> newest = lastRan(h);
      std::vector<std::string> appears, fixed;
      for (const auto& t : releaseTransitions(h)) {
        if (t.kind == ReleaseTransition::Kind::Fixed) fixed.push_back(labels[t.column]);
        else appears.push_back(t.previous ? labels[t.column] : labels[t.column] + " or earlier");
      }
      bool endsFailing = newest && isFailing(h[*newest]);
      std::string appearsCell = !newest ? "?" : appears.empty() ? "none" : fmt::format("{}", fmt::join(appears, ", "));
      std::string fixedCell = !newest           ? "?"
                              : !fixed.empty()  ? fmt::format("{}{}", fmt::join(fixed, ", "), endsFailing ? " (then reappears)" : "")
                              : endsFailing     ? "not fixed"
                                                : "none";
      out += " " + md::cell(appearsCell) + " | " + md::cell(fixedCell) + " |";
    }
    out += "\n";
  }
  out += "\n**still-failing**: the recorded signature again; **fixed**: no finding any more; "
         "**changed-signature**: still a finding, with another signature; **error**: it could not run "
         "(the CSV's reason column says why).\n";

  out += "\n## Versions\n\n| column | torch | git | interpreter |\n|---|---|---|---|\n";
  for (size_t c = 0; c < columns_.size(); ++c) {
    const ReleaseColumn& col = columns_[c];
    std::string torch = col.started() ? col.torch.summary() : "did not start: " + col.startError;
    out += fmt::format("| {} | {} | {} | {} |\n", md::cell(labels[c]), md::cell(torch),
                       md::cell(col.torch.git, true), md::cell(col.python, true));
  }

  if (histories) {
    out += "\n## Releases\n\n"
           "Oldest first, a finding fails in a release where it is still-failing or changed-signature, and "
           "not where it is fixed; error cells are skipped. It *appears* in the oldest release that fails (\"or "
           "earlier\" when that is the oldest one that ran it), is *fixed* in the first release that does not "
           "fail after one that does, and *reappears* in the first that fails again after a fix. Every "
           "finding ran under every release (no bisection).\n\n";
    for (size_t r = 0; r < findings_.size(); ++r)
      out += fmt::format("- {}: {}\n", md::code(findings_[r]), describeHistory(history(r), labels));
  }
  return out;
}

}  // namespace tcfuzz
