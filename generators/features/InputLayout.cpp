#include "generators/features/InputLayout.h"

#include <algorithm>
#include <set>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "generators/features/InputAliases.h"

namespace tcfuzz::gen {

using nlohmann::json;

namespace {

constexpr int64_t kMaxStep = 4;
constexpr int64_t kMaxOffset = 4;

/// Sizes, strides and storage offset of an input, as torch would report them.
struct Strided {
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
};

/// The geometry make_inputs produces (layoutProblem must be "").
Strided geometry(const Layout& l, const TensorType& t) {
  Strided s;
  std::vector<int64_t> storage = storageShape(l, t);
  s.sizes = t.shape;
  s.strides = contiguousStrides(storage);
  if (l.kind == "transposed") {
    std::swap(s.strides[l.dims[0]], s.strides[l.dims[1]]);
  } else if (l.kind == "strided") {
    s.offset = l.offset * s.strides[l.dims[0]];
    s.strides[l.dims[0]] *= l.step;
  } else if (l.kind == "expanded") {
    s.strides[l.dims[0]] = 0;
  } else if (l.kind == "channels_last") {
    // NC(D)HW stored as N(D)HWC: C varies fastest, then W, H (, D), then N.
    int r = t.rank();
    std::vector<int> order{0};  // outermost first
    for (int d = 2; d < r; ++d) order.push_back(d);
    order.push_back(1);
    int64_t stride = 1;
    for (size_t i = order.size(); i-- > 0;) {
      s.strides[order[i]] = stride;
      stride *= std::max<int64_t>(t.shape[order[i]], 1);
    }
  }
  return s;
}

bool dimInRange(int d, const TensorType& t) { return d >= 0 && d < t.rank(); }

}  // namespace

const std::vector<std::string>& layoutKinds() {
  static const std::vector<std::string> kinds{"transposed", "strided", "expanded", "channels_last"};
  return kinds;
}

std::string layoutProblem(const Layout& l, const TensorType& t, const Distribution& dist) {
  auto dimsNeeded = [&](size_t n) -> std::string {
    if (l.dims.size() != n) return fmt::format("a {} layout names {} dim{}", l.kind, n, n == 1 ? "" : "s");
    for (int d : l.dims)
      if (!dimInRange(d, t)) return fmt::format("dim {} is out of range for an input of rank {}", d, t.rank());
    return "";
  };
  if (l.kind == "contiguous") return l.dims.empty() ? "" : "a contiguous layout names no dims";
  if (l.kind == "transposed") {
    if (auto p = dimsNeeded(2); !p.empty()) return p;
    if (l.dims[0] == l.dims[1]) return "a transposed layout swaps two different dims";
    return "";
  }
  if (l.kind == "strided") {
    if (auto p = dimsNeeded(1); !p.empty()) return p;
    if (l.step < 1 || l.step > kMaxStep) return fmt::format("step {} is outside [1, {}]", l.step, kMaxStep);
    if (l.offset < 0 || l.offset > kMaxOffset) return fmt::format("offset {} is outside [0, {}]", l.offset, kMaxOffset);
    if (l.step == 1 && l.offset == 0) return "step 1 at offset 0 is the contiguous layout";
    if (dist.kind == "randperm") return "a randperm input's distinct values need a storage of its own size";
    return "";
  }
  if (l.kind == "expanded") {
    if (auto p = dimsNeeded(1); !p.empty()) return p;
    if (dist.kind == "randperm") return "an expanded randperm input would repeat its distinct values";
    return "";
  }
  if (l.kind == "channels_last") {
    if (!l.dims.empty()) return "a channels_last layout names no dims";
    if (t.rank() != 4 && t.rank() != 5) return fmt::format("channels_last needs rank 4 or 5, not {}", t.rank());
    return "";
  }
  return fmt::format("unknown layout '{}' (contiguous, transposed, strided, expanded or channels_last)", l.kind);
}

std::vector<int64_t> storageShape(const Layout& l, const TensorType& t) {
  std::vector<int64_t> s = t.shape;
  if (l.kind == "transposed") {
    std::swap(s[l.dims[0]], s[l.dims[1]]);
  } else if (l.kind == "strided") {
    int64_t n = s[l.dims[0]];
    s[l.dims[0]] = n == 0 ? l.offset : l.offset + (n - 1) * l.step + 1;
  } else if (l.kind == "expanded") {
    s[l.dims[0]] = 1;
  }
  return s;
}

std::string layoutPython(const Layout& l, const TensorType& t) {
  if (l.kind == "transposed") return fmt::format(".transpose({}, {})", l.dims[0], l.dims[1]);
  if (l.kind == "strided") {
    std::string index;
    for (int d = 0; d < l.dims[0]; ++d) index += ":, ";
    index += (l.offset ? std::to_string(l.offset) : "") + (l.step == 1 ? ":" : fmt::format("::{}", l.step));
    return "[" + index + "]";
  }
  if (l.kind == "expanded") return fmt::format(".expand({})", fmt::join(t.shape, ", "));
  if (l.kind == "channels_last")
    return fmt::format(".contiguous(memory_format=torch.{})", t.rank() == 5 ? "channels_last_3d" : "channels_last");
  return "";
}

bool isNonContiguous(const Layout& l, const TensorType& t) {
  if (l.contiguous() || t.numel() == 0) return false;
  Strided s = geometry(l, t);
  int64_t expected = 1;
  for (size_t i = s.sizes.size(); i-- > 0;) {
    if (s.sizes[i] == 1) continue;
    if (s.strides[i] != expected) return true;
    expected *= s.sizes[i];
  }
  return false;
}

bool hasStorageOffset(const Layout& l, const TensorType& t) { return !l.contiguous() && geometry(l, t).offset != 0; }

std::string describeLayout(const Layout& l) {
  if (l.kind == "transposed") return fmt::format("transposed (dims {}, {})", l.dims[0], l.dims[1]);
  if (l.kind == "strided") return fmt::format("strided (dim {}, step {}, offset {})", l.dims[0], l.step, l.offset);
  if (l.kind == "expanded") return fmt::format("expanded (dim {})", l.dims[0]);
  return l.kind;
}

Layout randomLayout(const TensorType& t, const Distribution& dist, const std::map<std::string, double>& weights, Rng& rng) {
  std::vector<int> wide;  // dims of size > 1
  for (int d = 0; d < t.rank(); ++d)
    if (t.shape[d] > 1) wide.push_back(d);
  std::vector<Layout> fitting;
  std::vector<double> w;
  for (const std::string& kind : layoutKinds()) {
    auto it = weights.find(kind);
    if (it == weights.end() || it->second <= 0) continue;
    Layout l;
    l.kind = kind;
    if (kind == "transposed") {
      if (wide.size() < 2) continue;
      int a = rng.pick(wide), b = a;
      while (b == a) b = rng.pick(wide);
      l.dims = {std::min(a, b), std::max(a, b)};
    } else if (kind == "strided") {
      if (t.rank() == 0) continue;
      l.dims = {wide.empty() ? 0 : rng.pick(wide)};
      l.step = rng.uniform(1, 3);
      l.offset = l.step == 1 ? rng.uniform(1, 2) : rng.uniform(0, 2);
    } else if (kind == "expanded") {
      if (wide.empty()) continue;
      l.dims = {rng.pick(wide)};
    }
    if (!layoutProblem(l, t, dist).empty() || !(isNonContiguous(l, t) || hasStorageOffset(l, t))) continue;
    fitting.push_back(std::move(l));
    w.push_back(it->second);
  }
  if (fitting.empty()) return {};
  return fitting[rng.weighted(w)];
}

bool readByDenseInputOp(const Graph& g, const OpCatalog& catalog, int value) {
  // Values computed from `value` (nodes come in topological order).
  std::vector<bool> derived(g.values.size(), false);
  derived.at(static_cast<size_t>(value)) = true;
  for (const Node& n : g.nodes) {
    if (n.inputs.empty()) continue;
    if (const OpSpec* op = catalog.find(n.op); op && op->denseInput && derived.at(static_cast<size_t>(n.inputs[0]))) return true;
    bool fromValue = std::any_of(n.inputs.begin(), n.inputs.end(), [&](int in) { return derived.at(static_cast<size_t>(in)); });
    for (int out : n.outputs) derived.at(static_cast<size_t>(out)) = derived.at(static_cast<size_t>(out)) || fromValue;
  }
  return false;
}

int viewBaseOf(const Graph& g, const OpCatalog& catalog, int value) {
  for (int producer = g.producerOf(value); producer >= 0; producer = g.producerOf(value)) {
    const Node& n = g.nodes[static_cast<size_t>(producer)];
    const OpSpec* op = catalog.find(n.op);
    if (!op || !op->view || n.inputs.empty()) break;
    value = n.inputs[0];
  }
  return value;
}

Geometry inputGeometry(const Layout& layout, const TensorType& t) {
  if (layout.contiguous() || !layoutProblem(layout, t, {}).empty()) return contiguousGeometry(t.shape);
  Strided s = geometry(layout, t);
  return {s.strides, s.offset};
}

std::vector<std::optional<Geometry>> valueGeometries(const Graph& g, const OpCatalog& catalog) {
  std::map<int, std::optional<Geometry>> known;
  for (const Source& s : g.params) known[s.value] = contiguousGeometry(g.typeOf(s.value).shape);
  for (const Source& s : g.inputs) known[s.value] = sourceGeometry(g, s);
  auto contiguousValue = [&](int v) {
    auto it = known.find(v);
    return it != known.end() && it->second && isContiguous(g.typeOf(v).shape, it->second->strides);
  };
  for (const Node& n : g.nodes) {
    const OpSpec* op = catalog.find(n.op);
    std::vector<std::optional<Geometry>> out(n.outputs.size());
    auto fresh = [&] {
      for (size_t k = 0; k < n.outputs.size(); ++k) out[k] = contiguousGeometry(g.typeOf(n.outputs[k]).shape);
    };
    if (!op || n.inputs.empty()) {
      // unknown op: nothing known
    } else if (op->strides) {
      auto in0 = known.find(n.inputs[0]);
      if (in0 != known.end() && in0->second) {
        OpContext ctx;
        for (int v : n.inputs) ctx.in.push_back(g.typeOf(v));
        ctx.attrs = n.attrs;
        std::vector<TensorType> outs;
        for (int v : n.outputs) outs.push_back(g.typeOf(v));
        try {
          if (auto rule = op->strides(ctx, *in0->second, outs)) {
            for (size_t k = 0; k < out.size() && k < rule->size(); ++k) out[k] = (*rule)[k];
          } else if (!viewRaisesInstead(*op)) {
            fresh();
          }
        } catch (const std::exception&) {  // a node its own rules reject: nothing known
        }
      }
    } else if (op->inplace && !op->view) {
      // The result is input 0 or its clone, which keeps a row-major layout.
      if (contiguousValue(n.inputs[0])) fresh();
    } else if (!op->view && !op->stridedOutput && std::all_of(n.inputs.begin(), n.inputs.end(), contiguousValue)) {
      fresh();
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) known[n.outputs[k]] = out[k];
  }
  std::vector<std::optional<Geometry>> byValue(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) {
    auto it = known.find(g.values[i].id);
    if (it != known.end()) byValue[i] = it->second;
  }
  return byValue;
}

bool viewRaisesInstead(const OpSpec& op) { return op.name == "view"; }

bool provablyContiguous(const Graph& g, const OpCatalog& catalog, int value) {
  auto geometries = valueGeometries(g, catalog);
  for (size_t i = 0; i < g.values.size(); ++i)
    if (g.values[i].id == value) return geometries[i] && isContiguous(g.values[i].type.shape, geometries[i]->strides);
  return false;
}

int repairIllegalViews(Graph& g, const OpCatalog& catalog) {
  int changed = 0;
  auto geometries = valueGeometries(g, catalog);
  std::map<int, size_t> index;
  for (size_t i = 0; i < g.values.size(); ++i) index[g.values[i].id] = i;
  for (Node& n : g.nodes) {
    if (n.op != "view" || n.inputs.empty() || n.outputs.empty()) continue;
    const auto& in = geometries[index.at(n.inputs[0])];
    if (in && viewStrides(g.typeOf(n.inputs[0]).shape, in->strides, g.typeOf(n.outputs[0]).shape)) continue;
    n.op = "reshape";
    ++changed;
    geometries = valueGeometries(g, catalog);  // what this node's readers see has changed
  }
  // An op that needs a dense input 0 (OpSpec::denseInput) reading a node's value laid out otherwise (a
  // transpose, a step slice) reads a .contiguous() copy of it instead. Program inputs keep their own rule
  // (no layout, no alias but a row-major one), and values whose strides are unknown stay as they are.
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const OpSpec* op = catalog.find(g.nodes[i].op);
    if (!op || !op->denseInput || g.nodes[i].inputs.empty() || g.producerOf(g.nodes[i].inputs[0]) < 0) continue;
    int in0 = g.nodes[i].inputs[0];
    const auto& in = geometries[index.at(in0)];
    if (!in || isContiguous(g.typeOf(in0).shape, in->strides)) continue;
    int dense = g.addValue(g.typeOf(in0));
    index[dense] = g.values.size() - 1;
    g.nodes[i].inputs[0] = dense;
    g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i), Node{"contiguous", {in0}, {dense}});
    ++changed;
    geometries = valueGeometries(g, catalog);
  }
  return changed;
}

