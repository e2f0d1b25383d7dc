#pragma once
// The tensor element types programs use, with torch's type promotion between them.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tcfuzz::gen {

/// Element types the generator uses (torch spells them torch.<name>).
enum class DType : uint8_t { Float32, Float16, BFloat16, Float64, Int64, Int32, Bool, Complex64, Complex128 };
inline constexpr int kDTypeCount = 9;

/// A set of dtypes as a bit mask (bit i is DType(i)).
struct DTypeSet {
  uint32_t bits = 0;
  constexpr bool has(DType d) const { return bits & (1u << static_cast<int>(d)); }
  constexpr DTypeSet operator|(DTypeSet o) const { return {bits | o.bits}; }
  constexpr DTypeSet operator&(DTypeSet o) const { return {bits & o.bits}; }
  constexpr bool empty() const { return bits == 0; }
};
constexpr DTypeSet only(DType d) { return {1u << static_cast<int>(d)}; }
inline constexpr DTypeSet kFloats{0b0001111};
inline constexpr DTypeSet kInts{0b0110000};
inline constexpr DTypeSet kIntegral{0b1110000};  // ints and bool
inline constexpr DTypeSet kNumeric{0b0111111};   // everything but bool
inline constexpr DTypeSet kAllDTypes{0b1111111};  // the real dtypes and bool: an op takes complex only by name
inline constexpr DTypeSet kComplex{0b110000000};
inline constexpr DTypeSet kFloatsAndComplex = kFloats | kComplex;

/// "float32", "int64", ... (the torch attribute name).
std::string_view dtypeName(DType d);
/// Parses a dtypeName; nullopt for anything else.
std::optional<DType> parseDType(std::string_view name);
bool isFloat(DType d);
bool isInt(DType d);  // int32/int64, not bool
bool isComplex(DType d);
/// complex64 for float32 and the half types, complex128 for float64 (torch.view_as_complex, torch.complex).
DType complexOf(DType real);
/// float32 for complex64, float64 for complex128 (abs, real, view_as_real); d itself when it is real.
DType realOf(DType d);
/// torch.result_type of two tensors of these dtypes (bool < int < float < complex; f16 with bf16 gives
/// f32; complex128 when either side is complex128 or float64 and the other complex).
DType promote(DType a, DType b);
/// The dtype a float-valued op returns for an input of dtype d (ints and bool give float32, torch's default).
DType floatResult(DType d);
/// Largest magnitude we let a value of this dtype reach (well inside the finite range, so sums stay finite).
double safeMagnitude(DType d);
/// Bytes per element.
int elementSize(DType d);

}  // namespace tcfuzz::gen
