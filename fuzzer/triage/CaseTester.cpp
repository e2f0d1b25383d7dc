#include "fuzzer/triage/CaseTester.h"

#include <algorithm>
#include <future>
#include <stdexcept>

#include <fmt/format.h>

#include "oracles/infra/AtomicFile.h"
#include "oracles/judge/OutputLoader.h"

namespace tcfuzz {

namespace fs = std::filesystem;

namespace {

/// Removes a file and a job folder, ignoring what is already gone.
void removeQuietly(const fs::path& file, const fs::path& jobDir) {
  std::error_code ec;
  fs::remove(file, ec);
  if (!jobDir.empty()) fs::remove_all(jobDir, ec);
}

}  // namespace

CaseTester::CaseTester(const gen::OpCatalog& catalog, ProgramTester* tester, fs::path scratch)
    : tester_(tester), emitter_(catalog), scratch_(std::move(scratch)) {}

ProgramTester& CaseTester::tester() const {
  if (!tester_) throw std::logic_error("triage without a worker pool cannot test programs");
  return *tester_;
}

ProgramTestResult CaseTester::screen(const std::string& text, const TestSettings& settings, const std::string& tag) {
  fs::path file = writeScratch(numberedFile(tag), text);
  ProgramTestResult r = tester().screen(file, settings);
  workerSeconds_.fetch_add(r.torchSeconds);
  std::error_code ignored;
  fs::remove(file, ignored);
  return r;
}

std::string CaseTester::numberedFile(const std::string& tag) { return fmt::format("{}-{:06d}.py", tag, nextFile_++); }

fs::path CaseTester::writeScratch(const std::string& fileName, const std::string& text) const {
  fs::create_directories(scratch_);
  fs::path file = scratch_ / fileName;
  writeFileAtomically(file, text);
  return file;
}

ProgramTestResult CaseTester::test(const oracles::MinimizeCase& c, const TestSettings& base, const std::string& tag) {
  ProgramTester& programs = tester();
  fs::path file = writeScratch(numberedFile(tag), emitter_.emit(c.graph));
  TestSettings s = base;
  s.compile = c.compile;
  s.backward = c.backward;
  ProgramTestResult r;
  try {
    r = programs.test(file, s);
  } catch (const oracles::OutputLoadError& e) {
    r.verdict.verdict = oracles::Verdict::InvalidProgram;
    r.verdict.reason = fmt::format("outputs unreadable: {}", e.what());
  } catch (const oracles::ConfigurationError& e) {
    r.verdict.verdict = oracles::Verdict::InvalidProgram;
    r.verdict.reason = fmt::format("configuration rejected: {}", e.what());
  } catch (...) {
    removeQuietly(file, {});
    throw;
  }
  removeQuietly(file, {});
  for (const auto* run : {&r.runs.eager, &r.runs.compiled, &r.runs.fp64}) removeQuietly({}, run->jobDir);
  workerSeconds_.fetch_add(r.torchSeconds);
  return r;
}

std::vector<ProgramTestResult> CaseTester::testAll(const std::vector<oracles::MinimizeCase>& cases,
                                                   const TestSettings& base, const std::string& tag) {
  std::vector<std::future<ProgramTestResult>> running;
  for (const auto& c : cases)
    running.push_back(std::async(std::launch::async, [this, &c, &base, &tag] { return test(c, base, tag); }));
  std::vector<ProgramTestResult> out;
  std::exception_ptr first;
  for (auto& f : running) {
    try {
      out.push_back(f.get());
    } catch (...) {
      if (!first) first = std::current_exception();
      out.emplace_back();
    }
  }
  if (first) std::rethrow_exception(first);
  return out;
}

oracles::RunResult CaseTester::bisect(const oracles::MinimizeCase& c, const TestSettings& base,
                                      const nlohmann::json& spec) {
  ProgramTester& programs = tester();
  fs::path file = writeScratch(numberedFile("bisect"), emitter_.emit(c.graph));
  TestSettings s = base;
  s.compile = c.compile;
  s.backward = c.backward;
  oracles::RunResult r = programs.bisect(file, s, spec);
  workerSeconds_.fetch_add(r.times.childWall);
  removeQuietly(file, r.jobDir);
  return r;
}

oracles::RunResult CaseTester::runScript(const std::string& fileName, const std::string& text,
                                         const TestSettings& base, const std::vector<fs::path>& companions,
                                         const fs::path& traceInto) {
  ProgramTester& programs = tester();
  fs::path file = writeScratch(fileName, text);
  TestSettings s = base;
  s.limits.timeoutSeconds = std::max(s.limits.timeoutSeconds, 120.0);
  oracles::RunResult r = programs.runScript(file, s, companions, /*trace=*/!traceInto.empty());
  workerSeconds_.fetch_add(r.times.childWall);
  if (!traceInto.empty()) {
    std::error_code ec;
    fs::remove_all(traceInto, ec);
    fs::path log = r.jobDir / kTraceDirName;
    if (!r.jobDir.empty() && fs::is_directory(log, ec)) {
      fs::create_directories(traceInto.parent_path());
      fs::rename(log, traceInto, ec);  // both live under the campaign's folder: normally one file system
      if (ec) fs::copy(log, traceInto, fs::copy_options::recursive);
    }
  }
  removeQuietly(file, r.jobDir);
  return r;
}

}  // namespace tcfuzz
