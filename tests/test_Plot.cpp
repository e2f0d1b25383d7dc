// `tcfuzz plot`: the real binary draws a campaign's plot_data (and a merged night's shards) with the venv's
// matplotlib; a PNG of the promised size, an SVG with the panels and the legend, byte-identical for the same
// input; input it cannot draw exits 2 with one line saying why; index.html shows the figure once it exists.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <random>

#include <boost/process.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fuzzer/campaign/output/FindingStore.h"
#include "tests/TestWorkers.h"

namespace tcfuzz {
namespace {

namespace fs = std::filesystem;
using test_support::readText;
using test_support::runTcfuzz;

constexpr const char* kHeader =
    "# unix_time, run_time_s, programs, programs_per_min, queue, features, findings, unique_signatures, torch_share";

/// Writes `rows` rows of plot_data at `file` as CampaignOutput::appendPlot does, their growth drawn from `seed`;
/// `gpus` > 0 adds the columns gpu0_programs.. (a campaign over several GPUs).
void writePlotData(const fs::path& file, uint32_t seed, int rows, int gpus = 0) {
  fs::create_directories(file.parent_path());
  std::mt19937 rng(seed);
  std::ofstream out(file);
  out << kHeader;
  for (int g = 0; g < gpus; ++g) out << ", gpu" << g << "_programs";
  out << "\n";
  int64_t programs = 0, features = 0, findings = 0;
  for (int i = 1; i <= rows; ++i) {
    programs += 5 + rng() % 20;
    features += rng() % 12;
    findings += rng() % 3 == 0;
    out << fmt::format("{}, {}, {}, {:.2f}, {}, {}, {}, {}, {:.3f}", 1'780'000'000 + 60 * i, 60 * i, programs,
                       programs / static_cast<double>(i), programs / 4, features, findings, (findings + 1) / 2, 0.4);
    for (int g = 0; g < gpus; ++g) out << ", " << programs / gpus + g;
    out << "\n";
  }
}

/// The big-endian 32-bit number at `at` in `bytes`.
uint32_t bigEndian(const std::string& bytes, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes.at(at + i));
  return v;
}

/// How often `needle` occurs in `text`.
size_t occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

/// An SVG document as matplotlib writes it: the XML prolog, one <svg> root closed at the end, groups balanced.
void expectWellFormedSvg(const std::string& svg) {
  EXPECT_TRUE(svg.starts_with("<?xml")) << svg.substr(0, 100);
  EXPECT_EQ(occurrences(svg, "<svg "), 1u);
  EXPECT_TRUE(svg.ends_with("</svg>\n"));
  EXPECT_EQ(occurrences(svg, "<g ") + occurrences(svg, "<g>"), occurrences(svg, "</g>"));
  EXPECT_EQ(occurrences(svg, "<text "), occurrences(svg, "</text>"));
}

class Plot : public ::testing::Test {
 protected:
  test_support::TempDir dir{"tcfuzz-plot-test"};
};

TEST_F(Plot, DrawsACampaignAsPngAndSvgWithEveryPanelAndOneLinePerGpuTheSameEachTime) {
  fs::path out = dir.path() / "campaign";
  writePlotData(out / "plot_data", 7, 25, 2);
  auto run = runTcfuzz({"plot", out.string()});
  ASSERT_EQ(run.exitCode, 0) << run.output;
  EXPECT_NE(run.output.find((out / "plots" / "campaign.png").string()), std::string::npos) << run.output;

  std::string png = readText(out / "plots" / "campaign.png");
  ASSERT_GT(png.size(), 24u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png.substr(12, 4), "IHDR");
  EXPECT_EQ(bigEndian(png, 16), 1200u);  // 12 x 10 inches at 100 dpi
  EXPECT_EQ(bigEndian(png, 20), 1000u);

  std::string svg = readText(out / "plots" / "campaign.svg");
  expectWellFormedSvg(svg);
  for (const char* title : {"Programs judged", "Speed", "Compiler features", "Queue", "Findings", "Unique bugs"})
    EXPECT_NE(svg.find(fmt::format(">{}</text>", title)), std::string::npos) << title;
  EXPECT_NE(svg.find(">tcfuzz campaign: campaign</text>"), std::string::npos);
  // gpu<N>_programs: the programs panel's legend names the total and each GPU; no other panel has a legend.
  for (const char* series : {">all</text>", ">gpu0</text>", ">gpu1</text>"}) EXPECT_EQ(occurrences(svg, series), 1u) << series;
  EXPECT_EQ(svg.find("<dc:date>"), std::string::npos);  // no date: the same input, the same bytes

  fs::path again = dir.path() / "again";
  ASSERT_EQ(runTcfuzz({"plot", out.string(), "-o", again.string()}).exitCode, 0);
  EXPECT_EQ(readText(again / "campaign.svg"), svg);
  EXPECT_EQ(readText(again / "campaign.png"), png);
}

TEST_F(Plot, AMergedNightDrawsOneLinePerShardWithALegend) {
  fs::path night = dir.path() / "night";
  const std::array<std::string, 3> shards{"task-0", "task-1", "task-2"};
  nlohmann::json listing = nlohmann::json::array();
  for (size_t i = 0; i < shards.size(); ++i) {
    writePlotData(night / "shards" / shards[i] / "plot_data", 100 + static_cast<uint32_t>(i), 12 + 4 * static_cast<int>(i));
    listing.push_back({{"name", shards[i]}, {"status", "ok"}, {"path", "/scratch/" + shards[i]}});
  }
  listing.push_back({{"name", "task-3"}, {"status", "missing"}});  // a killed array task: no folder, no line
  std::ofstream(night / "shards.json") << listing.dump(2);
  fs::path dest = dir.path() / "figures";
  auto run = runTcfuzz({"plot", night.string(), "-o", dest.string()});
  ASSERT_EQ(run.exitCode, 0) << run.output;
  EXPECT_FALSE(fs::exists(night / "plots"));
  ASSERT_TRUE(fs::exists(dest / "campaign.png"));
  std::string svg = readText(dest / "campaign.svg");
  expectWellFormedSvg(svg);
  EXPECT_NE(svg.find(">tcfuzz merged night, 3 shards: night</text>"), std::string::npos);
  for (const auto& shard : shards) EXPECT_EQ(occurrences(svg, ">" + shard + "</text>"), 6u) << shard;  // each panel's legend
  EXPECT_EQ(svg.find("task-3"), std::string::npos);
}

TEST_F(Plot, InputItCannotDrawExitsTwoWithOneLineSayingWhy) {
  struct Case {
    std::string name, content, says;
  };
  const std::vector<Case> cases{
      {"empty", std::string(kHeader) + "\n", "no rows yet"},
      {"short-row", std::string(kHeader) + "\n1780000060, 60, 10, 10.00, 2, 5, 0, 0, 0.400\n1780000120, 120, 20\n",
       "line 3: 3 fields where the header names 9"},
      {"not-a-number", std::string(kHeader) + "\n1780000060, 60, ten, 10.00, 2, 5, 0, 0, 0.400\n",
       "'ten' in column programs is not a number"},
  };
  for (const auto& c : cases) {
    fs::path out = dir.path() / c.name;
    fs::create_directories(out);
    std::ofstream(out / "plot_data") << c.content;
    auto run = runTcfuzz({"plot", out.string()});
    EXPECT_EQ(run.exitCode, 2) << c.name << ": " << run.output;
    EXPECT_NE(run.output.find(c.says), std::string::npos) << c.name << ": " << run.output;
    EXPECT_EQ(run.output.find("Traceback"), std::string::npos) << run.output;
    EXPECT_FALSE(fs::exists(out / "plots" / "campaign.png")) << c.name;
  }
  fs::path none = dir.path() / "no-plot-data";
  fs::create_directories(none);
  auto run = runTcfuzz({"plot", none.string()});
  EXPECT_EQ(run.exitCode, 2) << run.output;
  EXPECT_NE(run.output.find("plot_data: no such file"), std::string::npos) << run.output;
}

TEST_F(Plot, WithoutMatplotlibTheScriptSaysToRunSetup) {
  // The script under an interpreter without matplotlib (Debian's own python3, where it lacks it).
  const fs::path bare = "/usr/bin/python3";
  if (!fs::exists(bare) || boost::process::system(bare.string(), "-I", "-c", "import matplotlib",
                                                 boost::process::std_err > boost::process::null) == 0)
    GTEST_SKIP() << "no python3 without matplotlib here";
  fs::path out = dir.path() / "campaign";
  writePlotData(out / "plot_data", 3, 5);
  boost::process::ipstream said;
  boost::process::child c(bare.string(), "-I", test_support::sourcePath("fuzzer/campaign/output/plot_campaign.py").string(),
                          out.string(), (out / "plots").string(), boost::process::std_out > boost::process::null,
                          boost::process::std_err > said);
  std::string all, line;
  while (std::getline(said, line)) all += line + "\n";
  c.wait();
  EXPECT_EQ(c.exit_code(), 3);
  EXPECT_NE(all.find("matplotlib is not installed"), std::string::npos) << all;
  EXPECT_NE(all.find("run scripts/setup"), std::string::npos) << all;
}

TEST_F(Plot, TheIndexShowsTheFigureOnceItIsDrawn) {
  fs::path out = dir.path() / "campaign";
  fs::create_directories(out);
  { FindingStore store(out / "findings.sqlite"); }  // a campaign without findings yet
  writePlotData(out / "plot_data", 5, 10);
  auto before = runTcfuzz({"report", out.string()});
  ASSERT_EQ(before.exitCode, 0) << before.output;
  EXPECT_EQ(readText(out / "index.html").find("<img"), std::string::npos);  // no figure: the index as before

  ASSERT_EQ(runTcfuzz({"plot", out.string()}).exitCode, 0);
  auto after = runTcfuzz({"report", out.string()});
  ASSERT_EQ(after.exitCode, 0) << after.output;
  EXPECT_NE(readText(out / "index.html").find("<img src=\"plots/campaign.svg\""), std::string::npos);
  EXPECT_NE(readText(out / "index.md").find("](plots/campaign.svg)"), std::string::npos);
}

}  // namespace
}  // namespace tcfuzz
