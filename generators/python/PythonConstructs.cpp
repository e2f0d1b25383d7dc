#include "generators/python/PythonConstructs.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "generators/python/PythonEmitter.h"
#include "generators/python/PythonForms.h"

namespace tcfuzz::gen {

using nlohmann::json;

namespace {

/// Whether node `i` may sit in a branch or have state applied to its output: one output that forward only
/// returns, from a plain one-line functional op (no view, no in-place write, no statement spelling).
bool returnsOnly(const Graph& g, const OpCatalog& catalog, size_t i) {
  const Node& n = g.nodes[i];
  const OpSpec* op = catalog.find(n.op);
  if (!op || op->view || op->inplace || op->tupleResult || op->python.rfind("stmt:", 0) == 0 || n.writesInput ||
      n.outputs.size() != 1)
    return false;
  int out = n.outputs[0];
  return g.useCount(out) == 0 && std::find(g.outputs.begin(), g.outputs.end(), out) != g.outputs.end();
}

/// Whether node input `operand` can decide a branch on tensor data: a program input nothing writes, not
/// complex, with an element to read.
bool operandDecides(const Graph& g, const Node& n, int operand, const std::vector<int>& written) {
  if (operand < 0 || operand >= static_cast<int>(n.inputs.size())) return false;
  int v = n.inputs[operand];
  for (size_t k = 0; k < g.inputs.size(); ++k)
    if (g.inputs[k].value == v) {
      const TensorType& t = g.typeOf(v);
      bool isWritten = std::find(written.begin(), written.end(), static_cast<int>(k)) != written.end();
      return !isWritten && !isComplex(t.dtype) && t.numel() > 0;
    }
  return false;
}


bool branchHolds(const Graph& g, const OpCatalog& catalog, size_t i, const BranchTest& b, bool counter,
                 const std::vector<int>& written) {
  if (!returnsOnly(g, catalog, i)) return false;
  if (branchReadsTensor(b.kind)) return operandDecides(g, g.nodes[i], b.operand, written);
  return b.kind != "calls" || counter;
}

bool outputStateHolds(const Graph& g, const OpCatalog& catalog, size_t i) {
  return returnsOnly(g, catalog, i) && isFloat(g.typeOf(g.nodes[i].outputs[0]).dtype);
}

/// A form sits on a returned floating output; a loop form needs a dim 0 with an element to unbind
/// (torch.stack refuses an empty list).
bool formHolds(const Graph& g, const OpCatalog& catalog, size_t i, const std::string& name) {
  if (!outputStateHolds(g, catalog, i) || !isPythonForm(name)) return false;
  const TensorType& t = g.typeOf(g.nodes[i].outputs[0]);
  return !pythonForm(name).loop || (t.rank() >= 1 && t.shape[0] >= 1);
}

/// Whether a schedule step can flip requires_grad: a floating program input that forward does not write.
bool hasFlippableInput(const Graph& g) {
  std::vector<int> written = writtenInputPositions(g);
  for (size_t k = 0; k < g.inputs.size(); ++k)
    if (isFloat(g.typeOf(g.inputs[k].value).dtype) &&
        std::find(written.begin(), written.end(), static_cast<int>(k)) == written.end())
      return true;
  return false;
}

/// Whether a schedule step can move the program to float64 (model.double(), float64 and complex128 inputs): it
/// has a floating input, no complex parameter (model.double() leaves those), and no node names a dtype (a cast,
/// a layer of another dtype) that would then mix with it.
bool hasRetypableInputs(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.attrs.is_object() && n.attrs.contains("dtype") && !n.attrs["dtype"].is_null()) return false;
  for (const Source& p : g.params)
    if (isComplex(g.typeOf(p.value).dtype)) return false;
  return std::any_of(g.inputs.begin(), g.inputs.end(), [&](const Source& s) { return isFloat(g.typeOf(s.value).dtype); });
}

/// Draws a form of the loop kind (`loop`) or of the others, by the policy's weights; "" when none weighs.
std::string drawForm(const PythonConstructChances& chances, bool loop, Rng& rng) {
  std::vector<std::string> names;
  std::vector<double> weights;
  for (const PythonForm& f : pythonForms())
    if (f.loop == loop)
      if (auto it = chances.formWeights.find(std::string(f.name)); it != chances.formWeights.end() && it->second > 0) {
        names.emplace_back(f.name);
        weights.push_back(it->second);
      }
  return names.empty() ? "" : names[rng.weighted(weights)];
}

std::string literal(double v) { return pythonLiteral(json(v), AttrKind::Float); }

/// The values a schedule step sets: exact binary fractions, so scaling by them adds no rounding.
const std::vector<double> kScaleValues{0.5, 2.0, 0.25, -1.0, 1.5};
const std::vector<double> kOffsetValues{0.5, -1.25, 2.0, 0.75};

}  // namespace

