// Element and scale formats, and the host tensor dtypes.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

#include "core/names.hpp"
#include "numerics/minifloat.cuh"

namespace fp4jit {

// The format of a quantized operand's elements.
enum class ElemFormat : std::uint8_t { e2m1, e4m3, e5m2 };
// The format of its block scales (fp32 also holds a real-valued or power-of-two scale).
enum class ScaleFormat : std::uint8_t { e8m0, ue4m3, ue5m3, fp32 };
// The UE5M3 top-code conventions found in the literature (RECIPES.md).
enum class Ue5m3Variant : std::uint8_t {
  nan_ff,      // 0xFF is NaN, max 0xFE = 114688 (default)
  all_finite,  // every code finite, max 122880
  ieee,        // E5M2-style reserved top exponent, max 61440
};
// Element types of unquantized host/device tensors.
enum class DType : std::uint8_t { f32, f16, bf16 };

std::span<const Named<ElemFormat>> elem_format_names();
std::span<const Named<ScaleFormat>> scale_format_names();
std::span<const Named<Ue5m3Variant>> ue5m3_variant_names();
std::span<const Named<DType>> dtype_names();

inline std::string_view name(ElemFormat f) { return name_of(elem_format_names(), f); }
inline std::string_view name(ScaleFormat f) { return name_of(scale_format_names(), f); }
inline std::string_view name(DType d) { return name_of(dtype_names(), d); }

int bits(ElemFormat f);                 // 4 or 8
float elem_max(ElemFormat f);           // 6, 448, 57344
int elem_emax(ElemFormat f);            // exponent of the largest power of two <= max: 2, 8, 15
int dtype_size(DType d);                // bytes per element
nx::MiniFloat minifloat(ElemFormat f);  // e4m3, e5m2 (E2M1 has its own code in numerics/e2m1.cuh)
// The block-scale format as a MiniFloat (ue4m3, ue5m3); e8m0 and fp32 are handled apart.
nx::MiniFloat minifloat(ScaleFormat f, Ue5m3Variant variant);
float scale_format_max(ScaleFormat f, Ue5m3Variant variant);
float ue5m3_variant_max(Ue5m3Variant variant);

}  // namespace fp4jit
