#include "oracles/Verdict.h"

#include <fmt/format.h>

namespace tcfuzz::oracles {
namespace {

constexpr std::pair<Verdict, std::string_view> kVerdictNames[] = {
    {Verdict::Agree, "agree"},
    {Verdict::CrashMismatch, "crash-mismatch"},
    {Verdict::StatusMismatch, "status-mismatch"},
    {Verdict::NumericDivergence, "numeric-divergence"},
    {Verdict::Nondeterministic, "nondeterministic"},
    {Verdict::InvalidProgram, "invalid-program"},
    {Verdict::StateLeakSuspect, "state-leak-suspect"},
    {Verdict::SandboxRefusal, "sandbox-refusal"},
};

bool failedToLoad(const RunResult& r) { return !r.ok() && (r.phase == "load" || r.phase == "setup"); }

}  // namespace

std::optional<VerdictReport> sandboxRefusal(const TripleRun& runs) {
  for (auto [run, mode] : {std::pair{&runs.eager, "eager"}, {&runs.compiled, "compiled"}, {&runs.fp64, "fp64"}})
    if (run->status == RunStatus::Refused)
      return VerdictReport{Verdict::SandboxRefusal,
                           fmt::format("the program tried to reach past its job in {} and was stopped: {}", mode,
                                       run->summary()),
                           {}};
  return std::nullopt;
}

std::string_view toString(Verdict verdict) {
  for (auto [v, name] : kVerdictNames)
    if (v == verdict) return name;
  return "unknown";
}

int exitCodeFor(Verdict verdict) {
  switch (verdict) {
    case Verdict::Agree: return 0;
    case Verdict::CrashMismatch: return 10;
    case Verdict::StatusMismatch: return 11;
    case Verdict::NumericDivergence: return 12;
    case Verdict::Nondeterministic: return 13;
    case Verdict::InvalidProgram: return 14;
    case Verdict::StateLeakSuspect: return 15;
    case Verdict::SandboxRefusal: return 16;
  }
  return 3;
}

bool isFinding(Verdict verdict) {
  return verdict == Verdict::CrashMismatch || verdict == Verdict::StatusMismatch ||
         verdict == Verdict::NumericDivergence;
}

VerdictReport judge(const TripleRun& runs, const Comparator& comparator) {
  const RunResult &eager = runs.eager, &compiled = runs.compiled, &fp64 = runs.fp64;
  if (!compiled.ok() && compiled.phase == "config")
    throw ConfigurationError(fmt::format("bad compile configuration: {}",
                                         compiled.exception ? compiled.exception->message : compiled.summary()));
  if (auto refused = sandboxRefusal(runs)) return *refused;
  if (failedToLoad(eager))
    return {Verdict::InvalidProgram, fmt::format("the program does not load in eager: {}", eager.summary()), {}};

  if (!eager.ok()) {
    if (eager.status == RunStatus::Timeout || eager.status == RunStatus::OutOfMemory)
      return {Verdict::InvalidProgram, fmt::format("eager exceeds the job limits: {}", eager.summary()), {}};
    if (compiled.ok())
      return {Verdict::StatusMismatch,
              fmt::format("eager failed ({}) but compiled ran", eager.summary()), {}};
    return {Verdict::InvalidProgram,
            fmt::format("eager and compiled both fail: eager {}; compiled {}", eager.summary(), compiled.summary()), {}};
  }
  if (!compiled.ok())
    return {Verdict::CrashMismatch, fmt::format("eager ran but compiled failed: {}", compiled.summary()), {}};

  if (!eager.outputs || !compiled.outputs)
    throw OutputLoadError("a successful run reported no outputs");
  LoadedOutputs eagerOut = loadOutputs(*eager.outputs, eager.jobDir);
  LoadedOutputs compiledOut = loadOutputs(*compiled.outputs, compiled.jobDir);
  for (const OutputSet& again : eager.repeatOutputs) {
    if (!comparator.identical(eagerOut, loadOutputs(again, eager.jobDir)))
      return {Verdict::Nondeterministic, "two eager runs with the same seed differ; numerics not judged", {}};
  }
  std::optional<LoadedOutputs> fp64Out;
  if (fp64.ok() && fp64.outputs) fp64Out = loadOutputs(*fp64.outputs, fp64.jobDir);

  VerdictReport report;
  report.comparison = comparator.compare(eagerOut, compiledOut, fp64Out ? &*fp64Out : nullptr);
  const Comparison& cmp = *report.comparison;
  std::string fp64Note = fp64.ok() ? "" : fmt::format(" (fp64 run failed: {})", fp64.summary());
  if (cmp.unstable) {
    report.verdict = Verdict::InvalidProgram;
    report.reason = "eager output has NaN/Inf where fp64 does not (numerically unstable program)";
  } else if (!cmp.passed) {
    report.verdict = Verdict::NumericDivergence;
    report.reason = cmp.reason + fp64Note;
  } else {
    report.verdict = Verdict::Agree;
    report.reason = "compiled matches eager within the fp64-arbitrated tolerance" + fp64Note;
  }
  return report;
}

}  // namespace tcfuzz::oracles
