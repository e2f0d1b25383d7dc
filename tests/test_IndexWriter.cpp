// The campaign index (index.md and index.html): bugs first, ordered by severity then hits, escaped, with
// the campaign summed up under them; and the Markdown quoting every report uses. No workers.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "oracles/reporter/IndexWriter.h"
#include "oracles/reporter/MarkdownText.h"
#include "oracles/reporter/ReportWriter.h"
#include "oracles/judge/Comparator.h"
#include "oracles/reporter/repro/ShortReproWriter.h"
#include "tests/ReportFixtures.h"

using namespace tcfuzz::oracles;
using namespace tcfuzz::test_support::reports;
namespace fs = std::filesystem;

TEST(IndexWriter, SeverityRanks) {
  EXPECT_EQ(severityRank("crash"), 0);
  EXPECT_EQ(severityRank("hang"), 1);
  EXPECT_EQ(severityRank("wrong-result"), 2);
  EXPECT_EQ(severityRank("accepts-invalid"), 3);
  EXPECT_EQ(severityRank("low"), 4);
  EXPECT_EQ(severityRank("other"), 5);
  EXPECT_EQ(severityRank(""), 5);
}

TEST(IndexWriter, IndexOrdersBySeverityThenHitsAndEscapesHtml) {
  BugReport crashFew = crashBug(), crashMany = crashBug(), wrong = numericBug(), hang = crashBug();
  crashFew.id = "c0000000000000f1";
  crashFew.hits = 2;
  crashMany.id = "c0000000000000f2";
  crashMany.hits = 9;
  crashMany.title = "<script>alert(1)</script> in relu | sigmoid";
  hang.id = "b0000000000000a1";
  hang.severity = "hang";
  hang.hits = 1;
  hang.seenOnTorch = {"2.11.0+cu130", "2.15.0+cu132"};  // found on two releases, triaged on 2.11.0+cpu
  wrong.hits = 50;
  fs::path root = freshDir("index");
  writeIndex({wrong, crashFew, hang, crashMany}, {{"run_time", "3600"}, {"execs_done", "12000"}}, root, tcfuzz::SecretRedactor{});
  EXPECT_EQ(filesIn(root), (std::set<std::string>{"index.md", "index.html"}));

  std::string md = slurp(root / "index.md");
  EXPECT_EQ(md.rfind("# tcfuzz findings\n\n4 unique bugs from 62 raw findings.\n\n| rank | id | title |", 0), 0u) << md;
  size_t a = md.find("[c0000000000000f2](crashes/c0000000000000f2/report.md)");
  size_t b = md.find("[c0000000000000f1](crashes/c0000000000000f1/report.md)");
  size_t c = md.find("[b0000000000000a1](crashes/b0000000000000a1/report.md)");
  size_t d = md.find("[" + wrong.id + "](crashes/" + wrong.id + "/report.md)");
  ASSERT_NE(d, std::string::npos);
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_LT(c, d);
  EXPECT_NE(md.find("4 unique bugs from 62 raw findings"), std::string::npos);
  EXPECT_NE(md.find("&lt;script>alert(1)&lt;/script> in relu \\| sigmoid"), std::string::npos);
  EXPECT_TRUE(lineWith(md, "c0000000000000f2").rfind("| 1 |", 0) == 0);
  std::string shortRepro = renderShortRepro(crashMany.repro, crashMany.title, ComparatorOptions{});
  EXPECT_NE(lineWith(md, "c0000000000000f2")
                .find(fmt::format("| 2024-05-01T12:00:00Z | 2024-05-01T13:00:00Z | 2.11.0+cpu | 2 (from 23) | {} | yes |",
                                  std::count(shortRepro.begin(), shortRepro.end(), '\n'))),
            std::string::npos)
      << md;
  EXPECT_NE(lineWith(md, "c0000000000000f2").find(" | new | crash | "), std::string::npos) << md;
  EXPECT_NE(lineWith(md, "b0000000000000a1").find(" | 2.11.0+cu130, 2.15.0+cu132 | "), std::string::npos) << md;
  EXPECT_NE(renderReportMarkdown(hang, "").find("Its findings were made on torch 2.11.0+cu130, 2.15.0+cu132.\n"),
            std::string::npos);
  EXPECT_EQ(renderReportMarkdown(crashMany, "").find("Its findings were made on"), std::string::npos);

  std::string html = slurp(root / "index.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt; in relu | sigmoid"), std::string::npos);
  EXPECT_NE(html.find("<dt>programs judged</dt><dd>12000</dd>"), std::string::npos);
  EXPECT_NE(html.find("4 unique bugs from 62 raw findings"), std::string::npos);
  EXPECT_LT(html.find("</table>"), html.find("<h2>Campaign</h2>"));
  EXPECT_LT(html.find("crashes/c0000000000000f2/report.md"), html.find("crashes/c0000000000000f1/report.md"));
  EXPECT_LT(html.find("crashes/b0000000000000a1/report.md"), html.find("crashes/" + wrong.id + "/report.md"));
  EXPECT_EQ(html.find("http"), std::string::npos) << "nothing is fetched from anywhere";
  fs::remove_all(root);
}

