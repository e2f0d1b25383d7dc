#include "fuzzer/triage/StructuredTrace.h"

#include <chrono>
#include <fstream>
#include <system_error>
#include <thread>

#include <boost/process.hpp>
#include <fmt/format.h>

#include "fuzzer/worker/ParentDeath.h"
#include "oracles/AtomicFile.h"

namespace tcfuzz {

namespace fs = std::filesystem;
namespace bp = boost::process;

namespace {

/// The largest *.log file in `folder` (the process that compiled writes the most); empty when none.
fs::path largestLog(const fs::path& folder) {
  fs::path best;
  uintmax_t bestSize = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    if (!entry.is_regular_file(ec) || entry.path().extension() != ".log") continue;
    uintmax_t size = entry.file_size(ec);
    if (!ec && size > bestSize) {
      bestSize = size;
      best = entry.path();
    }
  }
  return best;
}

/// The last non-empty line of `file` ("" when there is none).
std::string lastLine(const fs::path& file) {
  std::ifstream in(file);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last.size() > 300 ? last.substr(0, 297) + "..." : last;
}

}  // namespace

fs::path installedTlparse() {
  fs::path tlparse = fs::path(TCFUZZ_DEFAULT_PYTHON).parent_path() / "tlparse";
  std::error_code ec;
  return fs::is_regular_file(tlparse, ec) ? tlparse : fs::path{};
}

std::string renderTrace(const fs::path& tlparse, const fs::path& log, const fs::path& out, double timeoutSeconds) {
  if (tlparse.empty()) return "tlparse is not installed (scripts/setup installs it into .venv)";
  std::error_code ec;
  if (!fs::is_directory(log, ec)) return "the traced run wrote no structured trace log";
  fs::path file = largestLog(log);
  if (file.empty()) return "the structured trace log is empty";
  fs::remove_all(out, ec);
  fs::path errors = log / "tlparse.stderr";
  bp::child child(boost::filesystem::path(tlparse.string()), file.string(), "-o", out.string(), "--overwrite",
                  "--no-browser", bp::std_in < bp::null, bp::std_out > bp::null,
                  bp::std_err > boost::filesystem::path(errors.string()), dieWithParent(), ec);
  if (ec) return fmt::format("tlparse did not start: {}", ec.message());
  // Boost.Process 1.74's wait_for waits the whole timeout for a child that already exited: poll.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
  while (child.running(ec) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (child.running(ec)) {
    child.terminate(ec);
    return fmt::format("tlparse did not finish within {:.0f} s", timeoutSeconds);
  }
  child.wait(ec);
  if (int code = child.exit_code(); code != 0) {
    std::string why = lastLine(errors);
    return fmt::format("tlparse exited with {}{}", code, why.empty() ? "" : ": " + why);
  }
  if (!fs::is_regular_file(out / "index.html", ec)) return "tlparse wrote no index.html";
  return "";
}

void maskTree(const fs::path& dir, const SecretRedactor& secrets) {
  if (secrets.empty() || !fs::is_directory(dir)) return;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    std::string masked = secrets.mask(text);
    if (masked != text) writeFileAtomically(entry.path(), masked);
  }
}

}  // namespace tcfuzz
