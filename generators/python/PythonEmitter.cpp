#include "generators/python/PythonEmitter.h"

#include <algorithm>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "generators/features/InputAliases.h"
#include "generators/features/InputLayout.h"
#include "generators/python/PythonConstructs.h"

namespace tcfuzz::gen {

using nlohmann::json;

namespace {

/// Ops whose backward reads their own output (derivatives.yaml's `result`): an in-place write into that
/// output makes eager's backward raise ("modified by an inplace operation"), so it goes into a clone.
const std::set<std::string>& opsSavingTheirOutput() {
  static const std::set<std::string> ops{
      "sqrt",    "rsqrt",      "exp",        "exp2",       "expm1",   "tan",     "tanh",        "sigmoid",
      "reciprocal", "relu",    "softmax",    "log_softmax", "softmin", "logsumexp", "logcumsumexp", "cumprod",
      "prod",    "std",        "std_mean",   "vector_norm", "amax",    "amin",    "max_all",     "min_all",
      "pow",     "normalize",  "sdpa",       "complex_exp", "relu_",   "sigmoid_", "hypot",   "cdist",
      "pairwise_distance", "copysign", "aminmax"};
  return ops;
}

/// Ops that are no view but may return input 0 itself: `.to()` to the dtype it has, dropout with p = 0.
/// An in-place write into their result would write into their input (a program input, a leaf).
const std::set<std::string>& opsMayReturnTheirInput() {
  static const std::set<std::string> ops{"to_dtype", "dropout"};
  return ops;
}

std::string floatLiteral(double v) {
  if (std::isinf(v)) return v > 0 ? "float('inf')" : "float('-inf')";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string shapeTuple(const std::vector<int64_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

std::string typeComment(const std::vector<TensorType>& types) {
  std::vector<std::string> parts;
  for (const auto& t : types) parts.push_back(t.str());
  return fmt::format("{}", fmt::join(parts, ", "));
}

/// The expression drawing a tensor from `dist`; `gen` names the torch.Generator ("" for the global one).
std::string drawExpr(const TensorType& t, const Distribution& d, const std::string& gen) {
  std::string g = gen.empty() ? "" : ", generator=" + gen;
  std::string shape = shapeTuple(t.shape);
  std::string dtype = fmt::format("torch.{}", dtypeName(t.dtype));
  if (d.kind == "bernoulli") return fmt::format("torch.rand({}{}) < {}", shape, g, floatLiteral(d.p));
  if (d.kind == "randint")
    return fmt::format("torch.randint({}, {}, {}{}, dtype={})", static_cast<int64_t>(d.low), static_cast<int64_t>(d.high),
                       shape, g, dtype);
  if (d.kind == "randperm")
    return fmt::format("(torch.randperm({}{})[:{}].reshape({}) + {}).to({})", static_cast<int64_t>(d.high - d.low), g,
                       t.numel(), shape, static_cast<int64_t>(d.low), dtype);
  // Uniform floats are drawn in float64 and rounded once, identically for every dtype and machine.
  std::string base = fmt::format("torch.rand({}{}, dtype=torch.float64) * {} + {}", shape, g,
                                 floatLiteral(d.high - d.low), floatLiteral(d.low));
  if (isFloat(t.dtype)) return fmt::format("({}).to({})", base, dtype);
  // A complex value: real and imaginary parts each drawn like a float in [low, high).
  if (isComplex(t.dtype)) return fmt::format("torch.complex({}, {}).to({})", base, base, dtype);
  return fmt::format("({}).floor().to({})", base, dtype);
}

/// Substitutes the placeholders of an OpSpec spelling.
std::string render(const std::string& tmpl, const OpSpec& op, const Node& node, const std::vector<std::string>& inputs,
                   const std::vector<std::string>& outputs, const std::string& self) {
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] != '{') {
      out += tmpl[i];
      continue;
    }
    size_t close = tmpl.find('}', i);
    if (close == std::string::npos) throw std::invalid_argument("unclosed placeholder in spelling of " + op.name);
    std::string key = tmpl.substr(i + 1, close - i - 1);
    i = close;
    if (key == "*") {
      out += fmt::format("{}", fmt::join(inputs, ", "));
    } else if (key == "self") {
      out += self;
    } else if (!key.empty() && std::isdigit(static_cast<unsigned char>(key[0]))) {
      out += inputs.at(std::stoul(key));
    } else if (key.rfind("out", 0) == 0 && key.size() > 3 && std::isdigit(static_cast<unsigned char>(key[3]))) {
      out += outputs.at(std::stoul(key.substr(3)));
    } else {
      bool keyword = key[0] == '?';
      std::string name = keyword ? key.substr(1) : key;
      AttrKind kind = AttrKind::Int;
      for (const auto& a : op.attrs)
        if (a.name == name) kind = a.kind;
      json value = node.attrs.contains(name) ? node.attrs[name] : json();
      if (keyword) {
        if (!value.is_null()) out += fmt::format(", {}={}", name, pythonLiteral(value, kind));
      } else {
        out += pythonLiteral(value, kind);
      }
    }
  }
  return out;
}

}  // namespace

