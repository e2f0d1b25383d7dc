#include "generators/features/InputAliases.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "generators/features/InputLayout.h"

namespace tcfuzz::gen {

using nlohmann::json;

namespace {

int64_t product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

/// The elements of the base's storage from its own storage offset on: what an as-strided alias may view.
int64_t storageExtent(const Graph& g, const Source& base) {
  const TensorType& t = g.typeOf(base.value);
  return product(storageShape(base.layout, t)) - inputGeometry(base.layout, t).offset;
}

/// Whether `shape` is what torch's expand makes of `from`: trailing dims aligned, each equal or from 1.
bool expandsTo(const std::vector<int64_t>& from, const std::vector<int64_t>& shape) {
  if (shape.size() < from.size()) return false;
  size_t lead = shape.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != shape[lead + i] && from[i] != 1) return false;
  return true;
}

/// The kind's own rule: "" when `kind` (with dims and start) views a tensor of `shape` in a base of `base`.
std::string shapeProblem(const InputAlias& a, const std::vector<int64_t>& base, const std::vector<int64_t>& shape,
                         int64_t extent) {
  int rank = static_cast<int>(base.size());
  auto dimOk = [&](int d) { return d >= 0 && d < rank; };
  if (a.kind == "same") return base == shape ? "" : "the same tensor needs the same shape";
  if (a.kind == "full-slice") return base == shape && rank > 0 ? "" : "a full slice needs the same shape and rank 1 or more";
  if (a.kind == "transpose") {
    if (a.dims.size() != 2 || !dimOk(a.dims[0]) || !dimOk(a.dims[1]) || a.dims[0] == a.dims[1])
      return "a transpose needs two different dims in range";
    std::vector<int64_t> swapped = base;
    std::swap(swapped[a.dims[0]], swapped[a.dims[1]]);
    return swapped == shape ? "" : "the transposed base has another shape";
  }
  if (a.kind == "narrow") {
    if (a.dims.size() != 1 || !dimOk(a.dims[0]) || shape.size() != base.size()) return "a narrow needs one dim in range";
    int d = a.dims[0];
    for (int i = 0; i < rank; ++i)
      if (i != d && base[i] != shape[i]) return "a narrow keeps every other dim";
    return a.start >= 0 && a.start + shape[d] <= base[d] ? "" : "the narrowed range leaves the base";
  }
  if (a.kind == "expand") return expandsTo(base, shape) ? "" : "the base does not expand to this shape";
  if (a.kind == "as-strided")
    return a.start >= 0 && a.start + product(shape) <= extent ? "" : "the view runs past the base's storage";
  return fmt::format("unknown alias kind '{}'", a.kind);
}

/// Every kind (with its dims and start) that could view a tensor of `shape` in `base`: the kinds' own rules
/// (shapeProblem) then pick the ones that fit. An as-strided view starts `asStridedStart` elements in.
std::vector<InputAlias> kindsOver(const Source& base, const std::vector<int64_t>& from, const std::vector<int64_t>& shape,
                                  int64_t asStridedStart) {
  int rank = static_cast<int>(from.size());
  std::vector<InputAlias> kinds{{base.name, "same"}, {base.name, "full-slice"}, {base.name, "expand"}};
  for (int a = 0; a < rank; ++a)
    for (int b = a + 1; b < rank; ++b) kinds.push_back({base.name, "transpose", {a, b}});
  for (int d = 0; d < rank && static_cast<int>(shape.size()) == rank; ++d)
    kinds.push_back({base.name, "narrow", {d}, std::max<int64_t>(0, from[d] - shape[d])});
  kinds.push_back({base.name, "as-strided", {}, asStridedStart});
  return kinds;
}

bool writtenDirectly(const Graph& g, const Source& s) {
  return std::any_of(g.nodes.begin(), g.nodes.end(), [&](const Node& n) {
    return !n.inputs.empty() && n.inputs[0] == s.value && writesIntoProgramInput(g, n);
  });
}

/// The values of the inputs that share storage with `base` (its aliases) and of `base` itself.
std::set<int> groupValues(const Graph& g, const Source& base) {
  std::set<int> values{base.value};
  for (const Source& s : g.inputs)
    if (s.alias.base == base.name) values.insert(s.value);
  return values;
}

/// Whether an in-place node writes into a member of the group while it reads another member (or a view
/// of one) as another operand: eager refuses such a partial overlap.
bool writesOverlapTheirSource(const Graph& g, const OpCatalog& catalog, const std::set<int>& group) {
  for (const Node& n : g.nodes) {
    if (!writesIntoProgramInput(g, n) || !group.count(n.inputs[0])) continue;
    for (size_t k = 1; k < n.inputs.size(); ++k)
      if (group.count(viewBaseOf(g, catalog, n.inputs[k]))) return true;
  }
  return false;
}

}  // namespace

