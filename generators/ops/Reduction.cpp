#include "generators/ops/Common.h"

namespace tcfuzz::gen {

void addReductionOps(OpCatalog& c) {}

}  // namespace tcfuzz::gen
