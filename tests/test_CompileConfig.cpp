// CompileConfig: its defaults, its JSON forms (the job's "compile", a finding's non-default options)
// and the parse that reads both back.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "oracles/judge/CompileConfig.h"

using namespace tcfuzz;
using nlohmann::json;
using oracles::CompileConfig;

TEST(CompileConfig, DefaultsAreInductorDefaultModeAutomaticDynamicAndNoOptions) {
  CompileConfig c;
  EXPECT_EQ(c.backend, "inductor");
  EXPECT_TRUE(c.usesInductor());
  EXPECT_TRUE(c.defaultMode());
  EXPECT_FALSE(c.dynamic.has_value());
  EXPECT_FALSE(c.fullgraph);
  EXPECT_EQ(c.inductorConfig, json::object());
  EXPECT_EQ(c.nonDefault(), json::object());
  EXPECT_EQ(c.toJson().dump(),
            R"({"backend":"inductor","dynamic":null,"entry":"compile","export_strict":false,"fullgraph":false,)"
            R"("inductor_config":{},"mark_dynamic":false,"mode":null})");
  EXPECT_EQ(c.describe(), "backend=inductor");
}

TEST(CompileConfig, TheDefaultModeHasTwoNamesAndIsNeverRecorded) {
  CompileConfig c;
  c.setMode("default");
  EXPECT_EQ(c.mode, "");
  c.mode = "default";  // set directly, as a --mode flag may
  EXPECT_TRUE(c.defaultMode());
  EXPECT_EQ(c.nonDefault(), json::object());
  EXPECT_TRUE(c.toJson()["mode"].is_null());
  c.setMode("max-autotune");
  EXPECT_FALSE(c.defaultMode());
  EXPECT_EQ(c.nonDefault(), (json{{"mode", "max-autotune"}}));
}

TEST(CompileConfig, ToJsonAndFromJsonRoundTrip) {
  CompileConfig c;
  c.backend = "aot_eager";
  c.mode = "reduce-overhead";
  c.dynamic = false;
  c.fullgraph = true;
  c.addInductorOverride("cpp_wrapper=true");
  c.addInductorOverride("triton.max_tiles=3");
  c.addInductorOverride("name=bare words");
  EXPECT_EQ(c.inductorConfig, (json{{"cpp_wrapper", true}, {"triton.max_tiles", 3}, {"name", "bare words"}}));
  EXPECT_EQ(CompileConfig::fromJson(c.toJson()), c);
  EXPECT_EQ(CompileConfig::fromJson(c.nonDefault()), c);
  EXPECT_EQ(c.describe(),
            "backend=aot_eager mode=reduce-overhead dynamic=false fullgraph=true cpp_wrapper=true "
            "name=\"bare words\" triton.max_tiles=3");
  EXPECT_EQ(c.describe(CompileConfig::OptionText::Bare),
            "backend=aot_eager mode=reduce-overhead dynamic=false fullgraph=true cpp_wrapper=true "
            "name=bare words triton.max_tiles=3");
  EXPECT_THROW(c.addInductorOverride("no_equals_sign"), std::invalid_argument);
  EXPECT_THROW(c.addInductorOverride("=3"), std::invalid_argument);
}

// The compile matrix's dynamic keys: "mark" is automatic dynamic with the inputs' dimensions marked, which a
// finding records as mark_dynamic, the run's JSON carries, and a later call at another size checks.
TEST(CompileConfig, DynamicKeysAndMarkedDimensions) {
  CompileConfig c;
  c.setDynamic("mark");
  EXPECT_FALSE(c.dynamic.has_value());
  EXPECT_TRUE(c.markDynamic);
  EXPECT_TRUE(c.symbolicSizes());
  EXPECT_EQ(c.nonDefault(), (json{{"mark_dynamic", true}}));
  EXPECT_EQ(c.toJson()["mark_dynamic"], true);
  EXPECT_EQ(CompileConfig::fromJson(c.nonDefault()), c);
  EXPECT_EQ(c.describe(), "backend=inductor mark_dynamic=true");
  c.setDynamic("true");
  EXPECT_EQ(c.dynamic, std::optional<bool>(true));
  EXPECT_FALSE(c.markDynamic);
  EXPECT_TRUE(c.symbolicSizes());
  c.setDynamic("false");
  EXPECT_EQ(c.dynamic, std::optional<bool>(false));
  EXPECT_FALSE(c.symbolicSizes());
  c.setDynamic("auto");
  EXPECT_EQ(c, CompileConfig{});
  EXPECT_THROW(c.setDynamic("maybe"), std::invalid_argument);
  // Marks mean nothing beside an explicit dynamic=True/False: a record holding both keeps dynamic only.
  EXPECT_FALSE(CompileConfig::fromJson(json{{"dynamic", false}, {"mark_dynamic", true}}).markDynamic);
}

TEST(CompileConfig, FromJsonKeepsDefaultsForMissingNullAndIgnoredKeys) {
  EXPECT_EQ(CompileConfig::fromJson(json::object()), CompileConfig{});
  EXPECT_EQ(CompileConfig::fromJson(json()), CompileConfig{});
  EXPECT_EQ(CompileConfig::fromJson(json::array()), CompileConfig{});
  EXPECT_EQ(CompileConfig::fromJson(json{{"backend", nullptr}, {"mode", nullptr}, {"dynamic", nullptr},
                                         {"fullgraph", nullptr}, {"inductor_config", nullptr}}),
            CompileConfig{});
  // Keys of a finding's record that are not compile arguments, and values of another type, are ignored.
  CompileConfig c = CompileConfig::fromJson(
      json{{"backward", true}, {"templates", {"freezing"}}, {"mode", 3}, {"dynamic", "yes"}, {"inductor_config", 1}});
  EXPECT_EQ(c, CompileConfig{});
  EXPECT_EQ(CompileConfig::fromJson(json{{"mode", "default"}}).mode, "");
}

