#include "oracles/Minimizer.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "generators/GraphRepair.h"
#include "generators/IntConstraints.h"
#include "generators/Rng.h"

namespace tcfuzz::oracles {

using gen::Graph;
using gen::Node;
using nlohmann::json;

namespace {

/// The simplest value of an attribute's domain: null, false, the first choice, the value closest to 0.
std::optional<json> simplestValue(const gen::AttrSpec& spec, const json& current) {
  if (spec.optional) return json();
  switch (spec.kind) {
    case gen::AttrKind::Bool: return json(false);
    case gen::AttrKind::Choice:
      if (spec.choices.empty()) return std::nullopt;
      return json(spec.choices.front());
    case gen::AttrKind::Int: return json(std::clamp<int64_t>(0, spec.lo, spec.hi));
    case gen::AttrKind::Float: return json(std::clamp(0.0, spec.flo, spec.fhi));
    case gen::AttrKind::IntList: {
      if (!current.is_array()) return std::nullopt;
      json list = json::array();
      for (size_t i = 0; i < current.size(); ++i) list.push_back(std::clamp<int64_t>(0, spec.lo, spec.hi));
      return list;
    }
    case gen::AttrKind::DType: return std::nullopt;
  }
  return std::nullopt;
}

/// Number of attributes of the graph's nodes that are not at their simplest value.
int64_t complexAttrCount(const Graph& g, const gen::OpCatalog& catalog) {
  int64_t n = 0;
  for (const Node& node : g.nodes) {
    const gen::OpSpec* spec = catalog.find(node.op);
    if (!spec) continue;
    for (const gen::AttrSpec& a : spec->attrs) {
      if (!node.attrs.contains(a.name)) continue;
      auto simple = simplestValue(a, node.attrs[a.name]);
      if (simple && *simple != node.attrs[a.name]) ++n;
    }
  }
  return n;
}

/// The compile options of a case that differ from torch.compile's defaults, as (name, reset) edits.
std::vector<std::pair<std::string, std::function<void(MinimizeCase&)>>> configOptions(const MinimizeCase& c) {
  std::vector<std::pair<std::string, std::function<void(MinimizeCase&)>>> out;
  const json& k = c.compile;
  if (k.contains("mode") && k["mode"].is_string() && k["mode"] != "default" && k["mode"] != "")
    out.push_back({"mode", [](MinimizeCase& m) { m.compile["mode"] = nullptr; }});
  if (k.contains("dynamic") && !k["dynamic"].is_null())
    out.push_back({"dynamic", [](MinimizeCase& m) { m.compile["dynamic"] = nullptr; }});
  if (k.value("fullgraph", false)) out.push_back({"fullgraph", [](MinimizeCase& m) { m.compile["fullgraph"] = false; }});
  if (c.backward) out.push_back({"backward", [](MinimizeCase& m) { m.backward = false; }});
  if (k.contains("inductor_config") && k["inductor_config"].is_object())
    for (const auto& [name, _] : k["inductor_config"].items())
      out.push_back({name, [name](MinimizeCase& m) { m.compile["inductor_config"].erase(name); }});
  return out;
}

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

/// Replaces every read of `from` (node inputs and program outputs) with `to`.
void rewire(Graph& g, int from, int to) {
  for (Node& n : g.nodes)
    for (int& in : n.inputs)
      if (in == from) in = to;
  for (int& o : g.outputs)
    if (o == from) o = to;
}

/// Every source (input or parameter) of the graph, inputs first.
std::vector<gen::Source*> allSources(Graph& g) {
  std::vector<gen::Source*> out;
  for (auto& s : g.inputs) out.push_back(&s);
  for (auto& s : g.params) out.push_back(&s);
  return out;
}

}  // namespace

std::string CaseSize::str() const {
  return fmt::format("{} nodes, {} outputs, {} config options, {} input elements", nodes, outputs, configOptions,
                     elements);
}

CaseSize sizeOf(const MinimizeCase& c, const gen::OpCatalog& catalog) {
  CaseSize s;
  s.nodes = static_cast<int64_t>(c.graph.nodes.size());
  s.outputs = static_cast<int64_t>(c.graph.outputs.size());
  s.configOptions = static_cast<int64_t>(configOptions(c).size());
  for (const auto* list : {&c.graph.inputs, &c.graph.params})
    for (const gen::Source& src : *list) {
      const gen::TensorType& t = c.graph.typeOf(src.value);
      s.elements += t.numel();
      s.rankSum += t.rank();
    }
  s.complexAttrs = complexAttrCount(c.graph, catalog);
  return s;
}

std::vector<std::string> configOptionNames(const MinimizeCase& c) {
  std::vector<std::string> names;
  for (const auto& [name, _] : configOptions(c)) names.push_back(name);
  return names;
}

MinimizeCase withoutConfigOption(const MinimizeCase& c, const std::string& name) {
  MinimizeCase m = c;
  for (const auto& [option, reset] : configOptions(c))
    if (option == name) reset(m);
  return m;
}

std::vector<std::string> opsOf(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op);
  return ops;
}

