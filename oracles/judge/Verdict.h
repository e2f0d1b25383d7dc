#pragma once
// The verdict on one program from its eager, compiled and fp64 runs (docs/architecture.md, "The oracle").
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "oracles/judge/Comparator.h"
#include "oracles/judge/RunResult.h"

namespace tcfuzz::oracles {

/// StateLeakSuspect: a finding made in a warm persistent worker that a fresh process does not reproduce
/// (state one program left for the next, a harness problem): recorded, never reported as a torch bug.
/// SandboxRefusal: the program tried to reach past its job in some run (RunStatus::Refused): never judged.
/// The wrong-result findings, by the first failing leaf's role (RunResult.h, OutputLeaf::role):
/// NumericDivergence (call 1's outputs or gradients), MutationDivergence (an input, buffer or parameter
/// as the forward left it), SecondCallDivergence (call 2 with the same inputs, or call 3 with fresh ones),
/// AliasingDivergence (an output shares storage with an input, buffer, parameter or other output in one
/// mode and not in the other).
/// Recorded, never reported: RandomOnly (every output depends on a random op, so only dtypes and shapes
/// were judged), NothingCompiled (Dynamo captured no graph: compiled ran eager code),
/// IllConditioned (eager's own spread on inputs perturbed by a few ulps covers compiled's deviation).
/// Low-severity wrong results in call 1's forward outputs (never gradients), judged only when everything
/// else agrees (and eager is deterministic):
/// SignedZero (compiled flips the sign of a zero on which eager and fp64 agree), DenormalFlush
/// (compiled flushes to zero a subnormal that eager and fp64 both keep).
/// RecompileStorm, low severity, judged only when every value agrees: Dynamo recompiled in call 2, which
/// repeats call 1 exactly (fresh copies of the same inputs, the state as built), so a guard fails on what
/// did not change and every later call can recompile until the recompile limit sends the frame to eager. A
/// guard on the identity of an object forward makes anew at every call (a local class or function) is left
/// out: it fails by design.
/// Recompiles on calls that change something (fresh values, another size, a schedule step) are figures.
enum class Verdict {
  Agree, CrashMismatch, StatusMismatch, NumericDivergence, Nondeterministic, InvalidProgram, StateLeakSuspect,
  SandboxRefusal, MutationDivergence, SecondCallDivergence, RandomOnly, NothingCompiled, IllConditioned,
  SignedZero, DenormalFlush, AliasingDivergence, RecompileStorm
};

/// "agree", "crash-mismatch", "status-mismatch", "numeric-divergence", "nondeterministic", "invalid-program",
/// "state-leak-suspect", "sandbox-refusal", "mutation-divergence", "second-call-divergence", "random-only",
/// "nothing-compiled", "ill-conditioned", "signed-zero", "denormal-flush", "aliasing-divergence",
/// "recompile-storm".
std::string_view toString(Verdict verdict);
/// The verdict a toString spelling names, or nullopt.
std::optional<Verdict> parseVerdict(std::string_view text);
/// The process exit code `tcfuzz run` uses for a verdict (docs/oracle.md, "Verdicts and exit codes").
int exitCodeFor(Verdict verdict);
/// True for the verdicts that are findings (crash and status mismatches, the wrong results, recompile storms).
bool isFinding(Verdict verdict);
/// True for the findings judged by comparing values: numeric, mutation, second-call and aliasing
/// divergences, signed zeros and flushed denormals.
bool isWrongResult(Verdict verdict);
/// isWrongResult of the verdict a signature symptom spells (false for any other text).
bool isWrongResultSymptom(std::string_view symptom);
/// The wrong-result verdict of a leaf role: "state" and "python-state" -> MutationDivergence; "second-call",
/// "fresh-inputs", "resized", "moved" and "schedule" -> SecondCallDivergence; "alias" -> AliasingDivergence;
/// anything else -> NumericDivergence.
Verdict wrongResultOfRole(std::string_view role);
/// The sentence a report opens with for a wrong result other than a numeric divergence (whose
/// sentence carries its figures, ReportWriter), or for a recompile storm; "" for any other verdict.
std::string_view wrongResultStory(Verdict verdict);

/// The compile configuration itself is wrong (unknown Inductor option, unknown backend): a usage
/// error of the person running tcfuzz, not a property of the program.
struct ConfigurationError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The three runs of one program. eager.repeatOutputs holds the second eager run.
struct TripleRun {
  RunResult eager, compiled, fp64;
  /// The compiled run used backend="eager", which runs eager's own kernels: every leaf must equal eager's
  /// bit for bit (NaN equal to NaN), and any difference is a Dynamo bug, with no tolerance argued.
  bool exactBackend = false;
};

/// A verdict with the reason and the figures behind it.
struct VerdictReport {
  Verdict verdict = Verdict::Agree;
  std::string reason;
  std::optional<Comparison> comparison;  ///< present when both eager and compiled ran
};

/// The first of call 2's recompiles (RunResult::repeatRecompiles) whose guard watched an object that existed
/// before the call, or nullptr. A guard on the identity of an object forward makes anew at every call (a class
/// or function defined in it, "<locals>" in its name) fails by design: each call makes another object.
const std::string* unstableGuard(const std::vector<std::string>& repeatRecompiles);

/// The SandboxRefusal verdict when any of the runs was refused (RunStatus::Refused), else nullopt.
std::optional<VerdictReport> sandboxRefusal(const TripleRun& runs);

/// Applies the oracle rules. Loads the saved outputs from the job directories (OutputLoadError
/// when they are unreadable); throws ConfigurationError for a bad compile configuration.
VerdictReport judge(const TripleRun& runs, const Comparator& comparator);

}  // namespace tcfuzz::oracles
