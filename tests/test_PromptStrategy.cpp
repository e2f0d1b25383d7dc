// Prompt strategies as data and the Thompson bandit that picks among them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "generators/OpCatalog.h"
#include "fuzzer/llm/PromptBandit.h"
#include "generators/llm/PromptStrategy.h"

using namespace tcfuzz::gen;
using nlohmann::json;

namespace {

const OpCatalog& catalog() {
  static const OpCatalog c = makeDefaultCatalog();
  return c;
}

json minimalBook() {
  return json::parse(R"({
    "examples": {"json": "{\"inputs\": []}", "python": "class Model: pass"},
    "strategies": [
      {"name": "a", "form": "json", "ops": [1, 2], "system": "s", "user": "use {op_names}; e.g. {example_json}"},
      {"name": "fix", "form": "python", "repair": true, "system": "s", "user": "{program_python} failed: {error}"}
    ],
    "targets": [{"name": "t", "kind": "fusion", "trigger": "x", "ops": ["relu", "add"]}]
  })");
}

}  // namespace

TEST(PromptStrategy, BuiltInTableLoadsWithEveryFormTargetedAndRepairStrategy) {
  PromptBook book = PromptBook::builtIn(catalog());
  ASSERT_GE(book.strategies().size(), 7u);
  EXPECT_EQ(book.strategy("ops-json").form, "json");
  EXPECT_EQ(book.strategy("ops-python").form, "python");
  EXPECT_TRUE(book.strategy("mutate-python").queue);
  EXPECT_TRUE(book.strategy("target-json").targeted);
  ASSERT_NE(book.repairStrategy("python"), nullptr);
  EXPECT_EQ(book.repairStrategy("python")->name, "repair-python");
  EXPECT_EQ(book.repairStrategy("json"), nullptr);
  ASSERT_GE(book.targets().size(), 12u);
  for (const auto& t : book.targets())
    for (const auto& op : t.ops) EXPECT_NE(catalog().find(op), nullptr) << t.name << " names " << op;
  // The JSON example in the table is itself a valid program in the proposal form.
  EXPECT_TRUE(json::parse(book.example("json")).contains("nodes"));
}

