#include "oracles/judge/RunResult.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tcfuzz::oracles {
namespace {

constexpr std::pair<RunStatus, std::string_view> kStatusNames[] = {
    {RunStatus::Ok, "ok"},           {RunStatus::Exception, "exception"},
    {RunStatus::Signal, "signal"},   {RunStatus::Timeout, "timeout"},
    {RunStatus::OutOfMemory, "oom"},  {RunStatus::Refused, "refused"},
};

std::string stringField(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_string()) throw std::invalid_argument(fmt::format("field '{}' is not a string", key));
  return it->get<std::string>();
}

double numberField(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return (it != j.end() && it->is_number()) ? it->get<double>() : 0.0;
}

/// The numeric entries of the object j[key] (absent or not an object: none).
void numberMap(const nlohmann::json& j, const char* key, std::map<std::string, double>& into) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_object()) return;
  for (const auto& [k, v] : it->items())
    if (v.is_number()) into[k] = v.get<double>();
}

/// What Inductor did (compile_stats.py's hook figures): the compile_facts key of each, and its member.
constexpr std::pair<const char*, std::map<std::string, int> CompileFacts::*> kInductorFigures[] = {
    {"post_grad_ops", &CompileFacts::postGradOps}, {"lowerings", &CompileFacts::lowerings},
    {"fallbacks", &CompileFacts::fallbacks},       {"patterns", &CompileFacts::patterns},
    {"fusions", &CompileFacts::fusions},           {"kernel_kinds", &CompileFacts::kernelKinds},
    {"extern_kernels", &CompileFacts::externKernels}, {"recompile_reasons", &CompileFacts::recompileReasons}};

/// The numeric entries of the object j[key] as counts (absent or not an object: none).
void countMap(const nlohmann::json& j, const char* key, std::map<std::string, int>& into) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_object()) return;
  for (const auto& [k, v] : it->items())
    if (v.is_number()) into[k] = v.get<int>();
}

OutputSet outputSetFromJson(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("outputs is not an object");
  OutputSet set;
  set.file = stringField(j, "file");
  const nlohmann::json leaves = j.value("leaves", nlohmann::json::array());
  for (const auto& leafJson : leaves) {
    OutputLeaf leaf;
    std::string kind = stringField(leafJson, "kind");
    if (kind == "tensor") leaf.kind = OutputLeaf::Kind::Tensor;
    else if (kind == "scalar") leaf.kind = OutputLeaf::Kind::Scalar;
    else if (kind == "other") leaf.kind = OutputLeaf::Kind::Other;
    else throw std::invalid_argument(fmt::format("unknown output leaf kind '{}'", kind));
    leaf.index = leafJson.value("index", -1);
    leaf.dtype = stringField(leafJson, "dtype");
    if (leafJson.contains("shape")) leaf.shape = leafJson.at("shape").get<std::vector<int64_t>>();
    leaf.repr = stringField(leafJson, "repr");
    if (std::string role = stringField(leafJson, "role"); !role.empty()) leaf.role = std::move(role);
    leaf.name = stringField(leafJson, "name");
    leaf.random = leafJson.value("random", false);
    if (const auto it = leafJson.find("steps"); it != leafJson.end() && it->is_number_integer())
      leaf.steps = std::max(1, it->get<int>());
    if (const auto it = leafJson.find("tie_source"); it != leafJson.end() && it->is_object()) {
      TieSource tie;
      tie.index = it->value("index", -1);
      if (it->contains("dim") && it->at("dim").is_number_integer()) tie.dim = it->at("dim").get<int64_t>();
      tie.sameRank = it->value("same_rank", false);
      if (tie.index >= 0) leaf.tieSource = tie;
    }
    set.leaves.push_back(std::move(leaf));
  }
  return set;
}

}  // namespace

std::string_view toString(RunStatus status) {
  for (auto [s, name] : kStatusNames)
    if (s == status) return name;
  return "unknown";
}

std::optional<RunStatus> parseRunStatus(std::string_view text) {
  for (auto [s, name] : kStatusNames)
    if (name == text) return s;
  return std::nullopt;
}

