#pragma once
// The verdict on one program from its eager, compiled and fp64 runs (DESIGN.md, "The oracle").
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "oracles/Comparator.h"
#include "oracles/RunResult.h"

namespace tcfuzz::oracles {

/// StateLeakSuspect: a finding made in a warm persistent worker that a fresh process does not reproduce
/// (state one program left for the next, a harness problem): recorded, never reported as a torch bug.
/// SandboxRefusal: the program tried to reach past its job in some run (RunStatus::Refused): never judged.
enum class Verdict {
  Agree, CrashMismatch, StatusMismatch, NumericDivergence, Nondeterministic, InvalidProgram, StateLeakSuspect,
  SandboxRefusal
};

/// "agree", "crash-mismatch", "status-mismatch", "numeric-divergence", "nondeterministic", "invalid-program",
/// "state-leak-suspect", "sandbox-refusal".
std::string_view toString(Verdict verdict);
/// The process exit code `tcfuzz run` uses for a verdict (README, "Exit codes").
int exitCodeFor(Verdict verdict);
/// True for the verdicts that are findings (crash, status and numeric mismatches).
bool isFinding(Verdict verdict);

/// The compile configuration itself is wrong (unknown Inductor option, unknown backend): a usage
/// error of the person running tcfuzz, not a property of the program.
struct ConfigurationError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The three runs of one program. eager.repeatOutputs holds the second eager run.
struct TripleRun {
  RunResult eager, compiled, fp64;
};

/// A verdict with the reason and the figures behind it.
struct VerdictReport {
  Verdict verdict = Verdict::Agree;
  std::string reason;
  std::optional<Comparison> comparison;  ///< present when both eager and compiled ran
};

/// The SandboxRefusal verdict when any of the runs was refused (RunStatus::Refused), else nullopt.
std::optional<VerdictReport> sandboxRefusal(const TripleRun& runs);

/// Applies the oracle rules. Loads the saved outputs from the job directories (OutputLoadError
/// when they are unreadable); throws ConfigurationError for a bad compile configuration.
VerdictReport judge(const TripleRun& runs, const Comparator& comparator);

}  // namespace tcfuzz::oracles
