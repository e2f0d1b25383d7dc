#pragma once
// Is a triaged bug already known upstream? A list of known PyTorch issues, each with a signature-like
// key (symptom, ops, exception type, component, backward), matched against a BugReport; and search
// links into PyTorch's issue tracker built from the bug's signature, for the duplicates no list holds.
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "oracles/reporter/BugReport.h"

namespace tcfuzz::oracles {

/// One known upstream issue and the key a finding must match to be it. An empty key field matches
/// anything; `ops` must all be among the bug's ops.
struct KnownIssue {
  UpstreamIssue issue;
  std::string symptom;        ///< "numeric-divergence", "crash-mismatch", "status-mismatch"
  std::vector<std::string> ops;
  std::string exceptionType;  ///< as a signature spells it: "InductorError(AssertionError)", "RuntimeError"
  /// Words the signature's normalized message must hold ("to view Complex"): a crash whose wrapper type is
  /// shared by many bugs (BackendCompilerFailed(RuntimeError)) is told apart by what it says.
  std::string message;
  std::string component;      ///< a part of what the ablation blames: "inductor", "aot_autograd", ...
  std::optional<bool> backward;  ///< the bug needs (true) or does not need (false) a backward pass
  /// Words the compiler bisector's culprit must hold (its subsystem and debug info, e.g. "remove_noop_ops").
  std::string bisect;
  /// A family entry: its issue is one of several open bugs of the same pass. A match never marks a bug
  /// as that issue; the report lists the family's issues to compare against (knownFamily).
  bool family = false;
};

/// Reads a known-issues file ({"issues": [{"number", "url", "title", "state", "key": {...}}]}, as
/// corpus/known-upstream.json). Throws std::runtime_error naming the file and what is wrong in it.
std::vector<KnownIssue> loadKnownIssues(const std::filesystem::path& file);

/// The first issue of `known` (family entries aside) whose key `bug` matches; nullptr when none does.
const KnownIssue* matchKnownIssue(const std::vector<KnownIssue>& known, const BugReport& bug);
/// The issues of every family entry of `known` whose key `bug` matches (for one whose bisected pass is
/// where those issues live), each once, in the file's order.
std::vector<UpstreamIssue> matchKnownFamily(const std::vector<KnownIssue>& known, const BugReport& bug);

/// The bug's operators: the signature's (numeric), else the minimized program's node ops, sorted, unique.
std::vector<std::string> bugOps(const BugReport& bug);

/// Searches of PyTorch's issue tracker for duplicates of `bug`: (label, terms) pairs "by ops", "by
/// message" and "by config", each only when the bug has what it searches for (ops; an exception with a
/// message; Inductor options).
std::vector<std::pair<std::string, std::string>> upstreamSearchQueries(const BugReport& bug);

/// The tracker's search page for issues (open and closed) matching `terms`.
std::string trackerSearchUrl(const std::string& terms);

}  // namespace tcfuzz::oracles
