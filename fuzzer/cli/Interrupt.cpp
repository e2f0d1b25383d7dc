#include "fuzzer/cli/Interrupt.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "fuzzer/worker/ParentDeath.h"

namespace tcfuzz {

namespace fs = std::filesystem;

InterruptCleanup::InterruptCleanup(std::vector<fs::path> scratch)
    : scratch_(std::move(scratch)), signals_([this](int sig) { onSignal(sig); }) {}

void InterruptCleanup::onSignal(int sig) {
  static const char msg[] = "\ntcfuzz: interrupted; stopping the workers and removing temporary files\n";
  [[maybe_unused]] auto w = ::write(2, msg, sizeof msg - 1);
  // The workers first, so none writes into a directory being removed. A worker's children die with
  // it (parent-death signal, or the sandbox's PID namespace).
  killChildProcessGroups();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (const auto& dir : scratch_) {
    std::error_code ec;
    for (int attempt = 0; attempt < 3 && fs::exists(dir, ec); ++attempt) fs::remove_all(dir, ec);
  }
  ::_exit(128 + sig);
}

}  // namespace tcfuzz
