#pragma once
// Building blocks shared by the neural-network families (ops/neural/LinearAlgebra.cpp, ConvPool.cpp,
// Normalization.cpp, Loss.cpp, Neural.cpp), and the parts addNeuralOps registers.
#include <string>
#include <utility>
#include <vector>

#include "generators/ops/Common.h"

namespace tcfuzz::gen::ops {

using Shape = std::vector<int64_t>;
using Params = std::vector<std::pair<std::string, TensorType>>;

/// One output of `like`'s device with this shape and dtype.
inline std::vector<TensorType> single(const TensorType& like, Shape shape, DType d) {
  TensorType t = like;
  t.shape = std::move(shape);
  t.dtype = d;
  return {t};
}

/// The number of elements of a shape, as a double.
inline double productOf(const Shape& s) {
  double p = 1;
  for (auto d : s) p *= static_cast<double>(d);
  return p;
}

/// Dims [from, to) of a shape.
inline Shape slice(const Shape& s, size_t from, size_t to) { return Shape(s.begin() + from, s.begin() + to); }

/// ShapeError unless all inputs share input 0's dtype.
inline void requireSameDType(const OpContext& ctx, const std::string& op) {
  for (const auto& t : ctx.in)
    require(t.dtype == ctx.x().dtype, op + " needs all operands of one dtype");
}

/// ShapeError unless the int-list attribute `name` holds `n` values.
inline void requireLength(const OpContext& ctx, const std::string& name, size_t n) {
  require(ctx.attrInts(name).size() == n, fmt::format("'{}' must hold {} values", name, n));
}

/// The divisors of n in increasing order.
inline std::vector<int64_t> divisorsOf(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

// --- layers with a dtype attribute (nn_linear's pattern) ----------------------------------------

/// The optional dtype attribute of a layer (None: float32).
inline AttrSpec layerDTypeAttr() { return optional(dtypeAttr("dtype", {"float16", "bfloat16", "float64"})); }

/// The layer's parameter dtype.
inline DType layerDType(const OpContext& ctx) { return ctx.hasAttr("dtype") ? ctx.attrDType("dtype") : DType::Float32; }

/// Sets the layer's dtype to input 0's.
inline void matchLayerDType(OpContext& ctx) {
  ctx.attrs["dtype"] = ctx.x().dtype == DType::Float32 ? nlohmann::json() : nlohmann::json(dtypeName(ctx.x().dtype));
}

/// ShapeError unless the layer's dtype is input 0's.
inline void requireLayerDType(const OpContext& ctx) {
  require(layerDType(ctx) == ctx.x().dtype, "the layer's parameters and its input must share a dtype");
}

/// Output range of a weighted sum of `terms` inputs with default-init weights and bias in +-bound.
inline Interval weightedSumRange(const OpContext& ctx, double terms, double bound) {
  return symmetric(ctx.ranges[0].magnitude() * terms * bound + bound);
}

// --- the parts of addNeuralOps (Neural.cpp), each in its own file -------------------------------

/// Matrix products (mm ... baddbmm), einsum and F.linear (LinearAlgebra.cpp).
void addLinearAlgebra(OpCatalog& c);
/// n-d convolutions and their transposes, max/avg and adaptive pooling (ConvPool.cpp).
void addConvolutionsAndPooling(OpCatalog& c);
/// Batch, layer, RMS, group and instance norm layers, and F.normalize (Normalization.cpp).
void addNormalizations(OpCatalog& c);
/// pairwise_distance, cosine_similarity and cdist (Loss.cpp).
void addDistances(OpCatalog& c);
/// Pointwise, classification and other losses (Loss.cpp).
void addLosses(OpCatalog& c);

}  // namespace tcfuzz::gen::ops
