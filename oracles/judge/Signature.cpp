#include "oracles/judge/Signature.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "oracles/judge/CompilerError.h"
#include "oracles/judge/Traceback.h"

namespace tcfuzz::oracles {

using text::isIdentChar;
using text::isIdentStart;
using text::shortTypeName;
using text::trim;

namespace {

constexpr size_t kMaxMessageBytes = 300;

bool isDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool isSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool isHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

bool startsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }


// --- Message normalization -----------------------------------------------------------------------

constexpr std::string_view kBoilerplate[] = {
    "Set TORCHDYNAMO_VERBOSE", "from user code:", "Found from", "For more details about this graph break",
    "Exception raised from",   "You can suppress this exception",
};

/// The first (at most two) non-empty lines, stopping at a blank line or at torch's boilerplate.
std::string messageHead(std::string_view message) {
  std::string head;
  int taken = 0;
  for (std::string_view line : splitLines(message)) {
    std::string_view t = trim(line);
    if (t.empty()) {
      if (taken > 0) break;
      continue;
    }
    bool boilerplate = false;
    for (std::string_view marker : kBoilerplate) boilerplate = boilerplate || startsWith(t, marker);
    if (boilerplate) break;
    if (!head.empty()) head += ' ';
    head += t;
    if (++taken == 2) break;
  }
  return head;
}

/// Names whose numbered instances are generated: Inductor buffers and temporaries, AOT and FX
/// placeholders, sympy size symbols, index variables and kernel pointers.
constexpr std::string_view kGeneratedBases[] = {
    "buf",     "tmp",    "arg",   "primals",          "tangents",      "getitem", "s",      "u",
    "zuf",     "zf",     "ks",    "ps",               "i",             "x",       "y",      "z",
    "r",       "q",      "in_ptr", "out_ptr",         "in_out_ptr",    "var",     "v",      "index",
    "idx",     "op",     "node",  "_tensor_constant", "_frozen_param", "constant", "mask",  "acc",
};

constexpr std::string_view kKernelPrefixes[] = {"cpp_", "triton_", "cutlass_", "cuda_", "halide_", "mps_", "kernel_"};

bool isLongHexHash(std::string_view token) {
  if (token.size() < 12) return false;
  bool digit = false, letter = false;
  for (char c : token) {
    if (!isHex(c)) return false;
    (isDigit(c) ? digit : letter) = true;
  }
  return digit && letter;
}

std::string normalizeIdentifier(std::string_view token) {
  for (std::string_view prefix : kKernelPrefixes)
    if (startsWith(token, prefix) && contains(token, "fused")) return "<kernel>";
  for (std::string_view prefix : {"triton_poi_", "triton_red_", "triton_per_", "triton_tem_", "triton_for_"})
    if (startsWith(token, prefix)) return "<kernel>";
  if (isLongHexHash(token)) return "<hash>";
  // Split off a numeric suffix made of digit runs, each optionally preceded by '_': arg0_1 -> arg.
  size_t end = token.size();
  bool underscoreSuffix = false;
  while (true) {
    size_t k = end;
    while (k > 0 && isDigit(token[k - 1])) --k;
    if (k == end) break;
    end = k;
    if (end > 0 && token[end - 1] == '_') {
      --end;
      underscoreSuffix = true;
    }
  }
  if (end == token.size() || end == 0) return std::string(token);
  std::string_view base = token.substr(0, end);
  for (std::string_view generated : kGeneratedBases)
    if (base == generated) return "<name>";
  bool hasLetter = std::any_of(base.begin(), base.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
  if (underscoreSuffix && hasLetter) return std::string(base);  // FX node numbering: add_3 -> add
  return std::string(token);                                    // float32, atan2: words
}

/// If s[i] opens a bracketed list of numbers (and symbolic sizes), the index just past it; else 0.
size_t shapeListEnd(std::string_view s, size_t i) {
  const char open = s[i];
  int depth = 0;
  bool digit = false, topComma = false;
  for (size_t j = i; j < s.size() && j < i + 400; ++j) {
    char c = s[j];
    if (c == '(' || c == '[') {
      ++depth;
    } else if (c == ')' || c == ']') {
      if (--depth == 0) {
        if (!digit) return 0;
        if (open == '(' && !topComma) return 0;
        if ((open == '(') != (c == ')')) return 0;
        return j + 1;
      }
    } else if (c == ',') {
      if (depth == 1) topComma = true;
    } else if (isDigit(c)) {
      digit = true;
    } else if (isIdentStart(c)) {
      // A symbolic size such as s0, u1, ks0: letters then digits.
      size_t k = j;
      while (k < s.size() && std::isalpha(static_cast<unsigned char>(s[k]))) ++k;
      size_t letters = k;
      while (k < s.size() && isDigit(s[k])) ++k;
      if (k == letters || (k < s.size() && isIdentChar(s[k]))) return 0;
      j = k - 1;
    } else if (!(isSpace(c) || c == '-' || c == '+' || c == '*' || c == '.')) {
      return 0;
    }
  }
  return 0;
}

/// The index just past the bracket group starting at s[i] ('[' ... ']'), honouring quotes.
size_t bracketEnd(std::string_view s, size_t i) {
  char quote = 0;
  for (size_t j = i + 1; j < s.size(); ++j) {
    char c = s[j];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == ']') {
      return j + 1;
    }
  }
  return 0;
}

bool isPathChar(char c) {
  return isIdentChar(c) || c == '.' || c == '-' || c == '+' || c == '@' || c == '~' || c == '/' || c == '%' ||
         c == '=' || c == '?' || c == '&' || c == '#';
}

std::string normalizeText(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  auto lastIs = [&](auto pred) { return !out.empty() && pred(out.back()); };
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    // Hex addresses.
    if (c == '0' && i + 2 < s.size() && (s[i + 1] == 'x' || s[i + 1] == 'X') && isHex(s[i + 2])) {
      size_t j = i + 2;
      while (j < s.size() && isHex(s[j])) ++j;
      out += "<addr>";
      i = j;
      continue;
    }
    // torch.Size([...])
    if (startsWith(s.substr(i), "torch.Size(")) {
      size_t open = i + std::string_view("torch.Size").size();
      if (size_t j = shapeListEnd(s, open + 1); j && j < s.size() && s[j] == ')') {
        out += "<shape>";
        i = j + 1;
        continue;
      }
      if (startsWith(s.substr(open), "([])")) {
        out += "<shape>";
        i = open + 4;
        continue;
      }
    }
    // Sizes, strides and other number lists.
    if (c == '[' || c == '(') {
      if (size_t j = shapeListEnd(s, i)) {
        out += "<shape>";
        i = j;
        continue;
      }
    }
    // Absolute paths and URLs.
    if (c == '/' && !lastIs([](char p) { return isIdentChar(p) || p == ')' || p == ']' || p == '.'; }) &&
        i + 1 < s.size() && isPathChar(s[i + 1])) {
      size_t j = i;
      while (j < s.size() && isPathChar(s[j])) ++j;
      out += "<path>";
      i = j;
      continue;
    }
    // Identifiers: guards, kernel names, generated names.
    if (isIdentStart(c)) {
      size_t j = i;
      while (j < s.size() && isIdentChar(s[j])) ++j;
      std::string_view token = s.substr(i, j - i);
      if ((token == "L" || token == "G") && j + 1 < s.size() && s[j] == '[' && (s[j + 1] == '\'' || s[j + 1] == '"')) {
        while (j < s.size()) {
          if (s[j] == '[') {
            size_t e = bracketEnd(s, j);
            if (!e) break;
            j = e;
          } else if (s[j] == '.' && j + 1 < s.size() && isIdentStart(s[j + 1])) {
            ++j;
            while (j < s.size() && isIdentChar(s[j])) ++j;
          } else {
            break;
          }
        }
        out += "<guard>";
      } else {
        out += normalizeIdentifier(token);
      }
      i = j;
      continue;
    }
    // Numbers, with their sign, fraction, exponent, and "3x4" dimension lists.
    bool signedNumber = (c == '-' || c == '+') && i + 1 < s.size() && isDigit(s[i + 1]) &&
                        !lastIs([](char p) { return isIdentChar(p) || p == ')' || p == ']'; });
    if (isDigit(c) || signedNumber) {
      size_t j = signedNumber ? i + 1 : i;
      auto number = [&] {
        while (j < s.size() && isDigit(s[j])) ++j;
        if (j + 1 < s.size() && s[j] == '.' && isDigit(s[j + 1])) {
          ++j;
          while (j < s.size() && isDigit(s[j])) ++j;
        }
        if (j + 1 < s.size() && (s[j] == 'e' || s[j] == 'E')) {
          size_t k = j + 1;
          if (k < s.size() && (s[k] == '-' || s[k] == '+')) ++k;
          if (k < s.size() && isDigit(s[k])) {
            j = k;
            while (j < s.size() && isDigit(s[j])) ++j;
          }
        }
      };
      number();
      out += 'N';
      while (j + 1 < s.size() && s[j] == 'x' && isDigit(s[j + 1])) {
        ++j;
        number();
        out += "xN";
      }
      i = j;
      continue;
    }
    if (isSpace(c)) {
      if (!out.empty() && out.back() != ' ') out += ' ';
      ++i;
      continue;
    }
    out += c;
    ++i;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string truncateUtf8(std::string text, size_t limit) {
  if (text.size() <= limit) return text;
  size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  // End on a whole token (never half a placeholder) when a space is near enough.
  if (text[cut] != ' ') {
    size_t space = text.rfind(' ', cut);
    if (space != std::string::npos && cut - space <= 40) cut = space;
  }
  text.resize(cut);
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

// --- Wrapped exception types in messages -----------------------------------------------------------

bool looksLikeExceptionType(std::string_view name) {
  if (name.empty() || !std::isupper(static_cast<unsigned char>(name.front()))) return false;
  for (std::string_view suffix : {"Error", "Exception", "Failed", "Unsupported", "Exit", "Interrupt", "Iteration", "Warning"})
    if (endsWith(name, suffix)) return true;
  return false;
}

/// A leading "[module.]Type:" at the start of text: the short type name and the length consumed.
std::pair<std::string, size_t> leadingType(std::string_view text) {
  size_t j = 0;
  while (j < text.size() && (isIdentChar(text[j]) || text[j] == '.')) ++j;
  if (j == 0 || !isIdentStart(text[0])) return {"", 0};
  std::string shortName = shortTypeName(text.substr(0, j));
  if (!looksLikeExceptionType(shortName)) return {"", 0};
  if (j == text.size()) return {shortName, j};
  if (text[j] != ':') return {"", 0};
  ++j;
  while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
  return {shortName, j};
}

struct Unwrapped {
  std::string innerType;  ///< the innermost wrapped type named in the message, "" if none
  std::string body;       ///< the message without the wrapper introduction and type prefixes
};

/// "backend='x' raised:\nRuntimeError: msg" and "LoweringException: AssertionError: msg".
Unwrapped unwrapMessage(std::string_view message) {
  std::string_view rest = message;
  while (!rest.empty() && isSpace(rest.front())) rest.remove_prefix(1);
  size_t nl = rest.find('\n');
  std::string_view first = trim(rest.substr(0, nl));
  if (startsWith(first, "backend=") && endsWith(first, "raised:"))
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
  Unwrapped result;
  while (true) {
    while (!rest.empty() && isSpace(rest.front())) rest.remove_prefix(1);
    auto [type, consumed] = leadingType(rest);
    if (!consumed) break;
    result.innerType = type;
    rest.remove_prefix(consumed);
  }
  result.body = std::string(rest);
  return result;
}

// --- Signatures ------------------------------------------------------------------------------------

std::string escapeField(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '|' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

std::string signalKind(const RunResult& run) {
  if (!run.signalName.empty()) return "signal " + run.signalName;
  if (run.signal != 0) return fmt::format("signal {}", run.signal);
  if (run.exitCode) return fmt::format("exit {}", *run.exitCode);
  return "signal";
}

void fillException(Signature& sig, const ExceptionInfo& exc) {
  std::vector<TracebackBlock> blocks = parseTraceback(exc.traceback);
  std::string outer = exc.type.empty() && !blocks.empty() ? blocks.back().type : exc.type;
  std::string rootType = outer;
  std::string rootMessage = exc.message;
  if (blocks.size() > 1 && !blocks.front().type.empty()) {
    rootType = blocks.front().type;
    rootMessage = blocks.front().message;
  }
  Unwrapped unwrapped = unwrapMessage(rootMessage);
  if (!unwrapped.innerType.empty()) rootType = unwrapped.innerType;
  sig.exceptionType = rootType.empty() || rootType == outer ? outer : fmt::format("{}({})", outer, rootType);
  sig.normalizedMessage = normalizeMessage(unwrapped.body);
  if (auto lowering = loweringFailure(unwrapped.body)) {
    std::string head = normalizeMessage(lowering->head);
    sig.normalizedMessage = (head.empty() ? "" : head + "; ") + "lowering of " + lowering->target;
  }
  // A compiler failure (Inductor's CppCompileError, a Triton or CUDA CompilationError) is keyed by the
  // compiler's first error too: its head ("C++ compile error") is the same for every codegen bug.
  if (sig.exceptionType.find("CompileError") != std::string::npos ||
      sig.exceptionType.find("CompilationError") != std::string::npos)
    if (auto error = firstCompilerError(rootMessage)) sig.normalizedMessage += "; " + *error;
  sig.frames = framesOf(blocks, 3);
}

/// A data-dependent error: a guard or an output that needs a value only the data decides (an unbacked size).
bool dataDependentError(const std::string& exceptionType, const std::string& message) {
  for (const char* type : {"GuardOnDataDependentSymNode", "DataDependentOutputException", "PendingUnbackedSymbolNotFound"})
    if (exceptionType.find(type) != std::string::npos) return true;
  return message.find("data-dependent") != std::string::npos || message.find("data dependent") != std::string::npos;
}

void fillRun(Signature& sig, const RunResult& run, std::string_view mode) {
  sig.failingMode = std::string(mode);
  sig.phase = run.phase;
  switch (run.status) {
    case RunStatus::Ok: sig.kind = "ok"; break;
    case RunStatus::Exception:
      sig.kind = "exception";
      if (run.exception) fillException(sig, *run.exception);
      if (dataDependentError(sig.exceptionType, sig.normalizedMessage)) sig.kind = kDataDependentKind;
      break;
    case RunStatus::Signal: sig.kind = signalKind(run); break;
    case RunStatus::Timeout: sig.kind = "timeout"; break;
    case RunStatus::OutOfMemory: sig.kind = "oom"; break;
    case RunStatus::Refused: sig.kind = "refused"; break;
  }
  // A sticky CUDA error is its own kind of crash (the GPU context is gone, and whatever ran next on it
  // failed too), whether it surfaced as an exception or killed the process.
  if (!stickyCudaError(run).empty()) sig.kind = "cuda-sticky-error";
}

}  // namespace

std::string Signature::key() const {
  std::string out = escapeField(symptom);
  auto field = [&](std::string_view name, std::string_view value) {
    if (!value.empty()) out += fmt::format(" | {}={}", name, escapeField(value));
  };
  field("kind", kind);
  field("mode", failingMode);
  field("phase", phase);
  field("type", exceptionType);
  field("message", normalizedMessage);
  field("frames", join(frames, " < "));
  field("ops", join(ops, ","));
  return out;
}

std::string Signature::id() const {
  uint64_t hash = 14695981039346656037ull;  // FNV-1a 64 offset basis
  for (unsigned char c : key()) {
    hash ^= c;
    hash *= 1099511628211ull;  // FNV-1a 64 prime
  }
  return fmt::format("{:016x}", hash);
}

nlohmann::json toJson(const Signature& s) {
  return nlohmann::json{{"id", s.id()},
                        {"key", s.key()},
                        {"symptom", s.symptom},
                        {"kind", s.kind},
                        {"failing_mode", s.failingMode},
                        {"phase", s.phase},
                        {"exception_type", s.exceptionType},
                        {"message", s.normalizedMessage},
                        {"frames", s.frames},
                        {"ops", s.ops}};
}

Signature signatureFromJson(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("a signature must be a JSON object");
  Signature s;
  s.symptom = j.value("symptom", "");
  s.kind = j.value("kind", "");
  s.failingMode = j.value("failing_mode", "");
  s.phase = j.value("phase", "");
  s.exceptionType = j.value("exception_type", "");
  s.normalizedMessage = j.value("message", "");
  s.frames = j.value("frames", std::vector<std::string>{});
  s.ops = j.value("ops", std::vector<std::string>{});
  if (s.symptom.empty()) throw std::invalid_argument("a signature needs a symptom");
  return s;
}

std::string normalizeMessage(std::string_view message) {
  return truncateUtf8(normalizeText(messageHead(message)), kMaxMessageBytes);
}

std::string messageHeadline(std::string_view message) {
  std::string_view rest = message;
  while (!rest.empty() && isSpace(rest.front())) rest.remove_prefix(1);
  std::string_view first = trim(rest.substr(0, rest.find('\n')));
  if (startsWith(first, "backend=") && endsWith(first, "raised:") && rest.find('\n') != std::string_view::npos) {
    rest.remove_prefix(rest.find('\n') + 1);
    while (!rest.empty() && isSpace(rest.front())) rest.remove_prefix(1);
  }
  return std::string(trim(rest.substr(0, rest.find('\n'))));
}

std::string guardOfFailure(std::string_view failure) {
  return std::string(trim(failure.substr(0, failure.find(" #"))));
}

Signature signatureOf(const TripleRun& runs, const VerdictReport& verdict, const std::vector<std::string>& programOps) {
  Signature sig;
  sig.symptom = std::string(toString(verdict.verdict));
  switch (verdict.verdict) {
    case Verdict::NumericDivergence:
    case Verdict::MutationDivergence:
    case Verdict::SecondCallDivergence:
    case Verdict::AliasingDivergence:
    case Verdict::SignedZero:
    case Verdict::DenormalFlush:
      sig.kind = "numeric";
      sig.ops = programOps;
      std::sort(sig.ops.begin(), sig.ops.end());
      // Which later call went wrong (a cache, a dynamic-shape or a storage-offset bug): its role.
      if (verdict.verdict == Verdict::SecondCallDivergence && verdict.comparison)
        sig.phase = verdict.comparison->failingRole;
      break;
    case Verdict::CrashMismatch:
    case Verdict::StatusMismatch: {
      // The run that misbehaved: compiled for a crash, eager for a status mismatch (eager raised
      // where compiled ran). If the runs disagree with the verdict, whichever one failed.
      bool eagerSide = verdict.verdict == Verdict::StatusMismatch;
      const RunResult* failing = eagerSide ? &runs.eager : &runs.compiled;
      if (failing->ok()) {
        eagerSide = !eagerSide;
        failing = eagerSide ? &runs.eager : &runs.compiled;
      }
      if (!failing->ok()) fillRun(sig, *failing, eagerSide ? "eager" : "compiled");
      break;
    }
    case Verdict::RecompileStorm:
      // The guard that failed on a call that changed nothing, normalized: one report per unstable guard.
      sig.kind = "recompile";
      sig.failingMode = "compiled";
      sig.phase = "second-call";
      if (const std::string* guard = unstableGuard(runs.compiled.repeatRecompiles))
        sig.normalizedMessage = normalizeMessage(guardOfFailure(*guard));
      break;
    case Verdict::Agree:
    case Verdict::Nondeterministic:
    case Verdict::InvalidProgram:
    case Verdict::StateLeakSuspect:
    case Verdict::SandboxRefusal:
    case Verdict::RandomOnly:
    case Verdict::NothingCompiled:
    case Verdict::IllConditioned:
      break;
  }
  return sig;
}

}  // namespace tcfuzz::oracles
