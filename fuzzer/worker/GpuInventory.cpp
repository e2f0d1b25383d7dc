#include "fuzzer/worker/GpuInventory.h"

#include <dlfcn.h>

#include <algorithm>
#include <charconv>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tcfuzz {

// NVML's C API as the driver exports it (nvml.h's stable, versioned entry points). Declared here
// because the header ships with NVIDIA's toolkit packages, not Debian's, and only these few are used.
// A named namespace, not an anonymous one: Nvml::Functions, a member of a class with linkage, holds them.
namespace nvml_abi {
using NvmlReturn = int;  // nvmlReturn_t: 0 is NVML_SUCCESS
using NvmlDevice = struct NvmlDeviceOpaque*;
struct NvmlMemory {
  unsigned long long total, free, used;
};
struct NvmlUtilization {
  unsigned int gpu, memory;
};
}  // namespace nvml_abi
using namespace nvml_abi;

namespace {

constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlTemperatureGpu = 0;

std::vector<std::string> splitList(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string item(text.substr(start, end - start));
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    out.push_back(item);
    start = end + 1;
  }
  return out;
}

std::optional<int> parseOrdinal(std::string_view text) {
  int value = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

}  // namespace

struct Nvml::Functions {
  NvmlReturn (*init)();
  NvmlReturn (*shutdown)();
  const char* (*errorString)(NvmlReturn);
  NvmlReturn (*count)(unsigned int*);
  NvmlReturn (*byIndex)(unsigned int, NvmlDevice*);
  NvmlReturn (*byUuid)(const char*, NvmlDevice*);
  NvmlReturn (*name)(NvmlDevice, char*, unsigned int);
  NvmlReturn (*uuid)(NvmlDevice, char*, unsigned int);
  NvmlReturn (*memory)(NvmlDevice, NvmlMemory*);
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*);
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned int*);
  NvmlReturn (*driverVersion)(char*, unsigned int);
};

Nvml::Nvml() {
  void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = ::dlerror();
    reason_ = fmt::format("no NVIDIA driver found ({})", err ? err : "libnvidia-ml.so.1 cannot be loaded");
    return;
  }
  auto f = std::make_unique<Functions>();
  bool complete = true;
  auto load = [&](auto& slot, const char* symbol) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(::dlsym(lib, symbol));
    if (!slot) complete = false;
  };
  load(f->init, "nvmlInit_v2");
  load(f->shutdown, "nvmlShutdown");
  load(f->errorString, "nvmlErrorString");
  load(f->count, "nvmlDeviceGetCount_v2");
  load(f->byIndex, "nvmlDeviceGetHandleByIndex_v2");
  load(f->byUuid, "nvmlDeviceGetHandleByUUID");
  load(f->name, "nvmlDeviceGetName");
  load(f->uuid, "nvmlDeviceGetUUID");
  load(f->memory, "nvmlDeviceGetMemoryInfo");
  load(f->utilization, "nvmlDeviceGetUtilizationRates");
  load(f->temperature, "nvmlDeviceGetTemperature");
  load(f->driverVersion, "nvmlSystemGetDriverVersion");
  if (!complete) {
    reason_ = "libnvidia-ml.so.1 lacks NVML's v2 entry points (a driver older than NVML 10)";
    ::dlclose(lib);
    return;
  }
  if (NvmlReturn rc = f->init(); rc != kNvmlSuccess) {
    reason_ = fmt::format("NVML did not initialize: {}", f->errorString(rc));
    ::dlclose(lib);
    return;
  }
  library_ = lib;
  fn_ = f.release();
}

Nvml::~Nvml() {
  if (library_) {
    fn_->shutdown();
    ::dlclose(library_);
  }
  delete fn_;
}

std::string Nvml::driverVersion() const {
  char buffer[96] = {};
  if (!available() || fn_->driverVersion(buffer, sizeof buffer) != kNvmlSuccess) return "";
  return buffer;
}

int Nvml::count() const {
  unsigned int n = 0;
  if (!available() || fn_->count(&n) != kNvmlSuccess) return 0;
  return static_cast<int>(n);
}

