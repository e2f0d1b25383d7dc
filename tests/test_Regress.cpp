// `tcfuzz regress` across torch releases: the history of a finding (appears, fixed, reappears) and
// the matrix's CSV and markdown forms on hand-made results, then the binary end to end with each
// torch the source tree has (.venv and the .venv-torch-<version>/ interpreters).
#include <algorithm>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <boost/process.hpp>
#include <gtest/gtest.h>

#include "fuzzer/triage/ReleaseMatrix.h"
#include "TestWorkers.h"

namespace tcfuzz {
namespace {

namespace fs = std::filesystem;
using test_support::csvFields;
using test_support::lines;
using test_support::TempDir;
using S = RegressStatus;
using Kind = ReleaseTransition::Kind;

const std::vector<std::string> kFour = {"2.4.1", "2.9.1", "2.11.0", "2.15.0"};

TEST(RegressHistory, NamesEveryTransitionOfANonMonotonicHistory) {
  std::vector<S> h = {S::Fixed, S::StillFailing, S::Fixed, S::ChangedSignature};
  std::vector<ReleaseTransition> t = releaseTransitions(h);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].kind, Kind::Appears);
  EXPECT_EQ(t[0].column, 1u);
  EXPECT_EQ(t[0].previous, std::optional<size_t>(0));
  EXPECT_EQ(t[1].kind, Kind::Fixed);
  EXPECT_EQ(t[1].column, 2u);
  EXPECT_EQ(t[2].kind, Kind::Reappears);
  EXPECT_EQ(t[2].column, 3u);
  EXPECT_EQ(describeHistory(h, kFour), "appears 2.9.1, fixed 2.11.0, reappears 2.15.0, not fixed");
}

TEST(RegressHistory, FailingInTheOldestReleaseMayBeOlder) {
  std::vector<S> h = {S::StillFailing, S::StillFailing, S::Fixed, S::Fixed};
  std::vector<ReleaseTransition> t = releaseTransitions(h);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].kind, Kind::Appears);
  EXPECT_EQ(t[0].previous, std::nullopt);
  EXPECT_EQ(t[1].kind, Kind::Fixed);
  EXPECT_EQ(t[1].column, 2u);
  EXPECT_EQ(describeHistory(h, kFour), "appears 2.4.1 or earlier, fixed 2.11.0");
  EXPECT_EQ(describeHistory({S::StillFailing, S::StillFailing, S::StillFailing, S::StillFailing}, kFour),
            "appears 2.4.1 or earlier, not fixed (still failing in 2.15.0)");
}

TEST(RegressHistory, AChangedSignatureIsStillAFinding) {
  // still-failing then changed-signature is no transition: both fail.
  std::vector<S> h = {S::Fixed, S::StillFailing, S::ChangedSignature, S::Fixed};
  std::vector<ReleaseTransition> t = releaseTransitions(h);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(describeHistory(h, kFour), "appears 2.9.1, fixed 2.15.0");
}

TEST(RegressHistory, ErrorCellsAreSkippedAndNamed) {
  std::vector<S> h = {S::StillFailing, S::Error, S::Error, S::Fixed};
  std::vector<ReleaseTransition> t = releaseTransitions(h);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[1].kind, Kind::Fixed);
  EXPECT_EQ(t[1].column, 3u);
  EXPECT_EQ(t[1].previous, std::optional<size_t>(0));
  EXPECT_EQ(describeHistory(h, kFour), "appears 2.4.1 or earlier, fixed 2.15.0 (after 2.4.1); error in 2.9.1, 2.11.0");
  EXPECT_EQ(describeHistory({S::Error, S::Fixed, S::Fixed, S::StillFailing}, kFour),
            "appears 2.15.0, not fixed; error in 2.4.1");
  EXPECT_EQ(describeHistory({S::Error, S::Error, S::Error, S::Error}, kFour), "no release ran it (error in every one)");
}

TEST(RegressHistory, AHistoryThatNeverFails) {
  EXPECT_TRUE(releaseTransitions({S::Fixed, S::Fixed}).empty());
  EXPECT_EQ(describeHistory({S::Fixed, S::Error, S::Fixed, S::Fixed}, kFour),
            "fails in no release tested (2.4.1 .. 2.15.0); error in 2.9.1");
  EXPECT_EQ(describeHistory({S::Fixed}, {"2.11.0"}), "fails in no release tested (2.11.0)");
}

ReleaseColumn started(const std::string& python, const std::string& version, const std::string& git) {
  ReleaseColumn c;
  c.python = python;
  c.torch.version = version;
  c.torch.git = git;
  return c;
}

