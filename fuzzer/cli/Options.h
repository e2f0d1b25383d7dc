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
#define TCFUZZ_CHOICE_OPTION(member, flag, dflt, subcommands, choices, help) std::string member = dflt;
#include "fuzzer/cli/Options.def"
#undef TCFUZZ_CHOICE_OPTION
#undef TCFUZZ_OPTION
};

/// Registers on `app` the options whose subcommand list names `subcommand`; help comes from the table.
/// A value outside an option's declared choices fails app.parse with a CLI::ParseError whose text is
/// choiceError's (CLI::App::exit prints it; the Driver turns it into exit code 2).
void registerOptions(CLI::App& app, std::string_view subcommand, Options& options);

/// "--fp64 takes on-demand or always, not sometimes": the usage error of `value` given to `flag`, whose
/// allowed values are the comma-separated `choices`.
std::string choiceError(std::string_view flag, std::string_view choices, std::string_view value);

/// -j as a count: 0 means the number of cores.
int workerCount(const Options& options);

}  // namespace tcfuzz