std::map<std::string, double> PythonConstructChances::defaultFormWeights() {
  std::map<std::string, double> weights;
  for (const PythonForm& f : pythonForms()) weights[std::string(f.name)] = f.name == "enumerate" ? 2 : 1;
  weights["closure-state"] = weights["dict-state"] = 2;  // state kept between calls: what guards must see
  for (const PythonForm& f : pythonForms())
    if (f.dataDependent) weights[std::string(f.name)] = 2;  // unbacked sizes: what most data-dependent crashes need
  return weights;
}

json PythonConstructChances::toJson() const {
  return {{"graph_break", graphBreak}, {"branch", branch}, {"output_state", outputState}, {"counter", counter},
          {"loop", loop}, {"form", form}, {"hook", hook}, {"global_hook", globalHook}, {"schedule", schedule}, {"hop", hop}, {"branch_weights", branchWeights},
          {"form_weights", formWeights}};
}

PythonConstructChances PythonConstructChances::fromJson(const json& doc) {
  if (!doc.is_object()) throw std::invalid_argument("python_constructs: expected an object");
  PythonConstructChances c;
  std::map<std::string, double*> chances{{"graph_break", &c.graphBreak}, {"branch", &c.branch},
                                         {"output_state", &c.outputState}, {"counter", &c.counter},
                                         {"loop", &c.loop}, {"form", &c.form}, {"hook", &c.hook},
                                         {"global_hook", &c.globalHook}, {"schedule", &c.schedule},
                                         {"hop", &c.hop}};
  std::map<std::string, std::pair<std::map<std::string, double>*, const char*>> weightMaps{
      {"branch_weights", {&c.branchWeights, "test"}}, {"form_weights", {&c.formWeights, "form"}}};
  for (const auto& [key, value] : doc.items()) {
    if (auto weights = weightMaps.find(key); weights != weightMaps.end()) {
      auto [map, what] = weights->second;
      if (!value.is_object()) throw std::invalid_argument(fmt::format("python_constructs.{}: expected an object", key));
      for (const auto& [kind, w] : value.items()) {
        if (!map->contains(kind))
          throw std::invalid_argument(fmt::format("python_constructs.{}: unknown {} '{}'", key, what, kind));
        if (!w.is_number() || w.get<double>() < 0)
          throw std::invalid_argument(fmt::format("python_constructs.{}.{}: expected a number >= 0", key, kind));
        (*map)[kind] = w.get<double>();
      }
      continue;
    }
    auto it = chances.find(key);
    if (it == chances.end()) throw std::invalid_argument(fmt::format("python_constructs: unknown key '{}'", key));
    if (!value.is_number() || value.get<double>() < 0 || value.get<double>() > 1)
      throw std::invalid_argument(fmt::format("python_constructs.{}: expected a chance in [0, 1]", key));
    *it->second = value.get<double>();
  }
  return c;
}

bool PythonPlan::anyConstruct() const {
  return !schedule.empty() || counter || !hook.empty() ||
         std::any_of(nodes.begin(), nodes.end(), [](const NodePython& p) { return !p.empty(); });
}

