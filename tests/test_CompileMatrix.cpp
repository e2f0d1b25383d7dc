// The compile-configuration matrix: sampling, gating, pinning, JSON, and that every built-in
// template names options the installed torch really has.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fuzzer/campaign/CompileMatrix.h"

namespace tcfuzz {
namespace {

using nlohmann::json;

TEST(CompileMatrix, CpuNeverDrawsCudaTemplates) {
  CompileMatrix m;
  gen::Rng rng(1);
  std::set<std::string> cudaOnly;
  for (const auto& t : m.templates)
    if (t.needsCuda) cudaOnly.insert(t.name);
  ASSERT_TRUE(cudaOnly.count("cudagraphs"));
  std::set<std::string> drawn;
  for (int i = 0; i < 3000; ++i)
    for (const auto& t : m.sample(rng, "cpu", {}).templates) drawn.insert(t);
  for (const auto& t : drawn) EXPECT_FALSE(cudaOnly.count(t)) << t;
  EXPECT_TRUE(drawn.count("cpp_wrapper"));
  EXPECT_TRUE(drawn.count("freezing"));
  std::set<std::string> drawnCuda;
  for (int i = 0; i < 3000; ++i)
    for (const auto& t : m.sample(rng, "cuda:0", {}).templates) drawnCuda.insert(t);
  EXPECT_TRUE(drawnCuda.count("cudagraphs"));
}

TEST(CompileMatrix, SharesFollowTheWeights) {
  CompileMatrix m;
  m.entries = {{"compile", 1}};  // torch.compile's own arguments (an export entry resets them)
  gen::Rng rng(7);
  int backward = 0, inductor = 0, fullgraph = 0, templated = 0, nonInductorMode = 0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    SampledCompile s = m.sample(rng, "cpu", {});
    backward += s.backward;
    fullgraph += s.config.fullgraph;
    inductor += s.config.backend == "inductor";
    templated += !s.templates.empty();
    if (s.config.backend != "inductor") {
      nonInductorMode += !s.config.mode.empty();
      EXPECT_TRUE(s.templates.empty());
    }
  }
  EXPECT_NEAR(backward / double(n), m.backwardShare, 0.03);
  EXPECT_NEAR(fullgraph / double(n), m.fullgraphShare, 0.03);
  EXPECT_NEAR(inductor / double(n), 0.7, 0.03);
  EXPECT_NEAR(templated / double(inductor), m.templateShare, 0.04);
  EXPECT_EQ(nonInductorMode, 0);
}

TEST(CompileMatrix, PinnedDimensionsAreNeverSampled) {
  CompileMatrix m;
  gen::Rng rng(3);
  PinnedCompile pinned;
  pinned.backend = "aot_eager";
  pinned.dynamic = "false";
  pinned.backward = true;
  pinned.inductorConfig = json{{"cpp_wrapper", true}};
  for (int i = 0; i < 200; ++i) {
    SampledCompile s = m.sample(rng, "cpu", pinned);
    EXPECT_EQ(s.config.backend, "aot_eager");
    ASSERT_TRUE(s.config.dynamic.has_value());
    EXPECT_FALSE(*s.config.dynamic);
    EXPECT_TRUE(s.backward);
    EXPECT_EQ(s.config.inductorConfig, (json{{"cpp_wrapper", true}}));
    EXPECT_TRUE(s.templates.empty());
  }
}

TEST(CompileMatrix, MarkedDimensionsAreADynamicChoiceDrawnOrPinned) {
  CompileMatrix m;
  m.entries = {{"compile", 1}};
  gen::Rng rng(5);
  int marked = 0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    SampledCompile s = m.sample(rng, "cpu", {});
    marked += s.config.markDynamic;
    if (s.config.markDynamic) EXPECT_FALSE(s.config.dynamic.has_value());
  }
  EXPECT_NEAR(marked / double(n), 0.1, 0.02);  // weight 1 of 10
  PinnedCompile pinned;
  pinned.dynamic = "mark";
  for (int i = 0; i < 50; ++i) EXPECT_TRUE(m.sample(rng, "cpu", pinned).config.markDynamic);
  EXPECT_THROW(CompileMatrix::fromJson(json{{"dynamic", {{"sometimes", 1}}}}), std::invalid_argument);
}

