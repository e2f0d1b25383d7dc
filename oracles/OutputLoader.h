#pragma once
// Loads the tensors a worker saved with torch.save, through LibTorch's unpickler.
#include <filesystem>
#include <stdexcept>
#include <vector>

#include <ATen/Tensor.h>

namespace tcfuzz::oracles {

/// The output file is missing, truncated, or not a torch.save'd list of tensors.
struct OutputLoadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Reads a torch.save'd list of tensors; throws OutputLoadError naming the file on any problem.
std::vector<at::Tensor> loadSavedTensors(const std::filesystem::path& file);

}  // namespace tcfuzz::oracles

#include "oracles/RunResult.h"

namespace tcfuzz::oracles {

/// A program's flattened output, loaded for comparison: leaf descriptions and their tensors.
struct LoadedOutputs {
  std::vector<OutputLeaf> leaves;
  std::vector<at::Tensor> tensors;  ///< indexed by OutputLeaf::index
};

/// Loads an OutputSet that a job wrote into jobDir; throws OutputLoadError.
LoadedOutputs loadOutputs(const OutputSet& set, const std::filesystem::path& jobDir);

}  // namespace tcfuzz::oracles
