#pragma once
// What one worker job produced: status, exception, timings, saved outputs and compile facts.
// Decoded from the worker child's JSON result (fuzzer/worker/python/child.py); this is the oracle's input.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tcfuzz::oracles {

/// How a job ended. Oom covers both an allocation refused by the memory limit and the RSS watchdog.
/// Refused: the program tried to reach past its job (a secret, a file outside it, the network, a process);
/// the worker's program guard stopped it (fuzzer/worker/python/program_guard.py). Never a torch result.
enum class RunStatus { Ok, Exception, Signal, Timeout, OutOfMemory, Refused };

std::string_view toString(RunStatus status);
/// Parses the harness spelling ("ok", "exception", "signal", "timeout", "oom", "refused"); nullopt if unknown.
std::optional<RunStatus> parseRunStatus(std::string_view text);

/// A Python exception raised by the program or by torch.
struct ExceptionInfo {
  std::string type;           ///< short class name, e.g. "BackendCompilerFailed"
  std::string qualifiedType;  ///< module-qualified class name
  std::string message;
  std::string traceback;
  /// The user frames of the FX node torch was working on when it raised (the node's stack_trace): the program
  /// line whose op failed inside torch's passes, which the traceback does not name. "" when no node was found.
  std::string nodeStackTrace;
};

/// The values an index output points into (argmax, max.dim, sort, topk...), saved by the eager job
/// (fuzzer/worker/python/forward_checks.py, IndexSources) so that indices of tied values can count as agreeing.
struct TieSource {
  int index = -1;              ///< position of the source values in the saved tensor list
  std::optional<int64_t> dim;  ///< the dim indexed; absent: a flat index into the flattened source
  bool sameRank = false;       ///< the indices have the source's rank (sort, topk, keepdim) rather than one less
};

/// One leaf of the flattened program output.
struct OutputLeaf {
  enum class Kind { Tensor, Scalar, Other };
  Kind kind = Kind::Tensor;
  int index = -1;                ///< position in the saved tensor list (Tensor and Scalar)
  std::string dtype;             ///< torch dtype name without "torch.", or the Python scalar type
  std::vector<int64_t> shape;
  std::string repr;              ///< for Other leaves, compared as text
  /// "output" (call 1's results), "grad" (its gradients), "alias" (an Other leaf per output of call 1: what
  /// its storage is shared with, "input 0", "param w", "output 1" or "nothing"), "state" (an input, buffer or parameter after
  /// call 1), "second-call" (call 2: the same inputs again), "fresh-inputs" (call 3: inputs of seed + 1),
  /// "resized" (dynamic=True only, call 4: an Other leaf saying which inputs got another size, then its
  /// outputs), "moved" (inputs with a storage offset at offset 0: an Other leaf, then the outputs),
  /// "python-state" (the Python state the program keeps, after call 1: attributes, class attributes, declared
  /// globals), "schedule" (a program's SCHEDULE: after each state change, the call's outputs and Python
  /// state), "training" (the "train" entry: each step's loss, then every parameter, optimizer state and buffer
  /// after the last step); see fuzzer/worker/python/forward_checks.py and reference/training_steps.py.
  std::string role = "output";
  std::string name;              ///< e.g. "grad(input 0)", "buffer bn.running_mean after forward"; empty for outputs
  bool random = false;           ///< its value depends on a random op (eager's taint): values are not judged
  /// The optimizer steps whose rounding the value carries (training leaves; 1 otherwise): the comparator's
  /// tolerance grows with them (ComparatorOptions).
  int steps = 1;
  std::optional<TieSource> tieSource;  ///< eager's index outputs only: the values they index
};

/// The outputs of one forward call: a torch.save'd list of tensors in the job directory.
struct OutputSet {
  std::string file;
  std::vector<OutputLeaf> leaves;
};

/// What Dynamo and Inductor reported about the compilation.
struct CompileFacts {
  int graphCount = 0;
  int graphBreaks = 0;
  std::map<std::string, int> breakReasons;
  std::map<std::string, double> inductorCounters;
  std::map<std::string, double> inductorMetrics;     ///< torch._inductor.metrics (generated_kernel_count, ...)
  std::map<std::string, double> aotAutogradCounters;  ///< counters["aot_autograd"] (total, ok, ...)
  // What Inductor did, by name -> count (fuzzer/worker/python/compile_stats.py's hooks; empty on a torch or a
  // result file without them; at most 200 names each).
  std::map<std::string, int> postGradOps;    ///< post-grad FX graph nodes: "aten.mm.default:float32"
  std::map<std::string, int> lowerings;      ///< ops Inductor lowered itself: "aten.relu.default"
  std::map<std::string, int> fallbacks;      ///< ops lowered by a fallback kernel: "aten.cumsum.default"
  std::map<std::string, int> patterns;       ///< pattern-matcher replacements: "addmm", "bmm_to_mm"
  std::map<std::string, int> fusions;        ///< fused groups by member kinds: "pointwise+reduction"
  std::map<std::string, int> kernelKinds;    ///< the Scheduler's final nodes: "pointwise", "reduction", "extern", ...
  std::map<std::string, int> externKernels;  ///< kernels of its extern nodes: "extern_kernels.mm"
  int recompiles = 0;
  std::map<std::string, int> recompileReasons;    ///< Dynamo's first guard failure per recompile, digits as N
  std::map<std::string, double> dynamoCounters;   ///< "frames.total", "frames.ok", "resumes", "calls_captured"
};

