#include "fuzzer/worker/Protocol.h"

#include <cstdint>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tcfuzz {

std::string_view toString(RunMode mode) {
  switch (mode) {
    case RunMode::Eager: return "eager";
    case RunMode::Compiled: return "compiled";
    case RunMode::Fp64: return "fp64";
  }
  return "eager";
}

namespace {

/// `v` as an int when it is an integer an int holds, else `fallback` (a worker's number is untrusted:
/// converting 2.2e27 to int is undefined behaviour, found by tests/fuzz/fuzz_worker_protocol).
int smallInt(const nlohmann::json& v, int fallback) {
  if (!v.is_number_integer()) return fallback;
  if (v.is_number_unsigned()) {
    auto u = v.get<uint64_t>();
    return u <= static_cast<uint64_t>(INT32_MAX) ? static_cast<int>(u) : fallback;
  }
  auto i = v.get<int64_t>();
  return i >= INT32_MIN && i <= INT32_MAX ? static_cast<int>(i) : fallback;
}

/// The field `key` of object `j` as smallInt, `fallback` when absent.
int smallInt(const nlohmann::json& j, const char* key, int fallback) {
  auto it = j.find(key);
  return it == j.end() ? fallback : smallInt(*it, fallback);
}

}  // namespace

std::string encodeJob(const Job& job) {
  nlohmann::json j{
      {"type", "job"},
      {"id", job.id},
      {"kind", job.kind},
      {"program", job.program.string()},
      {"mode", toString(job.mode)},
      {"seed", job.seed},
      {"device", job.device},
      {"limits",
       {{"timeout_s", job.limits.timeoutSeconds},
        {"memory_mb", job.limits.memoryMb},
        {"gpu_memory_mb", job.limits.gpuMemoryMb}}},
      {"job_dir", job.jobDir.string()},
      {"repeat", job.repeat},
      {"threads", job.threads},
      {"backward", job.backward},
  };
  if (job.mode == RunMode::Compiled || job.kind == "bisect") j["compile"] = job.compile.toJson();
  // Every mode of a training job runs the same steps (the compiled one also reads "compile"'s copy).
  if (job.compile.trains()) j["training"] = job.compile.training.toJson();
  if (!job.bisect.is_null()) j["bisect"] = job.bisect;
  if (!job.lift.is_null()) j["lift"] = job.lift;
  nlohmann::json plugins = nlohmann::json::array();
  for (const auto& p : job.plugins) plugins.push_back(p.string());
  j["plugins"] = plugins;
  if (job.persistent) j["persistent"] = true;
  // Under dynamic=True every mode of a program makes call 4, with inputs of another size (forward_checks.py).
  if (job.compile.symbolicSizes()) j["resized_call"] = true;
  if (job.trace) j["trace"] = true;
  if (job.perturbUlps > 0) j["perturb"] = {{"ulps", job.perturbUlps}, {"seed", job.perturbSeed}};
  if (!job.cacheDir.empty()) j["cache_dir"] = job.cacheDir.string();
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string encodeQuit() { return R"({"type":"quit"})"; }

WorkerMessage decodeMessage(std::string_view line) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    throw ProtocolError(fmt::format("worker sent a line that is not a JSON object: '{}'",
                                    std::string(line.substr(0, 200))));
  // j.value() would throw json's type_error (not a ProtocolError) for a field of another type.
  auto text = [&](const char* key) {
    auto it = j.find(key);
    if (it == j.end()) return std::string();
    return it->is_string() ? it->get<std::string>() : it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  if (auto it = j.find("type"); it != j.end() && !it->is_string())
    throw ProtocolError(fmt::format("worker sent a message whose type is not a string: {}", text("type").substr(0, 200)));
  std::string type = text("type");
  try {
    if (type == "hello") {
      Hello h;
      h.torch.version = j.at("torch").get<std::string>();
      h.torch.git = j.value("torch_git", "");
      h.torch.cuda = j.value("cuda_version", "");
      h.torch.triton = j.value("triton", "");
      h.torch.python = j.value("python", "");
      if (auto d = j.find("devices"); d != j.end() && d->is_array())
        for (const auto& name : *d) h.torch.devices.push_back(name.get<std::string>());
      h.torchDir = j.value("torch_dir", "");
      h.device = j.value("device", "cpu");
      h.pid = smallInt(j, "pid", 0);
      h.importSeconds = j.value("import_s", 0.0);
      h.childJobs = smallInt(j, "child_jobs", 1);
      if (j.contains("header_cache") && j["header_cache"].is_string()) h.headerCache = j["header_cache"].get<std::string>();
      if (j.contains("kernel_linker") && j["kernel_linker"].is_string()) h.kernelLinker = j["kernel_linker"].get<std::string>();
      h.warm = j.value("warm", false);
      if (auto w = j.find("warm_s"); w != j.end() && w->is_object())
        for (const auto& [step, seconds] : w->items())
          if (seconds.is_number()) h.warmSeconds[step] = seconds.get<double>();
      if (auto it = j.find("cuda"); it != j.end() && it->is_object()) {
        h.cudaAvailable = it->value("available", false);
        h.cudaDevices = smallInt(*it, "count", 0);
        if (auto e = it->find("error"); e != it->end() && e->is_string()) h.cudaError = e->get<std::string>();
        if (auto c = it->find("capability"); c != it->end() && c->is_array() && c->size() == 2)
          h.cudaCapability = smallInt((*c)[0], 0) * 10 + smallInt((*c)[1], 0);
        if (auto names = it->find("names"); names != it->end() && names->is_array())
          for (const auto& name : *names) h.torch.devices.push_back(name.get<std::string>());
      }
      if (auto o = j.find("inductor_options"); o != j.end() && o->is_array())
        for (const auto& name : *o) h.inductorOptions.insert(name.get<std::string>());
      if (auto f = j.find("features"); f != j.end() && f->is_array())
        for (const auto& name : *f) h.features.insert(name.get<std::string>());
      return h;
    }
    if (type == "result") return oracles::runResultFromJson(j);
    if (type == "refuse") throw WorkerRefused(j.at("message").get<std::string>());
  } catch (const WorkerRefused&) {
    throw;
  } catch (const std::exception& e) {
    throw ProtocolError(fmt::format("malformed '{}' message from worker: {}", type, e.what()));
  }
  if (type == "error") throw ProtocolError(fmt::format("worker rejected a line: {}", text("message")));
  throw ProtocolError(fmt::format("worker sent a message of unknown type '{}'", type));
}

}  // namespace tcfuzz
