#include "generators/python/HigherOrderOps.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "generators/python/PythonEmitter.h"

namespace tcfuzz::gen {

namespace {

const std::vector<HopKind> kKinds{
    // name, global, binding, floatingHead, mapsOperand, gradOperand, predicate
    {"cond", "cond", "torch.cond", false, false, false, true},
    {"map", "hop_map", "torch._higher_order_ops.map", false, true, false, false},
    {"while_loop", "while_loop", "torch._higher_order_ops.while_loop", true, false, false, false},
    {"scan", "scan", "torch._higher_order_ops.scan", true, true, false, false},
    {"checkpoint", "checkpoint", "torch.utils.checkpoint.checkpoint", false, false, false, false},
    {"nested_compile_region", "nested_compile_region", "torch.compiler.nested_compile_region", false, false, false,
     false},
    {"vmap", "vmap", "torch.func.vmap", false, true, false, false},
    {"grad", "grad", "torch.func.grad", true, false, true, false},
    {"autograd_function", "RegionFunction", "", false, false, false, false},
    {"associative_scan", "associative_scan", "torch._higher_order_ops.associative_scan", true, false, false, false, false,
     false, true},
    {"jvp", "jvp", "torch.func.jvp", true, false, false, false, true},
    {"vjp", "vjp", "torch.func.vjp", true, false, true, false},
    {"jacrev", "jacrev", "torch.func.jacrev", true, false, false, false, true, true},
    {"jacfwd", "jacfwd", "torch.func.jacfwd", true, false, false, false, true, true},
    {"flex_attention", "flex_attention", "torch.nn.attention.flex_attention.flex_attention", true, false, false, false,
     false, false, false, true},
    {"functional_call", "functional_call", "torch.func.functional_call", false, false, false, false},
};

/// flex_attention's score_mod and mask_mod bodies, drawn by the head's position. Every mask keeps the diagonal, so
/// no query row is masked whole. Each mask is written two ways: equivalent formulations must give the same block
/// mask, and each is judged against the dense masked softmax of its own mask.
const char* const kScoreMods[] = {"score", "score * 0.5", "score + (q_idx - kv_idx) * 0.125",
                                  "torch.where(q_idx >= kv_idx, score, score - 1.0)"};
const char* const kMaskMods[] = {"q_idx >= kv_idx",
                                 "(q_idx - kv_idx).abs() <= 3",
                                 "q_idx >= 0",
                                 "(kv_idx % 2 == 0) | (q_idx == kv_idx)",
                                 "~(kv_idx > q_idx)",
                                 "(kv_idx <= q_idx + 3) & (q_idx <= kv_idx + 3)",
                                 "q_idx == q_idx",
                                 "((kv_idx & 1) == 0) | ((q_idx - kv_idx) == 0)"};
/// flex_attention's block size on CPU and CUDA: an aligned sequence is a multiple of it.
constexpr int kFlexBlock = 128;

/// A gradient may come back expanded (the gradient of a sum): made fresh and contiguous, as the head's op made it.
constexpr const char* kFresh = ".clone(memory_format=torch.contiguous_format)";

/// The most elements a Jacobian region may build (the head's times the operand's).
constexpr int64_t kJacobianElements = 4096;

/// The custom autograd.Functions the "autograd_function" regions run, one by the head's position (an in-place one
/// only for a floating head): plain Python, so each is its own reference.
constexpr std::string_view kRegionFunctions = R"(class RegionFunction(torch.autograd.Function):
    """A custom autograd.Function around a region: forward runs the region's function on its operands and saves
    them; backward gives each floating operand the output gradient's mean times the operand's cosine."""

    @staticmethod
    def forward(ctx, fn, *operands):
        ctx.save_for_backward(*operands)
        return fn(*operands)

    @staticmethod
    def backward(ctx, grad):
        return (None,) + tuple(grad.mean() * t.cos() if t.is_floating_point() else None for t in ctx.saved_tensors)


class RegionSplitFunction(torch.autograd.Function):
    """The setup_context style: forward (no ctx) also returns where the region's output is nonzero, which
    setup_context marks non-differentiable; backward gives each floating operand the gradient's sum times its sine."""

    @staticmethod
    def forward(fn, *operands):
        out = fn(*operands)
        return out, out != 0

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output[1])
        ctx.save_for_backward(*inputs[1:])

