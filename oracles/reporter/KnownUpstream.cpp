#include "oracles/reporter/KnownUpstream.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "oracles/reporter/Minimizer.h"

namespace tcfuzz::oracles {
namespace {

using nlohmann::json;

constexpr const char* kTrackerSearch = "https://github.com/pytorch/pytorch/issues?q=";

/// `text` percent-encoded for a URL query (unreserved characters kept, spaces as '+').
std::string urlEncode(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') out += static_cast<char>(c);
    else if (c == ' ') out += '+';
    else out += fmt::format("%{:02X}", c);
  }
  return out;
}

/// Words of a normalized message worth searching for: letters and digits, four or more characters,
/// no placeholder (<path>, <num>, ...), no common English word, at most `limit`, in order, each once.
std::vector<std::string> messageKeywords(const std::string& message, size_t limit) {
  static const std::set<std::string> kCommon = {"this", "that", "with", "from", "have", "been", "were", "when",
                                                "which", "there", "their", "does", "into", "than", "then", "they",
                                                "would", "should", "could", "must", "only", "also", "some", "such"};
  std::vector<std::string> words;
  std::set<std::string> seen(kCommon.begin(), kCommon.end());
  std::string word;
  bool placeholder = false;
  auto flush = [&] {
    if (!placeholder && word.size() >= 4 && seen.insert(word).second && words.size() < limit) words.push_back(word);
    word.clear();
    placeholder = false;
  };
  for (char c : message) {
    if (c == '<') {
      flush();
      placeholder = true;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      word += c;
    } else {
      bool closing = c == '>';
      flush();
      if (closing) placeholder = false;
    }
  }
  flush();
  return words;
}

/// "InductorError(AssertionError)" -> "AssertionError"; "RuntimeError" unchanged.
std::string rootExceptionType(const std::string& type) {
  auto open = type.find('('), close = type.rfind(')');
  if (open != std::string::npos && close != std::string::npos && close > open + 1)
    return type.substr(open + 1, close - open - 1);
  return type;
}

std::string joinWords(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

std::string stringField(const json& j, const char* key, const std::filesystem::path& file, size_t index) {
  if (!j.contains(key) || j[key].is_null()) return "";
  if (!j[key].is_string())
    throw std::runtime_error(fmt::format("{}: issues[{}].{} must be a string", file.string(), index, key));
  return j[key].get<std::string>();
}

}  // namespace

/// The bug's ops as signatures spell them (signatureOpName: an in-place op by its functional name).
std::vector<std::string> bugOps(const BugReport& bug) {
  std::set<std::string> ops;
  for (const std::string& op : bug.signature.ops) ops.insert(signatureOpName(op));
  if (ops.empty() && bug.repro.programIr.is_object())
    if (auto nodes = bug.repro.programIr.find("nodes"); nodes != bug.repro.programIr.end() && nodes->is_array())
      for (const json& node : *nodes)
        if (node.is_object() && node.contains("op") && node["op"].is_string())
          ops.insert(signatureOpName(node["op"].get<std::string>()));
  return {ops.begin(), ops.end()};
}

std::vector<KnownIssue> loadKnownIssues(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error(fmt::format("cannot read the known-issues file {}", file.string()));
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::parse_error& e) {
    throw std::runtime_error(fmt::format("{} is not valid JSON: {}", file.string(), e.what()));
  }
  if (!doc.is_object() || !doc.contains("issues") || !doc["issues"].is_array())
    throw std::runtime_error(fmt::format("{}: expected an object with an \"issues\" array", file.string()));
  std::vector<KnownIssue> known;
  for (size_t i = 0; i < doc["issues"].size(); ++i) {
    const json& entry = doc["issues"][i];
    if (!entry.is_object() || !entry.contains("number") || !entry["number"].is_number_integer())
      throw std::runtime_error(fmt::format("{}: issues[{}] needs an integer \"number\"", file.string(), i));
    KnownIssue k;
    k.issue.number = entry["number"].get<int64_t>();
    k.issue.url = stringField(entry, "url", file, i);
    if (k.issue.url.empty()) k.issue.url = fmt::format("https://github.com/pytorch/pytorch/issues/{}", k.issue.number);
    k.issue.title = stringField(entry, "title", file, i);
    k.issue.state = stringField(entry, "state", file, i);
    const json key = entry.value("key", json::object());
    if (!key.is_object() || key.empty())
      throw std::runtime_error(fmt::format("{}: issues[{}] needs a non-empty \"key\" object", file.string(), i));
    k.symptom = stringField(key, "symptom", file, i);
    k.exceptionType = stringField(key, "exception_type", file, i);
    k.message = stringField(key, "message", file, i);
    k.component = stringField(key, "component", file, i);
    k.bisect = stringField(key, "bisect", file, i);
    if (entry.contains("family")) {
      if (!entry["family"].is_boolean())
        throw std::runtime_error(fmt::format("{}: issues[{}].family must be true or false", file.string(), i));
      k.family = entry["family"].get<bool>();
    }
    if (key.contains("ops")) {
      if (!key["ops"].is_array())
        throw std::runtime_error(fmt::format("{}: issues[{}].key.ops must be an array of op names", file.string(), i));
      for (const json& op : key["ops"]) {
        if (!op.is_string())
          throw std::runtime_error(fmt::format("{}: issues[{}].key.ops must hold strings", file.string(), i));
        k.ops.push_back(op.get<std::string>());
      }
    }
    if (key.contains("backward")) {
      if (!key["backward"].is_boolean())
        throw std::runtime_error(fmt::format("{}: issues[{}].key.backward must be true or false", file.string(), i));
      k.backward = key["backward"].get<bool>();
    }
    known.push_back(std::move(k));
  }
  return known;
}