bool PythonText::inBody(size_t i) const {
  return std::any_of(plan.hops.begin(), plan.hops.end(), [i](const std::optional<HopRegion>& r) {
    return r && r->head != i && std::find(r->nodes.begin(), r->nodes.end(), i) != r->nodes.end();
  });
}

bool PythonPlan::mutatesState() const {
  return counter || hook == "forward-pre" || hook == "global-pre" ||
         std::any_of(forms.begin(), forms.end(), [](const std::string& f) { return pythonForm(f).keepsState; });
}

bool PythonPlan::submodulesReadTraining() const {
  return std::any_of(forms.begin(), forms.end(), [](const std::string& f) { return pythonForm(f).readsTraining; });
}

bool branchReadsTensor(const std::string& kind) { return kind != "flag" && kind != "training" && kind != "calls"; }

bool PythonPlan::graphBreak() const {
  return std::any_of(nodes.begin(), nodes.end(), [](const NodePython& p) { return p.graphBreakBefore; }) ||
         std::any_of(forms.begin(), forms.end(), [](const std::string& f) { return pythonForm(f).breaksGraph; });
}

std::vector<std::string> PythonPlan::stateGlobals() const {
  std::vector<std::string> names;
  if (globalOffset) names.push_back("OFFSET");
  if (counter) names.push_back("CALLS");
  if (hook == "global-pre") names.push_back("MODULE_CALLS");
  for (const std::string& form : forms)
    if (std::string_view global = pythonForm(form).stateGlobal; !global.empty()) names.emplace_back(global);
  return names;
}

PythonPlan planPythonConstructs(const Graph& g, const OpCatalog& catalog) {
  PythonPlan plan;
  std::vector<int> written = writtenInputPositions(g);
  plan.counter = std::any_of(g.nodes.begin(), g.nodes.end(), [](const Node& n) { return n.python.counter; });
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    NodePython p = g.nodes[i].python;
    if (p.branch && !branchHolds(g, catalog, i, *p.branch, plan.counter, written)) p.branch.reset();
    if (!p.outputState.empty() && !outputStateHolds(g, catalog, i)) p.outputState.clear();
    if (!p.form.empty() && !formHolds(g, catalog, i, p.form)) p.form.clear();
    if (!p.form.empty()) plan.forms.insert(p.form);
    plan.flag = plan.flag || (p.branch && p.branch->kind == "flag");
    plan.training = plan.training || (p.branch && p.branch->kind == "training");
    plan.classScale = plan.classScale || p.outputState == "scale";
    plan.globalOffset = plan.globalOffset || p.outputState == "offset";
    plan.nodes.push_back(std::move(p));
  }
  // Regions last: a body holds only nodes whose own constructs were all left out.
  plan.hops.assign(g.nodes.size(), std::nullopt);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!plan.nodes[i].hop) continue;
    plan.hops[i] = hopRegionOf(g, catalog, i, *plan.nodes[i].hop, plan.nodes);
    if (plan.hops[i]) plan.hopKinds.insert(plan.hops[i]->kind);
    else plan.nodes[i].hop.reset();
  }
  plan.hook = g.hook;
  for (const ScheduleStep& s : g.schedule) {
    bool holds = s.change == "flag"          ? plan.flag
                 : s.change == "train-mode"  ? plan.training || plan.submodulesReadTraining()
                 : s.change == "global"      ? plan.globalOffset
                 : s.change == "remove-hook" ? !plan.hook.empty()
                 : s.change == "clear-cache" ? plan.forms.contains("dict-state")
                 : s.change == "requires-grad" ? hasFlippableInput(g)
                 : s.change == "dtype"       ? hasRetypableInputs(g)
                                             : plan.classScale;
    if (holds) plan.schedule.push_back(s);
  }
  return plan;
}

