#pragma once
// short_repro.py: the minimized case as the few lines a PyTorch issue body holds. It needs only torch
// (and, for a test's planted backend, the plugin file copied beside it): the program, a run() helper,
// the torch.compile call with its options, and the check that shows the bug: an assertion with
// torch._dynamo.utils.same against the float64 reference for a numeric divergence (on the inputs,
// buffers and parameters after forward, or after backward for a backward job, for a mutation divergence;
// with the worker's seeded gradient outputs for a backward job; on calls 2 and 3 for a second-call
// divergence), a comparison of what each output shares storage with for an aliasing divergence, the
// call that raises (or kills the process) for a crash. It exits non-zero while the bug reproduces. The full
// driver, with every leaf compared and the verdict printed, stays in repro.py (ReproWriter).
#include <string>
#include <vector>

#include "oracles/reporter/BugReport.h"
#include "oracles/judge/RunResult.h"

namespace tcfuzz::oracles {

struct ComparatorOptions;

/// A JSON value as Python source: True/False/None, numbers and strings as JSON writes them (an Inductor
/// option's value in a repro or a report).
std::string pythonLiteral(const nlohmann::json& v);

/// The text of short_repro.py for `repro`, headed by `title`; `tolerances` gives same()'s tol for the
/// diverging leaf's dtype. Throws std::invalid_argument for a verdict it cannot express.
std::string renderShortRepro(const ReproCase& repro, const std::string& title, const ComparatorOptions& tolerances);

/// The file names short_repro.py loads from its own folder: one per plugin of the case, the plugin's
/// own file name (the report folder holds a copy of each).
std::vector<std::string> shortReproCompanions(const ReproCase& repro);

/// Whether `run`, a run of short_repro.py as a script job, reproduced the bug of `repro` whose signature
/// is `signature`: a numeric divergence ends in short_repro's own AssertionError; a crash prints the
/// marker that the reference run passed, then dies of a signal (a signal signature), runs out of time
/// (a timeout), or exits non-zero with the signature's exception type in its stderr.
bool shortReproReproduces(const ReproCase& repro, const Signature& signature, const RunResult& run);

}  // namespace tcfuzz::oracles
