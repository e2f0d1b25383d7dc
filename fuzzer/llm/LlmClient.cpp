#include "fuzzer/llm/LlmClient.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <variant>

#include <curl/curl.h>
#include <fmt/format.h>

namespace tcfuzz {

namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

constexpr size_t kMaxResponseBytes = size_t{32} << 20;  ///< a larger body is a Protocol error
constexpr size_t kServerMessageChars = 300;              ///< of a non-2xx body, in an error
constexpr size_t kBodyExcerptChars = 200;                ///< of a malformed 2xx body, in an error
constexpr long kCancelPollMs = 100;                      ///< cancellation latency of a transfer

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// `seconds` as libcurl milliseconds: 0 (no limit) for non-positive values, else at least 1.
long toMillis(double seconds) {
  if (!(seconds > 0)) return 0;
  return std::max(1L, static_cast<long>(std::llround(std::min(seconds, 1e9) * 1000)));
}

/// At most `maxBytes` of `text`, cut on a UTF-8 character boundary, "..." marking a cut.
std::string truncateUtf8(std::string text, size_t maxBytes) {
  if (text.size() <= maxBytes) return text;
  size_t cut = maxBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  return text + "...";
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

/// A Retry-After value in seconds; nullopt for an HTTP-date or garbage.
std::optional<double> parseRetryAfter(std::string_view value) {
  std::string text(trim(value));
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  double seconds = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(seconds) || seconds < 0) return std::nullopt;
  return seconds;
}

/// One HTTP exchange to make.
struct HttpCall {
  std::string url;
  const std::string* postBody = nullptr;  ///< POST this JSON body; nullptr: GET
  std::string apiKey;                     ///< "" : no Authorization header
  double connectTimeoutSeconds = 5;
  double timeoutSeconds = 120;
};

/// What came back, or why nothing did.
struct HttpReply {
  CURLcode code = CURLE_OK;
  std::string transportError;             ///< libcurl's message when code != CURLE_OK
  long status = 0;
  std::string body;
  std::optional<double> retryAfter;       ///< the Retry-After header, in seconds
  bool bodyTooLarge = false;
};

/// State the libcurl callbacks of one transfer share.
struct Transfer {
  HttpReply* reply;
  const std::atomic<bool>* cancelled;
};

size_t onBody(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  size_t bytes = size * count;
  if (transfer->reply->body.size() + bytes > kMaxResponseBytes) {
    transfer->reply->bodyTooLarge = true;
    return 0;  // aborts with CURLE_WRITE_ERROR
  }
  transfer->reply->body.append(data, bytes);
  return bytes;
}

size_t onHeader(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  std::string_view line(data, size * count);
  if (line.starts_with("HTTP/")) {
    transfer->reply->retryAfter.reset();  // a new response (after a 100 Continue) starts afresh
  } else if (size_t colon = line.find(':'); colon != std::string_view::npos &&
             equalsIgnoreCase(trim(line.substr(0, colon)), "retry-after")) {
    transfer->reply->retryAfter = parseRetryAfter(line.substr(colon + 1));
  }
  return size * count;
}

int onProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<Transfer*>(user)->cancelled->load() ? 1 : 0;  // nonzero aborts the transfer
}

struct EasyDeleter {
  void operator()(CURL* easy) const { curl_easy_cleanup(easy); }
};
struct MultiDeleter {
  void operator()(CURLM* multi) const { curl_multi_cleanup(multi); }
};
struct ListDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

