#include "generators/Mutator.h"

#include <algorithm>

#include <fmt/format.h>

#include "generators/features/InputAliases.h"
#include "generators/features/InputLayout.h"
#include "generators/features/InputWrites.h"

namespace tcfuzz::gen {

using nlohmann::json;

namespace {

/// Replaces every read of `from` (node inputs and program outputs) at or after node `first` with `to`.
void rewire(Graph& g, int from, int to, size_t first) {
  for (size_t i = first; i < g.nodes.size(); ++i)
    for (int& in : g.nodes[i].inputs)
      if (in == from) in = to;
  for (int& o : g.outputs)
    if (o == from) o = to;
}

}  // namespace

Mutator::Mutator(const OpCatalog& catalog, GenPolicy policy) : catalog_(catalog), policy_(std::move(policy)) {
  table_ = {
      {"replace_op", [this](Graph& g, const Graph*, Rng& r) { return replaceOp(g, r); }},
      {"insert_node", [this](Graph& g, const Graph*, Rng& r) { return insertNode(g, r); }},
      {"delete_node", [this](Graph& g, const Graph*, Rng& r) { return deleteNode(g, r); }},
      {"change_attr", [this](Graph& g, const Graph*, Rng& r) { return changeAttr(g, r); }},
      {"change_shape", [this](Graph& g, const Graph*, Rng& r) { return changeShape(g, r); }},
      {"change_dtype", [this](Graph& g, const Graph*, Rng& r) { return changeDType(g, r); }},
      {"splice", [this](Graph& g, const Graph* d, Rng& r) { return splice(g, d, r); }},
      {"change_layout", [this](Graph& g, const Graph*, Rng& r) { return changeLayout(g, r); }},
      {"insert_view", [this](Graph& g, const Graph*, Rng& r) { return insertView(g, r); }},
      {"insert_inplace", [this](Graph& g, const Graph*, Rng& r) { return insertInplace(g, r); }},
      {"make_inplace", [this](Graph& g, const Graph*, Rng& r) { return makeInplace(g, r); }},
      {"toggle_input_write", [this](Graph& g, const Graph*, Rng& r) { return toggleInputWrite(g, r); }},
      {"change_python_construct", [this](Graph& g, const Graph*, Rng& r) { return changePythonConstruct(g, r); }},
  };
  for (const auto& [name, _] : table_) stats_[name];
}

std::vector<std::string> Mutator::names() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : table_) out.push_back(name);
  return out;
}

std::optional<Mutant> Mutator::mutate(const Graph& parent, const Graph* donor, uint64_t index, const std::string& name) {
  Rng rng = Rng::forProgram(std::hash<std::string>{}(parent.contentHash()), index);
  // The draw is made even when `name` picks the mutator, so that mutate(p, d, i, m) replays exactly
  // the mutant mutate(p, d, i) made when it drew m (tcfuzz gen --mutate --mutator, from a header).
  const std::pair<std::string, Edit>* entry = &table_[rng.uniform(0, static_cast<int64_t>(table_.size()) - 1)];
  if (!name.empty()) {
    entry = nullptr;
    for (const auto& e : table_)
      if (e.first == name) entry = &e;
    if (!entry) throw std::invalid_argument("unknown mutator '" + name + "'");
  }
  Graph edited = parent;
  if (!entry->second(edited, donor, rng)) return std::nullopt;
  MutatorStats& s = stats_[entry->first];
  ++s.applied;

  IntSolver solver(rng.engine()());
  GraphRepairer repairer(catalog_, policy_.caps, rng, solver);
  Mutant m;
  m.mutator = entry->first;
  // Dead nodes go, as in generation: code that reaches no output tests nothing (Dynamo drops it).
  m.graph = eliminateDeadNodes(repairer.repair(edited, &m.dropped));
  m.graph.origin = Origin{};
  m.graph.origin.generator = "mutation";
  m.graph.origin.mutator = entry->first;
  m.graph.origin.index = index;
  s.dropped += static_cast<int64_t>(m.dropped.size());
  if (m.graph.nodes.empty() || m.graph.contentHash() == parent.contentHash()) return std::nullopt;
  ++s.produced;
  return m;
}

