#pragma once
// Known findings re-run under several torch releases (`tcfuzz regress`): the matrix of their
// statuses (a row per finding, a column per interpreter), each finding's history across releases
// (where it appears, is fixed, reappears), and the CSV and markdown forms of both. No workers here:
// the regress command runs the findings and fills the matrix.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oracles/infra/TorchInfo.h"

namespace tcfuzz {

/// What re-running a known finding under one torch showed.
enum class RegressStatus { StillFailing, Fixed, ChangedSignature, Error };
/// "still-failing", "fixed", "changed-signature", "error".
std::string_view toString(RegressStatus status);
/// Still a finding in that torch: still-failing or changed-signature.
bool isFailing(RegressStatus status);

/// One known finding under one torch: one CSV row.
struct RegressCell {
  RegressStatus status = RegressStatus::Error;
  std::string expectedVerdict, observedVerdict;
  std::string expectedSignature, observedSignature;  ///< oracles::Signature ids
  std::string config;  ///< the finding's recorded compile config (JSON)
  std::string reason;  ///< the verdict's reason, or why it could not run
};

/// One interpreter a regress run used: a column of the matrix.
struct ReleaseColumn {
  std::string python;        ///< the interpreter, as given
  oracles::TorchInfo torch;  ///< its workers' hello; unknown when they did not start
  std::string startError;    ///< why its workers did not start; empty once they did

  bool started() const { return startError.empty() && torch.known(); }
};

/// A change in a finding's history: at `column`, the first release (of those that ran it, oldest
/// first) showing the new state. Error cells say nothing: they are skipped.
struct ReleaseTransition {
  enum class Kind {
    Appears,    ///< the oldest release in which it fails
    Fixed,      ///< the first release that does not fail after one that does
    Reappears,  ///< the first release that fails again after a fix
  };
  Kind kind;
  size_t column;
  /// The last release showing the old state; none for an Appears in the oldest release that ran it
  /// (the finding may be older still: "appears 2.4.1 or earlier").
  std::optional<size_t> previous;
};

/// The transitions of one history (statuses ordered oldest first), oldest first.
std::vector<ReleaseTransition> releaseTransitions(const std::vector<RegressStatus>& history);

/// One line naming every transition of `history` by `labels` (parallel to it, oldest first):
/// "appears 2.9.1, fixed 2.11.0, reappears 2.15.0". A transition across error cells names the
/// last release of the old state ("fixed 2.15.0 (after 2.9.1)"); a history that ends failing
/// adds "not fixed" (and "(still failing in <newest>)" when that is not its last transition); one
/// that never fails says "fails in no release tested"; error cells are listed at the end.
std::string describeHistory(const std::vector<RegressStatus>& history, const std::vector<std::string>& labels);

/// Known findings (rows) under interpreters (columns); every cell starts as an error "not run".
class ReleaseMatrix {
 public:
  ReleaseMatrix(std::vector<std::string> findings, std::vector<ReleaseColumn> columns);

  size_t findingCount() const { return findings_.size(); }
  size_t columnCount() const { return columns_.size(); }
  const std::string& finding(size_t row) const { return findings_[row]; }
  const ReleaseColumn& column(size_t col) const { return columns_[col]; }
  const RegressCell& cell(size_t row, size_t col) const { return cells_[row][col]; }
  void setCell(size_t row, size_t col, RegressCell cell) { cells_[row][col] = std::move(cell); }
  /// Marks a column whose workers did not start: every cell of it becomes an error with `why`.
  void setStartError(size_t col, const std::string& why);
  void setTorch(size_t col, const oracles::TorchInfo& torch) { columns_[col].torch = torch; }

  /// Orders the columns oldest first by oracles::versionKey (equal versions keep their given
  /// order); columns whose workers did not start go last.
  void sortByRelease();
  /// A column's name in the matrix and in histories: its release ("2.11.0"); the full version
  /// when another column has the same release; that plus the interpreter when another has the
  /// same full version; the interpreter for a column that did not start.
  std::string label(size_t col) const;
  /// One finding's statuses, column by column.
  std::vector<RegressStatus> history(size_t row) const;

  /// One row per finding and column, finding by finding, columns in order:
  /// name,status,expected_verdict,observed_verdict,expected_signature,observed_signature,config,
  /// torch,reason,python,torch_git (torch: the worker's full version, empty when it did not start;
  /// reason: one line, at most 1000 bytes).
  std::string csv() const;
  /// A markdown document: the matrix (a row per finding, a column per interpreter, the statuses
  /// as cells), a legend, and the versions with their git hashes and interpreters. `histories`
  /// adds the "appears in" and "fixed in" columns and one describeHistory line per finding.
  std::string markdown(bool histories) const;

 private:
  std::vector<std::string> findings_;
  std::vector<ReleaseColumn> columns_;
  std::vector<std::vector<RegressCell>> cells_;  ///< [finding][column]
};

}  // namespace tcfuzz
