#pragma once
// Which GPUs a run uses and how they are doing. `--device` picks them (cpu, cuda, cuda:N, cuda:0,1,
// cuda:all); NVML, the NVIDIA driver's management library, lists them and reads each one's health.
// NVML is loaded at run time (libnvidia-ml.so.1 comes with the driver, not with the toolkit), so one
// build runs on a machine without a GPU or driver and says so clearly when CUDA is asked for.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tcfuzz {

/// A --device that names GPUs the machine does not have (the message says which and what it has).
struct DeviceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What one GPU reports (a field NVML cannot read stays -1 or "").
struct GpuHealth {
  std::string name, uuid;
  int64_t memoryUsedMb = -1, memoryTotalMb = -1;
  int utilizationPercent = -1;  ///< the share of the last sample period a kernel ran
  int temperatureC = -1;
};

/// The NVIDIA driver's NVML, loaded with dlopen. Owned by the command that needs it (never global).
class Nvml {
 public:
  /// Loads libnvidia-ml.so.1 and initializes it; never throws: available() and unavailableReason() say.
  Nvml();
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  bool available() const { return library_ != nullptr; }
  /// Why NVML is not available ("libnvidia-ml.so.1: cannot open shared object file ..."); "" when it is.
  const std::string& unavailableReason() const { return reason_; }
  std::string driverVersion() const;
  /// GPUs the driver sees (all of them: NVML ignores CUDA_VISIBLE_DEVICES); 0 when unavailable.
  int count() const;
  /// The health of the GPU a CUDA_VISIBLE_DEVICES entry names: an NVML index ("1") or a UUID
  /// ("GPU-8e6f..."); nullopt when unavailable or no such GPU.
  std::optional<GpuHealth> health(const std::string& gpu) const;

 private:
  void* library_ = nullptr;
  std::string reason_;
  struct Functions;
  Functions* fn_ = nullptr;
};

/// A parsed --device.
struct DeviceSelection {
  std::string text;              ///< as given: "cuda:0,1"
  bool cuda = false;
  bool all = false;              ///< cuda:all
  std::vector<int> ordinals;     ///< cuda:N / cuda:0,1: torch's device ordinals; empty for cpu, cuda, cuda:all
  /// After resolveDevices: the CUDA_VISIBLE_DEVICES entry each worker zygote is pinned to, in order
  /// (worker i gets gpus[i % size]); empty: unpinned (cpu, or plain cuda: torch's current device).
  std::vector<std::string> gpus;

  /// The device a job names inside its worker: "cpu" or "cuda" (a pinned worker sees its GPU as cuda:0).
  std::string jobDevice() const { return cuda ? "cuda" : "cpu"; }
};

/// Parses cpu, cuda, cuda:N, cuda:N,M,... (distinct, ascending not required) or cuda:all; throws
/// std::invalid_argument (a usage error) for anything else.
DeviceSelection parseDeviceSelection(std::string_view text);

/// Pins a CUDA selection to GPUs. `visibleDevices` is tcfuzz's own CUDA_VISIBLE_DEVICES (null: unset), whose
/// entries torch's ordinals index (so cuda:1 under CUDA_VISIBLE_DEVICES=4,5 is GPU 5); unset, the ordinals
/// are NVML's indices. cuda:all takes every visible GPU. Throws DeviceError, naming NVML's reason, when CUDA
/// is asked for on a machine without a GPU or driver, or an ordinal is past the last GPU. CPU: unchanged.
DeviceSelection resolveDevices(DeviceSelection selection, const Nvml& nvml, const char* visibleDevices);

}  // namespace tcfuzz
