#include "fuzzer/campaign/output/GpuStats.h"

#include <fmt/format.h>

namespace tcfuzz {

namespace {

std::string orUnknown(int64_t value) { return value < 0 ? std::string("unknown") : std::to_string(value); }

}  // namespace

GpuStats::GpuStats(std::vector<std::string> gpus, const Nvml& nvml) : gpus_(std::move(gpus)), nvml_(nvml) {}

void GpuStats::record(const oracles::RunResult& compiled) {
  if (compiled.child.gpu.empty()) return;
  std::lock_guard lock(mutex_);
  Counts& c = counts_[compiled.child.gpu];
  c.programs++;
  if (!oracles::stickyCudaError(compiled).empty()) c.sticky++;
}

std::vector<std::pair<std::string, std::string>> GpuStats::statsLines() const {
  std::vector<std::pair<std::string, std::string>> kv;
  std::lock_guard lock(mutex_);
  for (size_t k = 0; k < gpus_.size(); ++k) {
    const std::string& gpu = gpus_[k];
    auto it = counts_.find(gpu);
    Counts c = it == counts_.end() ? Counts{} : it->second;
    GpuHealth h = nvml_.health(gpu).value_or(GpuHealth{});
    std::string prefix = fmt::format("gpu_{}_", k);
    kv.emplace_back(prefix + "device", gpu);
    kv.emplace_back(prefix + "name", h.name.empty() ? "unknown" : h.name);
    kv.emplace_back(prefix + "programs", std::to_string(c.programs));
    kv.emplace_back(prefix + "sticky_cuda_errors", std::to_string(c.sticky));
    kv.emplace_back(prefix + "memory_used_mb", orUnknown(h.memoryUsedMb));
    kv.emplace_back(prefix + "memory_total_mb", orUnknown(h.memoryTotalMb));
    kv.emplace_back(prefix + "utilization_percent", orUnknown(h.utilizationPercent));
    kv.emplace_back(prefix + "temperature_c", orUnknown(h.temperatureC));
  }
  std::string driver = nvml_.driverVersion();
  kv.emplace_back("gpu_driver", driver.empty() ? nvml_.unavailableReason() : driver);
  return kv;
}

std::vector<std::string> GpuStats::viewLines() const {
  std::vector<std::string> lines;
  std::lock_guard lock(mutex_);
  for (const auto& gpu : gpus_) {
    auto it = counts_.find(gpu);
    Counts c = it == counts_.end() ? Counts{} : it->second;
    std::string line = fmt::format("GPU {:<3} {} programs, {} sticky CUDA errors", gpu, c.programs, c.sticky);
    if (auto h = nvml_.health(gpu)) {
      line += fmt::format(", {}", h->name);
      if (h->utilizationPercent >= 0) line += fmt::format(", {}% busy", h->utilizationPercent);
      if (h->memoryTotalMb > 0)
        line += fmt::format(", {:.1f}/{:.1f} GiB", h->memoryUsedMb / 1024.0, h->memoryTotalMb / 1024.0);
      if (h->temperatureC >= 0) line += fmt::format(", {} C", h->temperatureC);
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace tcfuzz
