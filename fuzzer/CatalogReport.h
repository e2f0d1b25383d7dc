#pragma once
// `tcfuzz ops`: the op catalog as a listing, with its coverage of the dispatcher's aten:: operators.
#include <string>

#include "generators/OpCatalog.h"

namespace tcfuzz {

/// Every op of `catalog` (name, family, arity, accepted dtypes per input, attributes with their
/// domains, Python and ATen spellings) followed by the coverage of the aten:: namespace: the
/// number of distinct aten:: operator names the dispatcher knows (overloads folded), how many
/// the catalog's ATen spellings reference, and the percentage. `json`: one JSON document
/// {"ops": [...], "coverage": {"aten_ops", "covered", "percent", "referenced": [...]}};
/// otherwise human-readable text.
std::string catalogReport(const gen::OpCatalog& catalog, bool json);

}  // namespace tcfuzz
