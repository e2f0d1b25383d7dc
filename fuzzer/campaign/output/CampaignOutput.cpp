#include "fuzzer/campaign/output/CampaignOutput.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tcfuzz {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string readText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

CampaignOutput::CampaignOutput(fs::path root, OpenMode mode, SecretRedactor secrets)
    : root_(fs::absolute(std::move(root))), secrets_(std::move(secrets)) {
  bool exists = fs::exists(storePath());
  if (mode == OpenMode::Resume && !exists)
    throw CampaignDirError(fmt::format("{} holds no campaign to resume (no findings.sqlite)", root_.string()));
  if (mode == OpenMode::Fresh && exists)
    throw CampaignDirError(fmt::format("{} already holds a campaign: continue it with --resume {}, or choose another "
                                       "output directory",
                                       root_.string(), root_.string()));
  makeDirectories(root_);
  lockFd_ = ::open((root_ / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lockFd_ < 0) throwFileError("create", root_ / ".lock", errno);
  if (::flock(lockFd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(lockFd_);
    lockFd_ = -1;
    throw CampaignDirError(fmt::format("{} is in use by another tcfuzz process", root_.string()));
  }
  for (const auto& dir : {queueDir(), crashesDir(), workDir()}) makeDirectories(dir);
  // Job directories of a killed session are scratch: nothing in them is a finding.
  std::error_code ec;
  fs::remove_all(workDir() / "jobs", ec);
  fs::remove_all(workDir() / "programs", ec);
  for (const auto& dir : {workDir() / "jobs", workDir() / "programs"}) makeDirectories(dir);
}

CampaignOutput::~CampaignOutput() {
  if (lockFd_ >= 0) ::close(lockFd_);  // releases the flock
}

void CampaignOutput::writeMasked(const fs::path& path, std::string_view content) const {
  writeFileAtomically(path, secrets_.mask(content));
}

void CampaignOutput::appendCmdline(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& a : argv) {
    if (!line.empty()) line += ' ';
    bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-_./=:,+@", c);
    });
    line += plain ? a : "'" + std::regex_replace(a, std::regex("'"), "'\\''") + "'";
  }
  std::string old = fs::exists(root_ / "cmdline") ? readText(root_ / "cmdline") : "";
  writeMasked(root_ / "cmdline", old + line + "\n");
}

void CampaignOutput::writeQueueEntry(const std::string& name, const gen::Graph& graph, const std::string& python) {
  writeMasked(queueDir() / (name + ".py"), python);
  writeMasked(queueDir() / (name + ".json"), graph.toJson().dump(1) + "\n");
}

std::string CampaignOutput::llmProgramPath(int64_t index) { return fmt::format("work/llm/programs/{:06d}.json", index); }

void CampaignOutput::writeLlmProgram(int64_t index, const gen::Graph& graph) {
  fs::path file = root_ / llmProgramPath(index);
  fs::create_directories(file.parent_path());
  writeMasked(file, graph.toJson().dump(1) + "\n");
}

void CampaignOutput::writeStateLeakSuspect(int64_t index, const std::string& python, const nlohmann::json& result) {
  fs::path dir = root_ / "state-leaks";
  makeDirectories(dir);
  writeMasked(dir / fmt::format("{:06d}.py", index), python);
  writeMasked(dir / fmt::format("{:06d}.json", index), result.dump(1) + "\n");
}

fs::path CampaignOutput::quarantine(const fs::path& file) {
  makeDirectories(quarantineDir());
  auto stamp = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  fs::path target = quarantineDir() / fmt::format("{}.{}", file.filename().string(), stamp.count());
  for (int k = 1; fs::exists(target); ++k)
    target = quarantineDir() / fmt::format("{}.{}.{}", file.filename().string(), stamp.count(), k);
  fs::rename(file, target);
  return target;
}

