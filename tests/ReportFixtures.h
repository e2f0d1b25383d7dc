#pragma once
// Hand-built BugReports in the shapes ProgramTester's toJson produces (a crash and a numeric divergence),
// and small file helpers: what the report and index writer tests share. No workers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "oracles/reporter/BugReport.h"

namespace tcfuzz::test_support::reports {

using namespace tcfuzz::oracles;
using nlohmann::json;
namespace fs = std::filesystem;

inline constexpr double kMay1Noon = 1714564800;  // 2024-05-01T12:00:00Z

inline const char* const kReproPy = R"(# repro.py: tcfuzz finding (minimized)
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return torch.sigmoid(x).cumsum(0)

def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 4, generator=g),)

if __name__ == "__main__":
    raise SystemExit(main())
)";

inline json okRun() {
  return {{"status", "ok"},
          {"phase", "done"},
          {"summary", "ok"},
          {"job_dir", "/tmp/tcfuzz/jobs/000001-eager"},
          {"times", {{"fork_s", 0.01}, {"setup_s", 0.2}, {"compile_s", 0.0}, {"run_s", 0.01}}}};
}

inline BugReport crashBug() {
  BugReport bug;
  Signature& s = bug.signature;
  s.symptom = "crash-mismatch";
  s.kind = "exception";
  s.failingMode = "compiled";
  s.phase = "compile";
  s.exceptionType = "InductorError(CppCompileError)";
  s.normalizedMessage = "C++ compile error Command: g++ <path> -shared -fPIC -O3 -o <path>";
  s.frames = {"torch/_inductor/cpp_builder.py:build", "torch/_inductor/codecache.py:load_async",
              "torch/_inductor/graph.py:compile_to_module"};
  bug.id = s.id();
  bug.title = "[inductor] CppCompileError for cumsum(sigmoid(x)) with cpp_wrapper=True";
  bug.severity = "crash";
  bug.component = "inductor";
  bug.hits = 17;
  bug.firstSeen = kMay1Noon;
  bug.lastSeen = kMay1Noon + 3600;
  bug.rawSignatureIds = {bug.id, "00ff00ff00ff00ff"};
  bug.findingIds = {3, 9, 41};
  bug.mergedBy = "frames";
  bug.originalConfig = {{"inductor_config", {{"cpp_wrapper", true}, {"freezing", true}}}};
  bug.originalNodes = 23;
  bug.originalProgramPy = "# original program\nclass Model(torch.nn.Module):\n    pass  # 23 nodes\n";
  bug.minimized = true;
  bug.minimizeCandidates = 57;
  ReproCase& r = bug.repro;
  r.programPy = kReproPy;
  r.programIr = {{"inputs", {{{"shape", {3, 4}}, {"dtype", "float32"}}}},
                 {"nodes", {{{"op", "sigmoid"}}, {{"op", "cumsum"}, {"attrs", {{"dim", 0}}}}}}};
  r.nodes = 2;
  r.compile.dynamic = true;
  r.compile.inductorConfig = {{"cpp_wrapper", true}};
  r.backward = true;
  r.seed = 1234;
  r.verdict = "crash-mismatch";
  const std::string message =
      "CppCompileError: C++ compile error\n\nCommand:\ng++ /tmp/torchinductor_u/ab/cab12.cpp -shared -fPIC -O3 "
      "-o /tmp/torchinductor_u/ab/cab12.so\n\nOutput:\n/tmp/torchinductor_u/ab/cab12.cpp:41:17: error: 'tmp3' "
      "was not declared in this scope\n   41 |     auto tmp4 = tmp3 | tmp2;\n";
  r.observed = {{"program", "/tmp/tcfuzz/min/program.py"},
                {"verdict", "crash-mismatch"},
                {"reason", "compiled raised InductorError during compile; eager ran"},
                {"eager", okRun()},
                {"fp64", okRun()},
                {"compiled",
                 {{"status", "exception"},
                  {"phase", "compile"},
                  {"summary", "exception InductorError: CppCompileError: C++ compile error (phase compile)"},
                  {"exception",
                   {{"type", "InductorError"},
                    {"qualified_type", "torch._inductor.exc.InductorError"},
                    {"message", message}}}}},
                {"wall_s", 4.2},
                {"compare_s", 0.01}};
  bug.ablation = {
      {"backend=eager", {{"backend", "eager"}}, "agree", false, "compiled ran"},
      {"backend=aot_eager", {{"backend", "aot_eager"}}, "agree", false, "compiled ran"},
      {"backend=aot_eager_decomp_partition", {{"backend", "aot_eager_decomp_partition"}}, "agree", false,
       "compiled ran"},
      {"backend=inductor", r.compile.toJson(), "crash-mismatch", true,
       "compiled raised InductorError: error: 'tmp3' | tmp2 not declared"},
      {"without cpp_wrapper", {{"dynamic", true}}, "agree", false, "compiled ran"},
  };
  bug.bisect.ran = true;
  bug.bisect.backend = "inductor";
  bug.bisect.subsystem = "lowerings";
  bug.bisect.bisectNumber = 3;
  bug.bisect.debugInfo = "aten.cumsum.default";
  bug.reproVerified = true;
  bug.reproOutput = "eager: ok\ncompiled: InductorError: CppCompileError: C++ compile error\ntcfuzz-verdict: "
                    "crash-mismatch\n";
  bug.torch.version = "2.11.0+cpu";
  bug.torch.git = "0123456789abcdef0123456789abcdef01234567";
  bug.torch.python = "3.11.7";
  bug.torch.devices = {"AMD EPYC"};
  bug.collectEnv = "PyTorch version: 2.11.0+cpu\nIs debug build: False\nOS: Debian GNU/Linux 12 (bookworm) (x86_64)\n"
                   "GCC version: (Debian 12.2.0-14) 12.2.0\n";
  bug.campaign = "/data/campaigns/nightly-0501";
  return bug;
}

