#pragma once
// A short trusted Python script asked one question (which folders an interpreter needs, where a
// package's model file lies): what it printed and how it exited. The answer travels through a file,
// never a pipe: a zygote that another thread forks meanwhile inherits a pipe's write end (Boost's pipes
// are not close-on-exec), and a read to EOF then never ends (seen: `tcfuzz run -j 2` hung 25 minutes).
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tcfuzz {

struct ProbeAnswer {
  int exitCode = 0;
  std::string printed;  ///< its standard output (standard error is dropped)
};

/// Runs the trusted program `exe` with `args` to completion, its standard output and error written to
/// the files given (empty: discarded), under `env` (null: this process's environment), with the
/// parent-death signal set; polled, since Boost.Process 1.74's wait_for waits the whole timeout for a
/// child that already exited. Returns its exit code; nullopt when it cannot start or is still running
/// after `timeoutSeconds` (then killed).
std::optional<int> runToCompletion(const std::filesystem::path& exe, const std::vector<std::string>& args,
                                   const std::map<std::string, std::string>* env, const std::filesystem::path& stdoutFile,
                                   const std::filesystem::path& stderrFile, double timeoutSeconds);

/// Runs `python -c script` under `env` (null: this process's environment), with the parent-death
/// signal set; nullopt when it cannot start or is still running after `timeoutSeconds` (then killed).
std::optional<ProbeAnswer> askPython(const std::filesystem::path& python, const std::string& script,
                                     const std::map<std::string, std::string>* env, double timeoutSeconds = 120);

}  // namespace tcfuzz
