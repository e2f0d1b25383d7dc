#pragma once
// Ablation (docs/architecture.md, "Triage"): the minimized case rerun under variants of its configuration to
// name the component at fault. The backends, from the least compiler to the most, each add one
// component: eager (Dynamo alone), aot_eager (+ AOTAutograd), aot_eager_decomp_partition (+ its
// decompositions and partitioner), inductor (+ Inductor). The least of them that reproduces is
// blamed; dropping each non-default compile option in turn says which options the bug needs. This
// module chooses the variants and reads their rows; the caller runs them.
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "oracles/reporter/BugReport.h"
#include "oracles/reporter/Minimizer.h"

namespace tcfuzz::oracles {

/// The backends every ablation runs, in the order components are blamed in.
inline constexpr std::array<std::string_view, 4> kStandardBackends = {"eager", "aot_eager", "aot_eager_decomp_partition",
                                                                      kInductorBackend};
/// The row of a CUDA bug's case run once more on the CPU under its own configuration: whether the bug
/// is CUDA's alone (the caller adds it; ablationVariants does not, it knows no device).
inline constexpr std::string_view kCpuVariant = "device=cpu";

/// Whether `backend` is one of kStandardBackends.
bool isStandardBackend(const std::string& backend);

/// One configuration the minimized case is rerun under.
struct AblationVariant {
  std::string name;  ///< the ablation row's variant: "backend=eager", "without cpp_wrapper", ...
  MinimizeCase rerun;  ///< the case under that configuration
};

/// Every standard backend (mode and Inductor options dropped under the non-Inductor ones), the case's
/// own backend when it is not standard, then the case without each of its non-default options
/// (configOptionNames order). A case through torch.export: each entry point instead (torch.compile at its
/// defaults, export, export+decompose, aoti, and the case's own), strict as the case's.
std::vector<AblationVariant> ablationVariants(const MinimizeCase& c);

/// The row of `variant` given its test's verdict name, whether it shows the bug, and one line of evidence.
AblationRow ablationRow(const AblationVariant& variant, const std::string& verdict, bool reproduces,
                        const std::string& summary);

/// The component the rows of ablationVariants blame for a case compiled with `backend`: "dynamo",
/// "aot_autograd", "aot_autograd (decompositions or partitioner)", "inductor", "backend X" or
/// "unknown (no backend variant reproduces)", then " (needs a, b)" naming the options without which
/// the bug is gone, then " (CUDA only)" or " (on CPU too)" when a kCpuVariant row says. A run without backward
/// also runs forward without grad mode: for a bug that shows before any backward (`beforeBackward`: a crash
/// in compile or in the forward call), what it needs is named "grad mode", not "backward".
/// A finding through torch.export is ablated over entry points instead (rows "entry=compile", "entry=export",
/// "entry=export+decompose", "entry=aoti"): the rows blame export's trace, its decompositions, its
/// serialization, AOTInductor alone, or Inductor's lowering when torch.compile fails too.
/// A forward finding of torch.compile's Inductor also has rows "entry=export" and "entry=aoti": the component ends
/// with whether AOTInductor fails too (Inductor's lowering) or not (torch.compile's own path).
/// A finding of training steps also has rows "compiled=model", "compiled=step" and "compiled=both" but its own
/// part (`trainingPart`, TrainingLoop::compiled): the component then ends with which compiled part fails alone.
std::string componentAtFault(const std::vector<AblationRow>& rows, const std::string& backend,
                             bool beforeBackward = false, const std::string& trainingPart = "");

/// The component a bug found under `backend` is put on when no ablation ran.
std::string componentOfBackend(const std::string& backend);

}  // namespace tcfuzz::oracles
