#include "fuzzer/Workspace.h"

#include <cstdlib>

#include <torch/headeronly/version.h>

#include "fuzzer/Sandbox.h"

namespace tcfuzz {

namespace fs = std::filesystem;

ScratchDir::ScratchDir(const std::string& requested, bool keep) : keep_(keep || !requested.empty()) {
  if (!requested.empty()) {
    path_ = fs::absolute(requested);
    fs::create_directories(path_);
    return;
  }
  std::string pattern = (fs::temp_directory_path() / "tcfuzz-run-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot create a temporary directory in " + pattern);
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  if (!keep_) fs::remove_all(path_, ec);
}

WorkerSpec workerSpecFrom(const Options& o, const fs::path& workDir) {
  WorkerSpec spec;
  spec.sandbox = parseSandboxKind(o.sandbox);
  if (spec.sandbox == SandboxKind::Bubblewrap)
    if (std::string problem = probeBubblewrap(); !problem.empty()) throw WorkerStartError(problem);
  spec.python = o.python;
  spec.harness = fs::path(TCFUZZ_SOURCE_DIR) / "fuzzer" / "worker" / "harness.py";
  spec.device = o.device;
  spec.workDir = workDir;
  if (!o.inductorCache.empty()) spec.inductorCacheDir = fs::absolute(o.inductorCache);
  spec.expectedTorchGit = TCFUZZ_TORCH_GIT_VERSION;
  spec.expectedTorchVersion = TORCH_VERSION;
  return spec;
}

CompileConfig compileConfigFrom(const Options& o) {
  CompileConfig c;
  c.backend = o.backend;
  c.mode = o.mode == "default" ? "" : o.mode;
  if (o.dynamic == "true") c.dynamic = true;
  else if (o.dynamic == "false") c.dynamic = false;
  else if (o.dynamic != "auto") throw std::invalid_argument("--dynamic takes auto, true or false, not " + o.dynamic);
  c.fullgraph = o.fullgraph;
  for (const auto& assignment : o.inductorConfig) c.addInductorOverride(assignment);
  return c;
}


}  // namespace tcfuzz
