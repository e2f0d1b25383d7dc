// Ablation: the variants a minimized case is rerun under, and how their rows name the component at
// fault (the runs themselves go through workers in test_Triage).
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

#include "oracles/reporter/Ablation.h"

using namespace tcfuzz;
using nlohmann::json;
using oracles::AblationRow;
using oracles::MinimizeCase;

namespace {

/// A case under `backend` with max-autotune, dynamic shapes, cpp_wrapper and backward.
MinimizeCase caseUnder(const std::string& backend) {
  MinimizeCase c;
  c.compile.backend = backend;
  c.compile.mode = "max-autotune";
  c.compile.dynamic = true;
  c.compile.inductorConfig = {{"cpp_wrapper", true}};
  c.backward = true;
  return c;
}

/// The rows of `names` with the given reproduces flags.
std::vector<AblationRow> rows(const std::vector<std::pair<std::string, bool>>& outcome) {
  std::vector<AblationRow> out;
  for (const auto& [variant, reproduces] : outcome) out.push_back({variant, json::object(), "", reproduces, ""});
  return out;
}

}  // namespace

TEST(Ablation, VariantsAreTheStandardBackendsThenTheCaseWithoutEachOption) {
  std::vector<oracles::AblationVariant> v = oracles::ablationVariants(caseUnder("inductor"));
  std::vector<std::string> names;
  for (const auto& variant : v) names.push_back(variant.name);
  EXPECT_EQ(names, (std::vector<std::string>{"backend=eager", "backend=aot_eager", "backend=aot_eager_decomp_partition",
                                             "backend=inductor", "without mode", "without dynamic", "without backward",
                                             "without cpp_wrapper"}));
  // The non-Inductor backends lose Inductor's mode and options; dynamic and backward stay.
  EXPECT_EQ(oracles::findingConfig(v[0].rerun.compile, v[0].rerun.backward),
            (json{{"backend", "eager"}, {"dynamic", true}, {"backward", true}}));
  EXPECT_EQ(v[3].rerun.compile, caseUnder("inductor").compile);
  EXPECT_EQ(v[4].rerun.compile.mode, "");
  EXPECT_FALSE(v[5].rerun.compile.dynamic.has_value());
  EXPECT_FALSE(v[6].rerun.backward);
  EXPECT_EQ(v[7].rerun.compile.inductorConfig, json::object());

  AblationRow row = oracles::ablationRow(v[1], "agree", false, "compiled ran");
  EXPECT_EQ(row.variant, "backend=aot_eager");
  EXPECT_EQ(row.config, (json{{"backend", "aot_eager"}, {"dynamic", true}, {"backward", true}}));
  EXPECT_EQ(row.verdict, "agree");
  EXPECT_FALSE(row.reproduces);
  EXPECT_EQ(row.summary, "compiled ran");
}

TEST(Ablation, AnotherBackendIsTriedAfterTheStandardOnesAndKeepsItsOptions) {
  std::vector<oracles::AblationVariant> v = oracles::ablationVariants(caseUnder("my_backend"));
  ASSERT_GE(v.size(), 5u);
  EXPECT_EQ(v[4].name, "backend=my_backend");
  EXPECT_EQ(v[4].rerun.compile, caseUnder("my_backend").compile);
  EXPECT_EQ(v[3].rerun.compile.mode, "max-autotune");  // Inductor keeps the case's mode
  EXPECT_TRUE(oracles::isStandardBackend("aot_eager_decomp_partition"));
  EXPECT_FALSE(oracles::isStandardBackend("my_backend"));
}

TEST(Ablation, TheLeastCompilerThatReproducesIsBlamed) {
  EXPECT_EQ(oracles::componentAtFault(rows({{"backend=eager", true}, {"backend=aot_eager", true}}), "inductor"),
            "dynamo");
  EXPECT_EQ(oracles::componentAtFault(rows({{"backend=eager", false}, {"backend=aot_eager", true}}), "inductor"),
            "aot_autograd");
  EXPECT_EQ(oracles::componentAtFault(rows({{"backend=aot_eager_decomp_partition", true}, {"backend=inductor", true}}),
                                      "inductor"),
            "aot_autograd (decompositions or partitioner)");
  EXPECT_EQ(oracles::componentAtFault(rows({{"backend=eager", false}, {"backend=inductor", true}}), "inductor"),
            "inductor");
  EXPECT_EQ(oracles::componentAtFault(rows({{"backend=inductor", false}, {"backend=planted", true}}), "planted"),
            "backend planted");
  EXPECT_EQ(oracles::componentAtFault(rows({{"backend=inductor", false}}), "inductor"),
            "unknown (no backend variant reproduces)");
}

TEST(Ablation, OptionsWithoutWhichTheBugIsGoneAreNamed) {
  EXPECT_EQ(oracles::componentAtFault(rows({{"backend=inductor", true},
                                            {"without mode", true},
                                            {"without dynamic", false},
                                            {"without cpp_wrapper", false}}),
                                      "inductor"),
            "inductor (needs dynamic, cpp_wrapper)");
  // Without backward, forward also runs without grad mode: a bug that fails in compile needs the grad mode.
  auto withoutBackward = rows({{"backend=eager", true}, {"without backward", false}});
  EXPECT_EQ(oracles::componentAtFault(withoutBackward, "aot_eager"), "dynamo (needs backward)");
  EXPECT_EQ(oracles::componentAtFault(withoutBackward, "aot_eager", true), "dynamo (needs grad mode, not a backward)");
}

