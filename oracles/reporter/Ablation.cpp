#include "oracles/reporter/Ablation.h"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tcfuzz::oracles {

namespace {

constexpr std::string_view kBackendPrefix = "backend=";
constexpr std::string_view kWithoutPrefix = "without ";
constexpr std::string_view kEntryPrefix = "entry=";
constexpr std::string_view kCompiledPartPrefix = "compiled=";

/// Which compiled part of a training-steps finding its rows blame (TrainingLoop::compiled): "" when the rows have
/// no such row. `own` is the finding's own part, which reproduces by definition.
std::string trainingPartAtFault(const std::vector<AblationRow>& rows, const std::string& own) {
  auto reproduces = [&](const std::string& part) {
    if (part == own) return true;
    for (const auto& row : rows)
      if (row.variant == std::string(kCompiledPartPrefix) + part) return row.reproduces;
    return false;
  };
  if (std::none_of(rows.begin(), rows.end(), [](const AblationRow& r) { return r.variant.starts_with(kCompiledPartPrefix); }))
    return "";
  bool model = reproduces("model"), step = reproduces("step");
  if (model && step) return " (the compiled model and the compiled optimizer step each fail alone)";
  if (model) return " (in the compiled model, forward or backward: the optimizer's step compiled alone does not fail)";
  if (step) return " (in the compiled optimizer step, clipping and optimizer.step: the compiled model alone does not fail)";
  return " (only with the model and the optimizer step both compiled)";
}

/// Whether the row of entry point `entry` reproduces (false when there is no such row).
bool reproducesThrough(const std::vector<AblationRow>& rows, const std::string& entry) {
  for (const auto& row : rows)
    if (row.variant == std::string(kEntryPrefix) + entry) return row.reproduces;
  return false;
}

/// Whether the rows have a row for entry point `entry`.
bool hasEntryRow(const std::vector<AblationRow>& rows, const std::string& entry) {
  return std::any_of(rows.begin(), rows.end(),
                     [&](const AblationRow& r) { return r.variant == std::string(kEntryPrefix) + entry; });
}

/// The component an export finding's entry-point rows blame, or "" when the rows are not an export finding's (it
/// alone has a torch.compile row).
std::string entryAtFault(const std::vector<AblationRow>& rows) {
  if (!hasEntryRow(rows, kCompileEntry)) return "";
  bool compiled = reproducesThrough(rows, kCompileEntry);
  if (reproducesThrough(rows, "export")) return compiled ? "the traced graph (torch.compile fails too)" : "torch.export (its trace)";
  if (reproducesThrough(rows, "export+decompose")) return "torch.export's decompositions (run_decompositions)";
  if (reproducesThrough(rows, "export+saveload")) return "torch.export's serialization (save and load)";
  if (reproducesThrough(rows, "aoti"))
    return compiled ? "inductor (its lowering: torch.compile and AOTInductor both fail)"
                    : "AOTInductor (its wrapper or packaging: torch.compile of the same program does not fail)";
  return "unknown (no entry point reproduces)";
}

/// Whether the row of backend `backend` reproduces (false when there is no such row).
bool reproducesUnder(const std::vector<AblationRow>& rows, const std::string& backend) {
  for (const auto& row : rows)
    if (row.variant == std::string(kBackendPrefix) + backend) return row.reproduces;
  return false;
}

}  // namespace

bool isStandardBackend(const std::string& backend) {
  return std::find(kStandardBackends.begin(), kStandardBackends.end(), backend) != kStandardBackends.end();
}