int addPythonConstructs(Graph& g, const OpCatalog& catalog, const PythonConstructChances& chances, Rng& rng) {
  if (g.nodes.empty()) return 0;
  int added = 0;
  auto anyNode = [&]() -> Node& {
    return g.nodes[static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(g.nodes.size()) - 1))];
  };
  if (rng.chance(chances.graphBreak)) {
    anyNode().python.graphBreakBefore = true;
    ++added;
    if (rng.chance(chances.graphBreak)) anyNode().python.graphBreakBefore = true;
  }
  bool counter = rng.chance(chances.counter);
  if (counter) {
    anyNode().python.counter = true;
    ++added;
  }
  std::vector<size_t> returned;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (returnsOnly(g, catalog, i)) returned.push_back(i);
  if (!returned.empty() && rng.chance(chances.branch)) {
    size_t i = rng.pick(returned);
    const Node& n = g.nodes[i];
    std::vector<int> written = writtenInputPositions(g), operands;
    for (int k = 0; k < static_cast<int>(n.inputs.size()); ++k)
      if (operandDecides(g, n, k, written)) operands.push_back(k);
    std::vector<std::string> kinds;
    std::vector<double> weights;
    for (const auto& [kind, w] : chances.branchWeights) {
      bool holds = branchReadsTensor(kind) ? !operands.empty() : kind != "calls" || counter;
      if (holds && w > 0) {
        kinds.push_back(kind);
        weights.push_back(w);
      }
    }
    if (!kinds.empty()) {
      BranchTest b;
      b.kind = kinds[rng.weighted(weights)];
      if (branchReadsTensor(b.kind)) {
        b.operand = rng.pick(operands);
        for (const Source& s : g.inputs)
          if (s.value == n.inputs[static_cast<size_t>(b.operand)]) b.threshold = exactThreshold(s.dist, rng);
      }
      g.nodes[i].python.branch = b;
      ++added;
    }
  }
  std::vector<size_t> floating;
  for (size_t i : returned)
    if (outputStateHolds(g, catalog, i)) floating.push_back(i);
  if (!floating.empty() && rng.chance(chances.outputState)) {
    g.nodes[rng.pick(floating)].python.outputState = rng.chance(0.5) ? "scale" : "offset";
    ++added;
  }
  for (bool loop : {true, false}) {
    if (floating.empty() || !rng.chance(loop ? chances.loop : chances.form)) continue;
    std::string name = drawForm(chances, loop, rng);
    std::vector<size_t> places;
    for (size_t i : floating)
      if (g.nodes[i].python.form.empty() && formHolds(g, catalog, i, name)) places.push_back(i);
    if (places.empty()) continue;
    g.nodes[rng.pick(places)].python.form = name;
    ++added;
  }
  if (rng.chance(chances.hook)) {
    g.hook = rng.chance(0.5) ? "forward" : "forward-pre";
    if (rng.chance(chances.globalHook)) g.hook = "global-" + (g.hook == "forward" ? std::string("forward") : "pre");
    ++added;
  }
  PythonPlan plan = planPythonConstructs(g, catalog);
  std::vector<std::string> changes;
  if (plan.classScale) changes.insert(changes.end(), {"class-attr", "class-attr", "instance-attr"});
  if (plan.globalOffset) changes.push_back("global");
  if (plan.flag) changes.push_back("flag");
  if (plan.training || plan.submodulesReadTraining()) changes.push_back("train-mode");
  if (!g.hook.empty()) changes.push_back("remove-hook");
  if (plan.forms.contains("dict-state")) changes.push_back("clear-cache");
  // Flipping requires_grad joins a schedule that changes state already: it alone would schedule most programs.
  if (!changes.empty() && hasFlippableInput(g)) changes.push_back("requires-grad");
  if (!changes.empty() && hasRetypableInputs(g)) changes.push_back("dtype");
  if (!changes.empty() && rng.chance(chances.schedule)) {
    int steps = static_cast<int>(rng.uniform(1, 3));
    for (int k = 0; k < steps; ++k) {
      ScheduleStep s{rng.pick(changes), 0};
      if (s.change == "global") s.value = rng.pick(kOffsetValues);
      else if (s.change != "flag" && s.change != "train-mode") s.value = rng.pick(kScaleValues);
      g.schedule.push_back(s);
    }
    ++added;
  }
  // Drawn last, so the constructs above are drawn as before; a region's body avoids the nodes they sit on.
  if (addHopConstruct(g, catalog, chances.hop, rng)) ++added;
  return added;
}

