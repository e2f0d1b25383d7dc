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

std::optional<int> runToCompletion(const fs::path& exe, const std::vector<std::string>& args,
                                   const std::map<std::string, std::string>* env, const fs::path& stdoutFile,
                                   const fs::path& stderrFile, double timeoutSeconds) {
  bp::environment childEnv = boost::this_process::environment();
  if (env) {
    childEnv.clear();
    for (const auto& [k, v] : *env) childEnv[k] = v;
  }
  auto sink = [](const fs::path& file) {
    return boost::filesystem::path(file.empty() ? std::string("/dev/null") : file.string());
  };
  std::error_code ec;
  bp::child child(boost::filesystem::path(exe.string()), bp::args(args), childEnv, bp::std_in < bp::null,
                  bp::std_out > sink(stdoutFile), bp::std_err > sink(stderrFile), dieWithParent(), ec);
  if (ec) return std::nullopt;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
  while (child.running(ec) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (child.running(ec)) {
    child.terminate(ec);
    return std::nullopt;
  }
  child.wait(ec);
  return child.exit_code();
}

std::optional<ProbeAnswer> askPython(const fs::path& python, const std::string& script,
                                     const std::map<std::string, std::string>* env, double timeoutSeconds) {
  static std::atomic<uint64_t> asked{0};
  fs::path answer = fs::temp_directory_path() / fmt::format("tcfuzz-probe-{}-{}.txt", ::getpid(), asked++);
  std::optional<ProbeAnswer> out;
  if (auto code = runToCompletion(python, {"-c", script}, env, answer, {}, timeoutSeconds)) {
    out = ProbeAnswer{*code, ""};
    if (std::ifstream in(answer); in) out->printed.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::error_code ec;
  fs::remove(answer, ec);
  return out;
}

}  // namespace tcfuzz