int dropInvalidLayouts(Graph& g) {
  int reset = 0;
  for (Source& s : g.inputs) {
    if (!s.layout.contiguous() && !layoutProblem(s.layout, g.typeOf(s.value), s.dist).empty()) {
      s.layout = {};
      ++reset;
    }
    if (!s.boundary.empty() && !boundaryProblem(s.boundary, g.typeOf(s.value), s.dist).empty()) {
      s.boundary = {};
      ++reset;
    }
  }
  for (Source& s : g.params)
    if (!s.layout.contiguous() || !s.boundary.empty()) {
      s.layout = {};
      s.boundary = {};
      ++reset;
    }
  return reset;
}

const std::vector<std::string>& boundaryKinds() {
  static const std::vector<std::string> kinds{"signed_zero", "denormal", "tiny", "ties", "extremes", "nonfinite", "int_limits"};
  return kinds;
}

std::string boundaryProblem(const BoundaryValues& b, const TensorType& t, const Distribution& dist) {
  if (b.empty()) return "";
  for (const std::string& k : b.kinds)
    if (std::find(boundaryKinds().begin(), boundaryKinds().end(), k) == boundaryKinds().end())
      return fmt::format("unknown boundary value kind '{}' ({})", k, fmt::join(boundaryKinds(), ", "));
  if (!(b.share > 0 && b.share <= 1)) return fmt::format("share {} is outside (0, 1]", b.share);
  bool integer = std::find(b.kinds.begin(), b.kinds.end(), "int_limits") != b.kinds.end();
  if (integer) {
    if (b.kinds.size() != 1 || !isInt(t.dtype)) return "int_limits stands alone, on an int32 or int64 input";
    if (dist.kind != "randint" || dist.low > -4 || dist.high < 4)
      return "the input is drawn for an op's value domain (an index); its dtype's limits would leave it";
    return "";
  }
  if (!isFloat(t.dtype) && !isComplex(t.dtype))
    return fmt::format("boundary values need a floating or complex input, not {}", dtypeName(t.dtype));
  if (dist.kind != "uniform" || dist.low > -1 || dist.high < 1)
    return "the input is drawn for an op's value domain; boundary values would leave it";
  return "";
}

