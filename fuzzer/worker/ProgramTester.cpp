#include "fuzzer/worker/ProgramTester.h"

#include <chrono>
#include <regex>

#include <fmt/format.h>

#include "generators/ir/DType.h"
#include "oracles/judge/OutputLoader.h"

namespace tcfuzz {

ProgramTester::ProgramTester(WorkerPool& pool, oracles::Comparator comparator, std::filesystem::path jobsRoot)
    : pool_(pool), comparator_(comparator), jobsRoot_(std::move(jobsRoot)) {}

Job ProgramTester::makeJob(const std::filesystem::path& program, RunMode mode, const TestSettings& settings) {
  Job job;
  job.id = fmt::format("{:06d}-{}", nextJob_++, toString(mode));
  job.program = std::filesystem::absolute(program);
  job.mode = mode;
  job.seed = settings.seed;
  job.device = settings.device;
  job.gpu = settings.gpu;
  job.compile = settings.compile;
  job.limits = settings.limits;
  job.jobDir = std::filesystem::absolute(jobsRoot_ / job.id);
  job.repeat = mode == RunMode::Eager ? 2 : 1;  // the second eager run detects nondeterminism
  job.plugins = settings.plugins;
  job.threads = settings.threads;
  job.backward = settings.backward;
  job.persistent = settings.persistent;
  return job;
}

void ProgramTester::asKind(Job& job, const std::string& kind) const {
  job.id = job.id.substr(0, job.id.find('-')) + "-" + kind;
  job.jobDir = std::filesystem::absolute(jobsRoot_ / job.id);
  job.kind = kind;
  job.repeat = 1;
}

ProgramTester::PendingRun ProgramTester::submitOne(const std::filesystem::path& program, RunMode mode,
                                                  const TestSettings& settings) {
  Job job = makeJob(program, mode, settings);
  job.repeat = 1;
  std::filesystem::path dir = job.jobDir;
  return {pool_.submit(std::move(job)), dir};
}

oracles::RunResult ProgramTester::runScript(const std::filesystem::path& script, const TestSettings& settings,
                                            const std::vector<std::filesystem::path>& companions, bool trace) {
  Job job = makeJob(script, RunMode::Eager, settings);
  asKind(job, "script");
  job.plugins = companions;  // a script job's plugins are files it reads beside itself; nothing runs them
  job.trace = trace;
  ColdCache cache = newColdCache();
  job.cacheDir = cache.path;
  job.persistent = false;
  return pool_.submit(std::move(job)).get();
}

ProgramTester::ColdCache::~ColdCache() {
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
}

ProgramTester::ColdCache ProgramTester::newColdCache() {
  return ColdCache{std::filesystem::absolute(jobsRoot_ / fmt::format("cold-cache-{:06d}", nextJob_++))};
}

oracles::RunResult ProgramTester::bisect(const std::filesystem::path& program, const TestSettings& settings,
                                         const nlohmann::json& spec) {
  Job job = makeJob(program, RunMode::Compiled, settings);
  asKind(job, "bisect");
  job.compile.backend = oracles::kInductorBackend;  // the bisector walks eager, aot_eager, ... up to Inductor itself
  job.bisect = spec.is_null() ? nlohmann::json::object() : spec;
  job.bisect["tolerances"] = comparator_.options().toleranceTable();  // the oracle's own table, never a copy
  return pool_.submit(std::move(job)).get();
}

oracles::RunResult ProgramTester::lift(const std::filesystem::path& program, const TestSettings& settings,
                                       const nlohmann::json& table) {
  Job job = makeJob(program, RunMode::Eager, settings);
  asKind(job, "lift");
  job.backward = false;
  job.plugins.clear();  // plugins serve compilation; a lift runs the program in eager only
  nlohmann::json dtypes = nlohmann::json::array();
  for (int d = 0; d < gen::kDTypeCount; ++d) dtypes.push_back(gen::dtypeName(static_cast<gen::DType>(d)));
  job.lift = {{"table", table.is_null() ? nlohmann::json::array() : table},
              {"dtypes", dtypes},
              {"max_rank", 6},
              {"max_elements", int64_t{1} << 20}};
  return pool_.submit(std::move(job)).get();
}

std::string_view toString(Confirmation confirmation) {
  switch (confirmation) {
    case Confirmation::NotChecked: return "";
    case Confirmation::Confirmed: return "fresh-cold-cache";
    case Confirmation::CacheOnly: return "cache-only";
    case Confirmation::NotReproduced: return "not-reproduced";
  }
  return "";
}

namespace {

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

/// The compiled run of a program whose eager run failed under cheap checks first: never submitted.
oracles::RunResult notCompiled(const oracles::RunResult& eager) {
  oracles::RunResult r;
  r.status = oracles::RunStatus::Exception;
  r.phase = "skipped";
  r.exception = oracles::ExceptionInfo{"NotCompiled", "tcfuzz.NotCompiled",
                                       "not compiled: eager failed first (" + eager.summary() + ")", ""};
  return r;
}

/// The fp64 run that was not submitted because its arbitration could not change the verdict.
oracles::RunResult fp64NotNeeded(const std::string& why) {
  oracles::RunResult r;
  r.status = oracles::RunStatus::Exception;
  r.phase = oracles::kNotNeededPhase;
  r.exception = oracles::ExceptionInfo{"NotNeeded", "tcfuzz.NotNeeded", "fp64 not run: " + why, ""};
  return r;
}

/// A compile-only rejection that PyTorch documents as unsupported: the compiled run raised where eager ran,
/// and the row says why that is the documented outcome; "" when the row does not apply.
struct DocumentedRefusal {
  const char* name;
  std::string (*applies)(const TestSettings&, const oracles::RunResult& compiled, const oracles::ExceptionInfo&);
};

/// The graph-break documentation page a Dynamo message links to ("gb0123: <its gb_type>"), or "" when it has
/// none or Dynamo's own hint calls it a Dynamo bug or hard to debug (those are worth a report).
std::string documentedGraphBreak(const std::string& message) {
  static const std::regex kLink(R"(https://\S*compile-graph-break-site/gb/(gb\d+)\.html)");
  std::smatch link;
  if (!std::regex_search(message, link, kLink) || message.find("likely to be a Dynamo bug") != std::string::npos ||
      message.find("may be difficult to debug") != std::string::npos)
    return "";
  // The gb_type is the first line of the graph-break message, after the HOP's own preamble when there is one.
  size_t at = message.find("Got graph break/error:");
  at = at == std::string::npos ? 0 : message.find_first_not_of("\n ", at + 22);
  std::string type = message.substr(at, message.find('\n', at) - at);
  return fmt::format("{}: {} ({})", link[1].str(), type, link[0].str());
}

const DocumentedRefusal kDocumentedRefusals[] = {
    // Under fullgraph=True a graph break is the documented outcome: Dynamo raises Unsupported.
    {"fullgraph-graph-break",
     [](const TestSettings& s, const oracles::RunResult&, const oracles::ExceptionInfo& e) -> std::string {
       return s.compile.fullgraph && (e.type == "Unsupported" || e.message.find("graph break") != std::string::npos)
                  ? "a graph break under fullgraph=True"
                  : "";
     }},
    // A Python branch on a value read from a tensor: Dynamo cannot guard on it (torch.cond is the documented way).
    {"fullgraph-data-dependent-branch",
     [](const TestSettings& s, const oracles::RunResult&, const oracles::ExceptionInfo& e) -> std::string {
       return s.compile.fullgraph && e.type == "UserError" && e.message.find("data-dependent expression") != std::string::npos
                  ? "a branch on tensor data under fullgraph=True (Dynamo cannot guard on a data-dependent expression)"
                  : "";
     }},
    // A higher-order op's body must be captured whole (the HOP docs); a graph break inside it is raised, under any
    // fullgraph. It is documented when Dynamo's graph-break registry has a page for it that does not call it a bug.
    {"higher-order-op-body-graph-break",
     [](const TestSettings&, const oracles::RunResult&, const oracles::ExceptionInfo& e) -> std::string {
       if (e.type != "UncapturedHigherOrderOpError") return "";
       std::string page = documentedGraphBreak(e.message);
       return page.empty() ? "" : "a graph break inside a higher-order op's body, which must be captured whole: " + page;
     }},
    // torch.export's UserError is its documented refusal of a program (data-dependent control flow without
    // torch.cond, a constraint violation, an unsupported input or output), raised by the trace itself.
    {"export-user-error",
     [](const TestSettings& s, const oracles::RunResult& c, const oracles::ExceptionInfo& e) -> std::string {
       if (!s.compile.exports() || c.phase != "export" || e.type != "UserError") return "";
       std::string first = e.message.substr(0, e.message.find('\n'));
       return "torch.export refuses the program (" + first.substr(0, 160) + ")";
     }},
    // A guard on a data-dependent value in a non-strict trace: export's documented limit (torch._check or
    // torch.cond is the documented way); strict tracing raises it as a UserError.
    {"export-data-dependent-guard",
     [](const TestSettings& s, const oracles::RunResult& c, const oracles::ExceptionInfo& e) -> std::string {
       return s.compile.exports() && c.phase == "export" && e.type == "GuardOnDataDependentSymNode"
                  ? "torch.export cannot guard on a data-dependent value (GuardOnDataDependentSymNode)"
                  : "";
     }},
    // Under strict=True Dynamo traces, and a graph break is a refusal as under fullgraph=True.
    {"export-strict-graph-break",
     [](const TestSettings& s, const oracles::RunResult& c, const oracles::ExceptionInfo& e) -> std::string {
       return s.compile.exports() && s.compile.exportStrict && c.phase == "export" && e.type == "Unsupported"
                  ? "a graph break under torch.export(strict=True)"
                  : "";
     }},
    // An exported program called at another size (call 4) that its ranges or a dimension the trace specialized
    // exclude: its input guard raises a clean error naming the range, export's documented contract.
    {"export-input-guard",
     [](const TestSettings& s, const oracles::RunResult& c, const oracles::ExceptionInfo& e) -> std::string {
       if (!s.compile.exports() || c.phase != "resized-call" || e.qualifiedType != "builtins.AssertionError" ||
           !e.message.starts_with("Guard failed: "))
         return "";
       return "the exported program's input guard refuses the size (" + e.message.substr(0, e.message.find('\n')) + ")";
     }},
    // FlexAttention has no backward on CPU: torch's own flex_attention raises this NotImplementedError, compiled or
    // not (the references run its Python meaning, explicit masked softmax attention, which has one).
    {"flex-attention-cpu-backward",
     [](const TestSettings&, const oracles::RunResult&, const oracles::ExceptionInfo& e) -> std::string {
       return e.qualifiedType == "builtins.NotImplementedError" &&
                      e.message.starts_with("FlexAttention does not support backward on CPU")
                  ? "FlexAttention has no backward on CPU (torch's NotImplementedError)"
                  : "";
     }},
    // AOTInductor's own input check (AOTI_RUNTIME_CHECK_INPUTS=1, which the worker sets) refusing the size or the
    // strides of call 4 or of the moved call: the package is built for its example's layout and ranges.
    {"aoti-input-check",
     [](const TestSettings& s, const oracles::RunResult& c, const oracles::ExceptionInfo& e) -> std::string {
       if (s.compile.entry != "aoti" || (c.phase != "resized-call" && c.phase != "moved-call") ||
           e.qualifiedType != "builtins.RuntimeError" ||
           (!e.message.starts_with("expected size ") && e.message.find("input_handles[") == std::string::npos))
         return "";
       return "AOTInductor's input check refuses the call's inputs (" + e.message.substr(0, e.message.find('\n')) + ")";
     }},
};

/// Whether a documented refusal may name the compiled run's exception type: Dynamo's and symbolic shapes' types,
/// an exported program's input guard (a builtins.AssertionError) in the call at another size, AOTInductor's
/// input check (a builtins.RuntimeError) in that call or the moved one, and a NotImplementedError.
bool refusalModule(const TestSettings& s, const oracles::RunResult& c, const std::string& qualifiedType) {
  return qualifiedType.starts_with("torch._dynamo.exc.") || qualifiedType == "builtins.NotImplementedError" ||
         qualifiedType.starts_with("torch.fx.experimental.symbolic_shapes.") ||
         (s.compile.exports() && c.phase == "resized-call" && qualifiedType == "builtins.AssertionError") ||
         (s.compile.entry == "aoti" && (c.phase == "resized-call" || c.phase == "moved-call") &&
          qualifiedType == "builtins.RuntimeError");
}

/// Why the compiled run's rejection is documented as unsupported (kDocumentedRefusals), or "".
std::string documentedRefusal(const TestSettings& settings, const ProgramTestResult& r) {
  const auto& c = r.runs.compiled;
  if (r.verdict.verdict != oracles::Verdict::CrashMismatch || c.status != oracles::RunStatus::Exception || !c.exception ||
      !refusalModule(settings, c, c.exception->qualifiedType))
    return "";
  for (const DocumentedRefusal& row : kDocumentedRefusals)
    if (std::string why = row.applies(settings, c, *c.exception); !why.empty()) return why;
  return "";
}

}  // namespace

std::optional<std::string> ProgramTester::fp64Unneeded(const ProgramTestResult& r) const {
  if (r.compileSkipped) return "eager failed, so the program is invalid whatever fp64 does";
  const oracles::RunResult &eager = r.runs.eager, &compiled = r.runs.compiled;
  if (!eager.ok() || !compiled.ok() || !eager.outputs || !compiled.outputs) return std::nullopt;
  try {
    if (comparator_.settledWithoutFp64(oracles::loadOutputs(*eager.outputs, eager.jobDir),
                                       oracles::loadOutputs(*compiled.outputs, compiled.jobDir)))
      return "compiled equals eager bit for bit, every value finite";
  } catch (const oracles::OutputLoadError&) {
    // judge() loads them again and reports the error; fp64 runs as usual meanwhile
  }
  return std::nullopt;
}

ProgramTestResult ProgramTester::testOnce(const std::filesystem::path& program, const TestSettings& settings,
                                          const std::filesystem::path& cacheDir, const oracles::TripleRun* references) {
  auto began = std::chrono::steady_clock::now();
  auto job = [&](RunMode mode) {
    Job j = makeJob(program, mode, settings);
    if (!cacheDir.empty()) {
      j.cacheDir = cacheDir;
      j.persistent = false;
    }
    return j;
  };
  ProgramTestResult result;
  result.program = program;
  if (references) {
    result.runs.eager = references->eager;
    result.runs.compiled = pool_.submit(job(RunMode::Compiled)).get();
    if (references->fp64.phase != oracles::kNotNeededPhase) {
      result.runs.fp64 = references->fp64;
    } else if (auto why = fp64Unneeded(result)) {
      result.runs.fp64 = fp64NotNeeded(*why);
      result.fp64Skipped = true;
    } else {
      result.runs.fp64 = pool_.submit(job(RunMode::Fp64)).get();
    }
  } else if (settings.cheapChecksFirst) {
    auto eager = pool_.submit(job(RunMode::Eager));
    std::optional<std::future<oracles::RunResult>> fp64;
    if (!settings.fp64OnDemand) fp64 = pool_.submit(job(RunMode::Fp64));
    result.runs.eager = eager.get();
    if (result.runs.eager.ok()) {
      result.runs.compiled = pool_.submit(job(RunMode::Compiled)).get();
    } else {
      result.runs.compiled = notCompiled(result.runs.eager);
      result.compileSkipped = true;
    }
    if (fp64) {
      result.runs.fp64 = fp64->get();
    } else if (auto why = fp64Unneeded(result)) {
      result.runs.fp64 = fp64NotNeeded(*why);
      result.fp64Skipped = true;
    } else {
      result.runs.fp64 = pool_.submit(job(RunMode::Fp64)).get();
    }
  } else {
    // The compiled job is the slow one: submit it first so it starts first.
    auto compiled = pool_.submit(job(RunMode::Compiled));
    auto eager = pool_.submit(job(RunMode::Eager));
    auto fp64 = pool_.submit(job(RunMode::Fp64));
    result.runs = oracles::TripleRun{eager.get(), compiled.get(), fp64.get()};
  }
  // The backend ladder's first rung, unless eager ran higher-order ops as their Python meaning: then its
  // leaves come from other kernels (a loop for vmap's batched op), and fp64 arbitrates as for any backend. So
  // too for a compiled optimizer step: torch.optim computes other arithmetic while compiling, by design (its
  // _get_value keeps the step count a float32 tensor, where eager reads a Python float: Adam's bias correction
  // then rounds otherwise), so backend="eager" runs eager's kernels on other values there.
  bool compiledStep = settings.compile.trains() && settings.compile.training.compiled != "model";
  result.runs.exactBackend =
      settings.compile.backend == "eager" && result.runs.eager.desugaredHops.empty() && !compiledStep;
  auto judged = std::chrono::steady_clock::now();
  if (auto refused = oracles::sandboxRefusal(result.runs))
    result.verdict = *refused;
  else if (result.compileSkipped)
    result.verdict = {oracles::Verdict::InvalidProgram,
                      fmt::format("eager fails, so the program was not compiled: {}", result.runs.eager.summary()),
                      {}};
  else
    result.verdict = oracles::judge(result.runs, comparator_);
  if (std::string refused = documentedRefusal(settings, result); !refused.empty()) {
    result.documentedRefusal = refused;
    result.verdict.verdict = oracles::Verdict::Agree;
    result.verdict.reason = "unsupported (documented): " + refused + ", the documented outcome, not a bug";
  }
  result.compareSeconds = secondsSince(judged);
  result.wallSeconds = secondsSince(began);
  // A reference run is another test's job: only what this test submitted counts.
  result.torchSeconds = result.runs.compiled.times.childWall;
  if (!references) result.torchSeconds += result.runs.eager.times.childWall;
  if (!references || references->fp64.phase == oracles::kNotNeededPhase)
    result.torchSeconds += result.runs.fp64.times.childWall;
  return result;
}

ProgramTestResult ProgramTester::testChecked(const std::filesystem::path& program, const TestSettings& settings,
                                             const oracles::TripleRun* references) {
  ProgramTestResult result = settings.coldCache ? testOnce(program, settings, newColdCache().path, references)
                                                : testOnce(program, settings, {}, references);
  if (settings.confirmFindings && oracles::isFinding(result.verdict.verdict)) confirm(program, settings, result);
  if (settings.conditioningRuns > 0 && oracles::isWrongResult(result.verdict.verdict))
    checkConditioning(program, settings, result);
  return result;
}

ProgramTestResult ProgramTester::screen(const std::filesystem::path& program, const TestSettings& settings) {
  return settings.coldCache ? testOnce(program, settings, newColdCache().path) : testOnce(program, settings, {});
}

ProgramTestResult ProgramTester::test(const std::filesystem::path& program, const TestSettings& settings) {
  ProgramTestResult result = testChecked(program, settings, nullptr);
  // Only for torch.compile's forward programs: the no-compile run is a plain forward call, which another entry's
  // references (export's traced program, training steps) do not describe.
  if (settings.judgeEagerHops && settings.compile.compiles() && settings.compile.entry == oracles::kCompileEntry &&
      !oracles::isFinding(result.verdict.verdict) && !result.runs.eager.desugaredHops.empty()) {
    TestSettings own = settings;  // eager's own HOPs, judged against the same references under the same rules
    own.compile = oracles::CompileConfig{};
    own.compile.backend = oracles::kNoCompileBackend;
    ProgramTestResult eagerHops = testChecked(program, own, &result.runs);  // only its compiled job runs
    if (oracles::isFinding(eagerHops.verdict.verdict)) {
      eagerHops.judgedUnder = own.compile;
      eagerHops.wallSeconds += result.wallSeconds;
      eagerHops.torchSeconds += result.torchSeconds;
      return eagerHops;
    }
    result.wallSeconds += eagerHops.wallSeconds;
    result.torchSeconds += eagerHops.torchSeconds;
  }
  return result;
}

void ProgramTester::checkConditioning(const std::filesystem::path& program, const TestSettings& settings,
                                      ProgramTestResult& result,
                                      const std::function<oracles::RunResult(const oracles::RunResult&)>& part) {
  auto began = std::chrono::steady_clock::now();
  std::vector<std::future<oracles::RunResult>> pending;
  for (int k = 0; k < settings.conditioningRuns; ++k) {
    Job job = makeJob(program, RunMode::Eager, settings);
    job.id += "-perturbed";
    job.jobDir = std::filesystem::absolute(jobsRoot_ / job.id);
    job.repeat = 1;
    job.perturbUlps = settings.conditioningUlps;
    job.perturbSeed = settings.seed * 1000003 + static_cast<uint64_t>(k) + 1;  // never the unperturbed draw
    pending.push_back(pool_.submit(std::move(job)));
  }
  std::vector<oracles::LoadedOutputs> perturbed;
  std::string refused;  // why a perturbed run gave no outputs (the inputs hold non-finite values, ...)
  for (auto& p : pending) {
    oracles::RunResult r = p.get();
    result.torchSeconds += r.times.childWall;
    if (part) r = part(r);
    if (r.ok() && r.outputs) perturbed.push_back(oracles::loadOutputs(*r.outputs, r.jobDir));
    else if (r.exception && refused.empty()) refused = r.exception->type + ": " + r.exception->message;
  }
  const oracles::TripleRun& runs = result.runs;
  if (result.verdict.comparison && runs.eager.outputs && runs.compiled.outputs) {
    oracles::ConditioningVerdict v =
        oracles::judgeConditioning(*result.verdict.comparison, oracles::loadOutputs(*runs.eager.outputs, runs.eager.jobDir),
                                   oracles::loadOutputs(*runs.compiled.outputs, runs.compiled.jobDir), perturbed);
    if (perturbed.empty() && !refused.empty()) v.reason += "; no perturbed run: " + refused;
    if (v.illConditioned) {
      result.verdict.reason = fmt::format("{}; the {} was: {}", v.reason,
                                          oracles::toString(result.verdict.verdict), result.verdict.reason);
      result.verdict.verdict = oracles::Verdict::IllConditioned;
    }
    result.conditioning = std::move(v);
  }
  result.conditioningSeconds = secondsSince(began);
  result.wallSeconds += result.conditioningSeconds;
}

void ProgramTester::confirm(const std::filesystem::path& program, const TestSettings& settings,
                            ProgramTestResult& result) {
  auto began = std::chrono::steady_clock::now();
  double firstWall = result.wallSeconds, firstTorch = result.torchSeconds;
  TestSettings fresh = settings;
  fresh.persistent = false;
  if (fresh.gpu.empty()) fresh.gpu = result.runs.compiled.child.gpu;  // again on the GPU that misbehaved
  ProgramTestResult cold = testOnce(program, fresh, newColdCache().path);
  double confirmTorch = cold.torchSeconds;
  if (oracles::isFinding(cold.verdict.verdict)) {
    result = std::move(cold);
    result.confirmation = Confirmation::Confirmed;
  } else {
    ProgramTestResult warm = testOnce(program, fresh, {});
    confirmTorch += warm.torchSeconds;
    if (oracles::isFinding(warm.verdict.verdict)) {
      result = std::move(warm);
      result.confirmation = Confirmation::CacheOnly;
      result.verdict.reason = "cache-only (a fresh process with a cold Inductor cache agrees): " + result.verdict.reason;
    } else {
      result.confirmation = Confirmation::NotReproduced;
      result.verdict.verdict =
          settings.persistent ? oracles::Verdict::StateLeakSuspect : oracles::Verdict::Nondeterministic;
      result.verdict.reason = fmt::format("not reproduced in a fresh process ({}); first seen{}: {}",
                                          cold.verdict.reason, settings.persistent ? " in a persistent worker" : "",
                                          result.verdict.reason);
    }
  }
  result.confirmSeconds = secondsSince(began);
  result.wallSeconds = firstWall + result.confirmSeconds;
  result.torchSeconds = firstTorch + confirmTorch;
}

}  // namespace tcfuzz

