#include "fuzzer/campaign/OriginLedger.h"

#include <fmt/format.h>

namespace tcfuzz {

using nlohmann::json;

std::string OriginLedger::keyOf(const std::string& programOrigin) {
  std::string kind = programOrigin.substr(0, programOrigin.find(':'));
  if (kind == "mutation" || kind == "grammar") return kind;
  return programOrigin;  // "llm:<strategy>"
}

void OriginLedger::record(const std::string& origin, double cpuSeconds, int newFeatures, int newSignatures, int nodes,
                          int deadNodes) {
  Tally& t = tallies_[keyOf(origin)];
  t.programs++;
  t.nodes += nodes;
  t.deadNodes += deadNodes;
  t.testSeconds += cpuSeconds;
  t.newFeatures += newFeatures;
  t.newSignatures += newSignatures;
}

void OriginLedger::setLlmCpu(const std::map<std::string, double>& cpuByStrategy) {
  for (auto& [key, t] : tallies_) t.llmSeconds = 0;
  for (const auto& [strategy, seconds] : cpuByStrategy)
    if (seconds > 0) tallies_["llm:" + strategy].llmSeconds = seconds;
}

double OriginLedger::rate() const {
  double cpu = 0, yield = 0;
  for (const auto& [key, t] : tallies_) {
    cpu += t.cpu();
    yield += static_cast<double>(t.newFeatures) + kSignatureWorth * static_cast<double>(t.newSignatures);
  }
  return cpu > 0 ? yield / cpu : 0;
}

json OriginLedger::toJson() const {
  json out = json::object();
  double all = 0, llm = 0;
  for (const auto& [key, t] : tallies_) {
    double cpu = t.cpu();
    all += cpu;
    llm += t.llmSeconds;
    double yield = static_cast<double>(t.newFeatures) + kSignatureWorth * static_cast<double>(t.newSignatures);
    out["origins"][key] = {{"programs", t.programs},
                           {"mean_nodes", t.programs > 0 ? static_cast<double>(t.nodes) / static_cast<double>(t.programs) : 0.0},
                           {"dead_nodes", t.deadNodes},
                           {"cpu_s", cpu},
                           {"llm_cpu_s", t.llmSeconds},
                           {"new_features", t.newFeatures},
                           {"new_signatures", t.newSignatures},
                           {"features_per_cpu_s", cpu > 0 ? static_cast<double>(t.newFeatures) / cpu : 0.0},
                           {"signatures_per_cpu_hour", cpu > 0 ? 3600.0 * static_cast<double>(t.newSignatures) / cpu : 0.0},
                           {"yield_per_cpu_s", cpu > 0 ? yield / cpu : 0.0}};
  }
  out["llm_cpu_share"] = all > 0 ? llm / all : 0.0;
  out["yield_per_cpu_s"] = rate();
  return out;
}

std::vector<std::pair<std::string, std::string>> OriginLedger::statsLines() const {
  json j = toJson();
  std::vector<std::pair<std::string, std::string>> kv;
  if (j.contains("origins"))
    for (const auto& [key, o] : j["origins"].items()) {
      std::string k = key;
      for (char& c : k)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      kv.emplace_back(fmt::format("{}_{}_programs", prefix_, k), std::to_string(o["programs"].get<int64_t>()));
      kv.emplace_back(fmt::format("{}_{}_mean_nodes", prefix_, k), fmt::format("{:.2f}", o["mean_nodes"].get<double>()));
      kv.emplace_back(fmt::format("{}_{}_dead_nodes", prefix_, k), std::to_string(o["dead_nodes"].get<int64_t>()));
      kv.emplace_back(fmt::format("{}_{}_cpu_s", prefix_, k), fmt::format("{:.1f}", o["cpu_s"].get<double>()));
      kv.emplace_back(fmt::format("{}_{}_new_features", prefix_, k), std::to_string(o["new_features"].get<int64_t>()));
      kv.emplace_back(fmt::format("{}_{}_new_signatures", prefix_, k), std::to_string(o["new_signatures"].get<int64_t>()));
      kv.emplace_back(fmt::format("{}_{}_features_per_cpu_s", prefix_, k), fmt::format("{:.4f}", o["features_per_cpu_s"].get<double>()));
      kv.emplace_back(fmt::format("{}_{}_signatures_per_cpu_hour", prefix_, k),
                      fmt::format("{:.2f}", o["signatures_per_cpu_hour"].get<double>()));
    }
  if (prefix_ != "origin") return kv;
  kv.emplace_back("llm_cpu_share", fmt::format("{:.3f}", j["llm_cpu_share"].get<double>()));
  kv.emplace_back("yield_per_cpu_s", fmt::format("{:.4f}", j["yield_per_cpu_s"].get<double>()));
  return kv;
}

}  // namespace tcfuzz