RegressCell cellOf(S status, const std::string& reason = "") {
  RegressCell c;
  c.status = status;
  c.expectedVerdict = "crash-mismatch";
  c.expectedSignature = "91b7e21741d33b9f";
  c.config = R"({"backward":true,"dynamic":true})";
  c.reason = reason;
  return c;
}

const std::string kHeader =
    "name,status,expected_verdict,observed_verdict,expected_signature,observed_signature,config,torch,reason,python,"
    "torch_git";

TEST(RegressMatrix, OrdersColumnsByReleaseAndLabelsTheSameVersionByInterpreter) {
  ReleaseMatrix m({"f"}, {started("/a/python", "2.15.0+cu132", "d0f2"), ReleaseColumn{"/bad/python", {}, {}},
                          started("/b/python", "2.11.0+cu130", "70d9"), started("/c/python", "2.4.1+cpu", "ee1b"),
                          started("/d/python", "2.15.0+cu132", "d0f2")});
  m.setCell(0, 0, cellOf(S::Fixed, "a"));
  m.setStartError(1, "the Python at /bad/python cannot run tcfuzz's workers");
  m.setCell(0, 2, cellOf(S::StillFailing, "b"));
  m.setCell(0, 3, cellOf(S::StillFailing, "c"));
  m.setCell(0, 4, cellOf(S::ChangedSignature, "d"));
  m.sortByRelease();
  // 2.4.1 < 2.11.0 by release (not as text); equal versions keep their order; a column that did not start goes last.
  std::vector<std::string> pythons, labels, reasons;
  for (size_t c = 0; c < m.columnCount(); ++c) {
    pythons.push_back(m.column(c).python);
    labels.push_back(m.label(c));
    reasons.push_back(m.cell(0, c).reason);
  }
  EXPECT_EQ(pythons, (std::vector<std::string>{"/c/python", "/b/python", "/a/python", "/d/python", "/bad/python"}));
  EXPECT_EQ(labels, (std::vector<std::string>{"2.4.1", "2.11.0", "2.15.0+cu132 (/a/python)",
                                              "2.15.0+cu132 (/d/python)", "/bad/python"}));
  EXPECT_EQ(reasons, (std::vector<std::string>{"c", "b", "a", "d", "the Python at /bad/python cannot run tcfuzz's workers"}));
  EXPECT_EQ(m.history(0), (std::vector<S>{S::StillFailing, S::StillFailing, S::Fixed, S::ChangedSignature, S::Error}));

  // The same release in two builds: the full versions tell them apart.
  ReleaseMatrix builds({"f"}, {started("/cpu", "2.15.0+cpu", "d0f2"), started("/cuda", "2.15.0+cu132", "d0f2")});
  EXPECT_EQ(builds.label(0), "2.15.0+cpu");
  EXPECT_EQ(builds.label(1), "2.15.0+cu132");
}

TEST(RegressMatrix, WritesTheCsvRowPerFindingAndRelease) {
  ReleaseMatrix m({"pad_sign", "max_pool"},
                  {started("/new/python", "2.15.0+cu132", "d0f2af8b66b2"), started("/old/python", "2.11.0+cu130", "70d99e998b49"),
                   ReleaseColumn{"/bad/python", {}, {}}});
  m.setCell(0, 0, cellOf(S::Fixed, "agree"));
  m.setCell(0, 1, cellOf(S::StillFailing, "compiled raised, \"C++\" error"));
  m.setCell(1, 0, cellOf(S::Fixed));
  m.setCell(1, 1, cellOf(S::Fixed));
  m.setStartError(2, "cannot start worker 0");
  m.sortByRelease();
  std::vector<std::string> rows = lines(m.csv());
  ASSERT_EQ(rows.size(), 7u);
  EXPECT_EQ(rows[0], kHeader);
  std::vector<std::string> old = csvFields(rows[1]);
  ASSERT_EQ(old.size(), 11u) << rows[1];
  EXPECT_EQ(old[0], "pad_sign");
  EXPECT_EQ(old[1], "still-failing");
  EXPECT_EQ(old[6], R"({"backward":true,"dynamic":true})");
  EXPECT_EQ(old[7], "2.11.0+cu130");
  EXPECT_EQ(old[8], "compiled raised, \"C++\" error");
  EXPECT_EQ(old[9], "/old/python");
  EXPECT_EQ(old[10], "70d99e998b49");
  EXPECT_EQ(csvFields(rows[2])[7], "2.15.0+cu132");
  std::vector<std::string> bad = csvFields(rows[3]);
  EXPECT_EQ(bad[1], "error");
  EXPECT_EQ(bad[7], "");
  EXPECT_EQ(bad[8], "cannot start worker 0");
  EXPECT_EQ(bad[9], "/bad/python");
  EXPECT_EQ(csvFields(rows[4])[0], "max_pool");
}

