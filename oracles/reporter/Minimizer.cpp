#include "oracles/reporter/Minimizer.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "generators/repair/GraphRepair.h"
#include "generators/repair/IntConstraints.h"
#include "generators/ir/Rng.h"

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
  const CompileConfig& k = c.compile;
  if (!k.defaultMode()) out.push_back({"mode", [](MinimizeCase& m) { m.compile.mode = CompileConfig{}.mode; }});
  if (k.dynamic) out.push_back({"dynamic", [](MinimizeCase& m) { m.compile.dynamic = CompileConfig{}.dynamic; }});
  if (k.markDynamic)
    out.push_back({"mark_dynamic", [](MinimizeCase& m) { m.compile.markDynamic = CompileConfig{}.markDynamic; }});
  if (k.fullgraph)
    out.push_back({"fullgraph", [](MinimizeCase& m) { m.compile.fullgraph = CompileConfig{}.fullgraph; }});
  if (k.exportStrict)
    out.push_back({"export_strict", [](MinimizeCase& m) { m.compile.exportStrict = CompileConfig{}.exportStrict; }});
  if (c.backward) out.push_back({"backward", [](MinimizeCase& m) { m.backward = false; }});
  if (k.inductorConfig.is_object())
    for (const auto& [name, _] : k.inductorConfig.items())
      out.push_back({name, [name](MinimizeCase& m) { m.compile.inductorConfig.erase(name); }});
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

// --- Passes ---------------------------------------------------------------------------------------

/// A copy of `g` without the nodes marked in `remove`: a removed value that is only returned is
/// dropped from the outputs, one that a kept node reads becomes a fresh program input of its type.
Graph removeNodes(const Graph& g, const std::vector<bool>& remove) {
  Graph out = g;
  std::set<int> removedValues;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (remove[i])
      for (int v : g.nodes[i].outputs) removedValues.insert(v);
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

/// The candidates one pass proposes for one case, in the order proposed: each kept only when it is
/// strictly smaller than the case, and a program only when repair makes it valid and it is new.
class CandidateList {
 public:
  using Finish = std::function<std::optional<Graph>(Graph)>;
  CandidateList(const MinimizeCase& c, std::string pass, const gen::OpCatalog& catalog, Finish finish)
      : case_(c), pass_(std::move(pass)), catalog_(catalog), finish_(std::move(finish)), size_(sizeOf(c, catalog)) {}

  /// The case's configuration with program `g` (repaired and compacted first).
  void proposeGraph(Graph g) {
    std::optional<Graph> done = finish_(std::move(g));
    if (!done) return;
    MinimizeCase m{*done, case_.compile, case_.backward, pass_};
    if (!(sizeOf(m, catalog_) < size_)) return;
    if (!seen_.insert(m.graph.contentHash()).second) return;
    out_.push_back(std::move(m));
  }
  /// The case's program under another configuration.
  void proposeConfig(MinimizeCase m) {
    m.pass = pass_;
    if (sizeOf(m, catalog_) < size_) out_.push_back(std::move(m));
  }
  std::vector<MinimizeCase> take() { return std::move(out_); }

 private:
  const MinimizeCase& case_;
  std::string pass_;
  const gen::OpCatalog& catalog_;
  Finish finish_;
  CaseSize size_;
  std::set<std::string> seen_;  // content hashes of the programs proposed
  std::vector<MinimizeCase> out_;
};

/// What a pass reads: the case it reduces, the op catalog and the minimizer's policy.
struct PassInput {
  const MinimizeCase& c;
  const gen::OpCatalog& catalog;
  const MinimizerPolicy& policy;
};

/// hinted-ops: keep only the nodes of one known bug's op multiset (its last occurrences, nearest the outputs).
void hintedOps(const PassInput& in, CandidateList& out) {
  const Graph& g = in.c.graph;
  const size_t n = g.nodes.size();
  for (const auto& hint : in.policy.opHints) {
    std::multiset<std::string> wanted(hint.begin(), hint.end());
    std::vector<bool> remove(n, true);
    for (size_t i = n; i-- > 0;)
      if (auto it = wanted.find(signatureOpName(g.nodes[i].op)); it != wanted.end()) {
        remove[i] = false;
        wanted.erase(it);
      }
    if (!wanted.empty()) continue;  // the program lacks an op of this hint
    out.proposeGraph(removeNodes(g, remove));
  }
}

/// drop-config: reset one non-default compile option.
void dropConfig(const PassInput& in, CandidateList& out) {
  for (const auto& [name, reset] : configOptions(in.c)) {
    MinimizeCase m = in.c;
    reset(m);
    out.proposeConfig(std::move(m));
  }
}

/// drop-outputs: keep one output, then drop one output.
void dropOutputs(const PassInput& in, CandidateList& out) {
  const Graph& g = in.c.graph;
  if (g.outputs.size() <= 1) return;
  for (int keep : g.outputs) {
    Graph h = g;
    h.outputs = {keep};
    out.proposeGraph(h);
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    Graph h = g;
    h.outputs.erase(h.outputs.begin() + static_cast<std::ptrdiff_t>(i));
    out.proposeGraph(h);
  }
}

/// remove-nodes: ddmin, chunks of n/2, n/4, ... 1 nodes, each removed on its own; the largest removals first.
void removeNodeChunks(const PassInput& in, CandidateList& out) {
  const Graph& g = in.c.graph;
  const size_t n = g.nodes.size();
  for (size_t chunks = 2; n > 1 && chunks < 2 * n; chunks *= 2) {
    size_t k = std::min(chunks, n);
    for (size_t part = 0; part < k; ++part) {
      size_t lo = part * n / k, hi = (part + 1) * n / k;
      if (lo == hi) continue;
      std::vector<bool> remove(n, false);
      for (size_t i = lo; i < hi; ++i) remove[i] = true;
      out.proposeGraph(removeNodes(g, remove));
    }
    if (k == n) break;
  }
}

/// remove-grown: in a program grown around an LLM core, remove the grown nodes before any core node:
/// all of them at once, then ddmin over them alone (remove-nodes later takes core nodes too).
void removeGrownNodes(const PassInput& in, CandidateList& out) {
  const Graph& g = in.c.graph;
  std::vector<size_t> grown;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!g.nodes[i].core) grown.push_back(i);
  if (grown.empty() || grown.size() == g.nodes.size()) return;  // no core, or nothing grew
  const size_t n = grown.size();
  for (size_t chunks = 1; chunks < 2 * n; chunks *= 2) {
    size_t k = std::min(chunks, n);
    for (size_t part = 0; part < k; ++part) {
      size_t lo = part * n / k, hi = (part + 1) * n / k;
      if (lo == hi) continue;
      std::vector<bool> remove(g.nodes.size(), false);
      for (size_t i = lo; i < hi; ++i) remove[grown[i]] = true;
      out.proposeGraph(removeNodes(g, remove));
    }
    if (k == n) break;
  }
}

