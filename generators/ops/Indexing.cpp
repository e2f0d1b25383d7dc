// Indexing writes and in-place ops: x[idx] += y, index_put_, scatter, add_, and the like.
#include "generators/ops/Common.h"

namespace tcfuzz::gen {

void addIndexingOps(OpCatalog& c) {}

}  // namespace tcfuzz::gen
