#include "oracles/reporter/MarkdownText.h"

#include <algorithm>
#include <cmath>
#include <ctime>

#include <fmt/format.h>

namespace tcfuzz::oracles::markdown {
namespace {

/// The largest prefix of at most `limit` bytes that does not split a UTF-8 sequence.
size_t utf8Prefix(std::string_view text, size_t limit) {
  if (text.size() <= limit) return text.size();
  size_t n = limit;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return n;
}

/// The longest run of `c` in `text`.
size_t longestRun(std::string_view text, char c) {
  size_t best = 0, run = 0;
  for (char x : text) {
    run = x == c ? run + 1 : 0;
    best = std::max(best, run);
  }
  return best;
}

}  // namespace

std::string headBounded(std::string_view text, size_t limit) {
  if (text.size() <= limit) return std::string(text);
  size_t n = utf8Prefix(text, limit);
  return fmt::format("{}\n[... cut by tcfuzz: {} of {} bytes shown]", text.substr(0, n), n, text.size());
}

std::string tailBounded(std::string_view text, size_t limit, size_t maxLines) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  size_t start = 0;
  if (maxLines != SIZE_MAX) {
    size_t lines = 0;
    for (size_t i = text.size(); i > 0; --i)
      if (text[i - 1] == '\n' && ++lines == maxLines) {
        start = i;
        break;
      }
  }
  if (text.size() - start > limit) {
    start = text.size() - limit;
    while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
  }
  if (start == 0) return std::string(text);
  return fmt::format("[... cut by tcfuzz: last {} of {} bytes shown]\n{}", text.size() - start, text.size(),
                     text.substr(start));
}

std::string oneLine(std::string_view text, size_t limit) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  if (out.size() > limit) {
    out.resize(utf8Prefix(out, limit));
    out += "...";
  }
  return out;
}

std::string codeBlock(std::string_view text, std::string_view lang) {
  std::string fence(std::max<size_t>(3, longestRun(text, '`') + 1), '`');
  std::string out = fence + std::string(lang) + "\n" + std::string(text);
  if (out.back() != '\n') out += '\n';
  return out + fence + "\n";
}

std::string code(std::string_view text, size_t limit) {
  std::string body = oneLine(text, limit);
  if (body.empty()) return "``";
  std::string ticks(longestRun(body, '`') + 1, '`');
  bool pad = body.front() == '`' || body.back() == '`';
  return ticks + (pad ? " " : "") + body + (pad ? " " : "") + ticks;
}

std::string cell(std::string_view text, bool asCode) {
  std::string line = asCode && !text.empty() ? code(text, kCellLimit) : oneLine(text, kCellLimit);
  std::string out;
  for (char c : line) {
    if (c == '|') out += '\\';
    if (!asCode && c == '<') {
      out += "&lt;";
      continue;
    }
    out += c;
  }
  return out;
}

std::string htmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  return out;
}

std::string isoTime(double unixSeconds) {
  if (!(unixSeconds > 0) || !std::isfinite(unixSeconds)) return "";
  std::time_t t = static_cast<std::time_t>(unixSeconds);
  std::tm tm{};
  if (!gmtime_r(&t, &tm)) return "";
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string isoOrUnknown(double unixSeconds) {
  std::string iso = isoTime(unixSeconds);
  return iso.empty() ? "unknown" : iso;
}

}  // namespace tcfuzz::oracles::markdown