TEST(RegressMatrix, MarkdownHasAColumnPerReleaseAndTheHistories) {
  ReleaseMatrix m({"pad_sign", "max_pool"},
                  {started("/new/python", "2.15.0+cu132", "d0f2af8b66b2"), started("/old/python", "2.11.0+cu130", "70d99e998b49")});
  m.setCell(0, 0, cellOf(S::Fixed));
  m.setCell(0, 1, cellOf(S::StillFailing));
  m.setCell(1, 0, cellOf(S::ChangedSignature));
  m.setCell(1, 1, cellOf(S::Fixed));
  m.sortByRelease();
  std::string plain = m.markdown(false);
  EXPECT_NE(plain.find("| finding | 2.11.0 | 2.15.0 |\n|---|---|---|\n"), std::string::npos) << plain;
  EXPECT_NE(plain.find("| `pad_sign` | still-failing | fixed |\n"), std::string::npos) << plain;
  EXPECT_NE(plain.find("| `max_pool` | fixed | changed-signature |\n"), std::string::npos) << plain;
  EXPECT_NE(plain.find("| 2.11.0 | torch 2.11.0+cu130 (git 70d99e998b49), CPU build | `70d99e998b49` | `/old/python` |"),
            std::string::npos) << plain;
  EXPECT_EQ(plain.find("appears"), std::string::npos) << plain;

  std::string withHistories = m.markdown(true);
  EXPECT_NE(withHistories.find("| finding | 2.11.0 | 2.15.0 | appears in | fixed in |\n|---|---|---|---|---|\n"),
            std::string::npos) << withHistories;
  EXPECT_NE(withHistories.find("| `pad_sign` | still-failing | fixed | 2.11.0 or earlier | 2.15.0 |\n"), std::string::npos)
      << withHistories;
  EXPECT_NE(withHistories.find("| `max_pool` | fixed | changed-signature | 2.15.0 | not fixed |\n"), std::string::npos)
      << withHistories;
  EXPECT_NE(withHistories.find("- `pad_sign`: appears 2.11.0 or earlier, fixed 2.15.0\n"), std::string::npos)
      << withHistories;
  EXPECT_NE(withHistories.find("- `max_pool`: appears 2.15.0, not fixed\n"), std::string::npos) << withHistories;
}

// ---- The binary, with real workers --------------------------------------------------------------

const std::string kFinding = "inductor_lowering_max_pool2d_backward_assert";  // one node; fails before C++ codegen

struct Torch {
  std::string version, git;
};

/// The torch of an interpreter, asked directly; nullopt when it has none.
std::optional<Torch> torchOf(const fs::path& python) {
  namespace bp = boost::process;
  bp::ipstream out;
  bp::child c(python.string(), "-c", "import torch; print(torch.__version__); print(torch.version.git_version)",
              bp::std_out > out, bp::std_err > bp::null);
  Torch t;
  std::getline(out, t.version);
  std::getline(out, t.git);
  c.wait();
  if (c.exit_code() != 0 || t.version.empty()) return std::nullopt;
  return t;
}

