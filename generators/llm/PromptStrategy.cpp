#include "generators/llm/PromptStrategy.h"

#include <algorithm>
#include <random>
#include <set>

#include <fmt/format.h>

#include "DefaultPrompts.inc"

namespace tcfuzz::gen {

using nlohmann::json;

namespace {

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument("LLM prompt strategies: " + what); }

/// The {names} used in `text` (brace groups holding an identifier).
std::vector<std::string> fillNamesIn(const std::string& text) {
  std::vector<std::string> found;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '{') continue;
    size_t j = i + 1;
    while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
    if (j < text.size() && text[j] == '}' && j > i + 1) found.push_back(text.substr(i + 1, j - i - 1));
  }
  return found;
}

std::string stringAt(const json& obj, const std::string& key, const std::string& where) {
  if (!obj.contains(key) || !obj[key].is_string()) bad(fmt::format("{} needs a string '{}'", where, key));
  return obj[key].get<std::string>();
}

}  // namespace

const std::vector<std::string>& promptFillNames() {
  static const std::vector<std::string> names{"op_names",    "op_calls",    "program_json",   "program_python",
                                              "target_name", "target_kind", "target_trigger", "error",
                                              "example_json", "example_python", "few_shot"};
  return names;
}

std::string renderPrompt(const std::string& text, const std::map<std::string, std::string>& fills) {
  const auto& known = promptFillNames();
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '{') {
      size_t j = i + 1;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
      if (j < text.size() && text[j] == '}' && j > i + 1) {
        std::string name = text.substr(i + 1, j - i - 1);
        if (std::find(known.begin(), known.end(), name) != known.end()) {
          auto it = fills.find(name);
          if (it == fills.end()) throw std::invalid_argument("prompt fill name {" + name + "} has no value");
          out += it->second;
          i = j;
          continue;
        }
      }
    }
    out += text[i];
  }
  return out;
}

std::string opCallHint(const OpSpec& op) {
  std::string spelling = op.python;
  if (spelling.starts_with("stmt:")) {
    spelling = spelling.substr(5);
    if (auto nl = spelling.find('\n'); nl != std::string::npos) spelling = spelling.substr(nl + 1);
    if (auto eq = spelling.find(" = "); eq != std::string::npos && spelling.starts_with("{out0}"))
      spelling = spelling.substr(eq + 3);
  }
  if (op.init.starts_with("buffer:")) {  // the buffer's update, with the buffer called self.buf
    spelling = op.python.substr(5, op.python.find('\n') - 5);
    for (size_t at; (at = spelling.find("{self}")) != std::string::npos;) spelling.replace(at, 6, "self.buf");
  }
  if (spelling.find("{self}") != std::string::npos && !op.init.empty())
    return op.init.substr(0, op.init.find('(')) + "(...)";
  static const char* operand[] = {"x", "y", "z"};
  std::string out;
  for (size_t i = 0; i < spelling.size(); ++i) {
    if (spelling[i] != '{') {
      out += spelling[i];
      continue;
    }
    size_t j = spelling.find('}', i);
    if (j == std::string::npos) break;
    std::string key = spelling.substr(i + 1, j - i - 1);
    if (key.size() == 1 && std::isdigit(static_cast<unsigned char>(key[0]))) out += operand[std::min(key[0] - '0', 2)];
    else if (key == "*") out += "x, y";
    else if (key.starts_with("?")) out += ", " + key.substr(1) + "=...";
    else if (key.starts_with("out")) out += "out";
    else out += key;
    i = j;
  }
  return out;
}

