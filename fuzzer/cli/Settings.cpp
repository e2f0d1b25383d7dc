#include "fuzzer/cli/Settings.h"

#include <unistd.h>  // environ

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include <torch/headeronly/version.h>

#include "fuzzer/triage/StructuredTrace.h"
#include "fuzzer/worker/GpuInventory.h"
#include "fuzzer/worker/Sandbox.h"
#include "fuzzer/worker/SourceTree.h"

namespace tcfuzz {

namespace fs = std::filesystem;
using nlohmann::json;

ScratchDir::ScratchDir(const std::string& requested, bool keep) : keep_(keep || !requested.empty()) {
  if (!requested.empty()) {
    path_ = fs::absolute(requested);
    fs::create_directories(path_);
    return;
  }
  std::string pattern = (fs::temp_directory_path() / "tcfuzz-run-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot create a temporary directory in " + pattern);
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  if (!keep_) fs::remove_all(path_, ec);
}

DeviceSelection deviceSelectionFrom(const std::string& device) {
  DeviceSelection selection = parseDeviceSelection(device);
  if (!selection.cuda) return selection;
  Nvml nvml;
  return resolveDevices(std::move(selection), nvml, std::getenv("CUDA_VISIBLE_DEVICES"));
}

std::optional<std::string> campaignDevice(const FindingStore& store) {
  auto stored = store.meta("identity");
  if (!stored) return std::nullopt;
  json id = json::parse(*stored, nullptr, false);
  if (!id.is_object() || !id.contains("device") || !id["device"].is_string()) return std::nullopt;
  return id["device"].get<std::string>();
}

WorkerSpec workerSpecFrom(const Options& o, const fs::path& workDir, const SecretRedactor& secrets, int defaultChildJobs) {
  WorkerSpec spec;
  spec.secrets = secrets;
  spec.sandbox = parseSandboxKind(o.sandbox);
  if (spec.sandbox == SandboxKind::Bubblewrap)
    if (std::string problem = probeBubblewrap(); !problem.empty()) throw WorkerStartError(problem);
  if (spec.sandbox == SandboxKind::None) fmt::print(stderr, "tcfuzz: warning: {}\n", unsandboxedWarning());
  for (const auto& name : o.workerEnv) {
    if (looksLikeCredential(name))
      throw std::invalid_argument("--worker-env " + name + ": the name marks a credential, which never reaches a worker");
    spec.passEnv.push_back(name);
  }
  spec.python = o.python;
  spec.harness = sourceTree() / "fuzzer" / "worker" / "python" / "zygote.py";
  DeviceSelection devices = deviceSelectionFrom(o.device);
  spec.device = devices.jobDevice();
  spec.gpus = devices.gpus;
  spec.workDir = workDir;
  if (!o.inductorCache.empty()) spec.inductorCacheDir = fs::absolute(o.inductorCache);
  if (o.headerCache != "none")
    spec.headerCacheDir = o.headerCache.empty() ? sharedHeaderCacheDir() : fs::absolute(o.headerCache);
  spec.childJobs = o.childJobs < 0 ? defaultChildJobs : o.childJobs;
  spec.childRssMb = o.childRssMb;
  spec.kernelLinker = o.kernelLinker;
  return spec;
}

oracles::CompileConfig compileConfigFrom(const Options& o) {
  oracles::CompileConfig c;
  c.backend = o.backend;
  c.setMode(o.mode);
  c.setDynamic(o.dynamic);  // auto, true, false or mark (Options.def)
  c.fullgraph = o.fullgraph;
  c.setEntry(o.entry);
  c.exportStrict = o.exportStrict;
  if (c.exports() && (o.backward || o.backend != oracles::kInductorBackend || o.mode != oracles::kDefaultModeName ||
                      o.dynamic == "mark" || o.fullgraph))
    throw std::invalid_argument("--entry " + o.entry +
                                " runs torch.export: --backward, --backend, --mode, --dynamic mark and --fullgraph are "
                                "torch.compile's (--entry compile); --dynamic true exports with Dim ranges");
  if (!o.train.empty() && !c.trains()) throw std::invalid_argument("--train describes the steps of --entry train");
  if (c.trains() && (o.backward || o.fullgraph || o.dynamic == "mark"))
    throw std::invalid_argument("--entry train runs its own backward on each step: --backward, --fullgraph and "
                                "--dynamic mark are forward calls' options");
  if (!o.train.empty()) c.training = oracles::TrainingLoop::parse(o.train);
  for (const auto& assignment : o.inductorConfig) c.addInductorOverride(assignment);
  return c;
}

TestSettings testSettingsFrom(const Options& o, int workers) {
  TestSettings s;
  s.limits = Limits{o.timeout, o.memoryMb, o.gpuMemoryMb};
  s.seed = static_cast<uint64_t>(o.seed);
  s.device = parseDeviceSelection(o.device).jobDevice();
  int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  s.threads = o.threads > 0 ? o.threads : std::max(1, cores / std::max(1, workers));
  for (const auto& p : o.plugins) {
    if (!fs::exists(p)) throw std::invalid_argument("--plugin " + p + " does not exist");
    s.plugins.push_back(fs::absolute(p));
  }
  return s;
}

oracles::TorchInfo campaignTorch(const FindingStore& store) {
  auto stored = store.meta("torch");
  if (!stored) return {};
  return oracles::TorchInfo::fromJson(nlohmann::json::parse(*stored, nullptr, false));
}

std::vector<std::string> torchLacks(const Hello& hello, CompileMatrix& matrix, bool bisect) {
  std::vector<std::string> notes = matrix.disableTemplatesLacking(hello.inductorOptions);
  if (hello.device.starts_with("cuda")) {  // what the GPU and the packages beside torch allow
    if (!hello.has("cutlass"))
      if (auto note = matrix.disableTemplate("cutlass", "no cutlass package (nvidia-cutlass) beside this torch"))
        notes.push_back(*note);
    if (hello.cudaCapability > 0 && hello.cudaCapability < 90)
      if (auto note = matrix.disableTemplate(
              "tma", fmt::format("TMA needs compute capability 9.0 or newer; this GPU has {}.{}",
                                 hello.cudaCapability / 10, hello.cudaCapability % 10)))
        notes.push_back(*note);
  }
  if (bisect && !hello.has("compiler_bisector"))
    notes.push_back(fmt::format("torch {} has no torch._inductor.compiler_bisector: triage's bisect step reports it unavailable",
                                hello.torch.version));
  return notes;
}

void recordCampaignTorch(FindingStore& store, const oracles::TorchInfo& torch) {
  store.setMeta("torch", torch.toJson().dump());
}

void adoptCampaignIdentity(const FindingStore& store, TestSettings& s) {
  auto stored = store.meta("identity");
  if (!stored) return;
  json id = json::parse(*stored, nullptr, false);
  if (!id.is_object()) return;
  if (s.plugins.empty())
    for (const auto& p : id.value("plugins", std::vector<std::string>{})) s.plugins.push_back(p);
  if (auto device = campaignDevice(store)) s.device = parseDeviceSelection(*device).jobDevice();
  if (id.contains("timeout") && id["timeout"].is_number()) s.limits.timeoutSeconds = id["timeout"];
  if (id.contains("memory_mb") && id["memory_mb"].is_number_integer()) s.limits.memoryMb = id["memory_mb"];
}

std::vector<oracles::KnownIssue> knownIssuesFrom(const Options& o) {
  // The project's list of known upstream issues, then the user's own (--known), in that order of matching.
  std::vector<fs::path> knownFiles{sourceTree() / "corpus" / "known-upstream.json"};
  for (const auto& file : o.known) knownFiles.emplace_back(file);
  std::vector<oracles::KnownIssue> known;
  for (const auto& file : knownFiles) {
    auto issues = oracles::loadKnownIssues(file);
    known.insert(known.end(), issues.begin(), issues.end());
  }
  return known;
}

TriageSettings triageSettingsFrom(const Options& o, int workers, const SecretRedactor& secrets) {
  TriageSettings t;
  t.secrets = secrets;
  t.test = testSettingsFrom(o, workers);
  if (!o.minimizer.empty()) {
    try {
      t.minimizer = oracles::MinimizerPolicy::fromJson(readJsonFile(o.minimizer));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("--minimizer {}: {}", o.minimizer, e.what()));
    }
  } else {
    t.minimizer.batch = std::max(1, workers);
  }
  t.minimize = !o.noMinimize;
  t.ablate = !o.noAblation;
  t.bisect = !o.noBisect;
  t.verify = !o.noVerify;
  t.trace = !o.noTlparse;
  t.tlparse = installedTlparse();
  t.knownIssues = knownIssuesFrom(o);
  if (o.checkUpstream) {  // fails at once, with the reason, when the API cannot be reached
    const char* token = std::getenv("GITHUB_TOKEN");
    t.upstream.emplace(o.upstreamApi, token ? token : "", 15.0);
    t.upstream->checkReachable();
  }
  return t;
}

