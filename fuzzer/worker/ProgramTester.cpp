#include "fuzzer/worker/ProgramTester.h"

#include <chrono>

#include <fmt/format.h>

#include "generators/DType.h"

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
  job.compile = settings.compile;
  job.limits = settings.limits;
  job.jobDir = std::filesystem::absolute(jobsRoot_ / job.id);
  job.repeat = mode == RunMode::Eager ? 2 : 1;  // the second eager run detects nondeterminism
  job.plugins = settings.plugins;
  job.threads = settings.threads;
  job.backward = settings.backward;
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

oracles::RunResult ProgramTester::runScript(const std::filesystem::path& script, const TestSettings& settings) {
  Job job = makeJob(script, RunMode::Eager, settings);
  asKind(job, "script");
  job.plugins.clear();  // a script is self-contained
  return pool_.submit(std::move(job)).get();
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

ProgramTestResult ProgramTester::test(const std::filesystem::path& program, const TestSettings& settings) {
  auto began = std::chrono::steady_clock::now();
  // The compiled job is the slow one: submit it first so it starts first.
  auto compiled = pool_.submit(makeJob(program, RunMode::Compiled, settings));
  auto eager = pool_.submit(makeJob(program, RunMode::Eager, settings));
  auto fp64 = pool_.submit(makeJob(program, RunMode::Fp64, settings));
  ProgramTestResult result;
  result.program = program;
  result.runs = oracles::TripleRun{eager.get(), compiled.get(), fp64.get()};
  auto judged = std::chrono::steady_clock::now();
  result.verdict = oracles::judge(result.runs, comparator_);
  auto done = std::chrono::steady_clock::now();
  result.compareSeconds = std::chrono::duration<double>(done - judged).count();
  result.wallSeconds = std::chrono::duration<double>(done - began).count();
  return result;
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
  if (v.comparison) {
    nlohmann::json leaves = nlohmann::json::array();
    for (const auto& l : v.comparison->leaves)
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
                        {"rmse_eager_fp64", number(l.rmseEager)},
                        {"rmse_compiled_fp64", number(l.rmseCompiled)},
                        {"tolerance", l.tolerance},
                        {"multiplier", l.multiplier},
                        {"passed", l.passed},
                        {"note", l.reason}});
    j["outputs"] = leaves;
  }
  return j;
}

}  // namespace tcfuzz
