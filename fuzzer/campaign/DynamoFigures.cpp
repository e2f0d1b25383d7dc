#include "fuzzer/campaign/DynamoFigures.h"

#include <algorithm>
#include <regex>
#include <string_view>

#include <fmt/format.h>

#include "oracles/judge/Signature.h"

namespace tcfuzz {

namespace {

/// A kind and the phrases of a reason that name it; the first row whose phrase the text holds wins.
struct KindRule {
  std::string_view kind;
  std::vector<std::string_view> phrases;
};

const std::vector<KindRule>& breakRules() {
  static const std::vector<KindRule> rules = {
      {"graph_break_call", {"torch._dynamo.graph_break()"}},
      {"item", {"Tensor.item()", ".item()"}},
      {"tolist", {"tolist()"}},
      {"dynamic_shape_op", {"Dynamic shape operator", "data-dependent output shape"}},
      {"data_dependent_branch", {"Data-dependent branching", "data dependent", "generic_jump"}},
      {"builtin", {"builtin"}},
      {"hook", {"hook"}},
      {"class_definition", {"__build_class__"}},  // a class statement in forward
      {"unsupported_call", {"Unsupported", "unsupported", "Failed to trace"}},
  };
  return rules;
}

const std::vector<KindRule>& guardRules() {
  static const std::vector<KindRule> rules = {
      {"size", {"size mismatch"}},
      {"stride", {"stride mismatch"}},
      {"dtype", {"dtype mismatch"}},
      {"requires_grad", {"requires_grad mismatch"}},
      {"device", {"device mismatch"}},
      {"dispatch_keys", {"dispatch key set mismatch"}},
      {"global_state", {"GLOBAL_STATE", "grad_mode", "autocast"}},
      {"object_identity", {"___check_obj_id", " is "}},
      {"training_mode", {".training"}},
      {"class_attribute", {"__dict__"}},  // before "type": Dynamo reads a class attribute as dict(type(obj).__dict__)
      {"type", {"___check_type_id", "type("}},
      {"global_value", {"G['"}},
      {"length", {"len("}},
      {"value", {"==", "!=", "<", ">"}},
  };
  return rules;
}

std::string kindOf(const std::vector<KindRule>& rules, std::string_view text) {
  for (const auto& r : rules)
    for (auto phrase : r.phrases)
      if (text.find(phrase) != std::string_view::npos) return std::string(r.kind);
  return "other";
}

std::vector<std::string> kindsOf(const std::vector<KindRule>& rules) {
  std::vector<std::string> out;
  for (const auto& r : rules) out.emplace_back(r.kind);
  out.emplace_back("other");
  return out;
}

/// The `limit` most counted reasons, "reason ×n; ...", most first ("none" when empty).
std::string topReasons(const std::map<std::string, int64_t>& counts, size_t limit) {
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (size_t i = 0; i < sorted.size() && i < limit; ++i)
    out += fmt::format("{}{} x{}", out.empty() ? "" : "; ", sorted[i].first, sorted[i].second);
  return out.empty() ? "none" : out;
}

std::string share(int64_t part, int64_t whole) {
  return fmt::format("{} ({:.1f}%)", part, whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
}

}  // namespace

std::string reasonTitle(const std::string& reason) {
  // The user line and file Dynamo quotes after '#' differ per program: the guard is what precedes them.
  std::string first = oracles::guardOfFailure(std::string_view(reason).substr(0, reason.find('\n')));
  first = std::regex_replace(first, std::regex(R"(\s+)"), " ");
  return first.substr(0, 100);
}

std::string graphBreakKindOf(const std::string& reason) { return kindOf(breakRules(), reasonTitle(reason)); }

std::string guardKindOf(const std::string& failure) { return kindOf(guardRules(), reasonTitle(failure)); }

void DynamoFigures::add(const oracles::CompileFacts* facts) {
  ++programs_;
  if (!facts) return;
  if (facts->graphBreaks > 0) ++withBreaks_;
  if (facts->recompiles > 0) ++withRecompiles_;
  breaks_ += facts->graphBreaks;
  recompiles_ += facts->recompiles;
  for (const auto& [reason, n] : facts->breakReasons) {
    breakKinds_[graphBreakKindOf(reason)] += n;
    breakReasons_[reasonTitle(reason)] += n;
  }
  for (const auto& [failure, n] : facts->recompileReasons) {
    guardKinds_[guardKindOf(failure)] += n;
    recompileReasons_[reasonTitle(failure)] += n;
  }
}

std::vector<std::pair<std::string, std::string>> DynamoFigures::statsLines() const {
  std::vector<std::pair<std::string, std::string>> out;
  auto countOf = [](const std::map<std::string, int64_t>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? int64_t{0} : it->second;
  };
  out.emplace_back("programs_with_graph_breaks", share(withBreaks_, programs_));
  out.emplace_back("graph_breaks", std::to_string(breaks_));
  for (const auto& kind : kindsOf(breakRules()))
    out.emplace_back("graph_breaks_" + kind, std::to_string(countOf(breakKinds_, kind)));
  out.emplace_back("graph_break_reasons_top", topReasons(breakReasons_, 5));
  out.emplace_back("programs_with_recompiles", share(withRecompiles_, programs_));
  out.emplace_back("recompiles", std::to_string(recompiles_));
  for (const auto& kind : kindsOf(guardRules()))
    out.emplace_back("recompiles_guard_" + kind, std::to_string(countOf(guardKinds_, kind)));
  out.emplace_back("recompile_guards_top", topReasons(recompileReasons_, 5));
  return out;
}

}  // namespace tcfuzz
