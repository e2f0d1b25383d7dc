#include "generators/llm/PythonLift.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tcfuzz::gen {
namespace {

using nlohmann::json;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool isIdentifier(std::string_view s, bool dotted) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s.front())) || s.front() == '.' || s.back() == '.')
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (dotted && c == '.'))) return false;
  return true;
}

/// The index of the bracket closing the one at `open` (quotes respected), or npos.
size_t closingBracket(std::string_view s, size_t open) {
  std::vector<char> stack;
  char quote = 0;
  for (size_t i = open; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') quote = c;
    else if (c == '(') stack.push_back(')');
    else if (c == '[') stack.push_back(']');
    else if (c == '{') stack.push_back('}');
    else if (c == ')' || c == ']' || c == '}') {
      if (stack.empty() || stack.back() != c) return std::string_view::npos;
      stack.pop_back();
      if (stack.empty()) return i;
    }
  }
  return std::string_view::npos;
}

/// The comma-separated parts of an argument list, split at the top level only; nullopt if unbalanced.
std::optional<std::vector<std::string_view>> splitArguments(std::string_view s) {
  std::vector<std::string_view> parts;
  if (trim(s).empty()) return parts;
  size_t start = 0;
  int depth = 0;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      if (--depth < 0) return std::nullopt;
    } else if (c == ',' && depth == 0) {
      parts.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (depth != 0 || quote) return std::nullopt;
  parts.push_back(trim(s.substr(start)));
  for (auto p : parts)
    if (p.empty()) return std::nullopt;
  return parts;
}

std::string_view kindName(AttrKind kind) {
  switch (kind) {
    case AttrKind::Int: return "int";
    case AttrKind::IntList: return "int_list";
    case AttrKind::Float: return "float";
    case AttrKind::Bool: return "bool";
    case AttrKind::Choice: return "choice";
    case AttrKind::DType: return "dtype";
  }
  return "int";
}

const AttrSpec* findAttr(const OpSpec& op, std::string_view name) {
  for (const auto& a : op.attrs)
    if (a.name == name) return &a;
  return nullptr;
}

json attrSlot(const AttrSpec& spec, bool optional) {
  json slot{{"attr", spec.name}, {"kind", kindName(spec.kind)}};
  if ((spec.kind == AttrKind::Choice || spec.kind == AttrKind::DType) && !spec.choices.empty())
    slot["choices"] = spec.choices;
  if (optional || spec.optional) slot["optional"] = true;
  return slot;
}

/// A quoted Python string literal without its quotes; nullopt for anything else.
std::optional<std::string> stringLiteral(std::string_view s) {
  if (s.size() < 2 || (s.front() != '\'' && s.front() != '"') || s.back() != s.front()) return std::nullopt;
  std::string_view inner = s.substr(1, s.size() - 2);
  if (inner.find(s.front()) != std::string_view::npos || inner.find('\\') != std::string_view::npos)
    return std::nullopt;
  return std::string(inner);
}

/// True, False, None, an integer, a float or a quoted string as JSON; nullopt for anything else.
std::optional<json> literal(std::string_view s) {
  if (s == "True") return json(true);
  if (s == "False") return json(false);
  if (s == "None") return json(nullptr);
  if (auto str = stringLiteral(s)) return json(*str);
  if (s.empty()) return std::nullopt;
  json number = json::parse(s, nullptr, /*allow_exceptions=*/false);
  if (number.is_number()) return number;
  return std::nullopt;
}

/// The inputs and attributes a spelling refers to, and which attributes it marks optional.
struct SpellingContext {
  const OpSpec& op;
  std::set<std::string> optionalAttrs;
};

