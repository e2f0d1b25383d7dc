// Tests of oracles/infra/SecretRedactor (which secrets, how they are masked, the masking stream) and the
// end-to-end check that redaction is complete: fake secrets planted in tcfuzz's environment and in a
// planted program and backend never reach a file under the output directory, stdout or stderr.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/process.hpp>
#include <nlohmann/json.hpp>

#include "oracles/infra/SecretRedactor.h"
#include "tests/TestWorkers.h"

namespace tcfuzz {
namespace {

namespace fs = std::filesystem;
using test_support::readText;
using test_support::sandboxArg;
using test_support::sourcePath;
using test_support::TempDir;

/// An environment block as `environ` holds it.
struct Environment {
  explicit Environment(std::vector<std::string> entries) : entries_(std::move(entries)) {
    for (auto& e : entries_) pointers_.push_back(e.data());
    pointers_.push_back(nullptr);
  }
  char** get() { return pointers_.data(); }

 private:
  std::vector<std::string> entries_;
  std::vector<char*> pointers_;
};

TEST(SecretRedactor, CredentialNamesAreRecognizedAndOrdinaryOnesAreNot) {
  for (const char* name : {"TCFUZZ_LLM_API_KEY", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                           "GITHUB_TOKEN", "HF_TOKEN", "DB_PASSWORD", "MYSQL_PASSWD", "DB_PASS", "SSH_PRIVATE_KEY",
                           "GOOGLE_APPLICATION_CREDENTIALS", "WANDB_APIKEY", "KEY", "github_token", "Stripe_Key"})
    EXPECT_TRUE(SecretRedactor::looksLikeCredential(name)) << name;
  for (const char* name : {"PATH", "PWD", "OLDPWD", "HOME", "USER", "KEYBOARD_LAYOUT", "MONKEY", "PASSAGE",
                           "TORCHINDUCTOR_CACHE_DIR", "TMPDIR", "LANG", "PYTHONPATH"})
    EXPECT_FALSE(SecretRedactor::looksLikeCredential(name)) << name;
}

TEST(SecretRedactor, TakesConfiguredAndCredentialVariablesButNotShortValues) {
  Environment env({"MY_ENDPOINT=endpoint-credential-9f2c", "HF_TOKEN=hf_abcdefghijklmnop", "GITHUB_TOKEN=short",
                   "PATH=/usr/local/bin:/usr/bin", "HOME=/home/researcher", "NOEQUALS", "=nameless-value-123"});
  SecretRedactor r = SecretRedactor::fromEnvironment(env.get(), {"MY_ENDPOINT"});
  EXPECT_EQ(r.names(), (std::vector<std::string>{"HF_TOKEN", "MY_ENDPOINT"}));
  EXPECT_EQ(r.mask("key endpoint-credential-9f2c, hf hf_abcdefghijklmnop, gh short, in /usr/local/bin:/usr/bin"),
            "key [REDACTED:MY_ENDPOINT], hf [REDACTED:HF_TOKEN], gh short, in /usr/local/bin:/usr/bin");
  // Without the configured name, MY_ENDPOINT is an ordinary variable.
  EXPECT_EQ(SecretRedactor::fromEnvironment(env.get(), {}).names(), (std::vector<std::string>{"HF_TOKEN"}));
}

TEST(SecretRedactor, MasksEveryOccurrenceLongestFirstAndLeavesOtherTextAlone) {
  SecretRedactor r;
  r.add("SHORT_KEY", "abcd");  // under kMinSecretLength: ignored
  r.add("A_TOKEN", "token-1234567");
  r.add("B_TOKEN", "token-1234567-extended");  // holds A_TOKEN's value: the longer one wins
  EXPECT_EQ(r.mask("abcd token-1234567 x token-1234567-extended token-1234567token-1234567"),
            "abcd [REDACTED:A_TOKEN] x [REDACTED:B_TOKEN] [REDACTED:A_TOKEN][REDACTED:A_TOKEN]");
  EXPECT_EQ(r.mask("nothing secret here: token-123456"), "nothing secret here: token-123456");
  EXPECT_EQ(r.mask(""), "");
  EXPECT_EQ(SecretRedactor{}.mask("token-1234567"), "token-1234567");
  EXPECT_TRUE(SecretRedactor{}.empty());
}

// A trace quotes the program's exceptions: the campaign's copy under traces/ is masked like every file
// (tlparse wrote it, so it is masked in place).
TEST(SecretRedactor, MaskFilesUnderMasksEveryFileThatHoldsASecret) {
  TempDir dir("tcfuzz-trace-mask");
  fs::create_directories(dir.path() / "tlparse" / "-_0_0_0");
  std::ofstream(dir.path() / "tlparse" / "-_0_0_0" / "dynamo_error_2.txt") << "RuntimeError: sk-planted-0123456789\n";
  std::ofstream(dir.path() / "tlparse" / "index.html") << "<html>clean</html>\n";
  SecretRedactor secrets;
  secrets.add("TCFUZZ_LLM_API_KEY", "sk-planted-0123456789");
  secrets.maskFilesUnder(dir.path());
  EXPECT_EQ(readText(dir.path() / "tlparse" / "-_0_0_0" / "dynamo_error_2.txt"),
            "RuntimeError: [REDACTED:TCFUZZ_LLM_API_KEY]\n");
  EXPECT_EQ(readText(dir.path() / "tlparse" / "index.html"), "<html>clean</html>\n");
}

TEST(SecretRedactor, MasksTheJsonSpellingsOfAValue) {
  SecretRedactor r;
  std::string value = "p\"ss\\w\xc3\xb6rd-42";  // a quote, a backslash and an o-umlaut
  r.add("DB_PASSWORD", value);
  nlohmann::json doc{{"message", "login with " + value + " failed"}};
  EXPECT_EQ(r.mask(doc.dump()), R"({"message":"login with [REDACTED:DB_PASSWORD] failed"})");
  EXPECT_EQ(r.mask(doc.dump(-1, ' ', true)), R"({"message":"login with [REDACTED:DB_PASSWORD] failed"})");
  EXPECT_EQ(r.mask("raw: " + value), "raw: [REDACTED:DB_PASSWORD]");
}

TEST(SecretRedactor, HoldsBackATailThatMayBeASecretStillArriving) {
  SecretRedactor r;
  r.add("HF_TOKEN", "hf_abcdefghijklmnop");
  std::string out;
  std::string_view text = "line one\nthe token is hf_abcd";
  size_t used = r.maskInto(text, out, true);
  EXPECT_EQ(text.substr(used), "hf_abcd");
  EXPECT_EQ(out, "line one\nthe token is ");
  out.clear();
  EXPECT_EQ(r.maskInto(text, out, false), text.size());
  EXPECT_EQ(out, text);
  out.clear();
  EXPECT_EQ(r.maskInto("ends with h", out, true), 10u);  // "h" may start "hf_..."
}

/// A stream writing into `sink`, for routing through a StreamRedaction of `secrets`.
class RedactedStreamTest : public ::testing::Test {
 protected:
  RedactedStreamTest() {
    secrets.add("TCFUZZ_LLM_API_KEY", "sk-planted-0123456789");
    secrets.add("GITHUB_TOKEN", "ghp_planted0123456789");
  }
  SecretRedactor secrets;
  std::ostringstream sink;
  std::ostream stream{sink.rdbuf()};
};

TEST_F(RedactedStreamTest, MasksASecretSplitAcrossWritesAndFlushes) {
  SecretRedactor& r = secrets;
  {
    StreamRedaction masked(stream, r);
    EXPECT_NE(stream.rdbuf(), sink.rdbuf());  // routed through the masking buffer
    stream << "key: sk-plan" << std::flush;
    EXPECT_EQ(sink.str(), "key: ");  // the possible start of a secret waits
    stream << "ted-0123456789 done\n";
    stream << "unfinished sk-planted-0123456789";
  }  // the rest goes out when the redaction ends
  EXPECT_EQ(sink.str(), "key: [REDACTED:TCFUZZ_LLM_API_KEY] done\nunfinished [REDACTED:TCFUZZ_LLM_API_KEY]");
  EXPECT_EQ(stream.rdbuf(), sink.rdbuf());  // restored
}

TEST_F(RedactedStreamTest, IsSafeToShareBetweenThreads) {
  {
    StreamRedaction masked(stream, secrets);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&] {
        for (int i = 0; i < 200; ++i) stream << "token ghp_planted0123456789\n";
      });
    for (auto& t : threads) t.join();
  }
  std::string text = sink.str();
  EXPECT_EQ(text.find("ghp_planted"), std::string::npos);
  size_t markers = 0;
  for (size_t at = text.find("[REDACTED:GITHUB_TOKEN]"); at != std::string::npos;
       at = text.find("[REDACTED:GITHUB_TOKEN]", at + 1))
    ++markers;
  EXPECT_EQ(markers, 800u);
}

