#pragma once
// The program-shape figures, summed over generated programs: dead nodes, views, in-place
// ops (on views too), non-contiguous inputs, mutated buffers, depth and fan-out. `tcfuzz gen --json`
// and scripts/bench print them.
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "generators/ir/Graph.h"
#include "generators/OpCatalog.h"

namespace tcfuzz::gen {

/// Counts over the programs added so far.
struct ProgramFigures {
  int64_t programs = 0, nodes = 0, deadNodes = 0;
  int64_t withView = 0;             // a node whose output is a view of its input
  int64_t withInplace = 0;          // an in-place op
  int64_t withInplaceOnView = 0;    // an in-place op that writes through a view (family inplace-view)
  int64_t withStaleView = 0;        // a view read after its base is written (family stale-view)
  int64_t withViewOrInplace = 0;
  int64_t withNonContiguousInput = 0;
  int64_t withStorageOffsetInput = 0;
  int64_t withMutatedBuffer = 0;    // forward writes a registered buffer
  int64_t withMutatedParameter = 0; // forward writes a parameter through .data or .detach()
  int64_t withBoundaryValues = 0;   // an input holds boundary values
  int64_t withWrittenInput = 0;     // forward writes into a program input (Node::writesInput)
  int64_t withAliasedInputs = 0;    // two program inputs share storage (InputAlias)
  int64_t withWriteThroughAlias = 0;  // forward writes into an input that shares storage with another
  /// Programs holding a node of each family of kFamilyShares (writes through an expanded view, aten
  /// backward ops, 16-bit round trips, int64 past int32), by family.
  std::map<std::string, int64_t> withFamily;
  int64_t withPythonConstruct = 0;  // a Python-level construct that holds (python/PythonConstructs.h)
  int64_t withGraphBreak = 0;       // torch._dynamo.graph_break()
  int64_t withBranch = 0;           // an `if` in forward
  int64_t withLoop = 0;             // a loop over an output's dim 0 (a loop form)
  std::map<std::string, int64_t> withForm;  // programs whose nodes use each Python form (python/PythonForms.h)
  std::map<std::string, int64_t> withScheduleChange;  // programs whose schedule makes each change (ScheduleStep)
  std::map<std::string, int64_t> withHopKind;  // programs with a region each higher-order op runs
  int64_t withDataDependentSize = 0;  // an output through a data-dependent form (nonzero, .item() as a size, ...)
  int64_t withHop = 0;        // a region run by a higher-order op or a torch.func transform (HigherOrderOps.h)
  int64_t withTorchFunc = 0;  // a region run by torch.func (vmap, grad) or a custom autograd.Function
  int64_t regions = 0, regionNodes = 0;  // regions and the nodes in them
  int64_t withHook = 0;             // a forward hook or pre-hook on the model, or a global module hook
  int64_t withGlobalHook = 0;       // a process-wide module hook (register_module_forward[_pre]_hook)
  int64_t withPythonStateWrite = 0; // forward writes an attribute, a list or a global
  int64_t withSchedule = 0;         // a call schedule: 2 calls or more with a state change in between
  int64_t depthSum = 0;             // longest chain of nodes from a source to an output
  int64_t consumedValues = 0, consumerSum = 0, sharedValues = 0;  // node outputs read at least once; reads; read twice or more

  /// Adds one program.
  void add(const Graph& g, const OpCatalog& catalog);
  /// Shares (of programs, of nodes) and means, as printed by `tcfuzz gen --json`.
  nlohmann::json toJson() const;
};

}  // namespace tcfuzz::gen
