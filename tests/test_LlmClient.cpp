// LlmClient against tests/fixtures/llm_fault_server.py, a TEST FIXTURE that plants faults
// (rate limits, 5xx, 4xx, slow and malformed answers); it is not an LLM.
#include "fuzzer/llm/LlmClient.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/process.hpp>
#include <gtest/gtest.h>

#include "tests/TestWorkers.h"

namespace tcfuzz {
namespace {

namespace bp = boost::process;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using test_support::TempDir;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The fault server as a child process: it answers POSTs by the steps of `script`.
class FaultServer {
 public:
  FaultServer(const Json& script, const std::filesystem::path& dir) : log_(dir / "requests.jsonl") {
    std::filesystem::path scriptPath = dir / "script.json";
    std::ofstream(scriptPath) << script.dump();
    child_ = bp::child(TCFUZZ_DEFAULT_PYTHON, test_support::sourcePath("tests/fixtures/llm_fault_server.py").string(),
                       "--script", scriptPath.string(), "--log", log_.string(), bp::std_out > out_);
    std::string line;
    if (!std::getline(out_, line)) throw std::runtime_error("the fault server printed no port");
    port_ = std::stoi(line);
  }
  ~FaultServer() {
    std::error_code ec;
    if (child_.running(ec)) child_.terminate(ec);
    child_.wait(ec);
  }

  std::string baseUrl() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }

  /// The requests the server logged, in arrival order.
  std::vector<Json> requests() const {
    std::vector<Json> out;
    std::ifstream in(log_);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(Json::parse(line));
    return out;
  }

  /// The logged POSTs to /v1/chat/completions.
  std::vector<Json> chatRequests() const {
    std::vector<Json> out;
    for (Json& r : requests())
      if (r["method"] == "POST" && r["path"] == "/v1/chat/completions") out.push_back(std::move(r));
    return out;
  }

 private:
  std::filesystem::path log_;
  bp::ipstream out_;
  bp::child child_;
  int port_ = 0;
};

/// A localhost port nothing listens on (bound, then closed).
int closedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

ChatRequest userRequest(const std::string& text) {
  ChatRequest request;
  request.messages = {{"user", text}};
  return request;
}

class LlmClientTest : public ::testing::Test {
 protected:
  void TearDown() override { server_.reset(); }

  /// Starts the fault server with `script`; returns an endpoint for it with fast retries.
  LlmEndpoint serve(const Json& script) {
    server_ = std::make_unique<FaultServer>(script, dir_.path());
    return fastEndpoint(server_->baseUrl());
  }

  static LlmEndpoint fastEndpoint(const std::string& baseUrl) {
    LlmEndpoint endpoint;
    endpoint.baseUrl = baseUrl;
    endpoint.model = "fault-model";
    endpoint.backoffSeconds = 0.02;
    endpoint.maxBackoffSeconds = 0.2;
    endpoint.requestTimeoutSeconds = 10;
    return endpoint;
  }

  FaultServer& server() { return *server_; }

  TempDir dir_{"tcfuzz-llmclient"};
  std::unique_ptr<FaultServer> server_;
};

TEST_F(LlmClientTest, SuccessParsesAnswerAndSendsEveryField) {
  LlmEndpoint endpoint = serve(Json::parse(R"([{"status": 200, "content": "hello", "finish_reason": "length",
                                                "usage": {"prompt_tokens": 7, "completion_tokens": 3}}])"));
  LlmClient client(endpoint, 1);
  ChatRequest request;
  request.messages = {{"system", "You write PyTorch programs."}, {"user", "one program"}};
  request.temperature = 0.25;
  request.topP = 0.5;
  request.maxTokens = 64;
  request.seed = 42;
  request.grammar = "root ::= \"a\"";
  request.extra = {{"response_format", {{"type", "text"}}}};

  ChatResponse response = client.chat(request);
  EXPECT_EQ(response.content, "hello");
  EXPECT_EQ(response.finishReason, "length");
  EXPECT_EQ(response.promptTokens, 7);
  EXPECT_EQ(response.completionTokens, 3);
  EXPECT_EQ(response.attempts, 1);
  EXPECT_GT(response.seconds, 0);