TEST(CompileMatrix, EntryPointsAreDrawnLastAndResetTorchCompilesArguments) {
  CompileMatrix m;
  gen::Rng rng(9);
  std::map<std::string, int> drawn;
  int strict = 0, exported = 0, aotiTemplated = 0, ranged = 0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    SampledCompile s = m.sample(rng, "cpu", {});
    drawn[s.config.entry]++;
    if (!s.config.exports()) continue;
    exported++;
    strict += s.config.exportStrict;
    EXPECT_FALSE(s.backward);  // export entries run no backward
    oracles::CompileConfig defaults;
    defaults.entry = s.config.entry;
    defaults.exportStrict = s.config.exportStrict;
    defaults.inductorConfig = s.config.inductorConfig;
    defaults.dynamic = s.config.dynamic;
    EXPECT_EQ(s.config, defaults) << s.config.describe();  // backend, mode, marks and fullgraph as torch's
    EXPECT_TRUE(!s.config.dynamic || *s.config.dynamic) << "dynamic=true means Dim ranges; static is the default";
    ranged += s.config.dynamic.has_value();
    if (s.config.entry != "aoti") EXPECT_TRUE(s.templates.empty() && s.config.inductorConfig.empty());
    aotiTemplated += s.config.entry == "aoti" && !s.templates.empty();
  }
  EXPECT_NEAR(drawn["compile"] / double(n), 0.65, 0.03);  // weights 6.5, 1, 1, 0.5, 1
  EXPECT_NEAR(drawn["aoti"] / double(n), 0.1, 0.02);
  EXPECT_NEAR(drawn["export+saveload"] / double(n), 0.05, 0.015);
  EXPECT_EQ(drawn["train"], 0);  // a program kind of its own share (trainingShare), drawn by the campaign
  EXPECT_NEAR(strict / double(exported), m.exportStrictShare, 0.04);
  EXPECT_NEAR(ranged / double(exported), 0.3, 0.04);  // dynamic drawn "true" (2 of 10) or "mark" (1 of 10)
  EXPECT_GT(aotiTemplated, 0);  // AOTInductor keeps the Inductor templates drawn for it
  PinnedCompile pinned;  // a torch.compile option given pins torch.compile
  pinned.backend = "eager";
  for (int i = 0; i < 100; ++i) EXPECT_EQ(m.sample(rng, "cpu", pinned).config.entry, "compile");
  pinned = {};
  pinned.entry = "export+saveload";
  pinned.exportStrict = true;
  for (int i = 0; i < 50; ++i) {
    SampledCompile s = m.sample(rng, "cpu", pinned);
    EXPECT_EQ(s.config.entry, "export+saveload");
    EXPECT_TRUE(s.config.exportStrict);
  }
  EXPECT_THROW(CompileMatrix::fromJson(json{{"entries", {{"torchscript", 1}}}}), std::invalid_argument);
  EXPECT_EQ(CompileMatrix::fromJson(json{{"entries", {{"aoti", 1}}}}).entries, (std::map<std::string, double>{{"aoti", 1}}));
}

TEST(CompileMatrix, SamplingReplaysFromTheSeed) {
  CompileMatrix m;
  gen::Rng a(42), b(42);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(m.sample(a, "cpu", {}).nonDefault(), m.sample(b, "cpu", {}).nonDefault());
}

TEST(CompileMatrix, RecordsOnlyNonDefaultOptions) {
  SampledCompile s;
  EXPECT_EQ(s.nonDefault(), json::object());
  s.backward = true;
  s.config.mode = "max-autotune";
  s.templates = {"freezing"};
  s.config.inductorConfig = {{"freezing", true}};
  EXPECT_EQ(s.nonDefault(), (json{{"mode", "max-autotune"},
                                  {"backward", true},
                                  {"templates", {"freezing"}},
                                  {"inductor_config", {{"freezing", true}}}}));
}