Graph eliminateDeadNodes(const Graph& g) {
  Graph out = g;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = out.nodes.size(); i-- > 0;) {
      const Node& n = out.nodes[i];
      bool used = false;
      for (int v : n.outputs)
        if (out.useCount(v) > 0 || std::find(out.outputs.begin(), out.outputs.end(), v) != out.outputs.end()) used = true;
      if (!used) {
        out.nodes.erase(out.nodes.begin() + static_cast<std::ptrdiff_t>(i));
        changed = true;
      }
    }
  }
  return gen::compactGraph(out);
}

// --- MinimizerPolicy ------------------------------------------------------------------------------

std::vector<std::string> Minimizer::passNames() { return MinimizerPolicy{}.passes; }

json MinimizerPolicy::toJson() const {
  return {{"passes", passes}, {"batch", batch}, {"max_candidates", maxCandidates}, {"max_rounds", maxRounds}};
}

MinimizerPolicy MinimizerPolicy::fromJson(const json& doc) {
  if (!doc.is_object()) throw std::invalid_argument("minimizer policy: expected a JSON object");
  MinimizerPolicy p;
  const std::vector<std::string> known = Minimizer::passNames();
  for (const auto& [key, value] : doc.items()) {
    auto positiveInt = [&](int& field) {
      if (!value.is_number_integer() || value.get<int64_t>() < 1)
        throw std::invalid_argument(fmt::format("minimizer policy: '{}' must be a positive integer", key));
      field = value.get<int>();
    };
    if (key == "passes") {
      if (!value.is_array()) throw std::invalid_argument("minimizer policy: 'passes' must be a list of pass names");
      p.passes.clear();
      for (const json& name : value) {
        if (!name.is_string() || std::find(known.begin(), known.end(), name.get<std::string>()) == known.end())
          throw std::invalid_argument(
              fmt::format("minimizer policy: unknown pass {} (known: {})", name.dump(), fmt::join(known, ", ")));
        p.passes.push_back(name);
      }
    } else if (key == "batch") {
      positiveInt(p.batch);
    } else if (key == "max_candidates") {
      positiveInt(p.maxCandidates);
    } else if (key == "max_rounds") {
      positiveInt(p.maxRounds);
    } else {
      throw std::invalid_argument(fmt::format("minimizer policy: unknown key '{}'", key));
    }
  }
  return p;
}

// --- Minimizer ------------------------------------------------------------------------------------

Minimizer::Minimizer(const gen::OpCatalog& catalog, MinimizerPolicy policy)
    : catalog_(catalog), policy_(std::move(policy)) {}

std::optional<Graph> Minimizer::finish(Graph g) const {
  g = eliminateDeadNodes(g);
  if (g.nodes.empty() || g.outputs.empty()) return std::nullopt;
  gen::Rng rng(policy_.seed ^ fnv1a(g.contentHash()));
  gen::IntSolver solver(rng.engine()());
  gen::ShapeCaps caps;
  caps.maxRank = 6;
  caps.maxDim = 64;
  caps.maxElements = 1 << 20;
  gen::GraphRepairer repairer(catalog_, caps, rng, solver);
  std::vector<std::string> dropped;
  Graph repaired = repairer.repair(g, &dropped);
  if (!dropped.empty()) return std::nullopt;  // a candidate that loses nodes to repair is another program
  repaired = eliminateDeadNodes(repaired);
  repaired.origin = g.origin;
  if (repaired.nodes.empty() || !gen::firstInvalidNode(catalog_, repaired).empty()) return std::nullopt;
  return repaired;
}

