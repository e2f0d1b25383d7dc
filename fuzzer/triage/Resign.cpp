#include "fuzzer/triage/Resign.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "generators/ir/Graph.h"
#include "oracles/reporter/Minimizer.h"
#include "oracles/judge/Signature.h"

namespace tcfuzz {

using nlohmann::json;

namespace {

/// The parts of a recorded run (toJson(RunResult)'s report view) that a signature reads.
oracles::RunResult recordedRun(const json& j) {
  oracles::RunResult r;
  if (!j.is_object()) return r;
  auto status = oracles::parseRunStatus(j.value("status", ""));
  if (!status) throw std::invalid_argument("a run with no readable status");
  r.status = *status;
  r.phase = j.value("phase", "");
  if (const auto e = j.find("exception"); e != j.end() && e->is_object())
    r.exception = oracles::ExceptionInfo{e->value("type", ""), e->value("qualified_type", ""), e->value("message", ""),
                                         e->value("traceback", ""), e->value("node_stack_trace", "")};
  if (const auto s = j.find("signal"); s != j.end() && s->is_string()) r.signalName = s->get<std::string>();
  if (const auto c = j.find("exit_code"); c != j.end() && c->is_number_integer()) r.exitCode = c->get<int>();
  return r;
}

oracles::Verdict verdictNamed(const std::string& name) {
  if (auto v = oracles::parseVerdict(name)) return *v;
  throw std::invalid_argument("unknown verdict '" + name + "'");
}

}  // namespace

std::string ResignSummary::describe() const {
  std::vector<std::string> moves;
  for (const auto& [from, to] : splits) moves.push_back(fmt::format("{} -> {}", from, fmt::join(to, ", ")));
  return fmt::format("re-signed {} finding(s): {} changed{}, {} unreadable; {} triage row(s) dropped", findings, changed,
                     moves.empty() ? "" : fmt::format(" ({})", fmt::join(moves, "; ")), unreadable, triageRowsDropped);
}

ResignSummary resignFindings(FindingStore& store) {
  ResignSummary summary;
  for (const FindingRecord& f : store.findings()) {
    ++summary.findings;
    oracles::Signature fresh;
    try {
      json result = json::parse(f.result);
      oracles::TripleRun runs{recordedRun(result.value("eager", json())), recordedRun(result.value("compiled", json())),
                              recordedRun(result.value("fp64", json()))};
      oracles::VerdictReport verdict{verdictNamed(f.verdict), f.reason, {}};
      std::vector<std::string> ops;
      for (const auto& n : gen::Graph::fromJson(json::parse(f.programJson), "finding").nodes) ops.push_back(n.op);
      fresh = oracles::signatureOf(runs, verdict, ops);
      oracles::Signature old = oracles::signatureFromJson(json::parse(f.signature));
      if (old.kind.rfind("cache-only ", 0) == 0) fresh.kind = "cache-only " + fresh.kind;  // as the campaign marks it
      // A recorded traceback is a tail ("..." first): its root-cause frames may be cut off, so the
      // frames stay those taken from the whole traceback when the finding was made.
      for (const auto* run : {&runs.eager, &runs.compiled, &runs.fp64})
        if (run->exception && run->exception->traceback.rfind("...", 0) == 0) fresh.frames = old.frames;
    } catch (const std::exception&) {
      ++summary.unreadable;
      continue;
    }
    if (fresh.id() == f.signatureId) continue;
    store.updateSignature(f.id, fresh.id(), oracles::toJson(fresh).dump());
    ++summary.changed;
    summary.splits[f.signatureId].insert(fresh.id());
  }
  std::set<std::string> carried;
  for (const auto& id : store.signatureIds()) carried.insert(id);
  for (const TriageRecord& row : store.triageRecords())
    if (!carried.count(row.signatureId)) {
      store.removeTriage(row.signatureId);
      ++summary.triageRowsDropped;
    }
  return summary;
}

}  // namespace tcfuzz
