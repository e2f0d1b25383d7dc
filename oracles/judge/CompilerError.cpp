#include "oracles/judge/CompilerError.h"

#include <array>
#include <cctype>

namespace tcfuzz::oracles {

namespace {

constexpr size_t kMaxErrorBytes = 240;

/// Bases of the names Inductor numbers in generated C++: a number after one of them is masked.
constexpr std::array<std::string_view, 14> kNumberedBases = {
    "tmp", "buf", "in_out_ptr", "in_ptr", "out_ptr", "ks", "x", "y", "r", "xindex", "rindex", "arg", "var", "acc"};

bool identStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool identChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

/// `name` without the number a generated name carries ("tmp12" -> "tmp"); other names as they are.
std::string_view denumbered(std::string_view name) {
  size_t end = name.size();
  while (end > 0 && digit(name[end - 1])) --end;
  if (end == name.size() || end == 0) return name;
  std::string_view base = name.substr(0, end);
  for (std::string_view b : kNumberedBases)
    if (base == b) return base;
  return name;
}

/// The text between "error: " and the end of its line, when `line` is a compiler error diagnostic.
std::optional<std::string_view> errorText(std::string_view line) {
  for (std::string_view marker : {std::string_view(": fatal error: "), std::string_view(": error: ")})
    if (size_t at = line.find(marker); at != std::string_view::npos) return line.substr(at + marker.size());
  for (std::string_view marker : {std::string_view("fatal error: "), std::string_view("error: ")})
    if (line.substr(0, marker.size()) == marker) return line.substr(marker.size());
  return std::nullopt;
}

}  // namespace

std::string normalizeCompilerError(std::string_view text) {
  std::string s;  // typographic quotes (UTF-8) as ASCII ones
  for (size_t i = 0; i < text.size(); ++i) {
    std::string_view rest = text.substr(i);
    if (rest.starts_with("\u2018") || rest.starts_with("\u2019")) {
      s += '\'';
      i += 2;
    } else if (rest.starts_with("\u201c") || rest.starts_with("\u201d")) {
      s += '"';
      i += 2;
    } else {
      s += text[i];
    }
  }
  if (size_t hint = s.find("; did you mean"); hint != std::string::npos) s.erase(hint);

  std::string out;
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    if (c == '<') {  // a template argument list, nested ones included; a lone '<' (an operator) stays
      int depth = 0;
      size_t j = i;
      for (; j < s.size(); ++j) {
        if (s[j] == '<') ++depth;
        else if (s[j] == '>' && --depth == 0) break;
        else if (s[j] == ';' || s[j] == '\'' || s[j] == '"') break;
      }
      if (j < s.size() && s[j] == '>' && depth == 0 && j > i + 1) {
        out += "<T>";
        i = j + 1;
        continue;
      }
      out += c;
      ++i;
    } else if (identStart(c)) {
      size_t j = i;
      while (j < s.size() && identChar(s[j])) ++j;
      out += denumbered(std::string_view(s).substr(i, j - i));
      i = j;
    } else if (digit(c)) {
      size_t j = i;
      while (j < s.size() && (identChar(s[j]) || s[j] == '.')) ++j;  // 4L 0x1f 2.5f 1e-3 as one number
      out += 'N';
      i = j;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
      ++i;
    } else {
      out += c;
      ++i;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.size() > kMaxErrorBytes) {
    size_t cut = kMaxErrorBytes;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
    out.resize(cut);
  }
  return out;
}

std::optional<std::string> firstCompilerError(std::string_view message) {
  for (size_t at = 0; at < message.size();) {
    size_t nl = message.find('\n', at);
    std::string_view line = message.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
    if (auto text = errorText(line)) return "error: " + normalizeCompilerError(*text);
    if (nl == std::string_view::npos) break;
    at = nl + 1;
  }
  return std::nullopt;
}

std::optional<LoweringFailure> loweringFailure(std::string_view message) {
  size_t at = 0;
  while (at < message.size()) {
    size_t end = message.find('\n', at);
    if (end == std::string_view::npos) end = message.size();
    std::string_view line = message.substr(at, end - at);
    size_t first = line.find_first_not_of(" \t");
    if (first != std::string_view::npos && line.substr(first).rfind("target: ", 0) == 0) {
      std::string_view target = line.substr(first + 8);
      target = target.substr(0, target.find_first_of(" \t\r"));
      if (target.empty()) return std::nullopt;
      return LoweringFailure{std::string(message.substr(0, at)), std::string(target)};
    }
    at = end + 1;
  }
  return std::nullopt;
}

}  // namespace tcfuzz::oracles
