#pragma once
// Optimization-triggering idioms: short op sequences the compiler has patterns and fusion
// heuristics for (attention written out and as SDPA, matmul chains with transpose, norm then
// activation, a reduction after pointwise ops, cat feeding indexing). The generator grows one as a unit
// on an existing value; which idioms and how often are policy data (GenPolicy::idiomWeights).
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generators/repair/GraphRepair.h"

namespace tcfuzz::gen {

/// One step of an idiom: one of `ops` (drawn), reading `inputs` ("x": the value the idiom grows on,
/// "s<k>": step k's output; missing operands are fresh inputs repair adds), with `attrs` fixed and the
/// op's other attributes drawn.
struct IdiomStep {
  std::vector<std::string> ops;
  std::vector<std::string> inputs;
  nlohmann::json attrs = nlohmann::json::object();
};

/// A named idiom: the value it grows on must be floating with rank in [minRank, maxRank].
struct Idiom {
  std::string name;
  int minRank = 1, maxRank = 4;
  std::vector<IdiomStep> steps;
};

/// The idiom table, each name a key of GenPolicy::idiomWeights.
const std::vector<Idiom>& idioms();
/// The idiom called `name`, or nullptr.
const Idiom* findIdiom(const std::string& name);

/// Appends `idiom` on value `x` through `repairer` (each step repaired like any node); stops at the
/// first step repair rejects. Returns the number of steps appended.
int appendIdiom(const Idiom& idiom, int x, Graph& g, GraphRepairer& repairer, const OpCatalog& catalog,
                const ShapeCaps& caps, Rng& rng);

}  // namespace tcfuzz::gen
