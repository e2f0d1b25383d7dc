// tcfuzz triage --resign on a store whose findings were signed by the old rules: two Inductor C++
// codegen bugs that shared "C++ compile error" split into two signatures, their old triage row goes,
// and what was signed right stays as it was. The compiler messages are shortened real ones (torch 2.11.0).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fuzzer/triage/Resign.h"
#include "generators/Generator.h"
#include "oracles/judge/Signature.h"
#include "tests/TestWorkers.h"

namespace tcfuzz {
namespace {

using nlohmann::json;
using test_support::TempDir;

/// A compiled run that raised `message` (as toJson(RunResult) records it), the others ok.
json crashResult(const std::string& message) {
  json ok{{"status", "ok"}, {"phase", "done"}};
  return {{"verdict", "crash-mismatch"},
          {"eager", ok},
          {"fp64", ok},
          {"compiled",
           {{"status", "exception"},
            {"phase", "backward"},
            {"exception", {{"type", "InductorError"}, {"qualified_type", "torch._inductor.exc.InductorError"},
                           {"message", message}, {"traceback", ""}}}}}};
}

std::string cppError(const std::string& firstError) {
  return "CppCompileError: C++ compile error\n\nCommand:\ng++ /tmp/k.main.cpp -O3\n\nOutput:\n/tmp/k.main.cpp:121:40: " +
         firstError + "\n";
}

TEST(Resign, TwoCppCodegenBugsUnderOneOldSignatureSplitAndTheirTriageRowGoes) {
  TempDir dir("tcfuzz-resign");
  FindingStore store(dir.path() / "findings.sqlite");
  gen::OpCatalog catalog = gen::makeDefaultCatalog();
  gen::Generator generator(catalog, gen::GenPolicy{}, 7);
  std::string program = generator.generate(0).toJson().dump();

  // The old rules' signature of both: the head of the message only.
  json oldSignature{{"symptom", "crash-mismatch"}, {"kind", "exception"}, {"failing_mode", "compiled"},
                    {"phase", "backward"}, {"exception_type", "InductorError(CppCompileError)"},
                    {"message", "C++ compile error"}, {"frames", json::array()}, {"ops", json::array()}};
  std::string oldId = oracles::signatureFromJson(oldSignature).id();
  auto finding = [&](const json& result, const json& signature) {
    FindingRecord f;
    f.verdict = result.value("verdict", "");
    oracles::Signature s = oracles::signatureFromJson(signature);
    f.signatureId = s.id();
    f.signature = oracles::toJson(s).dump();
    f.config = "{}";
    f.programJson = program;
    f.result = result.dump();
    return f;
  };
  std::vector<FindingRecord> findings{
      finding(crashResult(cppError("error: \u2018tmp0\u2019 was not declared in this scope; did you mean \u2018tmp5\u2019?")),
              oldSignature),
      finding(crashResult(cppError("error: \u2018tmp7\u2019 was not declared in this scope")), oldSignature),
      finding(crashResult(cppError("error: \u2018decltype\u2019 evaluates to \u2018float\u2019, which is not a class "
                                   "or enumeration type")),
              oldSignature)};
  // Signed right already: a crash with a plain RuntimeError keeps its id.
  json plain = crashResult("planted: cumsum");
  plain["compiled"]["exception"]["type"] = "RuntimeError";
  oracles::Signature plainSignature = oracles::signatureOf(
      oracles::TripleRun{oracles::RunResult{.status = oracles::RunStatus::Ok},
                         oracles::RunResult{.status = oracles::RunStatus::Exception, .phase = "backward",
                                            .exception = oracles::ExceptionInfo{"RuntimeError", "", "planted: cumsum", ""}},
                         oracles::RunResult{.status = oracles::RunStatus::Ok}},
      oracles::VerdictReport{oracles::Verdict::CrashMismatch, "", {}}, {});
  std::string plainId = plainSignature.id();
  findings.push_back(finding(plain, oracles::toJson(plainSignature)));
  ProgramRecord p;
  p.verdict = "crash-mismatch";
  p.config = "{}";
  store.recordProgram(p, findings, {}, std::nullopt);
  store.saveTriage({oldId, findings[0].id, "done", "x", "{}", "{}", 1.0});
  store.saveTriage({plainId, findings[3].id, "done", "y", "{}", "{}", 1.0});

  ResignSummary summary = resignFindings(store);
  EXPECT_EQ(summary.findings, 4);
  EXPECT_EQ(summary.changed, 3);
  EXPECT_EQ(summary.unreadable, 0);
  ASSERT_EQ(summary.splits.size(), 1u);
  ASSERT_EQ(summary.splits.at(oldId).size(), 2u);  // tmp0 and tmp7 are one bug, decltype another
  EXPECT_EQ(summary.triageRowsDropped, 1);

  std::vector<FindingRecord> after = store.findings();
  EXPECT_EQ(after[0].signatureId, after[1].signatureId);
  EXPECT_NE(after[0].signatureId, after[2].signatureId);
  EXPECT_EQ(after[3].signatureId, plainId);
  EXPECT_EQ(json::parse(after[0].signature).at("message"),
            "C++ compile error; error: 'tmp' was not declared in this scope");
  std::vector<TriageRecord> rows = store.triageRecords();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].signatureId, plainId);

  ResignSummary again = resignFindings(store);  // idempotent
  EXPECT_EQ(again.changed, 0);
  EXPECT_EQ(again.triageRowsDropped, 0);
  EXPECT_NE(summary.describe().find("re-signed 4 finding(s): 3 changed (" + oldId + " -> "), std::string::npos)
      << summary.describe();
}

TEST(Resign, AnUnreadableFindingIsCountedAndLeftAsItWas) {
  TempDir dir("tcfuzz-resign-bad");
  FindingStore store(dir.path() / "findings.sqlite");
  FindingRecord f;
  f.verdict = "crash-mismatch";
  f.signatureId = "0123456789abcdef";
  f.signature = "{}";
  f.config = "{}";
  f.programJson = "not json";
  f.result = "{";
  std::vector<FindingRecord> findings{f};
  store.recordProgram(ProgramRecord{}, findings, {}, std::nullopt);
  ResignSummary summary = resignFindings(store);
  EXPECT_EQ(summary.unreadable, 1);
  EXPECT_EQ(summary.changed, 0);
  EXPECT_EQ(store.findings().at(0).signatureId, "0123456789abcdef");
}

}  // namespace
}  // namespace tcfuzz
