#pragma once
// SIGINT and SIGTERM as a stop request: the signals are blocked in every thread and read from a
// signalfd by one watcher thread, so no handler touches global state. The first signal calls the
// callback (a graceful stop); a second one exits at once (the campaign's state is already on disk).
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
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

/// The backstop of a stop that must finish in time (a Slurm job's --max-time, SIGTERM then SIGKILL):
/// once armed, a thread ends the process with _exit when the deadline passes before this object is
/// destroyed. Safe because a campaign commits every program to findings.sqlite as it is judged, and
/// everything tcfuzz started dies with it (ParentDeath.h).
class StopDeadline {
 public:
  using Clock = std::chrono::steady_clock;
  StopDeadline();
  /// Disarms it: the process ended in time.
  ~StopDeadline();
  StopDeadline(const StopDeadline&) = delete;
  StopDeadline& operator=(const StopDeadline&) = delete;

  /// Arms it for `deadline`, or keeps an earlier one. At the deadline, `message` goes to stderr and
  /// the process exits with `exitCode`. Thread-safe (the signal watcher arms it).
  void armAt(Clock::time_point deadline, std::string message, int exitCode);

 private:
  void watch();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<Clock::time_point> deadline_;
  std::string message_;
  int exitCode_ = 0;
  bool disarmed_ = false;
  std::thread watcher_;
};

}  // namespace tcfuzz
