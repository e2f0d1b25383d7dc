#include "fuzzer/cli/Options.h"

#include <algorithm>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>

namespace tcfuzz {
namespace {

bool takes(std::string_view list, std::string_view subcommand) {
  std::string item;
  std::istringstream in{std::string(list)};
  while (std::getline(in, item, ','))
    if (item == subcommand) return true;
  return false;
}

template <class T>
void add(CLI::App& app, const char* flag, T& member, const char* help) {
  app.add_option(flag, member, help)->capture_default_str();
}

void add(CLI::App& app, const char* flag, bool& member, const char* help) { app.add_flag(flag, member, help); }

void add(CLI::App& app, const char* flag, std::vector<std::string>& member, const char* help) {
  app.add_option(flag, member, help)->allow_extra_args(false);
}

}  // namespace

void registerOptions(CLI::App& app, std::string_view subcommand, Options& options) {
#define TCFUZZ_OPTION(Type, member, flag, dflt, subcommands, help) \
  if (takes(subcommands, subcommand)) add(app, flag, options.member, help);
#include "fuzzer/cli/Options.def"
#undef TCFUZZ_OPTION
}

int workerCount(const Options& options) {
  if (options.workers > 0) return options.workers;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace tcfuzz