/// Seconds spent per phase. The harness fills the child's phases; the pool adds the round trip.
struct PhaseTimes {
  double fork = 0, setup = 0, compile = 0, run = 0, save = 0, childWall = 0;
  double roundTrip = 0;  ///< job written to result parsed, as the C++ side saw it
  double backward = 0;   ///< the part of `run` spent computing gradients (backward jobs)
  double extraCalls = 0; ///< the part of `run` spent in the oracle's calls 2 and 3 (second call, fresh inputs)
  /// `compile` split into exclusive phases (compiled jobs): dynamo, aot_autograd, lowering, scheduling,
  /// cxx_compile, codegen_load (see fuzzer/worker/python/compile_stats.py); empty when torch reports none.
  std::map<std::string, double> compilePhases;
};

/// The worker process a job ran in.
struct ChildInfo {
  bool persistent = false;  ///< a warm persistent child (else a fresh fork of the zygote)
  int jobsBefore = 0;       ///< jobs that process ran before this one (0: a cold process)
  std::string stateLeak;    ///< what the job left changed in torch's global state (the child retired); "" if clean
  std::string gpu;          ///< the GPU its worker is pinned to (a CUDA_VISIBLE_DEVICES entry); "" on CPU or unpinned
};

struct RunResult;
/// The sticky CUDA error `run` ended with: a device-side assert, an illegal memory access, a launch
/// failure, ... (after one, every CUDA call of that process fails), named by the marker found in its
/// exception message or stderr; "" for any other ending. The worker's child.py keeps the same markers.
std::string stickyCudaError(const RunResult& run);

/// The result of one job.
struct RunResult {
  std::string jobId;
  RunStatus status = RunStatus::Ok;
  std::string phase;  ///< load | config | setup | compile | run | backward | save | done | harness
  std::optional<ExceptionInfo> exception;
  int signal = 0;
  std::string signalName;
  std::optional<int> exitCode;
  std::string stderrTail;
  std::string stdoutTail;  ///< "script" jobs: the script's stdout; "bisect" jobs: what the bisector printed
  nlohmann::json bisect;   ///< "bisect" jobs: {"available", "found", "backend", "subsystem", "bisect_number",
                           ///< "debug_info"}; null for other jobs
  /// "lift" jobs: {"proposal": {"inputs", "nodes", "outputs"}, "calls", "mapped", "unmapped"}, or
  /// {"rejected": reason} when the program was refused (nothing of it ran for an AST rejection); null otherwise
  nlohmann::json lift;
  PhaseTimes times;
  std::optional<OutputSet> outputs;
  std::vector<OutputSet> repeatOutputs;  ///< further runs of the same job (nondeterminism check)
  std::optional<CompileFacts> compileFacts;
  /// An export entry's compiled run: {ATen op: count} of the program it runs (the decomposed one for
  /// export+decompose, the packaged one for aoti); empty otherwise.
  std::map<std::string, int> exportOps;
  ChildInfo child;
  std::vector<std::string> refusals;  ///< Refused: what the program tried, in order ("network: socket.connect ...")
  std::vector<std::string> randomOps;  ///< eager jobs: the random ops the program drew from ("aten.bernoulli_")
  /// eager and fp64 jobs: the higher-order ops whose Python meaning the run used ("cond", "vmap"): its leaves
  /// are a reference, not eager's own kernels.
  std::vector<std::string> desugaredHops;
  /// compiled jobs: the first guard failure of each recompile Dynamo made in call 2, which repeats call 1
  /// exactly (fresh copies of the same inputs, the state as built); empty when it ran the cached code
  std::vector<std::string> repeatRecompiles;
  std::string backwardNote;  ///< backward jobs: "ok", or why it was skipped ("skipped: no differentiable output")
  std::filesystem::path jobDir;

  bool ok() const { return status == RunStatus::Ok; }
  /// One line: "exception RuntimeError: msg (phase run)", "signal SIGSEGV (phase run)", "ok".
  std::string summary() const;
};

/// The phase of the fp64 record tcfuzz writes instead of submitting an fp64 run whose arbitration is not
/// needed (eager failed, or Comparator::settledWithoutFp64): it says no job ran, never a worker's result.
inline constexpr const char* kNotNeededPhase = "not-needed";

/// Decodes a harness result object; throws std::invalid_argument naming the bad field.
RunResult runResultFromJson(const nlohmann::json& j);
/// A report view of a result: status, phase, summary, times, exception and compile facts.
nlohmann::json toJson(const RunResult& result);

}  // namespace tcfuzz::oracles