BoundaryValues randomBoundary(const TensorType& t, const Distribution& dist, const std::map<std::string, double>& weights,
                              Rng& rng) {
  std::vector<std::string> kinds;
  std::vector<double> w;
  for (const std::string& k : boundaryKinds())
    if (auto it = weights.find(k); it != weights.end() && it->second > 0 && (k == "int_limits") == isInt(t.dtype)) {
      kinds.push_back(k);
      w.push_back(it->second);
    }
  BoundaryValues b;
  if (kinds.empty()) return b;
  b.kinds.push_back(kinds[rng.weighted(w)]);
  if (rng.chance(0.3)) {
    std::string second = kinds[rng.weighted(w)];
    if (second != b.kinds[0]) b.kinds.push_back(second);
  }
  b.share = rng.pick(std::vector<double>{0.1, 0.25, 0.5});
  if (!boundaryProblem(b, t, dist).empty()) return {};
  return b;
}

const char* boundaryValuesHelper() {
  return R"PY(def boundary_values(x, g, share, kinds):
    """tcfuzz's boundary-value inputs: "ties" rounds x to quarters, then `share` of its elements become
    values of the other kinds (-0.0, denormals, the smallest normal, +-max, +-inf and NaN; for an
    integer input, its dtype's limits and their neighbours). In a complex input each such value lands in
    the real part, the imaginary part or both, the other part kept (inf+2j, 0.5-infj, nan+nanj)."""
    if not x.is_floating_point() and not x.is_complex():
        info = torch.iinfo(x.dtype)
        values = torch.tensor([info.max, info.min, info.max - 1, info.min + 1], dtype=torch.int64).to(x.dtype)
    else:
        info = torch.finfo(x.dtype)  # a complex dtype's: its parts'
        if "ties" in kinds:
            x = torch.complex((x.real * 4).round() / 4, (x.imag * 4).round() / 4) if x.is_complex() else (x * 4).round() / 4
        table = {"signed_zero": [-0.0], "denormal": [info.tiny / 4, -info.tiny / 2], "tiny": [info.tiny, -info.tiny],
                 "extremes": [info.max, -info.max], "nonfinite": [float("inf"), float("-inf"), float("nan")]}
        values = torch.tensor([v for kind in kinds for v in table.get(kind, [])], dtype=torch.float64).to(x.real.dtype)
    if values.numel() == 0:
        return x
    keep = torch.rand(x.shape, generator=g, dtype=torch.float64) >= share
    pick = torch.randint(values.numel(), x.shape, generator=g)
    if x.is_complex():
        part = torch.randint(3, x.shape, generator=g)  # 0: the real part, 1: the imaginary part, 2: both
        return torch.complex(torch.where(keep | (part == 1), x.real, values[pick]),
                             torch.where(keep | (part == 0), x.imag, values[pick]))
    return torch.where(keep, x, values[pick])
)PY";
}