TEST(CompileMatrix, JsonRoundTripAndStrictErrors) {
  CompileMatrix m;
  m.backwardShare = 0.5;
  m.disableTemplate("cpp_wrapper");
  CompileMatrix back = CompileMatrix::fromJson(m.toJson());
  EXPECT_EQ(back.toJson(), m.toJson());
  EXPECT_EQ(CompileMatrix::fromJson(json{{"backward_share", 0.1}}).backwardShare, 0.1);
  EXPECT_THROW(CompileMatrix::fromJson(json{{"backwards_share", 0.1}}), std::invalid_argument);
  EXPECT_THROW(CompileMatrix::fromJson(json{{"backward_share", 2}}), std::invalid_argument);
  EXPECT_THROW(CompileMatrix::fromJson(json{{"modes", {{"turbo", 1}}}}), std::invalid_argument);
  EXPECT_THROW(CompileMatrix::fromJson(json{{"backends", {{"inductor", 0}}}}), std::invalid_argument);
  EXPECT_THROW(CompileMatrix::fromJson(json{{"templates", {{{"name", "x"}}}}}), std::invalid_argument);
}

TEST(CompileMatrix, DisabledTemplateIsNotDrawn) {
  CompileMatrix m;
  for (const auto& name : m.usableTemplates("cpu"))
    if (name != "freezing") m.disableTemplate(name);
  EXPECT_EQ(m.usableTemplates("cpu"), std::vector<std::string>{"freezing"});
  gen::Rng rng(5);
  for (int i = 0; i < 300; ++i)
    for (const auto& t : m.sample(rng, "cpu", {}).templates) EXPECT_EQ(t, "freezing");
}

// Every option a built-in template sets exists in the torch under test (a renamed option would
// otherwise only show up as rejected configurations during a campaign).
TEST(CompileMatrix, TemplatesNameRealInductorAndDynamoOptions) {
  std::set<std::string> names;
  for (const auto& t : CompileMatrix::defaultTemplates())
    for (auto& [k, v] : t.options.items()) names.insert(k);
  EXPECT_TRUE(names.contains("dynamo.capture_scalar_outputs"));
  std::string script = "import torch._inductor.config as c\nimport torch._dynamo.config as d\nmissing = []\nfor k in " +
                       json(names).dump() +
                       ":\n    t, n = (d, k[7:]) if k.startswith('dynamo.') else (c, k)\n"
                       "    try:\n        for p in n.split('.'): t = getattr(t, p)\n"
                       "    except AttributeError: missing.append(k)\nprint(' '.join(missing) or 'none')\n";
  std::string cmd = std::string(TCFUZZ_DEFAULT_PYTHON) + " -c \"$TCFUZZ_SCRIPT\"";
  ::setenv("TCFUZZ_SCRIPT", script.c_str(), 1);
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  std::string out;
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  ASSERT_EQ(::pclose(p), 0) << out;
  EXPECT_EQ(out, "none\n");
}

TEST(CompileMatrix, TemplatesWhoseOptionsTheWorkerTorchLacksAreSkippedWithANote) {
  CompileMatrix m;
  // An older torch: every option of the default templates but the persistent-TMA one and cpp.simdlen.
  std::set<std::string> options;
  for (const auto& t : m.templates)
    for (const auto& [option, value] : t.options.items())
      if (option != "triton.enable_persistent_tma_matmul" && option != "cpp.simdlen") options.insert(option);
  std::vector<std::string> notes = m.disableTemplatesLacking(options);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0], "template 'tma' skipped: this torch has no option 'triton.enable_persistent_tma_matmul'");
  EXPECT_EQ(notes[1], "template 'scalar_cpp' skipped: this torch has no option 'cpp.simdlen'");
  auto usable = m.usableTemplates("cuda");
  EXPECT_EQ(std::count(usable.begin(), usable.end(), "tma"), 0);
  EXPECT_EQ(std::count(usable.begin(), usable.end(), "scalar_cpp"), 0);
  EXPECT_EQ(std::count(usable.begin(), usable.end(), "cpp_wrapper"), 1);
  // Options not reported (an empty set): nothing is assumed missing.
  CompileMatrix fresh;
  EXPECT_TRUE(fresh.disableTemplatesLacking({}).empty());
  EXPECT_EQ(fresh.usableTemplates("cuda").size(), CompileMatrix{}.usableTemplates("cuda").size());
}

