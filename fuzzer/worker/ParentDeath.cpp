#include "fuzzer/worker/ParentDeath.h"

#include <dirent.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <utility>

namespace tcfuzz {

namespace {

/// The parent pid in /proc/<pid>/stat (after the command name, which may hold spaces); -1 if gone.
pid_t parentOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return -1;
  auto close = stat.rfind(')');
  if (close == std::string::npos || close + 4 > stat.size()) return -1;
  // ") S 1234 ..." : state, then the parent pid
  return static_cast<pid_t>(std::strtol(stat.c_str() + close + 4, nullptr, 10));
}

}  // namespace

int killChildProcessGroups() {
  pid_t self = ::getpid();
  int signalled = 0;
  DIR* proc = ::opendir("/proc");
  if (!proc) return 0;
  while (dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0' || parentOf(static_cast<pid_t>(pid)) != self) continue;
    // Each child tcfuzz starts leads its own group (bp::group); kill the group, then the child itself.
    if (::getpgid(static_cast<pid_t>(pid)) == pid) ::kill(-static_cast<pid_t>(pid), SIGKILL);
    ::kill(static_cast<pid_t>(pid), SIGKILL);
    ++signalled;
  }
  ::closedir(proc);
  return signalled;
}

SpawnThread::SpawnThread() : thread_(&SpawnThread::loop, this) {}

SpawnThread::~SpawnThread() {
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void SpawnThread::run(const std::function<void()>& task) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return task_ == nullptr; });  // one task at a time
  task_ = &task;
  done_ = false;
  changed_.notify_all();
  changed_.wait(lock, [this] { return done_; });
  task_ = nullptr;
  std::exception_ptr error = std::exchange(error_, nullptr);
  changed_.notify_all();
  if (error) std::rethrow_exception(error);
}

void SpawnThread::loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [this] { return quit_ || (task_ != nullptr && !done_); });
    if (task_ != nullptr && !done_) {
      const std::function<void()>* task = task_;
      lock.unlock();
      std::exception_ptr error;
      try {
        (*task)();
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      error_ = error;
      done_ = true;
      changed_.notify_all();
      continue;
    }
    if (quit_) return;
  }
}

}  // namespace tcfuzz
