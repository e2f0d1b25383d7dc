#pragma once
// The program form an LLM writes (and the Python lift produces), made valid: the first JSON object
// in untrusted text is parsed strictly against a small schema, then replayed node by node through
// the generator's shape-constraint repair. Also the GBNF grammar that constrains a llama.cpp
// server's decoding to that schema, and the reverse direction (a Graph in the same form, for prompts).
//
// The form:
//   {"inputs":  [{"name": "x", "shape": [4, 8], "dtype": "float32", "parameter": false,
//                 "layout": {"kind": "transposed", "dims": [0, 1]},
//                 "boundary": {"kinds": ["nonfinite"], "share": 0.1}}, ...],   (layout, boundary optional: InputLayout.h)
//    "nodes":   [{"out": "v0", "op": "relu", "args": ["x"], "attrs": {}}, ...],
//    "outputs": ["v0", ...]}
// A node's later outputs are named "<out>.1", "<out>.2" (split, max with dim, frexp).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generators/ir/Graph.h"
#include "generators/repair/GraphRepair.h"
#include "generators/repair/IntConstraints.h"
#include "generators/OpCatalog.h"

namespace tcfuzz::gen {

/// Limits of the form: larger documents are rejected as "too-large".
struct ProposalLimits {
  int maxInputs = 8;
  int maxNodes = 40;
  int maxRank = 6;
};

/// What came of one proposal: a valid graph, or the stable reason it was rejected.
struct ProposalOutcome {
  std::optional<Graph> graph;
  /// "" when accepted; else one of: no-json, truncated, json-syntax, schema, too-large, unknown-op,
  /// undefined-value, no-valid-node, invalid-after-repair.
  std::string rejection;
  std::string detail;                ///< what exactly was wrong (for logs), or what repair dropped
  std::vector<std::string> dropped;  ///< nodes repair could not keep (the program survived without them)
  int unknownOps = 0;                ///< nodes naming an op the catalog lacks (dropped)
  int undefinedArgs = 0;             ///< arguments naming no earlier value (left out; repair refills arity)
  bool repaired = false;             ///< repair changed something (a cast, a redraw, a resize, a drop)
};

/// The first complete top-level JSON object in `text` (an LLM wraps it in prose or ``` fences).
/// nullopt with `why` = "no-json", "truncated" (an object starts but never closes) or "json-syntax".
std::optional<nlohmann::json> extractJsonObject(const std::string& text, std::string* why, std::string* detail);

/// Strictly checks `doc` against the form (every key and type; unknown keys are errors), then builds it
/// with a GraphRepairer: inputs become sources, nodes are appended (repaired, or dropped when repair
/// cannot keep them), outputs name surviving values. `seed` drives repair's draws.
ProposalOutcome buildProposal(const nlohmann::json& doc, const OpCatalog& catalog, const ShapeCaps& caps,
                              uint64_t seed, IntSolver& solver, const ProposalLimits& limits = {});
/// extractJsonObject then buildProposal.
ProposalOutcome proposalFromText(const std::string& text, const OpCatalog& catalog, const ShapeCaps& caps,
                                 uint64_t seed, IntSolver& solver, const ProposalLimits& limits = {});

/// `g` in the proposal form (value names as in the emitted Python: inputs by source name, nodes v<i>).
nlohmann::json proposalOf(const Graph& g);

/// GBNF (llama.cpp grammar) for the form, with "op" restricted to `ops` (all catalog ops when empty),
/// at most `maxNodes` nodes and 3 inputs, dims 1..16, rank 1..4: short enough that a small model ends
/// its object before the token limit.
std::string proposalGrammar(const OpCatalog& catalog, const std::vector<std::string>& ops = {}, int maxNodes = 10);

}  // namespace tcfuzz::gen
