#pragma once
// Aliased program inputs: forward receives two arguments that share storage (x with x itself, x[:],
// x.t(), x.narrow(...), x.expand(...) or a row-major as_strided view of x's storage). AOTAutograd has to
// rebuild such inputs from one synthetic base when forward writes through either, and Inductor must
// not reorder a read of one past a write of the other. make_inputs draws the base and derives the
// alias from it (PythonEmitter); the worker's input copies keep the sharing (repro_shared.layout_copies).
//
// Rules that keep such programs valid in eager and free of false alarms:
//   - only floating inputs alias, and only inputs of one dtype and one distribution: every range the
//     IR derived for the alias still holds for the base's values;
//   - an alias has no layout and no boundary values of its own, and its base is no alias;
//   - an expanded alias (elements overlap) is never written: compile refuses such writes by design;
//   - an in-place node that writes into one input of a group never reads another member of it (or a view
//     of one) as another operand: eager refuses a write whose source partly overlaps its destination;
//   - an alias read by an op that needs dense input is a row-major view.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generators/ir/Graph.h"
#include "generators/ir/Rng.h"
#include "generators/ir/Strides.h"
#include "generators/OpCatalog.h"

namespace tcfuzz::gen {

/// The alias kinds, each a key of GenPolicy::aliasWeights.
const std::vector<std::string>& aliasKinds();

/// The input named by `s.alias.base`, nullptr when there is none of that name.
const Source* aliasBase(const Graph& g, const Source& s);
/// Why input `s`'s alias cannot hold ("" when it can, or when `s` has none): its base is missing, is `s`
/// or is an alias itself; the dtypes or distributions differ, or are not floating; `s` has a layout or
/// boundary values of its own; the kind does not yield `s`'s shape from the base's; an expanded alias
/// is written.
std::string aliasProblem(const Graph& g, const Source& s);
/// The strides and storage offset of input `s` as make_inputs gives it: its alias's view of the base's
/// geometry, else its own layout's.
Geometry sourceGeometry(const Graph& g, const Source& s);
/// The Python expression of `s`'s alias over its base: "x0", "x0[:]", "x0.transpose(0, 1)",
/// "x0.narrow(0, 1, 3)", "x0.expand(2, 3)", "x0.as_strided((2, 3), (3, 1), x0.storage_offset() + 1)".
std::string aliasPython(const Graph& g, const Source& s);
/// A few words for the make_inputs comment and reports: "aliases x0 (transposed, dims 0 and 1)".
std::string describeAlias(const InputAlias& alias);

/// Every alias that input `s` could take over another input with `catalog`'s rules kept (the header's
/// list), at most one per (base, kind).
std::vector<InputAlias> aliasCandidates(const Graph& g, const OpCatalog& catalog, const Source& s);
/// How often generation aliases inputs (GenPolicy's alias_read_after_write_chance and input_alias_chance).
struct AliasChances {
  double readAfterWrite = 0;  // where forward writes into an input, a new input aliases it, read after the write
  double pair = 0;            // an existing input becomes an alias of another
};
/// Makes at most one program input an alias of another. With chance `readAfterWrite`, where forward writes
/// into an input, a new input aliases it and a new node reads it after the write (an output o becomes
/// o - z). Else, with chance `pair`, an existing input becomes an alias, the input and kind drawn with
/// `weights` (kind -> weight) among the candidates, a pair that forward writes into 6 times as often.
/// Returns whether one was made; values may be renumbered (sourcesFirst).
bool addInputAlias(Graph& g, const OpCatalog& catalog, const AliasChances& chances,
                   const std::map<std::string, double>& weights, Rng& rng);
/// Gives back its own draw to every input whose alias no longer holds (aliasProblem, and with a catalog
/// the rules that need one), as after repair, a mutation or a shrinking pass. Returns how many it reset.
int dropInvalidAliases(Graph& g, const OpCatalog* catalog = nullptr);
/// How many inputs are aliases of another.
int aliasedInputCount(const Graph& g);

/// The JSON form {"base": ..., "kind": ..., "dims": [...], "start": n} (dims and start where the kind uses them).
nlohmann::json aliasToJson(const InputAlias& alias);
/// Parses the JSON form; std::invalid_argument naming the fault.
InputAlias aliasFromJson(const nlohmann::json& doc);

}  // namespace tcfuzz::gen
