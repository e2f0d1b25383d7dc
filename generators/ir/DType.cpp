#include "generators/ir/DType.h"

#include <array>

namespace tcfuzz::gen {
namespace {
constexpr std::array<std::string_view, kDTypeCount> kNames{"float32", "float16", "bfloat16",  "float64",   "int64",
                                                           "int32",   "bool",    "complex64", "complex128"};
int category(DType d) { return d == DType::Bool ? 0 : isInt(d) ? 1 : isComplex(d) ? 3 : 2; }
}  // namespace

std::string_view dtypeName(DType d) { return kNames[static_cast<int>(d)]; }

std::optional<DType> parseDType(std::string_view name) {
  for (int i = 0; i < kDTypeCount; ++i)
    if (kNames[i] == name) return static_cast<DType>(i);
  return std::nullopt;
}

bool isFloat(DType d) { return kFloats.has(d); }
bool isInt(DType d) { return kInts.has(d); }
bool isComplex(DType d) { return kComplex.has(d); }
DType complexOf(DType real) { return real == DType::Float64 || real == DType::Complex128 ? DType::Complex128 : DType::Complex64; }
DType realOf(DType d) {
  if (d == DType::Complex64) return DType::Float32;
  if (d == DType::Complex128) return DType::Float64;
  return d;
}

DType promote(DType a, DType b) {
  if (a == b) return a;
  int ca = category(a), cb = category(b);
  if (ca == 3 || cb == 3) {  // complex with anything: the wider of the two floating widths
    bool wide = a == DType::Complex128 || b == DType::Complex128 || a == DType::Float64 || b == DType::Float64;
    return wide ? DType::Complex128 : DType::Complex64;
  }
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 1) return DType::Int64;  // int32 with int64
  // Both floating and different.
  if (a == DType::Float64 || b == DType::Float64) return DType::Float64;
  return DType::Float32;  // f32 with a half type, or f16 with bf16
}

DType floatResult(DType d) { return isFloat(d) || isComplex(d) ? d : DType::Float32; }

double safeMagnitude(DType d) {
  switch (d) {
    case DType::Float16: return 1e4;
    case DType::BFloat16: return 1e30;
    case DType::Float32: return 1e30;
    case DType::Float64: return 1e30;  // compared against float32 eager, so keep the float32 range
    case DType::Int64: return 1e15;
    case DType::Int32: return 1e9;
    case DType::Bool: return 1;
    case DType::Complex64: return 1e30;
    case DType::Complex128: return 1e30;
  }
  return 0;
}

int elementSize(DType d) {
  switch (d) {
    case DType::Float32: case DType::Int32: return 4;
    case DType::Float16: case DType::BFloat16: return 2;
    case DType::Float64: case DType::Int64: return 8;
    case DType::Bool: return 1;
    case DType::Complex64: return 8;
    case DType::Complex128: return 16;
  }
  return 0;
}

}  // namespace tcfuzz::gen