namespace {
/// The message on one line, blank runs collapsed, at most 200 characters.
std::string oneLine(const std::string& text) {
  std::string out;
  for (char c : text) {
    bool blank = c == '\n' || c == '\r' || c == '\t' || c == ' ';
    if (blank && (out.empty() || out.back() == ' ')) continue;
    out += blank ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.size() > 200 ? out.substr(0, 197) + "..." : out;
}
}  // namespace

std::string RunResult::summary() const {
  switch (status) {
    case RunStatus::Ok: return "ok";
    case RunStatus::Exception:
      return fmt::format("exception {}: {} (phase {})", exception ? exception->type : "?",
                         exception ? oneLine(exception->message) : "", phase);
    case RunStatus::Signal:
      if (exitCode) return fmt::format("died with exit code {} (phase {})", *exitCode, phase);
      return fmt::format("killed by {} (phase {})", signalName, phase);
    case RunStatus::Timeout: return fmt::format("timeout (phase {})", phase);
    case RunStatus::OutOfMemory: return fmt::format("out of memory (phase {})", phase);
    case RunStatus::Refused:
      return fmt::format("refused by the sandbox: {} (phase {})", refusals.empty() ? "?" : oneLine(refusals.front()),
                         phase);
  }
  return "unknown";
}

RunResult runResultFromJson(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("result is not a JSON object");
  RunResult r;
  r.jobId = stringField(j, "id");
  std::string status = stringField(j, "status");
  auto parsed = parseRunStatus(status);
  if (!parsed) throw std::invalid_argument(fmt::format("unknown status '{}'", status));
  r.status = *parsed;
  r.phase = stringField(j, "phase");
  if (auto it = j.find("exception"); it != j.end() && it->is_object()) {
    r.exception = ExceptionInfo{stringField(*it, "type"), stringField(*it, "qualified_type"),
                                stringField(*it, "message"), stringField(*it, "traceback"),
                                stringField(*it, "node_stack_trace")};
  }
  r.signal = j.value("signal", 0);
  r.signalName = stringField(j, "signal_name");
  if (auto it = j.find("exit_code"); it != j.end() && it->is_number_integer()) r.exitCode = it->get<int>();
  r.stderrTail = stringField(j, "stderr_tail");
  r.stdoutTail = stringField(j, "stdout_tail");
  if (auto it = j.find("bisect"); it != j.end() && it->is_object()) r.bisect = *it;
  if (auto it = j.find("lift"); it != j.end() && it->is_object()) r.lift = *it;
  if (auto it = j.find("times"); it != j.end() && it->is_object()) {
    const auto& t = *it;
    r.times = PhaseTimes{numberField(t, "fork_s"), numberField(t, "setup_s"), numberField(t, "compile_s"),
                         numberField(t, "run_s"),  numberField(t, "save_s"),  numberField(t, "child_wall_s"), 0.0,
                         numberField(t, "backward_s"), numberField(t, "extra_calls_s"), {}};
  }
  numberMap(j, "compile_phases", r.times.compilePhases);
  if (auto it = j.find("child"); it != j.end() && it->is_object()) {
    r.child.persistent = it->value("persistent", false);
    r.child.jobsBefore = it->value("jobs_before", 0);
    r.child.stateLeak = stringField(*it, "state_leak");
    r.child.gpu = stringField(*it, "gpu");
  }
  if (auto it = j.find("outputs"); it != j.end() && !it->is_null()) r.outputs = outputSetFromJson(*it);
  if (auto it = j.find("desugared_hops"); it != j.end() && it->is_array())
    for (const auto& name : *it)
      if (name.is_string()) r.desugaredHops.push_back(name.get<std::string>());
  if (auto it = j.find("random_ops"); it != j.end() && it->is_array())
    for (const auto& op : *it)
      if (op.is_string()) r.randomOps.push_back(op.get<std::string>());
  if (auto it = j.find("repeat_recompiles"); it != j.end() && it->is_array())
    for (const auto& why : *it)
      if (why.is_string()) r.repeatRecompiles.push_back(why.get<std::string>());
  if (auto it = j.find("repeat_outputs"); it != j.end() && it->is_array())
    for (const auto& o : *it) r.repeatOutputs.push_back(outputSetFromJson(o));
  if (auto it = j.find("compile_facts"); it != j.end() && it->is_object()) {
    CompileFacts f;
    f.graphCount = it->value("graph_count", 0);
    f.graphBreaks = it->value("graph_breaks", 0);
    countMap(*it, "break_reasons", f.breakReasons);
    numberMap(*it, "inductor_counters", f.inductorCounters);
    numberMap(*it, "inductor_metrics", f.inductorMetrics);
    numberMap(*it, "aot_autograd_counters", f.aotAutogradCounters);
    for (const auto& [key, figure] : kInductorFigures) countMap(*it, key, f.*figure);
    if (auto n = it->find("recompiles"); n != it->end() && n->is_number()) f.recompiles = n->get<int>();
    numberMap(*it, "dynamo_counters", f.dynamoCounters);
    r.compileFacts = std::move(f);
  }
  countMap(j, "export_ops", r.exportOps);
  r.backwardNote = stringField(j, "backward");
  if (auto it = j.find("refusals"); it != j.end() && it->is_array())
    for (const auto& what : *it)
      if (what.is_string()) r.refusals.push_back(what.get<std::string>());
  return r;
}

nlohmann::json toJson(const RunResult& r) {
  nlohmann::json j{{"status", toString(r.status)},
                   {"phase", r.phase},
                   {"summary", r.summary()},
                   {"job_dir", r.jobDir.string()},
                   {"times",
                    {{"fork_s", r.times.fork},
                     {"setup_s", r.times.setup},
                     {"compile_s", r.times.compile},
                     {"run_s", r.times.run},
                     {"save_s", r.times.save},
                     {"child_wall_s", r.times.childWall},
                     {"round_trip_s", r.times.roundTrip}}}};
  if (r.times.backward > 0) j["times"]["backward_s"] = r.times.backward;
  if (r.times.extraCalls > 0) j["times"]["extra_calls_s"] = r.times.extraCalls;
  if (!r.randomOps.empty()) j["random_ops"] = r.randomOps;
  if (!r.desugaredHops.empty()) j["desugared_hops"] = r.desugaredHops;
  if (!r.repeatRecompiles.empty()) j["repeat_recompiles"] = r.repeatRecompiles;
  if (!r.times.compilePhases.empty()) j["compile_phases"] = r.times.compilePhases;
  j["child"] = {{"persistent", r.child.persistent}, {"jobs_before", r.child.jobsBefore}};
  if (!r.child.stateLeak.empty()) j["child"]["state_leak"] = r.child.stateLeak;
  if (!r.child.gpu.empty()) j["child"]["gpu"] = r.child.gpu;
  if (!r.backwardNote.empty()) j["backward"] = r.backwardNote;
  if (!r.refusals.empty()) j["refusals"] = r.refusals;
  // Tails only: a report quotes the end of a traceback, where the root cause is.
  auto tailOf = [](const std::string& text, size_t limit) {
    return text.size() <= limit ? text : "..." + text.substr(text.size() - limit);
  };
  if (r.exception)
    j["exception"] = {{"type", r.exception->type},
                      {"qualified_type", r.exception->qualifiedType},
                      {"message", r.exception->message},
                      {"traceback", tailOf(r.exception->traceback, 6000)}};
  if (r.exception && !r.exception->nodeStackTrace.empty())
    j["exception"]["node_stack_trace"] = tailOf(r.exception->nodeStackTrace, 2000);
  if (!r.stderrTail.empty() && r.status != RunStatus::Ok) j["stderr_tail"] = tailOf(r.stderrTail, 3000);
  if (r.status == RunStatus::Signal) j["signal"] = r.signalName;
  if (r.exitCode) j["exit_code"] = *r.exitCode;
  if (!r.stdoutTail.empty()) j["stdout_tail"] = r.stdoutTail;
  if (!r.bisect.is_null()) j["bisect"] = r.bisect;
  if (!r.lift.is_null()) j["lift"] = r.lift;
  if (!r.exportOps.empty()) j["export_ops"] = r.exportOps;
  if (r.compileFacts) {
    const CompileFacts& f = *r.compileFacts;
    nlohmann::json& facts = j["compile_facts"];
    facts = {{"graph_count", f.graphCount},
             {"graph_breaks", f.graphBreaks},
             {"break_reasons", f.breakReasons},
             {"inductor_counters", f.inductorCounters},
             {"inductor_metrics", f.inductorMetrics},
             {"aot_autograd_counters", f.aotAutogradCounters}};
    // What Inductor did: only the figures this torch reported.
    for (const auto& [key, figure] : kInductorFigures)
      if (!(f.*figure).empty()) facts[key] = f.*figure;
    if (f.recompiles > 0) facts["recompiles"] = f.recompiles;
    if (!f.dynamoCounters.empty()) facts["dynamo_counters"] = f.dynamoCounters;
  }
  return j;
}

std::string stickyCudaError(const RunResult& run) {
  static constexpr std::string_view kMarkers[] = {
      "device-side assert triggered", "an illegal memory access was encountered", "unspecified launch failure",
      "misaligned address",           "an illegal instruction was encountered",   "uncorrectable ECC error"};
  if (run.status != RunStatus::Exception && run.status != RunStatus::Signal) return "";
  for (std::string_view marker : kMarkers) {
    bool inMessage = run.exception && run.exception->message.find(marker) != std::string::npos;
    if (inMessage || run.stderrTail.find(marker) != std::string::npos) return std::string(marker);
  }
  return "";
}

}  // namespace tcfuzz::oracles
