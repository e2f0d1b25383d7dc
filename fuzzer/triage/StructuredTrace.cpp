#include "fuzzer/triage/StructuredTrace.h"

#include <fstream>
#include <system_error>

#include <fmt/format.h>

#include "fuzzer/worker/PythonProbe.h"

namespace tcfuzz {

namespace fs = std::filesystem;

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
  std::optional<int> code = runToCompletion(
      tlparse, {file.string(), "-o", out.string(), "--overwrite", "--no-browser"}, nullptr, {}, errors, timeoutSeconds);
  if (!code) return fmt::format("tlparse did not start or did not finish within {:.0f} s", timeoutSeconds);
  if (*code != 0) {
    std::string why = lastLine(errors);
    return fmt::format("tlparse exited with {}{}", *code, why.empty() ? "" : ": " + why);
  }
  if (!fs::is_regular_file(out / "index.html", ec)) return "tlparse wrote no index.html";
  return "";
}

}  // namespace tcfuzz