  std::vector<Json> seen = server().chatRequests();
  ASSERT_EQ(seen.size(), 1u);
  const Json& body = seen[0]["body"];
  EXPECT_EQ(body["model"], "fault-model");
  EXPECT_EQ(body["messages"], Json::parse(R"([{"role": "system", "content": "You write PyTorch programs."},
                                              {"role": "user", "content": "one program"}])"));
  EXPECT_DOUBLE_EQ(body["temperature"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(body["top_p"].get<double>(), 0.5);
  EXPECT_EQ(body["max_tokens"], 64);
  EXPECT_EQ(body["seed"], 42);
  EXPECT_EQ(body["grammar"], "root ::= \"a\"");
  EXPECT_EQ(body["response_format"]["type"], "text");
  EXPECT_EQ(body["stream"], false);
  EXPECT_FALSE(seen[0]["headers"].contains("Authorization"));
  EXPECT_EQ(seen[0]["headers"]["Content-Type"], "application/json");

  LlmClientStats stats = client.stats();
  EXPECT_EQ(stats.requests, 1);
  EXPECT_EQ(stats.succeeded, 1);
  EXPECT_EQ(stats.failed, 0);
  EXPECT_EQ(stats.retries, 0);
  EXPECT_EQ(stats.promptTokens, 7);
  EXPECT_EQ(stats.completionTokens, 3);
  Json json = stats.toJson();
  EXPECT_EQ(json["succeeded"], 1);
  EXPECT_EQ(json["completionTokens"], 3);
  EXPECT_TRUE(json.contains("seconds"));
}

TEST_F(LlmClientTest, OmitsSeedAndGrammarWhenUnset) {
  LlmClient client(serve(Json::parse(R"([{"status": 200}])")), 2);
  EXPECT_EQ(client.chat(userRequest("hi")).content, "ok");
  Json body = server().chatRequests().at(0)["body"];
  EXPECT_FALSE(body.contains("seed"));
  EXPECT_FALSE(body.contains("grammar"));
  EXPECT_EQ(body["max_tokens"], 512);
}

TEST_F(LlmClientTest, RateLimitHonoursRetryAfter) {
  // The backoff is 0.02 s: only the Retry-After header can make the client wait a second.
  LlmEndpoint endpoint = serve(Json::parse(R"([{"status": 429, "retry_after": 1}, {"status": 200, "content": "hello"}])"));
  endpoint.maxBackoffSeconds = 30;
  LlmClient client(endpoint, 3);
  auto start = Clock::now();
  ChatResponse response = client.chat(userRequest("hi"));
  double elapsed = secondsSince(start);
  EXPECT_EQ(response.content, "hello");
  EXPECT_EQ(response.attempts, 2);
  EXPECT_GE(elapsed, 0.9);
  EXPECT_GE(response.seconds, 0.9);
  EXPECT_LT(elapsed, 5);
  LlmClientStats stats = client.stats();
  EXPECT_EQ(stats.rateLimited, 1);
  EXPECT_EQ(stats.retries, 1);
  EXPECT_EQ(stats.succeeded, 1);
  EXPECT_EQ(server().chatRequests().size(), 2u);
}

TEST_F(LlmClientTest, RetryAfterIsCappedByMaxBackoff) {
  LlmEndpoint endpoint = serve(Json::parse(R"([{"status": 429, "retry_after": 60}, {"status": 200}])"));
  endpoint.maxBackoffSeconds = 0.3;
  LlmClient client(endpoint, 4);
  auto start = Clock::now();
  EXPECT_EQ(client.chat(userRequest("hi")).attempts, 2);
  double elapsed = secondsSince(start);
  EXPECT_GE(elapsed, 0.25);
  EXPECT_LT(elapsed, 3);
}

TEST_F(LlmClientTest, RateLimitedToTheEndIsRateLimitedError) {
  LlmEndpoint endpoint = serve(Json::parse(R"([{"status": 429, "error": "slow down"}])"));
  endpoint.maxRetries = 1;
  LlmClient client(endpoint, 5);
  try {
    client.chat(userRequest("hi"));
    FAIL() << "no LlmError";
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind, LlmError::Kind::RateLimited);
    EXPECT_EQ(e.httpStatus, 429);
    EXPECT_TRUE(e.retryable);
    EXPECT_EQ(e.attempts, 2);
    EXPECT_NE(std::string(e.what()).find("slow down"), std::string::npos) << e.what();
  }
  EXPECT_EQ(client.stats().rateLimited, 2);
  EXPECT_EQ(client.stats().failed, 1);
}

TEST_F(LlmClientTest, ServiceUnavailableIsRetried) {
  LlmClient client(serve(Json::parse(R"([{"status": 503}, {"status": 503}, {"status": 200, "content": "third"}])")), 6);
  ChatResponse response = client.chat(userRequest("hi"));
  EXPECT_EQ(response.content, "third");
  EXPECT_EQ(response.attempts, 3);
  EXPECT_EQ(client.stats().retries, 2);
  EXPECT_EQ(client.stats().rateLimited, 0);
  EXPECT_EQ(server().chatRequests().size(), 3u);
}

TEST_F(LlmClientTest, ServiceUnavailableExhaustsRetries) {
  LlmEndpoint endpoint = serve(Json::parse(R"([{"status": 503}, {"status": 503}, {"status": 503},
                                               {"status": 503}, {"status": 503}])"));
  endpoint.maxRetries = 2;
  LlmClient client(endpoint, 7);
  try {
    client.chat(userRequest("hi"));
    FAIL() << "no LlmError";
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind, LlmError::Kind::Http);
    EXPECT_EQ(e.httpStatus, 503);
    EXPECT_TRUE(e.retryable);
    EXPECT_EQ(e.attempts, 3);
    EXPECT_NE(std::string(e.what()).find("after 3 attempts"), std::string::npos) << e.what();
  }
  LlmClientStats stats = client.stats();
  EXPECT_EQ(stats.requests, 1);
  EXPECT_EQ(stats.failed, 1);
  EXPECT_EQ(stats.succeeded, 0);
  EXPECT_EQ(stats.retries, 2);
  EXPECT_EQ(server().chatRequests().size(), 3u);
}