/// bypass-nodes: replace a node by its first input of the same type, last node first.
void bypassNodes(const PassInput& in, CandidateList& out) {
  const Graph& g = in.c.graph;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& node = g.nodes[i];
    if (node.outputs.size() != 1) continue;
    for (int input : node.inputs) {
      if (!(g.typeOf(input) == g.typeOf(node.outputs[0]))) continue;
      Graph h = g;
      rewire(h, node.outputs[0], input);
      h.nodes.erase(h.nodes.begin() + static_cast<std::ptrdiff_t>(i));
      out.proposeGraph(h);
      break;
    }
  }
}

/// reset-attrs: set one attribute to its simplest value, on a node that stays valid as it stands.
void resetAttrs(const PassInput& in, CandidateList& out) {
  const Graph& g = in.c.graph;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const gen::OpSpec* spec = in.catalog.find(g.nodes[i].op);
    if (!spec) continue;
    for (const gen::AttrSpec& a : spec->attrs) {
      if (!g.nodes[i].attrs.contains(a.name)) continue;
      auto simple = simplestValue(a, g.nodes[i].attrs[a.name]);
      if (!simple || *simple == g.nodes[i].attrs[a.name]) continue;
      Graph h = g;
      h.nodes[i].attrs[a.name] = *simple;
      // Only a node that is valid as it stands: repair would redraw the attribute.
      if (!gen::firstInvalidNode(in.catalog, h).empty()) continue;
      out.proposeGraph(h);
    }
  }
}

