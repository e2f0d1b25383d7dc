#include "fuzzer/llm/ReplyLog.h"

#include <chrono>
#include <fstream>

namespace tcfuzz {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// A rejection reason safe to use as a stats key: "ast: import of os" -> "ast_import_of_os" (its first
/// 40 characters, each run of other characters than letters and digits one '_', none at the end).
std::string reasonKey(const std::string& reason) {
  std::string key;
  for (char c : reason.substr(0, 40)) {
    if (std::isalnum(static_cast<unsigned char>(c))) key += c;
    else if (key.empty() || key.back() != '_') key += '_';
  }
  while (!key.empty() && key.back() == '_') key.pop_back();
  return key;
}

}  // namespace

json LlmStrategyStats::toJson() const {
  return {{"requests", requests},
          {"failed_requests", failedRequests},
          {"prompt_tokens", promptTokens},
          {"completion_tokens", completionTokens},
          {"tokens", promptTokens + completionTokens},
          {"replies", replies},
          {"valid", valid},
          {"valid_rate", validRate()},
          {"shape_repaired", shapeRepaired},
          {"eager_repaired", eagerRepaired},
          {"tested", tested},
          {"new_features", newFeatures},
          {"findings", findings},
          {"new_signatures", newSignatures},
          {"features_found", featuresFound},
          {"cpu_s", cpuSeconds},
          {"request_s", requestSeconds},
          {"rejections", rejections}};
}

ReplyLog::ReplyLog(fs::path file, SecretRedactor secrets, const gen::PromptBook& book)
    : file_(std::move(file)), secrets_(std::move(secrets)) {
  for (const auto& s : book.strategies()) {
    stats_[s.name];
    if (s.repair) repairStrategies_.insert(s.name);
  }
}

void ReplyLog::append(int64_t id, const std::string& strategy, const std::string& target, const std::string& reply,
                      const std::string& outcome, const std::string& detail) {
  json line{{"id", id},
            {"time", std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()},
            {"strategy", strategy},
            {"target", target},
            {"outcome", outcome},
            {"detail", detail.substr(0, 500)},
            {"reply", reply.substr(0, 4000)}};
  std::lock_guard lock(fileMutex_);
  std::ofstream out(file_, std::ios::app);
  out << secrets_.mask(line.dump(-1, ' ', false, json::error_handler_t::replace))
      << "\n";  // a full disk only loses this log line
}

void ReplyLog::countRequest(const std::string& strategy) {
  std::lock_guard lock(mutex_);
  stats_[strategy].requests++;
}

void ReplyLog::countAnswered(const std::string& strategy, double cpuSeconds, double wallSeconds, int64_t promptTokens,
                             int64_t completionTokens) {
  std::lock_guard lock(mutex_);
  auto& st = stats_[strategy];
  st.cpuSeconds += cpuSeconds;
  st.requestSeconds += wallSeconds;
  st.promptTokens += promptTokens;
  st.completionTokens += completionTokens;
}

void ReplyLog::countFailed(const std::string& strategy, double cpuSeconds, double wallSeconds, bool cancelled) {
  std::lock_guard lock(mutex_);
  auto& st = stats_[strategy];
  st.cpuSeconds += cpuSeconds;
  st.requestSeconds += wallSeconds;
  st.failedRequests++;
  st.rejections[cancelled ? "cancelled" : "request_failed"]++;
}

void ReplyLog::countReply(const std::string& strategy) {
  std::lock_guard lock(mutex_);
  stats_[strategy].replies++;
}

void ReplyLog::addCpu(const std::string& strategy, double seconds) {
  std::lock_guard lock(mutex_);
  stats_[strategy].cpuSeconds += seconds;
}

void ReplyLog::countValid(const std::string& strategy, bool shapeRepaired, bool eagerRepaired) {
  std::lock_guard lock(mutex_);
  auto& st = stats_[strategy];
  st.valid++;
  if (shapeRepaired) st.shapeRepaired++;
  if (eagerRepaired) st.eagerRepaired++;
}

void ReplyLog::reject(const std::string& strategy, const std::string& reason, const std::string& detail) {
  std::lock_guard lock(mutex_);
  stats_[strategy].rejections[reasonKey(reason)]++;
  lastRejection_[std::this_thread::get_id()] = detail.empty() ? reason : reason + ": " + detail;
}

std::string ReplyLog::takeRejection() {
  std::lock_guard lock(mutex_);
  std::string rejection;
  std::swap(rejection, lastRejection_[std::this_thread::get_id()]);
  return rejection;
}

void ReplyLog::countTesting(const std::string& strategy, bool tested, int newFeatures, int findings, bool newSignature) {
  std::lock_guard lock(mutex_);
  auto& st = stats_[strategy];
  if (tested) st.tested++;
  if (newFeatures > 0) st.newFeatures++;
  st.featuresFound += std::max(0, newFeatures);
  st.findings += findings;
  if (newSignature) st.newSignatures++;
}

json ReplyLog::toJson() const {
  std::lock_guard lock(mutex_);
  json out = json::object();
  LlmStrategyStats all;
  for (const auto& [name, st] : stats_) {
    out["strategies"][name] = st.toJson();
    all.requests += st.requests;
    all.failedRequests += st.failedRequests;
    all.promptTokens += st.promptTokens;
    all.completionTokens += st.completionTokens;
    for (const auto& [r, n] : st.rejections) all.rejections[r] += n;
    if (repairStrategies_.count(name)) continue;  // repair replies finish another strategy's proposal
    all.replies += st.replies;
    all.valid += st.valid;
    all.shapeRepaired += st.shapeRepaired;
    all.eagerRepaired += st.eagerRepaired;
    all.tested += st.tested;
    all.newFeatures += st.newFeatures;
    all.findings += st.findings;
    all.newSignatures += st.newSignatures;
    all.featuresFound += st.featuresFound;
  }
  for (const auto& [name, st] : stats_) {  // repair rounds cost CPU on behalf of the strategies they finish
    all.cpuSeconds += st.cpuSeconds;
    all.requestSeconds += st.requestSeconds;
  }
  out["all"] = all.toJson();
  return out;
}

}  // namespace tcfuzz
