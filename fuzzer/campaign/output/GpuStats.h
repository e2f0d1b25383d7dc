#pragma once
// A GPU campaign's figures per GPU: the programs each GPU compiled and the sticky CUDA errors it hit
// (from the results, which name the worker's GPU), and what the driver reports of each (NVML: memory
// used, utilization, temperature). For fuzzer_stats and the status view.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "fuzzer/worker/GpuInventory.h"
#include "oracles/judge/RunResult.h"

namespace tcfuzz {

class GpuStats {
 public:
  /// `gpus`: the campaign's pinned GPUs (DeviceSelection::gpus), in worker order; `nvml` outlives this.
  GpuStats(std::vector<std::string> gpus, const Nvml& nvml);

  /// Counts a program's compiled run on the GPU that ran it (RunResult::child.gpu); thread-safe.
  void record(const oracles::RunResult& compiled);
  /// fuzzer_stats lines, per GPU k in worker order: gpu_k_device (the CUDA_VISIBLE_DEVICES entry), gpu_k_name,
  /// gpu_k_programs, gpu_k_sticky_cuda_errors, gpu_k_memory_used_mb, gpu_k_memory_total_mb,
  /// gpu_k_utilization_percent, gpu_k_temperature_c ("unknown" where NVML cannot say); then gpu_driver.
  std::vector<std::pair<std::string, std::string>> statsLines() const;
  /// One status line per GPU: "GPU 0 NVIDIA H100: 120 programs, 0 sticky, 37% busy, 2.1/79.6 GiB, 41 C".
  std::vector<std::string> viewLines() const;

 private:
  struct Counts {
    int64_t programs = 0, sticky = 0;
  };
  std::vector<std::string> gpus_;
  const Nvml& nvml_;
  mutable std::mutex mutex_;
  std::map<std::string, Counts> counts_;
};

}  // namespace tcfuzz
