#include "fuzzer/worker/Sandbox.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include <boost/process.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fuzzer/worker/PythonProbe.h"

namespace bp = boost::process;
namespace fs = std::filesystem;

extern char** environ;

namespace tcfuzz {
namespace {

/// Variables a worker may inherit, by exact name: the search path, locale, the compilers' and the
/// dynamic linker's paths, the GPU runtime's selection, and Python's own switches.
constexpr std::string_view kPassedNames[] = {
    "PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "TZ",
    "CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "LIBRARY_PATH",
    "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_LAUNCH_BLOCKING", "CUDA_MODULE_LOADING",
    "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "ROCM_PATH", "HIP_VISIBLE_DEVICES",
    "PYTHONPATH", "PYTHONHASHSEED", "PYTHONWARNINGS",
};
/// Variables a worker may inherit, by prefix: torch's, Inductor's, Triton's, the GPU libraries' and the
/// thread pools' settings.
constexpr std::string_view kPassedPrefixes[] = {
    "TORCH_", "TORCHINDUCTOR_", "TORCHDYNAMO_", "INDUCTOR_", "PYTORCH_", "TRITON_", "CUBLAS_", "CUDNN_",
    "NVTE_", "OMP_", "KMP_", "GOMP_", "MKL_", "DNNL_", "ONEDNN_",
};
/// Name fragments that mark a credential (matched on the upper-cased name).
constexpr std::string_view kCredentialMarks[] = {
    "KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE", "SESSION", "PRIVATE",
};
/// What of /etc a worker reads: the dynamic linker's cache, the compiler alternatives (c++, cc), user
/// names (getpass, which Inductor's default cache path uses), time zone and the OS name.
constexpr std::string_view kEtcEntries[] = {
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "passwd", "group", "nsswitch.conf",
    "localtime", "timezone", "os-release", "debian_version", "gai.conf",
};
/// Top-level system folders that may be links into /usr (merged /usr) or folders of their own.
constexpr std::string_view kSystemRoots[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};

bool startsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::string absoluteText(const fs::path& p) { return fs::absolute(p).lexically_normal().string(); }

/// Whether `p` lies inside (or is) `root`, as normalized absolute paths.
bool inside(const std::string& p, const std::string& root) {
  return p == root || (startsWith(p, root) && (root.back() == '/' || p[root.size()] == '/'));
}

}  // namespace

SandboxKind parseSandboxKind(const std::string& text) {
  if (text == "bwrap" || text == "bubblewrap") return SandboxKind::Bubblewrap;
  if (text == "none") return SandboxKind::None;
  throw std::invalid_argument(fmt::format("unknown sandbox '{}' (expected bwrap or none)", text));
}

std::vector<std::string> sandboxedCommand(const SandboxPolicy& policy, const std::vector<std::string>& command) {
  if (policy.kind == SandboxKind::None) return command;
  std::vector<std::string> argv = {"bwrap", "--unshare-net", "--unshare-ipc", "--unshare-pid", "--unshare-uts",
                                   "--unshare-cgroup-try", "--die-with-parent", "--new-session",
                                   "--ro-bind", "/usr", "/usr"};
  for (std::string_view root : kSystemRoots) {
    std::error_code ec;
    fs::path p(root);
    if (fs::is_symlink(p, ec)) {
      argv.insert(argv.end(), {"--symlink", fs::read_symlink(p, ec).string(), p.string()});
    } else if (fs::is_directory(p, ec)) {
      argv.insert(argv.end(), {"--ro-bind", p.string(), p.string()});
    }
  }
  for (std::string_view entry : kEtcEntries) {
    std::string p = "/etc/" + std::string(entry);
    argv.insert(argv.end(), {"--ro-bind-try", p, p});
  }
  {  // Debian's Python reads its sitecustomize from /etc/python3.X
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/etc", ec))
      if (e.path().filename().string().starts_with("python"))
        argv.insert(argv.end(), {"--ro-bind-try", e.path().string(), e.path().string()});
  }
  argv.insert(argv.end(), {"--proc", "/proc", "--ro-bind", "/sys", "/sys"});
  if (policy.device.starts_with("cuda")) {
    argv.insert(argv.end(), {"--dev-bind", "/dev", "/dev"});  // /dev/nvidia* for the GPU
  } else {
    argv.insert(argv.end(), {"--dev", "/dev"});
  }
  argv.insert(argv.end(), {"--size", std::to_string(int64_t{policy.tmpMb} << 20), "--tmpfs", "/tmp"});

  // The interpreter's trees, the harness and the writable folders: a parent is mounted before what lies
  // inside it (a later mount of the parent would hide the child), and what /usr already holds is skipped.
  std::map<std::string, bool> mounts;  // path -> writable; sorted, so parents come first
  for (const auto& dir : policy.readable) {
    std::string d = absoluteText(dir);
    if (!inside(d, "/usr")) mounts.emplace(d, false);
  }
  for (const auto& dir : policy.writable) mounts[absoluteText(dir)] = true;
  for (const auto& [path, writable] : mounts)
    argv.insert(argv.end(), {writable ? "--bind" : "--ro-bind-try", path, path});
  // The sandbox's own root (a tmpfs holding the mount points) is read-only: a write outside the mounts
  // fails instead of filling memory.
  argv.insert(argv.end(), {"--remount-ro", "/"});
  if (!policy.writable.empty()) argv.insert(argv.end(), {"--chdir", absoluteText(policy.writable.front())});
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::string_view unsandboxedWarning() {
  return "--sandbox none: programs run without the OS sandbox. They can read every file tcfuzz can read (home "
         "directories, ssh keys, cloud credentials), reach the network, write wherever tcfuzz can, and outlive "
         "it if they detach. What remains: the environment allowlist (no credential variables), the resource "
         "limits, and the Python-level program guard, which a hostile program can get around. Use it only for "
         "programs you trust.";
}

std::string probeBubblewrap() {
  auto bwrap = bp::search_path("bwrap");
  if (bwrap.empty())
    return fmt::format("bubblewrap (bwrap) is not installed; run scripts/setup (it installs the Debian package "
                       "bubblewrap). To run anyway, pass --sandbox none. {}",
                       unsandboxedWarning());
  std::error_code ec;
  int rc = bp::system(bwrap, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "--die-with-parent", "true",
                      bp::std_out > bp::null, bp::std_err > bp::null, ec);
  if (ec || rc != 0)
    return fmt::format("bubblewrap cannot create a sandbox on this machine (exit {}{}); user namespaces may be "
                       "disabled. To run anyway, pass --sandbox none. {}",
                       rc, ec ? ", " + ec.message() : "", unsandboxedWarning());
  return "";
}

bool looksLikeCredential(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  return std::any_of(std::begin(kCredentialMarks), std::end(kCredentialMarks),
                     [&](std::string_view mark) { return upper.find(mark) != std::string::npos; });
}

std::string credentialMarks() {
  std::string joined;
  for (std::string_view mark : kCredentialMarks) joined += (joined.empty() ? "" : ",") + std::string(mark);
  return joined;
}

std::map<std::string, std::string> workerEnvironment(const std::map<std::string, std::string>& host,
                                                     const std::vector<std::string>& passNames) {
  std::map<std::string, std::string> env;
  for (const auto& [name, value] : host) {
    if (looksLikeCredential(name)) continue;
    bool passed = std::find(std::begin(kPassedNames), std::end(kPassedNames), name) != std::end(kPassedNames) ||
                  std::find(passNames.begin(), passNames.end(), name) != passNames.end() ||
                  std::any_of(std::begin(kPassedPrefixes), std::end(kPassedPrefixes),
                              [&](std::string_view prefix) { return startsWith(name, prefix); });
    if (passed) env[name] = value;
  }
  return env;
}

std::map<std::string, std::string> hostEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    size_t eq = entry.find('=');
    if (eq != std::string_view::npos && eq > 0) env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

std::vector<fs::path> interpreterTrees(const fs::path& python, const std::map<std::string, std::string>& env) {
  static constexpr const char* kProbe =
      "import json, os, sys\n"
      "paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,\n"
      "         os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))]\n"
      "paths += [p for p in sys.path if p and os.path.exists(p)]\n"
      "print(json.dumps(sorted({os.path.realpath(p) for p in paths} | set(paths[:4]))))\n";
  std::optional<ProbeAnswer> answer = askPython(python, kProbe, &env);
  if (!answer || answer->exitCode != 0) return {};
  const std::string& text = answer->printed;
  std::vector<fs::path> trees;
  try {
    for (const auto& p : nlohmann::json::parse(text)) trees.emplace_back(p.get<std::string>());
  } catch (const nlohmann::json::exception&) {
    return {};
  }
  // A tree inside another is mounted with it.
  std::sort(trees.begin(), trees.end());
  std::vector<fs::path> roots;
  for (const auto& t : trees)
    if (roots.empty() || !inside(t.string(), roots.back().string())) roots.push_back(t);
  return roots;
}

}  // namespace tcfuzz
