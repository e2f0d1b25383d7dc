#pragma once
// The triage subcommands: tcfuzz triage OUT, tcfuzz minimize FINDING, tcfuzz report OUT and
// tcfuzz regress [DIR...] (README, "Triage").
#include <string>
#include <vector>

#include "fuzzer/Options.h"
#include "fuzzer/Triage.h"

namespace tcfuzz {

/// Triages every untriaged signature of a campaign directory, then rewrites its reports and index.
/// Refuses a directory a running campaign holds (that campaign triages by itself).
int triageCommand(const Options& o, const std::string& campaignDir);
/// Minimizes one finding: a crashes/<id>/ folder (program.json with meta.json's config) or an IR
/// file tested under the command line's compile flags; writes a report folder.
int minimizeCommand(const Options& o, const std::string& finding);
/// Rewrites crashes/<id>/ reports and index.md/index.html from findings.sqlite (no torch runs).
int reportCommand(const Options& o, const std::string& campaignDir);
/// Re-runs known findings (folders with program.json and finding.json) against the installed torch
/// and writes a CSV: name, expected and observed verdict and signature, status (still-failing,
/// fixed, changed-signature, error).
int regressCommand(const Options& o, const std::vector<std::string>& dirs);

/// The triage knobs the options select (minimizer policy file, --no-ablation ...).
TriageSettings triageSettingsFrom(const Options& o, int workers);

}  // namespace tcfuzz
