#pragma once
// `tcfuzz gen`: writes generated programs, measures generation, and checks them in eager.
#include "fuzzer/Options.h"

namespace tcfuzz {

/// Generates options.count programs from (seed, start..start+count-1); writes .py and .json files
/// to options.out when set; with --validate runs each once in eager. Returns the exit code.
int genCommand(const Options& options);

}  // namespace tcfuzz
