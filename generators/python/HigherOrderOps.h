#pragma once
// Higher-order ops and torch.func transforms around a region of the op graph (docs/programs.md, "Higher-order
// ops"). A node that carries a HopConstruct is the head of a region: the head and every ancestor whose outputs
// only the region reads become the body of a nested function in forward, and a higher-order op runs it (cond,
// map, while_loop, scan, associative_scan, checkpoint, nested_compile_region, flex_attention, a custom
// autograd.Function, and
// torch.func's vmap, grad, jvp, vjp, jacrev and jacfwd). The region is computed from the graph as
// it is, never stored, so repair, mutation and minimization keep it valid: a construct whose region no longer
// holds is left out (planHopRegions), never written wrong.
//
// The rules that keep the oracle sound:
//   - a body is functional: no random op, no in-place write into what the body did not make, no write into an
//     input, a buffer or a parameter, no Python construct inside it;
//   - a head keeps its output's dtype and shape, and the ops around the body change values only by exact
//     factors (a roll, a stack of copies, a sum of copies) or by rounding that fp64 arbitrates;
//   - cond's predicate reads a program input nothing writes, with exact operations, so every mode takes the
//     same branch;
//   - the eager and float64 references run each op's Python meaning (repro_shared.DESUGARED_HOPS: cond as
//     if/else, while_loop as while, map and scan and vmap as loops, checkpoint and nested_compile_region as a
//     plain call, flex_attention as explicit masked softmax attention, grad and vjp as torch.autograd.grad, jvp and
//     the Jacobians as torch.autograd.functional), which
//     the emitted module names make possible: the program calls
//     every higher-order op through a module global that the references rebind.
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "generators/OpCatalog.h"
#include "generators/ir/Graph.h"
#include "generators/ir/Rng.h"

namespace tcfuzz::gen {

/// One higher-order op. `global`: the module global the program calls it through, and `binding` its value.
struct HopKind {
  std::string_view name;
  std::string_view global;
  std::string_view binding;
  bool floatingHead;   ///< the head's output must be floating (the loop carries a sum)
  bool mapsOperand;    ///< runs over a stack of copies of the body's first operand (map, scan, vmap)
  bool gradOperand;    ///< differentiates with respect to the body's first operand, which has the head's type
  bool predicate;      ///< reads a program input nothing writes (cond)
  bool floatingOperand = false;  ///< differentiates with respect to the body's first operand, which is floating
  bool jacobian = false;         ///< builds the Jacobian of the head with respect to that operand (bounded in size)
  bool scansDim0 = false;        ///< scans the head's output along dim 0 (needs an element along it)
  bool attention = false;        ///< attends over the head's output as (batch, heads, length, dim) float32
};

/// Every kind, in hopKindNames()'s order (generators/ir/Graph.h).
const std::vector<HopKind>& hopKinds();
const HopKind& hopKind(const std::string& name);

/// A region that holds: `nodes` (node indices in execution order, the head last) and `operands` (the values the
/// body reads from outside it, which are local names in forward, the one the op maps over or differentiates
/// first). Parameters are read through self, never passed.
struct HopRegion {
  std::string kind;
  size_t head = 0;
  std::vector<size_t> nodes;
  std::vector<int> operands;
  int predicateInput = -1;  ///< cond: the program input's value id
  double threshold = 0;
};

/// The region of node `head`'s construct, or nullopt where it does not hold. `pythonOf(i)` says whether node i
/// carries another Python construct (a body node must carry none).
std::optional<HopRegion> hopRegionOf(const Graph& g, const OpCatalog& catalog, size_t head, const HopConstruct& hop,
                                     const std::vector<NodePython>& python);

/// A threshold for a predicate `x > t` inside `d` that every floating dtype holds exactly (a multiple of 1/8), so
/// the comparison means the same in float16 as in the float64 reference; for integers, k + 0.5; 0 for booleans.
double exactThreshold(const Distribution& d, Rng& rng);

/// Draws a construct for a node whose region holds, with chance `chance`; false when none was added.
bool addHopConstruct(Graph& g, const OpCatalog& catalog, double chance, Rng& rng);

/// forward's lines for a region: the body function (its nodes' lines, `bodyLines`, already written for forward's
/// indentation), the op's helpers and the call that assigns the head's output `out`. `names` are the values'
/// Python names.
std::string hopRegionText(const Graph& g, const HopRegion& r, const std::vector<std::string>& names,
                          const std::string& bodyLines);

/// The module globals the kinds in `kinds` are called through, with a comment; "" for none.
std::string hopGlobalsText(const std::set<std::string>& kinds);

}  // namespace tcfuzz::gen
