#pragma once
// Shared set-up for tests that start real worker zygotes with the venv's torch.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/process.hpp>

#include "fuzzer/worker/Sandbox.h"
#include "fuzzer/worker/ProgramTester.h"
#include "fuzzer/worker/WorkerPool.h"
#include "oracles/judge/Comparator.h"

namespace tcfuzz::test_support {

/// A fresh directory under the system temp dir, removed at destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix) {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// A worker spec for the venv's Python, sandboxed with bubblewrap when this machine allows it; the
/// precompiled headers are the user's shared ones, as for tcfuzz itself.
inline WorkerSpec testWorkerSpec(const std::filesystem::path& workDir) {
  WorkerSpec spec;
  spec.python = TCFUZZ_DEFAULT_PYTHON;
  spec.harness = std::filesystem::path(TCFUZZ_SOURCE_DIR) / "fuzzer/worker/python/zygote.py";
  spec.workDir = workDir;
  spec.headerCacheDir = sharedHeaderCacheDir();
  spec.sandbox = probeBubblewrap().empty() ? SandboxKind::Bubblewrap : SandboxKind::None;
  return spec;
}

/// A temporary directory, one worker zygote and a ProgramTester over it: what the end-to-end script
/// tests share for a whole suite (each zygote start costs seconds).
struct OneWorkerTester {
  explicit OneWorkerTester(const std::string& name)
      : dir(name), pool(testWorkerSpec(dir.path()), 1), tester(pool, oracles::Comparator{}, dir.path() / "jobs") {}
  /// Runs `script` as a plain Python script in a worker child (600 s, 4 GiB), `companions` beside it.
  oracles::RunResult runScript(const std::filesystem::path& script,
                               const std::vector<std::filesystem::path>& companions = {}) {
    TestSettings s;
    s.limits = Limits{600, 4096};
    return tester.runScript(script, s, companions);
  }
  TempDir dir;
  WorkerPool pool;
  ProgramTester tester;
};

/// A script run's summary and its stdout and stderr tails: a failure message.
inline std::string describeRun(const oracles::RunResult& r) {
  return r.summary() + "\n--- stdout\n" + r.stdoutTail + "\n--- stderr\n" + r.stderrTail;
}

/// The interpreters of the extra torch releases scripts/setup installed (TCFUZZ_EXTRA_TORCH, as
/// .venv-torch-<version>/ in the source tree), oldest first by folder name; empty when there are none.
inline std::vector<std::filesystem::path> extraTorchPythons() {
  std::vector<std::filesystem::path> found;
  for (const auto& e : std::filesystem::directory_iterator(TCFUZZ_SOURCE_DIR))
    if (e.path().filename().string().starts_with(".venv-torch-") &&
        std::filesystem::exists(e.path() / "bin" / "python"))
      found.push_back(e.path() / "bin" / "python");
  std::sort(found.begin(), found.end());
  return found;
}

inline std::filesystem::path sourcePath(const std::string& relative) {
  return std::filesystem::path(TCFUZZ_SOURCE_DIR) / relative;
}

/// The whole content of a text file ("" when unreadable).
inline std::string readText(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// What a run of the tcfuzz binary printed: stdout and stderr apart, and its exit code.
struct CliRun {
  int exitCode;
  std::string out;
  std::string err;
};

/// A run of the tcfuzz binary under test with `args`, its stdout and stderr in files (no pipe a
/// grandchild could hold open), waited for at most `timeoutSeconds`. Past it, tcfuzz gets SIGTERM
/// (its own clean stop) and 10 s later SIGKILL, the exit code is 124 and stderr ends with a line
/// saying so: a hang fails the test with what tcfuzz printed instead of stalling ctest silently.
inline CliRun runTcfuzzBounded(const std::vector<std::string>& args, bool stderrIntoStdout,
                               double timeoutSeconds = 1200) {
  namespace bp = boost::process;
  TempDir dir("tcfuzz-cli");
  boost::filesystem::path out = (dir.path() / "stdout").string(), err = (dir.path() / "stderr").string();
  bp::child c = stderrIntoStdout ? bp::child(TCFUZZ_BINARY, bp::args(args), (bp::std_out & bp::std_err) > out)
                                 : bp::child(TCFUZZ_BINARY, bp::args(args), bp::std_out > out, bp::std_err > err);
  auto waitUntil = [&](std::chrono::steady_clock::time_point deadline) {
    std::error_code ec;
    while (c.running(ec) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return !c.running(ec);
  };
  auto start = std::chrono::steady_clock::now();
  bool finished = waitUntil(start + std::chrono::milliseconds(static_cast<int64_t>(timeoutSeconds * 1000)));
  if (!finished) {
    ::kill(c.id(), SIGTERM);
    if (!waitUntil(std::chrono::steady_clock::now() + std::chrono::seconds(10))) ::kill(c.id(), SIGKILL);
  }
  std::error_code ec;
  c.wait(ec);
  CliRun run{finished ? c.exit_code() : 124, readText(out.string()),
             stderrIntoStdout ? std::string() : readText(err.string())};
  if (!finished)
    (stderrIntoStdout ? run.out : run.err) +=
        "\n[test harness] tcfuzz " + args.front() + " was still running after " +
        std::to_string(static_cast<int>(timeoutSeconds)) + " s: stopped (SIGTERM, then SIGKILL)\n";
  return run;
}

/// Runs the tcfuzz binary under test with `args`: stdout in out, stderr in err (runTcfuzzBounded).
inline CliRun runCli(const std::vector<std::string>& args) { return runTcfuzzBounded(args, false); }

/// The last 4000 characters of every zygote log under `dir` (a kept work directory), each under its
/// path: what the workers said, for a failure message.
inline std::string zygoteLogs(const std::filesystem::path& dir) {
  std::string all;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!name.starts_with("zygote-") || !name.ends_with(".log")) continue;
    std::string text = readText(it->path());
    all += "\n--- " + it->path().string() + "\n" + (text.size() > 4000 ? text.substr(text.size() - 4000) : text);
  }
  return all;
}

/// "bwrap" where bubblewrap works on this machine, else "none" (for --sandbox).
inline std::string sandboxArg() { return probeBubblewrap().empty() ? "bwrap" : "none"; }

/// The value of `key` in a campaign's OUT/fuzzer_stats ("" when absent).
inline std::string fuzzerStat(const std::filesystem::path& out, const std::string& key) {
  std::ifstream in(out / "fuzzer_stats");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with(key + " ") || line.starts_with(key + ":")) return line.substr(line.find(" : ") + 3);
  return "";
}

/// A finished run of the tcfuzz binary: its exit code and stdout and stderr together.
struct Finished {
  int exitCode;
  std::string output;
};

/// Runs the tcfuzz binary under test with `args`, collecting stdout and stderr together
/// (runTcfuzzBounded).
inline Finished runTcfuzz(const std::vector<std::string>& args) {
  CliRun run = runTcfuzzBounded(args, true);
  return {run.exitCode, std::move(run.out)};
}

/// The lines of a text, without their line ends.
inline std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

/// The fields of one CSV line (RFC 4180 quoting).
inline std::vector<std::string> csvFields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') out.back() += line[++i];
    else if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

}  // namespace tcfuzz::test_support