Graph Minimizer::removeNodes(const Graph& g, const std::vector<bool>& remove) const {
  Graph out = g;
  std::set<int> removedValues;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (remove[i])
      for (int v : g.nodes[i].outputs) removedValues.insert(v);
  // A removed value that is only returned is dropped from the outputs; one that a kept node reads
  // becomes a fresh program input of the same type.
  out.outputs.clear();
  for (int o : g.outputs)
    if (!removedValues.count(o)) out.outputs.push_back(o);
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!remove[i]) kept.push_back(g.nodes[i]);
  out.nodes = std::move(kept);
  // A kept value that only removed nodes read is returned instead: cutting a chain below the
  // faulty node must not make that node dead code.
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (remove[i]) continue;
    for (int v : g.nodes[i].outputs)
      if (g.useCount(v) > 0 && out.useCount(v) == 0 &&
          std::find(out.outputs.begin(), out.outputs.end(), v) == out.outputs.end())
        out.outputs.push_back(v);
  }
  for (int v : removedValues) {
    if (out.useCount(v) == 0) continue;
    gen::TensorType type = g.typeOf(v);
    int fresh = out.addValue(type);
    out.inputs.push_back({fresh, fmt::format("x{}", fresh), gen::distributionFor(type, std::nullopt, false)});
    rewire(out, v, fresh);
  }
  return out;
}

std::vector<MinimizeCase> Minimizer::candidates(const std::string& pass, const MinimizeCase& c) const {
  std::vector<MinimizeCase> out;
  std::set<std::string> seen;
  const CaseSize current = sizeOf(c, catalog_);
  auto propose = [&](Graph g) {
    std::optional<Graph> done = finish(std::move(g));
    if (!done) return;
    MinimizeCase m{*done, c.compile, c.backward, pass};
    if (!(sizeOf(m, catalog_) < current)) return;
    if (!seen.insert(m.graph.contentHash()).second) return;
    out.push_back(std::move(m));
  };
  const Graph& g = c.graph;
  const size_t n = g.nodes.size();

  if (pass == "hinted-ops") {
    for (const auto& hint : policy_.opHints) {
      std::multiset<std::string> wanted(hint.begin(), hint.end());
      std::vector<bool> remove(n, true);
      // Keep, for each op of the hint, its last occurrences (the ones nearest the outputs).
      for (size_t i = n; i-- > 0;)
        if (auto it = wanted.find(g.nodes[i].op); it != wanted.end()) {
          remove[i] = false;
          wanted.erase(it);
        }
      if (!wanted.empty()) continue;  // the program lacks an op of this hint
      propose(removeNodes(g, remove));
    }
  } else if (pass == "drop-config") {
    for (const auto& [name, reset] : configOptions(c)) {
      MinimizeCase m = c;
      reset(m);
      m.pass = pass;
      if (sizeOf(m, catalog_) < current) out.push_back(std::move(m));
    }
  } else if (pass == "drop-outputs") {
    if (g.outputs.size() > 1) {
      for (int keep : g.outputs) {
        Graph h = g;
        h.outputs = {keep};
        propose(h);
      }
      for (size_t i = 0; i < g.outputs.size(); ++i) {
        Graph h = g;
        h.outputs.erase(h.outputs.begin() + static_cast<std::ptrdiff_t>(i));
        propose(h);
      }
    }
  } else if (pass == "remove-nodes") {
    // ddmin: chunks of n/2, n/4, ... 1 nodes, each removed on its own; the largest removals first.
    for (size_t chunks = 2; n > 1 && chunks < 2 * n; chunks *= 2) {
      size_t k = std::min(chunks, n);
      for (size_t part = 0; part < k; ++part) {
        size_t lo = part * n / k, hi = (part + 1) * n / k;
        if (lo == hi) continue;
        std::vector<bool> remove(n, false);
        for (size_t i = lo; i < hi; ++i) remove[i] = true;
        propose(removeNodes(g, remove));
      }
      if (k == n) break;
    }
  } else if (pass == "bypass-nodes") {
    for (size_t i = n; i-- > 0;) {
      const Node& node = g.nodes[i];
      if (node.outputs.size() != 1) continue;
      for (int in : node.inputs) {
        if (!(g.typeOf(in) == g.typeOf(node.outputs[0]))) continue;
        Graph h = g;
        rewire(h, node.outputs[0], in);
        h.nodes.erase(h.nodes.begin() + static_cast<std::ptrdiff_t>(i));
        propose(h);
        break;
      }
    }
  } else if (pass == "reset-attrs") {
    for (size_t i = 0; i < n; ++i) {
      const gen::OpSpec* spec = catalog_.find(g.nodes[i].op);
      if (!spec) continue;
      for (const gen::AttrSpec& a : spec->attrs) {
        if (!g.nodes[i].attrs.contains(a.name)) continue;
        auto simple = simplestValue(a, g.nodes[i].attrs[a.name]);
        if (!simple || *simple == g.nodes[i].attrs[a.name]) continue;
        Graph h = g;
        h.nodes[i].attrs[a.name] = *simple;
        // Only a node that is valid as it stands: repair would redraw the attribute.
        if (!gen::firstInvalidNode(catalog_, h).empty()) continue;
        propose(h);
      }
    }
  } else if (pass == "shrink-ranks") {
    Graph base = g;
    auto sources = allSources(base);
    for (size_t s = 0; s < sources.size(); ++s) {
      const auto& shape = g.typeOf(sources[s]->value).shape;
      if (shape.size() <= 1) continue;
      // Unit dims first: dropping them changes the least.
      std::vector<size_t> order(shape.size());
      for (size_t d = 0; d < order.size(); ++d) order[d] = d;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return (shape[a] == 1) > (shape[b] == 1); });
      for (size_t d : order) {
        Graph h = g;
        auto& t = h.typeOf(allSources(h)[s]->value).shape;
        t.erase(t.begin() + static_cast<std::ptrdiff_t>(d));
        propose(h);
      }
    }
  } else if (pass == "shrink-shapes") {
    auto halve = [](int64_t d) { return d > 1 ? (d + 1) / 2 : d; };
    {
      Graph h = g;
      for (gen::Source* src : allSources(h))
        for (int64_t& d : h.typeOf(src->value).shape) d = halve(d);
      propose(h);
    }
    Graph base = g;
    size_t count = allSources(base).size();
    for (size_t s = 0; s < count; ++s) {
      Graph h = g;
      for (int64_t& d : h.typeOf(allSources(h)[s]->value).shape) d = halve(d);
      propose(h);
      const auto& shape = g.typeOf(allSources(base)[s]->value).shape;
      for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] <= 1) continue;
        Graph one = g;
        auto& dims = one.typeOf(allSources(one)[s]->value).shape;
        dims[d] = shape[d] > 2 ? halve(shape[d]) : 1;
        propose(one);
      }
    }
  } else {
    throw std::invalid_argument(fmt::format("unknown minimizer pass '{}'", pass));
  }
  return out;
}