std::optional<GpuHealth> Nvml::health(const std::string& gpu) const {
  if (!available()) return std::nullopt;
  NvmlDevice device = nullptr;
  if (auto index = parseOrdinal(gpu)) {
    if (fn_->byIndex(static_cast<unsigned int>(*index), &device) != kNvmlSuccess) return std::nullopt;
  } else if (fn_->byUuid(gpu.c_str(), &device) != kNvmlSuccess) {
    return std::nullopt;
  }
  GpuHealth h;
  char text[96] = {};
  if (fn_->name(device, text, sizeof text) == kNvmlSuccess) h.name = text;
  if (fn_->uuid(device, text, sizeof text) == kNvmlSuccess) h.uuid = text;
  if (NvmlMemory m{}; fn_->memory(device, &m) == kNvmlSuccess) {
    h.memoryUsedMb = static_cast<int64_t>(m.used >> 20);
    h.memoryTotalMb = static_cast<int64_t>(m.total >> 20);
  }
  if (NvmlUtilization u{}; fn_->utilization(device, &u) == kNvmlSuccess) h.utilizationPercent = static_cast<int>(u.gpu);
  if (unsigned int t = 0; fn_->temperature(device, kNvmlTemperatureGpu, &t) == kNvmlSuccess)
    h.temperatureC = static_cast<int>(t);
  return h;
}

DeviceSelection parseDeviceSelection(std::string_view text) {
  DeviceSelection s;
  s.text = std::string(text);
  if (text == "cpu") return s;
  if (text == "cuda") {
    s.cuda = true;
    return s;
  }
  if (!text.starts_with("cuda:"))
    throw std::invalid_argument(fmt::format("--device {}: expected cpu, cuda, cuda:N, cuda:N,M,... or cuda:all", text));
  s.cuda = true;
  std::string_view rest = text.substr(5);
  if (rest == "all") {
    s.all = true;
    return s;
  }
  std::set<int> seen;
  for (const auto& item : splitList(rest)) {
    auto ordinal = parseOrdinal(item);
    if (!ordinal)
      throw std::invalid_argument(fmt::format("--device {}: '{}' is not a GPU number (cuda:0, cuda:0,1 or cuda:all)", text, item));
    if (!seen.insert(*ordinal).second) throw std::invalid_argument(fmt::format("--device {}: GPU {} is named twice", text, *ordinal));
    s.ordinals.push_back(*ordinal);
  }
  return s;
}

DeviceSelection resolveDevices(DeviceSelection selection, const Nvml& nvml, const char* visibleDevices) {
  if (!selection.cuda) return selection;
  std::vector<std::string> visible;
  if (visibleDevices) {
    for (auto& entry : splitList(visibleDevices))
      if (!entry.empty()) visible.push_back(entry);
  } else if (nvml.available()) {
    for (int i = 0; i < nvml.count(); ++i) visible.push_back(std::to_string(i));
  }
  if (visible.empty()) {
    std::string why = visibleDevices ? fmt::format("CUDA_VISIBLE_DEVICES='{}' names none", visibleDevices)
                      : nvml.available() ? std::string("NVML lists no GPU")
                                         : nvml.unavailableReason();
    throw DeviceError(fmt::format("--device {}: this machine has no usable NVIDIA GPU: {}. Run on the CPU with "
                                  "--device cpu (the default).",
                                  selection.text, why));
  }
  if (selection.all) {
    selection.gpus = visible;
  } else {
    for (int ordinal : selection.ordinals) {
      if (ordinal >= static_cast<int>(visible.size()))
        throw DeviceError(fmt::format("--device cuda:{}: there is no GPU {}; this machine has {} ({}{})", ordinal, ordinal,
                                      visible.size(), visibleDevices ? "CUDA_VISIBLE_DEVICES=" : "NVML indices ",
                                      fmt::join(visible, ",")));
      selection.gpus.push_back(visible[static_cast<size_t>(ordinal)]);
    }
  }
  return selection;
}

}  // namespace tcfuzz
