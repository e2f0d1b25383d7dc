#include "fuzzer/Driver.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <torch/headeronly/version.h>

#include "fuzzer/ProgramTester.h"
#include "fuzzer/Sandbox.h"
#include "fuzzer/WorkerPool.h"
#include "fuzzer/Workspace.h"
#include "fuzzer/CatalogReport.h"
#include "fuzzer/GenerateCommand.h"
#include "fuzzer/FuzzCommand.h"
#include "fuzzer/TriageCommand.h"
#include "fuzzer/CampaignOutput.h"
#include "generators/OpCatalog.h"
#include "oracles/OutputLoader.h"

namespace tcfuzz {
namespace {

namespace fs = std::filesystem;

std::string versionText() {
  return fmt::format("tcfuzz {}\nbuilt against torch {} (git {})\nlibtorch {}\n", TCFUZZ_VERSION, TORCH_VERSION,
                     TCFUZZ_TORCH_GIT_VERSION, TCFUZZ_TORCH_DIR);
}

std::string shapeText(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

void printRun(std::ostream& out, const char* label, const oracles::RunResult& r) {
  std::string timing = fmt::format("setup {:.3f}s, run {:.3f}s", r.times.setup, r.times.run);
  if (r.times.compile > 0) timing = fmt::format("setup {:.3f}s, compile {:.3f}s, run {:.3f}s", r.times.setup,
                                                r.times.compile, r.times.run - r.times.compile);
  out << fmt::format("  {:<9}{}  ({})", label, r.summary(), timing);
  if (r.compileFacts)
    out << fmt::format("  graphs={} breaks={}", r.compileFacts->graphCount, r.compileFacts->graphBreaks);
  out << "\n";
  if (r.status == oracles::RunStatus::Signal && !r.stderrTail.empty()) {
    auto tail = r.stderrTail.substr(r.stderrTail.size() > 600 ? r.stderrTail.size() - 600 : 0);
    out << "           stderr: ..." << tail << "\n";
  }
}

void printText(std::ostream& out, const ProgramTestResult& t, const CompileConfig& config, uint64_t seed) {
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

int runCommand(const Options& o, const std::vector<std::string>& programs) {
  CompileConfig config = compileConfigFrom(o);
  ScratchDir work(o.workDir, o.keep);
  WorkerSpec spec = workerSpecFrom(o, work.path());

  TestSettings settings;
  settings.compile = config;
  settings.limits = Limits{o.timeout, o.memoryMb};
  settings.seed = static_cast<uint64_t>(o.seed);
  settings.device = o.device;
  settings.threads = o.threads;
  settings.backward = o.backward;
  for (const auto& p : o.plugins) settings.plugins.push_back(fs::absolute(p));

  WorkerPool pool(spec, static_cast<size_t>(workerCount(o)));
  ProgramTester tester(pool, oracles::Comparator{}, work.path() / "jobs");
  int exitCode = kExitOk;
  for (const auto& program : programs) {
    for (int i = 0; i < std::max(1, o.repeat); ++i) {
      ProgramTestResult result = tester.test(program, settings);
      if (o.json) {
        nlohmann::json j = toJson(result);
        j["config"] = config.nonDefault();
        j["seed"] = o.seed;
        std::cout << j.dump() << std::endl;
      } else {
        printText(std::cout, result, config, settings.seed);
      }
      if (exitCode == kExitOk) exitCode = oracles::exitCodeFor(result.verdict.verdict);
    }
  }
  if (o.keep || !o.workDir.empty()) std::cerr << "tcfuzz: job outputs kept in " << work.path().string() << "\n";
  return exitCode;
}

}  // namespace

int runDriver(int argc, char** argv) {
  CLI::App app{"tcfuzz: a differential fuzzer for torch.compile (eager vs compiled, arbitrated by fp64)"};
  app.require_subcommand(0, 1);
  bool version = false;
  app.add_flag("--version", version, "Print tcfuzz's version and the torch it was built against");

  Options options;
  std::vector<std::string> programs;
  CLI::App* run = app.add_subcommand("run", "Run program files in eager, compiled and fp64 workers and print the verdict");
  registerOptions(*run, "run", options);
  run->add_option("programs", programs, "Program files (README: 'Program contract')")
      ->required()
      ->check(CLI::ExistingFile);

  CLI::App* gen = app.add_subcommand("gen", "Generate programs (.py and .json) from a seed; --validate runs them in eager");
  registerOptions(*gen, "gen", options);
  CLI::App* fuzz = app.add_subcommand(
      "fuzz", "Run a campaign: generate and mutate programs, test each under a sampled compile configuration, "
              "record findings and queue new behaviour in an AFL-style output directory");
  registerOptions(*fuzz, "fuzz", options);
  std::string campaignDir, findingPath;
  std::vector<std::string> regressDirs;
  CLI::App* triage = app.add_subcommand(
      "triage", "Triage a campaign directory: minimize, ablate and verify each new signature, deduplicate the "
                "findings into bugs, write crashes/<id>/ reports and index.md/index.html (idempotent, resumable)");
  registerOptions(*triage, "triage", options);
  triage->add_option("OUT", campaignDir, "Campaign output directory")->required()->check(CLI::ExistingDirectory);
  CLI::App* minimize = app.add_subcommand(
      "minimize", "Minimize one finding (a crashes/<id>/ folder, or an IR .json under the given compile flags) and "
                  "write its report folder");
  registerOptions(*minimize, "minimize", options);
  minimize->add_option("FINDING", findingPath, "crashes/<id>/ folder or program .json")->required()->check(CLI::ExistingPath);
  CLI::App* report = app.add_subcommand(
      "report", "Rewrite a campaign's reports and its index (index.md, index.html) from findings.sqlite, without running torch");
  registerOptions(*report, "report", options);
  report->add_option("OUT", campaignDir, "Campaign output directory")->required()->check(CLI::ExistingDirectory);
  CLI::App* regress = app.add_subcommand(
      "regress", "Re-run known findings against the installed torch and write a CSV of their status "
                 "(still-failing, fixed, changed-signature)");
  registerOptions(*regress, "regress", options);
  regress->add_option("DIRS", regressDirs, "Folders of known findings (default: corpus/regressions)");

  CLI::App* ops = app.add_subcommand("ops", "Print the op catalog and its coverage of the dispatcher's aten operators");
  bool opsJson = false;
  ops->add_flag("--json", opsJson, "Print JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (version) {
    std::cout << versionText();
    return kExitOk;
  }
  try {
    if (run->parsed()) return runCommand(options, programs);
    if (gen->parsed()) return genCommand(options);
    if (fuzz->parsed()) {
      std::set<std::string> given;
      for (const CLI::Option* opt : fuzz->get_options())
        if (opt->count() > 0)
          for (const auto& name : opt->get_lnames()) given.insert("--" + name);
      return fuzzCommand(options, given, std::vector<std::string>(argv, argv + argc));
    }
    if (triage->parsed()) return triageCommand(options, campaignDir);
    if (minimize->parsed()) return minimizeCommand(options, findingPath);
    if (report->parsed()) return reportCommand(options, campaignDir);
    if (regress->parsed()) {
      if (regressDirs.empty())
        regressDirs.push_back(fs::exists("corpus/regressions") ? std::string("corpus/regressions")
                                                               : std::string(TCFUZZ_SOURCE_DIR) + "/corpus/regressions");
      return regressCommand(options, regressDirs);
    }
    if (ops->parsed()) {
      std::cout << catalogReport(gen::makeDefaultCatalog(), opsJson);
      return kExitOk;
    }
  } catch (const std::invalid_argument& e) {
    std::cerr << "tcfuzz: " << e.what() << "\n";
    return kExitUsage;
  } catch (const oracles::ConfigurationError& e) {
    std::cerr << "tcfuzz: " << e.what() << "\n";
    return kExitUsage;
  } catch (const CampaignDirError& e) {
    std::cerr << "tcfuzz: " << e.what() << "\n";
    return kExitUsage;
  } catch (const DiskFullError& e) {
    std::cerr << "tcfuzz: disk full: " << e.what() << "\n";
    return kExitEnvironment;
  } catch (const WorkerStartError& e) {
    std::cerr << "tcfuzz: " << e.what() << "\n";
    return kExitEnvironment;
  } catch (const std::exception& e) {
    std::cerr << "tcfuzz: error: " << e.what() << "\n";
    return kExitEnvironment;
  }
  std::cout << app.help();
  return kExitUsage;
}

}  // namespace tcfuzz