bool Mutator::replaceOp(Graph& g, Rng& rng) const {
  if (g.nodes.empty()) return false;
  Node& n = g.nodes[rng.uniform(0, static_cast<int64_t>(g.nodes.size()) - 1)];
  const OpSpec* old = catalog_.find(n.op);
  if (!old) return false;
  // Another op of the same family that takes this many inputs; repair redraws its attributes.
  std::vector<const OpSpec*> peers;
  for (const auto& op : catalog_.ops())
    if (op->family == old->family && op->name != old->name && !op->inplace && policy_.weightOf(*op) > 0 &&
        static_cast<int>(n.inputs.size()) >= op->minInputs && static_cast<int>(n.inputs.size()) <= op->maxInputs)
      peers.push_back(op.get());
  if (peers.empty()) return false;
  n.op = rng.pick(peers)->name;
  n.attrs = json::object();
  return true;
}

bool Mutator::insertNode(Graph& g, Rng& rng) const {
  return insertReader(g, rng, [](const OpSpec& op) { return op.minInputs == 1 && !op.inplace; }, false);
}

bool Mutator::insertView(Graph& g, Rng& rng) const {
  return insertReader(g, rng, [](const OpSpec& op) { return op.view && op.minInputs == 1; }, true);
}

bool Mutator::insertInplace(Graph& g, Rng& rng) const {
  return insertReader(g, rng, [](const OpSpec& op) { return op.inplace; }, true);
}

bool Mutator::makeInplace(Graph& g, Rng& rng) const {
  // Nodes whose op has an in-place twin (relu -> relu_, index_add -> index_add_) taking as many inputs.
  std::vector<size_t> candidates;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const OpSpec* twin = catalog_.find(g.nodes[i].op + "_");
    int arity = static_cast<int>(g.nodes[i].inputs.size());
    if (twin && twin->inplace && policy_.weightOf(*twin) > 0 && arity >= twin->minInputs && arity <= twin->maxInputs)
      candidates.push_back(i);
  }
  if (candidates.empty()) return false;
  Node& n = g.nodes[rng.pick(candidates)];
  const OpSpec& twin = catalog_.at(n.op + "_");
  OpContext ctx;
  for (int v : n.inputs) ctx.in.push_back(g.typeOf(v));
  ctx.attrs = n.attrs;
  n.op = twin.name;
  if (!checkAttrs(twin, ctx).empty()) n.attrs = json::object();  // repair draws the twin's own
  return true;
}

bool Mutator::changeLayout(Graph& g, Rng& rng) const {
  if (g.inputs.empty()) return false;
  Source& s = g.inputs[rng.uniform(0, static_cast<int64_t>(g.inputs.size()) - 1)];
  // How an input sits in memory includes whether it shares another input's storage: an alias goes back
  // to a draw of its own, and a plain input may become an alias.
  if (!s.alias.none()) {
    s.alias = {};
    return true;
  }
  if (rng.chance(0.25)) {
    std::vector<InputAlias> aliases = aliasCandidates(g, catalog_, s);
    std::erase_if(aliases, [&](const InputAlias& a) {
      auto it = policy_.aliasWeights.find(a.kind);
      return it != policy_.aliasWeights.end() && it->second <= 0;
    });
    if (!aliases.empty()) {
      s.alias = rng.pick(aliases);
      return true;
    }
  }
  if (readByDenseInputOp(g, catalog_, s.value)) return false;
  Layout before = s.layout;
  s.layout = before.contiguous() || rng.chance(0.5) ? randomLayout(g.typeOf(s.value), s.dist, policy_.layoutWeights, rng) : Layout{};
  // A write into this input must stay one eager accepts on the new layout (an expanded input takes scalar fills only).
  for (const Node& n : g.nodes)
    if (!n.inputs.empty() && n.inputs[0] == s.value && writesIntoProgramInput(g, n) &&
        !writableInPlace(catalog_.at(n.op), s.layout, g.typeOf(s.value)))
      s.layout = before;
  return !(s.layout == before);
}

bool Mutator::changePythonConstruct(Graph& g, Rng& rng) const {
  return mutatePythonConstructs(g, catalog_, policy_.pythonConstructs, rng);
}

