#include "generators/Generator.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "generators/features/Idioms.h"
#include "generators/features/InputAliases.h"
#include "generators/features/InputLayout.h"
#include "generators/features/InputWrites.h"

namespace tcfuzz::gen {

namespace {

constexpr uint64_t kGrowStream = 0x67726f772d6c6c6dULL;  // "grow-llm": growth around a core, apart from generate's draws
constexpr uint64_t kInputWriteStream = 0x696e7075742d7772ULL;  // "input-wr": input writes, apart from growth's draws
constexpr uint64_t kInputAliasStream = 0x616c696173656421ULL;  // "aliased!": aliased inputs, apart from the graph's draws
constexpr uint64_t kPythonStream = 0x707974686f6e2d6cULL;  // "python-l": Python-level constructs, apart from the op graph's draws

/// Families whose ops are an LLM core's neighbours when the generator grows a program around it.
const std::set<std::string> kNeighbourFamilies{"elementwise-unary", "elementwise-binary", "activation", "inplace",
                                               "inplace-view", "stale-view", "noop-view"};

/// The node outputs nothing reads yet, oldest first: what generation grows on and what becomes an output.
std::vector<int> danglingValues(const Graph& g) {
  std::vector<int> out;
  for (const auto& v : g.values)
    if (g.producerOf(v.id) >= 0 && g.useCount(v.id) == 0) out.push_back(v.id);
  return out;
}

}  // namespace

using nlohmann::json;

json GenPolicy::toJson() const {
  return {{"min_nodes", minNodes},
          {"max_nodes", maxNodes},
          {"max_inputs", maxInputs},
          {"max_outputs", maxOutputs},
          {"max_rank", caps.maxRank},
          {"max_dim", caps.maxDim},
          {"max_elements", caps.maxElements},
          {"fresh_operand_chance", freshOperandChance},
          {"parameter_chance", parameterChance},
          {"reuse_chance", reuseChance},
          {"dtype_weights", dtypeWeights},
          {"family_weights", familyWeights},
          {"op_weights", opWeights},
          {"input_layout_chance", inputLayoutChance},
          {"layout_weights", layoutWeights},
          {"merge_ops", mergeOps},
          {"input_write_chance", inputWriteChance},
          {"input_fill_chance", inputFillChance},
          {"input_alias_chance", inputAliasChance},
          {"alias_read_after_write_chance", aliasReadAfterWriteChance},
          {"alias_weights", aliasWeights},
          {"boundary_chance", boundaryChance},
          {"boundary_weights", boundaryWeights},
          {"complex_boundary_chance", complexBoundaryChance},
          {"idiom_chance", idiomChance},
          {"idiom_weights", idiomWeights},
          {"python_constructs", pythonConstructs.toJson()}};
}

GenPolicy GenPolicy::fromJson(const json& doc) {
  if (!doc.is_object()) throw std::invalid_argument("a generation policy is a JSON object");
  GenPolicy p;
  auto intIn = [&](const std::string& key, auto& field, int64_t lo, int64_t hi) {
    if (!doc.contains(key)) return;
    if (!doc[key].is_number_integer() || doc[key].get<int64_t>() < lo || doc[key].get<int64_t>() > hi)
      throw std::invalid_argument(fmt::format("policy '{}' must be an integer in [{}, {}]", key, lo, hi));
    field = doc[key].get<int64_t>();
  };
  auto chance = [&](const std::string& key, double& field) {
    if (!doc.contains(key)) return;
    if (!doc[key].is_number() || doc[key].get<double>() < 0 || doc[key].get<double>() > 1)
      throw std::invalid_argument("policy '" + key + "' must be a number in [0, 1]");
    field = doc[key].get<double>();
  };
  auto weights = [&](const std::string& key, std::map<std::string, double>& field) {
    if (!doc.contains(key)) return;
    if (!doc[key].is_object()) throw std::invalid_argument("policy '" + key + "' must be an object of weights");
    for (const auto& [k, v] : doc[key].items()) {
      if (!v.is_number() || v.get<double>() < 0) throw std::invalid_argument(fmt::format("policy {}.{} must be a weight >= 0", key, k));
      field[k] = v.get<double>();
    }
  };
  static const char* kKeys[] = {"min_nodes", "max_nodes", "max_inputs", "max_outputs", "max_rank", "max_dim",
                                "max_elements", "fresh_operand_chance", "parameter_chance", "reuse_chance", "dtype_weights",
                                "family_weights", "op_weights", "input_layout_chance", "layout_weights", "merge_ops",
                                "boundary_chance", "boundary_weights", "complex_boundary_chance", "idiom_chance", "idiom_weights", "input_write_chance",
                                "input_fill_chance", "input_alias_chance", "alias_read_after_write_chance", "alias_weights", "python_constructs"};
  for (const auto& [k, _] : doc.items())
    if (std::find(std::begin(kKeys), std::end(kKeys), k) == std::end(kKeys))
      throw std::invalid_argument("unknown policy key '" + k + "'");
  intIn("min_nodes", p.minNodes, 1, 1000);
  intIn("max_nodes", p.maxNodes, 1, 1000);
  intIn("max_inputs", p.maxInputs, 1, 16);
  intIn("max_outputs", p.maxOutputs, 1, 16);
  intIn("max_rank", p.caps.maxRank, 1, 6);
  intIn("max_dim", p.caps.maxDim, 1, 4096);
  intIn("max_elements", p.caps.maxElements, 1, int64_t{1} << 26);
  chance("fresh_operand_chance", p.freshOperandChance);
  chance("parameter_chance", p.parameterChance);
  chance("reuse_chance", p.reuseChance);
  weights("dtype_weights", p.dtypeWeights);
  weights("family_weights", p.familyWeights);
  weights("op_weights", p.opWeights);
  // A weight table over a closed set of names replaces the default table when given.
  auto namedWeights = [&](const std::string& key, std::map<std::string, double>& field, const std::vector<std::string>& known) {
    if (!doc.contains(key)) return;
    field.clear();
    weights(key, field);
    for (const auto& [k, _] : field)
      if (std::find(known.begin(), known.end(), k) == known.end())
        throw std::invalid_argument(fmt::format("policy {}: unknown name '{}' ({})", key, k, fmt::join(known, ", ")));
  };
  std::vector<std::string> idiomNames;
  for (const Idiom& i : idioms()) idiomNames.push_back(i.name);
  chance("input_layout_chance", p.inputLayoutChance);
  namedWeights("layout_weights", p.layoutWeights, layoutKinds());
  chance("input_write_chance", p.inputWriteChance);
  chance("input_fill_chance", p.inputFillChance);
  chance("input_alias_chance", p.inputAliasChance);
  chance("alias_read_after_write_chance", p.aliasReadAfterWriteChance);
  namedWeights("alias_weights", p.aliasWeights, aliasKinds());
  chance("boundary_chance", p.boundaryChance);
  chance("complex_boundary_chance", p.complexBoundaryChance);
  namedWeights("boundary_weights", p.boundaryWeights, boundaryKinds());
  chance("idiom_chance", p.idiomChance);
  namedWeights("idiom_weights", p.idiomWeights, idiomNames);
  if (doc.contains("python_constructs")) p.pythonConstructs = PythonConstructChances::fromJson(doc["python_constructs"]);
  if (doc.contains("merge_ops")) {
    if (!doc["merge_ops"].is_array()) throw std::invalid_argument("policy 'merge_ops' must be a list of op names");
    p.mergeOps.clear();
    for (const auto& op : doc["merge_ops"]) {
      if (!op.is_string()) throw std::invalid_argument("policy 'merge_ops' must be a list of op names");
      p.mergeOps.push_back(op.get<std::string>());
    }
  }
  for (const auto& [k, _] : p.dtypeWeights)
    if (!parseDType(k)) throw std::invalid_argument("policy dtype_weights: unknown dtype '" + k + "'");
  if (p.minNodes > p.maxNodes) throw std::invalid_argument("policy min_nodes exceeds max_nodes");
  return p;
}

double GenPolicy::weightOf(const OpSpec& op) const {
  if (auto o = opWeights.find(op.name); o != opWeights.end()) return o->second;
  if (auto f = familyWeights.find(op.family); f != familyWeights.end()) return f->second;
  return 1;
}

Generator::Generator(const OpCatalog& catalog, GenPolicy policy, uint64_t seed)
    : catalog_(catalog), policy_(std::move(policy)), seed_(seed), solver_(seed) {
  for (const auto& op : catalog_.ops()) {
    double w = policy_.weightOf(*op);
    if (w <= 0) continue;
    ops_.push_back(op.get());
    weights_.push_back(w);
  }
  for (const auto& [name, _] : policy_.opWeights)
    if (!catalog_.find(name)) throw std::invalid_argument("policy op_weights: unknown op '" + name + "'");
  for (const auto& name : policy_.mergeOps) {
    const OpSpec* op = catalog_.find(name);
    if (!op || op->minInputs > 2 || op->maxInputs < 2) throw std::invalid_argument("policy merge_ops: '" + name + "' is not a binary op of the catalog");
  }
  if (ops_.empty()) throw std::invalid_argument("the generation policy gives every op weight 0");
  for (const OpSpec* op : ops_)
    if (kNeighbourFamilies.count(op->family) || op->view || op->inplace) neighbours_.push_back(op);
}

const OpSpec& Generator::pickOp(Rng& rng) const { return *ops_[rng.weighted(weights_)]; }

InputWriteChances Generator::inputWrites() const {
  InputWriteChances w{policy_.inputWriteChance, policy_.inputFillChance};
  std::erase_if(w.fillOps, [&](const std::string& op) {
    return std::none_of(ops_.begin(), ops_.end(), [&](const OpSpec* o) { return o->name == op; });
  });
  return w;
}

DType Generator::pickDType(Rng& rng, DTypeSet allowed) const {
  std::vector<DType> dtypes;
  std::vector<double> w;
  for (int i = 0; i < kDTypeCount; ++i) {
    DType d = static_cast<DType>(i);
    if (!allowed.has(d)) continue;
    auto it = policy_.dtypeWeights.find(std::string(dtypeName(d)));
    dtypes.push_back(d);
    w.push_back(it == policy_.dtypeWeights.end() ? 0.1 : it->second);
  }
  if (dtypes.empty()) return DType::Float32;
  return dtypes[rng.weighted(w)];
}

TensorType Generator::randomType(Rng& rng, const OpSpec& op, int k) const {
  TensorType t;
  int lo = k == 0 ? op.minRank : 0;
  int hi = k == 0 ? std::min(op.maxRank, policy_.caps.maxRank + (op.minRank > policy_.caps.maxRank ? 1 : 0)) : policy_.caps.maxRank;
  hi = std::max(hi, lo);
  int rank = static_cast<int>(rng.uniform(std::max(lo, 1), std::max(hi, std::max(lo, 1))));
  if (lo == 0 && rng.chance(0.03)) rank = 0;
  // Keep the element count under the cap: draw dims, then shrink the largest.
  for (int i = 0; i < rank; ++i) t.shape.push_back(rng.uniform(1, std::max<int64_t>(1, std::min<int64_t>(policy_.caps.maxDim, 8))));
  while (t.numel() > policy_.caps.maxElements / 4) *std::max_element(t.shape.begin(), t.shape.end()) /= 2;
  t.dtype = pickDType(rng, op.accepts[std::min<size_t>(k, op.accepts.size() - 1)]);
  return t;
}

Graph Generator::generate(uint64_t index) { return generate(index, {policy_.minNodes, policy_.maxNodes}); }

Graph Generator::generate(uint64_t index, NodeRange nodes) {
  Rng rng = Rng::forProgram(seed_, index);
  Graph g;
  g.origin = {"grammar", seed_, index};
  if (nodes.minNodes != policy_.minNodes || nodes.maxNodes != policy_.maxNodes) {
    g.origin.minNodes = nodes.minNodes;
    g.origin.maxNodes = nodes.maxNodes;
  }
  GraphRepairer repairer(catalog_, policy_.caps, rng, solver_);
  repairer.attach(g);

  int target = static_cast<int>(rng.uniform(nodes.minNodes, nodes.maxNodes));
  int initialInputs = static_cast<int>(rng.uniform(1, policy_.maxInputs));
  for (int i = 0; i < initialInputs; ++i) {
    const OpSpec& op = pickOp(rng);
    repairer.addSource(randomType(rng, op, 0), std::nullopt, false);
  }
  growNodes(g, repairer, rng, target, false);
  settleOutputs(g, repairer, rng);
  stats_ += repairer.stats();
  // Drop inputs that a rejected candidate created and nothing reads, and the nodes no output needs.
  g = eliminateDeadNodes(g);
  drawLayouts(g, rng, {});
  // Its own stream: a program that gets no write is the one it was before writes existed.
  Rng writes = Rng::forProgram(seed_ ^ kInputWriteStream, index);
  addInputWrites(g, catalog_, inputWrites(), writes);
  repairIllegalViews(g, catalog_);
  Rng aliases = Rng::forProgram(seed_ ^ kInputAliasStream, index);
  if (addInputAlias(g, catalog_, {policy_.aliasReadAfterWriteChance, policy_.inputAliasChance}, policy_.aliasWeights, aliases)) repairIllegalViews(g, catalog_);
  // Its own stream too: the op graph of a program is the one it was before Python constructs existed.
  Rng python = Rng::forProgram(seed_ ^ kPythonStream, index);
  addPythonConstructs(g, catalog_, policy_.pythonConstructs, python);
  return g;
}

Graph Generator::grow(const Graph& core, uint64_t index, NodeRange nodes) {
  Rng rng = Rng::forProgram(seed_ ^ kGrowStream, index);
  Graph g;
  GraphRepairer repairer(catalog_, policy_.caps, rng, solver_);
  std::map<int, int> remap;  // core value -> grown value
  std::set<std::string> coreInputs;
  for (const Source& s : core.inputs) coreInputs.insert(s.name);
  auto copySources = [&](const std::vector<Source>& list, std::vector<Source>& into) {
    for (Source s : list) {
      int id = g.addValue(core.typeOf(s.value));
      remap[s.value] = id;
      s.value = id;
      into.push_back(s);
    }
  };
  copySources(core.inputs, g.inputs);
  copySources(core.params, g.params);
  repairer.attach(g);

  // Producers: a core input may be fed by a fusion neighbour (a unary op of the same shape and
  // dtype) on a fresh input of its type, so the core no longer reads a bare graph input.
  for (const Source& s : core.inputs) {
    const TensorType t = core.typeOf(s.value);
    if (!isFloat(t.dtype) || !s.layout.contiguous() || !rng.chance(0.5)) continue;
    std::vector<const OpSpec*> feeders;
    for (const OpSpec* op : neighbours_)
      if (op->minInputs == 1 && op->accepts[0].has(t.dtype) && t.rank() >= op->minRank && t.rank() <= op->maxRank &&
          (op->family == "elementwise-unary" || op->family == "activation"))
        feeders.push_back(op);
    if (feeders.empty()) continue;
    Node feed;
    feed.op = rng.pick(feeders)->name;
    feed.inputs = {repairer.addSource(t, std::nullopt, false)};
    OpContext ctx;
    ctx.in = {t};
    ctx.ranges = {repairer.rangeOf(feed.inputs[0])};
    ctx.caps = &policy_.caps;
    sampleAttrs(catalog_.at(feed.op), ctx, rng);
    feed.attrs = ctx.attrs;
    if (!repairer.append(std::move(feed))) continue;
    int fed = g.nodes.back().outputs.at(0);
    if (g.typeOf(fed) == t) remap[s.value] = fed;  // else the neighbour stays a branch of its own
  }
  // The core, node by node, through the same repair (a valid core passes unchanged).
  for (const Node& n : core.nodes) {
    Node c = n;
    c.core = true;
    bool missing = false;
    for (int& in : c.inputs) {
      auto it = remap.find(in);
      if (it == remap.end()) missing = true;
      else in = it->second;
    }
    if (missing || !repairer.append(c)) continue;
    const Node& added = g.nodes.back();
    for (size_t k = 0; k < n.outputs.size() && k < added.outputs.size(); ++k) remap[n.outputs[k]] = added.outputs[k];
  }
  // Consumers: the growth loop prefers values nothing reads yet, so it builds on the core's results. The
  // graph around the core is of the drawn size (the core comes on top): the pattern the LLM aimed at sits
  // inside a program as large as a grammar program.
  int grown = std::max(2, static_cast<int>(rng.uniform(nodes.minNodes, nodes.maxNodes)));
  growNodes(g, repairer, rng, static_cast<int>(g.nodes.size()) + grown, true);
  settleOutputs(g, repairer, rng);
  stats_ += repairer.stats();
  g = eliminateDeadNodes(g);
  drawLayouts(g, rng, coreInputs);
  // A core input keeps its layout unless what grew around it needs it dense (as repair decides on replay).
  for (Source& s : g.inputs)
    if (coreInputs.count(s.name) && !s.layout.contiguous() && readByDenseInputOp(g, catalog_, s.value)) s.layout = {};
  addInputAlias(g, catalog_, {policy_.aliasReadAfterWriteChance, policy_.inputAliasChance}, policy_.aliasWeights, rng);
  repairIllegalViews(g, catalog_);
  // Python-level code around the core, as around a grammar program: the core's own constructs (its nodes'
  // and its schedule and hook) when it wrote any, else the policy's draw on the grown program.
  if (planPythonConstructs(core, catalog_).anyConstruct()) {
    g.schedule = core.schedule;
    g.hook = core.hook;
  } else {
    Rng python = Rng::forProgram(seed_ ^ kGrowStream ^ kPythonStream, index);
    addPythonConstructs(g, catalog_, policy_.pythonConstructs, python);
  }
  g = sourcesFirst(g);  // its stored IR replays through gen --from unchanged
  g.origin = core.origin;
  g.origin.seed = seed_;
  g.origin.index = index;
  g.origin.minNodes = nodes.minNodes;
  g.origin.maxNodes = nodes.maxNodes;
  return g;
}

void Generator::growNodes(Graph& g, GraphRepairer& repairer, Rng& rng, int target, bool neighbours) const {
  // The nodes settleOutputs will add to join surplus dangling values count toward the target.
  auto surplus = [&] { return std::max(0, static_cast<int>(danglingValues(g).size()) - policy_.maxOutputs); };
  for (int attempts = 0; static_cast<int>(g.nodes.size()) + surplus() < target && attempts < target * 4; ++attempts) {
    if (rng.chance(policy_.idiomChance) && growIdiom(g, repairer, rng)) continue;
    // Around an LLM core, half the ops are its neighbours: pointwise ops it may fuse with, views and
    // layout changes, and in-place writes (with or without a view between).
    const OpSpec& op = neighbours && !neighbours_.empty() && rng.chance(0.5) ? *rng.pick(neighbours_) : pickOp(rng);
    Node node;
    node.op = op.name;
    // Input 0: prefer a value nothing reads yet (it grows the graph into a chain), else any
    // value the op accepts, else a fresh input.
    std::vector<int> uses(g.values.size(), 0);
    for (const auto& n : g.nodes)
      for (int in : n.inputs) ++uses[in];
    std::vector<int> dangling, usable, consumed;
    for (const auto& v : g.values) {
      if (!op.accepts[0].has(v.type.dtype) || v.type.rank() < op.minRank || v.type.rank() > op.maxRank) continue;
      usable.push_back(v.id);
      if (uses[v.id] == 0) dangling.push_back(v.id);
      else if (g.producerOf(v.id) >= 0) consumed.push_back(v.id);  // a node's value another node reads: fan-out
    }
    int first;
    if (!consumed.empty() && rng.chance(policy_.reuseChance)) first = rng.pick(consumed);
    else if (!dangling.empty() && rng.chance(0.75)) first = rng.pick(dangling);
    else if (!usable.empty() && rng.chance(0.85)) first = rng.pick(usable);
    else first = repairer.addSource(randomType(rng, op, 0), std::nullopt, false);
    node.inputs.push_back(first);

    OpContext ctx;
    ctx.in = {g.typeOf(first)};
    ctx.ranges = {repairer.rangeOf(first)};
    ctx.caps = &policy_.caps;
    sampleAttrs(op, ctx, rng);
    int arity = static_cast<int>(rng.uniform(op.minInputs, std::min(op.maxInputs, op.minInputs + 2)));
    for (int k = 1; k < arity; ++k) {
      std::optional<TensorType> proposed = proposedOperand(op, ctx, k, rng);
      if (!proposed) break;  // repair's add_missing_inputs tries again, or rejects the node
      TensorType want = *proposed;
      DTypeSet ok = op.accepts[std::min<size_t>(k, op.accepts.size() - 1)];
      if (!ok.has(want.dtype)) want.dtype = pickDType(rng, ok);
      auto need = inputNeed(op, ctx, k);
      int operand = -1;
      if (!rng.chance(policy_.freshOperandChance) && !isInt(want.dtype)) {
        std::vector<int> same;
        for (const auto& v : g.values)
          if (v.type == want && v.id != first) same.push_back(v.id);
        if (!same.empty()) operand = rng.pick(same);
      }
      if (operand < 0) operand = repairer.addSource(want, need, rng.chance(policy_.parameterChance));
      node.inputs.push_back(operand);
      ctx.in.push_back(g.typeOf(operand));
      ctx.ranges.push_back(repairer.rangeOf(operand));
    }
    node.attrs = ctx.attrs;
    repairer.append(std::move(node));
  }
}

void Generator::settleOutputs(Graph& g, GraphRepairer& repairer, Rng& rng) const {
  std::vector<int> dangling = danglingValues(g);
  // Join the oldest surplus value into a newer one (input 0 keeps the newer value's type; repair fits
  // the older one to it): fan-in that re-converges, the pattern fusion decisions are made on.
  for (int failures = 0; static_cast<int>(dangling.size()) > policy_.maxOutputs && failures < 4 && !policy_.mergeOps.empty();) {
    int older = dangling.front();
    int newer = dangling[static_cast<size_t>(rng.uniform(1, static_cast<int64_t>(dangling.size()) - 1))];
    Node join;
    join.op = rng.pick(policy_.mergeOps);
    join.inputs = {newer, older};
    if (!repairer.append(std::move(join))) {
      ++failures;
      if (failures == 4) break;
      std::rotate(dangling.begin(), dangling.begin() + 1, dangling.end());  // try another pair
      continue;
    }
    dangling = danglingValues(g);
  }
  // Return the values nothing reads (latest first); eliminateDeadNodes drops the rest.
  for (auto it = dangling.rbegin(); it != dangling.rend() && static_cast<int>(g.outputs.size()) < policy_.maxOutputs; ++it)
    g.outputs.push_back(*it);
  // Around an LLM core, one output at least descends from it: else eliminateDeadNodes would drop the core
  // with the surplus values that joins could not merge. The newest such value replaces the oldest output.
  std::set<int> fromCore;
  for (const Node& n : g.nodes)
    if (n.core || std::any_of(n.inputs.begin(), n.inputs.end(), [&](int v) { return fromCore.count(v) > 0; }))
      fromCore.insert(n.outputs.begin(), n.outputs.end());
  auto descends = [&](int v) { return fromCore.count(v) > 0; };
  if (!g.outputs.empty() && std::none_of(g.outputs.begin(), g.outputs.end(), descends))
    for (auto it = dangling.rbegin(); it != dangling.rend(); ++it)
      if (descends(*it)) {
        g.outputs.back() = *it;
        break;
      }
  if (g.outputs.empty()) g.outputs.push_back(g.values.back().id);
  std::reverse(g.outputs.begin(), g.outputs.end());
}

bool Generator::growIdiom(Graph& g, GraphRepairer& repairer, Rng& rng) const {
  // Idioms keep to the ops the policy allows: a step loses the ops of weight 0, an idiom with an empty
  // step is left out.
  std::vector<Idiom> table;
  std::vector<double> w;
  for (const auto& [name, weight] : policy_.idiomWeights) {
    const Idiom* idiom = findIdiom(name);
    if (!idiom || weight <= 0) continue;
    Idiom allowed = *idiom;
    bool complete = true;
    for (IdiomStep& step : allowed.steps) {
      std::erase_if(step.ops, [&](const std::string& op) {
        return std::none_of(ops_.begin(), ops_.end(), [&](const OpSpec* o) { return o->name == op; });
      });
      complete = complete && !step.ops.empty();
    }
    if (!complete) continue;
    table.push_back(std::move(allowed));
    w.push_back(weight);
  }
  if (table.empty()) return false;
  const Idiom& idiom = table[rng.weighted(w)];
  // The idiom grows on a floating value of a rank it takes, one nothing reads yet when there is one.
  std::vector<int> dangling, usable;
  for (const auto& v : g.values) {
    if (!isFloat(v.type.dtype) || v.type.rank() < idiom.minRank || v.type.rank() > idiom.maxRank) continue;
    usable.push_back(v.id);
  }
  if (usable.empty()) return false;
  for (int v : danglingValues(g))
    if (std::find(usable.begin(), usable.end(), v) != usable.end()) dangling.push_back(v);
  int x = !dangling.empty() && rng.chance(0.75) ? rng.pick(dangling) : rng.pick(usable);
  return appendIdiom(idiom, x, g, repairer, catalog_, policy_.caps, rng) > 0;
}

void Generator::drawLayouts(Graph& g, Rng& rng, const std::set<std::string>& keep) const {
  for (Source& s : g.inputs) {
    if (keep.count(s.name)) continue;
    if (rng.chance(policy_.inputLayoutChance) && !readByDenseInputOp(g, catalog_, s.value))
      s.layout = randomLayout(g.typeOf(s.value), s.dist, policy_.layoutWeights, rng);
    DType d = g.typeOf(s.value).dtype;
    if ((isFloat(d) || isInt(d)) ? rng.chance(policy_.boundaryChance)
                                 : isComplex(d) && rng.chance(policy_.complexBoundaryChance))
      s.boundary = randomBoundary(g.typeOf(s.value), s.dist, policy_.boundaryWeights, rng);
  }
}

}  // namespace tcfuzz::gen
