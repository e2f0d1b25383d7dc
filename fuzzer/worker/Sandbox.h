#pragma once
// The OS sandbox around worker zygotes: bubblewrap with no network, a read-only root (/tmp
// included), and writes allowed only under the campaign's work directory.
#include <filesystem>
#include <string>
#include <vector>

namespace tcfuzz {

enum class SandboxKind { Bubblewrap, None };

/// Parses "bwrap" or "none"; throws std::invalid_argument otherwise.
SandboxKind parseSandboxKind(const std::string& text);

struct SandboxPolicy {
  SandboxKind kind = SandboxKind::Bubblewrap;
  std::vector<std::filesystem::path> writable;  ///< bound read-write (job dirs, caches)
  std::string device = "cpu";                   ///< "cuda..." exposes the GPU device nodes
};

/// The argv that runs `command` under the policy (the command itself when kind is None).
std::vector<std::string> sandboxedCommand(const SandboxPolicy& policy, const std::vector<std::string>& command);

/// Checks that bubblewrap exists and can build a sandbox here. Returns "" when it can, else a
/// message that says what failed and how to run without it.
std::string probeBubblewrap();

}  // namespace tcfuzz