json boundaryToJson(const BoundaryValues& b) { return {{"kinds", b.kinds}, {"share", b.share}}; }

BoundaryValues boundaryFromJson(const json& doc) {
  if (!doc.is_object() || !doc.contains("kinds") || !doc["kinds"].is_array() || !doc.contains("share") ||
      !doc["share"].is_number())
    throw std::invalid_argument(R"(boundary values are an object {"kinds": [names], "share": number})");
  BoundaryValues b;
  for (const auto& k : doc["kinds"]) {
    if (!k.is_string()) throw std::invalid_argument("boundary value kinds are strings");
    b.kinds.push_back(k.get<std::string>());
  }
  if (b.kinds.empty()) throw std::invalid_argument("boundary values name at least one kind");
  b.share = doc["share"].get<double>();
  for (const auto& [key, _] : doc.items())
    if (key != "kinds" && key != "share") throw std::invalid_argument(fmt::format("boundary values have no field '{}'", key));
  return b;
}

json layoutToJson(const Layout& l) {
  json doc{{"kind", l.kind}};
  if (l.kind == "transposed") doc["dims"] = l.dims;
  if (l.kind == "strided") doc.update({{"dim", l.dims.at(0)}, {"step", l.step}, {"offset", l.offset}});
  if (l.kind == "expanded") doc["dim"] = l.dims.at(0);
  return doc;
}

