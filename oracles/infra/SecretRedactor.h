#pragma once
// Masks the secrets tcfuzz knows about (the LLM API key, credential-named environment variables) in
// text it is about to write: files, findings.sqlite, worker replies, stdout and stderr. Built once by
// the CLI from the environment and handed to what writes; there is no global instance.
#include <cstddef>
#include <filesystem>
#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

namespace tcfuzz {

/// Values shorter than this are never treated as secrets, so that common words are not masked.
inline constexpr size_t kMinSecretLength = 8;

class SecretRedactor {
 public:
  /// A redactor that masks nothing.
  SecretRedactor() = default;

  /// The secrets of an environment (entries "NAME=VALUE", null-terminated like `environ`): the
  /// variables named in `configuredNames` (e.g. --llm-api-key-env's) and every variable whose name
  /// looksLikeCredential. Values shorter than kMinSecretLength are skipped.
  static SecretRedactor fromEnvironment(char** environment, const std::vector<std::string>& configuredNames);

  /// True for a variable name that holds a credential by convention: it contains TOKEN, SECRET,
  /// PASSWORD, PASSWD, CREDENTIAL, APIKEY, API_KEY, ACCESS_KEY or PRIVATE_KEY, or has KEY or PASS as
  /// one of its `_`-separated words (case-insensitive). So HF_TOKEN, GITHUB_TOKEN, OPENAI_API_KEY,
  /// AWS_SECRET_ACCESS_KEY and DB_PASS are; PATH, PWD, KEYBOARD and HOME are not.
  static bool looksLikeCredential(std::string_view name);

  /// What replaces a secret of variable `name`: "[REDACTED:<name>]".
  static std::string marker(std::string_view name);

  /// Adds the secret `value` of variable `name` (a value shorter than kMinSecretLength is ignored).
  /// Besides the raw value it masks its JSON-escaped spellings (as nlohmann::json and Python's
  /// json.dumps write it), so a JSON document is masked as text.
  void add(const std::string& name, const std::string& value);

  /// `text` with every occurrence of a secret (any spelling, longest first) replaced by its marker.
  std::string mask(std::string_view text) const;

  /// Appends to `out` the masked form of the longest prefix of `text` that holds no unfinished
  /// secret: with `holdPartial`, a tail of `text` that could be the start of a secret is left out.
  /// Returns how many bytes of `text` were consumed (all of them without `holdPartial`).
  size_t maskInto(std::string_view text, std::string& out, bool holdPartial) const;

  /// Rewrites every regular file under `dir` with its secrets masked (files holding none are left
  /// untouched): a folder another program wrote, such as tlparse's rendering of a trace that quotes the
  /// program's exceptions. Throws std::runtime_error naming a file it cannot write.
  void maskFilesUnder(const std::filesystem::path& dir) const;

  /// The names of the variables whose values are masked, sorted, without repeats.
  std::vector<std::string> names() const;
  bool empty() const { return spellings_.empty(); }

 private:
  struct Spelling {
    std::string text;    ///< one spelling of a secret value
    std::string marker;  ///< what replaces it
  };
  std::vector<Spelling> spellings_;  ///< longest first
  bool firstByte_[256] = {};         ///< bytes a spelling starts with (a fast skip)
};

/// A streambuf that masks what passes through it before handing it to `target` (std::cout's or
/// std::cerr's own buffer). A flush writes all but a tail that may be the start of a secret; the
/// destructor writes the rest. Thread-safe: tcfuzz logs from several threads.
class RedactingStreamBuf : public std::streambuf {
 public:
  RedactingStreamBuf(std::streambuf* target, const SecretRedactor& redactor);
  ~RedactingStreamBuf() override;

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  void drain(bool holdPartial);  // with mutex_ held
  std::streambuf* target_;
  const SecretRedactor& redactor_;
  std::mutex mutex_;
  std::string pending_;
};

/// Routes `stream` through a RedactingStreamBuf for this object's lifetime, then restores it.
class StreamRedaction {
 public:
  StreamRedaction(std::ostream& stream, const SecretRedactor& redactor);
  ~StreamRedaction();
  StreamRedaction(const StreamRedaction&) = delete;
  StreamRedaction& operator=(const StreamRedaction&) = delete;

 private:
  std::ostream& stream_;
  std::streambuf* original_;
  RedactingStreamBuf buffer_;
};

}  // namespace tcfuzz