PromptBook PromptBook::fromJson(const json& doc, const OpCatalog& catalog) {
  if (!doc.is_object()) bad("the document must be a JSON object");
  for (const auto& [k, v] : doc.items())
    if (k != "comment" && k != "examples" && k != "strategies" && k != "targets") bad("unknown key '" + k + "'");
  PromptBook book;
  const auto& known = promptFillNames();
  if (!doc.contains("examples") || !doc["examples"].is_object()) bad("needs an 'examples' object (json, python)");
  for (const char* form : {"json", "python"}) book.examples_[form] = stringAt(doc["examples"], form, "examples");
  if (!doc.contains("strategies") || !doc["strategies"].is_array() || doc["strategies"].empty())
    bad("needs a non-empty 'strategies' array");
  std::set<std::string> names;
  for (size_t i = 0; i < doc["strategies"].size(); ++i) {
    const json& s = doc["strategies"][i];
    std::string where = fmt::format("strategies[{}]", i);
    if (!s.is_object()) bad(where + " must be an object");
    static const std::set<std::string> keys{"name", "form", "ops", "targeted", "queue", "repair",
                                            "temperature", "max_tokens", "system", "user"};
    for (const auto& [k, v] : s.items())
      if (!keys.count(k)) bad(fmt::format("{} has unknown key '{}'", where, k));
    PromptStrategy p;
    p.name = stringAt(s, "name", where);
    if (!names.insert(p.name).second) bad("strategy '" + p.name + "' appears twice");
    p.form = stringAt(s, "form", where);
    if (p.form != "json" && p.form != "python") bad(where + ".form must be \"json\" or \"python\"");
    p.system = stringAt(s, "system", where);
    p.user = stringAt(s, "user", where);
    for (const auto& text : {p.system, p.user})
      for (const auto& ph : fillNamesIn(text))
        if (std::find(known.begin(), known.end(), ph) == known.end())
          bad(fmt::format("{} uses the unknown fill name {{{}}}", where, ph));
    if (s.contains("ops")) {
      const json& ops = s["ops"];
      if (!ops.is_array() || ops.size() != 2 || !ops[0].is_number_integer() || !ops[1].is_number_integer() ||
          ops[0].get<int>() < 0 || ops[1].get<int>() < ops[0].get<int>() || ops[1].get<int>() > 12)
        bad(where + ".ops must be [min, max] with 0 <= min <= max <= 12");
      p.minOps = ops[0].get<int>();
      p.maxOps = ops[1].get<int>();
    }
    p.targeted = s.value("targeted", false);
    p.queue = s.value("queue", false);
    p.repair = s.value("repair", false);
    p.temperature = s.value("temperature", 0.8);
    p.maxTokens = s.value("max_tokens", 512);
    if (p.temperature < 0 || p.temperature > 2) bad(where + ".temperature must lie in [0, 2]");
    if (p.maxTokens < 16 || p.maxTokens > 8192) bad(where + ".max_tokens must lie in [16, 8192]");
    book.strategies_.push_back(std::move(p));
  }
  if (doc.contains("targets")) {
    if (!doc["targets"].is_array()) bad("'targets' must be an array");
    for (size_t i = 0; i < doc["targets"].size(); ++i) {
      const json& t = doc["targets"][i];
      std::string where = fmt::format("targets[{}]", i);
      OptimizationTarget target{stringAt(t, "name", where), stringAt(t, "kind", where), stringAt(t, "trigger", where),
                                {}};
      if (!t.contains("ops") || !t["ops"].is_array() || t["ops"].empty()) bad(where + " needs a non-empty 'ops' array");
      for (const auto& op : t["ops"]) {
        if (!op.is_string() || !catalog.find(op.get<std::string>()))
          bad(fmt::format("{} names {}, which is not a catalog op", where, op.dump()));
        target.ops.push_back(op.get<std::string>());
      }
      book.targets_.push_back(std::move(target));
    }
  }
  bool drawable = false;
  for (const auto& s : book.strategies_) {
    if (s.targeted && book.targets_.empty()) bad("strategy '" + s.name + "' is targeted but there are no targets");
    drawable = drawable || !s.repair;
  }
  if (!drawable) bad("every strategy is a repair strategy: the bandit has nothing to draw");
  return book;
}

PromptBook PromptBook::builtIn(const OpCatalog& catalog) { return fromJson(json::parse(kDefaultPrompts), catalog); }

const PromptStrategy& PromptBook::strategy(const std::string& name) const {
  for (const auto& s : strategies_)
    if (s.name == name) return s;
  throw std::out_of_range("no LLM prompt strategy named '" + name + "'");
}

const PromptStrategy* PromptBook::repairStrategy(const std::string& form) const {
  for (const auto& s : strategies_)
    if (s.repair && s.form == form) return &s;
  return nullptr;
}

// --- ThompsonBandit ------------------------------------------------------------------------------

ThompsonBandit::ThompsonBandit(std::vector<std::string> arms, uint64_t seed) : rng_(seed) {
  if (arms.empty()) throw std::invalid_argument("ThompsonBandit needs at least one arm");
  for (auto& a : arms) arms_.push_back({std::move(a)});
}

size_t ThompsonBandit::pick(const std::vector<bool>& drawable) {
  bool any = std::find(drawable.begin(), drawable.end(), true) != drawable.end();
  size_t best = 0;
  double bestSample = -1;
  for (size_t i = 0; i < arms_.size(); ++i) {
    // Beta(a, b) = X / (X + Y) with X ~ Gamma(a), Y ~ Gamma(b).
    double x = std::gamma_distribution<double>(arms_[i].alpha, 1.0)(rng_.engine());
    double y = std::gamma_distribution<double>(arms_[i].beta, 1.0)(rng_.engine());
    double sample = x + y > 0 ? x / (x + y) : 0.5;
    bool allowed = !any || (i < drawable.size() && drawable[i]);
    if (allowed && sample > bestSample) {
      bestSample = sample;
      best = i;
    }
  }
  arms_[best].pulls++;
  return best;
}

void ThompsonBandit::reward(size_t arm, double r, double weight) {
  r = std::clamp(r, 0.0, 1.0);
  weight = std::max(0.0, weight);
  arms_.at(arm).alpha += weight * r;
  arms_.at(arm).beta += weight * (1 - r);
}

json ThompsonBandit::toJson() const {
  json out = json::object();
  for (const auto& a : arms_)
    out[a.name] = {{"pulls", a.pulls}, {"alpha", a.alpha}, {"beta", a.beta}, {"mean", a.alpha / (a.alpha + a.beta)}};
  return out;
}

}  // namespace tcfuzz::gen