// --- End to end: planted secrets through real tcfuzz processes -----------------------------------

constexpr const char* kPlantedKey = "sk-tcfuzz-planted-Q7rW2xK9mZ";      // TCFUZZ_LLM_API_KEY
constexpr const char* kPlantedToken = "ghp_tcfuzzPlantedToken8Hd3Lp";    // PLANTED_GITHUB_TOKEN

/// A planted fixture with every @PLANTED_KEY@ and @PLANTED_TOKEN@ replaced, written to `to`.
fs::path writePlanted(const std::string& fixture, const fs::path& to) {
  std::string text = readText(sourcePath(fixture));
  for (auto [marker, value] : {std::pair{"@PLANTED_KEY@", kPlantedKey}, std::pair{"@PLANTED_TOKEN@", kPlantedToken}}) {
    size_t at = text.find(marker);
    EXPECT_NE(at, std::string::npos) << fixture;
    for (; at != std::string::npos; at = text.find(marker, at))
      text.replace(at, std::string(marker).size(), value);
  }
  std::ofstream(to) << text;
  return to;
}

/// Runs build/tcfuzz with the planted secrets in its environment; stdout and stderr together.
test_support::Finished runWithSecrets(const std::vector<std::string>& args) {
  namespace bp = boost::process;
  bp::environment env = boost::this_process::environment();
  env["TCFUZZ_LLM_API_KEY"] = kPlantedKey;
  env["PLANTED_GITHUB_TOKEN"] = kPlantedToken;
  bp::ipstream out;
  bp::child c(TCFUZZ_BINARY, bp::args(args), env, (bp::std_out & bp::std_err) > out);
  std::string all, line;
  while (std::getline(out, line)) all += line + "\n";
  c.wait();
  return {c.exit_code(), all};
}

