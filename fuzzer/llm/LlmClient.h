#pragma once
// An OpenAI-compatible chat-completions client over libcurl (llama.cpp's server, vLLM, OpenAI):
// bounded concurrency, retries with jittered exponential backoff, Retry-After, cancellation, and
// an API key that never reaches a message, an exception or a log.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tcfuzz {

/// Where and how to reach a chat-completions endpoint.
struct LlmEndpoint {
  std::string baseUrl;            ///< OpenAI API base, e.g. "http://127.0.0.1:8091/v1"; requests go to baseUrl + "/chat/completions"
  std::string model;              ///< the "model" field
  std::string apiKeyEnv;          ///< name of the environment variable holding the key ("" or unset: no Authorization header)
  double connectTimeoutSeconds = 5;
  double requestTimeoutSeconds = 120;  ///< per HTTP attempt; waiting for a slot or a retry does not count
  int maxRetries = 4;             ///< retries after the first attempt, for retryable failures
  double backoffSeconds = 0.5;    ///< first retry delay; doubles each retry, with full jitter, capped by maxBackoffSeconds
  double maxBackoffSeconds = 30;
  int maxConcurrent = 2;          ///< requests in flight at once from this client (others wait)
};

/// One message of a conversation ("system", "user", "assistant").
struct ChatMessage {
  std::string role, content;
};

/// What to ask for.
struct ChatRequest {
  std::vector<ChatMessage> messages;
  double temperature = 0.8;
  double topP = 0.95;
  int maxTokens = 512;
  std::optional<uint64_t> seed;
  std::string grammar;            ///< GBNF for llama.cpp servers ("" : none); sent as the "grammar" field
  nlohmann::json extra = nlohmann::json::object();  ///< merged into the body's top level (e.g. response_format); overrides
};

/// A successful answer.
struct ChatResponse {
  std::string content;            ///< choices[0].message.content
  std::string finishReason;       ///< "stop", "length", ... ("" when absent)
  int64_t promptTokens = 0, completionTokens = 0;  ///< from "usage" (0 when absent)
  int attempts = 1;               ///< HTTP attempts made, the successful one included
  double seconds = 0;             ///< wall time including retries and waiting for a slot
};

/// Why a request failed for good. what() is redacted: it never holds the API key.
class LlmError : public std::runtime_error {
 public:
  enum class Kind {
    Connect,      ///< no connection, or it broke (refused, reset, nothing received, DNS, TLS)
    Timeout,      ///< connect or request timeout
    Http,         ///< a non-2xx status other than 429
    RateLimited,  ///< HTTP 429 on the last attempt
    Protocol,     ///< 2xx with a body that is not a chat completion
    Cancelled     ///< LlmClient::cancel() was called
  };
  LlmError(Kind kind, const std::string& message, int httpStatus, bool retryable, int attempts);

  Kind kind;
  int httpStatus;  ///< the last attempt's HTTP status; 0 when none arrived
  bool retryable;  ///< whether the last failure was of a retryable sort (retries ran out)
  int attempts;    ///< HTTP attempts made (0 when cancelled before the first)
};

/// "Connect", "Timeout", "Http", "RateLimited", "Protocol" or "Cancelled".
const char* toString(LlmError::Kind kind);

/// `text` with every occurrence of `secret` replaced by "[redacted]" (unchanged when secret is "").
std::string redact(const std::string& text, const std::string& secret);

/// Totals since construction (a snapshot).
struct LlmClientStats {
  int64_t requests = 0;          ///< chat() calls
  int64_t succeeded = 0;
  int64_t failed = 0;            ///< chat() calls that threw
  int64_t retries = 0;           ///< HTTP attempts beyond each call's first
  int64_t rateLimited = 0;       ///< HTTP 429 answers received
  int64_t promptTokens = 0, completionTokens = 0;
  double seconds = 0;            ///< summed wall time of chat() calls
  /// The fields under their names above.
  nlohmann::json toJson() const;
};

/// A chat-completions client; thread-safe. Not copyable: it owns a libcurl global-init reference.
class LlmClient {
 public:
  /// `seed` seeds the backoff jitter. Throws std::runtime_error when libcurl cannot initialise.
  LlmClient(LlmEndpoint endpoint, uint64_t seed);
  ~LlmClient();
  LlmClient(const LlmClient&) = delete;
  LlmClient& operator=(const LlmClient&) = delete;

  /// POSTs `request` to baseUrl + "/chat/completions", retrying retryable failures; blocks.
  /// Throws LlmError; std::invalid_argument when request.extra is neither an object nor null.
  ChatResponse chat(const ChatRequest& request);
  /// Whether GET baseUrl + "/models" answers 2xx within `timeoutSeconds` (one attempt, no stats).
  bool reachable(double timeoutSeconds = 2);
  /// Makes waiting, backing-off and in-flight requests fail with Kind::Cancelled within ~0.1 s,
  /// and every later chat() at once; the client stays cancelled.
  void cancel();
  /// Whether cancel() was called.
  bool cancelled() const { return cancelled_.load(); }
  /// A snapshot of the totals.
  LlmClientStats stats() const;
  const LlmEndpoint& endpoint() const { return endpoint_; }

 private:
  /// Takes a request slot (at most maxConcurrent held); false when cancelled while waiting.
  bool acquireSlot();
  void releaseSlot();
  /// Sleeps `seconds` unless cancelled first; false when cancelled.
  bool sleepUnlessCancelled(double seconds);
  /// The full-jitter delay before retry number `retry` (1-based).
  double backoffDelay(int retry);
  /// The API key from getenv(apiKeyEnv) ("" when unset or unnamed).
  std::string apiKey() const;

  LlmEndpoint endpoint_;
  bool curlInitialised_ = false;
  std::atomic<bool> cancelled_{false};

  std::mutex slotMutex_;
  std::condition_variable slotChanged_;  ///< a slot was freed, or cancel() was called
  int inFlight_ = 0;

  std::mutex rngMutex_;
  std::mt19937_64 rng_;

  mutable std::mutex statsMutex_;
  LlmClientStats stats_;
};

}  // namespace tcfuzz
