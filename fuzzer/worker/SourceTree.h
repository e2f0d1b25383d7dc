#pragma once
// Where tcfuzz's own files live at run time: the worker harness (fuzzer/worker/python/*.py), the plot
// script, corpus/. A build knows the source tree it was built from; a build carried to another
// machine (scripts/carry, a GPU box with its own torch) is told where the tree is now.
#include <cstdlib>
#include <filesystem>

namespace tcfuzz {

/// $TCFUZZ_SOURCE_TREE when set and not empty, else the source tree this binary was built from.
inline std::filesystem::path sourceTree() {
  if (const char* moved = std::getenv("TCFUZZ_SOURCE_TREE"); moved != nullptr && *moved != '\0') return moved;
  return TCFUZZ_SOURCE_DIR;
}

}  // namespace tcfuzz
