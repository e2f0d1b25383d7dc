#pragma once
// torch's structured trace log (TORCH_TRACE) of a bug's failing compile, rendered by tlparse (PyPI's
// tlparse, installed into .venv by scripts/setup) into HTML for the report folder, as PyTorch's pt2 bug
// template asks. tlparse is a trusted tool reading data; the traced program itself ran in the sandbox.
#include <filesystem>
#include <string>

namespace tcfuzz {

/// The tlparse beside tcfuzz's own set-up Python (.venv/bin/tlparse); empty when it is not installed.
std::filesystem::path installedTlparse();

/// Renders the trace log folder `log` (what TORCH_TRACE wrote: one *.log per process; the largest is
/// the compiling one) into `out` (replaced) with `tlparse LOG -o OUT --overwrite --no-browser`, killed
/// after `timeoutSeconds`. Returns "" when out/index.html was written, else why not (one line).
std::string renderTrace(const std::filesystem::path& tlparse, const std::filesystem::path& log,
                        const std::filesystem::path& out, double timeoutSeconds = 120);

}  // namespace tcfuzz
