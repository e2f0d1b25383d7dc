#pragma once
// How triage runs programs: each case is emitted to a numbered file in a scratch folder, run through
// the ProgramTester, and removed with its job folders once its result is read.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzzer/worker/ProgramTester.h"
#include "generators/OpCatalog.h"
#include "generators/python/PythonEmitter.h"
#include "oracles/reporter/Minimizer.h"

namespace tcfuzz {

/// Tests, bisects and runs triage's programs. Thread-safe: test() may run concurrently.
class CaseTester {
 public:
  /// `tester` may be null (report-only use): then canRun() is false and running anything throws std::logic_error.
  CaseTester(const gen::OpCatalog& catalog, ProgramTester* tester, std::filesystem::path scratch);

  /// Whether there is a worker pool to run programs with.
  bool canRun() const { return tester_ != nullptr; }
  /// The emitter that turns a case's graph into its program text.
  const gen::PythonEmitter& emitter() const { return emitter_; }

  /// Tests `c` under `base` with the case's compile config and backward flag. Unreadable outputs and a
  /// rejected configuration become an InvalidProgram verdict; other errors propagate.
  ProgramTestResult test(const oracles::MinimizeCase& c, const TestSettings& base, const std::string& tag);
  /// test() for every case at once (the pool's parallelism); the first error is rethrown once all are done.
  std::vector<ProgramTestResult> testAll(const std::vector<oracles::MinimizeCase>& cases, const TestSettings& base,
                                         const std::string& tag);
  /// Runs torch._inductor.compiler_bisector on `c` (ProgramTester::bisect); spec: check and leaves.
  oracles::RunResult bisect(const oracles::MinimizeCase& c, const TestSettings& base, const nlohmann::json& spec);
  /// Runs `text` as a plain Python script named `fileName` in a fresh process (ProgramTester::runScript),
  /// with a timeout of at least 120 s (a cold import of torch and a compile).
  /// `companions` are files the script reads from its own folder (short_repro.py's plugin copies).
  /// With `traceInto`, torch's structured trace log is on (TORCH_TRACE) and its folder is moved there
  /// (replaced when present) before the job folder goes; no log written: `traceInto` is absent.
  oracles::RunResult runScript(const std::string& fileName, const std::string& text, const TestSettings& base,
                               const std::vector<std::filesystem::path>& companions = {},
                               const std::filesystem::path& traceInto = {});
  /// One judged run of the program `text` (a batch) under `settings` as it is (ProgramTester::screen), its file
  /// named after `tag` and removed after; its jobs' folders stay with the result.
  ProgramTestResult screen(const std::string& text, const TestSettings& settings, const std::string& tag);
  const oracles::Comparator& comparator() const { return tester().comparator(); }
  /// A fresh file name for the scratch folder: "<tag>-000042.py".
  std::string numberedFile(const std::string& tag);
  /// The child wall time of every job this tester ran (tests, bisects, scripts): what triage cost the workers.
  double workerSeconds() const { return workerSeconds_.load(); }

 private:
  ProgramTester& tester() const;
  /// Writes `text` to scratch/<fileName> and returns its path.
  std::filesystem::path writeScratch(const std::string& fileName, const std::string& text) const;

  ProgramTester* tester_;
  gen::PythonEmitter emitter_;
  std::filesystem::path scratch_;
  std::atomic<uint64_t> nextFile_{0};
  std::atomic<double> workerSeconds_{0};
};

}  // namespace tcfuzz
