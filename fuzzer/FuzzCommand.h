#pragma once
// `tcfuzz fuzz`: the campaign (fuzzer/Campaign.h) wired to an output directory, a worker pool,
// a status view and the stop signals.
#include <set>
#include <string>
#include <vector>

#include "fuzzer/Options.h"

namespace tcfuzz {

/// Runs or resumes a campaign. `given` holds the long names of the flags present on the command
/// line (a given compile flag pins that dimension); `argv` is recorded in OUT/cmdline.
/// Returns the exit code: 0 when a bound or a signal ended it, 3 when the disk filled or workers failed.
int fuzzCommand(const Options& options, const std::set<std::string>& given, const std::vector<std::string>& argv);

/// Parses --max-time: "600", "90s", "10m", "2h" (seconds; 0 = unbounded); std::invalid_argument otherwise.
double parseDuration(const std::string& text);

}  // namespace tcfuzz
