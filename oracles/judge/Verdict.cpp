#include "oracles/judge/Verdict.h"
#include "oracles/judge/OutputLoader.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

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
    {Verdict::MutationDivergence, "mutation-divergence"},
    {Verdict::SecondCallDivergence, "second-call-divergence"},
    {Verdict::RandomOnly, "random-only"},
    {Verdict::NothingCompiled, "nothing-compiled"},
    {Verdict::IllConditioned, "ill-conditioned"},
    {Verdict::SignedZero, "signed-zero"},
    {Verdict::DenormalFlush, "denormal-flush"},
    {Verdict::AliasingDivergence, "aliasing-divergence"},
    {Verdict::RecompileStorm, "recompile-storm"},
};

bool failedToLoad(const RunResult& r) { return !r.ok() && (r.phase == "load" || r.phase == "setup"); }

/// SignedZero or DenormalFlush (in that order) of the first forward output of call 1 that shows one,
/// else nullopt. Gradients, state and later calls are left out: the sign of a zero in an accumulated
/// gradient carries no meaning (a 30-minute campaign's signed zeros were all in gradients).
std::optional<VerdictReport> zeroSlip(const Comparison& cmp) {
  for (bool sign : {true, false})
    for (const LeafComparison& l : cmp.leaves) {
      if (l.role != "output") continue;
      int64_t n = sign ? l.signedZeros : l.flushedDenormals;
      if (n == 0) continue;
      std::string where = l.name.empty() ? fmt::format("output {}", l.leaf) : fmt::format("output {} {}", l.leaf, l.name);
      return VerdictReport{sign ? Verdict::SignedZero : Verdict::DenormalFlush,
                           sign ? fmt::format("{}: compiled flips the sign of {} zero(s) on which eager and fp64 agree",
                                              where, n)
                                : fmt::format("{}: compiled flushes {} subnormal(s) to zero that eager and fp64 keep",
                                              where, n),
                           {}};
    }
  return std::nullopt;
}

/// Eager's call 2 returned call 1's outputs exactly: the program kept no state of its own between the two
/// calls (private attributes PythonState does not restore), so nothing a guard may watch changed.
bool eagerRepeatsItself(const Comparator& comparator, const LoadedOutputs& eager) {
  LoadedOutputs first{{}, eager.tensors}, second{{}, eager.tensors};
  for (const OutputLeaf& leaf : eager.leaves) {
    if (leaf.role == "output") first.leaves.push_back(leaf);
    if (leaf.role == "second-call") second.leaves.push_back(leaf);
  }
  return !first.leaves.empty() && comparator.identical(first, second);
}

/// Call 1 has at least one output, and each depends on a random op.
bool everyOutputRandom(const Comparison& cmp) {
  size_t outputs = 0;
  for (const LeafComparison& leaf : cmp.leaves) {
    if (leaf.role != "output") continue;
    if (!leaf.random) return false;
    ++outputs;
  }
  return outputs > 0;
}

}  // namespace

const std::string* unstableGuard(const std::vector<std::string>& repeatRecompiles) {
  for (const std::string& failure : repeatRecompiles)
    if (failure.find("<locals>") == std::string::npos) return &failure;
  return nullptr;
}

std::optional<VerdictReport> sandboxRefusal(const TripleRun& runs) {
  for (auto [run, mode] : {std::pair{&runs.eager, "eager"}, {&runs.compiled, "compiled"}, {&runs.fp64, "fp64"}})
    if (run->status == RunStatus::Refused)
      return VerdictReport{Verdict::SandboxRefusal,
                           fmt::format("the program tried to reach past its job in {} and was stopped: {}", mode,
                                       run->summary()),
                           {}};
  return std::nullopt;
}