std::vector<AblationVariant> ablationVariants(const MinimizeCase& c) {
  if (c.compile.exports()) {  // through torch.export: which entry points share the fault
    std::vector<std::string> entries{kCompileEntry, "export", "export+decompose", "aoti"};
    if (std::find(entries.begin(), entries.end(), c.compile.entry) == entries.end()) entries.push_back(c.compile.entry);
    std::vector<AblationVariant> out;
    for (const auto& entry : entries) {
      MinimizeCase v = c;
      v.compile = CompileConfig{};  // torch.compile as its defaults; the export entries keep strict
      v.compile.setEntry(entry);
      v.compile.dynamic = c.compile.dynamic;  // Dim ranges (and torch.compile's dynamic=True) as found
      if (entry != kCompileEntry) v.compile.exportStrict = c.compile.exportStrict;
      if (entry == kCompileEntry || entry == "aoti") v.compile.inductorConfig = c.compile.inductorConfig;
      out.push_back({std::string(kEntryPrefix) + entry, std::move(v)});
    }
    return out;
  }
  std::vector<std::string> backends(kStandardBackends.begin(), kStandardBackends.end());
  if (!isStandardBackend(c.compile.backend)) backends.push_back(c.compile.backend);
  std::vector<AblationVariant> out;
  for (const auto& backend : backends) {
    MinimizeCase v = c;
    v.compile.backend = backend;
    if (!v.compile.usesInductor() && isStandardBackend(backend)) {  // mode presets and options are Inductor's
      v.compile.mode = CompileConfig{}.mode;
      v.compile.inductorConfig = CompileConfig{}.inductorConfig;
    }
    out.push_back({std::string(kBackendPrefix) + backend, std::move(v)});
  }
  for (const auto& option : configOptionNames(c))
    out.push_back({std::string(kWithoutPrefix) + option, withoutConfigOption(c, option)});
  // A forward finding of torch.compile's Inductor: does AOTInductor (the same lowering, its own wrapper and
  // packaging) or export's trace alone fail too? The program as one trace captures it may be refused by export
  // (a graph break, a Python branch): such a row says so and does not reproduce.
  if (c.compile.entry == kCompileEntry && c.compile.usesInductor() && !c.backward)
    for (const char* entry : {"export", kAotiEntry}) {
      MinimizeCase v = c;
      v.compile = CompileConfig{};
      v.compile.setEntry(entry);
      if (std::string(entry) == kAotiEntry) v.compile.inductorConfig = c.compile.inductorConfig;
      out.push_back({std::string(kEntryPrefix) + entry, std::move(v)});
    }
  if (c.compile.trains())  // training steps: which compiled part the fault needs, the model's or the step's
    for (const auto& part : TrainingLoop::compiledParts())
      if (part != c.compile.training.compiled) {
        MinimizeCase v = c;
        v.compile.training.compiled = part;
        out.push_back({std::string(kCompiledPartPrefix) + part, std::move(v)});
      }
  return out;
}

AblationRow ablationRow(const AblationVariant& variant, const std::string& verdict, bool reproduces,
                        const std::string& summary) {
  return {variant.name, findingConfig(variant.rerun.compile, variant.rerun.backward), verdict, reproduces, summary};
}

std::string componentAtFault(const std::vector<AblationRow>& rows, const std::string& backend, bool beforeBackward,
                             const std::string& trainingPart) {
  std::string component = entryAtFault(rows);
  if (!component.empty()) return component;
  if (backend == kNoCompileBackend && reproducesUnder(rows, backend))
    component = "eager's own higher-order op (no torch.compile)";
  else if (reproducesUnder(rows, "eager")) component = "dynamo";
  else if (reproducesUnder(rows, "aot_eager")) component = "aot_autograd";
  else if (reproducesUnder(rows, "aot_eager_decomp_partition")) component = "aot_autograd (decompositions or partitioner)";
  else if (reproducesUnder(rows, kInductorBackend)) component = "inductor";
  else if (!isStandardBackend(backend) && reproducesUnder(rows, backend)) component = "backend " + backend;
  else component = "unknown (no backend variant reproduces)";
  std::vector<std::string> needed;
  for (const auto& row : rows)
    if (row.variant.starts_with(kWithoutPrefix) && !row.reproduces) {
      std::string option = row.variant.substr(kWithoutPrefix.size());
      needed.push_back(option == "backward" && beforeBackward ? "grad mode, not a backward" : option);
    }
  if (!needed.empty()) component += fmt::format(" (needs {})", fmt::join(needed, ", "));
  component += trainingPartAtFault(rows, trainingPart);
  // A torch.compile finding's export and AOTInductor rows. Only an Inductor fault is put on its lowering (AOTInductor
  // shares it) or on torch.compile's own path; an earlier component's rows are reported as they are.
  if (hasEntryRow(rows, kAotiEntry)) {
    bool inductor = component.starts_with(kInductorBackend);
    if (reproducesThrough(rows, "export")) component += " (torch.export fails too: the traced graph)";
    else if (reproducesThrough(rows, kAotiEntry))
      component += inductor ? " (AOTInductor fails too: Inductor's lowering)" : " (AOTInductor fails too)";
    else component += inductor ? " (not through AOTInductor: torch.compile's own path)" : " (not through AOTInductor)";
  }
  for (const auto& row : rows)
    if (row.variant == kCpuVariant) component += row.reproduces ? " (on CPU too)" : " (CUDA only)";
  return component;
}

std::string componentOfBackend(const std::string& backend) {
  if (!isStandardBackend(backend)) return "backend " + backend;
  return backend == "eager" ? "dynamo" : backend;
}

}  // namespace tcfuzz::oracles
