#pragma once
// The tensor file: how a worker's outputs cross from whatever torch it runs to the LibTorch tcfuzz links.
// The safetensors layout, so it depends on no torch version and the `safetensors` package reads it too:
//   u64 little-endian N | N bytes of JSON header | data
// The header maps "0", "1", ... to {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}
// (offsets into data), plus "__metadata__": {"format": "tcfuzz-tensors", "version": "1"}. Data is
// C-contiguous and little-endian. dtypes: BOOL U8 I8 I16 I32 I64 U16 U32 U64 F16 BF16 F32 F64
// F8_E4M3 F8_E5M2 (complex values travel as real pairs). The writer in Python is write_tensor_file
// in fuzzer/worker/python/child.py (and its twin in oracles/reporter/repro/repro_driver.py).
#include <filesystem>
#include <stdexcept>
#include <vector>

#include <ATen/Tensor.h>

namespace tcfuzz::oracles {

/// The output file is missing, truncated, or not a tensor file.
struct OutputLoadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Reads a tensor file; throws OutputLoadError naming the file and the problem (bad header, an offset
/// outside the data, a size that does not match its shape and dtype, an unknown dtype).
std::vector<at::Tensor> loadTensorFile(const std::filesystem::path& file);
/// Writes `tensors` (moved to the CPU, made contiguous) as a tensor file; for tests and tools.
void saveTensorFile(const std::filesystem::path& file, const std::vector<at::Tensor>& tensors);

}  // namespace tcfuzz::oracles

#include "oracles/judge/RunResult.h"

namespace tcfuzz::oracles {

/// A program's flattened output, loaded for comparison: leaf descriptions and their tensors.
struct LoadedOutputs {
  std::vector<OutputLeaf> leaves;
  std::vector<at::Tensor> tensors;  ///< indexed by OutputLeaf::index
};

/// Loads an OutputSet that a job wrote into jobDir; throws OutputLoadError.
LoadedOutputs loadOutputs(const OutputSet& set, const std::filesystem::path& jobDir);

}  // namespace tcfuzz::oracles
