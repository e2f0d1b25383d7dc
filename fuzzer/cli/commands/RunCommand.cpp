#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "fuzzer/cli/Driver.h"
#include "fuzzer/cli/Interrupt.h"
#include "fuzzer/cli/Settings.h"
#include "fuzzer/cli/commands/Commands.h"
#include "fuzzer/worker/ProgramTester.h"
#include "fuzzer/worker/WorkerPool.h"

namespace tcfuzz {
namespace {

namespace fs = std::filesystem;

std::string shapeText(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

void printRun(std::ostream& out, const char* label, const oracles::RunResult& r) {
  std::string timing = fmt::format("setup {:.3f}s, run {:.3f}s", r.times.setup, r.times.run);
  // run_s never holds the compile time (the worker reports it apart as compile_s).
  if (r.times.compile > 0)
    timing = fmt::format("setup {:.3f}s, compile {:.3f}s, run {:.3f}s", r.times.setup, r.times.compile, r.times.run);
  out << fmt::format("  {:<9}{}  ({})", label, r.summary(), timing);
  if (r.compileFacts)
    out << fmt::format("  graphs={} breaks={}", r.compileFacts->graphCount, r.compileFacts->graphBreaks);
  out << "\n";
  if (r.status == oracles::RunStatus::Signal && !r.stderrTail.empty()) {
    auto tail = r.stderrTail.substr(r.stderrTail.size() > 600 ? r.stderrTail.size() - 600 : 0);
    out << "           stderr: ..." << tail << "\n";
  }
}

void printText(std::ostream& out, const ProgramTestResult& t, const oracles::CompileConfig& config, uint64_t seed) {
  out << fmt::format("program   {}\nconfig    {} seed={}\n", t.program.string(), config.describe(), seed);
  printRun(out, "eager", t.runs.eager);
  printRun(out, "compiled", t.runs.compiled);
  printRun(out, "fp64", t.runs.fp64);
  if (t.verdict.comparison) {
    for (const auto& l : t.verdict.comparison->leaves) {
      out << fmt::format("  output {} {}{}: max_abs_diff={:.4g}", l.leaf, l.eagerDtype, shapeText(l.eagerShape),
                         l.maxAbsDiff);
      if (l.fp64Used)
        out << fmt::format(" rmse(eager,fp64)={:.4g} rmse(compiled,fp64)={:.4g}", l.rmseEager, l.rmseCompiled);
      out << fmt::format(" dtype={} shape={} nan/inf={}{}\n", l.dtypeMatch ? "match" : "DIFFER",
                         l.shapeMatch ? "match" : "DIFFER", l.nonFiniteMatch ? "match" : "DIFFER",
                         l.reason.empty() ? "" : "  (" + l.reason + ")");
    }
  }
  out << fmt::format("verdict   {}: {}\n", oracles::toString(t.verdict.verdict), t.verdict.reason);
}

}  // namespace

int runCommand(const Options& o, const std::vector<std::string>& programs, const SecretRedactor& secrets) {
  oracles::CompileConfig config = compileConfigFrom(o);
  ScratchDir work(o.workDir, o.keep);
  InterruptCleanup interrupt(work.kept() ? std::vector<fs::path>{} : std::vector<fs::path>{work.path()});
  WorkerSpec spec = workerSpecFrom(o, work.path(), secrets);

  int workers = workerCount(o);
  TestSettings settings = testSettingsFrom(o, workers);
  settings.threads = o.threads;  // run: torch's own default unless --threads is given
  settings.compile = config;
  settings.backward = o.backward;
  settings.persistent = spec.childJobs > 1;
  settings.confirmFindings = settings.persistent;  // a warm child's finding is re-checked fresh, cold cache

  WorkerPool pool(spec, static_cast<size_t>(workers));
  const oracles::TorchInfo& torch = pool.hello().torch;
  if (!o.json) std::cout << "workers: " << torch.summary() << "\n";
  for (const auto& option : config.inductorConfig.items())
    if (!pool.hello().hasInductorOption(option.key()))
      std::cerr << fmt::format("tcfuzz: torch {} has no Inductor option '{}': its compiled runs will fail to configure\n",
                               torch.version, option.key());
  ProgramTester tester(pool, oracles::Comparator{}, work.path() / "jobs");
  int exitCode = kExitOk;
  for (const auto& program : programs) {
    for (int i = 0; i < std::max(1, o.repeat); ++i) {
      ProgramTestResult result = tester.test(program, settings);
      if (o.json) {
        nlohmann::json j = toJson(result);
        j["config"] = result.judgedUnder.value_or(config).nonDefault();
        j["seed"] = o.seed;
        j["torch"] = torch.toJson();
        std::cout << j.dump() << std::endl;
      } else {
        printText(std::cout, result, result.judgedUnder.value_or(config), settings.seed);
      }
      if (exitCode == kExitOk) exitCode = oracles::exitCodeFor(result.verdict.verdict);
    }
  }
  if (o.keep || !o.workDir.empty()) std::cerr << "tcfuzz: job outputs kept in " << work.path().string() << "\n";
  return exitCode;
}

}  // namespace tcfuzz
