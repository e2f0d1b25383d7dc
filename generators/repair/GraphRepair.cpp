#include "generators/repair/GraphRepair.h"

#include <cmath>
#include <set>

#include <fmt/format.h>

#include "generators/features/InputAliases.h"
#include "generators/features/InputLayout.h"

namespace tcfuzz::gen {

using nlohmann::json;

namespace {

constexpr double kDefaultFloatRange = 2.0;

bool finiteWithin(const Interval& r, double magnitude) {
  return std::isfinite(r.lo) && std::isfinite(r.hi) && r.magnitude() <= magnitude;
}

std::string firstWords(const std::string& s) {
  // "conv2d: integer constraint 1 fails" -> keep up to the first digit-bearing detail
  std::string out;
  for (char ch : s) {
    if (std::isdigit(static_cast<unsigned char>(ch)) || ch == '[' || ch == '(' || ch == '\'') break;
    out += ch;
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == ':')) out.pop_back();
  return out;
}

}  // namespace

RepairStats& RepairStats::operator+=(const RepairStats& o) {
  accepted += o.accepted;
  validAsIs += o.validAsIs;
  casts += o.casts;
  clamps += o.clamps;
  coercions += o.coercions;
  resized += o.resized;
  solved += o.solved;
  resampled += o.resampled;
  rejected += o.rejected;
  for (const auto& [k, v] : o.rejectedByOp) rejectedByOp[k] += v;
  for (const auto& [k, v] : o.rejectReasons) rejectReasons[k] += v;
  return *this;
}

json RepairStats::toJson() const {
  return {{"accepted", accepted}, {"valid_as_is", validAsIs}, {"casts", casts},         {"clamps", clamps},
          {"coercions", coercions}, {"resized", resized},    {"z3_solved", solved},     {"resampled", resampled},
          {"rejected", rejected},   {"rejected_by_op", rejectedByOp}, {"reject_reasons", rejectReasons}};
}

Distribution distributionFor(const TensorType& type, std::optional<Interval> need, bool unique) {
  Distribution d;
  Interval want = need.value_or(Interval{});
  if (type.dtype == DType::Bool) {
    d.kind = "bernoulli";
    d.p = 0.5;
    return d;
  }
  if (isInt(type.dtype)) {
    double lo = std::isfinite(want.lo) ? std::ceil(want.lo) : -4;
    double hi = std::isfinite(want.hi) ? std::floor(want.hi) : 4;
    if (!std::isfinite(want.lo) && std::isfinite(want.hi)) lo = hi - 8;
    if (std::isfinite(want.lo) && !std::isfinite(want.hi)) hi = lo + 8;
    d.kind = unique ? "randperm" : "randint";
    d.low = lo;
    d.high = std::max(hi, lo) + 1;
    return d;
  }
  double lo = std::max(want.lo, -kDefaultFloatRange), hi = std::min(want.hi, kDefaultFloatRange);
  if (!(lo < hi)) {  // a need entirely outside [-2, 2] (acosh: >= 1)
    lo = std::isfinite(want.lo) ? want.lo : want.hi - 2;
    hi = std::isfinite(want.hi) ? std::min(want.hi, lo + 2) : lo + 2;
  }
  if (!(lo < hi)) hi = lo + 1e-3;
  d.kind = "uniform";
  d.low = lo;
  d.high = hi;
  return d;
}

std::optional<TensorType> proposedOperand(const OpSpec& op, const OpContext& ctx, int k, Rng& rng) {
  if (!op.propose) return ctx.x();
  try {
    return op.propose(ctx, k, rng);
  } catch (const ShapeError&) {  // attributes or inputs the proposal cannot work from
    return std::nullopt;
  } catch (const std::out_of_range&) {  // a rule indexing a dim the inputs lack
    return std::nullopt;
  }
}

std::string firstInvalidNode(const OpCatalog& catalog, const Graph& g) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const OpSpec* op = catalog.find(n.op);
    std::string where = fmt::format("node {} ({})", i, n.op);
    if (!op) return where + ": unknown op";
    OpContext ctx;
    for (int in : n.inputs) ctx.in.push_back(g.typeOf(in));
    ctx.attrs = n.attrs;
    try {
      auto outs = inferTypes(*op, ctx);
      if (outs.size() != n.outputs.size()) return where + ": output count";
      for (size_t k = 0; k < outs.size(); ++k)
        if (!(outs[k] == g.typeOf(n.outputs[k]))) return where + ": output type";
    } catch (const ShapeError& e) {
      return where + ": " + e.what();
    }
  }
  return "";
}