/// One argument of a spelling as a slot (see PythonLift.h); nullopt when it is not one we can match.
std::optional<json> parseSlot(std::string_view text, const SpellingContext& ctx) {
  text = trim(text);
  if (text == "{*}" || text == "[{*}]") return json{{"inputs", "*"}};
  if (text.size() >= 3 && text.front() == '{' && text.back() == '}') {
    std::string_view inner = text.substr(1, text.size() - 2);
    if (!inner.empty() && std::all_of(inner.begin(), inner.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      int k = std::stoi(std::string(inner));
      if (k >= std::max(ctx.op.maxInputs, 1)) return std::nullopt;
      return json{{"input", k}};
    }
    const AttrSpec* spec = findAttr(ctx.op, inner);
    if (!spec) return std::nullopt;
    return attrSlot(*spec, ctx.optionalAttrs.count(spec->name) > 0);
  }
  // ('none', 'mean', 'sum')[{reduction}]: the attribute indexes a tuple of strings.
  if (text.front() == '(') {
    size_t close = closingBracket(text, 0);
    if (close == std::string_view::npos) return std::nullopt;
    std::string_view rest = text.substr(close + 1);
    if (rest.size() < 4 || rest.front() != '[' || rest.back() != ']') return std::nullopt;
    auto index = parseSlot(rest.substr(1, rest.size() - 2), ctx);
    if (!index || !index->contains("attr") || (*index)["kind"] != "int") return std::nullopt;
    auto items = splitArguments(text.substr(1, close - 1));
    if (!items || items->empty()) return std::nullopt;
    json choices = json::array();
    for (auto item : *items) {
      auto s = stringLiteral(item);
      if (!s) return std::nullopt;
      choices.push_back(*s);
    }
    (*index)["choices_index"] = choices;
    return index;
  }
  if (auto value = literal(text)) return json{{"literal", *value}};
  return std::nullopt;
}

/// Fills entry["args"] and entry["kwargs"] from an argument list; false when an argument is not a slot.
bool parseArguments(std::string_view text, const SpellingContext& ctx, json& entry) {
  auto parts = splitArguments(text);
  if (!parts) return false;
  for (std::string_view part : *parts) {
    size_t eq = part.find('=');
    bool keyword = eq != std::string_view::npos && isIdentifier(trim(part.substr(0, eq)), false) &&
                   (eq + 1 >= part.size() || part[eq + 1] != '=');
    if (keyword) {
      std::string name(trim(part.substr(0, eq)));
      if (entry["kwargs"].contains(name)) return false;
      auto slot = parseSlot(part.substr(eq + 1), ctx);
      if (!slot) return false;
      entry["kwargs"][name] = *slot;
    } else {
      if (!entry["kwargs"].empty()) return false;  // a positional argument after a keyword one
      auto slot = parseSlot(part, ctx);
      if (!slot) return false;
      entry["args"].push_back(*slot);
    }
  }
  return true;
}

/// "name(args)" spanning all of `text`: {name, args}; nullopt otherwise.
std::optional<std::pair<std::string_view, std::string_view>> splitCall(std::string_view text) {
  size_t open = text.find('(');
  if (open == std::string_view::npos || closingBracket(text, open) != text.size() - 1) return std::nullopt;
  return std::pair{text.substr(0, open), text.substr(open + 1, text.size() - open - 2)};
}

std::optional<std::string> operatorDunder(std::string_view op, bool reflected) {
  static const std::pair<std::string_view, std::string_view> kOperators[] = {
      {"+", "add"}, {"-", "sub"}, {"*", "mul"}, {"/", "truediv"}, {"**", "pow"}};
  for (auto [symbol, name] : kOperators)
    if (symbol == op) return std::string("torch.Tensor.__") + (reflected ? "r" : "") + std::string(name) + "__";
  return std::nullopt;
}

/// "{a} OP {b}" with one of the operators above: the entry, or nullopt.
std::optional<json> parseOperator(std::string_view text, const SpellingContext& ctx, json entry) {
  auto parts = std::vector<std::string_view>{};
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i)
    if (i == text.size() || text[i] == ' ') {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  if (parts.size() != 3) return std::nullopt;
  auto lhs = parseSlot(parts[0], ctx), rhs = parseSlot(parts[2], ctx);
  if (!lhs || !rhs) return std::nullopt;
  bool lhsInput0 = lhs->value("input", -1) == 0;
  bool rhsInput0 = rhs->value("input", -1) == 0;
  if (lhsInput0 && (rhs->contains("input") || rhs->contains("attr"))) {
    auto callee = operatorDunder(parts[1], false);
    if (!callee) return std::nullopt;
    entry["callee"] = *callee;
    entry["args"] = json::array({*lhs, *rhs});
    return entry;
  }
  if (rhsInput0 && lhs->contains("attr")) {  // {value} - {0}: Python calls x.__rsub__(value)
    auto callee = operatorDunder(parts[1], true);
    if (!callee) return std::nullopt;
    entry["callee"] = *callee;
    entry["args"] = json::array({*rhs, *lhs});
    return entry;
  }
  return std::nullopt;
}

}  // namespace

std::optional<nlohmann::json> liftEntry(const OpSpec& op) {
  std::string spelling = op.python;
  if (!op.init.empty() || spelling.rfind("stmt:", 0) == 0 || spelling.find("{self}") != std::string::npos)
    return std::nullopt;
  SpellingContext ctx{op, {}};
  // {?name} is ", name=<value>" unless the attribute is null: an optional keyword argument.
  for (size_t at = spelling.find("{?"); at != std::string::npos; at = spelling.find("{?")) {
    size_t close = spelling.find('}', at);
    if (close == std::string::npos) return std::nullopt;
    std::string name = spelling.substr(at + 2, close - at - 2);
    ctx.optionalAttrs.insert(name);
    spelling.replace(at, close - at + 1, ", " + name + "={" + name + "}");
  }
  std::string_view text = trim(spelling);
  constexpr std::string_view kValues = ".values";  // torch.median(...).values: the node reads output 0
  if (text.size() > kValues.size() && text.substr(text.size() - kValues.size()) == kValues)
    text.remove_suffix(kValues.size());

  json entry{{"op", op.name}, {"args", json::array()}, {"kwargs", json::object()},
             {"rank", json::array({op.minRank, op.maxRank})}};
  constexpr std::string_view kReceiver = "{0}.";
  if (text.substr(0, kReceiver.size()) == kReceiver) {
    std::string_view method = text.substr(kReceiver.size());
    constexpr std::string_view kContiguous = "contiguous().";  // {0}.contiguous().view(...) is a view
    if (method.substr(0, kContiguous.size()) == kContiguous) method.remove_prefix(kContiguous.size());
    auto call = splitCall(method);
    if (!call || !isIdentifier(call->first, false)) return std::nullopt;
    entry["callee"] = "torch.Tensor." + std::string(call->first);
    entry["args"].push_back({{"input", 0}});
    if (!parseArguments(call->second, ctx, entry)) return std::nullopt;
    return entry;
  }
  if (auto call = splitCall(text); call && isIdentifier(call->first, true)) {
    std::string_view callee = call->first;
    if (callee.substr(0, 6) != "torch." && callee.substr(0, 2) != "F.") return std::nullopt;
    entry["callee"] = std::string(callee);
    if (!parseArguments(call->second, ctx, entry)) return std::nullopt;
    return entry;
  }
  return parseOperator(text, ctx, entry);
}

nlohmann::json liftTable(const OpCatalog& catalog) {
  json table = json::array();
  for (const auto& op : catalog.ops())
    if (auto entry = liftEntry(*op)) table.push_back(std::move(*entry));
  return table;
}

}  // namespace tcfuzz::gen
