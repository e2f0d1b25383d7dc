#pragma once
// The scratch directory and the worker set-up a subcommand that runs programs needs.
#include <filesystem>
#include <string>

#include "fuzzer/Options.h"
#include "fuzzer/WorkerPool.h"

namespace tcfuzz {

/// A temporary directory removed on destruction unless kept (a requested directory is always kept).
class ScratchDir {
 public:
  ScratchDir(const std::string& requested, bool keep);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  bool kept() const { return keep_; }

 private:
  std::filesystem::path path_;
  bool keep_;
};

/// The worker set-up the options describe, writing under workDir. Throws WorkerStartError when
/// the bubblewrap sandbox is asked for and cannot run here.
WorkerSpec workerSpecFrom(const Options& options, const std::filesystem::path& workDir);

/// The compile flags of the command line (--backend, --mode, --dynamic, --fullgraph, --inductor-config);
/// std::invalid_argument for a bad --dynamic or override.
CompileConfig compileConfigFrom(const Options& options);

}  // namespace tcfuzz
