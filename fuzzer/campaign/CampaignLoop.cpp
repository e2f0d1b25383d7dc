// The campaign's loops: run() with its own lanes, or an outside engine (libFuzzer) that calls judge()
// while the supervisor keeps the books. Both share supervise(): stats, plot_data, the view, --max-time.
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "fuzzer/campaign/Campaign.h"

namespace tcfuzz {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double unixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

void Campaign::supervise(const std::function<bool()>& running) {
  auto lastStats = Clock::time_point{}, lastPlot = Clock::now(), lastTrim = Clock::time_point{};
  auto plot = [&] {
    CampaignSnapshot s = snapshot();
    output_.appendPlot({unixSeconds(), s.runSeconds, s.programs, s.programsPerMinute, s.queue, s.features, s.findings,
                        s.uniqueSignatures, s.torchShare});
  };
  // --max-time counts from tcfuzz's start and includes the stop: the work stops a reserve early.
  auto origin = settings_.startedAt.value_or(began_);
  double stopAt = settings_.maxSeconds - std::min(settings_.stopReserveSeconds, settings_.maxSeconds / 4);
  try {
    plot();
    while (running()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      auto now = Clock::now();
      double elapsed = std::chrono::duration<double>(now - origin).count();
      if (settings_.maxSeconds > 0 && elapsed >= stopAt && !stopping_) {
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
    while (!stopping_) {
      int64_t index;
      {
        std::lock_guard lock(mutex_);
        if (settings_.maxPrograms > 0 && started_ >= settings_.maxPrograms) break;
        index = nextIndex_++;
        started_++;
      }
      auto candidate = makeCandidate(index, generator);
      if (!candidate) {
        std::lock_guard lock(mutex_);
        started_--;  // a duplicate does not count against the budget
        continue;
      }
      testCandidate(*candidate, scratch);
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

}  // namespace tcfuzz
