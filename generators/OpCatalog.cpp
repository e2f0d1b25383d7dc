#include "generators/OpCatalog.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tcfuzz::gen {

using nlohmann::json;

namespace {
const json& attrValue(const json& attrs, const std::string& name) {
  auto it = attrs.find(name);
  if (it == attrs.end() || it->is_null()) throw ShapeError("missing attribute '" + name + "'");
  return *it;
}
}  // namespace

int64_t OpContext::attrInt(const std::string& name) const {
  const json& v = attrValue(attrs, name);
  if (!v.is_number_integer()) throw ShapeError("attribute '" + name + "' must be an integer");
  return v.get<int64_t>();
}
std::vector<int64_t> OpContext::attrInts(const std::string& name) const {
  const json& v = attrValue(attrs, name);
  if (!v.is_array()) throw ShapeError("attribute '" + name + "' must be a list of integers");
  std::vector<int64_t> out;
  for (const auto& e : v) {
    if (!e.is_number_integer()) throw ShapeError("attribute '" + name + "' must be a list of integers");
    out.push_back(e.get<int64_t>());
  }
  return out;
}
double OpContext::attrFloat(const std::string& name) const {
  const json& v = attrValue(attrs, name);
  if (!v.is_number()) throw ShapeError("attribute '" + name + "' must be a number");
  return v.get<double>();
}
bool OpContext::attrBool(const std::string& name) const {
  const json& v = attrValue(attrs, name);
  if (!v.is_boolean()) throw ShapeError("attribute '" + name + "' must be a boolean");
  return v.get<bool>();
}
std::string OpContext::attrStr(const std::string& name) const {
  const json& v = attrValue(attrs, name);
  if (!v.is_string()) throw ShapeError("attribute '" + name + "' must be a string");
  return v.get<std::string>();
}
DType OpContext::attrDType(const std::string& name) const {
  auto d = parseDType(attrStr(name));
  if (!d) throw ShapeError("attribute '" + name + "' is not a dtype");
  return *d;
}

void require(bool condition, const std::string& message) {
  if (!condition) throw ShapeError(message);
}

int wrapDim(int64_t dim, int rank) {
  int r = std::max(rank, 1);  // torch lets a 0-d tensor take dim 0 and -1
  require(dim >= -r && dim < r, fmt::format("dim {} out of range for rank {}", dim, rank));
  return static_cast<int>(dim < 0 ? dim + r : dim);
}

std::vector<int64_t> broadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    require(da == db || da == 1 || db == 1,
            fmt::format("shapes [{}] and [{}] do not broadcast", fmt::join(a, ", "), fmt::join(b, ", ")));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