TEST(RegressCommand, MatrixAcrossTwoReleases) {
  fs::path current = TCFUZZ_DEFAULT_PYTHON;
  std::optional<Torch> currentTorch = torchOf(current);
  ASSERT_TRUE(currentTorch) << current << " has no torch";
  fs::path extra;
  std::optional<Torch> extraTorch;
  for (const auto& p : test_support::extraTorchPythons())
    if (auto t = torchOf(p); t && t->version != currentTorch->version) {
      extra = p;
      extraTorch = t;
      break;
    }
  if (!extraTorch)
    GTEST_SKIP() << "no second torch release: scripts/setup with TCFUZZ_EXTRA_TORCH installs one as "
                    ".venv-torch-<version>/ (none with a torch other than "
                 << currentTorch->version << " here)";

  TempDir dir("tcfuzz-regress");
  fs::path csvFile = dir.path() / "regress.csv";
  // The finding's jobs take seconds: --timeout 120 bounds a job that hangs, and the kept work directory
  // holds each interpreter's zygote logs for the failure message.
  auto r = test_support::runCli({"regress", "--python", current.string(), "--python", extra.string(),
                                 "--bisect-releases", "--out", csvFile.string(), "--sandbox",
                                 test_support::sandboxArg(), "-j", "2", "--timeout", "120", "--work-dir",
                                 (dir.path() / "work").string(), "--keep",
                                 test_support::sourcePath("corpus/regressions/" + kFinding).string()});
  ASSERT_EQ(r.exitCode, 0) << r.out << "\n--- stderr\n" << r.err << test_support::zygoteLogs(dir.path() / "work");

  // Oldest first.
  std::vector<std::pair<fs::path, Torch>> releases = {{current, *currentTorch}, {extra, *extraTorch}};
  std::sort(releases.begin(), releases.end(), [](const auto& a, const auto& b) {
    return oracles::versionKey(a.second.version) < oracles::versionKey(b.second.version);
  });

  // The CSV: exactly one row per release, each with the worker's own torch.
  std::vector<std::string> rows = lines(test_support::readText(csvFile));
  ASSERT_EQ(rows.size(), 3u) << test_support::readText(csvFile);
  EXPECT_EQ(rows[0], kHeader);
  std::vector<S> history;
  std::vector<std::string> labels, statuses;
  for (size_t i = 0; i < 2; ++i) {
    std::vector<std::string> f = csvFields(rows[i + 1]);
    ASSERT_EQ(f.size(), 11u) << rows[i + 1];
    EXPECT_EQ(f[0], kFinding);
    EXPECT_EQ(f[7], releases[i].second.version);
    EXPECT_EQ(f[9], releases[i].first.string());
    EXPECT_EQ(f[10], releases[i].second.git);
    EXPECT_EQ(f[2], "crash-mismatch");
    EXPECT_NE(f[1], "error") << "it did not run under " << f[7] << ": " << f[8];
    statuses.push_back(f[1]);
    S s = f[1] == "still-failing" ? S::StillFailing : f[1] == "fixed" ? S::Fixed : f[1] == "changed-signature" ? S::ChangedSignature : S::Error;
    history.push_back(s);
    labels.push_back(oracles::releaseOf(releases[i].second.version));
  }

  // The matrix on stdout (and beside the CSV): the finding's row and a column per release.
  const std::string& md = r.out;
  EXPECT_EQ(test_support::readText(csvFile.string() + ".md"), md);
  EXPECT_NE(md.find("| finding | " + labels[0] + " | " + labels[1] + " | appears in | fixed in |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| `" + kFinding + "` | " + statuses[0] + " | " + statuses[1] + " | "), std::string::npos) << md;
  EXPECT_NE(md.find(releases[0].second.git), std::string::npos) << md;
  EXPECT_NE(md.find(releases[1].second.git), std::string::npos) << md;
  // --bisect-releases: the finding's history line, as the two statuses imply.
  std::string line = "- `" + kFinding + "`: " + describeHistory(history, labels) + "\n";
  EXPECT_NE(md.find(line), std::string::npos) << line << md;
  EXPECT_TRUE(line.find("appears") != std::string::npos || line.find("fails in no release") != std::string::npos);
}

TEST(RegressCommand, BisectReleasesNeedsTwoInterpreters) {
  auto r = test_support::runTcfuzz({"regress", "--bisect-releases", "--python", TCFUZZ_DEFAULT_PYTHON,
                                    test_support::sourcePath("corpus/regressions/" + kFinding).string()});
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("--bisect-releases needs two or more --python interpreters"), std::string::npos) << r.output;
}

TEST(RegressCommand, AnInterpreterThatCannotStartGivesErrorRows) {
  auto r = test_support::runCli({"regress", "--python", "/nonexistent/python", "--sandbox", test_support::sandboxArg(),
                                 "-j", "1", test_support::sourcePath("corpus/regressions/" + kFinding).string()});
  EXPECT_EQ(r.exitCode, 3) << r.out;  // no interpreter started: kExitEnvironment, after the CSV
  std::vector<std::string> rows = lines(r.out);
  ASSERT_EQ(rows.size(), 2u) << r.out;
  EXPECT_EQ(rows[0], kHeader);
  std::vector<std::string> f = csvFields(rows[1]);
  ASSERT_EQ(f.size(), 11u) << rows[1];
  EXPECT_EQ(f[0], kFinding);
  EXPECT_EQ(f[1], "error");
  EXPECT_EQ(f[7], "");
  EXPECT_NE(f[8].find("there is no Python interpreter at /nonexistent/python"), std::string::npos) << f[8];
  EXPECT_EQ(f[9], "/nonexistent/python");
}

}  // namespace
}  // namespace tcfuzz