bool mutatePythonConstructs(Graph& g, const OpCatalog& catalog, const PythonConstructChances& chances, Rng& rng) {
  std::vector<std::function<void()>> drops;
  for (size_t k = 0; k < g.schedule.size(); ++k)
    drops.push_back([&g, k] { g.schedule.erase(g.schedule.begin() + static_cast<std::ptrdiff_t>(k)); });
  for (Node& n : g.nodes) {
    NodePython& p = n.python;
    if (p.graphBreakBefore) drops.push_back([&p] { p.graphBreakBefore = false; });
    if (p.branch) drops.push_back([&p] { p.branch.reset(); });
    if (!p.outputState.empty()) drops.push_back([&p] { p.outputState.clear(); });
    if (p.counter) drops.push_back([&p] { p.counter = false; });
    if (!p.form.empty()) drops.push_back([&p] { p.form.clear(); });
    if (p.hop) drops.push_back([&p] { p.hop.reset(); });
  }
  if (!g.hook.empty()) drops.push_back([&g] { g.hook.clear(); });
  if (!drops.empty() && rng.chance(0.5)) {
    rng.pick(drops)();
    return true;
  }
  PythonConstructChances one = chances;
  one.graphBreak = one.branch = one.outputState = one.counter = one.loop = one.form = one.hook = one.schedule = one.hop = 0;
  double* kinds[] = {&one.graphBreak, &one.branch, &one.outputState, &one.counter, &one.loop,
                     &one.form,       &one.hook,   &one.schedule,    &one.hop};
  *kinds[rng.uniform(0, 8)] = 1;
  if (one.schedule > 0) one.outputState = 1;  // a schedule changes state that an output reads
  std::string before = g.toJson().dump();
  addPythonConstructs(g, catalog, one, rng);
  return g.toJson().dump() != before;
}

// --- Python text ------------------------------------------------------------------------------------

namespace {

/// `text` with each whole-word occurrence of the module global `name` followed by `suffix` ("" leaves it as is).
std::string withGlobalRenamed(std::string text, std::string_view name, const std::string& suffix) {
  if (name.empty() || suffix.empty()) return text;
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    size_t end = at + name.size();
    if ((at > 0 && word(text[at - 1])) || (end < text.size() && word(text[end]))) continue;
    text.insert(end, suffix);
  }
  return text;
}

}  // namespace

std::string PythonText::imports() const {
  std::set<std::string_view> lines;
  for (const std::string& name : plan.forms) lines.insert(pythonForm(name).imports);
  if (plan.hopKinds.contains("checkpoint")) lines.insert("import torch.utils.checkpoint\n");
  if (plan.hopKinds.contains("flex_attention")) lines.insert("import torch.nn.attention.flex_attention\n");
  lines.erase("");
  return fmt::format("{}", fmt::join(lines, ""));
}

std::string PythonText::moduleState() const {
  std::string out;
  bool globalHook = plan.hook.starts_with("global-");
  if (plan.globalOffset || plan.counter || globalHook) {
    out = "# Module globals forward reads or writes (STATE_GLOBALS: compared after every call)\n";
    // Never the neutral 0.0 or 1.0: an output `v + 0.0` or `v * 1.0` of an input view comes back as the input
    // itself under Inductor (open upstream #197893), which would make every such program that known finding.
    if (plan.globalOffset) out += global("OFFSET") + " = 0.5\n";
    if (plan.counter) out += global("CALLS") + " = 0\n";
    if (plan.hook == "global-pre")
      out += global("MODULE_CALLS") + " = []  # the global pre-hook appends each module call's class name\n";
    if (globalHook) out += global("GLOBAL_HOOK") + " = None  # the handle of the one global hook this program registers\n";
    out += "\n\n";
  }
  std::set<std::string_view> written;  // forms may share definitions (the submodule class)
  for (const PythonForm& f : pythonForms())  // the table's order, so the text never depends on the nodes'
    if (plan.forms.contains(std::string(f.name)) && written.insert(f.module).second)
      out += withGlobalRenamed(std::string(f.module), f.stateGlobal, suffix);
  return out + hopGlobalsText(plan.hopKinds);
}