namespace {

/// Whether `bug` matches every field `k`'s key sets.
bool keyMatches(const KnownIssue& k, const BugReport& bug, const std::vector<std::string>& ops) {
  std::string symptom = bug.repro.verdict.empty() ? bug.signature.symptom : bug.repro.verdict;
  std::string culprit = bug.bisect.ran ? bug.bisect.subsystem + " " + bug.bisect.debugInfo : "";
  if (!k.symptom.empty() && k.symptom != symptom) return false;
  if (!k.exceptionType.empty() && k.exceptionType != bug.signature.exceptionType) return false;
  if (!k.message.empty() && bug.signature.normalizedMessage.find(k.message) == std::string::npos) return false;
  if (!k.component.empty() && bug.component.find(k.component) == std::string::npos) return false;
  if (k.backward && *k.backward != bug.repro.backward) return false;
  if (!k.bisect.empty() && culprit.find(k.bisect) == std::string::npos) return false;
  return std::all_of(k.ops.begin(), k.ops.end(), [&](const std::string& op) {
    return std::find(ops.begin(), ops.end(), signatureOpName(op)) != ops.end();
  });
}

}  // namespace

const KnownIssue* matchKnownIssue(const std::vector<KnownIssue>& known, const BugReport& bug) {
  std::vector<std::string> ops = bugOps(bug);
  for (const KnownIssue& k : known)
    if (!k.family && keyMatches(k, bug, ops)) return &k;
  return nullptr;
}

std::vector<UpstreamIssue> matchKnownFamily(const std::vector<KnownIssue>& known, const BugReport& bug) {
  std::vector<std::string> ops = bugOps(bug);
  std::vector<UpstreamIssue> out;
  for (const KnownIssue& k : known)
    if (k.family && keyMatches(k, bug, ops) &&
        std::none_of(out.begin(), out.end(), [&](const UpstreamIssue& i) { return i.number == k.issue.number; }))
      out.push_back(k.issue);
  return out;
}

std::string trackerSearchUrl(const std::string& terms) { return kTrackerSearch + urlEncode("is:issue " + terms); }

std::vector<std::pair<std::string, std::string>> upstreamSearchQueries(const BugReport& bug) {
  std::vector<std::pair<std::string, std::string>> links;
  std::vector<std::string> ops = bugOps(bug);
  if (ops.size() > 3) ops.resize(3);
  std::string symptom = bug.repro.verdict.empty() ? bug.signature.symptom : bug.repro.verdict;
  std::string type = rootExceptionType(bug.signature.exceptionType);
  if (!ops.empty()) {
    std::string what = symptom == "numeric-divergence" ? "torch.compile" : type.empty() ? "torch.compile" : type;
    links.emplace_back("by ops", joinWords(ops) + " " + what);
  }
  std::vector<std::string> words = messageKeywords(bug.signature.normalizedMessage, 5);
  if (!type.empty() && !words.empty()) links.emplace_back("by message", type + " " + joinWords(words));
  if (bug.repro.compile.inductorConfig.is_object() && !bug.repro.compile.inductorConfig.empty()) {
    std::vector<std::string> keys;
    for (const auto& [key, value] : bug.repro.compile.inductorConfig.items()) keys.push_back(key);
    if (!ops.empty()) keys.insert(keys.begin(), ops.front());
    links.emplace_back("by config", joinWords(keys));
  }
  return links;
}

}  // namespace tcfuzz::oracles
