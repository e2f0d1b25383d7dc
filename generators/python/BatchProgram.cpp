#include "generators/python/BatchProgram.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "generators/features/InputAliases.h"
#include "generators/python/PythonConstructs.h"

namespace tcfuzz::gen {

int BatchProgram::memberOfInput(int input) const {
  for (size_t k = 0; k < members.size(); ++k)
    if (input >= members[k].firstInput && input < members[k].firstInput + members[k].inputs) return static_cast<int>(k);
  return -1;
}

int BatchProgram::memberOfOutput(int output) const {
  for (size_t k = 0; k < members.size(); ++k)
    if (output >= members[k].firstOutput && output < members[k].firstOutput + members[k].outputs)
      return static_cast<int>(k);
  return -1;
}

int BatchProgram::memberOfLine(int line) const {
  for (size_t k = 0; k < members.size(); ++k)
    if (line >= members[k].firstLine && line <= members[k].lastLine) return static_cast<int>(k);
  return -1;
}

int BatchProgram::memberOfState(const std::string& qualified) const {
  for (size_t k = 0; k < members.size(); ++k)
    if (qualified.starts_with(members[k].module + ".")) return static_cast<int>(k);
  return -1;
}

namespace {

int64_t tensorElements(const Graph& g) {
  int64_t n = 0;
  for (const auto* sources : {&g.inputs, &g.params})
    for (const auto& s : *sources) n += g.typeOf(s.value).numel();
  return n;
}

bool breaks(const PythonPlan& plan) {
  return plan.graphBreak() || std::any_of(plan.nodes.begin(), plan.nodes.end(), [](const NodePython& p) {
           return p.branch && branchReadsTensor(p.branch->kind);
         });
}

bool changesState(const PythonPlan& plan) { return !plan.schedule.empty() || plan.mutatesState(); }

/// forward's body: the member calls of `frames`, a graph break between two frames, the outputs in member order.
std::string forwardBody(const std::vector<std::string>& frames) {
  if (frames.size() == 1) return "        return (" + frames[0] + ")\n";
  std::string body = "        outputs = (" + frames[0] + ")\n";
  for (size_t f = 1; f < frames.size(); ++f)
    body += "        torch._dynamo.graph_break()  # a member whose state changes between calls: a frame of its own\n"
            "        outputs += (" + frames[f] + ")\n";
  return body + "        return outputs\n";
}

}  // namespace

BatchPlace BatchRoom::place(const Graph& program, bool batchable) const {
  size_t nodes = program.nodes.size();
  int64_t elements = tensorElements(program);
  if (!batchable || nodes > maxNodes_ || elements > maxElements_) return BatchPlace::Alone;
  if (nodes_ + nodes <= maxNodes_ && elements_ + elements <= maxElements_) return BatchPlace::Join;
  return BatchPlace::NextBatch;  // an empty room takes whatever passes the bound: a member is in
}

void BatchRoom::add(const Graph& program) {
  nodes_ += program.nodes.size();
  elements_ += tensorElements(program);
}

Graph batchMemberProgram(const Graph& g, bool keepConstructs) { return keepConstructs ? g : plainProgram(g); }

bool breaksGraph(const Graph& g, const OpCatalog& catalog) { return breaks(planPythonConstructs(g, catalog)); }

bool changesStateBetweenCalls(const Graph& g, const OpCatalog& catalog) {
  return changesState(planPythonConstructs(g, catalog));
}

BatchFrame batchFrame(const Graph& g, const OpCatalog& catalog) {
  PythonPlan plan = planPythonConstructs(g, catalog);
  return breaks(plan) ? BatchFrame::Breaks : changesState(plan) ? BatchFrame::Own : BatchFrame::Shared;
}

Graph plainProgram(const Graph& g) {
  Graph out = g;
  bool dropped = !out.schedule.empty() || !out.hook.empty();
  out.schedule.clear();
  out.hook.clear();
  for (Node& n : out.nodes) {
    dropped = dropped || !n.python.empty();
    n.python = NodePython{};
  }
  if (dropped) out.origin.plain = true;  // its replay line makes it again with --plain
  return out;
}

BatchProgram emitBatch(const PythonEmitter& emitter, const std::vector<Graph>& members,
                       const std::vector<std::string>& labels) {
  if (members.empty()) throw std::invalid_argument("a batch needs at least one member");
  BatchProgram batch;
  std::ostringstream head, body, init, args, inputs, written, aliased, state;
  std::vector<std::string> frames;  // forward's member calls, a graph break between two (BatchMember::ownFrame)
  bool anyConstruct = false;
  std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> steps;  // per step: docs, member steps
  head << fmt::format("# tcfuzz batch: {} independent programs judged under one compile, each a member module of\n"
                      "# Model below. Each member is its program as written alone: the same parameters (torch's\n"
                      "# generator reseeded before each), the same inputs (each drawn from its own generator).\n",
                      members.size());
  for (size_t k = 0; k < members.size(); ++k) {
    const Graph& g = members[k];
    BatchMember m;
    m.module = fmt::format("m{}", k);
    m.firstInput = k ? batch.members.back().firstInput + batch.members.back().inputs : 0;
    m.firstOutput = k ? batch.members.back().firstOutput + batch.members.back().outputs : 0;
    m.inputs = static_cast<int>(g.inputs.size());
    m.outputs = static_cast<int>(g.outputs.size());
    head << fmt::format("#   member {} ({}): {}\n", k, m.module, k < labels.size() ? labels[k] : "program");
    std::string text = emitter.emit(g, nullptr, ProgramNames{fmt::format("Member{}", k), fmt::format("make_inputs_{}", k),
                                                             fmt::format("_{}", k), false});
    body << fmt::format("# --- member {} ---\n", k);
    m.firstLine = static_cast<int>(std::count(body.view().begin(), body.view().end(), '\n')) + 1;  // within body
    m.lastLine = m.firstLine + static_cast<int>(std::count(text.begin(), text.end(), '\n')) - 1;
    body << text << "\n\n";
    init << fmt::format("        torch.manual_seed(seed)\n        self.{} = Member{}()\n", m.module, k);
    std::vector<std::string> names;
    for (const auto& s : g.inputs) names.push_back(fmt::format("{}_{}", m.module, s.name));
    for (const auto& n : names) args << ", " << n;
    PythonPlan plan = planPythonConstructs(g, emitter.catalog());
    m.ownFrame = changesState(plan);
    if (frames.empty() || m.ownFrame || batch.members.back().ownFrame) frames.emplace_back();
    frames.back() += fmt::format("*self.{}({}), ", m.module, fmt::join(names, ", "));
    inputs << fmt::format("*make_inputs_{}(seed), ", k);
    for (int p : writtenInputPositions(g)) written << m.firstInput + p << ", ";
    for (size_t i = 0; i < g.inputs.size(); ++i)
      if (const Source* base = g.inputs[i].alias.none() ? nullptr : aliasBase(g, g.inputs[i]))
        aliased << fmt::format("{}: {}, ", m.firstInput + static_cast<int>(i), m.firstInput + (base - g.inputs.data()));
    anyConstruct = anyConstruct || plan.anyConstruct();
    PythonText python{plan, fmt::format("_{}", k), fmt::format("Member{}", k)};
    for (size_t step = 0; step < plan.schedule.size(); ++step) {
      if (steps.size() <= step) steps.emplace_back();
      PythonText::StepText text = python.scheduleStep(step);
      steps[step].first.push_back(fmt::format("{}: {}", m.module, text.doc));
      steps[step].second.push_back(fmt::format("(\"{}\", {}, {}, {})", m.module, m.firstInput, m.inputs, text.name));
    }
    std::vector<std::string> globals;
    for (const std::string& name : plan.stateGlobals()) globals.push_back(fmt::format("\"{}_{}\", ", name, k));
    state << fmt::format("(\"{}\", ({})), ", m.module, fmt::join(globals, ""));
    batch.members.push_back(m);
  }
  std::ostringstream py;
  py << head.str() << "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n";
  int before = static_cast<int>(std::count(py.view().begin(), py.view().end(), '\n'));
  for (auto& m : batch.members) {
    m.firstLine += before;
    m.lastLine += before;
  }
  py << body.str();
  py << "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     << "        seed = torch.initial_seed()  # the worker's seed: each member is built as it is alone\n"
     << init.str() << "\n"
     << "    def forward(self" << args.str() << "):\n"
     << forwardBody(frames) << "\n\n"
     << "def make_inputs(seed):\n    return [" << inputs.str() << "]\n";
  if (!written.str().empty())
    py << "\n\n# forward writes into these inputs (positions in make_inputs' list): the members' own, moved to their place\n"
       << "WRITTEN_INPUTS = (" << written.str() << ")\n";
  if (!aliased.str().empty())
    py << "\n\n# these inputs view another input's storage (position: the position of the input they view), the members' own\n"
       << "ALIASED_INPUTS = {" << aliased.str() << "}\n";
  if (anyConstruct)
    py << "\n\n# each member's Python state (its submodule's attributes, its class's, its globals), compared after every call\n"
       << "# as the member alone keeps it\nBATCH_STATE = (" << state.str() << ")\n";
  if (!steps.empty()) {
    py << "\n\n# The calls after the first, for the whole batch: step s makes step s of each member that has one, on that\n"
          "# member's submodule (a change of the inputs changes only that member's), then calls forward again.\n"
          "def batch_step(model, steps):\n"
          "    changes = []\n"
          "    for name, first, count, step in steps:\n"
          "        change = step(model.get_submodule(name))\n"
          "        if callable(change):\n"
          "            changes.append((first, count, change))\n\n"
          "    def change_inputs(inputs):\n"
          "        inputs = list(inputs)\n"
          "        for first, count, change in changes:\n"
          "            inputs[first:first + count] = change(inputs[first:first + count])\n"
          "        return inputs\n\n"
          "    return change_inputs if changes else None\n";
    std::vector<std::string> names;
    for (size_t step = 0; step < steps.size(); ++step) {
      names.push_back(fmt::format("change_{}", step + 1));
      py << fmt::format("\n\ndef {}(model):\n    \"\"\"{}\"\"\"\n    return batch_step(model, [{}])\n", names.back(),
                        fmt::join(steps[step].first, "; "), fmt::join(steps[step].second, ", "));
    }
    py << fmt::format("\n\nSCHEDULE = [{}]\n", fmt::join(names, ", "));
  }
  batch.py = py.str();
  return batch;
}

}  // namespace tcfuzz::gen