GraphRepairer::GraphRepairer(const OpCatalog& catalog, const ShapeCaps& caps, Rng& rng, IntSolver& solver)
    : catalog_(catalog), caps_(caps), rng_(rng), solver_(solver) {}

void GraphRepairer::attach(Graph& g) {
  g_ = &g;
  ranges_.assign(g.values.size(), Interval{});
  for (const auto& s : g.inputs) ranges_[s.value] = s.dist.range();
  for (const auto& s : g.params) ranges_[s.value] = s.dist.range();
}

int GraphRepairer::addSource(const TensorType& type, std::optional<Interval> need, bool parameter) {
  int id = g_->addValue(type);
  Source s;
  s.value = id;
  bool param = parameter && isFloat(type.dtype);
  s.name = fmt::format("{}{}", param ? "p" : "x", param ? g_->params.size() : g_->inputs.size());
  // Names must stay unique even after repair dropped sources.
  auto taken = [&](const std::string& name) {
    auto same = [&](const Source& o) { return o.name == name; };
    return std::any_of(g_->inputs.begin(), g_->inputs.end(), same) || std::any_of(g_->params.begin(), g_->params.end(), same);
  };
  while (taken(s.name)) s.name += "_";
  s.dist = distributionFor(type, need, false);
  (param ? g_->params : g_->inputs).push_back(s);
  ranges_.push_back(s.dist.range());
  return id;
}

bool GraphRepairer::isFreshSource(int value) const {
  return g_->sourceOf(value) != nullptr && g_->useCount(value) == 0 &&
         std::find(g_->outputs.begin(), g_->outputs.end(), value) == g_->outputs.end();
}

void GraphRepairer::fitSourceTo(int value, Interval need) {
  Source* s = g_->sourceOf(value);
  s->dist = distributionFor(g_->typeOf(value), need, s->dist.kind == "randperm");
  ranges_[value] = s->dist.range();
  ++stats_.resized;
}

int GraphRepairer::insert(const std::string& op, std::vector<int> inputs, json attrs) {
  Node n;
  n.op = op;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  std::string reason;
  if (!tryAppend(n, reason, true)) return -1;
  return n.outputs.at(0);
}

int GraphRepairer::castTo(int value, DType dtype) {
  if (isComplex(dtype) || isComplex(g_->typeOf(value).dtype)) return -1;  // to_dtype casts real dtypes only
  ++stats_.casts;
  return insert("to_dtype", {value}, {{"dtype", dtypeName(dtype)}});
}

int GraphRepairer::clampInto(int value, Interval bounds) {
  const Interval& r = ranges_.at(value);
  double lo = std::isfinite(bounds.lo) ? bounds.lo : (std::isfinite(r.lo) ? std::min(r.lo, bounds.hi) : -1e6);
  double hi = std::isfinite(bounds.hi) ? bounds.hi : (std::isfinite(r.hi) ? std::max(r.hi, bounds.lo) : 1e6);
  if (lo > hi) std::swap(lo, hi);
  json attrs;
  if (isFloat(g_->typeOf(value).dtype)) {
    attrs = {{"min", lo}, {"max", hi}};
  } else {
    attrs = {{"min", static_cast<int64_t>(std::ceil(lo))}, {"max", static_cast<int64_t>(std::floor(hi))}};
  }
  ++stats_.clamps;
  return insert("clamp", {value}, attrs);
}