std::string PythonText::classAttributes() const {
  return plan.classScale ? "    scale = 2.0  # a class attribute forward reads; a schedule step may change it\n\n" : "";
}

std::string PythonText::initState() const {
  std::string out;
  if (plan.counter) out += "        self.calls = 0\n        self.trace = []\n";
  if (plan.flag) out += "        self.flag = True\n";
  for (const PythonForm& f : pythonForms())
    if (plan.forms.contains(std::string(f.name))) out += f.init;
  if (plan.hook == "forward") out += "        self._hook = self.register_forward_hook(double_floating_outputs)\n";
  if (plan.hook == "forward-pre")
    out += "        self.seen = []\n        self._hook = self.register_forward_pre_hook(record_input_shapes)\n";
  if (plan.hook.starts_with("global-")) {
    // Global hooks live in torch for the whole process: a model built again replaces the last one's hook.
    out += fmt::format("        global {2}\n"
                       "        if {2} is not None:  # a model built again in this process: one global hook at a time\n"
                       "            {2}.remove()\n"
                       "        {2} = torch.nn.modules.module.register_module_forward{0}_hook({1})\n"
                       "        self._hook = {2}\n",
                       plan.hook == "global-pre" ? "_pre" : "",
                       plan.hook == "global-pre" ? "record_module_calls" : "double_model_outputs", global("GLOBAL_HOOK"));
  }
  return out;
}

std::string PythonText::hookFunction() const {
  if (plan.hook == "forward")
    return "def double_floating_outputs(module, args, output):  # a forward hook: it may replace the outputs\n"
           "    return tuple(o * 2 if isinstance(o, torch.Tensor) and o.is_floating_point() else o for o in output)\n\n\n";
  if (plan.hook == "forward-pre")
    return "def record_input_shapes(module, args):  # a forward pre-hook that writes Python state\n"
           "    module.seen.append(tuple(tuple(a.shape) for a in args if isinstance(a, torch.Tensor)))\n\n\n";
  // A global hook runs for every module call in the process, the compiler's own modules' too: OptimizedModule
  // fires global hooks once more than eager by design (upstream closed that as expected: global hooks are a
  // debugging aid), and a backend such as aot_eager runs each graph as a GraphModule. Both hooks act only on
  // the program's own modules.
  if (plan.hook == "global-forward")
    return "def double_model_outputs(module, args, output):  # a global forward hook: it runs after every module's forward\n"
           "    if not isinstance(module, " + model + "):  # submodules and the compiled wrapper keep their outputs\n"
           "        return None\n"
           "    return tuple(o * 2 if isinstance(o, torch.Tensor) and o.is_floating_point() else o for o in output)\n\n\n";
  if (plan.hook == "global-pre")
    return "def record_module_calls(module, args):  # a global forward pre-hook: it runs before every module's forward\n"
           "    if not isinstance(module, (torch._dynamo.eval_frame.OptimizedModule, torch.fx.GraphModule)):  # compiler-made\n"
           "        " + global("MODULE_CALLS") + ".append(type(module).__name__)\n\n\n";
  return "";
}

std::string PythonText::forwardPrologue() const { return plan.counter ? "        global " + global("CALLS") + "\n" : ""; }

