// Cost and yield per origin of programs: what fuzzer_stats reports and the LLM bandit's reward uses.
#include <gtest/gtest.h>

#include <map>

#include <fmt/format.h>

#include "fuzzer/campaign/OriginLedger.h"

namespace tcfuzz {
namespace {

std::map<std::string, std::string> lines(const OriginLedger& ledger) {
  std::map<std::string, std::string> kv;
  for (const auto& [k, v] : ledger.statsLines()) kv[k] = v;
  return kv;
}

TEST(OriginLedger, MutatorsShareOneOriginAndEachLlmStrategyHasItsOwn) {
  EXPECT_EQ(OriginLedger::keyOf("grammar"), "grammar");
  EXPECT_EQ(OriginLedger::keyOf("mutation:splice"), "mutation");
  EXPECT_EQ(OriginLedger::keyOf("mutation:insert_view"), "mutation");
  EXPECT_EQ(OriginLedger::keyOf("llm:target-json"), "llm:target-json");
}

TEST(OriginLedger, YieldPerCpuSecondCountsTheLlmsOwnCpu) {
  OriginLedger ledger;
  EXPECT_EQ(ledger.rate(), 0.0);
  ledger.record("grammar", 10.0, 20, 0, 10, 0);
  ledger.record("grammar", 10.0, 0, 1, 6, 0);
  ledger.record("mutation:splice", 5.0, 5, 0, 12, 1);
  ledger.record("llm:ops-json", 5.0, 10, 0, 14, 0);
  // (20 + 10 x 1 + 5 + 10) / 30 CPU-seconds
  EXPECT_DOUBLE_EQ(ledger.rate(), 45.0 / 30.0);
  auto kv = lines(ledger);
  EXPECT_EQ(kv["origin_grammar_programs"], "2");
  EXPECT_EQ(kv["origin_grammar_mean_nodes"], "8.00");
  EXPECT_EQ(kv["origin_grammar_cpu_s"], "20.0");
  EXPECT_EQ(kv["origin_grammar_new_features"], "20");
  EXPECT_EQ(kv["origin_grammar_new_signatures"], "1");
  EXPECT_EQ(kv["origin_grammar_features_per_cpu_s"], "1.0000");
  EXPECT_EQ(kv["origin_grammar_signatures_per_cpu_hour"], "180.00");
  EXPECT_EQ(kv["origin_mutation_dead_nodes"], "1");
  EXPECT_EQ(kv["origin_llm_ops_json_features_per_cpu_s"], "2.0000");
  EXPECT_EQ(kv["llm_cpu_share"], "0.000");
  // The LLM's server and lift time, rejected replies included, is charged to its strategies: the
  // strategy now costs 5 + 15 CPU-seconds, and a strategy with no tested program still shows its cost.
  ledger.setLlmCpu({{"ops-json", 15.0}, {"repair-python", 5.0}});
  kv = lines(ledger);
  EXPECT_EQ(kv["origin_llm_ops_json_cpu_s"], "20.0");
  EXPECT_EQ(kv["origin_llm_ops_json_features_per_cpu_s"], "0.5000");
  EXPECT_EQ(kv["origin_llm_repair_python_programs"], "0");
  EXPECT_EQ(kv["origin_llm_repair_python_cpu_s"], "5.0");
  EXPECT_EQ(kv["llm_cpu_share"], fmt::format("{:.3f}", 20.0 / 50.0));
  EXPECT_DOUBLE_EQ(ledger.rate(), 45.0 / 50.0);
  // Replaced, not added up: the proposer reports running totals.
  ledger.setLlmCpu({{"ops-json", 15.0}});
  EXPECT_DOUBLE_EQ(ledger.rate(), 45.0 / 45.0);
}

}  // namespace
}  // namespace tcfuzz
