#pragma once
// A short trusted Python script asked one question (which folders an interpreter needs, where a
// package's model file lies): what it printed and how it exited. The answer travels through a file,
// never a pipe: a zygote that another thread forks meanwhile inherits a pipe's write end (Boost's pipes
// are not close-on-exec), and a read to EOF then never ends (seen: `tcfuzz run -j 2` hung 25 minutes).
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace tcfuzz {

struct ProbeAnswer {
  int exitCode = 0;
  std::string printed;  ///< its standard output (standard error is dropped)
};

/// Runs `python -c script` under `env` (null: this process's environment), with the parent-death
/// signal set; nullopt when it cannot start or is still running after `timeoutSeconds` (then killed).
std::optional<ProbeAnswer> askPython(const std::filesystem::path& python, const std::string& script,
                                     const std::map<std::string, std::string>* env, double timeoutSeconds = 120);

}  // namespace tcfuzz