std::string PythonText::beforeNode(size_t i) const {
  const NodePython& p = plan.nodes[i];
  std::string out;
  if (p.counter) out += "        " + global("CALLS") + " += 1\n        self.calls += 1\n        self.trace.append(self.calls)\n";
  if (p.graphBreakBefore) out += "        torch._dynamo.graph_break()\n";
  return out;
}

std::string PythonText::nodeCode(const Graph& g, size_t i, const std::vector<std::string>& names, const std::string& lhs,
                                 const std::string& rhs, const std::string& comment) const {
  const NodePython& p = plan.nodes[i];
  if (!p.branch) return fmt::format("        {} = {}{}\n", lhs, rhs, comment);
  const BranchTest& b = *p.branch;
  std::string test;
  if (b.kind == "flag") {
    test = "self.flag";
  } else if (b.kind == "training") {
    test = "self.training";
  } else if (b.kind == "calls") {
    test = "self.calls % 2 == 1";
  } else {
    int v = g.nodes[i].inputs[static_cast<size_t>(b.operand)];
    const std::string& x = names[static_cast<size_t>(v)];
    bool boolean = g.typeOf(v).dtype == DType::Bool;
    std::string than = boolean ? "" : " > " + literal(b.threshold);
    if (b.kind == "item") test = fmt::format("{}.flatten()[0].item(){}", x, than);
    else if (b.kind == "tensor") test = fmt::format("{}.flatten()[0]{}", x, than);
    else test = boolean ? x + ".any()" : fmt::format("({}{}).any()", x, than);
  }
  return fmt::format("        if {}:\n            {} = {}{}\n        else:  # the other arm: the output rolled by one\n"
                     "            {} = ({}).roll(1){}\n",
                     test, lhs, rhs, comment, lhs, rhs, comment);
}

std::string PythonText::afterNode(const Graph& g, size_t i, const std::vector<std::string>& names) const {
  const NodePython& p = plan.nodes[i];
  if (p.outputState.empty() && p.form.empty()) return "";
  const std::string& out = names[static_cast<size_t>(g.nodes[i].outputs[0])];
  std::string text;
  if (!p.form.empty()) text += withGlobalRenamed(formForwardText(pythonForm(p.form), out), pythonForm(p.form).stateGlobal, suffix);
  if (p.outputState == "scale") text += fmt::format("        {0} = {0} * self.scale\n", out);
  if (p.outputState == "offset") text += fmt::format("        {0} = {0} + {1}\n", out, global("OFFSET"));
  return text;
}

PythonText::StepText PythonText::scheduleStep(size_t k) const {
  const ScheduleStep& s = plan.schedule.at(k);
  StepText t{fmt::format("change_{}{}", k + 1, suffix), "", ""};
  if (s.change == "class-attr") {
    t.doc = fmt::format("{}.scale = {} (a class attribute)", model, literal(s.value));
    t.body = fmt::format("    {}.scale = {}\n", model, literal(s.value));
  } else if (s.change == "instance-attr") {
    t.doc = fmt::format("model.scale = {} (an instance attribute over the class one)", literal(s.value));
    t.body = fmt::format("    model.scale = {}\n", literal(s.value));
  } else if (s.change == "global") {
    t.doc = fmt::format("{} = {} (a module global)", global("OFFSET"), literal(s.value));
    t.body = fmt::format("    global {0}\n    {0} = {1}\n", global("OFFSET"), literal(s.value));
  } else if (s.change == "flag") {
    t.doc = "model.flag = not model.flag";
    t.body = "    model.flag = not model.flag\n";
  } else if (s.change == "train-mode") {
    t.doc = "model.train(not model.training): eval() to train() and back";
    t.body = "    model.train(not model.training)\n";
  } else if (s.change == "requires-grad") {
    t.doc = "inputs with requires_grad flipped (the floating inputs forward does not write)";
    t.body = "    return " + global("flip_requires_grad") + "\n";
  } else if (s.change == "dtype") {
    t.doc = "model.double(), and the floating inputs as float64 (another dtype)";
    t.body = "    model.double()\n    return " + global("as_float64") + "\n";
  } else if (s.change == "clear-cache") {
    t.doc = "model.cache.clear() (the dict forward passes to remember)";
    t.body = "    model.cache.clear()\n";
  } else {
    t.doc = fmt::format("the {} hook removed", plan.hook);
    t.body = "    model._hook.remove()\n";
  }
  return t;
}