bool Mutator::toggleInputWrite(Graph& g, Rng& rng) const {
  // Marked nodes turn back to writing into a clone; an in-place node that reads a program input as input 0
  // starts writing into it. Where other nodes read that input too, the node gets an input of its own with
  // the same type, distribution and layout, so the other readers still read an input nothing wrote. A policy
  // without input writes (input_write_chance 0) gets none from mutation either.
  std::vector<size_t> candidates;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.writesInput) {
      candidates.push_back(i);
      continue;
    }
    if (policy_.inputWriteChance <= 0) continue;
    const OpSpec* op = catalog_.find(n.op);
    const Source* input = n.inputs.empty() ? nullptr : g.sourceOf(n.inputs[0]);
    bool programInput = input && std::any_of(g.inputs.begin(), g.inputs.end(), [&](const Source& s) { return s.value == input->value; });
    if (op && programInput && writableInPlace(*op, input->layout, g.typeOf(input->value)) &&
        std::find(g.outputs.begin(), g.outputs.end(), input->value) == g.outputs.end())
      candidates.push_back(i);
  }
  if (candidates.empty()) return false;
  size_t i = rng.pick(candidates);
  if (g.nodes[i].writesInput) {
    g.nodes[i].writesInput = false;
    return true;
  }
  int read = g.nodes[i].inputs[0];
  if (g.useCount(read) > 1) {
    Source own = *g.sourceOf(read);
    own.value = g.addValue(g.typeOf(read));
    own.name = fmt::format("{}_w{}", own.name, own.value);
    g.inputs.push_back(own);
    g.nodes[i].inputs[0] = own.value;
  }
  g.nodes[i].writesInput = true;
  return true;
}

bool Mutator::insertReader(Graph& g, Rng& rng, const std::function<bool(const OpSpec&)>& fits, bool everyReader) const {
  if (g.values.empty()) return false;
  int v = static_cast<int>(rng.uniform(0, static_cast<int64_t>(g.values.size()) - 1));
  std::vector<const OpSpec*> ops;
  for (const auto& op : catalog_.ops())
    if (fits(*op) && policy_.weightOf(*op) > 0 && op->accepts[0].has(g.typeOf(v).dtype) && g.typeOf(v).rank() >= op->minRank &&
        g.typeOf(v).rank() <= op->maxRank)
      ops.push_back(op.get());
  if (ops.empty()) return false;
  // New node right after v is defined (repair adds the operands it lacks); later readers of v read it.
  int producer = g.producerOf(v);
  size_t at = static_cast<size_t>(producer + 1);
  int out = g.addValue(g.typeOf(v));
  Node n{rng.pick(ops)->name, {v}, {out}, json::object()};
  g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(at), n);
  std::vector<std::pair<size_t, size_t>> readers;
  for (size_t i = at + 1; i < g.nodes.size(); ++i)
    for (size_t k = 0; k < g.nodes[i].inputs.size(); ++k)
      if (g.nodes[i].inputs[k] == v) readers.emplace_back(i, k);
  if (readers.empty()) {
    g.outputs.push_back(out);
  } else if (everyReader) {
    for (auto [i, k] : readers) g.nodes[i].inputs[k] = out;
  } else {
    auto [i, k] = rng.pick(readers);
    g.nodes[i].inputs[k] = out;
  }
  return true;
}

bool Mutator::deleteNode(Graph& g, Rng& rng) const {
  if (g.nodes.size() < 2) return false;
  size_t i = static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(g.nodes.size()) - 1));
  Node n = g.nodes[i];
  if (n.inputs.empty()) return false;
  g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(i));
  // Bypass: readers of its outputs read its first input instead (repair fixes the types).
  for (int out : n.outputs) rewire(g, out, n.inputs.at(0), i);
  std::sort(g.outputs.begin(), g.outputs.end());
  g.outputs.erase(std::unique(g.outputs.begin(), g.outputs.end()), g.outputs.end());
  return true;
}

