#include "generators/features/InputWrites.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "generators/features/InputLayout.h"

namespace tcfuzz::gen {

namespace {

const Source* programInput(const Graph& g, int value) {
  auto it = std::find_if(g.inputs.begin(), g.inputs.end(), [&](const Source& s) { return s.value == value; });
  return it == g.inputs.end() ? nullptr : &*it;
}

/// A value in [lo, hi] on a grid of quarters when one lies there (exact in every floating dtype); never -0.0,
/// whose sign a fill would carry into the program as a signed-zero case nobody asked for.
double valueWithin(Interval r, Rng& rng) {
  double v = rng.real(r.lo, r.hi);
  double quarter = std::round(v * 4) / 4 + 0.0;
  return quarter >= r.lo && quarter <= r.hi ? quarter : v;
}

/// A program input name no input or parameter has.
std::string freshInputName(const Graph& g) {
  auto taken = [&](const std::string& name) {
    auto same = [&](const Source& s) { return s.name == name; };
    return std::any_of(g.inputs.begin(), g.inputs.end(), same) || std::any_of(g.params.begin(), g.params.end(), same);
  };
  std::string name = fmt::format("x{}", g.inputs.size());
  while (taken(name)) name += "_";
  return name;
}

/// Puts a fill of input `value` first; every reader of the input reads the fill's output instead.
void fillInputFirst(Graph& g, const OpCatalog& catalog, const std::vector<std::string>& allowed, int value, Rng& rng) {
  const TensorType type = g.typeOf(value);
  Interval range = programInput(g, value)->dist.range();
  Interval values{std::max(range.lo, -3.0), std::min(range.hi, 3.0)};  // the catalog's value attribute range
  auto allows = [&](const std::string& op) { return std::find(allowed.begin(), allowed.end(), op) != allowed.end(); };
  std::vector<std::string> ops;
  if (values.lo <= values.hi)
    for (const char* op : {"masked_fill_", "masked_fill_", "fill_"})
      if (allows(op)) ops.push_back(op);
  if (range.lo <= 0 && range.hi >= 0 && allows("zero_")) ops.push_back("zero_");
  if (ops.empty()) return;
  Node fill;
  fill.op = rng.pick(ops);
  if (!catalog.find(fill.op)) return;
  fill.writesInput = true;
  fill.inputs = {value};
  if (fill.op != "zero_") fill.attrs["value"] = valueWithin(values, rng);
  if (fill.op == "masked_fill_") {
    Source mask;
    mask.value = g.addValue(TensorType{type.shape, DType::Bool, type.device});
    mask.name = freshInputName(g);
    mask.dist = {"bernoulli", 0, 1, 0.5};
    g.inputs.push_back(mask);
    fill.inputs.push_back(mask.value);
  }
  int filled = g.addValue(type);
  fill.outputs = {filled};
  for (Node& n : g.nodes)
    for (int& in : n.inputs)
      if (in == value) in = filled;
  for (int& out : g.outputs)
    if (out == value) out = filled;
  g.nodes.insert(g.nodes.begin(), std::move(fill));
}

}  // namespace

bool writableInPlace(const OpSpec& op, const Layout& layout, const TensorType& t) {
  bool overlapping = layout.kind == "expanded" && isNonContiguous(layout, t);
  return op.inplace && !overlapping;
}

bool canWriteInput(const Graph& g, const OpCatalog& catalog, const Node& n) {
  if (n.inputs.empty()) return false;
  const OpSpec* op = catalog.find(n.op);
  const Source* input = programInput(g, n.inputs[0]);
  if (!op || !input || !writableInPlace(*op, input->layout, g.typeOf(input->value))) return false;
  Node asked = n;
  asked.writesInput = true;
  return writesIntoProgramInput(g, asked);
}

int addInputWrites(Graph& g, const OpCatalog& catalog, const InputWriteChances& chances, Rng& rng) {
  for (Node& n : g.nodes)
    if (!n.writesInput && canWriteInput(g, catalog, n) && rng.chance(chances.write)) n.writesInput = true;
  if (rng.chance(chances.fill)) {
    std::vector<int> fillable, written = writtenInputPositions(g);
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      const Source& s = g.inputs[i];
      const TensorType& t = g.typeOf(s.value);
      if (isFloat(t.dtype) && t.rank() >= 1 && s.dist.kind == "uniform" && g.useCount(s.value) > 0 &&
          std::find(written.begin(), written.end(), static_cast<int>(i)) == written.end() &&
          writableInPlace(catalog.at("fill_"), s.layout, t))
        fillable.push_back(s.value);
    }
    if (!fillable.empty()) {
      size_t before = g.nodes.size();
      fillInputFirst(g, catalog, chances.fillOps, rng.pick(fillable), rng);
      if (g.nodes.size() > before) g = sourcesFirst(g);
    }
  }
  return static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return writesIntoProgramInput(g, n); }));
}

}  // namespace tcfuzz::gen