std::optional<Verdict> parseVerdict(std::string_view text) {
  for (auto [v, name] : kVerdictNames)
    if (name == text) return v;
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
    case Verdict::MutationDivergence: return 17;
    case Verdict::SecondCallDivergence: return 18;
    case Verdict::RandomOnly: return 19;
    case Verdict::NothingCompiled: return 20;
    case Verdict::IllConditioned: return 21;
    case Verdict::SignedZero: return 22;
    case Verdict::DenormalFlush: return 23;
    case Verdict::AliasingDivergence: return 24;
    case Verdict::RecompileStorm: return 25;
  }
  return 3;
}

bool isWrongResult(Verdict verdict) {
  return verdict == Verdict::NumericDivergence || verdict == Verdict::MutationDivergence ||
         verdict == Verdict::SecondCallDivergence || verdict == Verdict::SignedZero ||
         verdict == Verdict::DenormalFlush || verdict == Verdict::AliasingDivergence;
}

bool isWrongResultSymptom(std::string_view symptom) {
  auto verdict = parseVerdict(symptom);
  return verdict && isWrongResult(*verdict);
}

Verdict wrongResultOfRole(std::string_view role) {
  if (role == "state" || role == "python-state") return Verdict::MutationDivergence;
  if (role == "second-call" || role == "fresh-inputs" || role == "resized" || role == "moved" || role == "schedule")
    return Verdict::SecondCallDivergence;
  if (role == "alias") return Verdict::AliasingDivergence;
  return Verdict::NumericDivergence;
}

std::string_view wrongResultStory(Verdict verdict) {
  static constexpr std::pair<Verdict, std::string_view> kStories[] = {
      {Verdict::SignedZero,
       "The compiled program returns zeros of the other sign than the one eager mode and a float64 reference agree "
       "on: invisible to allclose, visible to division, `atan2` and `copysign`."},
      {Verdict::DenormalFlush,
       "The compiled program flushes to zero subnormal values that eager mode and a float64 reference both keep."},
      {Verdict::MutationDivergence,
       "The compiled forward leaves an input, buffer or parameter with other values than eager mode's forward "
       "leaves it, further from a float64 reference than eager's (the criterion of `torch._dynamo.utils.same` with "
       "`fp64_ref`)."},
      {Verdict::SecondCallDivergence,
       "The compiled module's first call agrees with eager mode, but a later call (the same inputs again, fresh "
       "inputs of the same shapes, the inputs moved to storage offset 0, or under dynamic shapes inputs of another "
       "size) is further from a float64 reference than eager mode's."},
      {Verdict::AliasingDivergence,
       "An output of the compiled program shares storage with another tensor than eager mode's output does (a view "
       "of an input returned as a copy, or a fresh result returned as a view), so writes through it reach other "
       "tensors than in eager mode."},
      {Verdict::RecompileStorm,
       "Every value agrees, but the compiled module recompiles when it is called again with the same inputs and the "
       "same module state: a guard fails on something that did not change, so each such call can recompile until "
       "Dynamo's recompile limit sends the frame back to eager (the guard failure is on the verdict line below)."},
  };
  for (auto [v, story] : kStories)
    if (v == verdict) return story;
  return "";
}

bool isFinding(Verdict verdict) {
  return verdict == Verdict::CrashMismatch || verdict == Verdict::StatusMismatch || isWrongResult(verdict) ||
         verdict == Verdict::RecompileStorm;
}

