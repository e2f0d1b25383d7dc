// The campaign's loops: run() with its own lanes, or an outside engine (libFuzzer) that calls judge()
// while the supervisor keeps the books. Both share supervise(): stats, plot_data, the view, --max-time;
// snapshot() and writeStats() are those books.
#include <unistd.h>

#include <chrono>
#include <limits>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fuzzer/campaign/Campaign.h"

namespace tcfuzz {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

namespace {

double unixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

double Campaign::secondsToStop() const {
  if (settings_.maxSeconds <= 0) return std::numeric_limits<double>::infinity();
  // --max-time counts from tcfuzz's start and includes the stop: the work stops a reserve early.
  double stopAt = settings_.maxSeconds - std::min(settings_.stopReserveSeconds, settings_.maxSeconds / 4);
  return stopAt - std::chrono::duration<double>(Clock::now() - settings_.startedAt.value_or(began_)).count();
}

void Campaign::supervise(const std::function<bool()>& running) {
  auto lastStats = Clock::time_point{}, lastPlot = Clock::now(), lastTrim = Clock::time_point{};
  auto plot = [&] {
    CampaignSnapshot s = snapshot();
    output_.appendPlot({unixSeconds(), s.runSeconds, s.programs, s.programsPerMinute, s.queue, s.features, s.findings,
                        s.uniqueSignatures, s.torchShare});
  };
  try {
    plot();
    while (running()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      auto now = Clock::now();
      if (secondsToStop() <= 0 && !stopping_) {
        {
          std::lock_guard lock(mutex_);
          if (!end_) end_ = CampaignEnd::TimeBudget;
        }
        stop();
      }
      if (std::chrono::duration<double>(now - lastStats).count() >= settings_.statsIntervalSeconds) {
        writeStats();
        lastStats = now;
      }
      if (!settings_.inductorCacheDir.empty() &&
          std::chrono::duration<double>(now - lastTrim).count() >= settings_.cacheTrimIntervalSeconds) {
        CacheTrim trim = trimCache(settings_.inductorCacheDir, settings_.inductorCacheCapBytes, std::chrono::seconds(120));
        std::lock_guard lock(mutex_);
        cacheTrim_ = trim;
        cacheTrimmed_ += trim.entriesRemoved;
        lastTrim = now;
      }
      if (std::chrono::duration<double>(now - lastPlot).count() >= settings_.plotIntervalSeconds) {
        plot();
        lastPlot = now;
      }
      view_.update(snapshot());
    }
  } catch (const DiskFullError& e) {
    fail(CampaignEnd::DiskFull, e.what());
  }
}

CampaignEnd Campaign::endSession() {
  try {
    writeStats();
    CampaignSnapshot s = snapshot();
    output_.appendPlot({unixSeconds(), s.runSeconds, s.programs, s.programsPerMinute, s.queue, s.features, s.findings,
                        s.uniqueSignatures, s.torchShare});
  } catch (const DiskFullError& e) {
    fail(CampaignEnd::DiskFull, e.what());
  }
  std::lock_guard lock(mutex_);
  if (!end_) end_ = stopping_ ? CampaignEnd::Stopped : CampaignEnd::ProgramBudget;
  return *end_;
}

void Campaign::lane(int laneIndex) {
  gen::Generator generator(catalog_, policy_.generation, settings_.seed);
  fs::path scratch = output_.workDir() / "programs";
  try {
    std::optional<Candidate> carried;  // drawn for the last batch, which had no room left for it
    while (!stopping_) {
      std::optional<Candidate> candidate = std::move(carried);
      carried.reset();
      if (!candidate) {
        std::optional<int64_t> index = claimIndex();
        if (!index) break;
        candidate = makeCandidate(*index, generator);
      }
      if (!candidate) {
        std::lock_guard lock(mutex_);
        started_--;  // a duplicate does not count against the budget
        continue;
      }
      carried = testFromLane(*candidate, generator, scratch);
    }
  } catch (const DiskFullError& e) {
    fail(CampaignEnd::DiskFull, e.what());
  } catch (const std::exception& e) {
    fail(CampaignEnd::Failed, fmt::format("lane {}: {}", laneIndex, e.what()));
  }
  activeLanes_--;
}

CampaignEnd Campaign::run() {
  began_ = Clock::now();
  int lanes = std::max(1, settings_.lanes);
  activeLanes_ = lanes;
  std::vector<std::thread> threads;
  for (int i = 0; i < lanes; ++i) threads.emplace_back(&Campaign::lane, this, i);
  supervise([this] { return activeLanes_ > 0; });
  for (auto& t : threads) t.join();
  return endSession();
}

void Campaign::startSupervisor() {
  began_ = Clock::now();
  supervisorStop_ = false;
  supervisor_ = std::thread([this] { supervise([this] { return !supervisorStop_; }); });
}

CampaignEnd Campaign::finishSupervisor() {
  supervisorStop_ = true;
  if (supervisor_.joinable()) supervisor_.join();
  return endSession();
}

std::optional<std::vector<std::string>> Campaign::judge(gen::Graph graph, const std::string& origin) {
  if (stopping_) return std::nullopt;
  Candidate c;
  {
    std::lock_guard lock(mutex_);
    if (settings_.maxPrograms > 0 && started_ >= settings_.maxPrograms) {
      if (!end_) end_ = CampaignEnd::ProgramBudget;
      stopping_ = true;
      return std::nullopt;
    }
    c.index = nextIndex_++;
    started_++;
    testedHashes_.insert(graph.contentHash());
    mutated_++;
  }
  c.graph = std::move(graph);
  c.origin = origin;
  try {
    return testCandidate(c, output_.workDir() / "programs");
  } catch (const DiskFullError& e) {
    fail(CampaignEnd::DiskFull, e.what());
    return std::nullopt;
  }
}

CampaignSnapshot Campaign::snapshot() const {
  std::lock_guard lock(mutex_);
  CampaignSnapshot s;
  s.runSeconds = std::chrono::duration<double>(Clock::now() - began_).count();
  s.programs = totals_.programs;
  s.sessionPrograms = sessionDone_;
  s.programsPerMinute = s.runSeconds > 0 ? 60.0 * static_cast<double>(sessionDone_) / s.runSeconds : 0;
  s.verdicts = totals_.verdicts;
  s.findings = totals_.findings;
  s.uniqueSignatures = totals_.uniqueSignatures;
  s.sinceLastNewSignature = lastNewSignatureAt_ > 0 ? unixSeconds() - lastNewSignatureAt_ : -1;
  s.queue = static_cast<int64_t>(queue_.size());
  s.features = static_cast<int64_t>(features_.size());
  s.generated = generated_;
  s.mutated = mutated_;
  s.duplicates = duplicates_;
  s.errors = errors_;
  double workerSeconds = s.runSeconds * std::max(1, settings_.workers);
  s.torchShare = workerSeconds > 0 ? std::min(1.0, sessionTorchSeconds_ / workerSeconds) : 0;
  s.jobShare = workerSeconds > 0 ? std::min(1.0, pool_.jobSeconds() / workerSeconds) : 0;
  s.workers = settings_.workers;
  s.device = settings_.device;
  if (settings_.gpuStats) s.gpuLines = settings_.gpuStats->viewLines();
  s.outDir = output_.root().string();
  s.seed = settings_.seed;
  return s;
}

void Campaign::writeStats() {
  CampaignSnapshot s = snapshot();
  std::vector<std::pair<std::string, std::string>> kv;
  double now = unixSeconds();
  kv.emplace_back("start_time", fmt::format("{:.0f}", now - s.runSeconds));
  kv.emplace_back("last_update", fmt::format("{:.0f}", now));
  kv.emplace_back("run_time", fmt::format("{:.0f}", s.runSeconds));
  kv.emplace_back("fuzzer_pid", std::to_string(::getpid()));
  kv.emplace_back("tcfuzz_version", TCFUZZ_VERSION);
  kv.emplace_back("torch_version", settings_.torch.version);
  kv.emplace_back("torch_git", settings_.torch.git);
  kv.emplace_back("torch_skipped", settings_.torchNotes.empty() ? std::string("none")
                                                                 : fmt::format("{}", fmt::join(settings_.torchNotes, "; ")));
  kv.emplace_back("kernel_linker", settings_.kernelLinker);
  kv.emplace_back("seed", std::to_string(s.seed));
  kv.emplace_back("device", s.device);
  kv.emplace_back("workers", std::to_string(s.workers));
  kv.emplace_back("programs_done", std::to_string(s.programs));
  kv.emplace_back("programs_this_session", std::to_string(s.sessionPrograms));
  kv.emplace_back("programs_per_min", fmt::format("{:.2f}", s.programsPerMinute));
  kv.emplace_back("generated", std::to_string(s.generated));
  kv.emplace_back("mutated", std::to_string(s.mutated));
  kv.emplace_back("duplicates_skipped", std::to_string(s.duplicates));
  kv.emplace_back("errors", std::to_string(s.errors));
  {
    std::lock_guard lock(mutex_);
    kv.emplace_back("time_to_first_program_s",
                    firstProgramSeconds_ < 0 ? std::string("none yet") : fmt::format("{:.1f}", firstProgramSeconds_));
    kv.emplace_back("programs_abandoned", std::to_string(abandoned_));
  }
  for (const char* v : {"agree", "crash-mismatch", "status-mismatch", "numeric-divergence", "mutation-divergence",
                        "second-call-divergence", "aliasing-divergence", "nondeterministic", "invalid-program", "sandbox-refusal",
                        "random-only", "nothing-compiled", "ill-conditioned", "signed-zero", "denormal-flush", "recompile-storm"}) {
    auto it = s.verdicts.find(v);
    kv.emplace_back(statsKey(v), std::to_string(it == s.verdicts.end() ? 0 : it->second));
  }
  kv.emplace_back("findings", std::to_string(s.findings));
  kv.emplace_back("unique_signatures", std::to_string(s.uniqueSignatures));
  std::string schedule;
  {
    std::lock_guard lock(mutex_);
    kv.emplace_back("known_rediscoveries", std::to_string(rediscoveries_));
    kv.emplace_back("last_find", fmt::format("{:.0f}", totals_.lastFindingAt));
    kv.emplace_back("last_new_signature", fmt::format("{:.0f}", lastNewSignatureAt_));
    for (const auto& [name, st] : mutator_.stats())
      kv.emplace_back("mutator_" + name, fmt::format("{} applied, {} produced", st.applied, st.produced));
    std::string templates;
    for (const auto& t : policy_.compile.usableTemplates(settings_.device)) templates += (templates.empty() ? "" : ",") + t;
    kv.emplace_back("templates", templates);
    for (auto& line : scheduler_.statsLines(policy_.compile, policy_.generation, settings_.device, settings_.pinned))
      kv.push_back(std::move(line));
    schedule = scheduler_.toJson().dump(1);
  }
  if (settings_.gpuStats)
    for (auto& line : settings_.gpuStats->statsLines()) kv.push_back(std::move(line));
  {
    std::lock_guard lock(mutex_);
    std::string sizes;
    for (const auto& [size, n] : batchPrograms_) sizes += fmt::format("{}{}={}", sizes.empty() ? "" : " ", size, n);
    kv.emplace_back("programs_by_batch_size", sizes.empty() ? std::string("none yet") : sizes);
    kv.emplace_back("batch_members_with_python", std::to_string(batchPython_));
    kv.emplace_back("batch_split_back", std::to_string(splitBack_));
    kv.emplace_back("batch_only_findings", std::to_string(batchOnly_));
  }
  kv.emplace_back("queue_size", std::to_string(s.queue));
  kv.emplace_back("features", std::to_string(s.features));
  kv.emplace_back("torch_share", fmt::format("{:.3f}", s.torchShare));
  kv.emplace_back("torch_share_all_jobs", fmt::format("{:.3f}", s.jobShare));
  kv.emplace_back("harness_share", fmt::format("{:.3f}", 1.0 - s.jobShare));
  {
    std::lock_guard lock(mutex_);
    kv.emplace_back("llm_programs", std::to_string(llmProposed_));
  }
  if (llm_)
    for (auto& line : llm_->statsLines()) kv.push_back(std::move(line));
  else
    kv.emplace_back("llm_state", "off");
  {
    // Cost and yield per origin, the LLM's own CPU charged to its strategies.
    std::map<std::string, double> llmCpu;
    if (llm_) {
      json st = llm_->statsJson();
      if (st.contains("strategies"))
        for (const auto& [name, figures] : st["strategies"].items()) llmCpu[name] = figures.value("cpu_s", 0.0);
    }
    std::lock_guard lock(mutex_);
    ledger_.setLlmCpu(llmCpu);
    for (auto& line : ledger_.statsLines()) kv.push_back(std::move(line));
    for (auto& line : entries_.statsLines()) kv.push_back(std::move(line));
    if (!settings_.inductorCacheDir.empty()) {
      kv.emplace_back("inductor_cache_mb", fmt::format("{:.1f}", static_cast<double>(cacheTrim_.bytesAfter) / (1 << 20)));
      kv.emplace_back("inductor_cache_cap_mb", std::to_string(settings_.inductorCacheCapBytes >> 20));
      kv.emplace_back("inductor_cache_entries_removed", std::to_string(cacheTrimmed_));
    }
    for (auto& line : dynamo_.statsLines()) kv.push_back(std::move(line));
  }
  for (const auto& source : extraStats_)
    for (auto& line : source()) kv.push_back(std::move(line));
  output_.writeStats(kv);
  writeFileAtomically(output_.schedulePath(), schedule);
}

}  // namespace tcfuzz