int GraphRepairer::coerce(int value, const TensorType& target) {
  if (g_->typeOf(value) == target) return value;
  ++stats_.coercions;
  int v = value;
  if (g_->typeOf(v).dtype != target.dtype) {
    v = castTo(v, target.dtype);
    if (v < 0) return -1;
  }
  TensorType t = g_->typeOf(v);
  if (t.shape == target.shape) return v;
  if (t.numel() == target.numel()) return insert("reshape", {v}, {{"shape", target.shape}});
  // Match the rank with a reshape that keeps the elements, then cut or stretch each dim.
  if (t.rank() != target.rank()) {
    std::vector<int64_t> shape;
    if (t.rank() > target.rank()) {
      shape.assign(t.shape.begin(), t.shape.begin() + target.rank());
      if (shape.empty()) shape.push_back(1);
      for (int i = target.rank(); i < t.rank(); ++i) shape.back() *= t.shape[i];
      if (target.rank() == 0) {
        v = insert("reshape", {v}, {{"shape", json::array({t.numel()})}});
        if (v < 0) return -1;
        v = insert("narrow", {v}, {{"dim", 0}, {"start", 0}, {"length", 1}});
        return v < 0 ? -1 : insert("reshape", {v}, {{"shape", json::array()}});
      }
    } else {
      shape.assign(target.rank() - t.rank(), 1);
      shape.insert(shape.end(), t.shape.begin(), t.shape.end());
    }
    v = insert("reshape", {v}, {{"shape", shape}});
    if (v < 0) return -1;
    t = g_->typeOf(v);
  }
  bool needExpand = false;
  for (int d = 0; d < target.rank(); ++d) {
    if (t.shape[d] > target.shape[d]) {
      v = insert("narrow", {v}, {{"dim", d}, {"start", 0}, {"length", target.shape[d]}});
    } else if (t.shape[d] < target.shape[d] && t.shape[d] > 1) {
      v = insert("narrow", {v}, {{"dim", d}, {"start", 0}, {"length", 1}});
      needExpand = true;
    } else if (t.shape[d] < target.shape[d]) {
      needExpand = true;
    }
    if (v < 0) return -1;
    t = g_->typeOf(v);
  }
  if (needExpand) v = insert("expand", {v}, {{"shape", target.shape}});
  return v;
}

OpContext GraphRepairer::contextFor(const OpSpec& op, const Node& node) const {
  OpContext ctx;
  for (int in : node.inputs) {
    ctx.in.push_back(g_->typeOf(in));
    ctx.ranges.push_back(ranges_.at(in));
  }
  ctx.attrs = node.attrs.is_object() ? node.attrs : json::object();
  ctx.caps = &caps_;
  return ctx;
}

std::map<std::string, UnknownBounds> GraphRepairer::boundsOf(const OpSpec& op) const {
  std::map<std::string, UnknownBounds> b;
  for (const auto& a : op.attrs)
    if (a.kind == AttrKind::Int || a.kind == AttrKind::IntList) b[a.name] = {a.lo, a.hi};
  return b;
}

bool GraphRepairer::drawAttrs(const OpSpec& op, OpContext& ctx) {
  try {
    sampleAttrs(op, ctx, rng_);
    return true;
  } catch (const std::exception&) {  // a sampler that assumes more of its inputs than they give
    return false;
  }
}

bool GraphRepairer::append(Node node, std::string* reason) {
  // Undo log: repair only appends values and nodes, and edits sources (their type, distribution).
  size_t values = g_->values.size(), nodes = g_->nodes.size();
  std::vector<Source> inputs = g_->inputs, params = g_->params;
  std::vector<std::pair<TensorType, Interval>> sourceState;
  for (const auto* list : {&inputs, &params})
    for (const auto& s : *list) sourceState.emplace_back(g_->typeOf(s.value), ranges_[s.value]);
  RepairStats statsBackup = stats_;
  std::string why;
  bool ok = false;
  try {
    ok = tryAppend(node, why);
  } catch (const std::exception& e) {  // a rule that assumed more of a foreign node than it gives
    why = fmt::format("{}: {}", node.op, e.what());
  }
  if (ok) return true;
  g_->values.resize(values);
  g_->nodes.resize(nodes);
  ranges_.resize(values);
  g_->inputs = std::move(inputs);
  g_->params = std::move(params);
  size_t i = 0;
  for (const auto* list : {&g_->inputs, &g_->params})
    for (const auto& s : *list) std::tie(g_->typeOf(s.value), ranges_[s.value]) = sourceState[i++];
  stats_ = std::move(statsBackup);
  ++stats_.rejected;
  ++stats_.rejectedByOp[node.op];
  ++stats_.rejectReasons[firstWords(why)];
  if (reason) *reason = why;
  return false;
}