/// plain-inputs: every program input contiguous, its own draw (no alias) and without boundary values, then one input at a
/// time, then one input's layout or boundary values alone.
void plainInputs(const PassInput& in, CandidateList& out) {
  const Graph& g = in.c.graph;
  std::vector<size_t> special;
  for (size_t i = 0; i < g.inputs.size(); ++i)
    if (!g.inputs[i].layout.contiguous() || !g.inputs[i].boundary.empty() || !g.inputs[i].alias.none()) special.push_back(i);
  if (special.empty()) return;
  Graph all = g;
  for (size_t i : special) all.inputs[i].layout = {}, all.inputs[i].boundary = {}, all.inputs[i].alias = {};
  out.proposeGraph(all);
  for (size_t i : special) {
    Graph one = g, layoutOnly = g, boundaryOnly = g;
    one.inputs[i].layout = {}, one.inputs[i].boundary = {}, one.inputs[i].alias = {};
    if (special.size() > 1) out.proposeGraph(one);
    if (g.inputs[i].layout.contiguous() || g.inputs[i].boundary.empty()) continue;
    layoutOnly.inputs[i].layout = {};
    boundaryOnly.inputs[i].boundary = {};
    out.proposeGraph(layoutOnly);
    out.proposeGraph(boundaryOnly);
  }
}

/// The Python-level constructs on a program's nodes, plus its hook and its schedule steps.
int64_t pythonConstructCount(const Graph& g) {
  int64_t n = static_cast<int64_t>(g.schedule.size()) + !g.hook.empty();
  for (const Node& node : g.nodes) {
    const gen::NodePython& p = node.python;
    n += p.graphBreakBefore + p.branch.has_value() + !p.outputState.empty() + p.counter + !p.form.empty() + p.hop.has_value();
  }
  return n;
}

/// plain-python: drop every Python-level construct, then one schedule step, then one construct of one node (a
/// higher-order op among them: its region then runs inline, so a report keeps an op only where the bug needs it).
void plainPython(const PassInput& in, CandidateList& out) {
  const Graph& g = in.c.graph;
  int64_t count = pythonConstructCount(g);
  if (count == 0) return;
  Graph none = g;
  none.schedule.clear();
  none.hook.clear();
  for (Node& n : none.nodes) n.python = {};
  out.proposeGraph(none);
  if (count == 1) return;
  if (!g.hook.empty()) {  // the schedule's remove-hook steps no longer hold without it
    Graph unhooked = g;
    unhooked.hook.clear();
    out.proposeGraph(unhooked);
  }
  for (size_t k = 0; k < g.schedule.size(); ++k) {
    Graph fewer = g;
    fewer.schedule.erase(fewer.schedule.begin() + static_cast<std::ptrdiff_t>(k));
    out.proposeGraph(fewer);
  }
  using Edit = void (*)(gen::NodePython&);
  const std::pair<bool (*)(const gen::NodePython&), Edit> kDrops[] = {
      {[](const gen::NodePython& p) { return p.graphBreakBefore; }, [](gen::NodePython& p) { p.graphBreakBefore = false; }},
      {[](const gen::NodePython& p) { return p.branch.has_value(); }, [](gen::NodePython& p) { p.branch.reset(); }},
      {[](const gen::NodePython& p) { return !p.outputState.empty(); }, [](gen::NodePython& p) { p.outputState.clear(); }},
      {[](const gen::NodePython& p) { return p.counter; }, [](gen::NodePython& p) { p.counter = false; }},
      {[](const gen::NodePython& p) { return !p.form.empty(); }, [](gen::NodePython& p) { p.form.clear(); }},
      // A region's higher-order op dropped: its body inline, the op's Python meaning as plain ops.
      {[](const gen::NodePython& p) { return p.hop.has_value(); }, [](gen::NodePython& p) { p.hop.reset(); }},
  };
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& [has, drop] : kDrops)
      if (has(g.nodes[i].python)) {
        Graph one = g;
        drop(one.nodes[i].python);
        out.proposeGraph(one);
      }
}

/// shrink-ranks: drop one dimension of one program input or parameter, unit dimensions first.
void shrinkRanks(const PassInput& in, CandidateList& out) {
  const Graph& g = in.c.graph;
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
      out.proposeGraph(h);
    }
  }
}

