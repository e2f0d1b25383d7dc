#pragma once
// The Python forms a returned floating output may pass through (NodePython::form): loops over dim 0,
// nested functions and closures, containers built and mutated, namedtuples and dataclasses, a class
// defined in forward, a grad-mode region, a gradient hook, and two forms that keep Python state between
// calls (a closure cell of a module global, a dict an instance attribute holds), and submodules held in
// an nn.ModuleList, an nn.ModuleDict or an nn.Sequential, which act differently in train(). What Dynamo must trace
// and guard beyond tensor ops (docs/programs.md, "Python-level constructs").
//
// The rules that keep the oracle sound: a form keeps its output's dtype and shape, and changes its values
// only by multiplying slices by small integers or powers of two, or adding the output to itself, so
// eager, compiled and the float64 reference agree up to one rounding; what it keeps between calls are
// Python ints, shapes and dicts of them, which the state snapshot compares exactly.
#include <string>
#include <string_view>
#include <vector>

namespace tcfuzz::gen {

/// One form. `forward`: forward's lines after the node's code, with $OUT for the output's name (each
/// line indented for forward's body). `module`: definitions at module level, written once per program
/// that uses the form (forms with the same definitions share them). `init`: __init__ lines. `stateGlobal`: the module global STATE_GLOBALS names.
struct PythonForm {
  std::string_view name;
  bool loop;       ///< iterates the output's dim 0: needs an element along it
  bool keepsState; ///< writes Python state that outlives the call
  std::string_view forward;
  std::string_view module = "";
  std::string_view init = "";
  std::string_view imports = "";
  std::string_view stateGlobal = "";
  bool readsTraining = false;  ///< its submodules act differently in train(): a train-mode step changes it
  bool breaksGraph = false;    ///< Dynamo breaks the graph at it (print, tolist without capture_scalar_outputs)
  bool dataDependent = false;  ///< a size in it only the data decides (nonzero, masked_select, .item() as a size)
};

/// Every form, in pythonFormNames()'s order (generators/ir/Graph.h).
const std::vector<PythonForm>& pythonForms();
/// The form named `name`; throws std::invalid_argument for an unknown one.
const PythonForm& pythonForm(const std::string& name);

/// `form`'s forward lines for the output named `out`.
std::string formForwardText(const PythonForm& form, const std::string& out);

}  // namespace tcfuzz::gen
