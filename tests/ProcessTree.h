#pragma once
// For tests that kill tcfuzz: the test process becomes a child subreaper, so whatever tcfuzz leaves
// behind is reparented to it and can be found (and reaped) by walking /proc.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace tcfuzz::test_support {

/// Makes this process the subreaper of everything it starts (orphans come back to it).
inline void becomeSubreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }

/// Reaps every exited child of this process (orphans included), without blocking.
inline void reapZombies() {
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

/// The live (non-zombie) processes whose parent chain leads to this process: pid -> command name.
inline std::map<pid_t, std::string> liveDescendants() {
  std::map<pid_t, pid_t> parent;
  std::map<pid_t, std::string> name;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string base = e.path().filename().string();
    if (base.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    auto open = stat.find('('), close = stat.rfind(')');
    if (close == std::string::npos || close + 4 > stat.size()) continue;
    char state = stat[close + 2];
    if (state == 'Z' || state == 'X') continue;
    pid_t pid = std::stoi(base);
    parent[pid] = static_cast<pid_t>(std::strtol(stat.c_str() + close + 4, nullptr, 10));
    name[pid] = stat.substr(open + 1, close - open - 1) + " " + stat.substr(close + 2, 1);
    std::ifstream cmd(e.path() / "cmdline");
    std::string args;
    std::getline(cmd, args, '\0');  // the program, for the diagnosis
    if (std::string more; std::getline(cmd, more, '\0')) args += " " + more;
    name[pid] += " [" + args + "]";
  }
  std::map<pid_t, std::string> found;
  pid_t self = ::getpid();
  for (const auto& [pid, ppid] : parent) {
    pid_t p = ppid;
    for (int depth = 0; depth < 64 && p > 1; ++depth) {
      if (p == self) {
        found[pid] = name[pid];
        break;
      }
      auto it = parent.find(p);
      if (it == parent.end()) break;
      p = it->second;
    }
  }
  return found;
}

/// Polls (reaping as it goes) until no descendant is left or `limit` passes; returns what is left.
inline std::map<pid_t, std::string> descendantsAfter(std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    reapZombies();
    auto left = liveDescendants();
    if (left.empty() || std::chrono::steady_clock::now() >= deadline) return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

/// Kills whatever is left (so that one failed test does not leak into the next).
inline void killDescendants() {
  for (const auto& [pid, name] : liveDescendants()) ::kill(pid, SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  reapZombies();
}

/// Starts `argv` with stdout and stderr to `log`, `extraEnv` ("NAME=value") added to this
/// process's environment; returns its pid.
inline pid_t spawnLogged(const std::vector<std::string>& argv, const std::filesystem::path& log,
                         const std::vector<std::string>& extraEnv = {}) {
  pid_t pid = ::fork();
  if (pid == 0) {
    for (const auto& kv : extraEnv) ::putenv(const_cast<char*>(kv.c_str()));
    FILE* f = std::fopen(log.c_str(), "w");
    if (f) {
      ::dup2(fileno(f), 1);
      ::dup2(fileno(f), 2);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

/// Waits for `pid` up to `limit`; its exit status, or nullopt-like -1 when it is still running.
inline int waitFor(pid_t pid, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

/// Polls `ready` every 200 ms up to `limit`; whether it became true.
template <typename Ready>
bool waitUntil(Ready ready, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

}  // namespace tcfuzz::test_support
