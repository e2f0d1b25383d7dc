#include "fuzzer/worker/Sandbox.h"

#include <stdexcept>

#include <boost/process.hpp>
#include <fmt/format.h>

namespace bp = boost::process;

namespace tcfuzz {

SandboxKind parseSandboxKind(const std::string& text) {
  if (text == "bwrap" || text == "bubblewrap") return SandboxKind::Bubblewrap;
  if (text == "none") return SandboxKind::None;
  throw std::invalid_argument(fmt::format("unknown sandbox '{}' (expected bwrap or none)", text));
}

std::vector<std::string> sandboxedCommand(const SandboxPolicy& policy, const std::vector<std::string>& command) {
  if (policy.kind == SandboxKind::None) return command;
  // The whole root is read-only, /tmp included (programs and checkouts may live there); workers
  // get a writable TMPDIR inside the work directory instead.
  std::vector<std::string> argv = {"bwrap", "--ro-bind", "/", "/", "--proc", "/proc"};
  if (policy.device.starts_with("cuda")) {
    argv.insert(argv.end(), {"--dev-bind", "/dev", "/dev"});  // /dev/nvidia* for the GPU
  } else {
    argv.insert(argv.end(), {"--dev", "/dev"});
  }
  for (const auto& dir : policy.writable) {
    std::string d = std::filesystem::absolute(dir).lexically_normal().string();
    argv.insert(argv.end(), {"--bind", d, d});
  }
  argv.insert(argv.end(), {"--unshare-net", "--unshare-ipc", "--unshare-pid", "--unshare-uts",
                           "--die-with-parent", "--new-session", "--"});
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::string probeBubblewrap() {
  auto bwrap = bp::search_path("bwrap");
  if (bwrap.empty())
    return "bubblewrap (bwrap) is not installed; run scripts/setup, or pass --sandbox none to run "
           "programs without an OS sandbox";
  std::error_code ec;
  int rc = bp::system(bwrap, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "--die-with-parent", "true",
                      bp::std_out > bp::null, bp::std_err > bp::null, ec);
  if (ec || rc != 0)
    return fmt::format("bubblewrap cannot create a sandbox on this machine (exit {}{}); user namespaces may be "
                       "disabled. Pass --sandbox none to run programs without an OS sandbox",
                       rc, ec ? ", " + ec.message() : "");
  return "";
}

}  // namespace tcfuzz