std::vector<CampaignOutput::QueueFile> CampaignOutput::loadQueue(std::vector<std::string>& problems) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(queueDir()))
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::vector<QueueFile> out;
  for (const auto& file : files) {
    try {
      out.push_back({file.stem().string(), gen::Graph::load(file.string())});
    } catch (const std::exception& e) {
      fs::path moved = quarantine(file);
      fs::path py = file;
      py.replace_extension(".py");
      if (fs::exists(py)) quarantine(py);
      problems.push_back(fmt::format("queue file {} is not a valid program ({}); moved to {} and skipped",
                                     file.string(), e.what(), moved.string()));
    }
  }
  return out;
}

bool CampaignOutput::hasFindingFolder(const std::string& signatureId) const {
  return fs::exists(crashesDir() / signatureId / "meta.json");
}

void CampaignOutput::writeFindingFolder(const FindingRecord& f) {
  if (hasFindingFolder(f.signatureId)) return;
  fs::path dir = crashesDir() / f.signatureId;
  makeDirectories(dir);
  writeMasked(dir / "program.py", f.programPy);
  writeMasked(dir / "program.json", f.programJson.empty() ? "{}\n" : f.programJson + "\n");
  json result = json::parse(f.result, nullptr, false);
  writeMasked(dir / "result.json", (result.is_discarded() ? json(f.result) : result).dump(1) + "\n");
  json meta{{"signature_id", f.signatureId},
            {"signature", json::parse(f.signature, nullptr, false)},
            {"verdict", f.verdict},
            {"reason", f.reason},
            {"config", json::parse(f.config, nullptr, false)},
            {"first_finding_id", f.id},
            {"first_program_index", f.programIndex},
            {"first_seen", f.foundAt},
            {"note", "first witness; every hit is a row of findings.sqlite (SELECT * FROM findings WHERE "
                     "signature_id = '" + f.signatureId + "')"}};
  writeMasked(dir / "meta.json", meta.dump(1) + "\n");  // last: its presence marks a complete folder
}

void CampaignOutput::writeStats(const std::vector<std::pair<std::string, std::string>>& stats) {
  size_t width = 0;
  for (const auto& [k, v] : stats) width = std::max(width, k.size());
  std::string text;
  for (const auto& [k, v] : stats) text += fmt::format("{:<{}} : {}\n", k, width, v);
  writeMasked(root_ / "fuzzer_stats", text);
}

std::optional<std::map<std::string, std::string>> CampaignOutput::checkStats(std::vector<std::string>& problems) {
  fs::path file = root_ / "fuzzer_stats";
  if (!fs::exists(file)) return std::nullopt;
  std::ifstream in(file);
  std::map<std::string, std::string> values;
  static const std::regex line_re(R"(^([A-Za-z0-9_]+)\s*:\s?(.*)$)");
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::smatch m;
    if (!std::regex_match(line, m, line_re)) {
      fs::path moved = quarantine(file);
      problems.push_back(fmt::format("{} line {} is not 'key : value'; moved to {} (the counters are rebuilt from "
                                     "findings.sqlite)",
                                     file.string(), number, moved.string()));
      return std::nullopt;
    }
    values[m[1]] = m[2];
  }
  return values;
}

void CampaignOutput::appendPlot(const PlotRow& r) {
  fs::path file = root_ / "plot_data";
  bool fresh = !fs::exists(file);
  std::string line;
  if (fresh)
    line += "# unix_time, run_time_s, programs, programs_per_min, queue, features, findings, unique_signatures, "
            "torch_share\n";
  line += fmt::format("{:.0f}, {:.0f}, {}, {:.2f}, {}, {}, {}, {}, {:.3f}\n", r.unixTime, r.runSeconds, r.programs,
                      r.programsPerMinute, r.queue, r.features, r.findings, r.uniqueSignatures, r.torchShare);
  line = secrets_.mask(line);
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throwFileError("write", file, errno);
  ssize_t put = ::write(fd, line.data(), line.size());
  int e = errno;
  ::close(fd);
  if (put != static_cast<ssize_t>(line.size())) throwFileError("write", file, put < 0 ? e : ENOSPC);
}

}  // namespace tcfuzz