bool Mutator::changeAttr(Graph& g, Rng& rng) const {
  std::vector<size_t> withAttrs;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (const OpSpec* op = catalog_.find(g.nodes[i].op); op && !op->attrs.empty()) withAttrs.push_back(i);
  if (withAttrs.empty()) return false;
  Node& n = g.nodes[rng.pick(withAttrs)];
  const OpSpec& op = catalog_.at(n.op);
  const AttrSpec& a = op.attrs[rng.uniform(0, static_cast<int64_t>(op.attrs.size()) - 1)];
  json& v = n.attrs[a.name];
  switch (a.kind) {
    case AttrKind::Int: v = rng.uniform(std::max<int64_t>(a.lo, -8), std::min<int64_t>(a.hi, 16)); break;
    case AttrKind::IntList:
      if (!v.is_array() || v.empty()) return false;
      v[rng.uniform(0, static_cast<int64_t>(v.size()) - 1)] = rng.uniform(std::max<int64_t>(a.lo, -8), std::min<int64_t>(a.hi, 16));
      break;
    case AttrKind::Float: v = std::round(rng.real(std::max(a.flo, -8.0), std::min(a.fhi, 8.0)) * 100) / 100; break;
    case AttrKind::Bool: v = !(v.is_boolean() && v.get<bool>()); break;
    case AttrKind::Choice:
    case AttrKind::DType: v = rng.pick(a.choices); break;
  }
  return true;
}

bool Mutator::changeShape(Graph& g, Rng& rng) const {
  if (g.inputs.empty()) return false;
  Source& s = g.inputs[rng.uniform(0, static_cast<int64_t>(g.inputs.size()) - 1)];
  auto& shape = g.typeOf(s.value).shape;
  if (shape.empty()) return false;
  int64_t& d = shape[rng.uniform(0, static_cast<int64_t>(shape.size()) - 1)];
  int64_t before = d;
  d = std::clamp<int64_t>(rng.chance(0.5) ? d + rng.uniform(-2, 2) : (rng.chance(0.5) ? d * 2 : d / 2), 1, policy_.caps.maxDim);
  return d != before;
}

bool Mutator::changeDType(Graph& g, Rng& rng) const {
  if (g.inputs.empty()) return false;
  Source& s = g.inputs[rng.uniform(0, static_cast<int64_t>(g.inputs.size()) - 1)];
  TensorType& t = g.typeOf(s.value);
  DType before = t.dtype;
  t.dtype = static_cast<DType>(rng.uniform(0, kDTypeCount - 1));
  if (isComplex(t.dtype)) t.dtype = DType::Float32;  // complex inputs come from generation, where an op takes them
  if (t.dtype == before) return false;
  // Keep the distribution meaningful for the new dtype (repair refits it to each reader's domain).
  if (t.dtype == DType::Bool) s.dist = {"bernoulli", 0, 1, 0.5};
  else if (isInt(t.dtype)) s.dist = {"randint", -4, 5, 0.5};
  else if (s.dist.kind != "uniform") s.dist = {"uniform", -2, 2, 0.5};
  return true;
}

bool Mutator::splice(Graph& g, const Graph* donor, Rng& rng) const {
  if (!donor || donor->nodes.empty()) return false;
  // Append the donor's first k nodes; each donor input is bound to a parent value when one has the
  // same dtype (repair coerces the shape), else it becomes a new input.
  size_t k = static_cast<size_t>(rng.uniform(1, static_cast<int64_t>(donor->nodes.size())));
  std::map<int, int> remap;
  auto bind = [&](const Source& s, bool param) {
    std::vector<int> same;
    for (const auto& v : g.values)
      if (v.type.dtype == donor->typeOf(s.value).dtype) same.push_back(v.id);
    if (!param && !same.empty() && rng.chance(0.7)) {
      remap[s.value] = rng.pick(same);
      return;
    }
    int id = g.addValue(donor->typeOf(s.value));
    Source c = s;
    c.value = id;
    c.name = fmt::format("{}_s{}", s.name, id);
    (param ? g.params : g.inputs).push_back(c);
    remap[s.value] = id;
  };
  for (const auto& s : donor->inputs) bind(s, false);
  for (const auto& s : donor->params) bind(s, true);
  for (size_t i = 0; i < k; ++i) {
    Node n = donor->nodes[i];
    for (int& in : n.inputs) in = remap.at(in);
    for (int& out : n.outputs) {
      int id = g.addValue(donor->typeOf(out));
      remap[out] = id;
      out = id;
    }
    g.nodes.push_back(std::move(n));
  }
  g.outputs.push_back(g.nodes.back().outputs.at(0));
  return true;
}

}  // namespace tcfuzz::gen
