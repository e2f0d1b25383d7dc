#pragma once
// The option-to-settings converters, in one place: each subcommand turns its Options into the
// settings of the layers below (workers, tests, compile configs, triage, LLM) through these, and
// the scratch directory a subcommand that runs programs needs.
#include <filesystem>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzzer/campaign/CompileMatrix.h"
#include "fuzzer/campaign/output/FindingStore.h"
#include "fuzzer/cli/Options.h"
#include "fuzzer/llm/LlmProposer.h"
#include "fuzzer/triage/Triage.h"
#include "fuzzer/worker/GpuInventory.h"
#include "fuzzer/worker/WorkerPool.h"
#include "oracles/infra/SecretRedactor.h"

namespace tcfuzz {

/// A temporary directory removed on destruction unless kept (a requested directory is always kept).
class ScratchDir {
 public:
  ScratchDir(const std::string& requested, bool keep);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  bool kept() const { return keep_; }

 private:
  std::filesystem::path path_;
  bool keep_;
};

/// Program jobs a campaign's persistent worker child serves when --child-jobs is not given.
inline constexpr int kCampaignChildJobs = 200;

/// Parses --device and pins a CUDA selection to this machine's GPUs (resolveDevices with NVML and tcfuzz's
/// CUDA_VISIBLE_DEVICES); throws DeviceError when CUDA is asked for and no GPU is usable.
DeviceSelection deviceSelectionFrom(const std::string& device);
/// The --device a campaign's store records (its identity); nullopt for a store that records none.
std::optional<std::string> campaignDevice(const FindingStore& store);

/// The worker set-up the options describe, writing under workDir; `defaultChildJobs` stands for
/// --child-jobs -1 (the command's default); the zygotes' replies are masked with `secrets`. Throws
/// WorkerStartError when the bubblewrap sandbox is asked for and cannot run here, DeviceError when
/// --device asks for GPUs the machine lacks.
WorkerSpec workerSpecFrom(const Options& options, const std::filesystem::path& workDir, const SecretRedactor& secrets,
                          int defaultChildJobs = 1);

/// The compile flags of the command line (--backend, --mode, --dynamic, --fullgraph, --inductor-config);
/// std::invalid_argument for a bad override (option parsing has refused a bad --dynamic).
oracles::CompileConfig compileConfigFrom(const Options& options);

/// Limits, seed, device, plugins and the per-worker thread count (--threads, else cores / workers);
/// std::invalid_argument for a --plugin that does not exist.
TestSettings testSettingsFrom(const Options& options, int workers);

/// The campaign's recorded settings that triage must reuse (its identity in findings.sqlite):
/// its plugins (a planted backend) unless --plugin was given, its limits and device.
void adoptCampaignIdentity(const FindingStore& store, TestSettings& settings);
/// The torch a campaign's workers last ran (store meta "torch", written when its pool started);
/// unknown for a store from before it was recorded.
oracles::TorchInfo campaignTorch(const FindingStore& store);
/// Adapts to what the workers' torch lacks: stops the compile templates whose Inductor options it
/// does not have, and says when it has no compiler_bisector (if `bisect` was asked for: the bisect job
/// itself then answers "not available", and the report says so). Returns one note per thing skipped,
/// for the log and fuzzer_stats.
std::vector<std::string> torchLacks(const Hello& hello, CompileMatrix& matrix, bool bisect);
/// Records the pool's torch as the campaign's (store meta "torch"; campaignTorch reads it back).
void recordCampaignTorch(FindingStore& store, const oracles::TorchInfo& torch);

/// The known upstream issues: corpus/known-upstream.json, then each --known file; std::runtime_error for a bad file.
std::vector<oracles::KnownIssue> knownIssuesFrom(const Options& options);
/// The triage knobs the options select (minimizer policy file, --no-ablation ...); reports are masked
/// with `secrets`.
TriageSettings triageSettingsFrom(const Options& options, int workers, const SecretRedactor& secrets);

/// The LLM settings of a session (not part of the campaign's identity: a resumed session may change
/// them). `given` holds the long names of the flags on the command line; the reply log is masked with
/// `secrets`. std::invalid_argument for a bad combination.
LlmSettings llmSettingsFrom(const Options& options, const std::set<std::string>& given, const SecretRedactor& secrets);

/// The secrets of this process's environment that tcfuzz masks in everything it writes (oracles/
/// SecretRedactor): --llm-api-key-env's variable and every credential-named one. Built once, by the Driver.
SecretRedactor secretsFrom(const Options& options);

/// Parses --max-time: "600", "90s", "10m", "2h" (seconds; 0 = unbounded); std::invalid_argument otherwise.
double parseDuration(const std::string& text);

/// The findings.sqlite of a campaign directory; std::invalid_argument when `dir` holds no campaign.
std::filesystem::path campaignStorePath(const std::filesystem::path& dir);

/// A JSON file a flag names; std::invalid_argument naming the file when it is unreadable or not JSON.
nlohmann::json readJsonFile(const std::filesystem::path& file);

/// A progress line on stderr, prefixed "tcfuzz: ".
void logLine(const std::string& line);

}  // namespace tcfuzz
