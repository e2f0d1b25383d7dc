#pragma once
// The torch a worker's interpreter runs, as its zygote reports it (fuzzer/worker/python/zygote.py, hello).
// One tcfuzz build drives any torch from kMinimumTorch on: this, not the LibTorch tcfuzz links, is
// the version every finding, report and regress row names.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tcfuzz::oracles {

/// The oldest torch release a worker may run (the exchange format and the harness need 2.4 or newer).
inline constexpr const char* kMinimumTorch = "2.4";

struct TorchInfo {
  std::string version;   ///< torch.__version__, e.g. "2.15.0+cu132" or "2.16.0.dev20261101+cpu"
  std::string git;       ///< torch.version.git_version
  std::string cuda;      ///< torch.version.cuda; empty: a CPU-only build
  std::string triton;    ///< the installed Triton's version; empty: none
  std::string python;    ///< the interpreter's version, e.g. "3.11.7"
  std::vector<std::string> devices;  ///< the CPU model, then each visible GPU's name (when CUDA was probed)

  bool known() const { return !version.empty(); }
  /// {"version", "git", "cuda", "triton", "python", "devices"}; empty fields are kept (stable keys).
  nlohmann::json toJson() const;
  /// Reads toJson()'s form; a bare string is taken as the version (older finding.json files).
  static TorchInfo fromJson(const nlohmann::json& j);
  /// One line for logs and reports: "torch 2.15.0+cu132 (git d0f2af8b66b2), CUDA 13.2, Triton 3.9.0, Python 3.11.7".
  std::string summary() const;
};

/// The release of a version string: "2.15.0+cu132" -> "2.15.0", "2.16.0.dev20261101" -> "2.16.0.dev20261101".
std::string releaseOf(const std::string& version);
/// A key that orders versions as releases do: 2.4.1 < 2.11.0 < 2.16.0.dev20261101 < 2.16.0.
/// Unparsable parts sort first.
std::vector<long long> versionKey(const std::string& version);
/// Why a worker's torch cannot be used (older than kMinimumTorch, or no version at all); nullopt if it can.
std::optional<std::string> unsupportedTorch(const std::string& version);

}  // namespace tcfuzz::oracles
