#include "fuzzer/worker/WorkerPool.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include <boost/process.hpp>
#include <boost/process/posix.hpp>
#include <fmt/format.h>

#include "fuzzer/worker/ParentDeath.h"

namespace bp = boost::process;
using Clock = std::chrono::steady_clock;

namespace tcfuzz {

std::filesystem::path sharedHeaderCacheDir() {
  for (auto [variable, under] : {std::pair{"XDG_CACHE_HOME", ""}, std::pair{"HOME", ".cache"}})
    if (const char* base = std::getenv(variable); base != nullptr && *base == '/')
      return std::filesystem::path(base) / under / "tcfuzz" / "precompiled-headers";
  return {};
}

/// The zygote process and the parent's ends of its pipes.
struct Worker::Process {
  bp::group group;
  bp::child child;
  int toChild = -1;    ///< write end of the zygote's stdin
  int fromChild = -1;  ///< read end of the zygote's stdout
  std::filesystem::path log;

  ~Process() {
    if (toChild >= 0) ::close(toChild);
    if (fromChild >= 0) ::close(fromChild);
    std::error_code ec;
    if (group.valid()) group.terminate(ec);  // SIGKILL to the whole group
    if (child.valid()) child.wait(ec);
  }
};

Worker::Worker(WorkerSpec spec, int index, const std::atomic<bool>* cancelled)
    : spec_(std::move(spec)), index_(index), cancelled_(cancelled) {
  if (!spec_.gpus.empty()) {
    gpu_ = spec_.gpus[static_cast<size_t>(index) % spec_.gpus.size()];
    spec_.extraEnv["CUDA_VISIBLE_DEVICES"] = gpu_;  // nothing touches CUDA before the fork; each child sees one GPU
  }
  // A relative interpreter path means the caller's directory; inside the sandbox it would mean another.
  // Lexically normal too: a "../" through a folder the sandbox does not show would not resolve there.
  if (spec_.python.string().find('/') != std::string::npos)
    spec_.python = std::filesystem::absolute(spec_.python).lexically_normal();
}

Worker::~Worker() { stop(); }

std::string Worker::logTail() const {
  if (!process_) return "";
  std::ifstream in(process_->log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return spec_.secrets.mask(text.size() > 2000 ? text.substr(text.size() - 2000) : text);
}

const Hello& Worker::start() {
  if (process_ && process_->child.running() && hello_) return *hello_;
  process_.reset();
  hello_.reset();
  buffer_.clear();
  // A path (not a bare name looked up on PATH) that is not an executable: say so, not "did not start".
  if (spec_.python.string().find('/') != std::string::npos && ::access(spec_.python.c_str(), X_OK) != 0)
    throw WorkerStartError(fmt::format("there is no Python interpreter at {}: {}", spec_.python.string(),
                                       std::strerror(errno)));

  std::filesystem::create_directories(spec_.workDir);
  auto cacheDir = spec_.inductorCacheDir.empty() ? spec_.workDir / "inductor-cache" : spec_.inductorCacheDir;
  std::filesystem::create_directories(cacheDir);
  std::filesystem::create_directories(spec_.workDir / "cache");
  std::filesystem::path headerCache = spec_.headerCacheDir;
  if (!headerCache.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(headerCache, ec);
    if (ec) {  // the headers are rebuilt inside the work directory: slower, never wrong
      fmt::print(stderr, "tcfuzz: warning: cannot create the precompiled-header cache {} ({}); each run builds its own\n",
                 headerCache.string(), ec.message());
      headerCache.clear();
    }
  }
  // The environment: an allowlist of the host's (no credential ever), then what tcfuzz sets itself.
  std::map<std::string, std::string> env = workerEnvironment(hostEnvironment(), spec_.passEnv);
  env["TORCHINDUCTOR_CACHE_DIR"] = cacheDir.string();
  env["TRITON_CACHE_DIR"] = (cacheDir / "triton").string();
  env["XDG_CACHE_HOME"] = (spec_.workDir / "cache").string();
  if (!headerCache.empty()) env["TCFUZZ_HEADER_CACHE_DIR"] = headerCache.string();
  env["PYTHONDONTWRITEBYTECODE"] = "1";
  env["PYTHONNOUSERSITE"] = "1";  // nothing from a home directory's site-packages
  std::filesystem::create_directories(spec_.workDir / "tmp");
  std::filesystem::create_directories(spec_.workDir / "home");
  env["TMPDIR"] = (spec_.workDir / "tmp").string();
  env["HOME"] = (spec_.workDir / "home").string();
  env["USER"] = env["LOGNAME"] = "tcfuzz";  // getpass.getuser() without a password database lookup
  for (const auto& [k, v] : spec_.extraEnv) env[k] = v;
  bp::environment childEnv;
  for (const auto& [k, v] : env) childEnv[k] = v;

  SandboxPolicy policy{spec_.sandbox, {spec_.workDir, cacheDir}, {}, spec_.device};
  if (!headerCache.empty()) policy.writable.push_back(headerCache);
  if (spec_.sandbox == SandboxKind::Bubblewrap) {
    if (!interpreterTrees_) interpreterTrees_ = interpreterTrees(spec_.python, env);
    policy.readable = *interpreterTrees_;
    policy.readable.push_back(std::filesystem::absolute(spec_.harness).parent_path());
    for (const char* cuda : {"CUDA_HOME", "CUDA_PATH"})
      if (auto it = env.find(cuda); it != env.end() && !it->second.empty()) policy.readable.emplace_back(it->second);
  }
  std::vector<std::string> argv = sandboxedCommand(
      policy, {spec_.python.string(), "-u", spec_.harness.string(), "--device", spec_.device, "--child-jobs",
               std::to_string(spec_.childJobs), "--child-rss-mb", std::to_string(spec_.childRssMb),
               "--max-processes", std::to_string(spec_.maxProcesses), "--max-file-mb", std::to_string(spec_.maxFileMb),
               "--max-open-files", std::to_string(spec_.maxOpenFiles), "--credential-marks", credentialMarks(),
               "--kernel-linker", spec_.kernelLinker});
  if (spec_.freshUntilWarm) argv.push_back("--fresh-until-warm");

  int inPipe[2], outPipe[2];
  if (::pipe2(inPipe, O_CLOEXEC) != 0 || ::pipe2(outPipe, O_CLOEXEC) != 0)
    throw WorkerStartError(fmt::format("cannot create pipes for worker {}: {}", index_, std::strerror(errno)));
  auto proc = std::make_unique<Process>();
  proc->toChild = inPipe[1];
  proc->fromChild = outPipe[0];
  proc->log = spec_.workDir / fmt::format("zygote-{}.log", index_);
  int logFd = ::open(proc->log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (logFd < 0)
    throw WorkerStartError(fmt::format("cannot open {}: {}", proc->log.string(), std::strerror(errno)));
  std::error_code ec;
  auto exe = argv[0].find('/') == std::string::npos ? bp::search_path(argv[0]) : boost::filesystem::path(argv[0]);
  proc->child = bp::child(exe, bp::args(std::vector<std::string>(argv.begin() + 1, argv.end())),
                          bp::posix::fd.bind(0, inPipe[0]), bp::posix::fd.bind(1, outPipe[1]),
                          bp::posix::fd.bind(2, logFd), childEnv, proc->group, dieWithParent(), ec);
  ::close(inPipe[0]);
  ::close(outPipe[1]);
  ::close(logFd);
  if (ec) {
    ::close(inPipe[1]);
    ::close(outPipe[0]);
    proc->toChild = proc->fromChild = -1;
    throw WorkerStartError(fmt::format("cannot start worker {} ({}): {}", index_, argv[0], ec.message()));
  }
  process_ = std::move(proc);

  auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(spec_.startTimeoutSeconds * 1000));
  auto line = readLine(deadline);
  if (!line)
    throw WorkerStartError(fmt::format("worker {} {}. Its log ({}):\n{}", index_,
                                       cancelled_ && cancelled_->load() ? std::string("was stopped before its hello")
                                       : Clock::now() < deadline        ? std::string("exited before its hello")
                                                                        : fmt::format("did not start within {:.0f}s",
                                                                                      spec_.startTimeoutSeconds),
                                       process_->log.string(), logTail()));
  WorkerMessage msg;
  try {
    msg = decodeMessage(*line);
  } catch (const WorkerRefused& e) {
    throw WorkerStartError(fmt::format("the Python at {} cannot run tcfuzz's workers: {}", spec_.python.string(), e.what()));
  } catch (const ProtocolError& e) {
    throw WorkerStartError(fmt::format("worker {} started badly: {}\n{}", index_, e.what(), logTail()));
  }
  if (!std::holds_alternative<Hello>(msg))
    throw WorkerStartError(fmt::format("worker {} sent a result before its hello", index_));
  Hello hello = std::get<Hello>(msg);
  if (auto why = oracles::unsupportedTorch(hello.torch.version))
    throw WorkerStartError(fmt::format("the Python at {} cannot run tcfuzz's workers: {} (torch from {}). "
                                       "Pass --python with an interpreter whose torch is {} or newer.",
                                       spec_.python.string(), *why, hello.torchDir, oracles::kMinimumTorch));
  if (spec_.device.starts_with("cuda") && !hello.cudaAvailable)
    throw WorkerStartError(fmt::format("device {} was requested, but torch {} sees no CUDA GPU on this machine{}",
                                       spec_.device, hello.torch.version,
                                       hello.cudaError.empty() ? "" : ": " + hello.cudaError));
  zygoteWarm_ = hello.warm;
  hello_ = std::move(hello);
  return *hello_;
}

std::optional<std::string> Worker::readLine(Clock::time_point deadline) {
  while (true) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = spec_.secrets.mask(std::string_view(buffer_).substr(0, nl));  // a secret a program printed
      buffer_.erase(0, nl + 1);
      return line;
    }
    auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (remaining <= 0) return std::nullopt;
    if (cancelled_ && cancelled_->load()) return std::nullopt;
    pollfd pfd{process_->fromChild, POLLIN, 0};
    int n = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(remaining, 1000)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char chunk[65536];
    ssize_t got = ::read(process_->fromChild, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return std::nullopt;  // EOF: the zygote is gone
    buffer_.append(chunk, static_cast<size_t>(got));
  }
}

oracles::RunResult Worker::lostWorkerResult(const Job& job, oracles::RunStatus status, const std::string& why) {
  oracles::RunResult r;
  r.jobId = job.id;
  r.status = status;
  r.phase = "harness";
  r.signalName = "WORKER-LOST";
  r.stderrTail = why + "\n" + logTail();
  r.jobDir = job.jobDir;
  process_.reset();  // kills the group; the next job restarts the zygote
  hello_.reset();
  return r;
}

Job Worker::staged(Job job) {
  std::error_code ec;
  std::filesystem::create_directories(job.jobDir, ec);
  auto copyIn = [&](std::filesystem::path& file, const std::filesystem::path& into) {
    std::error_code copyEc;
    if (file.empty() || file.parent_path() == into) return;
    std::filesystem::create_directories(into, copyEc);
    auto target = into / file.filename();
    std::filesystem::copy_file(file, target, std::filesystem::copy_options::overwrite_existing, copyEc);
    if (!copyEc) file = target;  // else the job keeps the original path and fails on it as before
  };
  copyIn(job.program, job.jobDir);
  // A script's plugins are its companions, beside it; a program job's plugins each get a folder (names may clash).
  for (size_t i = 0; i < job.plugins.size(); ++i)
    copyIn(job.plugins[i], job.kind == "script" ? job.jobDir : job.jobDir / fmt::format("plugin-{}", i));
  return job;
}

oracles::RunResult Worker::run(const Job& original) {
  auto began = Clock::now();
  start();
  const Job job = staged(original);
  std::string line = encodeJob(job) + "\n";
  const char* data = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t put = ::write(process_->toChild, data, left);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return lostWorkerResult(job, oracles::RunStatus::Signal, "worker pipe closed before the job was sent");
    data += put;
    left -= static_cast<size_t>(put);
  }
  // A zygote that warms lazily does so before its first compiled job: that job may take as long as a start.
  bool compiles = job.mode == RunMode::Compiled || job.kind == "bisect";
  double warming = compiles && !zygoteWarm_ ? spec_.startTimeoutSeconds : 0;
  if (compiles) zygoteWarm_ = true;
  auto deadline = began + std::chrono::milliseconds(
                              static_cast<int64_t>((job.limits.timeoutSeconds + spec_.graceSeconds + warming) * 1000));
  while (true) {
    auto reply = readLine(deadline);
    if (!reply && cancelled_ && cancelled_->load()) {
      process_.reset();  // kills the zygote and its job; the pool is shutting down
      hello_.reset();
      throw JobCancelled("job " + job.id + " abandoned: the run is stopping");
    }
    if (!reply) {
      // EOF from a zygote that died arrives before its sandbox (bwrap) has exited: give the process
      // a moment to go before calling it hung. A hung zygote stays alive through the wait.
      bool alive = process_->child.running();
      for (int i = 0; alive && i < 30; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        alive = process_->child.running();
      }
      return lostWorkerResult(job, alive ? oracles::RunStatus::Timeout : oracles::RunStatus::Signal,
                              alive ? "worker zygote stopped answering; killed and restarted"
                                    : "worker zygote died; restarted");
    }
    WorkerMessage msg;
    try {
      msg = decodeMessage(*reply);
    } catch (const ProtocolError& e) {
      return lostWorkerResult(job, oracles::RunStatus::Signal, e.what());
    }
    if (!std::holds_alternative<oracles::RunResult>(msg)) continue;
    auto result = std::get<oracles::RunResult>(std::move(msg));
    if (result.jobId != job.id) continue;  // a late answer to a job abandoned earlier
    result.jobDir = job.jobDir;
    result.times.roundTrip = std::chrono::duration<double>(Clock::now() - began).count();
    return result;
  }
}

