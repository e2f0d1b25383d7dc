#include "fuzzer/cli/commands/Commands.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <csignal>
#include <fstream>
#include <iostream>
#include <memory>
#include <algorithm>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/headeronly/version.h>

#include "fuzzer/campaign/Campaign.h"
#include "fuzzer/campaign/output/CampaignOutput.h"
#include "fuzzer/campaign/output/FindingStore.h"
#include "fuzzer/campaign/LibFuzzerEngine.h"
#include "fuzzer/campaign/output/StatusView.h"
#include "fuzzer/llm/LlmProposer.h"
#include "fuzzer/campaign/StopSignals.h"
#include "fuzzer/triage/Triage.h"
#include "fuzzer/cli/Settings.h"
#include "generators/OpCatalog.h"

namespace tcfuzz {

namespace fs = std::filesystem;
using nlohmann::json;


namespace {

/// After SIGINT or SIGTERM the process is gone within this (the contract is 5 s; the rest is margin).
constexpr int64_t kStopMilliseconds = 4500;

/// What identifies a campaign: recorded when it starts, reused when it resumes.
struct CampaignIdentity {
  uint64_t seed = 0;
  std::string device;
  CampaignPolicy policy;
  PinnedCompile pinned;
  std::vector<std::string> plugins;
  double timeout = 300;
  int64_t memoryMb = 4096;
  /// The LLM a session uses unless its command line names one: --llm, and with remote --llm-url and
  /// --llm-model (empty: a campaign recorded before tcfuzz kept them; the command line's then).
  std::string llm, llmUrl, llmModel;

