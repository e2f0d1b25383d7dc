#include "generators/ir/ProgramFigures.h"

#include <algorithm>
#include <set>
#include <utility>

#include "generators/features/InputAliases.h"
#include "generators/features/InputLayout.h"
#include "generators/python/PythonConstructs.h"
#include "generators/python/PythonForms.h"

namespace tcfuzz::gen {

using nlohmann::json;

namespace {
/// The catalog families whose share of programs the figures report, with the JSON key of each.
constexpr std::pair<const char*, const char*> kFamilyShares[] = {
    {"expand-write", "programs_writing_through_an_expanded_view"},
    {"aten-backward", "programs_calling_an_aten_backward_op"},
    {"precision", "programs_with_a_low_precision_round_trip"},
    {"int-range", "programs_with_int64_values_past_int32"},
    {"reinplace-bait", "programs_with_reinplacing_bait"},
    {"noop-view", "programs_writing_through_a_no_op_view"},
};
}  // namespace

void ProgramFigures::add(const Graph& g, const OpCatalog& catalog) {
  ++programs;
  nodes += static_cast<int64_t>(g.nodes.size());
  deadNodes += deadNodeCount(g);
  bool view = false, inplace = false, inplaceOnView = false, staleView = false, buffer = false, parameter = false;
  std::vector<int> depth(g.values.size(), 0);  // nodes on the longest chain that defines each value
  for (const Node& n : g.nodes) {
    const OpSpec* op = catalog.find(n.op);
    if (op) {
      view = view || op->view || op->family == "inplace-view";
      inplace = inplace || op->inplace;
      // Only writes that land through a view: an in-place op reading a view writes into its clone.
      inplaceOnView = inplaceOnView || op->family == "inplace-view";
      staleView = staleView || op->family == "stale-view";
      buffer = buffer || op->family == "buffer-update";
      parameter = parameter || op->family == "param-data";
    }
    int d = 0;
    for (int in : n.inputs) d = std::max(d, depth[in]);
    for (int out : n.outputs) depth[out] = d + 1;
  }
  withView += view;
  withInplace += inplace;
  withInplaceOnView += inplaceOnView;
  withStaleView += staleView;
  withMutatedBuffer += buffer;
  withMutatedParameter += parameter;
  withViewOrInplace += view || inplace;
  bool nonContiguous = false, offset = false, boundary = false;
  for (const Source& s : g.inputs) {
    boundary = boundary || !s.boundary.empty();
    nonContiguous = nonContiguous || isNonContiguous(s.layout, g.typeOf(s.value));
    offset = offset || hasStorageOffset(s.layout, g.typeOf(s.value));
  }
  withNonContiguousInput += nonContiguous;
  withStorageOffsetInput += offset;
  withBoundaryValues += boundary;
  std::vector<int> written = writtenInputPositions(g);
  withWrittenInput += !written.empty();
  withAliasedInputs += aliasedInputCount(g) > 0;
  withWriteThroughAlias += std::any_of(written.begin(), written.end(), [&](int i) {
    const Source& s = g.inputs[i];
    return !s.alias.none() || std::any_of(g.inputs.begin(), g.inputs.end(), [&](const Source& o) { return o.alias.base == s.name; });
  });
  for (const auto& share : kFamilyShares) {
    const char* family = share.first;  // clang 14: a lambda cannot capture a structured binding
    withFamily[family] += std::any_of(g.nodes.begin(), g.nodes.end(), [&](const Node& n) {
      const OpSpec* op = catalog.find(n.op);
      return op && op->family == family;
    });
  }
  PythonPlan plan = planPythonConstructs(g, catalog);
  withPythonConstruct += plan.anyConstruct();
  withGraphBreak += plan.graphBreak();
  withBranch += std::any_of(plan.nodes.begin(), plan.nodes.end(), [](const NodePython& p) { return p.branch.has_value(); });
  withLoop += std::any_of(plan.nodes.begin(), plan.nodes.end(), [](const NodePython& p) {
    return !p.form.empty() && pythonForm(p.form).loop;
  });
  for (const std::string& form : plan.forms) ++withForm[form];
  withDataDependentSize += std::any_of(plan.forms.begin(), plan.forms.end(),
                                       [](const std::string& f) { return pythonForm(f).dataDependent; });
  withHook += !plan.hook.empty();
  withGlobalHook += plan.hook.starts_with("global-");
  withPythonStateWrite += plan.mutatesState();
  withSchedule += !plan.schedule.empty();
  std::set<std::string> changes;
  for (const ScheduleStep& s : plan.schedule) changes.insert(s.change);
  for (const std::string& change : changes) ++withScheduleChange[change];
  withHop += !plan.hopKinds.empty();
  withTorchFunc += std::any_of(plan.hopKinds.begin(), plan.hopKinds.end(), [](const std::string& k) {
    return k == "autograd_function" || hopKind(k).binding.starts_with("torch.func.");
  });
  for (const std::string& kind : plan.hopKinds) ++withHopKind[kind];
  for (const auto& region : plan.hops)
    if (region) {
      ++regions;
      regionNodes += static_cast<int64_t>(region->nodes.size());
    }
  int longest = 0;
  for (int out : g.outputs) longest = std::max(longest, depth[out]);
  depthSum += longest;
  for (const Node& n : g.nodes)
    for (int out : n.outputs)
      if (int uses = g.useCount(out); uses > 0) {
        ++consumedValues;
        consumerSum += uses;
        sharedValues += uses > 1;
      }
}

json ProgramFigures::toJson() const {
  auto share = [](int64_t part, int64_t whole) { return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0.0; };
  json figures = {{"programs", programs},
          {"dead_node_share", share(deadNodes, nodes)},
          {"programs_with_view", share(withView, programs)},
          {"programs_with_inplace", share(withInplace, programs)},
          {"programs_with_inplace_on_view", share(withInplaceOnView, programs)},
          {"programs_with_view_read_after_its_base_is_written", share(withStaleView, programs)},
          {"programs_with_view_or_inplace", share(withViewOrInplace, programs)},
          {"programs_with_noncontiguous_input", share(withNonContiguousInput, programs)},
          {"programs_with_storage_offset_input", share(withStorageOffsetInput, programs)},
          {"programs_with_mutated_buffer", share(withMutatedBuffer, programs)},
          {"programs_with_parameter_written_through_data", share(withMutatedParameter, programs)},
          {"programs_with_boundary_values", share(withBoundaryValues, programs)},
          {"programs_writing_into_an_input", share(withWrittenInput, programs)},
          {"programs_passing_aliased_inputs", share(withAliasedInputs, programs)},
          {"programs_writing_through_an_aliased_input", share(withWriteThroughAlias, programs)},
          {"programs_with_a_python_construct", share(withPythonConstruct, programs)},
          {"programs_with_a_graph_break", share(withGraphBreak, programs)},
          {"programs_with_a_branch", share(withBranch, programs)},
          {"programs_with_a_loop", share(withLoop, programs)},
          {"programs_with_a_hook", share(withHook, programs)},
          {"programs_with_a_global_module_hook", share(withGlobalHook, programs)},
          {"programs_writing_python_state", share(withPythonStateWrite, programs)},
          {"programs_with_a_call_schedule", share(withSchedule, programs)},
          {"programs_with_a_higher_order_op", share(withHop, programs)},
          {"programs_with_a_data_dependent_size", share(withDataDependentSize, programs)},
          {"programs_with_torch_func_or_an_autograd_function", share(withTorchFunc, programs)},
          {"mean_region_nodes", share(regionNodes, regions)},
          {"mean_depth", share(depthSum, programs)},
          {"mean_fan_out", share(consumerSum, consumedValues)},
          {"shared_value_share", share(sharedValues, consumedValues)}};
  for (auto [family, key] : kFamilyShares) {
    auto found = withFamily.find(family);
    figures[key] = share(found == withFamily.end() ? 0 : found->second, programs);
  }
  json forms = json::object();  // every form, so a policy that never draws one shows its 0
  for (const PythonForm& f : pythonForms()) {
    auto found = withForm.find(std::string(f.name));
    forms[std::string(f.name)] = share(found == withForm.end() ? 0 : found->second, programs);
  }
  figures["programs_with_each_python_form"] = forms;
  json changes = json::object();  // every change, as for the forms
  for (const std::string& change : scheduleChangeNames()) {
    auto found = withScheduleChange.find(change);
    changes[change] = share(found == withScheduleChange.end() ? 0 : found->second, programs);
  }
  figures["programs_with_each_schedule_change"] = changes;
  json hops = json::object();  // every higher-order op, as for the forms
  for (const std::string& kind : hopKindNames()) {
    auto found = withHopKind.find(kind);
    hops[kind] = share(found == withHopKind.end() ? 0 : found->second, programs);
  }
  figures["programs_with_each_higher_order_op"] = hops;
  return figures;
}

}  // namespace tcfuzz::gen