/// Performs `call` on a fresh easy handle driven by a multi handle, so that `cancelled` is
/// noticed within kCancelPollMs even while the server is silent.
HttpReply performHttp(const HttpCall& call, const std::atomic<bool>& cancelled) {
  HttpReply reply;
  Transfer transfer{&reply, &cancelled};
  std::unique_ptr<CURL, EasyDeleter> easy(curl_easy_init());
  std::unique_ptr<CURLM, MultiDeleter> multi(curl_multi_init());
  if (!easy || !multi) {
    reply.code = CURLE_FAILED_INIT;
    reply.transportError = "cannot create a libcurl handle";
    return reply;
  }
  char errorBuffer[CURL_ERROR_SIZE] = {0};

  curl_slist* rawHeaders = nullptr;
  rawHeaders = curl_slist_append(rawHeaders, "Accept: application/json");
  if (call.postBody) {
    rawHeaders = curl_slist_append(rawHeaders, "Content-Type: application/json");
    rawHeaders = curl_slist_append(rawHeaders, "Expect:");  // no 100-continue round trip
  }
  std::string authorization;
  if (!call.apiKey.empty()) {
    authorization = "Authorization: Bearer " + call.apiKey;
    rawHeaders = curl_slist_append(rawHeaders, authorization.c_str());
  }
  std::unique_ptr<curl_slist, ListDeleter> headers(rawHeaders);

  CURL* e = easy.get();
  curl_easy_setopt(e, CURLOPT_URL, call.url.c_str());
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, toMillis(call.connectTimeoutSeconds));
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, toMillis(call.timeoutSeconds));
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(e, CURLOPT_USERAGENT, "tcfuzz/" TCFUZZ_VERSION);
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errorBuffer);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, onBody);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, onHeader);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, onProgress);
  curl_easy_setopt(e, CURLOPT_XFERINFODATA, &transfer);
  if (call.postBody) {
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, call.postBody->data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(call.postBody->size()));
  } else {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  }

  CURLMcode added = curl_multi_add_handle(multi.get(), e);
  if (added != CURLM_OK) {
    reply.code = CURLE_FAILED_INIT;
    reply.transportError = curl_multi_strerror(added);
    return reply;
  }
  bool finished = false;
  for (;;) {
    int running = 0;
    CURLMcode mc = curl_multi_perform(multi.get(), &running);
    if (mc != CURLM_OK) {
      reply.code = CURLE_FAILED_INIT;
      reply.transportError = curl_multi_strerror(mc);
      break;
    }
    if (running == 0) {
      finished = true;
      break;
    }
    if (cancelled.load()) {
      reply.code = CURLE_ABORTED_BY_CALLBACK;
      reply.transportError = "cancelled";
      break;
    }
    mc = curl_multi_poll(multi.get(), nullptr, 0, kCancelPollMs, nullptr);
    if (mc != CURLM_OK) {
      reply.code = CURLE_FAILED_INIT;
      reply.transportError = curl_multi_strerror(mc);
      break;
    }
  }
  if (finished) {
    int queued = 0;
    reply.code = CURLE_FAILED_INIT;
    reply.transportError = "libcurl reported no result";
    while (CURLMsg* message = curl_multi_info_read(multi.get(), &queued)) {
      if (message->msg == CURLMSG_DONE && message->easy_handle == e) {
        reply.code = message->data.result;
        reply.transportError = errorBuffer[0] ? errorBuffer : curl_easy_strerror(reply.code);
      }
    }
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &reply.status);
  }
  curl_multi_remove_handle(multi.get(), e);
  return reply;
}

/// Why one attempt failed.
struct Failure {
  LlmError::Kind kind;
  int httpStatus = 0;
  bool retryable = false;
  std::string detail;                  ///< redacted
  std::optional<double> retryAfter;
};

/// The error text of a non-2xx body: error.message, error (a string) or message, else the body.
std::string serverMessage(const std::string& body) {
  Json parsed = Json::parse(body, nullptr, false);
  if (parsed.is_object()) {
    auto error = parsed.find("error");
    if (error != parsed.end()) {
      if (error->is_string()) return error->get<std::string>();
      if (error->is_object()) {
        auto message = error->find("message");
        if (message != error->end() && message->is_string()) return message->get<std::string>();
      }
    }
    auto message = parsed.find("message");
    if (message != parsed.end() && message->is_string()) return message->get<std::string>();
  }
  return body;
}