/// shrink-shapes: halve every dimension of all sources, then of one source, then one dimension of one source.
void shrinkShapes(const PassInput& in, CandidateList& out) {
  const Graph& g = in.c.graph;
  auto halve = [](int64_t d) { return d > 1 ? (d + 1) / 2 : d; };
  {
    Graph h = g;
    for (gen::Source* src : allSources(h))
      for (int64_t& d : h.typeOf(src->value).shape) d = halve(d);
    out.proposeGraph(h);
  }
  Graph base = g;
  size_t count = allSources(base).size();
  for (size_t s = 0; s < count; ++s) {
    Graph h = g;
    for (int64_t& d : h.typeOf(allSources(h)[s]->value).shape) d = halve(d);
    out.proposeGraph(h);
    const auto& shape = g.typeOf(allSources(base)[s]->value).shape;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] <= 1) continue;
      Graph one = g;
      auto& dims = one.typeOf(allSources(one)[s]->value).shape;
      dims[d] = shape[d] > 2 ? halve(shape[d]) : 1;
      out.proposeGraph(one);
    }
  }
}

/// A reduction pass by name (cvise's passes behind one interface); MinimizerPolicy::passes orders them.
struct NamedPass {
  std::string_view name;
  void (*propose)(const PassInput&, CandidateList&);
};

constexpr NamedPass kPasses[] = {
    {"hinted-ops", hintedOps},       {"remove-grown", removeGrownNodes}, {"drop-outputs", dropOutputs},
    {"remove-nodes", removeNodeChunks},
    {"bypass-nodes", bypassNodes},   {"drop-config", dropConfig},   {"reset-attrs", resetAttrs},
    {"plain-inputs", plainInputs}, {"shrink-ranks", shrinkRanks}, {"shrink-shapes", shrinkShapes},
    {"plain-python", plainPython},
};

/// The pass called `name`; null when there is none.
const NamedPass* findPass(std::string_view name) {
  for (const NamedPass& p : kPasses)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace

std::string CaseSize::str() const {
  return fmt::format("{} nodes, {} outputs, {} config options, {} input elements{}{}", nodes, outputs, configOptions,
                     elements, specialInputs ? fmt::format(", {} inputs with a layout or boundary values", specialInputs) : "",
                     pythonConstructs ? fmt::format(", {} Python-level constructs", pythonConstructs) : "");
}

CaseSize sizeOf(const MinimizeCase& c, const gen::OpCatalog& catalog) {
  CaseSize s;
  s.nodes = static_cast<int64_t>(c.graph.nodes.size());
  s.outputs = static_cast<int64_t>(c.graph.outputs.size());
  s.configOptions = static_cast<int64_t>(configOptions(c).size());
  s.pythonConstructs = pythonConstructCount(c.graph);
  for (const auto* list : {&c.graph.inputs, &c.graph.params})
    for (const gen::Source& src : *list) {
      const gen::TensorType& t = c.graph.typeOf(src.value);
      s.elements += t.numel();
      s.rankSum += t.rank();
    }
  s.complexAttrs = complexAttrCount(c.graph, catalog);
  for (const gen::Source& src : c.graph.inputs)
    s.specialInputs += !src.layout.contiguous() || !src.boundary.empty() || !src.alias.none();
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

std::string signatureOpName(const std::string& op) {
  return op.size() > 1 && op.back() == '_' ? op.substr(0, op.size() - 1) : op;
}

std::vector<std::string> opsOf(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(signatureOpName(n.op));
  return ops;
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
        if (!name.is_string() || !findPass(name.get<std::string>()))
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
  repaired.origin.minimized = true;  // its header must not claim that the origin's replay makes it
  if (repaired.nodes.empty() || !gen::firstInvalidNode(catalog_, repaired).empty()) return std::nullopt;
  return repaired;
}

std::vector<MinimizeCase> Minimizer::candidates(const std::string& pass, const MinimizeCase& c) const {
  const NamedPass* named = findPass(pass);
  if (!named) throw std::invalid_argument(fmt::format("unknown minimizer pass '{}'", pass));
  CandidateList out(c, pass, catalog_, [this](Graph g) { return finish(std::move(g)); });
  named->propose({c, catalog_, policy_}, out);
  return out.take();
}

MinimizeResult Minimizer::minimize(const MinimizeCase& start, const CandidateTest& test) const {
  MinimizeResult result;
  result.best = start;
  std::set<std::string> tried;  // candidates already tested (hash of the IR and the configuration)
  auto caseKey = [](const MinimizeCase& m) {
    return m.graph.contentHash() + m.compile.toJson().dump() + (m.backward ? "b" : "f");
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