LlmSettings llmSettingsFrom(const Options& o, const std::set<std::string>& given, const SecretRedactor& secrets) {
  LlmSettings ls;
  ls.secrets = secrets;
  ls.mode = o.llm;
  if (!o.llmUrl.empty()) {
    if (given.count("--llm") && o.llm != "remote")
      throw std::invalid_argument(fmt::format("--llm-url points at an endpoint, but --llm is {}", o.llm));
    ls.mode = "remote";
  }
  if (ls.mode == "remote") {
    if (o.llmUrl.empty()) throw std::invalid_argument("--llm remote needs --llm-url URL and --llm-model NAME");
    if (o.llmModel.empty()) throw std::invalid_argument("--llm-url needs --llm-model NAME (the model the endpoint serves)");
    if (!o.llmUrl.starts_with("http://") && !o.llmUrl.starts_with("https://"))
      throw std::invalid_argument("--llm-url must start with http:// or https://, not " + o.llmUrl);
  }
  if (o.llmRequests < 1 || o.llmRequests > 64) throw std::invalid_argument("--llm-requests must lie in [1, 64]");
  if (o.llmTimeout <= 0) throw std::invalid_argument("--llm-timeout must be > 0");
  std::string url = o.llmUrl;
  while (url.ends_with("/")) url.pop_back();
  ls.endpoint.baseUrl = url;
  ls.endpoint.model = o.llmModel;
  ls.endpoint.apiKeyEnv = o.llmApiKeyEnv;
  // The local server is niced: under a full load of workers a reply can take minutes, and a request
  // cut short by a timeout is work thrown away. So it gets a longer default than a remote endpoint.
  ls.endpoint.requestTimeoutSeconds = ls.mode == "local" && !given.count("--llm-timeout") ? 600.0 : o.llmTimeout;
  ls.endpoint.maxConcurrent = o.llmRequests;
  ls.grammar = o.llmGrammar;
  ls.requestsInFlight = o.llmRequests;
  ls.queueCapacity = std::max(2, 2 * o.llmRequests);
  ls.server.python = o.python;
  ls.server.threads = std::max(1, o.llmThreads);
  ls.promptsFile = o.llmPrompts;
  return ls;
}

double parseDuration(const std::string& text) {
  if (text.empty()) throw std::invalid_argument("--max-time is empty");
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument(fmt::format("--max-time '{}' is not a duration (600, 90s, 10m, 2h)", text));
  }
  std::string unit = text.substr(used);
  double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (scale < 0 || value < 0)
    throw std::invalid_argument(fmt::format("--max-time '{}' is not a duration (600, 90s, 10m, 2h)", text));
  return value * scale;
}

json readJsonFile(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw std::invalid_argument("cannot read " + file.string());
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw std::invalid_argument(fmt::format("{} is not valid JSON: {}", file.string(), e.what()));
  }
}

fs::path campaignStorePath(const fs::path& dir) {
  fs::path store = dir / "findings.sqlite";
  if (!fs::exists(store))
    throw std::invalid_argument(fmt::format("{} holds no campaign (no findings.sqlite)", dir.string()));
  return store;
}

SecretRedactor secretsFrom(const Options& o) { return SecretRedactor::fromEnvironment(environ, {o.llmApiKeyEnv}); }

void logLine(const std::string& line) { std::cerr << "tcfuzz: " << line << std::endl; }

}  // namespace tcfuzz