std::string pythonLiteral(const json& value, AttrKind kind) {
  if (value.is_null()) return "None";
  if (value.is_boolean()) return value.get<bool>() ? "True" : "False";
  // An integral JSON number stays an int even for a float attribute: torch.clamp(int_tensor, min=0)
  // keeps the integer dtype, min=0.0 would not.
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  if (value.is_number()) return floatLiteral(value.get<double>());
  if (value.is_string()) {
    if (kind == AttrKind::DType) return "torch." + value.get<std::string>();
    return "'" + value.get<std::string>() + "'";
  }
  if (value.is_array()) {
    std::vector<std::string> items;
    for (const auto& e : value) items.push_back(pythonLiteral(e, kind == AttrKind::IntList ? AttrKind::Int : kind));
    return fmt::format("[{}]", fmt::join(items, ", "));
  }
  return value.dump();
}

std::string PythonEmitter::emit(const Graph& g, std::vector<int>* nodeLines, const ProgramNames& programNames) const {
  std::vector<std::string> names(g.values.size());
  for (const auto& v : g.values) names[v.id] = fmt::format("v{}", v.id);
  for (const auto& s : g.inputs) names[s.value] = s.name;
  for (const auto& s : g.params) names[s.value] = "self." + s.name;

  PythonPlan plan = planPythonConstructs(g, catalog_);
  PythonText python{plan, programNames.suffix, programNames.model};
  std::ostringstream init, forward;
  auto lineCount = [](const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); };
  std::string prologue = python.forwardPrologue();
  forward << prologue;
  init << python.initState();
  std::vector<int> forwardLine;  // per node: the last line of its own code within forward's body
  int linesSoFar = lineCount(prologue);
  for (const auto& s : g.params) {
    const TensorType& t = g.typeOf(s.value);
    std::string draw = drawExpr(t, s.dist, "");
    if (isFloat(t.dtype)) init << fmt::format("        self.{} = nn.Parameter({})\n", s.name, draw);
    else init << fmt::format("        self.register_buffer('{}', {})\n", s.name, draw);
  }

  std::map<std::string, int> layerCount;
  std::map<size_t, std::string> bodies;  // a region's body nodes' code, written at its head
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& node = g.nodes[i];
    const OpSpec* op = catalog_.find(node.op);
    if (!op) throw std::invalid_argument("the graph uses op '" + node.op + "', which the catalog lacks");
    std::vector<std::string> ins, outs;
    for (int v : node.inputs) ins.push_back(names[v]);
    for (int v : node.outputs) outs.push_back(names[v]);
    std::string self;
    if (!op->init.empty()) {
      std::string base = op->name.rfind("nn_", 0) == 0 ? op->name.substr(3) : op->name;
      self = fmt::format("self.{}{}", base, layerCount[base]++);
      if (op->init.rfind("buffer:", 0) == 0)  // a tensor registered as a buffer (state the oracle compares)
        init << fmt::format("        self.register_buffer('{}', {})\n", self.substr(5),
                            render(op->init.substr(7), *op, node, ins, outs, self));
      else
        init << fmt::format("        {} = {}\n", self, render(op->init, *op, node, ins, outs, self));
    }
    // In-place ops write into input 0 itself only when nothing else can observe it, autograd included,
    // or when the node writes into a program input on purpose (the oracle compares inputs after each call).
    if (op->inplace && !ins.empty() && !writesIntoProgramInput(g, node)) {
      int target = node.inputs[0];
      int producer = g.producerOf(target);
      bool privateValue = producer >= 0 && !catalog_.at(g.nodes[producer].op).view && g.useCount(target) == 1 &&
                          std::find(g.outputs.begin(), g.outputs.end(), target) == g.outputs.end() &&
                          !opsSavingTheirOutput().contains(g.nodes[producer].op) &&
                          !opsMayReturnTheirInput().contains(g.nodes[producer].op) &&
                          !writesIntoProgramInput(g, g.nodes[producer]);  // its result is that input
      if (!privateValue) ins[0] += ".clone()";
    }
    std::vector<TensorType> types;
    for (int v : node.outputs) types.push_back(g.typeOf(v));
    std::string comment = "  # " + typeComment(types) + (node.core ? " [LLM core]" : "");
    std::string code;
    if (op->python.rfind("stmt:", 0) == 0) {
      std::string body = render(op->python.substr(5), *op, node, ins, outs, self);
      std::istringstream lines(body);
      std::string line;
      std::vector<std::string> all;
      while (std::getline(lines, line)) all.push_back(line);
      for (size_t k = 0; k < all.size(); ++k) code += "        " + all[k] + (k + 1 == all.size() ? comment : "") + "\n";
    } else {
      std::string lhs = fmt::format("{}", fmt::join(outs, ", "));
      if (op->tupleResult && outs.size() == 1) lhs += ",";
      code += python.nodeCode(g, i, names, lhs, render(op->python, *op, node, ins, outs, self), comment);
    }
    // A region's body nodes are written inside its function, at its head; their lines are the head's.
    if (python.inBody(i)) {
      bodies[i] = code;
      forwardLine.push_back(-1);
      continue;
    }
    std::string before = python.beforeNode(i);
    if (const auto& region = plan.hops[i]) {
      // Each body node's line is the last of its own code in the body, after the `def` line.
      int line = linesSoFar + lineCount(before) + 1;
      std::string body;
      for (size_t j : region->nodes) {
        const std::string& own = j == i ? code : bodies[j];
        body += own;
        line += lineCount(own);
        if (j != i) forwardLine[j] = line;
        else forwardLine.push_back(line);
      }
      code = hopRegionText(g, *region, names, body);
    } else {
      forwardLine.push_back(linesSoFar + lineCount(before + code));
    }
    code = before + code;
    linesSoFar += lineCount(code);
    std::string after = python.afterNode(g, i, names);
    linesSoFar += lineCount(after);
    forward << code << after;
  }

  std::ostringstream py;
  if (programNames.standalone)
    py << provenanceHeader(g) << "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n";
  py << python.imports() << "\n\n"
     << python.moduleState()
     << python.hookFunction();
  py << "class " << programNames.model << "(nn.Module):\n" << python.classAttributes() << "    def __init__(self):\n        super().__init__()\n"
     << init.str() << "\n";
  std::vector<std::string> args{"self"};
  for (const auto& s : g.inputs) args.push_back(s.name);
  py << fmt::format("    def forward({}):\n", fmt::join(args, ", "));
  if (nodeLines) {
    std::string head = py.str();
    int before = static_cast<int>(std::count(head.begin(), head.end(), '\n'));
    nodeLines->clear();
    for (int l : forwardLine) nodeLines->push_back(before + l);
  }
  py << forward.str();
  std::vector<std::string> rets;
  for (int v : g.outputs) rets.push_back(names[v]);
  py << fmt::format("        return {}\n\n\n", rets.size() == 1 ? rets[0] + "," : fmt::format("{}", fmt::join(rets, ", ")));
  bool boundary = std::any_of(g.inputs.begin(), g.inputs.end(), [](const Source& s) { return !s.boundary.empty(); });
  if (boundary) py << boundaryValuesHelper() << "\n\n";
  py << "def " << programNames.makeInputs << "(seed):\n    g = torch.Generator().manual_seed(seed)\n";
  for (const auto& s : g.inputs) {
    const TensorType& t = g.typeOf(s.value);
    if (!s.alias.none()) continue;  // derived from its base below, after every drawn input
    if (s.layout.contiguous() && s.boundary.empty()) {
      py << fmt::format("    {} = {}  # {}\n", s.name, drawExpr(t, s.dist, "g"), t.str());
      continue;
    }
    for (const std::string& problem : {layoutProblem(s.layout, t, s.dist), boundaryProblem(s.boundary, t, s.dist)})
      if (!problem.empty()) throw std::invalid_argument(fmt::format("input {}: {}", s.name, problem));
    // The storage is drawn first, boundary values go in, then the layout views it: same logical
    // shape, other strides.
    TensorType storage = t;
    storage.shape = storageShape(s.layout, t);
    std::string draw = drawExpr(storage, s.dist, "g");
    std::vector<std::string> notes{t.str()};
    if (!s.boundary.empty()) {
      std::vector<std::string> kinds;
      for (const auto& k : s.boundary.kinds) kinds.push_back("'" + k + "'");
      draw = fmt::format("boundary_values({}, g, {}, [{}])", draw, floatLiteral(s.boundary.share), fmt::join(kinds, ", "));
      notes.push_back(fmt::format("boundary values ({}) in {:.0f}%", fmt::join(s.boundary.kinds, ", "), 100 * s.boundary.share));
    } else {
      draw = "(" + draw + ")";
    }
    if (!s.layout.contiguous()) notes.push_back(describeLayout(s.layout));
    py << fmt::format("    {} = {}{}  # {}\n", s.name, draw, layoutPython(s.layout, t), fmt::join(notes, ", "));
  }
  for (const auto& s : g.inputs) {
    if (s.alias.none()) continue;
    if (std::string problem = aliasProblem(g, s); !problem.empty())
      throw std::invalid_argument(fmt::format("input {}: {}", s.name, problem));
    py << fmt::format("    {} = {}  # {}, {}\n", s.name, aliasPython(g, s), g.typeOf(s.value).str(), describeAlias(s.alias));
  }
  std::vector<std::string> inputNames;
  for (const auto& s : g.inputs) inputNames.push_back(s.name);
  py << fmt::format("    return [{}]\n", fmt::join(inputNames, ", "));
  if (std::vector<int> written = writtenInputPositions(g); !written.empty())
    py << fmt::format("\n\n# forward writes into these inputs (positions in make_inputs' list): the worker keeps them\n"
                      "# plain tensors, not autograd leaves, since autograd refuses in-place writes into a leaf.\n"
                      "WRITTEN_INPUTS{} = ({}{})\n",
                      programNames.suffix, fmt::join(written, ", "), written.size() == 1 ? "," : "");
  std::vector<std::string> aliased;
  for (size_t i = 0; i < g.inputs.size(); ++i)
    if (const Source* base = g.inputs[i].alias.none() ? nullptr : aliasBase(g, g.inputs[i]))
      aliased.push_back(fmt::format("{}: {}", i, base - g.inputs.data()));
  if (!aliased.empty())
    py << fmt::format("\n\n# these inputs view another input's storage (position: the position of the input they view): a copy\n"
                      "# of the inputs must keep them views of its copy of that input.\n"
                      "ALIASED_INPUTS{} = {{{}}}\n",
                      programNames.suffix, fmt::join(aliased, ", "));
  py << python.scheduleAndState();
  return py.str();
}

