// docs/example-report/ holds the report folder tcfuzz writes for one real finding (report.md, short_repro.py,
// repro.py, meta.json), made by scripts/example-report. The drift test runs that script's --check: the same
// tcfuzz commands into a temp dir, compared with the checked-in copy after the script's one table of
// volatile fields (times, durations, paths, versions, the machine) is masked on both sides.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <boost/process.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "TestWorkers.h"

namespace tcfuzz {
namespace {

namespace fs = std::filesystem;
using test_support::readText;
using test_support::sourcePath;

constexpr const char* kRefresh = "To refresh docs/example-report/, run scripts/example-report and commit the result.";

TEST(ExampleReport, TheCheckedInFolderHoldsOneCrashReportOnTorch2_11) {
  fs::path dir = sourcePath("docs/example-report");
  for (const char* name : {"report.md", "short_repro.py", "repro.py", "meta.json"})
    ASSERT_TRUE(fs::is_regular_file(dir / name)) << name << " is missing. " << kRefresh;
  nlohmann::json meta = nlohmann::json::parse(readText(dir / "meta.json"));
  EXPECT_EQ(meta.value("severity", ""), "crash") << meta.dump(1);
  EXPECT_NE(meta.dump().find("2.11.0"), std::string::npos) << meta.dump(1);
  std::string shortRepro = readText(dir / "short_repro.py");
  EXPECT_NE(shortRepro.find("max_pool2d"), std::string::npos) << shortRepro;
  EXPECT_NE(shortRepro.find("torch.compile("), std::string::npos) << shortRepro;
  std::string report = readText(dir / "report.md");
  EXPECT_EQ(report.rfind("# ", 0), 0u) << report.substr(0, 400);
  EXPECT_NE(report.find("max_pool2d"), std::string::npos);
}

TEST(ExampleReport, TheCheckedInReportIsWhatTcfuzzWritesNow) {
  fs::path python = sourcePath(".venv-torch-2.11.0/bin/python");
  if (!fs::exists(python))
    GTEST_SKIP() << "no torch 2.11.0 (the release the example's bug lives in): TCFUZZ_EXTRA_TORCH=2.11.0 "
                    "scripts/setup installs it as .venv-torch-2.11.0/";
  namespace bp = boost::process;
  test_support::TempDir dir("tcfuzz-example-report");
  boost::filesystem::path log = (dir.path() / "output").string();
  std::vector<std::string> args = {sourcePath("scripts/example-report").string(), "--check", "--tcfuzz", TCFUZZ_BINARY,
                                   "--python", python.string(), "--sandbox", test_support::sandboxArg(), "-j", "2"};
  bp::child script(TCFUZZ_DEFAULT_PYTHON, bp::args(args), (bp::std_out & bp::std_err) > log);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(20);
  std::error_code ec;
  while (script.running(ec) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  bool finished = !script.running(ec);
  if (!finished) {  // the script passes SIGTERM on to tcfuzz, which stops its workers
    ::kill(script.id(), SIGTERM);
    auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (script.running(ec) && std::chrono::steady_clock::now() < grace)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (script.running(ec)) ::kill(script.id(), SIGKILL);
  }
  script.wait(ec);
  ASSERT_TRUE(finished) << "scripts/example-report --check ran past 20 minutes:\n" << readText(log.string());
  int exitCode = script.exit_code();
  ASSERT_NE(exitCode, 3) << "tcfuzz could not write the report:\n" << readText(log.string());
  EXPECT_EQ(exitCode, 0) << "docs/example-report/ no longer matches what tcfuzz writes (diff of the masked files "
                            "below). "
                         << kRefresh << "\n"
                         << readText(log.string());
}

}  // namespace
}  // namespace tcfuzz