void Worker::stop() {
  if (!process_) return;
  if (process_->toChild >= 0) {
    std::string quit = encodeQuit() + "\n";
    [[maybe_unused]] auto ignored = ::write(process_->toChild, quit.data(), quit.size());
    ::close(process_->toChild);
    process_->toChild = -1;
    std::error_code ec;
    for (int i = 0; i < 20 && process_->child.running(ec); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  process_.reset();
  hello_.reset();
}

WorkerPool::WorkerPool(WorkerSpec spec, size_t size) : spec_(std::move(spec)) {
  // A write to a zygote that just died must fail with EPIPE, not kill tcfuzz with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::future<Hello>> started;
  for (size_t i = 0; i < std::max<size_t>(size, 1); ++i) {
    std::promise<Hello> promise;
    started.push_back(promise.get_future());
    threads_.emplace_back(&WorkerPool::serve, this, i, std::move(promise));
  }
  try {
    for (size_t i = 0; i < started.size(); ++i) {
      Hello h = started[i].get();
      if (i == 0) hello_ = h;
    }
  } catch (...) {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (auto& t : threads_) t.join();
    throw;
  }
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::cancel() {
  std::deque<std::pair<Job, std::promise<oracles::RunResult>>> abandoned;
  {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
    abandoned.swap(queue_);
  }
  for (auto& [job, promise] : abandoned)
    promise.set_exception(std::make_exception_ptr(JobCancelled("job " + job.id + " abandoned: the run is stopping")));
  ready_.notify_all();
}

std::future<oracles::RunResult> WorkerPool::submit(Job job) {
  std::promise<oracles::RunResult> promise;
  auto future = promise.get_future();
  if (cancelled_) {
    promise.set_exception(std::make_exception_ptr(JobCancelled("job " + job.id + " refused: the run is stopping")));
    return future;
  }
  // A GPU no zygote is pinned to (an unpinned pool, another campaign's GPU) is no constraint.
  if (!job.gpu.empty() && std::find(spec_.gpus.begin(), spec_.gpus.end(), job.gpu) == spec_.gpus.end()) job.gpu.clear();
  bool pinned = !job.gpu.empty();
  {
    std::lock_guard lock(mutex_);
    queue_.emplace_back(std::move(job), std::move(promise));
  }
  if (pinned) ready_.notify_all();  // only that GPU's zygotes may take it
  else ready_.notify_one();
  return future;
}

void WorkerPool::serve(size_t index, std::promise<Hello> started) {
  Worker worker(spec_, static_cast<int>(index), &cancelled_);
  try {
    started.set_value(worker.start());
  } catch (...) {
    started.set_exception(std::current_exception());
    return;
  }
  // The first queued job this zygote may run: any job, or one pinned to its GPU.
  auto next = [&] {
    return std::find_if(queue_.begin(), queue_.end(),
                        [&](const auto& queued) { return queued.first.gpu.empty() || queued.first.gpu == worker.gpu(); });
  };
  while (true) {
    std::pair<Job, std::promise<oracles::RunResult>> item;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return stopping_ || next() != queue_.end(); });
      auto it = next();
      if (it == queue_.end()) return;  // stopping with nothing left for this zygote
      item = std::move(*it);
      queue_.erase(it);
    }
    try {
      oracles::RunResult result = worker.run(item.first);
      result.child.gpu = worker.gpu();
      jobSeconds_.fetch_add(result.times.childWall);
      item.second.set_value(std::move(result));
    } catch (...) {
      item.second.set_exception(std::current_exception());  // e.g. the zygote cannot be restarted
    }
  }
}

}  // namespace tcfuzz
