#include "generators/ir/Strides.h"

#include <algorithm>
#include <functional>
#include <numeric>

namespace tcfuzz::gen {

std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t i = sizes.size(); i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(sizes[i], 1);
  return strides;
}

Geometry contiguousGeometry(const std::vector<int64_t>& sizes) { return {contiguousStrides(sizes), 0}; }

bool isContiguous(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 0) return true;
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

std::optional<std::vector<int64_t>> viewStrides(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                                                const std::vector<int64_t>& newSizes) {
  auto product = [](const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<>()); };
  std::vector<int64_t> out(newSizes.size(), 1);
  if (sizes.empty()) return out;  // a 0-d tensor views as any shape of one element with unit strides
  if (product(sizes) != product(newSizes)) return std::nullopt;
  if (product(sizes) == 0) {
    if (sizes == newSizes) return strides;
    return contiguousStrides(newSizes);
  }
  // Walk the old dims from the innermost out, cutting them into chunks that are contiguous in
  // memory; the new dims must tile each chunk exactly, with row-major strides over the chunk's base.
  int64_t viewDim = static_cast<int64_t>(newSizes.size()) - 1;
  int64_t chunkBase = strides.back(), chunkElements = 1, viewElements = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    chunkElements *= sizes[d];
    bool chunkEnds = d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != chunkElements * chunkBase);
    if (!chunkEnds) continue;
    while (viewDim >= 0 && (viewElements < chunkElements || newSizes[viewDim] == 1)) {
      out[viewDim] = viewElements * chunkBase;
      viewElements *= newSizes[viewDim];
      --viewDim;
    }
    if (viewElements != chunkElements) return std::nullopt;
    if (d > 0) {
      chunkBase = strides[d - 1];
      chunkElements = 1;
      viewElements = 1;
    }
  }
  if (viewDim != -1) return std::nullopt;
  return out;
}

}  // namespace tcfuzz::gen
