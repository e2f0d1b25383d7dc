// The positive corpus (corpus/known-bugs/): programs for real upstream torch.compile bugs, each with the
// releases it fails on. `tcfuzz regress` under the default torch and under each extra release the source
// tree has (.venv-torch-<version>/) must give, for every entry, the status its finding.json records for
// that release: the check fires where the bug lives and stays quiet where it is fixed.
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "TestWorkers.h"
#include "oracles/infra/TorchInfo.h"
#include "oracles/judge/Verdict.h"

namespace tcfuzz {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::set<std::string> kClasses = {"mutation", "aliasing", "second-call", "layout", "numeric", "crash"};

struct KnownBug {
  std::string name;
  json finding;
};

std::vector<KnownBug> knownBugs() {
  std::vector<KnownBug> bugs;
  for (const auto& e : fs::directory_iterator(test_support::sourcePath("corpus/known-bugs")))
    if (e.is_directory()) bugs.push_back({e.path().filename().string(), json::parse(test_support::readText(e.path() / "finding.json"))});
  std::sort(bugs.begin(), bugs.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return bugs;
}

TEST(KnownBugs, EveryEntryNamesItsIssueClassVerdictAndReleases) {
  std::vector<KnownBug> bugs = knownBugs();
  ASSERT_FALSE(bugs.empty());
  for (const auto& [name, f] : bugs) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(fs::exists(test_support::sourcePath("corpus/known-bugs/" + name + "/program.py")));
    EXPECT_TRUE(kClasses.count(f.value("class", ""))) << f.value("class", "");
    auto verdict = oracles::parseVerdict(f.value("verdict", ""));
    ASSERT_TRUE(verdict) << f.value("verdict", "");
    EXPECT_TRUE(oracles::isFinding(*verdict));
    EXPECT_TRUE(f.contains("issue") && f["issue"].value("url", "").starts_with("https://github.com/pytorch/pytorch/issues/"));
    ASSERT_TRUE(f.contains("versions") && f["versions"].is_object() && !f["versions"].empty());
    bool failsSomewhere = false;
    for (const auto& [release, status] : f["versions"].items()) {
      EXPECT_TRUE(status == "still-failing" || status == "fixed" || status == "changed-signature") << release << ": " << status;
      failsSomewhere |= status == "still-failing";
      // A release where the program finds another bug than the recorded one says which.
      if (status == "changed-signature") EXPECT_FALSE(f.value("note", "").empty()) << release;
    }
    EXPECT_TRUE(failsSomewhere) << "a known bug fails on at least one release it records";
  }
}

TEST(KnownBugs, RegressFiresWhereEachBugLivesAndStaysQuietWhereItIsFixed) {
  std::vector<std::string> pythons = {TCFUZZ_DEFAULT_PYTHON};
  for (const auto& p : test_support::extraTorchPythons()) pythons.push_back(p.string());
  if (pythons.size() < 2)
    GTEST_SKIP() << "no older torch release: scripts/setup with TCFUZZ_EXTRA_TORCH installs one as .venv-torch-<version>/";

  test_support::TempDir dir("tcfuzz-known-bugs");
  fs::path csv = dir.path() / "regress.csv";
  std::vector<std::string> args = {"regress", "--out", csv.string(), "--sandbox", test_support::sandboxArg(), "-j", "2"};
  for (const auto& p : pythons) args.insert(args.end(), {"--python", p});
  args.push_back(test_support::sourcePath("corpus/known-bugs").string());
  auto r = test_support::runCli(args);
  ASSERT_EQ(r.exitCode, 0) << r.out;

  std::map<std::string, json> versions;
  for (const auto& [name, f] : knownBugs()) versions[name] = f["versions"];
  size_t checked = 0;
  std::set<std::string> firing;
  std::vector<std::string> rows = test_support::lines(test_support::readText(csv));
  ASSERT_EQ(rows.size(), 1 + versions.size() * pythons.size()) << test_support::readText(csv);
  for (size_t i = 1; i < rows.size(); ++i) {
    std::vector<std::string> f = test_support::csvFields(rows[i]);
    ASSERT_EQ(f.size(), 11u) << rows[i];
    const std::string &name = f[0], &status = f[1], &observedVerdict = f[3], &torch = f[7];
    SCOPED_TRACE(name + " under torch " + torch);
    ASSERT_NE(status, "error") << f[8];
    std::string release = oracles::releaseOf(torch);
    if (!versions[name].contains(release)) continue;  // a release the entry does not record
    EXPECT_EQ(status, versions[name][release].get<std::string>()) << observedVerdict << ": " << f[8];
    if (status == "still-failing") EXPECT_EQ(observedVerdict, f[2]);
    if (status == "still-failing") firing.insert(name);
    ++checked;
  }
  EXPECT_GE(checked, versions.size()) << "each entry records the default torch's release at least";
  EXPECT_FALSE(firing.empty());
}

}  // namespace
}  // namespace tcfuzz