/// The state tryAppend's stages hand on: the node (edited in place), the op, and what is derived.
struct GraphRepairer::AppendAttempt {
  AppendAttempt(Node& n, std::string& why, bool isFixup) : node(n), reason(why), fixup(isFixup) {}

  Node& node;
  std::string& reason;
  bool fixup;
  const OpSpec* op = nullptr;        // set by lookUpOp
  OpContext ctx;                     // set by fitAttrs, kept in step with the node's inputs
  std::vector<TensorType> outs;      // set by inferWithRepair
  std::vector<Interval> outRanges;   // set by avoidOverflow
  bool repaired = false;             // some stage changed the node or the graph
};

constinit const std::pair<std::string_view, GraphRepairer::AppendStage> GraphRepairer::kAppendStages[] = {
    {"look_up_op", &GraphRepairer::lookUpOp},
    {"fit_arity", &GraphRepairer::fitArity},
    {"fit_dtypes", &GraphRepairer::fitDTypes},
    {"fit_rank", &GraphRepairer::fitRank},
    {"fit_attrs", &GraphRepairer::fitAttrs},
    {"add_missing_inputs", &GraphRepairer::addMissingInputs},
    {"infer_with_repair", &GraphRepairer::inferWithRepair},
    {"cap_output_elements", &GraphRepairer::capOutputElements},
    {"fit_value_domains", &GraphRepairer::fitValueDomains},
    {"check_unique_indices", &GraphRepairer::checkUniqueIndices},
    {"avoid_overflow", &GraphRepairer::avoidOverflow},
    {"commit", &GraphRepairer::commit},
};

bool GraphRepairer::tryAppend(Node& node, std::string& reason, bool fixup) {
  AppendAttempt attempt{node, reason, fixup};
  for (const auto& [name, stage] : kAppendStages)
    if (!(this->*stage)(attempt)) return false;
  return true;
}

bool GraphRepairer::lookUpOp(AppendAttempt& a) {
  a.op = catalog_.find(a.node.op);
  if (!a.op) a.reason = "unknown op '" + a.node.op + "'";
  return a.op != nullptr;
}

bool GraphRepairer::fitArity(AppendAttempt& a) {
  const OpSpec& op = *a.op;
  if (static_cast<int>(a.node.inputs.size()) > op.maxInputs) {
    a.node.inputs.resize(op.maxInputs);
    a.repaired = true;
  }
  if (a.node.inputs.empty()) {
    TensorType t{{4, 4}, op.accepts[0].has(DType::Float32) ? DType::Float32 : DType::Int64};
    a.node.inputs.push_back(addSource(t, std::nullopt, false));
    a.repaired = true;
  }
  return true;
}

bool GraphRepairer::fitDTypes(AppendAttempt& a) {
  const OpSpec& op = *a.op;
  for (size_t k = 0; k < a.node.inputs.size(); ++k) {
    DTypeSet ok = op.accepts[std::min(k, op.accepts.size() - 1)];
    DType have = g_->typeOf(a.node.inputs[k]).dtype;
    if (ok.has(have)) continue;
    DType want = DType::Float32;
    for (DType d : {DType::Float32, have, DType::Int64, DType::Bool, DType::Float64, DType::Int32, DType::Float16,
                    complexOf(have)})
      if (ok.has(d)) {
        want = d;
        break;
      }
    if (!ok.has(want)) {
      a.reason = "no accepted dtype";
      return false;
    }
    bool fresh = isFreshSource(a.node.inputs[k]);
    // The cast op casts between real dtypes only: a complex value, or a cast to complex, needs a fresh input.
    if (!fresh && (isComplex(have) || isComplex(want))) {
      a.reason = fmt::format("no cast from {} to {}", dtypeName(have), dtypeName(want));
      return false;
    }
    int v = fresh ? -1 : castTo(a.node.inputs[k], want);
    if (v < 0) {  // a fresh input simply changes dtype
      g_->typeOf(a.node.inputs[k]).dtype = want;
      fitSourceTo(a.node.inputs[k], Interval{});
      v = a.node.inputs[k];
    }
    a.node.inputs[k] = v;
    a.repaired = true;
  }
  return true;
}

