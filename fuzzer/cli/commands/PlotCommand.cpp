#include <fstream>
#include <iostream>
#include <iterator>

#include <fmt/format.h>

#include "fuzzer/cli/Driver.h"
#include "fuzzer/cli/Settings.h"
#include "fuzzer/cli/commands/Commands.h"
#include "fuzzer/worker/PythonProbe.h"
#include "fuzzer/worker/SourceTree.h"

namespace tcfuzz {

namespace fs = std::filesystem;

namespace {

/// The whole of a small text file ("" when unreadable).
std::string slurp(const fs::path& file) {
  std::ifstream in(file);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

PlotOutcome drawCampaignPlots(const fs::path& campaignDir, const fs::path& dest, double timeoutSeconds) {
  const fs::path python = TCFUZZ_DEFAULT_PYTHON;
  const fs::path script = sourceTree() / "fuzzer" / "campaign" / "output" / "plot_campaign.py";
  if (!fs::exists(python)) return {3, fmt::format("tcfuzz plot: {} does not exist: run scripts/setup\n", python.string()), ""};
  if (!fs::exists(script)) return {3, fmt::format("tcfuzz plot: the drawing script {} is missing\n", script.string()), ""};
  ScratchDir scratch("", false);
  fs::path printed = scratch.path() / "stdout.txt", said = scratch.path() / "stderr.txt";
  // -I: the venv's own packages only (no PYTHONPATH, no user site); the script picks the headless Agg backend.
  auto code = runToCompletion(python, {"-I", script.string(), campaignDir.string(), dest.string()}, nullptr, printed, said,
                              timeoutSeconds);
  if (!code)
    return {3, fmt::format("tcfuzz plot: {} did not finish within {:.0f} s (or could not start)\n", script.string(),
                           timeoutSeconds), ""};
  PlotOutcome outcome{*code, slurp(said), slurp(printed)};
  if (outcome.exitCode != 0 && outcome.exitCode != 2 && outcome.exitCode != 3) {
    // Died outside the script's own handling (a signal, an interpreter failure): its last words, briefly.
    std::string tail = outcome.message.size() > 1500 ? outcome.message.substr(outcome.message.size() - 1500)
                                                     : outcome.message;
    outcome.message = fmt::format("tcfuzz plot: {} exited with {}: {}\n", script.string(), outcome.exitCode, tail);
    outcome.exitCode = 3;
  }
  return outcome;
}

int plotCommand(const std::string& campaignDir, const std::string& dest) {
  fs::path out = campaignDir;
  fs::path where = dest.empty() ? out / "plots" : fs::path(dest);
  PlotOutcome drawn = drawCampaignPlots(out, where, 120);
  std::cerr << drawn.message;
  std::cout << drawn.printed;
  if (drawn.exitCode == 0) return kExitOk;
  return drawn.exitCode == 2 ? kExitUsage : kExitEnvironment;
}

}  // namespace tcfuzz