namespace {

/// The first leaf of a backend="eager" run that is not eager's bit for bit (random leaves left out).
std::optional<size_t> firstBitDifference(const Comparator& comparator, const LoadedOutputs& eager,
                                         const LoadedOutputs& compiled, const Comparison& cmp) {
  std::vector<bool> random;
  for (const LeafComparison& l : cmp.leaves) random.push_back(l.random);
  auto i = comparator.firstDifference(eager, compiled, random);
  return i && *i < cmp.leaves.size() ? i : std::nullopt;
}

}  // namespace

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
  if (compiled.compileFacts && compiled.compileFacts->graphCount == 0) {
    const CompileFacts& facts = *compiled.compileFacts;
    std::string breaks;
    for (const auto& [why, n] : facts.breakReasons) breaks += fmt::format("{}{} ({}x)", breaks.empty() ? "" : "; ", why, n);
    return {Verdict::NothingCompiled,
            fmt::format("Dynamo captured no graph, so compiled ran eager code: {} graph breaks{}{}", facts.graphBreaks,
                        breaks.empty() ? "" : ": ", breaks.substr(0, 300)),
            {}};
  }
  std::optional<LoadedOutputs> fp64Out;
  if (fp64.ok() && fp64.outputs) fp64Out = loadOutputs(*fp64.outputs, fp64.jobDir);

  VerdictReport report;
  report.comparison = comparator.compare(eagerOut, compiledOut, fp64Out ? &*fp64Out : nullptr);
  const Comparison& cmp = *report.comparison;
  std::string fp64Note = fp64.ok()                   ? ""
                         : fp64.phase == kNotNeededPhase ? " (bit for bit, so fp64 was not run)"
                                                        : fmt::format(" (fp64 run failed: {})", fp64.summary());
  if (cmp.unstable) {
    report.verdict = Verdict::InvalidProgram;
    report.reason = "eager output has NaN/Inf where fp64 does not (numerically unstable program)";
  } else if (!cmp.passed) {
    report.verdict = wrongResultOfRole(cmp.failingRole);
    report.reason = cmp.reason + fp64Note;
  } else if (everyOutputRandom(cmp)) {
    report.verdict = Verdict::RandomOnly;
    report.reason = fmt::format("every output depends on a random op ({}): dtypes and shapes agree, values not judged",
                                eager.randomOps.empty() ? "a Python scalar" : fmt::format("{}", fmt::join(eager.randomOps, ", ")));
  } else if (auto slip = zeroSlip(cmp)) {
    report.verdict = slip->verdict;
    report.reason = slip->reason + fp64Note;
  } else if (auto differs = runs.exactBackend ? firstBitDifference(comparator, eagerOut, compiledOut, cmp) : std::nullopt) {
    const LeafComparison& leaf = cmp.leaves[*differs];
    report.verdict = wrongResultOfRole(leaf.role);
    report.comparison->passed = false;
    report.comparison->failingRole = leaf.role;
    report.comparison->reason = fmt::format("leaf {} is not eager's bit for bit under backend=\"eager\"", *differs);
    report.comparison->leaves[*differs].passed = false;
    report.reason = fmt::format("backend=\"eager\" runs eager's own kernels, so it must equal eager bit for bit, and leaf {} ({}) "
                                "differs: a Dynamo bug, whatever the tolerance says",
                                *differs, leaf.name.empty() ? "output" : leaf.name);
    report.comparison->leaves[*differs].reason = report.reason;
  } else if (const std::string* guard = unstableGuard(compiled.repeatRecompiles);
             guard && eagerRepeatsItself(comparator, eagerOut)) {
    report.verdict = Verdict::RecompileStorm;
    report.reason = fmt::format("every value agrees, but Dynamo recompiled {} time(s) in call 2, which repeats call 1 "
                                "exactly (fresh copies of the same inputs, the state as built): guard failure: {}",
                                compiled.repeatRecompiles.size(), guard->substr(0, 300));
  } else {
    report.verdict = Verdict::Agree;
    report.reason = "compiled matches eager within the fp64-arbitrated tolerance" + fp64Note;
    size_t random = std::count_if(cmp.leaves.begin(), cmp.leaves.end(), [](const LeafComparison& l) { return l.random; });
    if (random > 0) report.reason += fmt::format(" ({} of {} leaves depend on a random op: values not judged)", random,
                                                 cmp.leaves.size());
    if (!compiled.repeatRecompiles.empty())
      report.reason += unstableGuard(compiled.repeatRecompiles)
                           ? "; call 2 recompiled, but eager's call 2 differs from its call 1 (the program keeps state "
                             "of its own), so a recompile is expected"
                           : "; call 2 recompiled on a guard on an object forward makes anew at every call (a local "
                             "class or function), which fails by design";
  }
  return report;
}

}  // namespace tcfuzz::oracles