TEST_F(LlmClientTest, BadRequestIsNotRetriedAndQuotesTheServer) {
  LlmClient client(serve(Json::parse(R"([{"status": 400, "error": "max_tokens is too large for this model"}])")), 8);
  try {
    client.chat(userRequest("hi"));
    FAIL() << "no LlmError";
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind, LlmError::Kind::Http);
    EXPECT_EQ(e.httpStatus, 400);
    EXPECT_FALSE(e.retryable);
    EXPECT_EQ(e.attempts, 1);
    EXPECT_NE(std::string(e.what()).find("HTTP 400: max_tokens is too large for this model"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(server().chatRequests().size(), 1u);
  EXPECT_EQ(client.stats().retries, 0);
}

TEST_F(LlmClientTest, LongServerMessageIsTruncated) {
  Json script = Json::array({{{"status", 404}, {"error", std::string(1000, 'x')}}});
  LlmClient client(serve(script), 9);
  try {
    client.chat(userRequest("hi"));
    FAIL() << "no LlmError";
  } catch (const LlmError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(std::string(300, 'x') + "..."), std::string::npos) << what;
    EXPECT_EQ(what.find(std::string(301, 'x')), std::string::npos);
  }
}

TEST_F(LlmClientTest, MalformedBodyIsProtocolError) {
  LlmClient client(serve(Json::parse(R"([{"status": 200, "raw": "not json at all"}])")), 10);
  try {
    client.chat(userRequest("hi"));
    FAIL() << "no LlmError";
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind, LlmError::Kind::Protocol);
    EXPECT_FALSE(e.retryable);
    EXPECT_EQ(e.httpStatus, 200);
    std::string what = e.what();
    EXPECT_NE(what.find("not JSON"), std::string::npos) << what;
    EXPECT_NE(what.find("not json at all"), std::string::npos) << what;
  }
  EXPECT_EQ(server().chatRequests().size(), 1u);
}

