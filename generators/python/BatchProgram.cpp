#include "generators/python/BatchProgram.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

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

std::string whyNotBatchable(const Graph& g, const OpCatalog& catalog) {
  if (!g.schedule.empty()) return "a call schedule";
  if (!g.hook.empty()) return "a hook";
  if (planPythonConstructs(g, catalog).anyConstruct()) return "Python constructs";
  for (const auto& n : g.nodes) {
    const OpSpec* op = catalog.find(n.op);
    if (op && op->random) return "a random op (" + n.op + ")";
  }
  return "";
}

namespace {

int64_t tensorElements(const Graph& g) {
  int64_t n = 0;
  for (const auto* sources : {&g.inputs, &g.params})
    for (const auto& s : *sources) n += g.typeOf(s.value).numel();
  return n;
}

}  // namespace

BatchPlace BatchRoom::place(const Graph& plain, bool batchable) const {
  size_t nodes = plain.nodes.size();
  int64_t elements = tensorElements(plain);
  if (!batchable || nodes > maxNodes_ || elements > maxElements_) return BatchPlace::Alone;
  if (nodes_ + nodes <= maxNodes_ && elements_ + elements <= maxElements_) return BatchPlace::Join;
  return BatchPlace::NextBatch;  // an empty room takes whatever passes the bound: a member is in
}

void BatchRoom::add(const Graph& plain) {
  nodes_ += plain.nodes.size();
  elements_ += tensorElements(plain);
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
  std::ostringstream head, body, init, args, calls, inputs, written;
  head << fmt::format("# tcfuzz batch: {} independent programs judged under one compile, each a member module of\n"
                      "# Model below. Each member is its program as written alone: the same parameters (torch's\n"
                      "# generator reseeded before each), the same inputs (each drawn from its own generator).\n",
                      members.size());
  for (size_t k = 0; k < members.size(); ++k) {
    const Graph& g = members[k];
    if (std::string why = whyNotBatchable(g, emitter.catalog()); !why.empty())
      throw std::invalid_argument(fmt::format("batch member {} may not be batched: {}", k, why));
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
    calls << fmt::format("*self.{}({}), ", m.module, fmt::join(names, ", "));
    inputs << fmt::format("*make_inputs_{}(seed), ", k);
    for (int p : writtenInputPositions(g)) written << m.firstInput + p << ", ";
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
     << "        return (" << calls.str() << ")\n\n\n"
     << "def make_inputs(seed):\n    return [" << inputs.str() << "]\n";
  if (!written.str().empty())
    py << "\n\n# forward writes into these inputs (positions in make_inputs' list): the members' own, moved to their place\n"
       << "WRITTEN_INPUTS = (" << written.str() << ")\n";
  batch.py = py.str();
  return batch;
}

}  // namespace tcfuzz::gen
