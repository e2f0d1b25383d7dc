#include "oracles/reporter/Ablation.h"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tcfuzz::oracles {

namespace {

constexpr std::string_view kBackendPrefix = "backend=";
constexpr std::string_view kWithoutPrefix = "without ";

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
  return out;
}

AblationRow ablationRow(const AblationVariant& variant, const std::string& verdict, bool reproduces,
                        const std::string& summary) {
  return {variant.name, findingConfig(variant.rerun.compile, variant.rerun.backward), verdict, reproduces, summary};
}

std::string componentAtFault(const std::vector<AblationRow>& rows, const std::string& backend, bool beforeBackward) {
  std::string component;
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
  for (const auto& row : rows)
    if (row.variant == kCpuVariant) component += row.reproduces ? " (on CPU too)" : " (CUDA only)";
  return component;
}

std::string componentOfBackend(const std::string& backend) {
  if (!isStandardBackend(backend)) return "backend " + backend;
  return backend == "eager" ? "dynamo" : backend;
}

}  // namespace tcfuzz::oracles