const std::vector<std::string>& aliasKinds() {
  static const std::vector<std::string> kinds{"same", "full-slice", "transpose", "narrow", "expand", "as-strided"};
  return kinds;
}

const Source* aliasBase(const Graph& g, const Source& s) {
  for (const Source& b : g.inputs)
    if (b.name == s.alias.base) return &b;
  return nullptr;
}

std::string aliasProblem(const Graph& g, const Source& s) {
  if (s.alias.none()) return "";
  const Source* base = aliasBase(g, s);
  if (!base) return fmt::format("no input named '{}' to alias", s.alias.base);
  if (base->value == s.value || !base->alias.none()) return "an alias's base must be another input that is no alias";
  const TensorType &t = g.typeOf(s.value), &bt = g.typeOf(base->value);
  if (t.dtype != bt.dtype || !isFloat(t.dtype)) return "only floating inputs of one dtype alias";
  if (!(s.dist == base->dist)) return "an alias and its base need one distribution";
  if (!s.layout.contiguous() || !s.boundary.empty()) return "an alias has no layout or boundary values of its own";
  if (std::string shape = shapeProblem(s.alias, bt.shape, t.shape, storageExtent(g, *base)); !shape.empty()) return shape;
  if (s.alias.kind == "expand" && writtenDirectly(g, s)) return "an expanded alias is never written";
  return "";
}

Geometry sourceGeometry(const Graph& g, const Source& s) {
  const TensorType& t = g.typeOf(s.value);
  const Source* base = aliasBase(g, s);
  if (s.alias.none() || !base || !aliasProblem(g, s).empty()) return inputGeometry(s.layout, t);
  Geometry b = inputGeometry(base->layout, g.typeOf(base->value));
  const InputAlias& a = s.alias;
  if (a.kind == "transpose") std::swap(b.strides[a.dims[0]], b.strides[a.dims[1]]);
  if (a.kind == "narrow") b.offset += a.start * b.strides[a.dims[0]];
  if (a.kind == "as-strided") b = {contiguousStrides(t.shape), b.offset + a.start};
  if (a.kind == "expand") {
    const std::vector<int64_t>& from = g.typeOf(base->value).shape;
    size_t lead = t.shape.size() - from.size();
    std::vector<int64_t> strides(t.shape.size(), 0);
    for (size_t i = 0; i < from.size(); ++i) strides[lead + i] = from[i] == t.shape[lead + i] ? b.strides[i] : 0;
    b.strides = strides;
  }
  return b;
}

std::string aliasPython(const Graph& g, const Source& s) {
  const InputAlias& a = s.alias;
  const TensorType& t = g.typeOf(s.value);
  auto tuple = [](const std::vector<int64_t>& v) {
    return v.size() == 1 ? fmt::format("({},)", v[0]) : fmt::format("({})", fmt::join(v, ", "));
  };
  if (a.kind == "same") return a.base;
  if (a.kind == "full-slice") return a.base + "[:]";
  if (a.kind == "transpose") return fmt::format("{}.transpose({}, {})", a.base, a.dims.at(0), a.dims.at(1));
  if (a.kind == "narrow") return fmt::format("{}.narrow({}, {}, {})", a.base, a.dims.at(0), a.start, t.shape.at(a.dims.at(0)));
  if (a.kind == "expand") return fmt::format("{}.expand{}", a.base, tuple(t.shape));
  return fmt::format("{0}.as_strided({1}, {2}, {0}.storage_offset() + {3})", a.base, tuple(t.shape),
                     tuple(contiguousStrides(t.shape)), a.start);
}