TEST(PromptStrategy, BadTablesAreRejectedNamingTheProblem) {
  auto expectError = [](json doc, const std::string& fragment) {
    try {
      PromptBook::fromJson(doc, catalog());
      FAIL() << "accepted: " << doc.dump();
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  json unknownFill = minimalBook();
  unknownFill["strategies"][0]["user"] = "use {op_nmes}";
  expectError(unknownFill, "unknown fill name {op_nmes}");
  json badOp = minimalBook();
  badOp["targets"][0]["ops"] = {"relu", "no_such_op"};
  expectError(badOp, "\"no_such_op\", which is not a catalog op");
  json badForm = minimalBook();
  badForm["strategies"][0]["form"] = "yaml";
  expectError(badForm, ".form must be");
  json unknownKey = minimalBook();
  unknownKey["strategies"][0]["colour"] = "red";
  expectError(unknownKey, "unknown key 'colour'");
  json onlyRepair = minimalBook();
  onlyRepair["strategies"].erase(0);
  expectError(onlyRepair, "the bandit has nothing to draw");
  EXPECT_NO_THROW(PromptBook::fromJson(minimalBook(), catalog()));
}

TEST(PromptStrategy, RenderFillsNamedFieldsAndKeepsJsonBraces) {
  std::string out = renderPrompt("ops {op_names} example {\"a\": {\"b\": 1}} {error}",
                                 {{"op_names", "relu, add"}, {"error", "boom"}});
  EXPECT_EQ(out, "ops relu, add example {\"a\": {\"b\": 1}} boom");
  EXPECT_THROW(renderPrompt("{target_name}", {}), std::invalid_argument);
  EXPECT_EQ(renderPrompt("{not_a_fill_name}", {}), "{not_a_fill_name}");
}

TEST(PromptStrategy, OpCallHintsReadLikePython) {
  EXPECT_EQ(opCallHint(catalog().at("cumsum")), "torch.cumsum(x, dim)");
  EXPECT_EQ(opCallHint(catalog().at("mul")), "x * y");
  EXPECT_EQ(opCallHint(catalog().at("nn_conv2d")), "nn.Conv2d(...)");
  EXPECT_EQ(opCallHint(catalog().at("add_")), "x.add_(y)");
  EXPECT_EQ(opCallHint(catalog().at("cat")), "torch.cat([x, y], dim=dim)");
}

TEST(PromptStrategy, ThompsonBanditConcentratesOnTheArmThatPays) {
  ThompsonBandit bandit({"poor", "rich", "middling"}, 42);
  Rng payout(7);
  const double rate[] = {0.1, 0.8, 0.4};
  int richPicks = 0;
  for (int i = 0; i < 600; ++i) {
    size_t arm = bandit.pick();
    if (i >= 300 && arm == 1) richPicks++;
    bandit.reward(arm, payout.chance(rate[arm]) ? 1.0 : 0.0);
  }
  // Over the last 300 draws the best arm dominates, and its posterior mean approaches its rate.
  EXPECT_GT(richPicks, 240);
  json state = bandit.toJson();
  EXPECT_NEAR(state["rich"]["mean"].get<double>(), 0.8, 0.08);
  EXPECT_EQ(state["poor"]["pulls"].get<int64_t>() + state["rich"]["pulls"].get<int64_t>() +
                state["middling"]["pulls"].get<int64_t>(),
            600);
  // Same seed, same choices.
  ThompsonBandit a({"x", "y"}, 3), b({"x", "y"}, 3);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(a.pick(), b.pick());
}

TEST(PromptStrategy, CostlyStrategiesThatYieldNothingAreDrawnLessThanUnderAFlatCharge) {
  // A simulated campaign on the built-in book: the JSON strategies cost 2 CPU-s per reply and pay a
  // reward of 0.3; the Python ones cost 20 CPU-s and never give a program (as the small model's Python
  // replies did). Charged by what they cost, the Python strategies are drawn far less than when each
  // failure counts as one.
  PromptBook book = PromptBook::builtIn(catalog());
  auto pythonDraws = [&](bool chargeCost) {
    tcfuzz::PromptBandit bandit(book, 11);
    int python = 0;
    for (int i = 0; i < 300; ++i) {
      size_t arm = bandit.pick();
      bool isPython = book.strategy(bandit.arm(arm).strategy).form == "python";
      python += isPython;
      double cpu = isPython ? 20 : 2;
      bandit.addCost(cpu);
      if (isPython) {
        if (chargeCost) bandit.fail(arm, cpu);
        else bandit.reward(arm, 0);
      } else {
        bandit.reward(arm, 0.3);
      }
    }
    return python;
  };
  int charged = pythonDraws(true), flat = pythonDraws(false);
  EXPECT_LE(charged * 2, flat) << charged << " vs " << flat;  // measured: 16 against 32 of 300 draws
  EXPECT_LT(charged, 20);
  EXPECT_EQ(tcfuzz::PromptBandit::failureWeight(20, 4), 5);
  EXPECT_EQ(tcfuzz::PromptBandit::failureWeight(1, 4), 1);   // a cheap failure counts once
  EXPECT_EQ(tcfuzz::PromptBandit::failureWeight(400, 4), tcfuzz::PromptBandit::kMaxFailureWeight);
  EXPECT_EQ(tcfuzz::PromptBandit::failureWeight(5, 0), 1);   // no mean yet
}

// A strategy whose replies never gave a program retires after kRetireAfter of them, once another strategy's
// have: it is drawn only at the exploration picks. Its first program brings it back.
TEST(PromptStrategy, AStrategyThatNeverGivesAProgramRetires) {
  PromptBook book = PromptBook::builtIn(catalog());
  tcfuzz::PromptBandit bandit(book, 5);
  EXPECT_TRUE(bandit.retired().empty());
  auto isPython = [&](size_t arm) { return book.strategy(bandit.arm(arm).strategy).form == "python"; };
  auto play = [&](int picks, bool pythonWorks) {
    int python = 0;
    for (int i = 0; i < picks; ++i) {
      size_t arm = bandit.pick();
      if (isPython(arm)) {
        ++python;
        if (pythonWorks) bandit.reward(arm, 0.5);
        else bandit.fail(arm, 2);
      } else {
        bandit.reward(arm, 0.3);
      }
    }
    return python;
  };
  play(100, false);
  std::vector<std::string> retired = bandit.retired();
  std::vector<std::string> python;
  for (const auto& s : book.strategies())
    if (s.form == "python" && !s.repair) python.push_back(s.name);
  EXPECT_EQ(retired, python);
  EXPECT_EQ(bandit.toJson()["retired"], nlohmann::json(python));
  // Retired, they are drawn at most at the exploration picks: every kExploreEvery-th.
  EXPECT_LE(play(200, false), 200 / tcfuzz::PromptBandit::kExploreEvery);
  // Once a Python reply gives a program, its strategy is drawable again.
  int drawn = 0;
  for (int i = 0; i < 500 && drawn == 0; ++i) {
    size_t arm = bandit.pick();
    if (isPython(arm)) {
      bandit.reward(arm, 0.5);
      ++drawn;
      EXPECT_EQ(bandit.retired().size(), python.size() - 1) << bandit.arm(arm).strategy;
    } else {
      bandit.reward(arm, 0.3);
    }
  }
  EXPECT_EQ(drawn, 1);
}
