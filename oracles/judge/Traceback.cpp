#include "oracles/judge/Traceback.h"

#include <algorithm>
#include <cctype>

namespace tcfuzz::oracles {

bool text::isIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool text::isIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string_view text::trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string text::shortTypeName(std::string_view qualified) {
  size_t dot = qualified.rfind('.');
  return std::string(dot == std::string_view::npos ? qualified : qualified.substr(dot + 1));
}

using text::isIdentChar;
using text::isIdentStart;
using text::shortTypeName;
using text::trim;

namespace {

bool isChainSeparator(std::string_view line) {
  std::string_view t = trim(line);
  return t == "The above exception was the direct cause of the following exception:" ||
         t == "During handling of the above exception, another exception occurred:";
}

/// Parses `  File "path", line N, in func`; false if the line is not a frame line.
bool parseFrameLine(std::string_view line, TracebackFrame& frame) {
  constexpr std::string_view kPrefix = "  File \"";
  if (!line.starts_with(kPrefix)) return false;
  std::string_view rest = line.substr(kPrefix.size());
  size_t mark = rest.rfind("\", line ");
  if (mark == std::string_view::npos) return false;
  frame.path = std::string(rest.substr(0, mark));
  std::string_view tail = rest.substr(mark + 8);
  size_t in = tail.find(" in ");
  frame.function = in == std::string_view::npos ? "" : std::string(trim(tail.substr(in + 4)));
  frame.source.clear();
  return true;
}

/// Whether a column-0 line opens the exception text: "[module.]Type" or "[module.]Type: ...".
bool isExceptionLine(std::string_view line) {
  if (line.empty() || !isIdentStart(line[0])) return false;
  size_t j = 0;
  while (j < line.size() && (isIdentChar(line[j]) || line[j] == '.')) ++j;
  return j == line.size() || line[j] == ':';
}


/// "torch/_inductor/graph.py" for any path with a torch/ package directory; "" otherwise.
std::string torchRelative(std::string_view path) {
  if (path.starts_with("torch/")) return std::string(path);
  size_t pos = path.rfind("/torch/");
  return pos == std::string_view::npos ? "" : std::string(path.substr(pos + 1));
}

constexpr std::string_view kWrapperFiles[] = {
    "torch/_dynamo/eval_frame.py",      "torch/_dynamo/convert_frame.py", "torch/_dynamo/repro/after_aot.py",
    "torch/_dynamo/repro/after_dynamo.py", "torch/_dynamo/external_utils.py", "torch/_utils_internal.py",
    "torch/utils/_contextlib.py",       "torch/_dynamo/exc.py",
};
constexpr std::string_view kProtocolFunctions[] = {
    "__call__", "_call_impl", "_wrapped_call_impl", "wrapper_function", "decorate_context", "<lambda>",
    "_wrap_graph_break_with_torch_runtime_err",
};
constexpr std::string_view kClosureNames[] = {"inner", "wrapper", "wrapped", "_fn", "fn"};

/// A line that passes its caller's arguments on: star unpacking, or a call continued below.
bool forwardsCall(std::string_view source) {
  if (source.empty()) return true;  // not shown: judge by the name alone
  if (source.back() == '(') return true;
  for (size_t i = 0; i + 1 < source.size(); ++i) {
    if (source[i] != '*') continue;
    size_t j = i + 1;
    if (source[j] == '*') ++j;
    if (j < source.size() && isIdentStart(source[j])) {
      size_t k = i;
      while (k > 0 && source[k - 1] == ' ') --k;
      if (k > 0 && (source[k - 1] == '(' || source[k - 1] == ',')) return true;
    }
  }
  return false;
}

bool isWrapperFrame(const std::string& rel, const TracebackFrame& frame) {
  for (std::string_view file : kWrapperFiles)
    if (rel == file) return true;
  for (std::string_view fn : kProtocolFunctions)
    if (frame.function == fn) return true;
  if (frame.source == "yield") return true;  // a context manager re-raising
  for (std::string_view fn : kClosureNames)
    if (frame.function == fn) return forwardsCall(frame.source);
  return false;
}

std::vector<std::string> selectFrames(const TracebackBlock& block, size_t limit) {
  std::vector<std::string> out;
  for (auto it = block.frames.rbegin(); it != block.frames.rend() && out.size() < limit; ++it) {
    std::string rel = torchRelative(it->path);
    if (rel.empty() || isWrapperFrame(rel, *it)) continue;
    std::string name = rel + ":" + it->function;
    if (!out.empty() && out.back() == name) continue;
    out.push_back(std::move(name));
  }
  return out;
}

}  // namespace

std::vector<std::string_view> splitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return lines;
}

std::vector<TracebackBlock> parseTraceback(std::string_view traceback) {
  std::vector<TracebackBlock> blocks(1);
  bool inText = false;  // the current block's exception text has started
  std::vector<std::string_view> text;
  auto finish = [&] {
    TracebackBlock& b = blocks.back();
    if (!text.empty()) {
      std::string_view first = text.front();
      size_t j = 0;
      while (j < first.size() && (isIdentChar(first[j]) || first[j] == '.')) ++j;
      b.type = shortTypeName(first.substr(0, j));
      std::string message(j < first.size() ? trim(first.substr(j + 1)) : std::string_view{});
      for (size_t k = 1; k < text.size(); ++k) message += "\n" + std::string(text[k]);
      b.message = std::string(trim(message));
    }
    text.clear();
    inText = false;
  };
  for (std::string_view line : splitLines(traceback)) {
    if (isChainSeparator(line)) {
      finish();
      blocks.emplace_back();
      continue;
    }
    if (inText) {
      text.push_back(line);
      continue;
    }
    TracebackFrame frame;
    if (parseFrameLine(line, frame)) {
      blocks.back().frames.push_back(std::move(frame));
    } else if (line.starts_with("    ")) {
      // The source line under a frame (the first one only; caret lines and repeats follow).
      std::string_view t = trim(line);
      auto& frames = blocks.back().frames;
      if (!frames.empty() && frames.back().source.empty() && !t.empty() &&
          t.find_first_not_of("^~ ") != std::string_view::npos && !t.starts_with("[Previous line repeated"))
        frames.back().source = std::string(t);
    } else if (isExceptionLine(line)) {
      inText = true;
      text.push_back(line);
    }
    // Anything else (the "Traceback" header, blank lines, a line cut by truncation) is skipped.
  }
  finish();
  blocks.erase(std::remove_if(blocks.begin(), blocks.end(),
                              [](const TracebackBlock& b) { return b.frames.empty() && b.type.empty(); }),
               blocks.end());
  return blocks;
}

std::vector<std::string> framesOf(const std::vector<TracebackBlock>& blocks, size_t limit) {
  for (const TracebackBlock& block : blocks) {
    std::vector<std::string> frames = selectFrames(block, limit);
    if (!frames.empty()) return frames;
  }
  return {};
}

std::vector<std::string> torchFrames(std::string_view traceback, size_t limit) {
  return framesOf(parseTraceback(traceback), limit);
}

}  // namespace tcfuzz::oracles
