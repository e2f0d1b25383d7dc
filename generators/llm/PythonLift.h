#pragma once
// The lift table: how a torch call that a traced Python program made maps back onto a catalog op.
// A "lift" worker job (fuzzer/worker/python/lift/job.py) runs an untrusted program once in eager, records
// its torch calls, and matches each against this table to propose an IR graph.
#include <optional>

#include <nlohmann/json.hpp>

#include "generators/OpCatalog.h"

namespace tcfuzz::gen {

/// The lift entry of one op, parsed from its OpSpec::python spelling; nullopt when the spelling is
/// not a single call (a "stmt:", a layer's "{self}(...)", a subscript, a chain of methods):
///   {"op": "softmax", "callee": "F.softmax", "rank": [1, 8],
///    "args": [{"input": 0}], "kwargs": {"dim": {"attr": "dim", "kind": "int"}}}
/// callee: the dotted Python function ("torch.sigmoid", "F.pad"); a method spelling {0}.m(...) gives
/// "torch.Tensor.m" with input 0 as its first argument ("{0}.contiguous().m(...)" counts as m); an
/// operator gives the dunder ("{0} - {1}": "torch.Tensor.__sub__"; "{value} - {0}":
/// "torch.Tensor.__rsub__" with args [input 0, attr value]). A trailing ".values" is dropped: the
/// lifted node reads output 0. args, in call order, and kwargs, by keyword, hold one slot each:
///   {"input": k}                  tensor input k
///   {"inputs": "*"}               a list of all the tensor inputs ([{*}])
///   {"attr": name, "kind": k}     attribute `name`; kind is int, int_list, float, bool, choice or
///                                 dtype; "choices" lists a choice's values; "optional": true when it
///                                 may be absent ({?name} or an optional AttrSpec)
///   {"attr": name, "kind": "int", "choices_index": [..]}   the attribute is the index of the string
///                                 the call passes: reduction=('none', 'mean', 'sum')[{reduction}]
///   {"literal": v}                a fixed value the call must pass (mode="reflect", stable=True)
/// rank: the rank range of input 0 (ops with the same spelling differ only there, e.g. interpolate).
std::optional<nlohmann::json> liftEntry(const OpSpec& op);

/// The entries of every catalog op that has one, in catalog order (the order the worker tries
/// candidates for one function in).
nlohmann::json liftTable(const OpCatalog& catalog);

}  // namespace tcfuzz::gen