std::string describeAlias(const InputAlias& a) {
  std::string how = a.kind == "same"        ? "the same tensor"
                    : a.kind == "transpose" ? fmt::format("transposed, dims {} and {}", a.dims.at(0), a.dims.at(1))
                    : a.kind == "narrow"    ? fmt::format("narrowed along dim {} from {}", a.dims.at(0), a.start)
                    : a.kind == "as-strided" ? fmt::format("a row-major view {} elements into its storage", a.start)
                                             : a.kind;
  return fmt::format("aliases {} ({})", a.base, how);
}

/// The rules that need the catalog: a dense reader gets a row-major alias, and no write into the
/// group reads another member as its source.
static bool fitsCatalogRules(const Graph& g, const OpCatalog& catalog, const Source& s) {
  const Source* base = aliasBase(g, s);
  if (!base) return false;
  if (readByDenseInputOp(g, catalog, s.value) && !isContiguous(g.typeOf(s.value).shape, sourceGeometry(g, s).strides))
    return false;
  return !writesOverlapTheirSource(g, catalog, groupValues(g, *base));
}

std::vector<InputAlias> aliasCandidates(const Graph& g, const OpCatalog& catalog, const Source& s) {
  std::vector<InputAlias> out;
  const TensorType& t = g.typeOf(s.value);
  if (!s.alias.none() || !s.layout.contiguous() || !s.boundary.empty() || !isFloat(t.dtype)) return out;
  // An input others alias stays a base.
  if (std::any_of(g.inputs.begin(), g.inputs.end(), [&](const Source& o) { return o.alias.base == s.name; })) return out;
  for (const Source& base : g.inputs) {
    if (base.value == s.value || !base.alias.none()) continue;
    int64_t extent = storageExtent(g, base);
    for (const InputAlias& a : kindsOver(base, g.typeOf(base.value).shape, t.shape,
                                         std::clamp<int64_t>(extent - t.numel(), 0, 1))) {
      if (std::any_of(out.begin(), out.end(), [&](const InputAlias& o) { return o.base == a.base && o.kind == a.kind; }))
        continue;
      Graph trial = g;
      Source& mine = *std::find_if(trial.inputs.begin(), trial.inputs.end(), [&](const Source& o) { return o.value == s.value; });
      mine.alias = a;
      if (aliasProblem(trial, mine).empty() && fitsCatalogRules(trial, catalog, mine)) out.push_back(a);
    }
  }
  return out;
}

namespace {

double kindWeight(const std::map<std::string, double>& weights, const std::string& kind) {
  auto it = weights.find(kind);
  return it == weights.end() ? 1.0 : it->second;
}

/// A new input z that aliases an input forward writes into, read after the write: an output o of z's
/// dtype becomes o - z. False when no written input and output fit.
bool addReaderAlias(Graph& g, const OpCatalog& catalog, const std::map<std::string, double>& weights, Rng& rng) {
  std::vector<std::pair<const Source*, int>> pairs;  // (written input, output)
  for (const Source& x : g.inputs)
    if (x.alias.none() && isFloat(g.typeOf(x.value).dtype) && writtenDirectly(g, x))
      for (int o : g.outputs)
        if (g.producerOf(o) >= 0 && g.typeOf(o).dtype == g.typeOf(x.value).dtype && g.typeOf(o).numel() > 0 &&
            g.typeOf(o).numel() <= storageExtent(g, x))
          pairs.emplace_back(&x, o);
  if (pairs.empty()) return false;
  auto [x, o] = rng.pick(pairs);
  Graph trial = g;
  std::set<std::string> names;
  for (const Source& s : g.inputs) names.insert(s.name);
  std::string name;
  for (size_t k = g.inputs.size(); name.empty() || names.count(name); ++k) name = fmt::format("x{}", k);
  int z = trial.addValue(g.typeOf(o));
  trial.inputs.push_back({z, name, x->dist});
  int read = trial.addValue(g.typeOf(o));
  trial.nodes.push_back({"sub", {o, z}, {read}});
  std::replace(trial.outputs.begin(), trial.outputs.end(), o, read);
  Source& mine = trial.inputs.back();
  int64_t spare = storageExtent(g, *x) - trial.typeOf(z).numel();
  std::vector<InputAlias> fit;
  std::vector<double> w;
  for (const InputAlias& a : kindsOver(*x, g.typeOf(x->value).shape, trial.typeOf(z).shape,
                                       rng.uniform(0, std::min<int64_t>(spare, 3)))) {
    mine.alias = a;
    if (kindWeight(weights, a.kind) > 0 && aliasProblem(trial, mine).empty() && fitsCatalogRules(trial, catalog, mine)) {
      fit.push_back(a);
      w.push_back(kindWeight(weights, a.kind));
    }
  }
  if (fit.empty()) return false;
  mine.alias = fit[rng.weighted(w)];
  g = sourcesFirst(trial);
  return true;
}

}  // namespace

