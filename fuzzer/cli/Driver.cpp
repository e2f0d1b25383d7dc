#include "fuzzer/cli/Driver.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <torch/headeronly/version.h>

#include "fuzzer/worker/ProgramTester.h"
#include "fuzzer/worker/Sandbox.h"
#include "fuzzer/worker/SourceTree.h"
#include "fuzzer/worker/WorkerPool.h"
#include "fuzzer/cli/Settings.h"
#include "fuzzer/cli/commands/Commands.h"
#include "fuzzer/campaign/output/CampaignOutput.h"
#include "generators/OpCatalog.h"
#include "oracles/judge/OutputLoader.h"
#include "oracles/infra/SecretRedactor.h"
#include "oracles/infra/TorchInfo.h"

namespace tcfuzz {
namespace {

namespace fs = std::filesystem;

std::string versionText() {
  return fmt::format(
      "tcfuzz {}\nlinks LibTorch {} (git {}) from {}\nworkers run the torch of --python (default {}); any torch >= {}\n",
      TCFUZZ_VERSION, TORCH_VERSION, TCFUZZ_TORCH_GIT_VERSION, TCFUZZ_TORCH_DIR, TCFUZZ_DEFAULT_PYTHON,
      oracles::kMinimumTorch);
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
      "regress", "Re-run known findings under each --python's torch and write a CSV of their status "
                 "(still-failing, fixed, changed-signature, error); with several interpreters, a markdown matrix "
                 "of findings by release; --bisect-releases names where each finding appears and is fixed");
  registerOptions(*regress, "regress", options);
  regress->add_option("DIRS", regressDirs, "Folders of known findings (default: corpus/regressions)");

  std::vector<std::string> shardDirs;
  CLI::App* merge = app.add_subcommand(
      "merge", "Merge a night's campaign shards into one campaign directory (-o NIGHT): deduplicated findings with "
               "hit counts and first-seen times, triage of what is new, regress of the known bugs, and "
               "NIGHT/summary.md against the previous night (new, seen before, fixed, signature changed)");
  registerOptions(*merge, "merge", options);
  merge->add_option("SHARD_DIRS", shardDirs, "Campaign output directories (tcfuzz fuzz -o DIR); a missing or broken "
                                             "one is reported and skipped")
      ->required();

  CLI::App* plot = app.add_subcommand(
      "plot", "Draw a campaign's plot_data (programs, speed, features, queue, findings, unique bugs over run time; a "
              "merged night: one line per shard) as OUT/plots/campaign.png and campaign.svg with matplotlib");
  registerOptions(*plot, "plot", options);
  plot->add_option("OUT", campaignDir, "Campaign output directory or merged night")->required()->check(CLI::ExistingDirectory);

  CLI::App* ops = app.add_subcommand("ops", "Print the op catalog and its coverage of the dispatcher's aten operators");
  bool opsJson = false;
  ops->add_flag("--json", opsJson, "Print JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  // Built once: the commands mask these secrets in what they write, and these two in what they print.
  const SecretRedactor secrets = secretsFrom(options);
  StreamRedaction maskedOut(std::cout, secrets), maskedErr(std::cerr, secrets);
  if (version) {
    std::cout << versionText();
    return kExitOk;
  }
  try {
    if (run->parsed()) return runCommand(options, programs, secrets);
    if (gen->parsed()) return genCommand(options, secrets);
    if (fuzz->parsed()) {
      std::set<std::string> given;
      for (const CLI::Option* opt : fuzz->get_options())
        if (opt->count() > 0)
          for (const auto& name : opt->get_lnames()) given.insert("--" + name);
      return fuzzCommand(options, given, std::vector<std::string>(argv, argv + argc), secrets);
    }
    if (triage->parsed()) return triageCommand(options, campaignDir, secrets);
    if (minimize->parsed()) return minimizeCommand(options, findingPath, secrets);
    if (report->parsed()) return reportCommand(options, campaignDir, secrets);
    if (regress->parsed()) {
      if (regressDirs.empty())
        regressDirs.push_back(fs::exists("corpus/regressions") ? std::string("corpus/regressions")
                                                               : (sourceTree() / "corpus" / "regressions").string());
      return regressCommand(options, regressDirs, secrets);
    }
    if (merge->parsed()) return mergeCommand(options, shardDirs, secrets);
    if (plot->parsed()) return plotCommand(campaignDir, options.output);
    if (ops->parsed()) return opsCommand(opsJson);
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
  } catch (const DeviceError& e) {
    std::cerr << "tcfuzz: " << e.what() << "\n";
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
