#pragma once
// Command-line options, generated from the table in fuzzer/cli/Options.def.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace tcfuzz {

/// All options of all subcommands, with their defaults.
struct Options {
#define TCFUZZ_OPTION(Type, member, flag, dflt, subcommands, help) Type member = dflt;
#include "fuzzer/cli/Options.def"
#undef TCFUZZ_OPTION
};

/// Registers on `app` the options whose subcommand list names `subcommand`; help comes from the table.
void registerOptions(CLI::App& app, std::string_view subcommand, Options& options);

/// -j as a count: 0 means the number of cores.
int workerCount(const Options& options);

}  // namespace tcfuzz
