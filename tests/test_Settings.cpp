// The option-to-settings converters (fuzzer/cli/Settings): what each flag becomes in the settings of
// the layers below, and the clear usage errors for what cannot be used (a missing plugin, a credential
// passed to the workers, an LLM endpoint without its model); a campaign's recorded identity adopted by
// triage; the scratch directory a run works in.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzzer/campaign/output/FindingStore.h"
#include "fuzzer/cli/Settings.h"
#include "tests/TestWorkers.h"

namespace tcfuzz {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test_support::TempDir;

/// The message of the std::invalid_argument `f` throws ("" when it throws none).
template <class F>
std::string invalidArgument(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Settings, ParsesDurations) {
  EXPECT_EQ(parseDuration("0"), 0);
  EXPECT_EQ(parseDuration("600"), 600);
  EXPECT_EQ(parseDuration("90s"), 90);
  EXPECT_EQ(parseDuration("10m"), 600);
  EXPECT_EQ(parseDuration("2h"), 7200);
  EXPECT_EQ(parseDuration("1.5m"), 90);
  EXPECT_THROW(parseDuration("ten minutes"), std::invalid_argument);
  EXPECT_THROW(parseDuration("5d"), std::invalid_argument);
  EXPECT_EQ(invalidArgument([] { parseDuration("-3m"); }), "--max-time '-3m' is not a duration (600, 90s, 10m, 2h)");
  EXPECT_EQ(invalidArgument([] { parseDuration(""); }), "--max-time is empty");
}

TEST(Settings, CompileFlagsBecomeTheCompileConfig) {
  Options defaults;
  EXPECT_EQ(compileConfigFrom(defaults), oracles::CompileConfig{});  // inductor, default mode, automatic dynamic

  Options o;
  o.backend = "aot_eager";
  o.mode = "max-autotune";
  o.dynamic = "false";
  o.fullgraph = true;
  o.inductorConfig = {"cpp_wrapper=true", "max_autotune_gemm_backends=ATEN"};
  oracles::CompileConfig c = compileConfigFrom(o);
  EXPECT_EQ(c.backend, "aot_eager");
  EXPECT_EQ(c.mode, "max-autotune");
  EXPECT_EQ(c.dynamic, std::optional<bool>(false));
  EXPECT_TRUE(c.fullgraph);
  EXPECT_EQ(c.inductorConfig, (json{{"cpp_wrapper", true}, {"max_autotune_gemm_backends", "ATEN"}}));
  o.dynamic = "true";
  EXPECT_EQ(compileConfigFrom(o).dynamic, std::optional<bool>(true));
  o.mode = "default";
  EXPECT_EQ(compileConfigFrom(o).mode, "");  // the default mode is never recorded
  o.inductorConfig = {"cpp_wrapper"};
  EXPECT_THROW(compileConfigFrom(o), std::invalid_argument);  // no '='
}

TEST(Settings, TestSettingsTakeLimitsSeedThreadsAndPluginsAndRefuseAMissingPlugin) {
  TempDir dir("tcfuzz-settings");
  fs::path plugin = dir.path() / "backend.py";
  std::ofstream(plugin) << "# a plugin\n";
  Options o;
  o.timeout = 45;
  o.memoryMb = 2048;
  o.gpuMemoryMb = 512;
  o.seed = 42;
  o.threads = 3;
  o.plugins = {plugin.string()};
  TestSettings s = testSettingsFrom(o, 4);
  EXPECT_EQ(s.limits.timeoutSeconds, 45);
  EXPECT_EQ(s.limits.memoryMb, 2048);
  EXPECT_EQ(s.limits.gpuMemoryMb, 512);
  EXPECT_EQ(s.seed, 42u);
  EXPECT_EQ(s.device, "cpu");
  EXPECT_EQ(s.threads, 3);
  EXPECT_EQ(s.plugins, std::vector<fs::path>{plugin});

  o.threads = 0;  // the cores shared among the workers, at least one each
  EXPECT_GE(testSettingsFrom(o, 1000).threads, 1);
  EXPECT_GE(testSettingsFrom(o, 1).threads, testSettingsFrom(o, 2).threads);

  o.plugins = {(dir.path() / "missing.py").string()};
  EXPECT_EQ(invalidArgument([&] { testSettingsFrom(o, 1); }),
            "--plugin " + (dir.path() / "missing.py").string() + " does not exist");
}

TEST(Settings, WorkerSpecFollowsTheFlagsAndNeverPassesACredential) {
  TempDir dir("tcfuzz-settings-spec");
  Options o;
  o.sandbox = "none";  // bubblewrap is probed only when asked for
  o.workerEnv = {"OMP_NUM_THREADS"};
  o.headerCache = "none";
  o.childRssMb = 1024;
  WorkerSpec spec = workerSpecFrom(o, dir.path(), SecretRedactor{}, 200);
  EXPECT_EQ(spec.sandbox, SandboxKind::None);
  EXPECT_EQ(spec.passEnv, std::vector<std::string>{"OMP_NUM_THREADS"});
  EXPECT_EQ(spec.python, fs::path(TCFUZZ_DEFAULT_PYTHON));
  EXPECT_EQ(spec.harness, fs::path(TCFUZZ_SOURCE_DIR) / "fuzzer" / "worker" / "python" / "zygote.py");
  EXPECT_EQ(spec.workDir, dir.path());
  EXPECT_EQ(spec.device, "cpu");
  EXPECT_TRUE(spec.gpus.empty());
  EXPECT_TRUE(spec.headerCacheDir.empty());  // --header-cache none
  EXPECT_EQ(spec.childJobs, 200);            // --child-jobs -1: the command's default
  EXPECT_EQ(spec.childRssMb, 1024);
  o.childJobs = 7;
  EXPECT_EQ(workerSpecFrom(o, dir.path(), SecretRedactor{}, 200).childJobs, 7);

  o.workerEnv = {"OMP_NUM_THREADS", "GITHUB_TOKEN"};
  EXPECT_EQ(invalidArgument([&] { workerSpecFrom(o, dir.path(), SecretRedactor{}); }),
            "--worker-env GITHUB_TOKEN: the name marks a credential, which never reaches a worker");
}

TEST(Settings, LlmSettingsCheckTheEndpointAndFillInItsDefaults) {
  Options o;
  LlmSettings local = llmSettingsFrom(o, {}, SecretRedactor{});
  EXPECT_EQ(local.mode, "local");
  EXPECT_EQ(local.endpoint.requestTimeoutSeconds, 600);  // the niced local server gets longer
  EXPECT_EQ(local.server.python, fs::path(TCFUZZ_DEFAULT_PYTHON));

  o.llmUrl = "http://127.0.0.1:8091/v1//";
  o.llmModel = "qwen";
  o.llmRequests = 3;
  LlmSettings remote = llmSettingsFrom(o, {"--llm-url", "--llm-model"}, SecretRedactor{});
  EXPECT_EQ(remote.mode, "remote");  // an endpoint given makes the mode remote
  EXPECT_EQ(remote.endpoint.baseUrl, "http://127.0.0.1:8091/v1");
  EXPECT_EQ(remote.endpoint.model, "qwen");
  EXPECT_EQ(remote.endpoint.requestTimeoutSeconds, 120);
  EXPECT_EQ(remote.endpoint.maxConcurrent, 3);
  EXPECT_EQ(remote.requestsInFlight, 3);
  EXPECT_EQ(remote.queueCapacity, 6);

  Options noModel;
  noModel.llmUrl = "http://127.0.0.1:8091/v1";
  EXPECT_EQ(invalidArgument([&] { llmSettingsFrom(noModel, {"--llm-url"}, SecretRedactor{}); }),
            "--llm-url needs --llm-model NAME (the model the endpoint serves)");
  Options ftp = o;
  ftp.llmUrl = "ftp://host/v1";
  EXPECT_EQ(invalidArgument([&] { llmSettingsFrom(ftp, {"--llm-url"}, SecretRedactor{}); }),
            "--llm-url must start with http:// or https://, not ftp://host/v1");
  Options offWithUrl = o;
  offWithUrl.llm = "off";
  EXPECT_EQ(invalidArgument([&] { llmSettingsFrom(offWithUrl, {"--llm", "--llm-url"}, SecretRedactor{}); }),
            "--llm-url points at an endpoint, but --llm is off");
  Options tooMany = o;
  tooMany.llmRequests = 65;
  EXPECT_EQ(invalidArgument([&] { llmSettingsFrom(tooMany, {}, SecretRedactor{}); }),
            "--llm-requests must lie in [1, 64]");
}

// Triage of a campaign reuses what the campaign recorded: its plugins unless others are given, its
// device, timeout and memory limit.
TEST(Settings, TriageAdoptsTheCampaignsRecordedIdentity) {
  TempDir dir("tcfuzz-settings-identity");
  FindingStore store(dir.path() / "findings.sqlite");
  EXPECT_EQ(campaignDevice(store), std::nullopt);
  store.setMeta("identity",
                json{{"plugins", {"/campaign/planted.py"}}, {"device", "cpu"}, {"timeout", 90}, {"memory_mb", 1024}}.dump());
  EXPECT_EQ(campaignDevice(store), std::optional<std::string>("cpu"));
  TestSettings s;
  adoptCampaignIdentity(store, s);
  EXPECT_EQ(s.plugins, std::vector<fs::path>{"/campaign/planted.py"});
  EXPECT_EQ(s.device, "cpu");
  EXPECT_EQ(s.limits.timeoutSeconds, 90);
  EXPECT_EQ(s.limits.memoryMb, 1024);
  TestSettings own;
  own.plugins = {"/mine.py"};
  adoptCampaignIdentity(store, own);
  EXPECT_EQ(own.plugins, std::vector<fs::path>{"/mine.py"});  // --plugin given: kept
}

TEST(Settings, CampaignStoreAndJsonFilesAreFoundOrNamedInTheError) {
  TempDir dir("tcfuzz-settings-files");
  EXPECT_EQ(invalidArgument([&] { campaignStorePath(dir.path()); }),
            dir.path().string() + " holds no campaign (no findings.sqlite)");
  { FindingStore store(dir.path() / "findings.sqlite"); }
  EXPECT_EQ(campaignStorePath(dir.path()), dir.path() / "findings.sqlite");

  fs::path good = dir.path() / "policy.json", bad = dir.path() / "bad.json";
  std::ofstream(good) << R"({"mutation_share": 0.25})";
  std::ofstream(bad) << "{not json";
  EXPECT_EQ(readJsonFile(good), (json{{"mutation_share", 0.25}}));
  EXPECT_EQ(invalidArgument([&] { readJsonFile(dir.path() / "none.json"); }),
            "cannot read " + (dir.path() / "none.json").string());
  EXPECT_EQ(invalidArgument([&] { readJsonFile(bad); }).rfind(bad.string() + " is not valid JSON: ", 0), 0u);
}

// A scratch directory is removed at the end unless it was asked for by name or kept.
TEST(Settings, ScratchDirIsRemovedUnlessRequestedOrKept) {
  fs::path temporary, kept;
  {
    ScratchDir scratch("", false);
    temporary = scratch.path();
    EXPECT_TRUE(fs::is_directory(temporary));
    EXPECT_FALSE(scratch.kept());
    std::ofstream(temporary / "job.log") << "x";
  }
  EXPECT_FALSE(fs::exists(temporary));
  {
    ScratchDir scratch("", true);
    kept = scratch.path();
  }
  EXPECT_TRUE(fs::is_directory(kept));
  fs::remove_all(kept);

  TempDir dir("tcfuzz-settings-scratch");
  fs::path requested = dir.path() / "work" / "here";
  {
    ScratchDir scratch(requested.string(), false);
    EXPECT_EQ(scratch.path(), requested);
    EXPECT_TRUE(scratch.kept());
  }
  EXPECT_TRUE(fs::is_directory(requested));
}

}  // namespace
}  // namespace tcfuzz
