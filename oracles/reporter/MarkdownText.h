#pragma once
// Text for GitHub markdown and static HTML: bounded quotes of untrusted text (messages, tracebacks,
// program output) that no backtick, '|' or '<' inside them can break out of. Used by the report
// folder (ReportWriter) and the index (IndexWriter).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tcfuzz::oracles::markdown {

inline constexpr size_t kCellLimit = 300;    ///< a table cell
inline constexpr size_t kInlineLimit = 240;  ///< a message quoted inside a sentence

/// At most `limit` bytes of the head of `text` (never splitting a UTF-8 sequence), with a note when it was cut.
std::string headBounded(std::string_view text, size_t limit);
/// At most `maxLines` lines and `limit` bytes of the tail of `text`, with a note when it was cut.
std::string tailBounded(std::string_view text, size_t limit, size_t maxLines = SIZE_MAX);
/// One line: whitespace runs (newlines included) collapse to a space; at most `limit` bytes, "..." when cut.
std::string oneLine(std::string_view text, size_t limit);
/// A fenced code block that no backtick run inside `text` can close early.
std::string codeBlock(std::string_view text, std::string_view lang = "");
/// An inline code span for one line of text (bounded), safe against backticks inside it.
std::string code(std::string_view text, size_t limit = kInlineLimit);
/// A GitHub table cell: one bounded line, '|' escaped; '<' escaped too unless it is a code span.
std::string cell(std::string_view text, bool asCode = false);
/// `text` with & < > " ' escaped for HTML.
std::string htmlEscape(std::string_view text);
/// ISO 8601 UTC ("2024-05-01T12:00:00Z"); "" for an unset time (<= 0 or not finite).
std::string isoTime(double unixSeconds);
/// isoTime, or "unknown" for an unset time.
std::string isoOrUnknown(double unixSeconds);

}  // namespace tcfuzz::oracles::markdown