bool GraphRepairer::fitRank(AppendAttempt& a) {
  const OpSpec& op = *a.op;
  int rank = g_->typeOf(a.node.inputs[0]).rank();
  if (a.fixup || (rank >= op.minRank && rank <= op.maxRank)) return true;
  // Add leading unit dims, or merge leading dims.
  std::vector<int64_t> shape = g_->typeOf(a.node.inputs[0]).shape;
  if (rank < op.minRank) {
    shape.insert(shape.begin(), op.minRank - rank, 1);
  } else {
    int merge = rank - op.maxRank + 1;
    int64_t lead = 1;
    for (int d = 0; d < merge; ++d) lead *= shape[d];
    shape.erase(shape.begin(), shape.begin() + merge);
    shape.insert(shape.begin(), lead);
  }
  int v = a.node.inputs[0];
  if (isFreshSource(v)) {
    g_->typeOf(v).shape = shape;
    ++stats_.resized;
  } else {
    ++stats_.coercions;
    v = insert("reshape", {v}, {{"shape", shape}});
    if (v < 0) {
      a.reason = "cannot reshape input 0 to the op's rank";
      return false;
    }
  }
  a.node.inputs[0] = v;
  a.repaired = true;
  return true;
}

bool GraphRepairer::fitAttrs(AppendAttempt& a) {
  const OpSpec& op = *a.op;
  a.ctx = contextFor(op, a.node);
  std::string problem = checkAttrs(op, a.ctx);
  if (problem.empty()) return true;
  if (a.fixup) {
    a.reason = problem;
    return false;
  }
  a.ctx.attrs = json::object();
  if (!drawAttrs(op, a.ctx)) {
    a.reason = "the op's sampler rejects these inputs";
    return false;
  }
  ++stats_.resampled;
  a.repaired = true;
  return true;
}

bool GraphRepairer::addMissingInputs(AppendAttempt& a) {
  const OpSpec& op = *a.op;
  while (static_cast<int>(a.node.inputs.size()) < op.minInputs) {
    int k = static_cast<int>(a.node.inputs.size());
    std::optional<TensorType> t = proposedOperand(op, a.ctx, k, rng_);
    if (!t) {
      a.reason = "the op proposes no operand for these inputs";
      return false;
    }
    a.node.inputs.push_back(addSource(*t, inputNeed(op, a.ctx, k), false));
    refreshContext(a);
    a.repaired = true;
  }
  return true;
}

bool GraphRepairer::inferWithRepair(AppendAttempt& a) {
  const OpSpec& op = *a.op;
  bool ok = inferOutputs(a);
  for (int round = 0; !ok && !a.fixup && round < 4; ++round) {
    a.repaired = true;
    // (1) Integer constraints: solve attributes (and the dims of fresh inputs) with Z3.
    if (op.constraints && solveIntConstraints(a) && (ok = inferOutputs(a))) break;
    // (2) Operands: make inputs 1.. the type the op proposes.
    if (op.propose && a.node.inputs.size() > 1) {
      if (!proposeOperands(a)) return false;
      if ((ok = inferOutputs(a))) break;
    }
    // (3) Redraw the attributes for these inputs.
    a.ctx.attrs = json::object();
    if (!drawAttrs(op, a.ctx)) break;
    ++stats_.resampled;
    ok = inferOutputs(a);
  }
  return ok;
}

bool GraphRepairer::capOutputElements(AppendAttempt& a) {
  for (const auto& t : a.outs)
    if (t.numel() > caps_.maxElements) {
      a.reason = fmt::format("{} output {} exceeds {} elements", a.op->name, t.str(), caps_.maxElements);
      return false;
    }
  return true;
}

