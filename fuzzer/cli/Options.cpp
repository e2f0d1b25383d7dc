#include "fuzzer/cli/Options.h"

#include <algorithm>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>

namespace tcfuzz {
namespace {

/// The items of a comma-separated list (a subcommand list, a choice list).
std::vector<std::string> items(std::string_view list) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in{std::string(list)};
  while (std::getline(in, item, ',')) out.push_back(item);
  return out;
}

bool takes(std::string_view list, std::string_view subcommand) {
  for (const auto& item : items(list))
    if (item == subcommand) return true;
  return false;
}

/// A value outside an option's choices. Not a CLI::ValidationError, which CLI11 would reword as
/// "FLAG: MESSAGE": the message stays choiceError's own sentence.
class ChoiceError : public CLI::ParseError {
 public:
  explicit ChoiceError(std::string message)
      : CLI::ParseError("ChoiceError", std::move(message), CLI::ExitCodes::ValidationError) {}
};

template <class T>
CLI::Option* add(CLI::App& app, const char* flag, T& member, const char* help) {
  return app.add_option(flag, member, help)->capture_default_str();
}

CLI::Option* add(CLI::App& app, const char* flag, bool& member, const char* help) {
  return app.add_flag(flag, member, help);
}

CLI::Option* add(CLI::App& app, const char* flag, std::vector<std::string>& member, const char* help) {
  return app.add_option(flag, member, help)->allow_extra_args(false);
}

/// A std::string option that takes only `choices`; its help is the table's (no choices appended).
void addChoice(CLI::App& app, const char* flag, std::string& member, const char* choices, const char* help) {
  CLI::Option* option = add(app, flag, member, help);
  std::string name = option->get_name();
  option->check(CLI::Validator(
      [name, choices](std::string& value) -> std::string {
        for (const auto& choice : items(choices))
          if (value == choice) return {};
        throw ChoiceError(choiceError(name, choices, value));
      },
      ""));
}

}  // namespace

std::string choiceError(std::string_view flag, std::string_view choices, std::string_view value) {
  std::vector<std::string> allowed = items(choices);
  std::string list;
  for (size_t i = 0; i < allowed.size(); ++i)
    list += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + allowed[i];
  return std::string(flag) + " takes " + list + ", not " + std::string(value);
}

void registerOptions(CLI::App& app, std::string_view subcommand, Options& options) {
#define TCFUZZ_OPTION(Type, member, flag, dflt, subcommands, help) \
  if (takes(subcommands, subcommand)) add(app, flag, options.member, help);
#define TCFUZZ_CHOICE_OPTION(member, flag, dflt, subcommands, choices, help) \
  if (takes(subcommands, subcommand)) addChoice(app, flag, options.member, choices, help);
#include "fuzzer/cli/Options.def"
#undef TCFUZZ_CHOICE_OPTION
#undef TCFUZZ_OPTION
}

int workerCount(const Options& options) {
  if (options.workers > 0) return options.workers;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace tcfuzz