TEST(CompileMatrix, ATemplateTheGpuLacksIsSkippedWithANote) {
  CompileMatrix m;
  EXPECT_EQ(m.disableTemplate("tma", "TMA needs compute capability 9.0 or newer; this GPU has 8.0"),
            "template 'tma' skipped: TMA needs compute capability 9.0 or newer; this GPU has 8.0");
  EXPECT_EQ(m.disableTemplate("tma", "again"), std::nullopt);  // already skipped: one note
  EXPECT_EQ(m.disableTemplate("no_such_template", "x"), std::nullopt);
  auto usable = m.usableTemplates("cuda");
  EXPECT_EQ(std::count(usable.begin(), usable.end(), "tma"), 0);
  EXPECT_EQ(std::count(usable.begin(), usable.end(), "no_persistent_reductions"), 1);
  auto cpu = m.usableTemplates("cpu");
  EXPECT_EQ(std::count(cpu.begin(), cpu.end(), "multi_kernel"), 0);  // CUDA-only templates stay off the CPU
}

TEST(CompileMatrix, TheTrainEntryDrawsItsStepsAndKeepsTorchCompilesArguments) {
  CompileMatrix m;
  gen::Rng rng(17);
  PinnedCompile pinned;
  pinned.entry = "train";
  std::map<std::string, int> optimizers, parts, schedulers;
  int foreach = 0, clipped = 0, inductor = 0;
  const int n = 3000;
  for (int i = 0; i < n; ++i) {
    SampledCompile s = m.sample(rng, "cpu", pinned);
    const oracles::TrainingLoop& t = s.config.training;
    ASSERT_TRUE(s.config.trains());
    EXPECT_FALSE(s.config.exports());
    EXPECT_FALSE(s.backward);  // each step runs its own backward
    EXPECT_FALSE(s.config.fullgraph || s.config.markDynamic) << s.config.describe();
    EXPECT_TRUE(t.steps >= 2 && t.steps <= m.maxTrainingSteps) << t.steps;
    optimizers[t.optimizer]++;
    parts[t.compiled]++;
    schedulers[t.scheduler.empty() ? "none" : t.scheduler]++;
    foreach += t.foreach;
    clipped += t.clipNorm > 0;
    inductor += s.config.backend == "inductor";  // torch.compile's own draws stay
    EXPECT_FALSE(s.config.inductorConfig.contains("freezing")) << "freezing takes parameters for constants";
    EXPECT_EQ(std::count(s.templates.begin(), s.templates.end(), "freezing"), 0);
  }
  EXPECT_NEAR(optimizers["adamw"] / double(n), 1 / 3.0, 0.04);
  EXPECT_NEAR(parts["both"] / double(n), 0.5, 0.04);
  EXPECT_NEAR(schedulers["none"] / double(n), 0.6, 0.04);
  EXPECT_NEAR(foreach / double(n), m.trainingForeachShare, 0.04);
  EXPECT_NEAR(clipped / double(n), m.trainingClipShare, 0.04);
  EXPECT_NEAR(inductor / double(n), 0.7, 0.04);
  pinned.training = oracles::TrainingLoop::parse("optimizer=sgd,steps=5,compiled=step");  // --train: not drawn
  EXPECT_EQ(m.sample(rng, "cpu", pinned).config.training, *pinned.training);
  CompileMatrix read = CompileMatrix::fromJson(m.toJson());
  EXPECT_EQ(read.trainingCompiled, m.trainingCompiled);
  EXPECT_EQ(read.trainingShare, m.trainingShare);
  EXPECT_THROW(CompileMatrix::fromJson({{"training_optimizers", {{"lbfgs", 1}}}}), std::invalid_argument);
}

}  // namespace
}  // namespace tcfuzz