AtenCall parseAtenCall(const std::string& spelling) {
  AtenCall call;
  auto open = spelling.find('(');
  if (open == std::string::npos || spelling.back() != ')') throw std::invalid_argument("bad ATen spelling: " + spelling);
  std::string name = spelling.substr(0, open);
  auto dot = name.find('.');
  call.op = name.substr(0, dot);
  if (dot != std::string::npos) call.overload = name.substr(dot + 1);
  std::string body = spelling.substr(open + 1, spelling.size() - open - 2);
  // Split on top-level commas.
  std::vector<std::string> parts;
  int depth = 0;
  std::string cur;
  for (char c : body) {
    if (c == '[' || c == '(') ++depth;
    if (c == ']' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty() || !parts.empty()) parts.push_back(cur);
  for (auto part : parts) {
    auto b = part.find_first_not_of(' ');
    auto e = part.find_last_not_of(' ');
    part = b == std::string::npos ? "" : part.substr(b, e - b + 1);
    AtenArg arg;
    if (part == "{*}") {
      arg.kind = AtenArg::AllInputs;
    } else if (part.size() > 2 && part.front() == '{' && part.back() == '}') {
      std::string inner = part.substr(1, part.size() - 2);
      if (std::isdigit(static_cast<unsigned char>(inner[0]))) {
        arg.kind = AtenArg::Input;
        arg.input = std::stoi(inner);
      } else if (inner.rfind("p:", 0) == 0) {
        arg.kind = AtenArg::Param;
        arg.name = inner.substr(2);
      } else {
        arg.kind = AtenArg::Attr;
        arg.name = inner;
      }
    } else {
      arg.kind = AtenArg::Literal;
      std::string text = part == "None" ? "null" : part == "True" ? "true" : part == "False" ? "false" : part;
      try {
        arg.literal = json::parse(text);
      } catch (const json::exception&) {
        throw std::invalid_argument("bad ATen literal '" + part + "' in " + spelling);
      }
    }
    call.args.push_back(std::move(arg));
  }
  return call;
}

OpSpec& OpCatalog::add(OpSpec spec) {
  if (byName_.count(spec.name)) throw std::invalid_argument("duplicate catalog op " + spec.name);
  if (!spec.infer) throw std::invalid_argument("catalog op " + spec.name + " has no shape rule");
  if (spec.accepts.empty()) throw std::invalid_argument("catalog op " + spec.name + " accepts no dtype");
  parseAtenCall(spec.aten);  // fail early on a malformed spelling
  ops_.push_back(std::make_unique<OpSpec>(std::move(spec)));
  byName_[ops_.back()->name] = ops_.back().get();
  return *ops_.back();
}

OpSpec& OpCatalog::edit(const std::string& name) {
  auto it = byName_.find(name);
  if (it == byName_.end()) throw std::out_of_range("no catalog op " + name);
  return *const_cast<OpSpec*>(it->second);
}

const OpSpec* OpCatalog::find(const std::string& name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : it->second;
}

const OpSpec& OpCatalog::at(const std::string& name) const {
  const OpSpec* op = find(name);
  if (!op) throw std::out_of_range("unknown op '" + name + "'");
  return *op;
}

OpCatalog makeDefaultCatalog() {
  OpCatalog catalog;
  addElementwiseOps(catalog);
  addReductionOps(catalog);
  addShapeOps(catalog);
  addNeuralOps(catalog);
  addIndexingOps(catalog);
  addInplaceViewOps(catalog);
  addBufferUpdateOps(catalog);
  addComplexOps(catalog);
  addBackwardOps(catalog);
  addViewStrideRules(catalog);
  return catalog;
}

void sampleAttrs(const OpSpec& op, OpContext& ctx, Rng& rng) {
  for (const auto& a : op.attrs) {
    if (a.optional && rng.chance(0.3)) {
      ctx.attrs[a.name] = nullptr;
      continue;
    }
    switch (a.kind) {
      case AttrKind::Int: ctx.attrs[a.name] = rng.uniform(a.lo, a.hi); break;
      case AttrKind::Float: ctx.attrs[a.name] = std::round(rng.real(a.flo, a.fhi) * 100) / 100; break;
      case AttrKind::Bool: ctx.attrs[a.name] = rng.chance(0.5); break;
      case AttrKind::Choice: ctx.attrs[a.name] = rng.pick(a.choices); break;
      case AttrKind::DType: ctx.attrs[a.name] = rng.pick(a.choices); break;
      case AttrKind::IntList: break;  // list lengths depend on the inputs: the op's sampler fills them
    }
  }
  if (op.sample) op.sample(ctx, rng);
}

std::vector<TensorType> inferTypes(const OpSpec& op, const OpContext& ctx) {
  require(static_cast<int>(ctx.in.size()) >= op.minInputs && static_cast<int>(ctx.in.size()) <= op.maxInputs,
          fmt::format("{} takes {} to {} inputs, not {}", op.name, op.minInputs, op.maxInputs, ctx.in.size()));
  for (size_t i = 0; i < ctx.in.size(); ++i) {
    DTypeSet ok = op.accepts[std::min(i, op.accepts.size() - 1)];
    require(ok.has(ctx.in[i].dtype), fmt::format("input {} of {} cannot be {}", i, op.name, dtypeName(ctx.in[i].dtype)));
  }
  require(ctx.x().rank() >= op.minRank && ctx.x().rank() <= op.maxRank,
          fmt::format("{} takes rank {} to {}, not {}", op.name, op.minRank, op.maxRank, ctx.x().rank()));
  if (auto problem = checkAttrs(op, ctx); !problem.empty()) throw ShapeError(problem);
  try {
    if (op.constraints) {
      ConcreteEnv env(ctx.in, ctx.attrs);
      auto results = op.constraints->check(env);
      for (size_t i = 0; i < results.size(); ++i)
        require(results[i], fmt::format("{}: integer constraint {} fails", op.name, i));
    }
    auto out = op.infer(ctx);
    for (const auto& t : out)
      for (auto d : t.shape) require(d >= 1, fmt::format("{} gives an empty dim ({})", op.name, t.str()));
    return out;
  } catch (const ShapeError&) {
    throw;
  } catch (const std::exception& e) {  // json access, out_of_range: a malformed node
    throw ShapeError(fmt::format("{}: {}", op.name, e.what()));
  }
}

std::vector<Interval> inferRanges(const OpSpec& op, const OpContext& ctx, size_t outputs) {
  if (op.range) {
    auto r = op.range(ctx);
    r.resize(outputs, r.empty() ? Interval{} : r.back());
    return r;
  }
  return std::vector<Interval>(outputs, ctx.ranges.empty() ? Interval{} : ctx.ranges[0]);
}

std::optional<Interval> inputNeed(const OpSpec& op, const OpContext& ctx, int k) {
  if (op.need) {
    try {
      if (auto n = op.need(ctx, k)) return n;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  if (op.needs.empty()) return std::nullopt;
  const Interval& n = op.needs[std::min<size_t>(k, op.needs.size() - 1)];
  if (n == Interval{}) return std::nullopt;
  return n;
}

std::string checkAttrs(const OpSpec& op, const OpContext& ctx) {
  for (const auto& a : op.attrs) {
    auto it = ctx.attrs.find(a.name);
    if (it == ctx.attrs.end()) return fmt::format("{}: missing attribute '{}'", op.name, a.name);
    const json& v = *it;
    if (v.is_null()) {
      if (a.optional) continue;
      return fmt::format("{}: attribute '{}' may not be None", op.name, a.name);
    }
    auto bad = [&](const std::string& why) { return fmt::format("{}: attribute '{}' {}", op.name, a.name, why); };
    switch (a.kind) {
      case AttrKind::Int:
        if (!v.is_number_integer()) return bad("must be an integer");
        if (v.get<int64_t>() < a.lo || v.get<int64_t>() > a.hi) return bad(fmt::format("must lie in [{}, {}]", a.lo, a.hi));
        break;
      case AttrKind::IntList:
        if (!v.is_array() || v.size() > 8) return bad("must be a list of at most 8 integers");
        for (const auto& e : v)
          if (!e.is_number_integer() || e.get<int64_t>() < a.lo || e.get<int64_t>() > a.hi)
            return bad(fmt::format("must hold integers in [{}, {}]", a.lo, a.hi));
        break;
      case AttrKind::Float:
        if (!v.is_number() || v.get<double>() < a.flo || v.get<double>() > a.fhi)
          return bad(fmt::format("must be a number in [{}, {}]", a.flo, a.fhi));
        break;
      case AttrKind::Bool:
        if (!v.is_boolean()) return bad("must be a boolean");
        break;
      case AttrKind::Choice:
      case AttrKind::DType:
        if (!v.is_string() || std::find(a.choices.begin(), a.choices.end(), v.get<std::string>()) == a.choices.end())
          return bad(fmt::format("must be one of {}", fmt::join(a.choices, ", ")));
        break;
    }
  }
  for (const auto& [k, _] : ctx.attrs.items()) {
    bool known = false;
    for (const auto& a : op.attrs) known = known || a.name == k;
    if (!known) return fmt::format("{}: unknown attribute '{}'", op.name, k);
  }
  return "";
}

}  // namespace tcfuzz::gen
