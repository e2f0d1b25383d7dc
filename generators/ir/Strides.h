#pragma once
// Strides of tensor values: the geometry torch reports for a tensor (strides and storage
// offset, in elements) and the stride algebra the view ops' rules (generators/ops/shape/ViewStrides.cpp)
// are written in. Cross-checked against ATen in tests/test_Strides.cpp.
#include <cstdint>
#include <optional>
#include <vector>

namespace tcfuzz::gen {

/// Strides and storage offset of a tensor, as torch's stride() and storage_offset() report them.
struct Geometry {
  std::vector<int64_t> strides;
  int64_t offset = 0;
  bool operator==(const Geometry&) const = default;
};

/// Row-major strides of `sizes` (a size-0 or size-1 dim counts as 1, as torch has it).
std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& sizes);
/// A fresh row-major tensor of `sizes`: contiguous strides, offset 0.
Geometry contiguousGeometry(const std::vector<int64_t>& sizes);
/// torch's is_contiguous(): the strides of every dim of size above 1 are row-major; an empty tensor
/// is contiguous whatever its strides.
bool isContiguous(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides);
/// The strides `.view(newSizes)` gives a tensor of `sizes` and `strides` without copying (ATen's
/// rule: each run of dims that is contiguous in memory may be split or merged), or nullopt when
/// the view cannot be taken (view raises, reshape copies).
std::optional<std::vector<int64_t>> viewStrides(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                                                const std::vector<int64_t>& newSizes);

}  // namespace tcfuzz::gen