  json toJson() const {
    json p = json::object();
    if (pinned.backend) p["backend"] = *pinned.backend;
    if (pinned.mode) p["mode"] = *pinned.mode;
    if (pinned.dynamic)  // true and false as booleans, as campaigns before "mark" recorded them
      p["dynamic"] = *pinned.dynamic == "true" || *pinned.dynamic == "false" ? json(*pinned.dynamic == "true")
                                                                             : json(*pinned.dynamic);
    if (pinned.fullgraph) p["fullgraph"] = *pinned.fullgraph;
    if (pinned.entry) p["entry"] = *pinned.entry;
    if (pinned.exportStrict) p["export_strict"] = *pinned.exportStrict;
    if (pinned.training) p["training"] = pinned.training->toJson();
    if (pinned.backward) p["backward"] = *pinned.backward;
    if (pinned.inductorConfig) p["inductor_config"] = *pinned.inductorConfig;
    if (pinned.batchSize) p["batch"] = *pinned.batchSize;
    return {{"seed", seed},       {"device", device},   {"policy", policy.toJson()}, {"pinned", p},
            {"plugins", plugins}, {"timeout", timeout}, {"memory_mb", memoryMb},
            {"llm", {{"mode", llm}, {"url", llmUrl}, {"model", llmModel}}}};
  }
  static CampaignIdentity fromJson(const json& j) {
    CampaignIdentity id;
    id.seed = j.at("seed").get<uint64_t>();
    id.device = j.at("device").get<std::string>();
    id.policy = CampaignPolicy::fromJson(j.at("policy"));
    const json& p = j.at("pinned");
    if (p.contains("backend")) id.pinned.backend = p["backend"].get<std::string>();
    if (p.contains("mode")) id.pinned.mode = p["mode"].get<std::string>();
    if (p.contains("dynamic"))
      id.pinned.dynamic = p["dynamic"].is_boolean() ? (p["dynamic"].get<bool>() ? "true" : "false")
                                                    : p["dynamic"].get<std::string>();
    if (p.contains("fullgraph")) id.pinned.fullgraph = p["fullgraph"].get<bool>();
    if (p.contains("entry")) id.pinned.entry = p["entry"].get<std::string>();
    if (p.contains("export_strict")) id.pinned.exportStrict = p["export_strict"].get<bool>();
    if (p.contains("training")) id.pinned.training = oracles::TrainingLoop::fromJson(p["training"]);
    if (p.contains("backward")) id.pinned.backward = p["backward"].get<bool>();
    if (p.contains("inductor_config")) id.pinned.inductorConfig = p["inductor_config"];
    if (p.contains("batch")) id.pinned.batchSize = p["batch"].get<int>();
    id.plugins = j.at("plugins").get<std::vector<std::string>>();
    id.timeout = j.at("timeout").get<double>();
    id.memoryMb = j.at("memory_mb").get<int64_t>();
    if (j.contains("llm")) {
      id.llm = j["llm"].at("mode").get<std::string>();
      id.llmUrl = j["llm"].at("url").get<std::string>();
      id.llmModel = j["llm"].at("model").get<std::string>();
    }
    return id;
  }
};

CampaignIdentity identityFromOptions(const Options& o, const std::set<std::string>& given, const LlmSettings& llm) {
  CampaignIdentity id;
  id.llm = llm.mode;
  // A URL with credentials in it is not written down: a resume then needs --llm-url again.
  if (llm.mode == "remote" && llm.endpoint.baseUrl.find('@') == std::string::npos) {
    id.llmUrl = llm.endpoint.baseUrl;
    id.llmModel = o.llmModel;
  }
  id.seed = given.count("--seed") ? static_cast<uint64_t>(o.seed) : std::random_device{}() % 1000000000ULL;
  id.device = o.device;
  if (!o.policy.empty()) {
    std::ifstream in(o.policy);
    if (!in) throw std::invalid_argument("cannot read the policy file " + o.policy);
    try {
      id.policy = CampaignPolicy::fromJson(json::parse(in));
    } catch (const json::exception& e) {
      throw std::invalid_argument(o.policy + ": " + e.what());
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(o.policy + ": " + e.what());
    }
  }
  if (given.count("--backend")) id.pinned.backend = o.backend;
  if (given.count("--mode")) id.pinned.mode = o.mode;
  if (given.count("--dynamic")) id.pinned.dynamic = o.dynamic;  // auto, true, false or mark (Options.def)
  if (given.count("--fullgraph")) id.pinned.fullgraph = o.fullgraph;
  if (given.count("--entry")) {
    compileConfigFrom(o);  // refuses torch.compile's options beside an export entry
    id.pinned.entry = o.entry;  // an entryPointNames() name (Options.def)
  }
  if (given.count("--export-strict")) id.pinned.exportStrict = o.exportStrict;
  if (given.count("--train")) id.pinned.training = compileConfigFrom(o).training;  // refused without --entry train
  if (given.count("--backward")) id.pinned.backward = o.backward;
  if (given.count("--batch")) {
    if (o.batch < 1 || o.batch > 16) throw std::invalid_argument("--batch must be 1 (each program alone) to 16");
    id.pinned.batchSize = static_cast<int>(o.batch);
  }
  if (given.count("--inductor-config")) {
    oracles::CompileConfig c;
    for (const auto& a : o.inductorConfig) c.addInductorOverride(a);
    id.pinned.inductorConfig = c.inductorConfig;
  }
  for (const auto& p : o.plugins) {
    if (!fs::exists(p)) throw std::invalid_argument("--plugin " + p + " does not exist");
    id.plugins.push_back(fs::absolute(p).string());
  }
  id.timeout = o.timeout;
  id.memoryMb = o.memoryMb;
  return id;
}

std::string endText(CampaignEnd end) {
  switch (end) {
    case CampaignEnd::ProgramBudget: return "--max-programs reached";
    case CampaignEnd::TimeBudget: return "--max-time reached";
    case CampaignEnd::Stopped: return "stopped by a signal";
    case CampaignEnd::DiskFull: return "the disk is full";
    case CampaignEnd::Failed: return "failed";
  }
  return "?";
}


/// How a fuzz session stops in time. Past --max-time (or kStopMilliseconds after a signal) the
/// process exits as it stands: every judged program is already committed, and what tcfuzz started
/// dies with it. SIGINT and SIGTERM stop the attached campaign; with none attached (starting or
/// finished: nothing in flight, nothing to flush) the process exits at once. Construct it before any
/// other thread (StopSignals' rule); destroyed last, its deadline covers the teardown.
class SessionStop {
 public:
  SessionStop(std::chrono::steady_clock::time_point startedAt, double maxSeconds)
      : signals_([this](int sig) { onSignal(sig); }) {
    if (maxSeconds > 0)
      deadline_.armAt(startedAt + std::chrono::milliseconds(static_cast<int64_t>((maxSeconds - 0.5) * 1000)),
                      "--max-time reached and the stop is not finished; exiting now (findings are in findings.sqlite)",
                      0);
  }
  /// The campaign a signal stops from now on (nullptr: none); stopped at once if a signal came before.
  void attach(Campaign* campaign) {
    live_ = campaign;
    if (campaign && stopRequested_) campaign->stop();
  }