TEST_F(LlmClientTest, MissingChoicesIsProtocolError) {
  LlmClient client(serve(Json::parse(R"([{"status": 200, "raw": "{\"id\": \"x\", \"choices\": []}"}])")), 11);
  try {
    client.chat(userRequest("hi"));
    FAIL() << "no LlmError";
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind, LlmError::Kind::Protocol);
    EXPECT_NE(std::string(e.what()).find("no choices"), std::string::npos) << e.what();
  }
}

TEST_F(LlmClientTest, SlowServerTimesOut) {
  LlmEndpoint endpoint = serve(Json::parse(R"([{"sleep": 5}])"));
  endpoint.requestTimeoutSeconds = 0.5;
  endpoint.maxRetries = 0;
  LlmClient client(endpoint, 12);
  auto start = Clock::now();
  try {
    client.chat(userRequest("hi"));
    FAIL() << "no LlmError";
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind, LlmError::Kind::Timeout);
    EXPECT_TRUE(e.retryable);
    EXPECT_EQ(e.attempts, 1);
  }
  double elapsed = secondsSince(start);
  EXPECT_GE(elapsed, 0.4);
  EXPECT_LT(elapsed, 2);
}

TEST_F(LlmClientTest, ConnectionRefusedIsConnectErrorAfterRetries) {
  LlmEndpoint endpoint = fastEndpoint("http://127.0.0.1:" + std::to_string(closedPort()) + "/v1");
  endpoint.maxRetries = 2;
  LlmClient client(endpoint, 13);
  try {
    client.chat(userRequest("hi"));
    FAIL() << "no LlmError";
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind, LlmError::Kind::Connect);
    EXPECT_TRUE(e.retryable);
    EXPECT_EQ(e.attempts, 3);
    EXPECT_EQ(e.httpStatus, 0);
  }
  EXPECT_EQ(client.stats().retries, 2);
  EXPECT_EQ(client.stats().failed, 1);
}

TEST_F(LlmClientTest, DroppedConnectionIsRetried) {
  LlmClient client(serve(Json::parse(R"([{"close": true}, {"status": 200, "content": "second"}])")), 14);
  ChatResponse response = client.chat(userRequest("hi"));
  EXPECT_EQ(response.content, "second");
  EXPECT_EQ(response.attempts, 2);
}

TEST_F(LlmClientTest, ApiKeyIsSentAndNeverShown) {
  const char* key = "sk-test-123";
  ::setenv("TCFUZZ_TEST_LLM_KEY", key, 1);
  LlmEndpoint endpoint = serve(Json::parse(R"([{"status": 200},
                                               {"status": 400, "error": "bad key", "echo_auth": true}])"));
  endpoint.apiKeyEnv = "TCFUZZ_TEST_LLM_KEY";
  LlmClient client(endpoint, 15);
  EXPECT_EQ(client.chat(userRequest("hi")).content, "ok");
  try {
    client.chat(userRequest("again"));
    FAIL() << "no LlmError";
  } catch (const LlmError& e) {
    std::string what = e.what();
    EXPECT_EQ(e.kind, LlmError::Kind::Http);
    EXPECT_EQ(what.find(key), std::string::npos) << what;
    EXPECT_NE(what.find("bad key (you sent Authorization: Bearer [redacted])"), std::string::npos) << what;
  }
  ::unsetenv("TCFUZZ_TEST_LLM_KEY");

  std::vector<Json> seen = server().chatRequests();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0]["headers"]["Authorization"], "Bearer sk-test-123");
  EXPECT_EQ(seen[1]["headers"]["Authorization"], "Bearer sk-test-123");
}

TEST(Redact, ReplacesEveryOccurrence) {
  EXPECT_EQ(redact("key=sk-1 and sk-1.", "sk-1"), "key=[redacted] and [redacted].");
  EXPECT_EQ(redact("nothing here", "sk-1"), "nothing here");
  EXPECT_EQ(redact("no secret given", ""), "no secret given");
}

