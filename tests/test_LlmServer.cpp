// The embedded llama.cpp server: the real llama-cpp-python server with the bundled SmolLM2 model.
#include <csignal>
#include <thread>

#include <gtest/gtest.h>

#include "fuzzer/llm/LlmClient.h"
#include "fuzzer/llm/LlmServer.h"
#include "TestWorkers.h"

using namespace tcfuzz;
using tcfuzz::test_support::TempDir;

TEST(LlmServer, BundledModelIsTheSmolLM2GgufOfTheInstalledPackage) {
  auto model = LlmServer::bundledModel(TCFUZZ_DEFAULT_PYTHON);
  EXPECT_EQ(model.filename().string(), "SmolLM2-135M-Instruct.Q4_1.gguf");
  EXPECT_GT(std::filesystem::file_size(model), 50u << 20);
}

TEST(LlmServer, StartsAnswersAChatRestartsAfterSigkillAndStops) {
  TempDir dir("tcfuzz-llmserver");
  LlmServerSettings settings;
  settings.python = TCFUZZ_DEFAULT_PYTHON;
  settings.logFile = dir.path() / "server.log";
  LlmServer server(settings);
  server.start();
  ASSERT_TRUE(server.running());
  EXPECT_TRUE(server.baseUrl().starts_with("http://127.0.0.1:"));
  EXPECT_EQ(server.modelName(), "SmolLM2-135M-Instruct.Q4_1");

  LlmEndpoint endpoint;
  endpoint.baseUrl = server.baseUrl();
  endpoint.model = server.modelName();
  endpoint.maxRetries = 0;
  LlmClient client(endpoint, 1);
  ChatRequest request;
  request.messages = {{"user", "Say hello."}};
  request.maxTokens = 8;
  request.temperature = 0;
  request.seed = 1;
  ChatResponse reply = client.chat(request);
  EXPECT_FALSE(reply.content.empty());
  EXPECT_GT(reply.promptTokens, 0);
  EXPECT_GT(reply.completionTokens, 0);

  // A GBNF grammar is honoured: the reply is exactly one of the allowed words.
  request.grammar = "root ::= \"yes\" | \"no\"";
  request.maxTokens = 4;
  reply = client.chat(request);
  EXPECT_TRUE(reply.content == "yes" || reply.content == "no") << reply.content;

  pid_t first = server.pid();
  ASSERT_GT(first, 0);
  ::kill(first, SIGKILL);
  for (int i = 0; i < 50 && server.running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(server.running());
  EXPECT_FALSE(client.reachable(1.0));
  std::string url = server.baseUrl();
  server.restart();
  EXPECT_EQ(server.restarts(), 1);
  EXPECT_EQ(server.baseUrl(), url);  // same port: clients keep working
  EXPECT_NE(server.pid(), first);
  EXPECT_TRUE(client.reachable(2.0));
  server.stop();
  EXPECT_FALSE(server.running());
  EXPECT_EQ(server.pid(), -1);
}

TEST(LlmServer, AModelFileThatDoesNotLoadIsAnErrorWithTheServerLog) {
  TempDir dir("tcfuzz-llmserver");
  std::ofstream(dir.path() / "broken.gguf") << "this is not a GGUF file";
  LlmServerSettings settings;
  settings.python = TCFUZZ_DEFAULT_PYTHON;
  settings.model = dir.path() / "broken.gguf";
  settings.logFile = dir.path() / "server.log";
  settings.startTimeoutSeconds = 60;
  LlmServer server(settings);
  try {
    server.start();
    FAIL() << "a broken model file started";
  } catch (const LlmServerError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("exited with code"), std::string::npos) << what;
    EXPECT_NE(what.find("server.log"), std::string::npos) << what;
  }
  EXPECT_FALSE(server.running());
}
