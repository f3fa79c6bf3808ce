// Block-scale codes of the nv kind (UE4M3, UE5M3) decoded to the 16-bit float the HGMMA path
// multiplies E2M1 values by (shared by the fused kernel's table and the staged expansion).
#pragma once
#include "gemm/sm90/config.cuh"
#include "numerics/minifloat.cuh"

namespace fp4jit::sm90 {

// Decoded 16-bit (FP16 or BF16) bits of every block-scale code, for the nv kind.
template <bool kBF16>
__device__ __forceinline__ unsigned short nv_decode_bits(ScaleCode code_kind, unsigned code) {
  const nx::MiniFloat fmt = code_kind == ScaleCode::ue4m3          ? nx::kUE4M3
                            : code_kind == ScaleCode::ue5m3_nan    ? nx::kUE5M3Nan
                            : code_kind == ScaleCode::ue5m3_finite ? nx::kUE5M3Finite
                                                                   : nx::kUE5M3Ieee;
  if (code > nx::mf_mag_mask(fmt)) return 0;
  const float v = nx::mf_decode(fmt, code);
  const unsigned u = __float_as_uint(v);
  if (kBF16)
    return static_cast<unsigned short>(nx::is_nan(v) ? 0x7FC0u : (u >> 16));  // exact: <= 4 bits
  if (nx::is_nan(v)) return 0x7E00;
  if (v == 0.0f) return 0;
  // UE4M3 values lie in [2^-9, 448]: FP16 normals.
  const int e = nx::floor_log2(v);
  return static_cast<unsigned short>(((e + 15) << 10) | ((u & 0x7FFFFFu) >> 13));
}

}  // namespace fp4jit::sm90
