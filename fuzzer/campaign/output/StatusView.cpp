#include "fuzzer/campaign/output/StatusView.h"

#include <ctime>

#include <fmt/format.h>

namespace tcfuzz {

namespace {

std::string duration(double seconds) {
  if (seconds < 0) return "none yet";
  auto s = static_cast<int64_t>(seconds);
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m {:02d}s", s / 60, s % 60);
  return fmt::format("{}h {:02d}m", s / 3600, (s % 3600) / 60);
}

std::string clockNow() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%S", std::localtime(&t));
  return buf;
}

int64_t count(const CampaignSnapshot& s, const char* verdict) {
  auto it = s.verdicts.find(verdict);
  return it == s.verdicts.end() ? 0 : it->second;
}

/// A log line's per-GPU tail: " | GPU 0 120 programs, ... | GPU 1 ...".
std::string gpuSuffix(const CampaignSnapshot& s) {
  std::string out;
  for (const auto& line : s.gpuLines) out += " | " + line;
  return out;
}

}  // namespace

StatusView::StatusView(std::ostream& out, bool screen, std::chrono::seconds logInterval)
    : out_(out), screen_(screen), logInterval_(logInterval) {}

std::string StatusView::summaryLine(const CampaignSnapshot& s) const {
  return fmt::format(
      "[{}] {} programs ({:.1f}/min) | agree {} crash {} status {} wrong {} nondet {} invalid {} | findings {} "
      "unique {} (last new {}) | queue {} features {} | torch {:.1f}%",
      duration(s.runSeconds), s.programs, s.programsPerMinute, count(s, "agree"), count(s, "crash-mismatch"),
      count(s, "status-mismatch"),
      count(s, "numeric-divergence") + count(s, "mutation-divergence") + count(s, "second-call-divergence") +
          count(s, "aliasing-divergence"),
      count(s, "nondeterministic"),
      count(s, "invalid-program"), s.findings, s.uniqueSignatures,
      s.sinceLastNewSignature < 0 ? "none yet" : duration(s.sinceLastNewSignature) + " ago", s.queue, s.features,
      100 * s.torchShare) + gpuSuffix(s);
}

void StatusView::draw(const CampaignSnapshot& s) {
  std::string text = "\x1b[H\x1b[2J";
  text += fmt::format("tcfuzz campaign   seed {}   device {}   workers {}\n", s.seed, s.device, s.workers);
  text += fmt::format("output           {}\n\n", s.outDir);
  text += fmt::format("  run time       {:<14} programs      {} ({} this session)\n", duration(s.runSeconds), s.programs,
                      s.sessionPrograms);
  text += fmt::format("  speed          {:<14} inside torch  {:.1f}% of worker time\n",
                      fmt::format("{:.1f}/min", s.programsPerMinute), 100 * s.torchShare);
  text += fmt::format("  generated      {:<14} mutated       {}   duplicates skipped {}   errors {}\n\n", s.generated,
                      s.mutated, s.duplicates, s.errors);
  text += "  verdicts\n";
  for (const char* v : {"agree", "crash-mismatch", "status-mismatch", "numeric-divergence", "mutation-divergence",
                        "second-call-divergence", "aliasing-divergence", "nondeterministic", "invalid-program", "sandbox-refusal",
                        "random-only", "nothing-compiled", "ill-conditioned", "signed-zero", "denormal-flush", "recompile-storm"})
    text += fmt::format("    {:<20} {}\n", v, count(s, v));
  text += fmt::format("\n  findings       {:<14} unique signatures {}   last new: {}\n", s.findings, s.uniqueSignatures,
                      s.sinceLastNewSignature < 0 ? "none yet" : duration(s.sinceLastNewSignature) + " ago");
  text += fmt::format("  queue          {:<14} features      {}\n\n", s.queue, s.features);
  if (!s.gpuLines.empty()) {
    text += "  GPUs\n";
    for (const auto& line : s.gpuLines) text += "    " + line + "\n";
    text += "\n";
  }
  text += "  recent events\n";
  for (const auto& e : recent_) text += "    " + e + "\n";
  text += "\n  Ctrl-C stops (state is saved; continue with tcfuzz fuzz --resume OUT)\n";
  out_ << text << std::flush;
}

void StatusView::update(const CampaignSnapshot& s) {
  std::lock_guard lock(mutex_);
  last_ = s;
  auto now = std::chrono::steady_clock::now();
  auto interval = screen_ ? std::chrono::seconds(1) : logInterval_;
  if (lastShown_.time_since_epoch().count() != 0 && now - lastShown_ < interval) return;
  lastShown_ = now;
  if (screen_) draw(s);
  else out_ << summaryLine(s) << std::endl;
}

void StatusView::event(const std::string& line) {
  std::lock_guard lock(mutex_);
  std::string stamped = fmt::format("{} {}", clockNow(), line);
  if (screen_) {
    recent_.push_back(stamped);
    while (recent_.size() > 8) recent_.pop_front();
    draw(last_);
  } else {
    out_ << stamped << std::endl;
  }
}

void StatusView::finish(const CampaignSnapshot& s, const std::string& why) {
  std::lock_guard lock(mutex_);
  last_ = s;
  if (screen_) draw(s);
  out_ << summaryLine(s) << "\n" << fmt::format("tcfuzz: campaign stopped: {}", why) << std::endl;
}

}  // namespace tcfuzz