bool GraphRepairer::fitValueDomains(AppendAttempt& a) {
  const OpSpec& op = *a.op;
  std::vector<int>& inputs = a.node.inputs;
  for (size_t k = 0; k < inputs.size(); ++k) {
    auto need = inputNeed(op, a.ctx, static_cast<int>(k));
    if (!need) continue;
    bool fresh = isFreshSource(inputs[k]) && std::count(inputs.begin(), inputs.end(), inputs[k]) == 1;
    // A fresh index for an op that needs distinct indices is drawn as a permutation even when its
    // range fits already (the generator creates operands before it knows they index).
    bool distinct = op.uniqueIndex && fresh && isInt(g_->typeOf(inputs[k]).dtype);
    if (distinct && g_->sourceOf(inputs[k])->dist.kind == "randperm") continue;
    if (!distinct && ranges_.at(inputs[k]).within(*need)) continue;
    a.repaired = true;
    if (fresh) {
      fitSourceTo(inputs[k], *need);
      if (op.uniqueIndex) g_->sourceOf(inputs[k])->dist.kind = "randperm";
    } else {
      int v = clampInto(inputs[k], *need);
      if (v < 0) {
        a.reason = "cannot clamp into the op's domain";
        return false;
      }
      inputs[k] = v;
    }
  }
  refreshContext(a);
  return true;
}

bool GraphRepairer::checkUniqueIndices(AppendAttempt& a) {
  if (!a.op->uniqueIndex) return true;
  for (size_t k = 1; k < a.node.inputs.size(); ++k) {
    const Source* s = g_->sourceOf(a.node.inputs[k]);
    if (!isInt(g_->typeOf(a.node.inputs[k]).dtype)) continue;
    if (!s || s->dist.kind != "randperm" || g_->typeOf(a.node.inputs[k]).numel() > s->dist.high - s->dist.low) {
      a.reason = "index values must be distinct";
      return false;
    }
  }
  return true;
}

bool GraphRepairer::avoidOverflow(AppendAttempt& a) {
  if (outputRangesFinite(a)) return true;
  a.repaired = true;
  for (double bound : {2.0, 0.5}) {
    for (size_t k = 0; k < a.node.inputs.size(); ++k) {
      if (!isFloat(g_->typeOf(a.node.inputs[k]).dtype)) continue;
      Interval box{-bound, bound};
      if (auto need = inputNeed(*a.op, a.ctx, static_cast<int>(k))) box = {std::max(box.lo, need->lo), std::min(box.hi, need->hi)};
      if (!(box.lo < box.hi) || ranges_.at(a.node.inputs[k]).within(box)) continue;
      int v = clampInto(a.node.inputs[k], box);
      if (v < 0) return false;
      a.node.inputs[k] = v;
    }
    refreshContext(a);
    if (outputRangesFinite(a)) break;
  }
  if (!outputRangesFinite(a)) {
    a.reason = fmt::format("{} may overflow", a.op->name);
    return false;
  }
  return true;
}

bool GraphRepairer::commit(AppendAttempt& a) {
  a.node.attrs = a.ctx.attrs;
  a.node.outputs.clear();
  for (size_t i = 0; i < a.outs.size(); ++i) {
    a.node.outputs.push_back(g_->addValue(a.outs[i]));
    ranges_.push_back(a.outRanges[i]);
  }
  g_->nodes.push_back(a.node);
  ++stats_.accepted;
  if (!a.repaired) ++stats_.validAsIs;
  return true;
}

bool GraphRepairer::inferOutputs(AppendAttempt& a) {
  try {
    a.outs = inferTypes(*a.op, a.ctx);
    return true;
  } catch (const ShapeError& e) {
    a.reason = e.what();
    return false;
  }
}

void GraphRepairer::refreshContext(AppendAttempt& a) {
  json attrs = a.ctx.attrs;
  a.ctx = contextFor(*a.op, a.node);
  a.ctx.attrs = std::move(attrs);
}

bool GraphRepairer::solveIntConstraints(AppendAttempt& a) {
  const OpSpec& op = *a.op;
  std::vector<bool> resizable;
  for (int in : a.node.inputs) resizable.push_back(isFreshSource(in));
  std::vector<TensorType> types = a.ctx.in;
  json attrs = a.ctx.attrs;
  // Attributes alone first; resize fresh inputs only when that is not enough.
  bool solved = solver_.solve(*op.constraints, types, attrs, std::vector<bool>(resizable.size(), false),
                              boundsOf(op), caps_.maxDim);
  if (!solved && std::find(resizable.begin(), resizable.end(), true) != resizable.end()) {
    types = a.ctx.in;
    attrs = a.ctx.attrs;
    solved = solver_.solve(*op.constraints, types, attrs, resizable, boundsOf(op), caps_.maxDim);
  }
  if (!solved) return false;
  for (size_t k = 0; k < a.node.inputs.size(); ++k)
    if (resizable[k]) g_->typeOf(a.node.inputs[k]) = types[k];
  a.ctx.attrs = attrs;
  refreshContext(a);
  ++stats_.solved;
  return true;
}

