#pragma once
// Nothing tcfuzz starts outlives it, even on kill -9: every child gets the Linux parent-death signal
// (SIGKILL) between fork and exec. That signal fires when the *thread* that forked the child exits, so
// a child that must live longer than the thread asking for it is spawned on a SpawnThread.
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

#include <csignal>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/process/extend.hpp>

namespace tcfuzz {

/// A Boost.Process initializer: the child is killed when the thread that spawned it exits (tcfuzz
/// killed included), and exits at once when tcfuzz is already gone by the time it runs. The
/// signal survives exec (of anything but a set-uid program). The child also starts with no signal
/// blocked: a signal mask survives exec too, and tcfuzz's threads block SIGINT and SIGTERM for its
/// signal thread (StopSignals), which would leave a child's own SIGTERM parent-death signal (the
/// zygote's) pending forever. Async-signal-safe.
inline auto dieWithParent() {
  pid_t parent = ::getpid();
  return boost::process::extend::on_exec_setup([parent](auto&) {
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
  });
}

/// Sends SIGKILL to every process group led by a direct child of this process (the zygotes, the
/// LLM server, and what they started in their groups): the last resort of an interrupted command,
/// which exits right after. Returns how many groups it signalled.
int killChildProcessGroups();

/// A thread that lives as long as this object and runs the spawns handed to it, so that a child
/// with a parent-death signal dies with the object's owner, not with the (possibly short-lived)
/// thread that asked for it: the LLM server restarted from a request thread, for instance.
class SpawnThread {
 public:
  SpawnThread();
  /// Finishes the task in progress, then ends the thread (the children it spawned get SIGKILL).
  ~SpawnThread();
  SpawnThread(const SpawnThread&) = delete;
  SpawnThread& operator=(const SpawnThread&) = delete;

  /// Runs `task` on the spawn thread and waits for it; its exception is rethrown here.
  void run(const std::function<void()>& task);

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable changed_;
  const std::function<void()>* task_ = nullptr;
  std::exception_ptr error_;
  bool done_ = false;
  bool quit_ = false;
  std::thread thread_;
};

}  // namespace tcfuzz
