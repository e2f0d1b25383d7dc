#pragma once
// The JSON-lines protocol between tcfuzz and the worker zygote (fuzzer/worker/python/zygote.py).
#include <cstdint>
#include <map>
#include <set>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "oracles/judge/CompileConfig.h"
#include "oracles/judge/RunResult.h"
#include "oracles/infra/TorchInfo.h"

namespace tcfuzz {

enum class RunMode { Eager, Compiled, Fp64 };
std::string_view toString(RunMode mode);

/// Per-job limits the harness enforces.
struct Limits {
  double timeoutSeconds = 60;
  int64_t memoryMb = 4096;  ///< 0: unlimited
  int64_t gpuMemoryMb = 0;  ///< CUDA jobs: the caching allocator's cap (past it: an `oom` result); 0: the whole GPU
};

/// One job for a worker: a program run in one mode (kind "program"), a plain Python script run in a
/// fresh interpreter (kind "script": a repro.py), a compiler bisection of a program (kind "bisect"), or
/// an untrusted program checked, run once in eager and traced into an IR proposal (kind "lift").
struct Job {
  std::string id;
  std::string kind = "program";   ///< "program", "script", "bisect" or "lift"
  std::filesystem::path program;  ///< absolute path of the program file (the script, for "script")
  RunMode mode = RunMode::Eager;
  uint64_t seed = 0;
  std::string device = "cpu";
  /// Run only on the worker pinned to this GPU (a CUDA_VISIBLE_DEVICES entry, as RunResult::child.gpu
  /// names it): a finding replays where it was made. "": any worker.
  std::string gpu;
  oracles::CompileConfig compile;           ///< used in Compiled mode only
  Limits limits;
  std::filesystem::path jobDir;    ///< absolute; the child writes its outputs here
  int repeat = 1;                  ///< forward calls; a second one checks nondeterminism
  std::vector<std::filesystem::path> plugins;  ///< trusted Python files run before compiling ("script" jobs: files the script reads beside itself)
  int threads = 0;                 ///< torch intra-op threads in the child; 0: torch's default
  bool backward = false;           ///< also compare gradients (inputs and parameters) after each forward
  /// Run in the zygote's warm persistent child (program jobs, when the zygote keeps one) instead of a
  /// fresh process; a finding made there is confirmed fresh (ProgramTester).
  bool persistent = false;
  /// A private TORCHINDUCTOR_CACHE_DIR (and Triton cache) for this job: a cold cache. Empty: the
  /// workers' shared cache. Such a job always runs in a fresh process.
  std::filesystem::path cacheDir;
  /// "bisect" jobs: {"check": "crash" | "numeric", "leaves": [int], "tolerances": ComparatorOptions::toleranceTable()}; else null.
  nlohmann::json bisect;
  /// "script" jobs: write torch's structured trace log (TORCH_TRACE) to <jobDir>/torch_trace.
  bool trace = false;
  /// Program jobs: every floating input make_inputs returns moves by up to this many ulps, each element
  /// by its own seeded draw (perturbSeed): the ill-conditioning check's eager runs. 0: inputs as made.
  int perturbUlps = 0;
  uint64_t perturbSeed = 0;
  /// "lift" jobs: {"table": liftTable(catalog), "dtypes": [supported dtype names], "max_rank": int,
  /// "max_elements": int}; else null.
  nlohmann::json lift;
};

/// The zygote's first message, after `import torch`: what the worker's torch is and what it has.
struct Hello {
  oracles::TorchInfo torch;
  std::string torchDir, device;
  int pid = 0;
  double importSeconds = 0;
  std::map<std::string, double> warmSeconds;  ///< what the zygote warmed before forking: step -> seconds (<0: skipped)
  int childJobs = 1;                          ///< jobs a persistent child serves (1: none is kept)
  /// Where the workers' precompiled headers live (WorkerSpec::headerCacheDir); empty: torch's own place
  /// inside the run's TMPDIR (none was given, or this torch keeps no such directory).
  std::string headerCache;
  /// What links Inductor's C++ kernels: "lld" (WorkerSpec::kernelLinker chose it) or "default" (the
  /// compiler's own, as a user's torch does).
  std::string kernelLinker = "default";
  bool warm = false;  ///< the zygote warmed up before its hello; false: it does so before its first compiled job
  bool cudaAvailable = false;
  int cudaDevices = 0;
  std::string cudaError;  ///< why CUDA is not usable in a forked child ("" when it is, or not asked)
  int cudaCapability = 0;  ///< the first GPU's compute capability as 10 * major + minor (90: Hopper); 0 unknown
  /// The dotted Inductor config options this torch has (torch._inductor.config); empty: not reported.
  std::set<std::string> inductorOptions;
  /// Optional parts this torch has: "compiler_bisector", "structured_trace", "compilation_metrics", ...
  std::set<std::string> features;

  bool hasInductorOption(const std::string& name) const {
    return inductorOptions.empty() || inductorOptions.count(name) > 0;
  }
  bool has(const std::string& feature) const { return features.count(feature) > 0; }
};

/// The zygote refused to serve: no usable torch in its interpreter. The message says why.
struct WorkerRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A line the harness could not have meant: not JSON, or missing a required field.
struct ProtocolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The job as one line of JSON (no trailing newline).
std::string encodeJob(const Job& job);
/// The zygote's shutdown request.
std::string encodeQuit();

using WorkerMessage = std::variant<Hello, oracles::RunResult>;
/// Decodes one line from the harness; throws WorkerRefused for a "refuse" message, ProtocolError
/// naming what is wrong for anything malformed.
WorkerMessage decodeMessage(std::string_view line);

}  // namespace tcfuzz