bool GraphRepairer::proposeOperands(AppendAttempt& a) {
  const OpSpec& op = *a.op;
  for (size_t k = 1; k < a.node.inputs.size(); ++k) {
    std::optional<TensorType> proposed = proposedOperand(op, a.ctx, static_cast<int>(k), rng_);
    if (!proposed) {
      a.reason = "the op proposes no operand for these inputs";
      return false;
    }
    TensorType want = *proposed;
    DTypeSet okTypes = op.accepts[std::min(k, op.accepts.size() - 1)];
    if (!okTypes.has(want.dtype)) want.dtype = g_->typeOf(a.node.inputs[k]).dtype;
    if (g_->typeOf(a.node.inputs[k]) == want) continue;
    if (isFreshSource(a.node.inputs[k])) {
      g_->typeOf(a.node.inputs[k]) = want;
      ++stats_.resized;
    } else {
      int v = coerce(a.node.inputs[k], want);
      if (v < 0) {
        a.reason = "cannot coerce an operand";
        return false;
      }
      a.node.inputs[k] = v;
    }
  }
  refreshContext(a);
  return true;
}

bool GraphRepairer::outputRangesFinite(AppendAttempt& a) {
  a.outRanges = inferRanges(*a.op, a.ctx, a.outs.size());
  for (size_t i = 0; i < a.outs.size(); ++i)
    if (isFloat(a.outs[i].dtype) && !finiteWithin(a.outRanges[i], safeMagnitude(a.outs[i].dtype))) return false;
  return true;
}

Graph GraphRepairer::repair(const Graph& foreign, std::vector<std::string>* dropped) {
  Graph out;
  out.origin = foreign.origin;
  out.schedule = foreign.schedule;
  out.hook = foreign.hook;
  attach(out);
  std::map<int, int> remap;  // foreign value -> repaired value
  auto sourceCopy = [&](const Source& s, bool param) {
    int id = out.addValue(foreign.typeOf(s.value));
    Source c = s;
    c.value = id;
    (param ? out.params : out.inputs).push_back(c);
    ranges_.push_back(c.dist.range());
    remap[s.value] = id;
  };
  for (const auto& s : foreign.inputs) sourceCopy(s, false);
  for (const auto& s : foreign.params) sourceCopy(s, true);
  for (size_t i = 0; i < foreign.nodes.size(); ++i) {
    const Node& n = foreign.nodes[i];
    Node c = n;
    bool missing = false;
    for (int& in : c.inputs) {
      auto it = remap.find(in);
      if (it == remap.end()) missing = true;
      else in = it->second;
    }
    std::string why = "reads a dropped value";
    if (missing || !append(c, &why)) {
      if (dropped) dropped->push_back(fmt::format("node {} ({}): {}", i, n.op, why));
      continue;
    }
    const Node& added = out.nodes.back();
    for (size_t k = 0; k < n.outputs.size() && k < added.outputs.size(); ++k) remap[n.outputs[k]] = added.outputs[k];
  }
  for (int o : foreign.outputs)
    if (auto it = remap.find(o); it != remap.end() && std::find(out.outputs.begin(), out.outputs.end(), it->second) == out.outputs.end())
      out.outputs.push_back(it->second);
  if (out.outputs.empty() && !out.values.empty()) out.outputs.push_back(out.values.back().id);
  dropInvalidLayouts(out);  // repair may have resized or retyped a fresh input
  dropInvalidAliases(out, &catalog_);  // ... or the input an alias views, or put a write on the pair
  for (Source& s : out.inputs)  // a mutation may have put an op that needs a dense input on it
    if (!s.layout.contiguous() && readByDenseInputOp(out, catalog_, s.value)) s.layout = {};
  repairIllegalViews(out, catalog_);  // a layout or a new producer may have made a view illegal
  g_ = nullptr;
  return out;
}

}  // namespace tcfuzz::gen
