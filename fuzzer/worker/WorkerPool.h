#pragma once
// Worker zygotes (fuzzer/worker/python/zygote.py) as Boost.Process children, and a pool of them.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fuzzer/worker/Protocol.h"
#include "fuzzer/worker/Sandbox.h"
#include "oracles/infra/SecretRedactor.h"

namespace tcfuzz {

/// How to start a zygote.
struct WorkerSpec {
  std::filesystem::path python;        ///< the interpreter whose torch is under test
  std::filesystem::path harness;       ///< the zygote's entry script, fuzzer/worker/python/zygote.py
  std::string device = "cpu";          ///< what jobs name: "cpu" or "cuda" (see gpus)
  /// GPUs the zygotes are pinned to, CUDA_VISIBLE_DEVICES entries (DeviceSelection::gpus): zygote i sees
  /// only gpus[i % size] as its cuda:0. Empty: unpinned.
  std::vector<std::string> gpus;
  std::filesystem::path workDir;       ///< writable in the sandbox: job dirs, caches, zygote logs
  std::filesystem::path inductorCacheDir;  ///< TORCHINDUCTOR_CACHE_DIR; empty: workDir/inductor-cache
  /// Where Inductor's C++ precompiled headers live (writable in the sandbox). Torch keys each by its
  /// preprocessed header, flags and compiler, and keeps them out of a fresh cache on purpose, so one
  /// directory serves every run of a user (sharedHeaderCacheDir()); empty: inside workDir's TMPDIR,
  /// rebuilt (about 6 s, 150 MB on CPU) by every run.
  std::filesystem::path headerCacheDir;
  SandboxKind sandbox = SandboxKind::Bubblewrap;
  double startTimeoutSeconds = 300;    ///< import torch on a cold disk, then the zygote warm-up (ISA probe), can be slow
  double graceSeconds = 30;            ///< beyond a job's timeout before the zygote is declared hung
  std::map<std::string, std::string> extraEnv;  ///< set by tcfuzz itself, on top of the allowlisted environment
  std::vector<std::string> passEnv;  ///< more host variables a worker may see (--worker-env; never a credential)
  int maxProcesses = 256;  ///< processes in one job's group before the zygote kills it as a refusal (0: no bound)
  int maxFileMb = 4096;    ///< RLIMIT_FSIZE of workers: the largest file a job may write (0: no bound)
  int maxOpenFiles = 4096; ///< RLIMIT_NOFILE of workers (0: inherited)
  int childJobs = 1;       ///< program jobs one warm persistent child serves before it is replaced (<= 1: none)
  /// Linker for Inductor's C++ kernels (--kernel-linker): "auto" (LLD where the machine and torch allow,
  /// else the default), "lld" (the zygote refuses without it) or "default". Only the link step differs.
  std::string kernelLinker = "default";
  int childRssMb = 3072;   ///< a persistent child whose RSS exceeds this is replaced after its job (0: no bound)
  /// Until a persistent child is warm, a program job that compiles nothing (eager, fp64) runs in a fresh
  /// child instead of waiting behind its warm-up compile (a campaign's first programs).
  bool freshUntilWarm = false;
  SecretRedactor secrets;  ///< masked in every line the zygote sends and in its log tail (results carry no secret)
};

/// The user's directory for Inductor's precompiled headers, shared by every run of this user:
/// $XDG_CACHE_HOME/tcfuzz/precompiled-headers, else ~/.cache/tcfuzz/precompiled-headers; empty when
/// neither variable is set.
std::filesystem::path sharedHeaderCacheDir();

/// The zygote could not be started, or its interpreter has no usable torch (none, or older than
/// oracles::kMinimumTorch). Any other torch is fine: one build drives every release.
struct WorkerStartError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The job was abandoned because the pool was cancelled (a campaign stopping); not a result.
struct JobCancelled : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One zygote. Not thread-safe: owned and driven by one thread, which should outlive the zygote
/// (the zygote dies with the thread that spawned it).
class Worker {
 public:
  /// `cancelled`, when given, is polled while a job runs: once true, the zygote is killed and run()
  /// throws JobCancelled.
  Worker(WorkerSpec spec, int index, const std::atomic<bool>* cancelled = nullptr);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  /// Starts the zygote if it is not running and returns its hello; throws WorkerStartError.
  const Hello& start();
  /// The GPU this zygote is pinned to (WorkerSpec::gpus[index % size]); "" when unpinned.
  const std::string& gpu() const { return gpu_; }
  /// Runs one job. A zygote that dies or hangs is restarted, and the job's result says what
  /// happened (status signal or timeout, phase "harness"); it never throws for that.
  oracles::RunResult run(const Job& job);
  /// Asks the zygote to quit, then kills its process group.
  void stop();

 private:
  std::optional<std::string> readLine(std::chrono::steady_clock::time_point deadline);
  oracles::RunResult lostWorkerResult(const Job& job, oracles::RunStatus status, const std::string& why);
  std::string logTail() const;
  /// Copies the job's program and plugins into its job directory (the only place the sandbox shows a
  /// job) and points the job at the copies.
  static Job staged(Job job);

  WorkerSpec spec_;
  int index_;
  std::string gpu_;  ///< the GPU this zygote is pinned to ("" unpinned)
  const std::atomic<bool>* cancelled_;
  struct Process;
  std::unique_ptr<Process> process_;
  std::optional<Hello> hello_;
  std::optional<std::vector<std::filesystem::path>> interpreterTrees_;  ///< asked of spec_.python once
  bool zygoteWarm_ = false;  ///< the running zygote has warmed up (Hello::warm, or it ran a compiled job)
  std::string buffer_;
};

/// N zygotes, each driven by its own thread; jobs are served in submission order.
class WorkerPool {
 public:
  /// Starts `size` zygotes in parallel; throws WorkerStartError if any fails to start.
  WorkerPool(WorkerSpec spec, size_t size);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Queues a job; the future holds its result (never an exception for a dead child).
  std::future<oracles::RunResult> submit(Job job);
  /// Abandons every queued and running job (their futures throw JobCancelled, running zygotes are
  /// killed within a second) and refuses later ones. Thread-safe; for a campaign that stops.
  void cancel();
  /// The first zygote's hello (torch version, device).
  const Hello& hello() const { return hello_; }
  size_t size() const { return threads_.size(); }
  /// The child wall time (RunResult::times.childWall) of every job this pool has run, of any kind and for
  /// any caller (a campaign's programs and confirmations, background triage, LLM lifts): its workers' time
  /// inside torch. Thread-safe.
  double jobSeconds() const { return jobSeconds_.load(); }

 private:
  void serve(size_t index, std::promise<Hello> started);

  WorkerSpec spec_;
  Hello hello_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::pair<Job, std::promise<oracles::RunResult>>> queue_;
  bool stopping_ = false;
  std::atomic<bool> cancelled_{false};
  std::atomic<double> jobSeconds_{0};
  std::vector<std::thread> threads_;
};

}  // namespace tcfuzz
