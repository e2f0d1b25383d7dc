#pragma once
// Ctrl-C during a one-shot command (run, minimize, regress, triage): nothing it started is left
// running, and its temporary directories are gone.
#include <filesystem>
#include <vector>

#include "fuzzer/campaign/StopSignals.h"

namespace tcfuzz {

/// While alive, SIGINT or SIGTERM kills the process groups of every child (workers, their jobs),
/// removes `scratch` (each path and everything under it) and exits with 128 + the signal. Construct
/// it before any thread (StopSignals' rule), once the directories exist.
class InterruptCleanup {
 public:
  explicit InterruptCleanup(std::vector<std::filesystem::path> scratch);

 private:
  void onSignal(int signal);

  std::vector<std::filesystem::path> scratch_;
  StopSignals signals_;
};

}  // namespace tcfuzz