namespace {

int coreNodeCount(const Graph& g) {
  return static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(), [](const Node& n) { return n.core; }));
}

/// The part after "<kind>:" in an older file's generator name ("llm:ops-json" -> "ops-json"), or "".
std::string generatorDetail(const Origin& o) {
  size_t colon = o.generator.find(':');
  return colon == std::string::npos ? "" : o.generator.substr(colon + 1);
}

}  // namespace

std::string originSummary(const Graph& g) {
  const Origin& o = g.origin;
  std::string kind = o.kind();
  if (kind == "grammar") return fmt::format("Generated by tcfuzz (grammar generator): seed {}, index {}", o.seed, o.index);
  if (kind == "mutation") {
    std::string mutator = o.mutator.empty() ? generatorDetail(o) : o.mutator;
    return fmt::format("Made by tcfuzz (mutation): mutator {} applied to queue entry {}{}, mutation {}",
                       mutator.empty() ? "unknown" : mutator, o.parent.empty() ? "unknown" : o.parent,
                       o.donor.empty() ? "" : " (spliced with " + o.donor + ")", o.index);
  }
  if (kind == "llm") {
    int core = coreNodeCount(g);
    std::string strategy = o.strategy.empty() ? generatorDetail(o) : o.strategy;
    return fmt::format("Proposed by an LLM (model {}, strategy {}{}{}), repaired{}", o.model.empty() ? "unknown" : o.model,
                       strategy.empty() ? "unknown" : strategy, o.target.empty() ? "" : ", target " + o.target,
                       o.replyId >= 0 ? fmt::format(", reply {} in work/llm/replies.jsonl", o.replyId) : "",
                       core > 0 && core < static_cast<int>(g.nodes.size())
                           ? fmt::format(", and grown by the grammar generator (seed {}, index {}) around its {} core "
                                         "nodes, marked [LLM core]",
                                         o.seed, o.index, core)
                           : "");
  }
  if (kind == "libfuzzer")
    return fmt::format("Made by tcfuzz's libFuzzer engine: mutator {} over libFuzzer's corpus (mutation seed {})",
                       o.mutator.empty() ? "unknown" : o.mutator, o.index);
  return fmt::format("Made by tcfuzz ({})", o.generator);
}

