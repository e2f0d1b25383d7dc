#pragma once
// Shared set-up for tests that start real worker zygotes with the venv's torch.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/process.hpp>

#include "fuzzer/worker/Sandbox.h"
#include "fuzzer/worker/ProgramTester.h"
#include "fuzzer/worker/WorkerPool.h"
#include "oracles/Comparator.h"

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
  spec.harness = std::filesystem::path(TCFUZZ_SOURCE_DIR) / "fuzzer/worker/zygote.py";
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

/// What a run of the tcfuzz binary printed on stdout, and its exit code.
struct CliRun {
  int exitCode;
  std::string out;
};

/// Runs the tcfuzz binary under test with `args` (stderr discarded).
inline CliRun runCli(const std::vector<std::string>& args) {
  namespace bp = boost::process;
  bp::ipstream out;
  bp::child c(TCFUZZ_BINARY, bp::args(args), bp::std_out > out, bp::std_err > bp::null);
  std::string all, line;
  while (std::getline(out, line)) all += line + "\n";
  c.wait();
  return {c.exit_code(), all};
}

/// "bwrap" where bubblewrap works on this machine, else "none" (for --sandbox).
inline std::string sandboxArg() { return probeBubblewrap().empty() ? "bwrap" : "none"; }

/// The whole content of a text file ("" when unreadable).
inline std::string readText(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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

/// Runs the tcfuzz binary under test with `args`, collecting stdout and stderr together.
inline Finished runTcfuzz(const std::vector<std::string>& args) {
  namespace bp = boost::process;
  bp::ipstream out;
  bp::child c(TCFUZZ_BINARY, bp::args(args), (bp::std_out & bp::std_err) > out);
  std::string all, line;
  while (std::getline(out, line)) all += line + "\n";
  c.wait();
  return {c.exit_code(), all};
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
