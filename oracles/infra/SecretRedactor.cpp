#include "oracles/infra/SecretRedactor.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "oracles/infra/AtomicFile.h"

namespace tcfuzz {

namespace {

std::string upper(std::string_view s) {
  std::string u(s);
  for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

/// `value` as it appears between the quotes of a JSON string: as nlohmann writes it (UTF-8 kept)
/// and, with `asciiOnly`, as Python's json.dumps writes it (\uXXXX escapes).
std::string jsonSpelling(const std::string& value, bool asciiOnly) {
  std::string quoted = nlohmann::json(value).dump(-1, ' ', asciiOnly, nlohmann::json::error_handler_t::replace);
  return quoted.substr(1, quoted.size() - 2);
}

}  // namespace

bool SecretRedactor::looksLikeCredential(std::string_view name) {
  std::string u = upper(name);
  for (std::string_view part : {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "APIKEY", "API_KEY",
                                "ACCESS_KEY", "PRIVATE_KEY"})
    if (u.find(part) != std::string::npos) return true;
  size_t start = 0;
  while (start <= u.size()) {
    size_t end = u.find('_', start);
    if (end == std::string::npos) end = u.size();
    std::string_view word(u.data() + start, end - start);
    if (word == "KEY" || word == "PASS") return true;
    start = end + 1;
  }
  return false;
}

std::string SecretRedactor::marker(std::string_view name) { return "[REDACTED:" + std::string(name) + "]"; }

SecretRedactor SecretRedactor::fromEnvironment(char** environment, const std::vector<std::string>& configuredNames) {
  SecretRedactor r;
  for (char** entry = environment; entry && *entry; ++entry) {
    std::string_view text(*entry);
    size_t eq = text.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    std::string name(text.substr(0, eq));
    bool configured = std::find(configuredNames.begin(), configuredNames.end(), name) != configuredNames.end();
    if (configured || looksLikeCredential(name)) r.add(name, std::string(text.substr(eq + 1)));
  }
  return r;
}

void SecretRedactor::add(const std::string& name, const std::string& value) {
  if (value.size() < kMinSecretLength) return;
  std::string mark = marker(name);
  for (const std::string& spelling : {value, jsonSpelling(value, false), jsonSpelling(value, true)}) {
    bool known = std::any_of(spellings_.begin(), spellings_.end(), [&](const Spelling& s) { return s.text == spelling; });
    if (known) continue;
    spellings_.push_back({spelling, mark});
    firstByte_[static_cast<unsigned char>(spelling[0])] = true;
  }
  std::stable_sort(spellings_.begin(), spellings_.end(),
                   [](const Spelling& a, const Spelling& b) { return a.text.size() > b.text.size(); });
}

size_t SecretRedactor::maskInto(std::string_view text, std::string& out, bool holdPartial) const {
  out.reserve(out.size() + text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (!firstByte_[static_cast<unsigned char>(text[i])]) {
      out += text[i++];
      continue;
    }
    std::string_view rest = text.substr(i);
    const Spelling* whole = nullptr;
    bool partial = false;
    for (const Spelling& s : spellings_) {
      if (rest.starts_with(s.text)) {
        whole = &s;
        break;
      }
      if (rest.size() < s.text.size() && std::string_view(s.text).starts_with(rest)) partial = true;
    }
    if (whole) {
      out += whole->marker;
      i += whole->text.size();
    } else if (partial && holdPartial) {
      return i;  // the tail may be a secret that has not fully arrived
    } else {
      out += text[i++];
    }
  }
  return i;
}

std::string SecretRedactor::mask(std::string_view text) const {
  if (spellings_.empty()) return std::string(text);
  std::string out;
  maskInto(text, out, false);
  return out;
}

std::vector<std::string> SecretRedactor::names() const {
  std::set<std::string> names;
  for (const Spelling& s : spellings_) names.insert(s.marker.substr(10, s.marker.size() - 11));
  return {names.begin(), names.end()};
}

RedactingStreamBuf::RedactingStreamBuf(std::streambuf* target, const SecretRedactor& redactor)
    : target_(target), redactor_(redactor) {}

RedactingStreamBuf::~RedactingStreamBuf() {
  std::lock_guard lock(mutex_);
  drain(false);
  target_->pubsync();
}

void RedactingStreamBuf::drain(bool holdPartial) {
  if (pending_.empty()) return;
  std::string out;
  size_t used = redactor_.maskInto(pending_, out, holdPartial);
  pending_.erase(0, used);
  target_->sputn(out.data(), static_cast<std::streamsize>(out.size()));
}

RedactingStreamBuf::int_type RedactingStreamBuf::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  char ch = traits_type::to_char_type(c);
  xsputn(&ch, 1);
  return c;
}

std::streamsize RedactingStreamBuf::xsputn(const char* s, std::streamsize n) {
  std::lock_guard lock(mutex_);
  pending_.append(s, static_cast<size_t>(n));
  // A line goes out when complete, a long unfinished one too, each but for a tail that may be the
  // start of a secret still to come.
  if (pending_.size() > 65536 || std::string_view(s, static_cast<size_t>(n)).find('\n') != std::string_view::npos)
    drain(true);
  return n;
}

int RedactingStreamBuf::sync() {
  std::lock_guard lock(mutex_);
  drain(true);
  return target_->pubsync();
}

StreamRedaction::StreamRedaction(std::ostream& stream, const SecretRedactor& redactor)
    : stream_(stream), original_(stream.rdbuf()), buffer_(original_, redactor) {
  stream_.rdbuf(&buffer_);
}

StreamRedaction::~StreamRedaction() {
  stream_.flush();
  stream_.rdbuf(original_);
}

void SecretRedactor::maskFilesUnder(const std::filesystem::path& dir) const {
  if (empty() || !std::filesystem::is_directory(dir)) return;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    if (std::string masked = mask(text); masked != text) writeFileAtomically(entry.path(), masked);
  }
}

}  // namespace tcfuzz