std::string provenanceHeader(const Graph& g) {
  const Origin& o = g.origin;
  std::string hash = g.contentHash().substr(0, 16);
  std::string head = "# " + originSummary(g) + ".\n";
  std::string kind = o.kind();
  if (o.minimized)
    return "# Minimized by tcfuzz's triage from a program it made: " + originSummary(g) + ".\n" +
           fmt::format("# Graph {}; its IR is program.json beside this file (tcfuzz gen --from program.json).\n", hash);
  // What the judged program dropped from the one its making gave: its op graph only (a batch member), one
  // trace (an export entry).
  std::string plain = std::string(o.plain ? " --plain" : "") + (o.singleTrace ? " --single-trace" : "");
  if (kind == "grammar")
    return head + fmt::format("# Graph {}; replay with: tcfuzz gen --seed {} --start {} --count 1{}{}\n", hash, o.seed,
                              o.index, o.minNodes > 0 && o.maxNodes > 0 ? fmt::format(" --nodes {}-{}", o.minNodes, o.maxNodes) : "",
                              plain);
  if (kind == "mutation" && !o.parent.empty()) {
    std::string mutator = o.mutator.empty() ? generatorDetail(o) : o.mutator;
    return head + fmt::format("# Graph {}; replay in the campaign's output directory with: tcfuzz gen --mutate queue/{}.json{} "
                              "--mutator {} --start {} --count 1{}\n",
                              hash, o.parent, o.donor.empty() ? "" : fmt::format(" --donor queue/{}.json", o.donor),
                              mutator, o.index, plain);
  }
  if (kind == "llm" && !o.stored.empty())
    return head + fmt::format("# Graph {}; replay in the campaign's output directory with: tcfuzz gen --from {}{}\n",
                              hash, o.stored, plain);
  if (kind == "libfuzzer")  // libFuzzer chains mutations over inputs it may drop: the IR is the program
    return head + fmt::format("# Graph {}; its IR is the .json file beside this one (tcfuzz gen --from it).\n", hash);
  // An origin this tcfuzz cannot make again (a hand-written or older IR file, an unstored proposal).
  return head + fmt::format("# Graph {}; no replay command is known for this origin: this file is the program.\n", hash);
}

}  // namespace tcfuzz::gen
