#include "generators/features/Idioms.h"

#include <fmt/format.h>

namespace tcfuzz::gen {

using nlohmann::json;

const std::vector<Idiom>& idioms() {
  static const std::vector<Idiom> table{
      // softmax(x @ x^T / d) @ x: attention written out (Inductor's SDPA pattern matcher looks for it).
      {"attention",
       2,
       4,
       {{{"transpose"}, {"x"}, {{"dim0", -2}, {"dim1", -1}}},
        {{"matmul"}, {"x", "s0"}, {}},
        {{"div", "mul"}, {"s1"}, {}},
        {{"softmax"}, {"s2"}, {{"dim", -1}}},
        {{"matmul"}, {"s3", "x"}, {}}}},
      // The fused kernel itself, self-attention and with fresh keys and values.
      {"sdpa", 2, 4, {{{"sdpa"}, {"x", "x", "x"}, {}}, {{"sdpa"}, {"s0"}, {}}}},
      // (x @ W1)^T ... a chain of products with a transpose between them.
      {"matmul_chain",
       2,
       3,
       {{{"matmul"}, {"x"}, {}}, {{"transpose"}, {"s0"}, {{"dim0", -2}, {"dim1", -1}}}, {{"matmul"}, {"s1"}, {}}}},
      // A normalization followed by its activation.
      {"norm_activation", 2, 4, {{{"nn_layer_norm", "nn_group_norm"}, {"x"}, {}}, {{"gelu", "relu", "silu", "tanh"}, {"s0"}, {}}}},
      // Pointwise ops feeding a reduction (a fused reduction kernel).
      {"reduce_after_pointwise",
       1,
       4,
       {{{"mul", "add", "sub"}, {"x"}, {}},
        {{"exp", "sigmoid", "tanh", "abs"}, {"s0"}, {}},
        {{"sum", "amax", "mean", "amin"}, {"s1"}, {}}}},
      // A concatenation read through an index.
      {"cat_then_index", 1, 4, {{{"cat", "stack"}, {"x", "x"}, {}}, {{"index_select", "narrow"}, {"s0"}, {}}}},
  };
  return table;
}

const Idiom* findIdiom(const std::string& name) {
  for (const Idiom& i : idioms())
    if (i.name == name) return &i;
  return nullptr;
}

int appendIdiom(const Idiom& idiom, int x, Graph& g, GraphRepairer& repairer, const OpCatalog& catalog,
                const ShapeCaps& caps, Rng& rng) {
  std::vector<int> outs;
  for (const IdiomStep& step : idiom.steps) {
    const OpSpec* op = catalog.find(rng.pick(step.ops));
    if (!op) return static_cast<int>(outs.size());
    Node node;
    node.op = op->name;
    for (const std::string& ref : step.inputs) node.inputs.push_back(ref == "x" ? x : outs.at(std::stoul(ref.substr(1))));
    OpContext ctx;
    for (int in : node.inputs) {
      ctx.in.push_back(g.typeOf(in));
      ctx.ranges.push_back(repairer.rangeOf(in));
    }
    ctx.caps = &caps;
    sampleAttrs(*op, ctx, rng);
    for (const auto& [k, v] : step.attrs.items()) ctx.attrs[k] = v;
    node.attrs = ctx.attrs;
    if (!repairer.append(std::move(node))) break;
    outs.push_back(g.nodes.back().outputs.at(0));
  }
  return static_cast<int>(outs.size());
}

}  // namespace tcfuzz::gen