TEST(CompileConfig, FromJsonRejectsABackendOrFullgraphOfTheWrongType) {
  try {
    CompileConfig::fromJson(json{{"backend", 7}});
    FAIL() << "a numeric backend was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'backend'"), std::string::npos) << e.what();
  }
  try {
    CompileConfig::fromJson(json{{"fullgraph", "true"}});
    FAIL() << "a string fullgraph was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'fullgraph'"), std::string::npos) << e.what();
  }
}

TEST(CompileConfig, AFindingsRecordedConfigBecomesAConfigAndBack) {
  json recorded{{"backend", "aot_eager"}, {"dynamic", true}, {"backward", true}, {"templates", {"freezing"}},
                {"inductor_config", {{"freezing", true}}}};
  oracles::FindingCompile f = oracles::findingCompile(recorded);
  EXPECT_TRUE(f.backward);
  EXPECT_EQ(f.config.backend, "aot_eager");
  EXPECT_EQ(f.config.dynamic, std::optional<bool>(true));
  EXPECT_EQ(f.config.inductorConfig, (json{{"freezing", true}}));
  // Back: everything but the templates (a campaign fact, not a compile argument).
  json back = recorded;
  back.erase("templates");
  EXPECT_EQ(oracles::findingConfig(f.config, f.backward), back);

  oracles::FindingCompile plain = oracles::findingCompile(json::object());
  EXPECT_FALSE(plain.backward);
  EXPECT_EQ(plain.config, CompileConfig{});
  EXPECT_EQ(oracles::findingCompile(json("not an object")).config, CompileConfig{});
  EXPECT_EQ(oracles::findingConfig(CompileConfig{}, false), json::object());
  EXPECT_EQ(oracles::findingConfig(CompileConfig{}, true), (json{{"backward", true}}));
}

TEST(CompileConfig, EntryPointsThroughExport) {
  CompileConfig c;
  EXPECT_FALSE(c.exports());
  EXPECT_EQ(c.toJson()["entry"], "compile");
  EXPECT_EQ(c.toJson()["export_strict"], false);
  c.setEntry("export+decompose");
  c.exportStrict = true;
  EXPECT_TRUE(c.exports());
  EXPECT_FALSE(c.usesInductor());  // torch.export alone: Inductor's options and modes do not apply
  EXPECT_EQ(c.nonDefault(), (json{{"entry", "export+decompose"}, {"export_strict", true}}));
  EXPECT_EQ(c.describe(), "entry=export+decompose strict=true");
  EXPECT_EQ(CompileConfig::fromJson(c.nonDefault()), c);
  EXPECT_EQ(CompileConfig::fromJson(c.toJson()), c);
  c.setEntry("aoti");
  c.exportStrict = false;
  c.addInductorOverride("max_autotune=true");
  EXPECT_TRUE(c.usesInductor());  // AOTInductor reads Inductor's options
  EXPECT_EQ(c.describe(), "entry=aoti max_autotune=true");
  for (const std::string& name : oracles::entryPointNames()) EXPECT_NO_THROW(c.setEntry(name)) << name;
  try {
    c.setEntry("jit");
    FAIL() << "an unknown entry point was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "entry point 'jit' is not one of compile, export, export+decompose, export+saveload, aoti, train");
  }
  EXPECT_THROW(CompileConfig::fromJson(json{{"entry", 3}}), std::invalid_argument);
}

TEST(CompileConfig, TrainingStepsRoundTripAndRefuseWhatTheyCannotRun) {
  oracles::CompileConfig c;
  c.setEntry("train");
  c.training = oracles::TrainingLoop::parse("optimizer=adamw,steps=4,lr=0.1,foreach=true,scheduler=exponential,clip=0.5,compiled=model");
  EXPECT_TRUE(c.trains());
  EXPECT_FALSE(c.exports());
  EXPECT_TRUE(c.usesInductor());  // the model and the step go through torch.compile's Inductor
  EXPECT_EQ(c.describe(), "entry=train optimizer=adamw steps=4 lr=0.1 compiled=model foreach=true scheduler=exponential "
                          "clip=0.5 backend=inductor");
  EXPECT_EQ(oracles::CompileConfig::fromJson(c.toJson()), c);
  EXPECT_EQ(oracles::CompileConfig::fromJson(c.nonDefault()), c);  // what a finding records
  EXPECT_EQ(c.nonDefault()["training"]["scheduler"], "exponential");
  EXPECT_FALSE(oracles::CompileConfig{}.toJson().contains("training"));  // only the train entry carries steps
  for (const char* bad : {"optimizer=lbfgs", "steps=0", "steps=9", "compiled=neither", "scheduler=cosine", "lr=-1",
                          "clip", "momentum=0.5", "steps=two"})
    EXPECT_THROW(oracles::TrainingLoop::parse(bad), std::invalid_argument) << bad;
}