TEST_F(LlmClientTest, ConcurrencyIsCapped) {
  LlmEndpoint endpoint = serve(Json::parse(R"([{"sleep": 0.5, "content": "slow"}])"));
  endpoint.maxConcurrent = 2;
  LlmClient client(endpoint, 16);
  std::vector<std::string> answers(6);
  std::vector<std::thread> threads;
  auto start = Clock::now();
  for (int i = 0; i < 6; ++i)
    threads.emplace_back([&, i] {
      try {
        answers[i] = client.chat(userRequest("request " + std::to_string(i))).content;
      } catch (const LlmError& e) {
        answers[i] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  double elapsed = secondsSince(start);
  for (const std::string& answer : answers) EXPECT_EQ(answer, "slow");
  std::vector<Json> seen = server().chatRequests();
  ASSERT_EQ(seen.size(), 6u);
  int maxInFlight = 0;
  for (const Json& r : seen) maxInFlight = std::max(maxInFlight, r["in_flight"].get<int>());
  EXPECT_EQ(maxInFlight, 2);
  EXPECT_GE(elapsed, 1.4);  // three waves of two
  EXPECT_EQ(client.stats().succeeded, 6);
}

TEST_F(LlmClientTest, CancelStopsInFlightAndWaitingRequests) {
  LlmEndpoint endpoint = serve(Json::parse(R"([{"sleep": 5}])"));
  endpoint.maxConcurrent = 1;
  LlmClient client(endpoint, 17);
  std::vector<LlmError::Kind> kinds(2, LlmError::Kind::Connect);
  std::vector<int> attempts(2, -1);
  std::vector<Clock::time_point> ended(2);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i)
    threads.emplace_back([&, i] {
      try {
        client.chat(userRequest("hi"));
      } catch (const LlmError& e) {
        kinds[i] = e.kind;
        attempts[i] = e.attempts;
      }
      ended[i] = Clock::now();
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto cancelledAt = Clock::now();
  client.cancel();
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(kinds[i], LlmError::Kind::Cancelled);
    EXPECT_LT(std::chrono::duration<double>(ended[i] - cancelledAt).count(), 1.0);
  }
  // One was in flight (an attempt made), the other waited for the slot (none made).
  EXPECT_EQ(attempts[0] + attempts[1], 1);
  EXPECT_EQ(server().chatRequests().size(), 1u);
  EXPECT_TRUE(client.cancelled());
  EXPECT_EQ(client.stats().failed, 2);

  try {
    client.chat(userRequest("later"));
    FAIL() << "no LlmError";
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind, LlmError::Kind::Cancelled);
    EXPECT_EQ(e.attempts, 0);
  }
}

TEST_F(LlmClientTest, CancelInterruptsBackoff) {
  LlmEndpoint endpoint = serve(Json::parse(R"([{"status": 429, "retry_after": 20}])"));
  endpoint.maxBackoffSeconds = 30;
  LlmClient client(endpoint, 18);
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    client.cancel();
  });
  auto start = Clock::now();
  try {
    client.chat(userRequest("hi"));
    FAIL() << "no LlmError";
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind, LlmError::Kind::Cancelled);
    EXPECT_EQ(e.attempts, 1);
  }
  canceller.join();
  EXPECT_LT(secondsSince(start), 1.3);
  EXPECT_EQ(client.stats().rateLimited, 1);
}

TEST_F(LlmClientTest, ReachableAnswersModelsAndFailsOnClosedPort) {
  LlmClient up(serve(Json::array()), 19);
  EXPECT_TRUE(up.reachable());
  std::vector<Json> seen = server().requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0]["method"], "GET");
  EXPECT_EQ(seen[0]["path"], "/v1/models");
  EXPECT_EQ(up.stats().requests, 0);

  LlmClient down(fastEndpoint("http://127.0.0.1:" + std::to_string(closedPort()) + "/v1"), 20);
  auto start = Clock::now();
  EXPECT_FALSE(down.reachable(1));
  EXPECT_LT(secondsSince(start), 2);
}

}  // namespace
}  // namespace tcfuzz