 private:
  void onSignal(int sig) {
    stopRequested_ = true;
    std::cerr << fmt::format("\ntcfuzz: {} received, stopping (state is saved; a second signal exits at once)\n",
                             sig == SIGINT ? "SIGINT" : "SIGTERM");
    Campaign* c = live_.load();
    if (!c) {
      std::cerr << "tcfuzz: no campaign is running; exiting now\n";
      ::_exit(128 + sig);
    }
    c->stop();
    deadline_.armAt(std::chrono::steady_clock::now() + std::chrono::milliseconds(kStopMilliseconds),
                    "the stop takes too long; exiting now (findings are in findings.sqlite)", 128 + sig);
  }

  StopDeadline deadline_;
  std::atomic<Campaign*> live_{nullptr};
  std::atomic<bool> stopRequested_{false};
  StopSignals signals_;
};

/// The campaign's identity: a new campaign's from the options, recorded in its store; a resumed one's
/// read back from its store (a settings flag given again is ignored, with a warning).
CampaignIdentity campaignIdentity(const Options& o, const std::set<std::string>& given, const LlmSettings& llm,
                                  FindingStore& store, const fs::path& root, bool resume) {
  if (!resume) {
    CampaignIdentity id = identityFromOptions(o, given, llm);
    store.setMeta("identity", id.toJson().dump());
    store.setMeta("started_at", std::to_string(std::time(nullptr)));
    return id;
  }
  auto stored = store.meta("identity");
  if (!stored) throw CampaignDirError(root.string() + "/findings.sqlite records no campaign settings");
  CampaignIdentity id;
  try {
    id = CampaignIdentity::fromJson(json::parse(*stored));
  } catch (const std::exception& e) {
    throw CampaignDirError(
        fmt::format("{}/findings.sqlite: the campaign settings are unreadable: {}", root.string(), e.what()));
  }
  for (const char* flag : {"--seed", "--device", "--policy", "--backend", "--mode", "--dynamic", "--fullgraph",
                           "--backward", "--inductor-config", "--plugin", "--timeout", "--memory-mb"})
    if (given.count(flag))
      std::cerr << fmt::format("tcfuzz: {} ignored: a resumed campaign keeps the settings it started with\n", flag);
  return id;
}

/// A resumed session's LLM: the command line's when it names one (--llm or --llm-url), else the one the
/// campaign recorded, so that a resume keeps the campaign's program mix.
LlmSettings sessionLlm(const Options& o, const std::set<std::string>& given, const CampaignIdentity& id,
                       const SecretRedactor& secrets, LlmSettings fromCommandLine) {
  if (given.count("--llm") || given.count("--llm-url") || id.llm.empty() || id.llm == fromCommandLine.mode)
    return fromCommandLine;
  Options recorded = o;
  recorded.llm = id.llm;
  if (id.llm == "remote") {
    if (id.llmUrl.empty())
      throw std::invalid_argument("this campaign used a remote LLM whose URL is not recorded (it held credentials): "
                                  "give --llm-url and --llm-model again, or --llm off");
    recorded.llmUrl = id.llmUrl;
    if (!given.count("--llm-model")) recorded.llmModel = id.llmModel;
  }
  std::cerr << fmt::format("tcfuzz: the LLM is {} as when the campaign started (--llm changes it)\n",
                           id.llm == "remote" ? id.llmModel + " at " + id.llmUrl : id.llm);
  return llmSettingsFrom(recorded, given, secrets);
}

/// A session's settings: the campaign's identity, the command line's bounds and the workers' shape.
CampaignSettings campaignSettingsFrom(const Options& o, const CampaignIdentity& id, const WorkerSpec& spec,
                                      int workers, double maxSeconds, std::chrono::steady_clock::time_point startedAt,
                                      GpuStats* gpuStats) {
  int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  CampaignSettings settings;
  settings.seed = id.seed;
  settings.device = id.device;
  settings.gpuStats = gpuStats;
  settings.workers = workers;
  // Cheap checks first: a program's compiled job waits for its eager run, so one program per worker
  // would leave workers idle (40% of worker time in a 30-minute campaign); two per worker keep them busy.
  settings.lanes = 2 * workers;
  settings.maxPrograms = o.maxPrograms;
  settings.maxSeconds = maxSeconds;
  settings.startedAt = startedAt;
  settings.test.limits = Limits{id.timeout, id.memoryMb, o.gpuMemoryMb};
  settings.test.seed = id.seed;
  settings.test.device = spec.device;
  settings.test.threads = o.threads > 0 ? o.threads : std::max(1, cores / workers);
  for (const auto& p : id.plugins) settings.test.plugins.push_back(p);
  settings.test.persistent = spec.childJobs > 1;
  settings.test.cheapChecksFirst = true;  // an invalid program never reaches the compiler
  settings.test.fp64OnDemand = o.fp64 == "on-demand";  // no fp64 run where it cannot change the verdict
  settings.test.confirmFindings = true;   // fresh process, cold cache: before anything is recorded
  settings.pinned = id.pinned;
  settings.inductorCacheDir = spec.inductorCacheDir.empty() ? spec.workDir / "inductor-cache" : spec.inductorCacheDir;
  settings.inductorCacheCapBytes = static_cast<uint64_t>(std::max<int64_t>(0, o.inductorCacheMb)) << 20;
  settings.knownIssues = knownIssuesFrom(o);  // a rediscovery earns the bandit nothing
  return settings;
}

/// A native session's LLM proposer, started in the background (grammar programs never wait for the
/// server to load) and fed queue programs by `campaign`; nullptr with --llm off or --engine libfuzzer.
std::unique_ptr<LlmProposer> startLlm(LlmSettings llmSettings, bool libFuzzer, const gen::OpCatalog& catalog,
                                      const CampaignIdentity& id, const TestSettings& test, ProgramTester& tester,
                                      const CampaignOutput& output, StatusView& view, Campaign& campaign) {
  llmSettings.server.logFile = output.workDir() / "llm-server.log";
  TestSettings liftSettings = test;
  liftSettings.limits.timeoutSeconds = std::min(60.0, id.timeout);
  liftSettings.threads = 1;
  if (libFuzzer && llmSettings.mode != "off")
    std::cerr << "tcfuzz: --engine libfuzzer: the LLM is not used (libFuzzer's mutators make every program)\n";
  if (llmSettings.mode == "off" || libFuzzer) return nullptr;
  auto llm = std::make_unique<LlmProposer>(catalog, id.policy.generation.caps, llmSettings, tester, liftSettings,
                                           output.workDir() / "llm", id.seed,
                                           [&view](const std::string& line) { view.event(line); });
  llm->setQueueSource([&campaign] { return campaign.sampleQueueProgram(); });
  llm->setFewShotSource([&campaign] { return campaign.fewShotPrograms(); });
  llm->startInBackground();
  campaign.setLlm(llm.get());
  return llm;
}

/// The end of a session, whichever engine ran it: stops the LLM and the background triage (its job in
/// flight is abandoned, and redone by the next triage), says why the session ended and how to go on.
/// Returns the exit code: 3 when the disk filled or the campaign failed, else 0.
int endSession(CampaignEnd end, Campaign& campaign, WorkerPool& pool, LlmProposer* llm, BackgroundTriage* triage,
               StatusView& view, const CampaignOutput& output, bool libFuzzer) {
  if (llm) llm->stop();
  if (triage) {
    triage->stop();
    pool.cancel();
    triage->join();
    if (size_t left = triage->pendingCount())
      std::cerr << fmt::format("tcfuzz: {} signature(s) not triaged yet; tcfuzz triage {} finishes them\n", left,
                               output.root().string());
  }
  if (int64_t abandoned = campaign.abandoned())
    std::cerr << fmt::format("tcfuzz: {} program(s) in flight when the run stopped were abandoned untested "
                             "(programs_abandoned in fuzzer_stats)\n", abandoned);
  std::string why = endText(end);
  if (!campaign.endMessage().empty()) why += ": " + campaign.endMessage();
  view.finish(campaign.snapshot(), why);
  if (end == CampaignEnd::DiskFull) {
    std::cerr << fmt::format("tcfuzz: the disk is full; every finding so far is in {}. Free space, then continue with "
                             "tcfuzz fuzz --resume {}\n",
                             output.storePath().string(), output.root().string());
    return 3;
  }
  if (end == CampaignEnd::Failed) {
    std::cerr << "tcfuzz: the campaign failed: " << campaign.endMessage() << "\n";
    return 3;
  }
  std::cerr << fmt::format("tcfuzz: continue with tcfuzz fuzz --resume {}{}\n", output.root().string(),
                           libFuzzer ? " --engine libfuzzer" : "");
  return 0;
}

}  // namespace

int fuzzCommand(const Options& o, const std::set<std::string>& given, const std::vector<std::string>& argv,
                const SecretRedactor& secrets) {
  bool resume = !o.resume.empty();
  if (!resume && o.output.empty())
    throw std::invalid_argument("fuzz needs -o OUT for a new campaign, or --resume OUT to continue one");
  if (resume && !o.output.empty() && fs::absolute(o.output) != fs::absolute(o.resume))
    throw std::invalid_argument("give either -o OUT (a new campaign) or --resume OUT, not both");
  double maxSeconds = parseDuration(o.maxTime);
  if (o.maxPrograms < 0) throw std::invalid_argument("--max-programs must be >= 0");
  if (!(o.triageShare > 0 && o.triageShare <= 1))
    throw std::invalid_argument("--triage-share must lie in (0, 1] (--no-triage turns triage off)");
  bool libFuzzer = o.engine == "libfuzzer";
  if (!libFuzzer && !o.libfuzzerArgs.empty()) throw std::invalid_argument("--libfuzzer-arg needs --engine libfuzzer");
  LlmSettings llmSettings = llmSettingsFrom(o, given, secrets);

  auto startedAt = std::chrono::steady_clock::now();
  SessionStop sessionStop(startedAt, maxSeconds);  // before any thread exists; destroyed last

  fs::path root = resume ? o.resume : o.output;
  CampaignOutput output(root, resume ? CampaignOutput::OpenMode::Resume : CampaignOutput::OpenMode::Fresh, secrets);
  FindingStore store(output.storePath(), secrets);
  CampaignIdentity id = campaignIdentity(o, given, llmSettings, store, root, resume);
  if (resume) llmSettings = sessionLlm(o, given, id, secrets, std::move(llmSettings));
  output.appendCmdline(argv);

  Options workerOptions = o;
  workerOptions.device = id.device;
  WorkerSpec spec = workerSpecFrom(workerOptions, output.workDir(), secrets, kCampaignChildJobs);
  spec.freshUntilWarm = true;  // the first programs' eager and fp64 jobs do not wait for the warm-up compile
  // On GPUs, one zygote per GPU unless -j says otherwise (then they are spread round-robin).
  int workers = o.workers <= 0 && !spec.gpus.empty() ? static_cast<int>(spec.gpus.size()) : workerCount(o);
  Nvml nvml;
  std::optional<GpuStats> gpuStats;
  if (!spec.gpus.empty()) gpuStats.emplace(spec.gpus, nvml);
  CampaignSettings settings =
      campaignSettingsFrom(o, id, spec, workers, maxSeconds, startedAt, gpuStats ? &*gpuStats : nullptr);
  if (!o.seedCorpus.empty()) {
    if (resume)
      std::cerr << "tcfuzz: --seed-corpus ignored: a resumed campaign judged its seed corpus when it started\n";
    else
      settings.seedPrograms = loadSeedCorpus(o.seedCorpus);
  }

  // libFuzzer prints its own progress lines (NEW, REDUCE, pulse ... ft: corp:) to stderr: a redrawn
  // screen would overwrite them, so auto means log lines there.
  bool screen = o.status == "screen" || (o.status == "auto" && ::isatty(STDOUT_FILENO) && !libFuzzer);
  StatusView view(std::cout, screen);
  std::cerr << fmt::format("tcfuzz: {} campaign in {} (seed {}, device {}, {} workers); starting workers...\n",
                           resume ? "resuming the" : "a new", output.root().string(), id.seed, id.device, workers);

  gen::OpCatalog catalog = gen::makeDefaultCatalog();
  WorkerPool pool(spec, static_cast<size_t>(workers));
  settings.torch = pool.hello().torch;
  recordCampaignTorch(store, settings.torch);
  std::cerr << fmt::format("tcfuzz: workers run {}\n", settings.torch.summary());
  settings.torchNotes = torchLacks(pool.hello(), id.policy.compile, !o.noBisect);
  settings.kernelLinker = pool.hello().kernelLinker;
  for (const auto& note : settings.torchNotes) std::cerr << "tcfuzz: " << note << "\n";
  ProgramTester tester(pool, oracles::Comparator{}, output.workDir() / "jobs");
  Campaign campaign(catalog, id.policy, settings, output, store, pool, tester, view);
  if (resume)
    for (const auto& problem : campaign.restore()) {
      std::cerr << "tcfuzz: " << problem << "\n";
      view.event(problem);
    }
  sessionStop.attach(&campaign);

  // LLM proposals come from background threads; the lanes take one whenever it is ready.
  std::unique_ptr<LlmProposer> llm =
      startLlm(std::move(llmSettings), libFuzzer, catalog, id, settings.test, tester, output, view, campaign);
  // New signatures are triaged in the background, through the same pool.
  std::optional<BackgroundTriage> triage;
  if (!o.noTriage) {
    TriageSettings ts = triageSettingsFrom(o, workers, secrets);
    ts.test = settings.test;
    ts.torch = settings.torch;
    ts.structuredTrace = pool.hello().has("structured_trace");
    TriageBudget budget{o.triageShare, [&campaign] {
                          CampaignSnapshot s = campaign.snapshot();
                          return s.runSeconds * std::max(1, s.workers);
                        }};
    triage.emplace(catalog, std::move(ts), output.root(), output.storePath(), secrets, tester, std::move(budget),
                   [&view](const std::string& line) { view.event(line); });
    campaign.addExtraStats([&triage] { return triage->statsLines(); });
    triage->start();
  }
  auto finishSession = [&](CampaignEnd end) -> int {
    sessionStop.attach(nullptr);
    return endSession(end, campaign, pool, llm.get(), triage ? &*triage : nullptr, view, output, libFuzzer);
  };
  if (libFuzzer) {
    LibFuzzerSettings lf;
    lf.dir = output.root() / "libfuzzer";
    lf.seed = id.seed;
    lf.extraArgs = o.libfuzzerArgs;
    lf.configsPerInput = workers;
    lf.seedCorpus = settings.seedPrograms;  // every worker busy while libFuzzer tests one input
    LibFuzzerEngine engine(catalog, id.policy.generation, campaign, lf, finishSession);
    engine.run();  // ends the process with finishSession's code
  }
  return finishSession(campaign.run());
}

}  // namespace tcfuzz