Layout layoutFromJson(const json& doc) {
  if (!doc.is_object() || !doc.contains("kind") || !doc["kind"].is_string())
    throw std::invalid_argument("a layout is an object with a string 'kind'");
  Layout l;
  l.kind = doc["kind"].get<std::string>();
  std::vector<std::string> allowed{"kind"};
  auto integer = [&](const char* key) -> int64_t {
    allowed.push_back(key);
    if (!doc.contains(key) || !doc[key].is_number_integer())
      throw std::invalid_argument(fmt::format("a {} layout needs an integer '{}'", l.kind, key));
    return doc[key].get<int64_t>();
  };
  if (l.kind == "transposed") {
    allowed.push_back("dims");
    if (!doc.contains("dims") || !doc["dims"].is_array() || doc["dims"].size() != 2 || !doc["dims"][0].is_number_integer() ||
        !doc["dims"][1].is_number_integer())
      throw std::invalid_argument("a transposed layout needs 'dims': two integers");
    l.dims = {doc["dims"][0].get<int>(), doc["dims"][1].get<int>()};
  } else if (l.kind == "strided") {
    l.dims = {static_cast<int>(integer("dim"))};
    l.step = integer("step");
    l.offset = integer("offset");
  } else if (l.kind == "expanded") {
    l.dims = {static_cast<int>(integer("dim"))};
  }
  for (const auto& [key, _] : doc.items())
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      throw std::invalid_argument(fmt::format("a {} layout has no field '{}'", l.kind, key));
  return l;
}

}  // namespace tcfuzz::gen