std::string PythonText::scheduleAndState() const {
  std::string out;
  if (!plan.schedule.empty()) {
    out += "\n\n# The calls after the first: tcfuzz calls forward once, then, from the state as built, makes each\n"
           "# change and calls forward again on the same inputs; each call's outputs and Python state are compared.\n";
    if (std::any_of(plan.schedule.begin(), plan.schedule.end(), [](const ScheduleStep& s) { return s.change == "requires-grad"; }))
      out += "\n\ndef " + global("flip_requires_grad") + "(inputs):  # what a step returns: the call's inputs, changed\n"
             "    written = set(globals().get(\"" + global("WRITTEN_INPUTS") + "\", ()))\n"
             "    return [x.detach().requires_grad_(not x.requires_grad)\n"
             "            if isinstance(x, torch.Tensor) and x.is_floating_point() and i not in written else x\n"
             "            for i, x in enumerate(inputs)]\n";
    if (std::any_of(plan.schedule.begin(), plan.schedule.end(), [](const ScheduleStep& s) { return s.change == "dtype"; }))
      out += "\n\ndef " + global("as_float64") + "(inputs):  # what a step returns: the call's floating inputs as float64, complex as complex128\n"
             "    return [x.detach().to(torch.complex128 if x.is_complex() else torch.float64).requires_grad_(x.requires_grad)\n"
             "            if isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex()) else x for x in inputs]\n";
    std::vector<std::string> names;
    for (size_t k = 0; k < plan.schedule.size(); ++k) {
      StepText step = scheduleStep(k);
      out += fmt::format("\n\ndef {}(model):\n    \"\"\"{}\"\"\"\n{}", step.name, step.doc, step.body);
      names.push_back(step.name);
    }
    out += fmt::format("\n\n{} = [{}]\n", global("SCHEDULE"), fmt::join(names, ", "));
  }
  if (std::vector<std::string> globals = plan.stateGlobals(); !globals.empty()) {
    std::vector<std::string> quoted;
    for (const auto& g : globals) quoted.push_back("\"" + global(g) + "\"");
    out += fmt::format("{}{} = ({}{})\n", plan.schedule.empty() ? "\n\n" : "", global("STATE_GLOBALS"), fmt::join(quoted, ", "),
                       quoted.size() == 1 ? "," : "");
  }
  return out;
}

Graph singleTraceProgram(const Graph& g) {
  Graph out = g;
  out.schedule.clear();
  out.hook.clear();
  for (Node& n : out.nodes) {
    NodePython& p = n.python;
    p.graphBreakBefore = false;
    p.branch.reset();
    p.outputState.clear();
    p.counter = false;
    if (!p.form.empty()) {
      const PythonForm& form = pythonForm(p.form);
      if (form.keepsState || form.breaksGraph) p.form.clear();
    }
    if (p.hop && !kExportedHopKinds.count(p.hop->kind)) p.hop.reset();
    if (n.op == "param_data_add_") {  // self.w.data.add_(x, alpha) -> self.buf.add_(x)
      n.op = "buffer_add_";
      n.attrs.erase("alpha");
    } else if (n.op == "param_detach_lerp_") {  // self.w.detach().lerp_(x, 0.5) -> self.buf.lerp_(x, 0.5)
      n.op = "buffer_lerp_";
      n.attrs["weight"] = 0.5;
    }
  }
  for (Source& s : out.inputs) s.alias = {};
  if (out.contentHash() != g.contentHash()) out.origin.singleTrace = true;  // its replay line says --single-trace
  return out;
}

}  // namespace tcfuzz::gen
