#pragma once
// Writes into program inputs: in-place nodes that write into the tensor forward received instead of a
// clone of it, and fills of an input before anything reads it. Functionalization has to carry each
// write back into the caller's tensor; the oracle compares the inputs after every call.
// Inputs laid out expanded (stride 0) are never written: torch.compile refuses mutations of memory
// where elements overlap by design (functionalization's internal-overlap check), so such a write is
// no finding. Writes through an expanded view of a tensor that does not overlap are the catalog's
// "expand-write" family.
#include <string>
#include <vector>

#include "generators/ir/Graph.h"
#include "generators/OpCatalog.h"
#include "generators/ir/Rng.h"

namespace tcfuzz::gen {

/// How often generation writes into inputs (GenPolicy's input_write_chance and input_fill_chance).
struct InputWriteChances {
  double write = 0;  // an in-place node that can write into the program input it reads does
  double fill = 0;   // a program starts with a fill of one floating input
  std::vector<std::string> fillOps{"masked_fill_", "fill_", "zero_"};  // the fills the policy allows, of these
};

/// Whether eager and torch.compile both take `op` writing in place into a tensor of type `t` laid out as
/// `layout`: an in-place op, and no expanded layout (elements sharing memory).
bool writableInPlace(const OpSpec& op, const Layout& layout, const TensorType& t);

/// Whether `n` could write into the program input it reads as input 0: writableInPlace on that input's
/// layout, and the input is read by nothing else nor returned.
bool canWriteInput(const Graph& g, const OpCatalog& catalog, const Node& n);

/// Marks each node that canWriteInput as writing into its input (Node::writesInput) with chance `write`;
/// then, with chance `fill`, puts a fill of one floating input first (fill_, zero_ or masked_fill_ with a
/// fresh mask), whose readers then read the filled input. The fill's value lies in the input's range, so
/// every range derived from the input still holds. Values may be renumbered (sourcesFirst). Returns the
/// number of nodes that write into an input.
int addInputWrites(Graph& g, const OpCatalog& catalog, const InputWriteChances& chances, Rng& rng);

}  // namespace tcfuzz::gen
