#pragma once
// Python tracebacks as traceback.format_exception prints them: the exception chain parsed into blocks,
// and the torch frames a signature keys on (the rules are in Signature.h, "Frames"); and the lines of a text.

#include <string>
#include <string_view>
#include <vector>

namespace tcfuzz::oracles {

/// One `File "path", line N, in function` entry and its source line.
struct TracebackFrame {
  std::string path, function, source;
};

/// One exception of a chain: its frames (outermost first) and its "Type: message" text.
struct TracebackBlock {
  std::vector<TracebackFrame> frames;
  std::string type;     ///< short type name from the exception line
  std::string message;  ///< the text after "Type: ", all lines
};

/// Lines of a text; a trailing newline does not start another line, a '\r' before '\n' is dropped.
std::vector<std::string_view> splitLines(std::string_view text);

/// The exceptions of a printed traceback, root cause first (empty blocks dropped).
std::vector<TracebackBlock> parseTraceback(std::string_view traceback);

/// The innermost `limit` torch frames of the first block (root cause first) that has any, innermost first.
std::vector<std::string> framesOf(const std::vector<TracebackBlock>& blocks, size_t limit);

/// The text helpers that traceback and message parsing share (Traceback.cpp, Signature.cpp).
namespace text {
bool isIdentStart(char c);  ///< a letter or '_'
bool isIdentChar(char c);   ///< a letter, digit or '_'
std::string_view trim(std::string_view s);  ///< without leading and trailing whitespace
/// The last dotted part of a qualified name ("torch._dynamo.exc.Unsupported": "Unsupported").
std::string shortTypeName(std::string_view qualified);
}  // namespace text

/// The innermost `limit` torch frames of the root cause of a Python traceback as printed by
/// traceback.format_exception (rules in Signature.h), innermost first.
std::vector<std::string> torchFrames(std::string_view traceback, size_t limit = 3);

}  // namespace tcfuzz::oracles