MinimizeResult Minimizer::minimize(const MinimizeCase& start, const CandidateTest& test) const {
  MinimizeResult result;
  result.best = start;
  std::set<std::string> tried;  // candidates already tested (hash of the IR and the configuration)
  auto caseKey = [](const MinimizeCase& m) {
    return m.graph.contentHash() + m.compile.dump() + (m.backward ? "b" : "f");
  };
  tried.insert(caseKey(start));
  for (int round = 0; round < policy_.maxRounds; ++round) {
    bool progress = false;
    for (const std::string& pass : policy_.passes) {
      // Re-run a pass on its own result until it proposes nothing that still fails.
      for (bool accepted = true; accepted;) {
        accepted = false;
        std::vector<MinimizeCase> pending;
        for (MinimizeCase& m : candidates(pass, result.best))
          if (!tried.count(caseKey(m))) pending.push_back(std::move(m));
        for (size_t at = 0; at < pending.size() && !accepted; at += static_cast<size_t>(policy_.batch)) {
          if (result.candidatesTested >= policy_.maxCandidates) {
            result.budgetExhausted = true;
            return result;
          }
          size_t end = std::min(pending.size(), at + static_cast<size_t>(policy_.batch));
          end = std::min(end, at + static_cast<size_t>(policy_.maxCandidates - result.candidatesTested));
          std::vector<MinimizeCase> batch(pending.begin() + static_cast<std::ptrdiff_t>(at),
                                          pending.begin() + static_cast<std::ptrdiff_t>(end));
          for (const MinimizeCase& m : batch) tried.insert(caseKey(m));
          std::vector<bool> verdicts = test(batch);
          result.candidatesTested += static_cast<int>(batch.size());
          for (size_t i = 0; i < batch.size() && i < verdicts.size(); ++i) {
            if (!verdicts[i]) continue;
            CaseSize before = sizeOf(result.best, catalog_), after = sizeOf(batch[i], catalog_);
            result.log.push_back(fmt::format("{}: {} -> {}", pass, before.str(), after.str()));
            result.best = std::move(batch[i]);
            ++result.accepted;
            ++result.acceptedByPass[pass];
            accepted = progress = true;
            if (pass == "hinted-ops" && policy_.stopOnHint) return result;
            break;
          }
        }
      }
    }
    if (!progress) break;
  }
  return result;
}

}  // namespace tcfuzz::oracles
