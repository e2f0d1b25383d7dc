#include "fuzzer/worker/PythonProbe.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include <boost/process.hpp>
#include <fmt/format.h>

#include "fuzzer/worker/ParentDeath.h"

namespace tcfuzz {

namespace fs = std::filesystem;
namespace bp = boost::process;

std::optional<ProbeAnswer> askPython(const fs::path& python, const std::string& script,
                                     const std::map<std::string, std::string>* env, double timeoutSeconds) {
  static std::atomic<uint64_t> asked{0};
  fs::path answer = fs::temp_directory_path() / fmt::format("tcfuzz-probe-{}-{}.txt", ::getpid(), asked++);
  bp::environment childEnv = boost::this_process::environment();
  if (env) {
    childEnv.clear();
    for (const auto& [k, v] : *env) childEnv[k] = v;
  }
  std::error_code ec;
  bp::child probe(boost::filesystem::path(python.string()), "-c", script, childEnv, bp::std_in < bp::null,
                  bp::std_out > boost::filesystem::path(answer.string()), bp::std_err > bp::null, dieWithParent(), ec);
  if (ec) return std::nullopt;
  // Boost.Process 1.74's wait_for waits the whole timeout for a child that already exited: poll.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
  while (probe.running(ec) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::optional<ProbeAnswer> out;
  if (probe.running(ec)) {
    probe.terminate(ec);
  } else {
    probe.wait(ec);
    out = ProbeAnswer{probe.exit_code(), ""};
    if (std::ifstream in(answer); in) out->printed.assign(std::istreambuf_iterator<char>(in), {});
  }
  fs::remove(answer, ec);
  return out;
}

}  // namespace tcfuzz