int64_t usageCount(const Json& usage, const char* field) {
  auto it = usage.find(field);
  return it != usage.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

/// The chat completion in a 2xx body, or a Protocol failure.
std::variant<ChatResponse, Failure> parseCompletion(const std::string& body, long status,
                                                    const std::string& secret) {
  auto protocolFailure = [&](const std::string& what) {
    std::string excerpt = truncateUtf8(redact(body, secret), kBodyExcerptChars);
    std::string quoted = Json(excerpt).dump(-1, ' ', false, Json::error_handler_t::replace);
    return Failure{LlmError::Kind::Protocol, static_cast<int>(status), false,
                   fmt::format("HTTP {} with {}: {}", status, what, quoted), std::nullopt};
  };
  Json parsed = Json::parse(body, nullptr, false);
  if (parsed.is_discarded()) return protocolFailure("a body that is not JSON");
  if (!parsed.is_object()) return protocolFailure("a JSON body that is not an object");
  auto choices = parsed.find("choices");
  if (choices == parsed.end() || !choices->is_array() || choices->empty())
    return protocolFailure("no choices in the body");
  const Json& choice = (*choices)[0];
  if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object())
    return protocolFailure("no choices[0].message in the body");
  auto content = choice["message"].find("content");
  if (content == choice["message"].end() || !content->is_string())
    return protocolFailure("no string choices[0].message.content in the body");

  ChatResponse response;
  response.content = content->get<std::string>();
  auto finish = choice.find("finish_reason");
  if (finish != choice.end() && finish->is_string()) response.finishReason = finish->get<std::string>();
  auto usage = parsed.find("usage");
  if (usage != parsed.end() && usage->is_object()) {
    response.promptTokens = usageCount(*usage, "prompt_tokens");
    response.completionTokens = usageCount(*usage, "completion_tokens");
  }
  return response;
}

/// What one attempt's reply means: a completion, or a failure saying whether to retry.
std::variant<ChatResponse, Failure> interpret(const HttpReply& reply, const std::string& secret) {
  using Kind = LlmError::Kind;
  if (reply.code != CURLE_OK) {
    std::string message = redact(reply.transportError, secret);
    switch (reply.code) {
      case CURLE_ABORTED_BY_CALLBACK:
        return Failure{Kind::Cancelled, 0, false, "cancelled", std::nullopt};
      case CURLE_OPERATION_TIMEDOUT:
        return Failure{Kind::Timeout, 0, true, "timed out: " + message, std::nullopt};
      case CURLE_COULDNT_CONNECT:
      case CURLE_SEND_ERROR:
      case CURLE_RECV_ERROR:
      case CURLE_GOT_NOTHING:
      case CURLE_PARTIAL_FILE:
      case CURLE_HTTP2:
      case CURLE_HTTP2_STREAM:
        return Failure{Kind::Connect, 0, true, "connection failed: " + message, std::nullopt};
      case CURLE_WRITE_ERROR:
        if (reply.bodyTooLarge)
          return Failure{Kind::Protocol, static_cast<int>(reply.status), false,
                         fmt::format("response body over {} bytes", kMaxResponseBytes), std::nullopt};
        [[fallthrough]];
      default:  // DNS, TLS, a malformed URL: retrying will not help
        return Failure{Kind::Connect, 0, false,
                       fmt::format("{} (curl error {})", message, static_cast<int>(reply.code)), std::nullopt};
    }
  }
  if (reply.status >= 200 && reply.status < 300) return parseCompletion(reply.body, reply.status, secret);

  std::string text = truncateUtf8(std::string(trim(redact(serverMessage(reply.body), secret))), kServerMessageChars);
  std::string detail = fmt::format("HTTP {}{}{}", reply.status, text.empty() ? "" : ": ", text);
  int status = static_cast<int>(reply.status);
  if (status == 429) return Failure{Kind::RateLimited, status, true, detail, reply.retryAfter};
  bool retryable = status == 500 || status == 502 || status == 503 || status == 504;
  return Failure{Kind::Http, status, retryable, detail, retryable ? reply.retryAfter : std::nullopt};
}