inline json leaf(int index, const std::string& name, double maxAbs, double rmseEager, double rmseCompiled, bool passed) {
  return {{"leaf", index},
          {"role", index == 0 ? "output" : "grad"},
          {"name", name},
          {"dtype", "float32"},
          {"compiled_dtype", "float32"},
          {"shape", {8, 16}},
          {"compiled_shape", {8, 16}},
          {"dtype_match", true},
          {"shape_match", true},
          {"nan_inf_match", true},
          {"fp64_stable", true},
          {"fp64_used", true},
          {"max_abs_diff", maxAbs},
          {"rmse_eager_fp64", rmseEager},
          {"rmse_compiled_fp64", rmseCompiled},
          {"tolerance", 1e-4},
          {"multiplier", 2.0},
          {"passed", passed},
          {"note", passed ? "allclose" : "rmse(compiled) > 2 * rmse(eager) + tol/10"}};
}

inline BugReport numericBug() {
  BugReport bug;
  bug.signature.symptom = "numeric-divergence";
  bug.signature.kind = "numeric";
  bug.signature.ops = {"addmm", "log_softmax", "var_mean"};
  bug.id = bug.signature.id();
  bug.title = "[inductor] var_mean after addmm is less accurate than eager under max-autotune";
  bug.severity = "wrong-result";
  bug.component = "inductor";
  bug.hits = 4;
  bug.firstSeen = kMay1Noon;
  bug.lastSeen = kMay1Noon;
  bug.rawSignatureIds = {bug.id};
  bug.mergedBy = "exact";
  bug.originalNodes = 11;
  bug.minimized = true;
  bug.repro.nodes = 3;
  bug.repro.verdict = "numeric-divergence";
  bug.repro.compile.mode = "max-autotune";
  bug.repro.compile.fullgraph = true;
  bug.repro.divergingLeaves = {1};
  bug.repro.observed = {{"verdict", "numeric-divergence"},
                        {"reason", "leaf 1: compiled further from fp64 than eager"},
                        {"eager", okRun()},
                        {"compiled", okRun()},
                        {"fp64", okRun()},
                        {"outputs",
                         {leaf(0, "output 0", 1e-7, 2e-8, 3e-8, true),
                          leaf(1, "grad(param linear.weight)", 3.5e-3, 1.2e-7, 4.9e-5, false)}}};
  bug.ablation = {{"backend=aot_eager_decomp_partition", {{"backend", "aot_eager_decomp_partition"}}, "agree", false,
                   "rmse ratio 1.0"},
                  {"backend=inductor", bug.repro.compile.toJson(), "numeric-divergence", true, "rmse ratio 408.3"}};
  bug.bisect.note = "not available in this torch";
  return bug;
}

inline std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::set<std::string> filesIn(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

/// A fresh directory per test under the GoogleTest temp dir.
inline fs::path freshDir(const std::string& name) {
  fs::path dir = fs::path(testing::TempDir()) / fmt::format("tcfuzz-report-{}-{}", name, ::getpid());
  fs::remove_all(dir);
  return dir;
}

/// The line of `text` that contains `needle` ("" when none).
inline std::string lineWith(const std::string& text, const std::string& needle) {
  size_t at = text.find(needle);
  if (at == std::string::npos) return "";
  size_t begin = text.rfind('\n', at);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return text.substr(begin, text.find('\n', at) - begin);
}

}  // namespace tcfuzz::test_support::reports
