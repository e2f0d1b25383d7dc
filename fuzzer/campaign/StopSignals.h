#pragma once
// SIGINT and SIGTERM as a stop request: the signals are blocked in every thread and read from a
// signalfd by one watcher thread, so no handler touches global state. The first signal calls the
// callback (a graceful stop); a second one exits at once (the campaign's state is already on disk).
#include <functional>
#include <thread>

namespace tcfuzz {

class StopSignals {
 public:
  /// Blocks SIGINT and SIGTERM in this thread (threads started later inherit the mask) and starts
  /// the watcher. Construct it before any other thread.
  explicit StopSignals(std::function<void(int signal)> onFirstSignal);
  /// Stops the watcher and restores the signal mask.
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  void watch();

  std::function<void(int)> onFirstSignal_;
  int signalFd_ = -1;
  int wakeFd_ = -1;  ///< eventfd that ends the watcher
  std::thread watcher_;
};

}  // namespace tcfuzz
