#pragma once
// The subcommands of tcfuzz, one file each (RunCommand.cpp, GenCommand.cpp, ...). Each turns its
// Options into settings (fuzzer/cli/Settings.h), runs, and returns the process exit code; the
// Driver parses argv and dispatches here. Each command masks `secrets` (the Driver's, built once from
// the environment) in every file and database row it writes; the Driver masks stdout and stderr.
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "fuzzer/cli/Options.h"
#include "fuzzer/triage/ReleaseMatrix.h"
#include "generators/OpCatalog.h"
#include "oracles/infra/SecretRedactor.h"

namespace tcfuzz {

/// `tcfuzz run`: each program in eager (twice), compiled and fp64, printed as text or JSON lines.
/// Returns the exit code of the first program that did not agree (oracles::exitCodeFor).
int runCommand(const Options& options, const std::vector<std::string>& programs, const SecretRedactor& secrets);

/// `tcfuzz gen`: generates options.count programs from (seed, start..start+count-1); writes .py and
/// .json files to options.out when set; with --validate runs each once in eager.
int genCommand(const Options& options, const SecretRedactor& secrets);

/// `tcfuzz ops`: prints catalogReport of the default catalog.
int opsCommand(bool json);
/// Every op of `catalog` (name, family, arity, accepted dtypes per input, attributes with their
/// domains, Python and ATen spellings) followed by the coverage of the aten:: namespace: the
/// number of distinct aten:: operator names the dispatcher knows (overloads folded), how many
/// the catalog's ATen spellings reference, and the percentage. `json`: one JSON document
/// {"ops": [...], "coverage": {"aten_ops", "covered", "percent", "referenced": [...]}};
/// otherwise human-readable text.
std::string catalogReport(const gen::OpCatalog& catalog, bool json);

/// `tcfuzz fuzz`: runs or resumes a campaign. `given` holds the long names of the flags present on
/// the command line (a given compile flag pins that dimension); `argv` is recorded in OUT/cmdline.
/// Returns 0 when a bound or a signal ended it, 3 when the disk filled or workers failed.
int fuzzCommand(const Options& options, const std::set<std::string>& given, const std::vector<std::string>& argv,
                const SecretRedactor& secrets);

/// `tcfuzz triage OUT`: triages every untriaged signature of a campaign directory, then rewrites its
/// reports and index. Refuses a directory a running campaign holds (that campaign triages by itself).
int triageCommand(const Options& options, const std::string& campaignDir, const SecretRedactor& secrets);

/// `tcfuzz minimize FINDING`: minimizes one finding, a crashes/<id>/ folder (program.json with
/// meta.json's config) or an IR file tested under the command line's compile flags; writes a report folder.
int minimizeCommand(const Options& options, const std::string& finding, const SecretRedactor& secrets);

/// `tcfuzz report OUT`: rewrites crashes/<id>/ reports and index.md/index.html from findings.sqlite
/// (no torch runs).
int reportCommand(const Options& options, const std::string& campaignDir, const SecretRedactor& secrets);

/// `tcfuzz regress [DIR...]`: re-runs known findings (folders with program.json and finding.json)
/// under the torch of each --python and writes a CSV: name, expected and observed verdict and signature,
/// status (still-failing, fixed, changed-signature, error).
int regressCommand(const Options& options, const std::vector<std::string>& dirs, const SecretRedactor& secrets);
/// regress's work without its output: every known finding of `dirs` (each a finding folder or a folder
/// of them) under each --python, one interpreter at a time, as a matrix sorted by release. Throws
/// std::invalid_argument when `dirs` hold no known finding.
ReleaseMatrix regressMatrix(const Options& options, const std::vector<std::string>& dirs, const SecretRedactor& secrets);

/// `tcfuzz merge SHARD_DIR... -o NIGHT`: merges a night's campaign shards into one campaign directory,
/// triages what is new, re-runs the known bugs (regress) and writes NIGHT/summary.md and night.json
/// against the previous night. A missing or broken shard is reported and skipped; none usable: exit 2.
int mergeCommand(const Options& options, const std::vector<std::string>& shardDirs, const SecretRedactor& secrets);

/// What drawing a campaign's plots came to: the exit code (0 drawn; 2 nothing to draw: no plot_data, no rows
/// yet, a malformed row or shards.json; 3 matplotlib missing, the script failed or overran), the one-line
/// reasons it gave (stderr), and the files it wrote, one a line.
struct PlotOutcome {
  int exitCode = 0;
  std::string message, printed;
};

/// Draws `campaignDir`'s plot_data (a merged night: each shard's, one line per shard) as dest/campaign.png and
/// dest/campaign.svg with fuzzer/campaign/output/plot_campaign.py under the set-up venv's Python (headless,
/// byte-identical for the same input), killed after `timeoutSeconds`. Reads plot_data and shards.json only.
PlotOutcome drawCampaignPlots(const std::filesystem::path& campaignDir, const std::filesystem::path& dest,
                              double timeoutSeconds);

/// `tcfuzz plot OUT [-o DIR]`: drawCampaignPlots into DIR (default OUT/plots), its reasons on stderr and the
/// files on stdout. Returns 0, 2 when there is nothing to draw, 3 when matplotlib is missing (run scripts/setup).
int plotCommand(const std::string& campaignDir, const std::string& dest);

}  // namespace tcfuzz