TEST(Ablation, WithoutAblationTheBackendNamesTheComponent) {
  EXPECT_EQ(oracles::componentOfBackend("eager"), "dynamo");
  EXPECT_EQ(oracles::componentOfBackend("aot_eager"), "aot_eager");
  EXPECT_EQ(oracles::componentOfBackend("inductor"), "inductor");
  EXPECT_EQ(oracles::componentOfBackend("planted"), "backend planted");
}

TEST(Ablation, TheCpuRowOfACudaBugSaysWhetherItIsCudasAlone) {
  EXPECT_EQ(oracles::componentAtFault(rows({{"backend=aot_eager", false},
                                            {"backend=inductor", true},
                                            {std::string(oracles::kCpuVariant), false}}),
                                      "inductor"),
            "inductor (CUDA only)");
  EXPECT_EQ(oracles::componentAtFault(rows({{"backend=inductor", true},
                                            {"without coordinate_descent_tuning", false},
                                            {std::string(oracles::kCpuVariant), true}}),
                                      "inductor"),
            "inductor (needs coordinate_descent_tuning) (on CPU too)");
}

TEST(Ablation, TrainingStepsAreAblatedOverTheCompiledPartAndTheComponentSaysWhichFails) {
  MinimizeCase c;
  c.compile.setEntry("train");
  c.compile.training.compiled = "both";
  std::vector<std::string> names;
  for (const auto& v : oracles::ablationVariants(c)) {
    names.push_back(v.name);
    if (v.name.starts_with("compiled=")) EXPECT_EQ("compiled=" + v.rerun.compile.training.compiled, v.name);
  }
  EXPECT_EQ(std::count(names.begin(), names.end(), "compiled=model"), 1);
  EXPECT_EQ(std::count(names.begin(), names.end(), "compiled=step"), 1);
  EXPECT_EQ(std::count(names.begin(), names.end(), "compiled=both"), 0);  // the finding's own part
  EXPECT_EQ(oracles::componentAtFault(rows({{"backend=inductor", true}, {"compiled=model", false}, {"compiled=step", true}}),
                                      "inductor", false, "both"),
            "inductor (in the compiled optimizer step, clipping and optimizer.step: the compiled model alone does not fail)");
  EXPECT_EQ(oracles::componentAtFault(rows({{"backend=aot_eager", true}, {"compiled=step", false}}), "inductor", false,
                                      "model"),
            "aot_autograd (in the compiled model, forward or backward: the optimizer's step compiled alone does not fail)");
  EXPECT_EQ(oracles::componentAtFault(rows({{"backend=inductor", true}, {"compiled=model", false}, {"compiled=step", false}}),
                                      "inductor", false, "both"),
            "inductor (only with the model and the optimizer step both compiled)");
}

TEST(Ablation, AnExportFindingsEntryRowsKeepItsDimRanges) {
  MinimizeCase c;
  c.compile.setEntry("aoti");
  c.compile.dynamic = true;  // exported with Dim ranges: a fault there needs them in every row
  std::vector<oracles::AblationVariant> v = oracles::ablationVariants(c);
  ASSERT_EQ(v.size(), 4u);
  for (const auto& variant : v) EXPECT_EQ(variant.rerun.compile.dynamic, std::optional<bool>(true)) << variant.name;
}

TEST(Ablation, AForwardInductorFindingAlsoRunsThroughExportAndAotInductorToTellLoweringFromTheRest) {
  MinimizeCase c;  // torch.compile's Inductor, forward only, with an Inductor option
  c.compile.inductorConfig = {{"cpp_wrapper", true}};
  std::vector<oracles::AblationVariant> v = oracles::ablationVariants(c);
  auto at = [&](const std::string& name) {
    return std::find_if(v.begin(), v.end(), [&](const oracles::AblationVariant& x) { return x.name == name; });
  };
  ASSERT_NE(at("entry=export"), v.end());
  ASSERT_NE(at("entry=aoti"), v.end());
  EXPECT_EQ(at("entry=aoti")->rerun.compile.inductorConfig, c.compile.inductorConfig);  // AOTInductor keeps them
  EXPECT_TRUE(at("entry=export")->rerun.compile.inductorConfig.empty());
  c.backward = true;  // export entries run no backward: a backward finding gets no entry rows
  std::vector<oracles::AblationVariant> backward = oracles::ablationVariants(c);
  EXPECT_TRUE(std::none_of(backward.begin(), backward.end(),
                           [](const oracles::AblationVariant& x) { return x.name.starts_with("entry="); }));
  EXPECT_EQ(oracles::componentAtFault(rows({{"backend=inductor", true}, {"entry=export", false}, {"entry=aoti", true}}),
                                      "inductor"),
            "inductor (AOTInductor fails too: Inductor's lowering)");
  EXPECT_EQ(oracles::componentAtFault(rows({{"backend=inductor", true}, {"entry=export", false}, {"entry=aoti", false}}),
                                      "inductor"),
            "inductor (not through AOTInductor: torch.compile's own path)");
  EXPECT_EQ(oracles::componentAtFault(rows({{"backend=aot_eager", true}, {"entry=export", false}, {"entry=aoti", true}}),
                                      "inductor"),
            "aot_autograd (AOTInductor fails too)");  // not Inductor's lowering: aot_eager fails already
}
