#include "fuzzer/campaign/StopSignals.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace tcfuzz {

namespace {
sigset_t stopSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}
}  // namespace

StopSignals::StopSignals(std::function<void(int)> onFirstSignal) : onFirstSignal_(std::move(onFirstSignal)) {
  sigset_t set = stopSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signalFd_ = ::signalfd(-1, &set, SFD_CLOEXEC);
  wakeFd_ = ::eventfd(0, EFD_CLOEXEC);
  if (signalFd_ < 0 || wakeFd_ < 0) throw std::runtime_error(std::string("cannot watch signals: ") + std::strerror(errno));
  watcher_ = std::thread(&StopSignals::watch, this);
}

StopSignals::~StopSignals() {
  uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wakeFd_, &one, sizeof one);
  if (watcher_.joinable()) watcher_.join();
  ::close(signalFd_);
  ::close(wakeFd_);
  sigset_t set = stopSet();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

void StopSignals::watch() {
  int received = 0;
  while (true) {
    pollfd fds[2] = {{signalFd_, POLLIN, 0}, {wakeFd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    signalfd_siginfo info;
    if (::read(signalFd_, &info, sizeof info) != sizeof info) continue;
    int sig = static_cast<int>(info.ssi_signo);
    if (++received == 1) {
      onFirstSignal_(sig);
    } else {
      static const char msg[] = "\ntcfuzz: second signal, exiting now (findings are already in findings.sqlite)\n";
      [[maybe_unused]] auto w = ::write(2, msg, sizeof msg - 1);
      ::_exit(128 + sig);
    }
  }
}

StopDeadline::StopDeadline() : watcher_(&StopDeadline::watch, this) {}

StopDeadline::~StopDeadline() {
  {
    std::lock_guard lock(mutex_);
    disarmed_ = true;
  }
  changed_.notify_all();
  watcher_.join();
}

void StopDeadline::armAt(Clock::time_point deadline, std::string message, int exitCode) {
  {
    std::lock_guard lock(mutex_);
    if (deadline_ && *deadline_ <= deadline) return;
    deadline_ = deadline;
    message_ = std::move(message);
    exitCode_ = exitCode;
  }
  changed_.notify_all();
}

void StopDeadline::watch() {
  // It may start before StopSignals blocks SIGINT and SIGTERM: a stop signal must never land here.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::unique_lock lock(mutex_);
  while (!disarmed_) {
    if (!deadline_) {
      changed_.wait(lock);
      continue;
    }
    if (Clock::now() < *deadline_) {
      changed_.wait_until(lock, *deadline_);
      continue;
    }
    std::string line = "\ntcfuzz: " + message_ + "\n";
    [[maybe_unused]] auto w = ::write(2, line.data(), line.size());
    ::_exit(exitCode_);
  }
}

}  // namespace tcfuzz