#include <cmath>

#include <nlohmann/json.hpp>

namespace tcfuzz {
namespace {

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

}  // namespace

nlohmann::json toJson(const ProgramTestResult& result) {
  const auto& v = result.verdict;
  nlohmann::json j{{"program", result.program.string()},
                   {"verdict", oracles::toString(v.verdict)},
                   {"reason", v.reason},
                   {"eager", oracles::toJson(result.runs.eager)},
                   {"compiled", oracles::toJson(result.runs.compiled)},
                   {"fp64", oracles::toJson(result.runs.fp64)},
                   {"wall_s", result.wallSeconds},
                   {"compare_s", result.compareSeconds}};
  if (result.conditioning) {
    nlohmann::json leaves = nlohmann::json::array();
    for (const auto& l : result.conditioning->leaves)
      leaves.push_back({{"leaf", l.leaf}, {"spread", number(l.spread)}, {"deviation", number(l.deviation)},
                        {"covered", l.covered}});
    j["conditioning"] = {{"ill_conditioned", result.conditioning->illConditioned},
                         {"reason", result.conditioning->reason},
                         {"leaves", leaves},
                         {"seconds", result.conditioningSeconds}};
  }
  if (result.confirmation != Confirmation::NotChecked) {
    j["confirmation"] = toString(result.confirmation);
    j["confirm_s"] = result.confirmSeconds;
  }
  if (result.compileSkipped) j["compile_skipped"] = true;
  if (result.fp64Skipped) j["fp64_skipped"] = true;
  if (v.comparison) {
    nlohmann::json leaves = nlohmann::json::array();
    for (const auto& l : v.comparison->leaves) {
      // fp64 figures only where fp64 was consulted: null, not 0.0, when allclose or exact equality decided.
      bool floating = l.eagerDtype.find("float") != std::string::npos || l.eagerDtype.find("complex") != std::string::npos;
      bool rmseMeasured = l.fp64Used && floating, countsMeasured = l.fp64Used && !floating;
      leaves.push_back({{"leaf", l.leaf},
                        {"role", l.role},
                        {"name", l.name.empty() ? fmt::format("output {}", l.leaf) : l.name},
                        {"dtype", l.eagerDtype},
                        {"compiled_dtype", l.compiledDtype},
                        {"shape", l.eagerShape},
                        {"compiled_shape", l.compiledShape},
                        {"dtype_match", l.dtypeMatch},
                        {"shape_match", l.shapeMatch},
                        {"nan_inf_match", l.nonFiniteMatch},
                        {"fp64_stable", l.fp64Stable},
                        {"fp64_used", l.fp64Used},
                        {"max_abs_diff", number(l.maxAbsDiff)},
                        {"rmse_eager_fp64", rmseMeasured ? number(l.rmseEager) : nlohmann::json()},
                        {"rmse_compiled_fp64", rmseMeasured ? number(l.rmseCompiled) : nlohmann::json()},
                        {"mismatches_eager_fp64", countsMeasured ? nlohmann::json(l.mismatchesEager) : nlohmann::json()},
                        {"mismatches_compiled_fp64",
                         countsMeasured ? nlohmann::json(l.mismatchesCompiled) : nlohmann::json()},
                        {"tolerance", l.tolerance},
                        {"multiplier", l.multiplier},
                        {"passed", l.passed},
                        {"random", l.random},
                        {"tied_indices", l.tiedIndices},
                        {"note", l.reason}});
    }
    j["outputs"] = leaves;
  }
  return j;
}

}  // namespace tcfuzz
