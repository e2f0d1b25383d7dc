// Ground truth for the op catalog: every op's shape rule is checked against ATen through the
// dispatcher. For 50 valid samples per op the op's `aten` spelling is called on meta tensors
// (shapes and dtypes of the outputs must equal the predicted ones) and on small real CPU
// tensors drawn inside each input's need (eager must accept what the catalog calls valid: the
// dtype is supported, the values are in domain). Ops without a Meta kernel are checked by the
// CPU execution alone.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <unistd.h>
#include <set>
#include <sstream>

#include "fuzzer/cli/commands/Commands.h"
#include "generators/NodeSampler.h"
#include "generators/OpCatalog.h"
#include "generators/python/PythonEmitter.h"
#include "tests/AtenCall.h"

using namespace tcfuzz::gen;
using nlohmann::json;

namespace {

constexpr int kSamplesPerOp = 50;
constexpr int kReportedFailuresPerOp = 5;

const OpCatalog& catalog() {
  static const OpCatalog c = makeDefaultCatalog();
  return c;
}

std::vector<std::string> opNames() {
  std::vector<std::string> names;
  for (const auto& op : catalog().ops()) names.push_back(op->name);
  return names;
}
/// A parameterized test's name: the op's.
std::string opTestName(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

using namespace tcfuzz::atencall;

/// "" when the first predicted outputs match the returned ones in shape and dtype.
std::string compareOutputs(const std::vector<TensorType>& predicted, const std::vector<at::Tensor>& actual) {
  if (actual.size() < predicted.size())
    return fmt::format("ATen returned {} tensors, the catalog predicts {}", actual.size(), predicted.size());
  for (size_t i = 0; i < predicted.size(); ++i) {
    std::vector<int64_t> shape(actual[i].sizes().begin(), actual[i].sizes().end());
    if (shape != predicted[i].shape || actual[i].scalar_type() != scalarType(predicted[i].dtype))
      return fmt::format("output {}: expected {}, ATen gives {}", i, predicted[i].str(), describe(actual[i]));
  }
  return "";
}

/// True for a meta call failing because the op has no Meta kernel (or needs real data).
bool noMetaKernel(const c10::Error& e) {
  std::string m = e.what_without_backtrace();
  if (dynamic_cast<const c10::NotImplementedError*>(&e)) return true;
  return (m.find("Could not run") != std::string::npos && m.find("Meta") != std::string::npos) ||
         m.find("meta tensor") != std::string::npos || m.find("data-dependent") != std::string::npos;
}

std::string describeNode(const SampledNode& node) {
  std::vector<std::string> inputs;
  for (size_t k = 0; k < node.inputs.size(); ++k)
    inputs.push_back(fmt::format("{} in [{}, {}]", node.inputs[k].str(), node.ranges[k].lo, node.ranges[k].hi));
  std::vector<std::string> outputs;
  for (const auto& t : node.outputs) outputs.push_back(t.str());
  return fmt::format("inputs ({}), attrs {}, predicted ({})", fmt::join(inputs, "; "), node.attrs.dump(),
                     fmt::join(outputs, "; "));
}

/// One call; "" on success, else the problem. `metaMissing` is set to the error when the op has no
/// Meta kernel.
std::string checkCall(const OpSpec& op, const AtenCall& call, const c10::OperatorHandle& handle,
                      const SampledNode& node, Mode mode, std::string* metaMissing) {
  try {
    torch::jit::Stack stack = buildStack(op, call, handle.schema(), node, mode);
    handle.callBoxed(stack);
    return compareOutputs(node.outputs, returnedTensors(stack));
  } catch (const SpellingError& e) {
    return std::string("bad ATen spelling: ") + e.what();
  } catch (const c10::Error& e) {
    if (mode == Mode::Meta && metaMissing && noMetaKernel(e)) {
      *metaMissing = e.what_without_backtrace();
      return "";
    }
    std::string m = e.what_without_backtrace();
    return fmt::format("ATen rejects it ({}): {}", mode == Mode::Meta ? "meta" : "cpu", m.substr(0, 600));
  } catch (const std::exception& e) {
    return fmt::format("exception ({}): {}", mode == Mode::Meta ? "meta" : "cpu", e.what());
  }
}

class OpAgainstATen : public ::testing::TestWithParam<std::string> {};

TEST_P(OpAgainstATen, ShapeRuleMatchesATen) {
  const OpSpec& op = catalog().at(GetParam());
  auto [call, handle, error] = resolveAten(op);
  if (!handle) FAIL() << op.name << ": " << op.aten << ": " << error;
  Rng rng(seedFor(op.name));
  at::manual_seed(static_cast<uint64_t>(seedFor(op.name) & 0xffffffff));
  ShapeCaps caps;
  std::string metaMissing;
  int samples = 0, failures = 0;
  for (int i = 0; i < kSamplesPerOp; ++i) {
    auto node = sampleNode(op, rng, caps);
    if (!node) break;
    ++samples;
    std::vector<std::string> problems;
    if (metaMissing.empty())
      if (auto p = checkCall(op, call, *handle, *node, Mode::Meta, &metaMissing); !p.empty()) problems.push_back(p);
    if (auto p = checkCall(op, call, *handle, *node, Mode::Cpu, nullptr); !p.empty()) problems.push_back(p);
    if (problems.empty()) continue;
    if (++failures <= kReportedFailuresPerOp)
      ADD_FAILURE() << op.name << " sample " << i << " (" << op.aten << "): " << describeNode(*node) << "\n  "
                    << fmt::format("{}", fmt::join(problems, "\n  "));
  }
  std::cout << fmt::format("[catalog] {}: {} samples, {} failing, checked by {}\n", op.name, samples, failures,
                           metaMissing.empty() ? "meta + execution"
                                               : "execution (no Meta kernel: " + metaMissing.substr(0, 160) + ")");
  EXPECT_EQ(failures, 0) << op.name << ": " << failures << " of " << samples << " samples disagree with ATen";
}

INSTANTIATE_TEST_SUITE_P(Catalog, OpAgainstATen, ::testing::ValuesIn(opNames()), opTestName);

/// Lowercase letters and digits of `s` ("nn.Conv2d" -> "nnconv2d").
std::string compact(const std::string& s) {
  std::string out;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// True when the ATen spelling calls a different operator than the Python one (a Python composite
/// such as F.softsign spelled aten::abs): its values say nothing about the op's range rule. One
/// function the Python spelling calls and the ATen name must contain one another
/// ("F.cross_entropy" and "cross_entropy_loss"); operator forms ("{0} * {value}") and statements
/// count as the same operator.
bool atenIsProxy(const OpSpec& op, const AtenCall& call) {
  std::string python = op.init.empty() ? op.python : op.init;
  if (python.rfind("stmt:", 0) == 0) return false;
  std::string text;
  for (size_t i = 0; i < python.size(); ++i) {
    if (python[i] != '{') {
      text += python[i];
      continue;
    }
    i = python.find('}', i);
    if (i == std::string::npos) break;
  }
  std::string aten = compact(call.op.substr(call.op.find("::") + 2));
  bool calls = false;
  for (size_t paren = text.find('('); paren != std::string::npos; paren = text.find('(', paren + 1)) {
    size_t start = paren;
    while (start > 0 && (std::isalnum(static_cast<unsigned char>(text[start - 1])) || text[start - 1] == '_')) --start;
    std::string function = compact(text.substr(start, paren - start));
    if (function.empty()) continue;
    calls = true;
    if (aten.find(function) != std::string::npos || function.find(aten) != std::string::npos) return false;
  }
  return calls;
}

/// The largest finite magnitude of dtype `d`.
double finiteMax(DType d) {
  switch (d) {
    case DType::Float16: return 65504;
    case DType::BFloat16: return 3.38e38;
    case DType::Float32: return 3.4e38;
    case DType::Int32: return 2147483647.0;
    case DType::Bool: return 1;
    default: return 1.7e308;
  }
}

/// "" when every element of the real outputs lies in its predicted range (widened by the output
/// dtype's rounding); NaN and infinities never do.
std::string checkRanges(const std::vector<Interval>& predicted, const std::vector<TensorType>& types,
                        const std::vector<at::Tensor>& actual) {
  for (size_t i = 0; i < predicted.size() && i < actual.size(); ++i) {
    if (actual[i].numel() == 0) continue;
    // A complex output's range bounds its real and imaginary parts alike.
    at::Tensor v = (actual[i].is_complex() ? at::view_as_real(actual[i]) : actual[i]).to(c10::kDouble);
    if (v.isnan().any().item<bool>()) return fmt::format("output {} holds NaN, predicted range [{}, {}]", i, predicted[i].lo, predicted[i].hi);
    DType d = types[i].dtype;
    // An overflow is predicted when the range reaches beyond the dtype's finite values.
    bool overflowPredicted = predicted[i].magnitude() > finiteMax(d);
    if (v.isinf().any().item<bool>() && !overflowPredicted)
      return fmt::format("output {} holds inf, predicted range [{}, {}]", i, predicted[i].lo, predicted[i].hi);
    v = v.masked_select(v.isfinite());
    if (v.numel() == 0) continue;
    double lo = v.min().item<double>(), hi = v.max().item<double>();
    double rel = d == DType::Float16 || d == DType::BFloat16 ? 2e-2 : d == DType::Float32 ? 1e-5 : 1e-9;
    auto slack = [&](double bound) { return std::isinf(bound) ? 0.0 : rel * std::max(1.0, std::abs(bound)); };
    if (lo < predicted[i].lo - slack(predicted[i].lo) || hi > predicted[i].hi + slack(predicted[i].hi))
      return fmt::format("output {} spans [{}, {}], outside the predicted range [{}, {}]", i, lo, hi, predicted[i].lo,
                         predicted[i].hi);
  }
  return "";
}

class OpRanges : public ::testing::TestWithParam<std::string> {};

// The range rule (OpSpec::range) bounds the real outputs when the inputs lie in their ranges: the
// generator relies on it to keep values finite. Checked by CPU execution of the ATen spelling,
// except for layers (their weights come from the module's init, not from the test) and Python
// composites spelled with a different ATen operator.
TEST_P(OpRanges, OutputsStayInPredictedRanges) {
  const OpSpec& op = catalog().at(GetParam());
  auto [call, handle, error] = resolveAten(op);
  if (!handle) GTEST_SKIP() << "unresolved ATen spelling (reported by OpAgainstATen)";
  if (op.params) GTEST_SKIP() << "layer: weights come from the module's init";
  if (atenIsProxy(op, call)) GTEST_SKIP() << op.aten << " stands in for " << op.python;
  Rng rng(seedFor(op.name));
  at::manual_seed(static_cast<uint64_t>(seedFor(op.name) & 0xffffffff));
  ShapeCaps caps;
  int samples = 0, failures = 0;
  for (int i = 0; i < kSamplesPerOp; ++i) {
    auto node = sampleNode(op, rng, caps);
    if (!node) break;
    ++samples;
    std::string problem;
    try {
      auto predicted = inferRanges(op, node->context(&caps), node->outputs.size());
      torch::jit::Stack stack = buildStack(op, call, handle->schema(), *node, Mode::Cpu);
      handle->callBoxed(stack);
      problem = checkRanges(predicted, node->outputs, returnedTensors(stack));
    } catch (const c10::Error&) {
      continue;  // rejected calls are OpAgainstATen's failures
    } catch (const std::exception& e) {
      problem = std::string("range rule throws: ") + e.what();
    }
    if (problem.empty()) continue;
    if (++failures <= kReportedFailuresPerOp)
      ADD_FAILURE() << op.name << " sample " << i << " (" << op.aten << "): " << describeNode(*node) << "\n  " << problem;
  }
  EXPECT_EQ(failures, 0) << op.name << ": " << failures << " of " << samples << " samples leave the predicted range";
}

INSTANTIATE_TEST_SUITE_P(Catalog, OpRanges, ::testing::ValuesIn(opNames()), opTestName);

// --- The Python spelling: each sample emitted as a one-node program and run in eager ------------

/// Runs the programs of cases.jsonl (one {"op", "sample", "program", "outputs", "ranges"} per
/// line) in eager and prints one JSON line per problem: {"op", "sample", "kind", "problem"}.
constexpr const char* kEagerChecker = R"PY(
import json, sys, traceback
import torch
torch.set_num_threads(1)
for line in open(sys.argv[1]):
    case = json.loads(line)
    def report(kind, problem):
        print(json.dumps({"op": case["op"], "sample": case["sample"], "kind": kind, "problem": problem[:800]}), flush=True)
    scope = {}
    try:
        exec(compile(case["program"], "<%s sample %d>" % (case["op"], case["sample"]), "exec"), scope)
        torch.manual_seed(case["sample"])
        model = scope["Model"]().eval()  # as the worker harness runs it
        with torch.no_grad():
            outs = model(*scope["make_inputs"](case["sample"]))
    except Exception as e:
        report("exception", "%s: %s" % (type(e).__name__, e))
        continue
    outs = [o for o in outs if isinstance(o, torch.Tensor)]
    if len(outs) != len(case["outputs"]):
        report("shape", "%d outputs, the catalog predicts %d" % (len(outs), len(case["outputs"])))
        continue
    for i, (o, (shape, dtype), (lo, hi, fmax)) in enumerate(zip(outs, case["outputs"], case["ranges"])):
        got = "[%s] %s" % (", ".join(map(str, o.shape)), str(o.dtype).replace("torch.", ""))
        want = "[%s] %s" % (", ".join(map(str, shape)), dtype)
        if got != want:
            report("shape", "output %d: expected %s, eager gives %s" % (i, want, got))
            break
        if o.numel() == 0 or o.is_complex():
            continue
        v = o.detach().double()
        if v.isnan().any():
            report("range", "output %d holds NaN, predicted range [%g, %g]" % (i, lo, hi))
            break
        overflow = max(abs(lo), abs(hi)) > fmax
        if v.isinf().any() and not overflow:
            report("range", "output %d holds inf, predicted range [%g, %g]" % (i, lo, hi))
            break
        v = v[v.isfinite()]
        if v.numel() == 0:
            continue
        rel = 2e-2 if dtype in ("float16", "bfloat16") else 1e-5 if dtype == "float32" else 1e-9
        slack = lambda b: 0.0 if abs(b) == float("inf") else rel * max(1.0, abs(b))
        vlo, vhi = v.min().item(), v.max().item()
        if vlo < lo - slack(lo) or vhi > hi + slack(hi):
            report("range", "output %d spans [%g, %g], outside the predicted range [%g, %g]" % (i, vlo, vhi, lo, hi))
            break
)PY";

/// Eager's verdicts on the emitted samples, per op: the problems found (empty when all ran clean).
struct EagerResults {
  std::string error;  // the checker itself failed
  std::map<std::string, std::vector<json>> problems;
  std::map<std::string, int> samples;
};

/// The ops whose OpInPython test this run selects (gtest filter), so a filtered run checks only those.
std::set<std::string> selectedEagerOps() {
  std::set<std::string> ops;
  auto* unit = ::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit->total_test_suite_count(); ++i) {
    const auto* suite = unit->GetTestSuite(i);
    if (std::string(suite->name()).find("OpInPython") == std::string::npos) continue;
    for (int j = 0; j < suite->total_test_count(); ++j) {
      const auto* info = suite->GetTestInfo(j);
      std::string name = info->name();
      if (info->should_run()) ops.insert(name.substr(name.rfind('/') + 1));
    }
  }
  return ops;
}

/// Emits every sample of the selected ops and runs them all in one Python process (computed once).
const EagerResults& eagerResults() {
  static const EagerResults results = [] {
    EagerResults r;
    PythonEmitter emitter(catalog());
    auto dir = std::filesystem::temp_directory_path() / fmt::format("tcfuzz-opcatalog-{}", ::getpid());
    std::filesystem::create_directories(dir);
    {
      std::ofstream cases(dir / "cases.jsonl");
      for (const auto& name : selectedEagerOps()) {
        const OpSpec& op = catalog().at(name);
        Rng rng(seedFor(op.name));
        ShapeCaps caps;
        for (int i = 0; i < kSamplesPerOp; ++i) {
          auto node = sampleNode(op, rng, caps);
          if (!node) break;
          json outputs = json::array(), ranges = json::array();
          std::vector<Interval> predicted;
          try {
            predicted = inferRanges(op, node->context(&caps), node->outputs.size());
          } catch (const std::exception& e) {
            r.problems[op.name].push_back({{"sample", i}, {"kind", "range"}, {"problem", std::string("range rule throws: ") + e.what()}});
            predicted.assign(node->outputs.size(), Interval{});
          }
          for (size_t k = 0; k < node->outputs.size(); ++k) {
            outputs.push_back({node->outputs[k].shape, dtypeName(node->outputs[k].dtype)});
            auto bound = [](double b) { return std::isinf(b) ? (b > 0 ? 1e308 : -1e308) : b; };
            ranges.push_back({bound(predicted[k].lo), bound(predicted[k].hi), finiteMax(node->outputs[k].dtype)});
          }
          std::string program;
          try {
            program = emitter.emit(oneNodeGraph(op, *node));
          } catch (const std::exception& e) {
            r.problems[op.name].push_back({{"sample", i}, {"kind", "emit"}, {"problem", e.what()}});
            continue;
          }
          ++r.samples[op.name];
          cases << json{{"op", op.name}, {"sample", i}, {"program", program}, {"outputs", outputs}, {"ranges", ranges}}.dump()
                << "\n";
        }
      }
      std::ofstream(dir / "check.py") << kEagerChecker;
    }
    std::string command = fmt::format("'{}' '{}' '{}' > '{}' 2> '{}'", TCFUZZ_DEFAULT_PYTHON, (dir / "check.py").string(),
                                      (dir / "cases.jsonl").string(), (dir / "problems.jsonl").string(),
                                      (dir / "stderr.txt").string());
    if (int rc = std::system(command.c_str()); rc != 0) {
      std::ifstream err(dir / "stderr.txt");
      std::stringstream text;
      text << err.rdbuf();
      r.error = fmt::format("eager checker exited with {}: {}", rc, text.str().substr(0, 2000));
    }
    std::ifstream lines(dir / "problems.jsonl");
    for (std::string line; std::getline(lines, line);) {
      json p = json::parse(line, nullptr, false);
      if (!p.is_discarded()) r.problems[p["op"].get<std::string>()].push_back(p);
    }
    std::filesystem::remove_all(dir);
    return r;
  }();
  return results;
}

class OpInPython : public ::testing::TestWithParam<std::string> {};

// The Python spelling is what generated programs run: emitted as a one-node program (through
// PythonEmitter) and run in eager, every valid sample must run without an exception, give the
// predicted output shapes and dtypes, and stay in the predicted value ranges (layers included:
// their weights come from the module's default init).
TEST_P(OpInPython, EmittedProgramRunsInEager) {
  const OpSpec& op = catalog().at(GetParam());
  const EagerResults& results = eagerResults();
  ASSERT_TRUE(results.error.empty()) << results.error;
  auto it = results.problems.find(op.name);
  int samples = results.samples.count(op.name) ? results.samples.at(op.name) : 0;
  std::map<std::string, int> byKind;
  if (it != results.problems.end()) {
    int reported = 0;
    for (const auto& p : it->second) {
      ++byKind[p["kind"].get<std::string>()];
      if (++reported > kReportedFailuresPerOp) continue;
      std::string detail;
      Rng rng(seedFor(op.name));
      ShapeCaps caps;
      for (int i = 0; i <= p["sample"].get<int>(); ++i) {
        auto node = sampleNode(op, rng, caps);
        if (node && i == p["sample"].get<int>()) detail = describeNode(*node);
      }
      ADD_FAILURE() << op.name << " sample " << p["sample"] << " [" << p["kind"].get<std::string>() << "] (" << op.python
                    << "): " << detail << "\n  " << p["problem"].get<std::string>();
    }
  }
  std::cout << fmt::format("[eager] {}: {} samples, problems: {}\n", op.name, samples,
                           byKind.empty() ? "none" : fmt::format("{}", fmt::join(byKind, ", ")));
  EXPECT_TRUE(byKind.empty()) << op.name << " fails in eager";
}

INSTANTIATE_TEST_SUITE_P(Catalog, OpInPython, ::testing::ValuesIn(opNames()), opTestName);

class SamplerYield : public ::testing::TestWithParam<std::string> {};

// A sampler that cannot produce valid nodes starves generation of the op.
TEST_P(SamplerYield, FiftyValidSamples) {
  const OpSpec& op = catalog().at(GetParam());
  Rng rng(seedFor(op.name) + 1);
  ShapeCaps caps;
  int valid = 0;
  for (int i = 0; i < kSamplesPerOp; ++i) valid += sampleNode(op, rng, caps).has_value();
  EXPECT_EQ(valid, kSamplesPerOp) << op.name << " gave only " << valid << " valid nodes";
}

INSTANTIATE_TEST_SUITE_P(Catalog, SamplerYield, ::testing::ValuesIn(opNames()), opTestName);

TEST(OpCatalogCoverage, EveryFamilyIsPresent) {
  std::set<std::string> families;
  for (const auto& op : catalog().ops()) families.insert(op->family);
  for (const char* family : {"elementwise-unary", "elementwise-binary", "comparison", "logical", "bitwise", "cast",
                             "activation", "softmax", "reduction", "shape", "linalg", "conv", "pool", "norm", "loss",
                             "random", "layer", "indexing", "inplace", "inplace-view", "buffer-update", "param-data", "complex"})
    EXPECT_TRUE(families.count(family)) << "no op of family " << family;
}

TEST(OpCatalogCoverage, AtLeast150Ops) { EXPECT_GE(catalog().size(), 150u); }

TEST(OpCatalogCoverage, EveryAtenSpellingResolves) {
  for (const auto& op : catalog().ops())
    if (auto aten = resolveAten(*op); !aten.handle) ADD_FAILURE() << op->name << ": " << op->aten << ": " << aten.error;
}

TEST(CatalogReport, ListsEveryOpAndCountsCoverage) {
  json report = json::parse(tcfuzz::catalogReport(catalog(), true));
  ASSERT_EQ(report["ops"].size(), catalog().size());
  EXPECT_GT(report["coverage"]["aten_ops"].get<int>(), 1000);
  EXPECT_GT(report["coverage"]["covered"].get<int>(), 0);
  std::string text = tcfuzz::catalogReport(catalog(), false);
  for (const auto& op : catalog().ops()) EXPECT_NE(text.find(op->name), std::string::npos) << op->name;
}

}  // namespace
