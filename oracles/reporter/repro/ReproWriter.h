#pragma once
// repro.py: a standalone script that reproduces one finding with plain `python repro.py`: the
// program (Model, make_inputs), the seeding, fallback_random, the compile configuration, the eager,
// compiled and fp64 runs, and the verdict by torch._dynamo.utils.same. The driver part is the data
// file oracles/reporter/repro/repro_driver.py, compiled into the binary.
#include <string>

#include <nlohmann/json.hpp>

#include "oracles/reporter/BugReport.h"

namespace tcfuzz::oracles {

struct ComparatorOptions;

/// The line repro.py prints last: "tcfuzz-verdict: <verdict>" (agree when the bug is gone).
inline constexpr const char* kReproVerdictPrefix = "tcfuzz-verdict: ";

/// The text of repro.py for a case. Exits 1 when it reproduces the expected verdict, 0 otherwise.
/// Reads the plugin files; throws std::runtime_error naming one that cannot be read.
std::string renderRepro(const ReproCase& repro, const std::string& title);
/// The same, with the allclose tolerances of `tolerances` instead of the defaults.
std::string renderRepro(const ReproCase& repro, const std::string& title, const ComparatorOptions& tolerances);

/// The case data repro.py embeds (its CASE): seed, verdict, compile, backward, threads, device,
/// diverging_leaves, exact_backend, tolerances (dtype name -> allclose tolerance).
nlohmann::json reproCaseData(const ReproCase& repro, const ComparatorOptions& tolerances);

/// The verdict a repro.py printed ("" when no verdict line is found in `stdoutText`).
std::string reproVerdict(const std::string& stdoutText);

}  // namespace tcfuzz::oracles
