#pragma once
// Writes a Graph as the Python program a maintainer expects in a bug report: a Model class with
// its layers in __init__, one op per line in forward with a shape comment, and make_inputs(seed)
// drawing the inputs bit-exactly from the seed (the program contract of `tcfuzz run`).
#include <string>

#include "generators/ir/Graph.h"
#include "generators/OpCatalog.h"

namespace tcfuzz::gen {

/// The names a program's text defines. A batch member (BatchProgram.h) is written under names of its own, without
/// the provenance header and the torch imports, which the batch's text holds once.
struct ProgramNames {
  std::string model = "Model";             ///< the nn.Module class
  std::string makeInputs = "make_inputs";  ///< the inputs function
  std::string suffix;                      ///< appended to WRITTEN_INPUTS, ALIASED_INPUTS and the globals that hold state
  bool standalone = true;                  ///< the provenance header and the torch imports
};

class PythonEmitter {
 public:
  explicit PythonEmitter(const OpCatalog& catalog) : catalog_(catalog) {}
  /// The program text. std::invalid_argument when the graph names an op the catalog lacks.
  std::string emit(const Graph& g) const { return emit(g, nullptr); }
  /// Also records, per node, the 1-based line of the text where its code ends.
  std::string emit(const Graph& g, std::vector<int>* nodeLines) const { return emit(g, nodeLines, ProgramNames{}); }
  /// The program text under `names`.
  std::string emit(const Graph& g, std::vector<int>* nodeLines, const ProgramNames& names) const;
  const OpCatalog& catalog() const { return catalog_; }

 private:
  const OpCatalog& catalog_;
};

/// The program header's comment lines: where the program came from (its Origin) and the command that
/// makes it again, run in the campaign's output directory where the origin names stored files.
std::string provenanceHeader(const Graph& g);
/// One sentence on where the program came from: grammar (seed, index), mutation (mutator, parent,
/// donor), or LLM (model, strategy, target, reply id, core nodes grown around). For reports.
std::string originSummary(const Graph& g);

/// A JSON attribute value as a Python literal of the given kind (torch.float16, 'reflect', [1, 2], None).
std::string pythonLiteral(const nlohmann::json& value, AttrKind kind);

}  // namespace tcfuzz::gen
