#pragma once
// Builds the objects a subcommand needs from the options and runs it (libFuzzer's FuzzerDriver).
#include <string>
#include <vector>

#include "fuzzer/cli/Options.h"

namespace tcfuzz {

/// Exit codes that are not verdicts (those come from oracles::exitCodeFor).
enum ExitCode : int { kExitOk = 0, kExitUsage = 2, kExitEnvironment = 3 };

/// Parses argv and dispatches on the subcommand. Returns the process exit code.
int runDriver(int argc, char** argv);

}  // namespace tcfuzz