// The bugs come first; the campaign gets a handful of lines under them, and fuzzer_stats keeps every figure.
TEST(IndexWriter, IndexPutsTheBugsFirstAndSumsUpTheCampaignUnderThem) {
  BugReport crash = crashBug();
  fs::path root = freshDir("index-summary");
  fs::create_directories(root / "plots");
  std::ofstream(root / "fuzzer_stats") << "run_time : 3725\n";
  std::ofstream(root / "plots" / "campaign.svg") << "<svg/>";
  writeIndex({crash}, {{"start_time", "1714564800"}, {"run_time", "3725"}, {"torch_version", "2.11.0+cu130"},
                       {"programs_done", "4711"}, {"findings", "3"}, {"unique_signatures", "2"}, {"arm_x", "pulls=9"}},
             root, tcfuzz::SecretRedactor{});
  std::string md = slurp(root / "index.md"), row = lineWith(md, "](crashes/");
  EXPECT_EQ(md, "# tcfuzz findings\n\n1 unique bug from 17 raw findings.\n\n| rank | id | title | upstream | severity | "
                "component | hits | first seen | last seen | torch | nodes (original) | short repro lines | verified |\n"
                "|---:|---|---|---|---|---|---:|---|---|---|---|---:|---|\n" + row + "\n\n## Campaign\n\n"
                "- duration: 1h 02m 05s\n- programs judged: 4711\n- findings: 3 (2 unique signatures)\n"
                "- torch: 2.11.0+cu130\n\nEvery figure of the campaign: [fuzzer_stats](fuzzer_stats).\n\n"
                "![the campaign over run time](plots/campaign.svg)\n");
  std::string html = slurp(root / "index.html");
  EXPECT_LT(html.find("crashes/" + crash.id + "/report.md"), html.find("<h2>Campaign</h2>"));
  EXPECT_NE(html.find("<dt>duration</dt><dd>1h 02m 05s</dd>"), std::string::npos) << html;
  EXPECT_NE(html.find("<a href=\"fuzzer_stats\">fuzzer_stats</a>"), std::string::npos) << html;
  EXPECT_EQ(html.find("arm_x"), std::string::npos) << html;
  // A merged night's keys, no fuzzer_stats file, no figure, no bug: no table, no link.
  fs::remove_all(root);
  writeIndex({}, {{"shards", "2 (2 usable)"}, {"torch", "2.15.0+cu132"}, {"execs_done", "80"}}, root, tcfuzz::SecretRedactor{});
  EXPECT_EQ(slurp(root / "index.md"), "# tcfuzz findings\n\n0 unique bugs from 0 raw findings.\n\n## Campaign\n\n"
                                      "- programs judged: 80\n- torch: 2.15.0+cu132\n- shards: 2 (2 usable)\n");
  fs::remove_all(root);
}

TEST(MarkdownText, QuotesCannotBreakOutOfTheirCodeSpanCellOrBlock) {
  EXPECT_EQ(markdown::code("a `b` c"), "``a `b` c``");
  EXPECT_EQ(markdown::code("`x`"), "`` `x` ``");
  EXPECT_EQ(markdown::code(""), "``");
  EXPECT_EQ(markdown::cell("a | b <i>"), "a \\| b &lt;i>");
  EXPECT_EQ(markdown::cell("a|b", true), "`a\\|b`");
  EXPECT_EQ(markdown::codeBlock("x ``` y", "python"), "````python\nx ``` y\n````\n");
  EXPECT_EQ(markdown::oneLine("  one\n two\tthree  ", 100), "one two three");
  EXPECT_EQ(markdown::oneLine("abcdef", 3), "abc...");
  EXPECT_EQ(markdown::headBounded("abcdef", 4), "abcd\n[... cut by tcfuzz: 4 of 6 bytes shown]");
  EXPECT_EQ(markdown::tailBounded("1\n2\n3\n", 100, 2), "[... cut by tcfuzz: last 3 of 5 bytes shown]\n2\n3");
  EXPECT_EQ(markdown::htmlEscape("<a href='x'>&\"</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
  EXPECT_EQ(markdown::isoTime(kMay1Noon), "2024-05-01T12:00:00Z");
  EXPECT_EQ(markdown::isoOrUnknown(0), "unknown");
}