bool addInputAlias(Graph& g, const OpCatalog& catalog, const AliasChances& chances, const std::map<std::string, double>& weights,
                   Rng& rng) {
  if (rng.chance(chances.readAfterWrite) && addReaderAlias(g, catalog, weights, rng)) return true;
  if (g.inputs.size() < 2 || !rng.chance(chances.pair)) return false;
  std::vector<std::pair<size_t, InputAlias>> options;
  std::vector<double> w;
  for (size_t i = 0; i < g.inputs.size(); ++i)
    for (const InputAlias& a : aliasCandidates(g, catalog, g.inputs[i])) {
      double weight = kindWeight(weights, a.kind);
      if (weight <= 0) continue;
      // A pair that forward writes through is where the compiler has work to do: drawn 6 times as often.
      const Source* base = aliasBase(g, Source{g.inputs[i].value, g.inputs[i].name, {}, {}, {}, a});
      if (writtenDirectly(g, g.inputs[i]) || (base && writtenDirectly(g, *base))) weight *= 6;
      options.emplace_back(i, a);
      w.push_back(weight);
    }
  if (options.empty()) return false;
  const auto& [index, alias] = options[rng.weighted(w)];
  g.inputs[index].alias = alias;
  return true;
}

int dropInvalidAliases(Graph& g, const OpCatalog* catalog) {
  int reset = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (Source& s : g.inputs)
      if (!s.alias.none() && (!aliasProblem(g, s).empty() || (catalog && !fitsCatalogRules(g, *catalog, s)))) {
        s.alias = {};
        ++reset;
        changed = true;
      }
  }
  return reset;
}

int aliasedInputCount(const Graph& g) {
  return static_cast<int>(std::count_if(g.inputs.begin(), g.inputs.end(), [](const Source& s) { return !s.alias.none(); }));
}

json aliasToJson(const InputAlias& a) {
  json doc{{"base", a.base}, {"kind", a.kind}};
  if (a.kind == "transpose" || a.kind == "narrow") doc["dims"] = a.dims;
  if (a.kind == "narrow" || a.kind == "as-strided") doc["start"] = a.start;
  return doc;
}

InputAlias aliasFromJson(const json& doc) {
  if (!doc.is_object() || !doc.contains("base") || !doc["base"].is_string() || !doc.contains("kind") ||
      !doc["kind"].is_string())
    throw std::invalid_argument("an alias is an object with a string 'base' and a string 'kind'");
  InputAlias a;
  a.base = doc["base"].get<std::string>();
  a.kind = doc["kind"].get<std::string>();
  if (std::find(aliasKinds().begin(), aliasKinds().end(), a.kind) == aliasKinds().end())
    throw std::invalid_argument(fmt::format("unknown alias kind '{}'", a.kind));
  for (const auto& [key, value] : doc.items()) {
    bool known = key == "base" || key == "kind" || (key == "dims" && (a.kind == "transpose" || a.kind == "narrow")) ||
                 (key == "start" && (a.kind == "narrow" || a.kind == "as-strided"));
    if (!known) throw std::invalid_argument(fmt::format("a {} alias has no field '{}'", a.kind, key));
  }
  if (doc.contains("dims")) {
    if (!doc["dims"].is_array()) throw std::invalid_argument("an alias's 'dims' is a list of integers");
    for (const auto& d : doc["dims"]) {
      if (!d.is_number_integer()) throw std::invalid_argument("an alias's 'dims' is a list of integers");
      a.dims.push_back(d.get<int>());
    }
  }
  if (doc.contains("start")) {
    if (!doc["start"].is_number_integer()) throw std::invalid_argument("an alias's 'start' is an integer");
    a.start = doc["start"].get<int64_t>();
  }
  return a;
}

}  // namespace tcfuzz::gen