/// The JSON body of `request` for `model`. Throws std::invalid_argument for a non-object extra.
std::string requestBody(const ChatRequest& request, const std::string& model) {
  if (!request.extra.is_null() && !request.extra.is_object())
    throw std::invalid_argument("ChatRequest::extra must be a JSON object");
  Json messages = Json::array();
  for (const ChatMessage& m : request.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
  Json body = {{"model", model},
               {"messages", std::move(messages)},
               {"temperature", request.temperature},
               {"top_p", request.topP},
               {"max_tokens", request.maxTokens},
               {"stream", false}};
  if (request.seed) body["seed"] = *request.seed;
  if (!request.grammar.empty()) body["grammar"] = request.grammar;
  if (request.extra.is_object()) body.update(request.extra);
  // Prompts may carry bytes from generated programs: replace invalid UTF-8 rather than throw.
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

LlmError::LlmError(Kind kind, const std::string& message, int httpStatus, bool retryable, int attempts)
    : std::runtime_error(message), kind(kind), httpStatus(httpStatus), retryable(retryable), attempts(attempts) {}

const char* toString(LlmError::Kind kind) {
  switch (kind) {
    case LlmError::Kind::Connect: return "Connect";
    case LlmError::Kind::Timeout: return "Timeout";
    case LlmError::Kind::Http: return "Http";
    case LlmError::Kind::RateLimited: return "RateLimited";
    case LlmError::Kind::Protocol: return "Protocol";
    case LlmError::Kind::Cancelled: return "Cancelled";
  }
  return "Unknown";
}

std::string redact(const std::string& text, const std::string& secret) {
  if (secret.empty()) return text;
  static constexpr std::string_view kMark = "[redacted]";
  std::string out;
  out.reserve(text.size());
  size_t from = 0;
  for (size_t at; (at = text.find(secret, from)) != std::string::npos; from = at + secret.size()) {
    out.append(text, from, at - from);
    out.append(kMark);
  }
  out.append(text, from, std::string::npos);
  return out;
}

nlohmann::json LlmClientStats::toJson() const {
  return {{"requests", requests},
          {"succeeded", succeeded},
          {"failed", failed},
          {"retries", retries},
          {"rateLimited", rateLimited},
          {"promptTokens", promptTokens},
          {"completionTokens", completionTokens},
          {"seconds", seconds}};
}

LlmClient::LlmClient(LlmEndpoint endpoint, uint64_t seed) : endpoint_(std::move(endpoint)), rng_(seed) {
  // Thread-safe and reference-counted since libcurl 7.84.
  CURLcode code = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (code != CURLE_OK)
    throw std::runtime_error(fmt::format("curl_global_init failed: {}", curl_easy_strerror(code)));
  curlInitialised_ = true;
}

LlmClient::~LlmClient() {
  if (curlInitialised_) curl_global_cleanup();
}

std::string LlmClient::apiKey() const {
  if (endpoint_.apiKeyEnv.empty()) return "";
  const char* value = std::getenv(endpoint_.apiKeyEnv.c_str());
  return value ? value : "";
}

bool LlmClient::acquireSlot() {
  std::unique_lock lock(slotMutex_);
  int limit = std::max(1, endpoint_.maxConcurrent);
  slotChanged_.wait(lock, [&] { return cancelled_.load() || inFlight_ < limit; });
  if (cancelled_.load()) return false;
  ++inFlight_;
  return true;
}

void LlmClient::releaseSlot() {
  {
    std::lock_guard lock(slotMutex_);
    --inFlight_;
  }
  slotChanged_.notify_one();
}

bool LlmClient::sleepUnlessCancelled(double seconds) {
  std::unique_lock lock(slotMutex_);
  auto wait = std::chrono::duration<double>(std::max(0.0, seconds));
  return !slotChanged_.wait_for(lock, wait, [&] { return cancelled_.load(); });
}

double LlmClient::backoffDelay(int retry) {
  double cap = std::min(endpoint_.maxBackoffSeconds, std::ldexp(endpoint_.backoffSeconds, retry - 1));
  if (!(cap > 0)) return 0;
  std::lock_guard lock(rngMutex_);
  return std::uniform_real_distribution<double>(0, cap)(rng_);
}

void LlmClient::cancel() {
  {
    std::lock_guard lock(slotMutex_);  // under the mutex: no waiter misses the wake-up
    cancelled_.store(true);
  }
  slotChanged_.notify_all();
}

LlmClientStats LlmClient::stats() const {
  std::lock_guard lock(statsMutex_);
  return stats_;
}

ChatResponse LlmClient::chat(const ChatRequest& request) {
  const auto start = Clock::now();
  const std::string body = requestBody(request, endpoint_.model);
  const std::string secret = apiKey();
  HttpCall call{endpoint_.baseUrl + "/chat/completions", &body, secret, endpoint_.connectTimeoutSeconds,
                endpoint_.requestTimeoutSeconds};
  {
    std::lock_guard lock(statsMutex_);
    ++stats_.requests;
  }
  int attempts = 0;
  auto giveUp = [&](const Failure& failure) {
    double seconds = secondsSince(start);
    {
      std::lock_guard lock(statsMutex_);
      ++stats_.failed;
      stats_.seconds += seconds;
    }
    std::string message = fmt::format("LLM request to {} failed ({}) after {} attempt{}: {}", call.url,
                                      toString(failure.kind), attempts, attempts == 1 ? "" : "s", failure.detail);
    return LlmError(failure.kind, redact(message, secret), failure.httpStatus, failure.retryable, attempts);
  };
  const Failure cancelledFailure{LlmError::Kind::Cancelled, 0, false, "cancelled", std::nullopt};

  for (;;) {
    if (!acquireSlot()) throw giveUp(cancelledFailure);
    HttpReply reply;
    try {
      ++attempts;
      reply = performHttp(call, cancelled_);
    } catch (...) {
      releaseSlot();
      throw;
    }
    releaseSlot();

    auto outcome = interpret(reply, secret);
    if (auto* response = std::get_if<ChatResponse>(&outcome)) {
      response->attempts = attempts;
      response->seconds = secondsSince(start);
      std::lock_guard lock(statsMutex_);
      ++stats_.succeeded;
      stats_.promptTokens += response->promptTokens;
      stats_.completionTokens += response->completionTokens;
      stats_.seconds += response->seconds;
      return std::move(*response);
    }
    const Failure& failure = std::get<Failure>(outcome);
    if (failure.kind == LlmError::Kind::RateLimited) {
      std::lock_guard lock(statsMutex_);
      ++stats_.rateLimited;
    }
    if (!failure.retryable || attempts > endpoint_.maxRetries) throw giveUp(failure);
    double delay = failure.retryAfter ? std::min(*failure.retryAfter, endpoint_.maxBackoffSeconds)
                                      : backoffDelay(attempts);
    {
      std::lock_guard lock(statsMutex_);
      ++stats_.retries;
    }
    if (!sleepUnlessCancelled(delay)) throw giveUp(cancelledFailure);
  }
}

bool LlmClient::reachable(double timeoutSeconds) {
  HttpCall call{endpoint_.baseUrl + "/models", nullptr, apiKey(),
                std::min(endpoint_.connectTimeoutSeconds, timeoutSeconds), timeoutSeconds};
  HttpReply reply = performHttp(call, cancelled_);
  return reply.code == CURLE_OK && reply.status >= 200 && reply.status < 300;
}

}  // namespace tcfuzz
