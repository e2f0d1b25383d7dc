#pragma once
// The OS sandbox around worker zygotes: bubblewrap with no network, a filesystem view that holds only
// what a worker needs (system libraries, headers and the compiler toolchain, the interpreter and its
// packages, the harness; writes only under the work and cache directories), and an environment built
// from an allowlist, so that no credential reaches a program. docs/oracle.md, "Workers and sandbox".
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tcfuzz {

enum class SandboxKind { Bubblewrap, None };

/// Parses "bwrap" or "none"; throws std::invalid_argument otherwise.
SandboxKind parseSandboxKind(const std::string& text);

struct SandboxPolicy {
  SandboxKind kind = SandboxKind::Bubblewrap;
  std::vector<std::filesystem::path> writable;  ///< bound read-write (job dirs, caches)
  std::vector<std::filesystem::path> readable;  ///< bound read-only beside the system trees (interpreter, harness)
  std::string device = "cpu";                   ///< "cuda..." exposes the GPU device nodes
  int tmpMb = 512;                              ///< size of the private, empty /tmp
};

/// The argv that runs `command` under the policy (the command itself when kind is None). The first
/// writable folder is the working directory.
std::vector<std::string> sandboxedCommand(const SandboxPolicy& policy, const std::vector<std::string>& command);

/// Checks that bubblewrap exists and can build a sandbox here. Returns "" when it can, else a
/// message that says what failed, what running without it gives up, and how to do that.
std::string probeBubblewrap();

/// What a worker run with --sandbox none does not have (said once at start, and in fuzzer_stats).
std::string_view unsandboxedWarning();

/// Whether an environment variable's name says it holds a credential (KEY, TOKEN, SECRET, PASSWORD,
/// CREDENTIAL, AUTH, ...): such a variable never reaches a worker, whatever the allowlist says.
bool looksLikeCredential(std::string_view name);
/// The name fragments behind looksLikeCredential, comma-separated (the program guard gets the same list).
std::string credentialMarks();

/// The environment a worker starts from: only the variables of `host` that torch, Inductor, Triton,
/// CUDA and the compilers read (an allowlist of names and prefixes, less credentials), plus those named
/// in `passNames` (--worker-env; a credential-like name is still refused). tcfuzz adds its own after.
std::map<std::string, std::string> workerEnvironment(const std::map<std::string, std::string>& host,
                                                     const std::vector<std::string>& passNames = {});

/// This process's environment as a map.
std::map<std::string, std::string> hostEnvironment();

/// The folders `python` needs that lie outside /usr: its prefix and base prefix (a venv and the
/// interpreter it was made from), the realpath of the executable's prefix, and every sys.path entry
/// (so an editable torch checkout is seen too), asked of the interpreter itself under `env`.
/// Empty when the interpreter cannot answer (its start then fails with its own message).
std::vector<std::filesystem::path> interpreterTrees(const std::filesystem::path& python,
                                                    const std::map<std::string, std::string>& env);

}  // namespace tcfuzz