    @staticmethod
    def backward(ctx, grad, _):
        return (None,) + tuple(grad.sum() * t.sin() if t.is_floating_point() else None for t in ctx.saved_tensors)


class RegionDoubleFunction(torch.autograd.Function):
    """An in-place forward: doubles its operand where it lies and marks it dirty; backward doubles the gradient."""

    @staticmethod
    def forward(ctx, t):
        t.mul_(2)
        ctx.mark_dirty(t)
        return t

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


)";

/// The module the "functional_call" regions call: functional_call passes its buffer `scale` as 1, so a call that
/// kept the module's own 3 is seen.
constexpr std::string_view kRegionModule = R"(class RegionModule(nn.Module):
    """Runs a region's function and scales its output by the buffer `scale`."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.tensor(3.0))

    def forward(self, fn, *operands):
        out = fn(*operands)
        return out * self.scale.to(out.dtype)


region_module = RegionModule()


)";
/// Ops that write module state in forward (a buffer, a parameter through .data).
bool writesModuleState(const OpSpec& op) {
  return op.family == "buffer-update" || op.family == "param-data" || op.init.find("BatchNorm") != std::string::npos;
}

/// Whether node `i` may be in a body at all: a functional op that draws nothing, writes nothing and calls no
/// submodule. A submodule call runs module hooks (a program's global hook records each call), and how often a body
/// runs is the op's own business: vmap runs it once on the batch, its Python meaning once per element.
bool functional(const Graph& g, const OpCatalog& catalog, size_t i) {
  const Node& n = g.nodes[i];
  const OpSpec* op = catalog.find(n.op);
  return op && !op->random && !op->inplace && !n.writesInput && !writesModuleState(*op) && op->init.empty() &&
         !n.outputs.empty();
}

/// Whether node `i` writes anything in place (an input, a view's base, module state).
bool writes(const Graph& g, const OpCatalog& catalog, size_t i) {
  const OpSpec* op = catalog.find(g.nodes[i].op);
  return !op || op->inplace || g.nodes[i].writesInput || writesModuleState(*op);
}

bool isParam(const Graph& g, int v) {
  return std::any_of(g.params.begin(), g.params.end(), [v](const Source& s) { return s.value == v; });
}

bool isOutput(const Graph& g, int v) { return std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end(); }

std::string floatText(double v) { return pythonLiteral(nlohmann::json(v), AttrKind::Float); }

}  // namespace

const std::vector<HopKind>& hopKinds() { return kKinds; }

const HopKind& hopKind(const std::string& name) {
  for (const HopKind& k : kKinds)
    if (k.name == name) return k;
  throw std::invalid_argument("unknown higher-order op '" + name + "'");
}

std::optional<HopRegion> hopRegionOf(const Graph& g, const OpCatalog& catalog, size_t head, const HopConstruct& hop,
                                     const std::vector<NodePython>& python) {
  const auto& names = hopKindNames();
  if (std::find(names.begin(), names.end(), hop.kind) == names.end() || head >= g.nodes.size()) return std::nullopt;
  const HopKind& kind = hopKind(hop.kind);
  const Node& h = g.nodes[head];
  const OpSpec* op = catalog.find(h.op);
  if (!op || !functional(g, catalog, head) || op->view || op->tupleResult || op->stridedOutput || h.outputs.size() != 1 ||
      python[head].branch)
    return std::nullopt;
  const TensorType& out = g.typeOf(h.outputs[0]);
  if (kind.floatingHead && !isFloat(out.dtype)) return std::nullopt;
  if (kind.scansDim0 && (out.rank() == 0 || out.shape[0] < 1)) return std::nullopt;
  if (kind.attention && (out.rank() != 4 || out.dtype != DType::Float32 || out.numel() == 0)) return std::nullopt;

  // The body: the head, then each earlier functional node with no construct whose outputs only the body reads.
  std::vector<bool> inRegion(g.nodes.size(), false);
  inRegion[head] = true;
  for (size_t j = head; j-- > 0;) {
    const Node& n = g.nodes[j];
    if (!functional(g, catalog, j) || !python[j].empty()) continue;
    bool onlyBody = true, read = false;
    for (int v : n.outputs) {
      if (isOutput(g, v)) onlyBody = false;
      for (size_t k = j + 1; k < g.nodes.size() && onlyBody; ++k)
        if (std::find(g.nodes[k].inputs.begin(), g.nodes[k].inputs.end(), v) != g.nodes[k].inputs.end()) {
          if (!inRegion[k]) onlyBody = false;
          read = true;
        }
    }
    if (onlyBody && read) inRegion[j] = true;
  }
  HopRegion r{hop.kind, head, {}, {}, -1, hop.threshold};
  for (size_t j = 0; j <= head; ++j)
    if (inRegion[j]) r.nodes.push_back(j);
  // The body runs where the head was: nothing between its first node and the head may write what it reads.
  for (size_t j = r.nodes.front(); j < head; ++j)
    if (!inRegion[j] && writes(g, catalog, j)) return std::nullopt;

  std::vector<int> operands;
  for (size_t j : r.nodes)
    for (int v : g.nodes[j].inputs) {
      int producer = g.producerOf(v);
      if ((producer >= 0 && inRegion[static_cast<size_t>(producer)]) || isParam(g, v)) continue;
      if (std::find(operands.begin(), operands.end(), v) == operands.end()) operands.push_back(v);
    }
  // The operand the op maps over or differentiates comes first.
  if (kind.mapsOperand || kind.gradOperand || kind.floatingOperand) {
    auto first = std::find_if(operands.begin(), operands.end(), [&](int v) {
      const TensorType& t = g.typeOf(v);
      if (kind.gradOperand) return t == out && isFloat(out.dtype);
      if (kind.floatingOperand) return isFloat(t.dtype) && (!kind.jacobian || t.numel() * out.numel() <= kJacobianElements);
      return true;
    });
    if (first == operands.end()) return std::nullopt;
    std::rotate(operands.begin(), first, first + 1);
  }
  r.operands = operands;
  if (kind.predicate) {
    if (hop.input < 0 || hop.input >= static_cast<int>(g.inputs.size())) return std::nullopt;
    std::vector<int> written = writtenInputPositions(g);
    if (std::find(written.begin(), written.end(), hop.input) != written.end()) return std::nullopt;
    int v = g.inputs[static_cast<size_t>(hop.input)].value;
    if (isComplex(g.typeOf(v).dtype) || g.typeOf(v).numel() == 0) return std::nullopt;
    r.predicateInput = v;
  }
  return r;
}

double exactThreshold(const Distribution& d, Rng& rng) {
  if (d.kind == "bernoulli") return 0;
  double t = d.low + (d.high - d.low) * rng.real(0.25, 0.75);
  if (d.kind != "uniform") return std::floor(t) + 0.5;
  return std::round(t * 8) / 8;
}

bool addHopConstruct(Graph& g, const OpCatalog& catalog, double chance, Rng& rng) {
  if (g.nodes.empty() || !rng.chance(chance)) return false;
  std::vector<NodePython> python;
  for (const Node& n : g.nodes) python.push_back(n.python);
  HopConstruct hop;
  // The higher-order ops weigh twice what each torch.func transform or the autograd.Function does.
  std::vector<double> kindWeights;
  for (const HopKind& k : kKinds)
    kindWeights.push_back(k.name == "autograd_function" || k.binding.starts_with("torch.func.") ? 1 : 2);
  hop.kind = std::string(kKinds[rng.weighted(kindWeights)].name);
  std::vector<size_t> heads;
  std::vector<double> weights;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (python[i].hop) continue;
    // A body of one node is a region too, but a larger one gives the op more to trace: weight by size squared.
    if (std::optional<HopRegion> r = hopRegionOf(g, catalog, i, hop, python)) {
      heads.push_back(i);
      weights.push_back(static_cast<double>(r->nodes.size() * r->nodes.size()));
    }
  }
  if (heads.empty()) return false;
  size_t head = heads[rng.weighted(weights)];
  if (hopKind(hop.kind).predicate) {
    std::vector<int> written = writtenInputPositions(g), choices;
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      const TensorType& t = g.typeOf(g.inputs[k].value);
      if (!isComplex(t.dtype) && t.numel() > 0 && std::find(written.begin(), written.end(), k) == written.end())
        choices.push_back(static_cast<int>(k));
    }
    if (choices.empty()) return false;
    hop.input = rng.pick(choices);
    hop.threshold = exactThreshold(g.inputs[static_cast<size_t>(hop.input)].dist, rng);
  }
  g.nodes[head].python.hop = hop;
  return true;
}

std::string hopRegionText(const Graph& g, const HopRegion& r, const std::vector<std::string>& names,
                          const std::string& bodyLines) {
  const HopKind& kind = hopKind(r.kind);
  std::string fn = fmt::format("hop{}", r.head);
  std::vector<std::string> params;
  for (int v : r.operands) params.push_back(names[static_cast<size_t>(v)]);
  std::string args = fmt::format("{}", fmt::join(params, ", "));
  const std::string& out = names[static_cast<size_t>(g.nodes[r.head].outputs[0])];
  std::ostringstream body;
  body << fmt::format("        def {}({}):  # a region of {} node(s), run by {}\n", fn, args, r.nodes.size(), kind.name);
  std::istringstream lines(bodyLines);
  for (std::string line; std::getline(lines, line);) body << "    " << line << "\n";
  body << fmt::format("            return {}.clone(memory_format=torch.contiguous_format)\n", out);
  std::string first = params.empty() ? "" : params[0];
  std::string rest;
  for (size_t k = 1; k < params.size(); ++k) rest += ", " + params[k];
  std::string stacked = fmt::format("torch.stack([{0}, {0}])", first);
  if (kind.name == "cond") {
    std::string x = names[static_cast<size_t>(r.predicateInput)];
    std::string pred = g.typeOf(r.predicateInput).dtype == DType::Bool
                           ? fmt::format("{}.flatten()[0]", x)
                           : fmt::format("{}.flatten()[0] > {}", x, floatText(r.threshold));
    body << fmt::format("        def {0}_else({1}):  # the other branch: the same output rolled by one element\n"
                        "            hop_r = {0}({1})\n"
                        "            return hop_r.flatten().roll(1).reshape(hop_r.shape)\n"
                        "        {2} = cond({3}, {0}, {0}_else, ({1}{4}))\n",
                        fn, args, out, pred, params.size() == 1 ? "," : "");
  } else if (kind.name == "map") {
    body << fmt::format("        {} = hop_map({}, {}{})[0]\n", out, fn, stacked, rest);
  } else if (kind.name == "while_loop") {
    body << fmt::format("        def {0}_cond(hop_i, hop_acc):\n            return hop_i < 2\n"
                        "        def {0}_step(hop_i, hop_acc):\n            return hop_i + 1, hop_acc * 0.5 + {0}({1})\n"
                        "        {2} = while_loop({0}_cond, {0}_step, (torch.zeros((), dtype=torch.int64), {0}({1})))[1]\n",
                        fn, args, out);
  } else if (kind.name == "scan") {
    body << fmt::format("        def {0}_step(hop_carry, {4}):  # a slice of the stacked first operand\n"
                        "            hop_y = {0}({1})\n"
                        "            return hop_carry + hop_y, hop_y.clone()\n"
                        "        {2} = scan({0}_step, {0}({1}), {3})[0]\n",
                        fn, args, out, stacked, first);
  } else if (kind.name == "checkpoint") {
    body << fmt::format("        {} = checkpoint({}{}{}, use_reentrant=False)\n", out, fn, params.empty() ? "" : ", ", args);
  } else if (kind.name == "nested_compile_region") {
    body << fmt::format("        {} = nested_compile_region({})({})\n", out, fn, args);
  } else if (kind.name == "vmap") {
    std::string dims = "0";
    for (size_t k = 1; k < params.size(); ++k) dims += ", None";
    body << fmt::format("        {} = vmap({}, in_dims=({}{}))({}{})[0]\n", out, fn, dims, params.size() == 1 ? "," : "",
                        stacked, rest);
  } else if (kind.name == "associative_scan") {
    // The combine function is associative: a sum, a maximum or a minimum, by the head's position.
    const char* combine[] = {"lambda hop_a, hop_b: hop_a + hop_b", "torch.maximum", "torch.minimum"};
    body << fmt::format("        {} = associative_scan({}, {}({}), 0, combine_mode=\"generic\")\n", out, combine[r.head % 3],
                        fn, args);
  } else if (kind.name == "jvp") {
    body << fmt::format("        {0} = jvp(lambda {1}: {2}({3}), ({1},), (torch.ones_like({1}),))[1]{4}\n", out, first, fn, args,
                        kFresh);
  } else if (kind.name == "vjp") {
    body << fmt::format("        hop_out, hop_pullback = vjp(lambda {1}: {2}({3}), {1})\n"
                        "        {0} = hop_pullback(torch.ones_like(hop_out))[0]{4}\n",
                        out, first, fn, args, kFresh);
  } else if (kind.name == "jacrev" || kind.name == "jacfwd") {
    // The Jacobian has the head's dims, then the operand's: summed over the operand's, it has the head's type.
    int headRank = g.typeOf(g.nodes[r.head].outputs[0]).rank(), operandRank = g.typeOf(r.operands[0]).rank();
    std::vector<int> dims;
    for (int d = headRank; d < headRank + operandRank; ++d) dims.push_back(d);
    std::string sum = dims.empty() ? "" : fmt::format(".sum(dim=({}{}))", fmt::join(dims, ", "), dims.size() == 1 ? "," : "");
    body << fmt::format("        {} = {}(lambda {}: {}({}))({}){}\n", out, kind.name, first, fn, args, first, sum);
  } else if (kind.name == "flex_attention") {
    // Self-attention over the body's output as (batch, heads, length, dim), with a block mask made in forward. At
    // every other head the sequence is tiled to a multiple of the block size (aligned), and cut back after.
    body << fmt::format("        def {0}_score(score, b, h, q_idx, kv_idx):  # score_mod\n            return {1}\n"
                        "        def {0}_mask(b, h, q_idx, kv_idx):  # mask_mod\n            return {2}\n"
                        "        hop_x = {0}({3})\n",
                        fn, kScoreMods[r.head % 4], kMaskMods[(r.head / 4) % 8], args);
    bool aligned = r.head % 2 == 0;
    if (aligned)
      body << fmt::format("        hop_len = hop_x.shape[2]\n"
                          "        hop_n = -(-hop_len // {0}) * {0}  # the sequence tiled to a multiple of the block size\n"
                          "        hop_x = hop_x.repeat(1, 1, -(-hop_n // hop_len), 1)[:, :, :hop_n]\n",
                          kFlexBlock);
    body << fmt::format("        hop_mask = create_block_mask({0}_mask, hop_x.shape[0], hop_x.shape[1], hop_x.shape[2], "
                        "hop_x.shape[2], device=hop_x.device)\n"
                        "        {1} = flex_attention(hop_x, hop_x, hop_x, score_mod={0}_score, block_mask=hop_mask){2}\n",
                        fn, out, aligned ? std::string("[:, :, :hop_len]") + kFresh : "");
  } else if (kind.name == "autograd_function") {
    // By the head's position (in steps of three, a node and its two operands' producers): save_for_backward;
    // setup_context with a non-differentiable mask (the output put back together from its nonzero and zero parts);
    // an in-place forward with mark_dirty (a floating head only).
    std::string sep = params.empty() ? "" : ", ";
    int variant = static_cast<int>(r.head / 3 % 3);
    if (variant == 2 && !isFloat(g.typeOf(g.nodes[r.head].outputs[0]).dtype)) variant = 0;
    if (variant == 0)
      body << fmt::format("        {} = RegionFunction.apply({}{}{})\n", out, fn, sep, args);
    else if (variant == 1)
      body << fmt::format("        hop_out, hop_nonzero = RegionSplitFunction.apply({1}{2}{3})\n"
                          "        {0} = hop_out.masked_fill(~hop_nonzero, 0) + hop_out.masked_fill(hop_nonzero, 0)\n",
                          out, fn, sep, args);
    else
      body << fmt::format("        {} = RegionDoubleFunction.apply({}({}))  # doubled in place\n", out, fn, args);
  } else if (kind.name == "functional_call") {
    body << fmt::format("        {} = functional_call(region_module, {{\"scale\": torch.ones(())}}, ({}{}))\n", out, fn,
                        params.empty() ? "," : ", " + args);
  } else {  // grad
    body << fmt::format("        def {0}_sum({1}):\n            return {0}({1}).sum()\n        {2} = grad({0}_sum)({1}){3}\n", fn,
                        args, out, kFresh);
  }
  return body.str();
}

std::string hopGlobalsText(const std::set<std::string>& kinds) {
  std::string bindings;
  for (const HopKind& k : kKinds)
    if (kinds.contains(std::string(k.name)) && !k.binding.empty()) bindings += fmt::format("{} = {}\n", k.global, k.binding);
  if (kinds.contains("flex_attention"))  // the block mask is made by the real function in every mode
    bindings += "create_block_mask = torch.nn.attention.flex_attention.create_block_mask\n";
  std::string text;
  if (!bindings.empty())
    text = "# The higher-order ops forward calls, by name: the eager and float64 references rebind each name to the\n"
           "# op's Python meaning (an if, a loop, a plain call, torch.autograd.grad), which compiled is judged against.\n" +
           bindings + "\n\n";
  if (kinds.contains("autograd_function")) text += kRegionFunctions;
  if (kinds.contains("functional_call")) text += kRegionModule;
  return text;
}

}  // namespace tcfuzz::gen