/// Every regular file under `root` (findings.sqlite and its WAL included) that holds either secret.
std::vector<std::string> filesHoldingSecrets(const fs::path& root) {
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.find(kPlantedKey) != std::string::npos || bytes.find(kPlantedToken) != std::string::npos)
      found.push_back(e.path().string());
  }
  return found;
}

void expectNoSecret(const std::string& text, const std::string& what) {
  EXPECT_EQ(text.find(kPlantedKey), std::string::npos) << what << ":\n" << text;
  EXPECT_EQ(text.find(kPlantedToken), std::string::npos) << what << ":\n" << text;
}

// `tcfuzz run` of a planted program whose error names both secrets: the JSON and the text output
// carry the markers where the secrets were.
TEST(Redaction, RunOutputMasksASecretTheProgramRaised) {
  TempDir dir("tcfuzz-redact-run");
  fs::path program = writePlanted("tests/programs/planted/leaks_secret.py", dir.path() / "leaks_secret.py");
  auto json = runWithSecrets({"run", "--json", "--sandbox", sandboxArg(), "--timeout", "120", program.string()});
  EXPECT_EQ(json.exitCode, 14) << json.output;  // invalid-program: eager raises too
  expectNoSecret(json.output, "run --json");
  EXPECT_NE(json.output.find("[REDACTED:TCFUZZ_LLM_API_KEY]"), std::string::npos) << json.output;
  EXPECT_NE(json.output.find("[REDACTED:PLANTED_GITHUB_TOKEN]"), std::string::npos) << json.output;
}

// A short campaign whose backend fails naming both secrets, then triage and report: no file under
// the output directory and nothing printed holds a secret, and the markers stand where they were.
TEST(Redaction, CampaignTriageAndReportsNeverWriteASecret) {
  TempDir dir("tcfuzz-redact-fuzz");
  fs::path plugin = writePlanted("tests/programs/planted/secret_backend.py", dir.path() / "secret_backend.py");
  fs::path out = dir.path() / "out";
  auto fuzz = runWithSecrets({"fuzz", "--sandbox", sandboxArg(), "--status", "log", "-j", "1", "--timeout", "120",
                              "--llm", "off", "-o", out.string(), "--seed", "7", "--max-programs", "2", "--no-triage",
                              "--backend", "tcfuzz_planted_secret", "--plugin", plugin.string(),
                              "--llm-model", kPlantedToken});  // a secret on the command line: cmdline
  ASSERT_EQ(fuzz.exitCode, 0) << fuzz.output;
  auto triage = runWithSecrets({"triage", "--sandbox", sandboxArg(), "-j", "1", "--timeout", "120", "--no-minimize",
                                "--no-ablation", "--no-bisect", out.string()});
  EXPECT_EQ(triage.exitCode, 0) << triage.output;
  auto report = runWithSecrets({"report", out.string()});
  EXPECT_EQ(report.exitCode, 0) << report.output;

  expectNoSecret(fuzz.output, "fuzz output");
  expectNoSecret(triage.output, "triage output");
  expectNoSecret(report.output, "report output");
  EXPECT_EQ(filesHoldingSecrets(out), std::vector<std::string>{});

  EXPECT_NE(readText(out / "cmdline").find("--llm-model [REDACTED:PLANTED_GITHUB_TOKEN]"), std::string::npos)
      << readText(out / "cmdline");
  std::string db = readText(out / "findings.sqlite") + readText(out / "findings.sqlite-wal");
  EXPECT_NE(db.find("[REDACTED:TCFUZZ_LLM_API_KEY]"), std::string::npos);
  int reports = 0;
  for (const auto& e : fs::directory_iterator(out / "crashes")) {
    if (!fs::exists(e.path() / "report.md")) continue;
    ++reports;
    EXPECT_NE(readText(e.path() / "report.md").find("api key [REDACTED:TCFUZZ_LLM_API_KEY], token "
                                                    "[REDACTED:PLANTED_GITHUB_TOKEN]"),
              std::string::npos)
        << e.path();
    EXPECT_NE(readText(e.path() / "repro.py").find("KEY = \"[REDACTED:TCFUZZ_LLM_API_KEY]\""), std::string::npos)
        << e.path();
  }
  EXPECT_GE(reports, 1) << triage.output;
  EXPECT_NE(readText(out / "index.md").find("crash"), std::string::npos);
}

}  // namespace
}  // namespace tcfuzz
