// Scale rules: from a block's amax to the scale stored with the block and the factor that maps
// elements into the element format's range. All power-of-two rules are computed exactly from the
// float's bits (no log2 in floating point, whose last bit differs between libraries).
//
// Conventions: the *decode scale* s is what a code is multiplied by to get the value back
// (value = decode(code) * s); the *encode factor* is what an element is multiplied by before it is
// rounded. For power-of-two scales encode = 1/s exactly.
#pragma once
#include "numerics/common.cuh"
#include "numerics/minifloat.cuh"

namespace fp4jit::nx {

// Smallest e with a <= m * 2^(e) where the bound is given as (sig_b, exp_b): b = sig_b * 2^exp_b,
// a, b > 0 finite. Comparing significands in [1, 2) decides it exactly.
FP4JIT_HD int ceil_log2_ratio(float a, float b) {
  const int ea = floor_log2(a), eb = floor_log2(b);
  return significand(a) <= significand(b) ? ea - eb : ea - eb + 1;
}
// Largest e with a * 2^e <= b.
FP4JIT_HD int floor_log2_ratio(float b, float a) {
  const int ea = floor_log2(a), eb = floor_log2(b);
  return significand(a) <= significand(b) ? eb - ea : eb - ea - 1;
}

// OCP MX v1.0 shared exponent: e = floor(log2(amax)) - emax_elem, E8M0.
//   amax = 0: use the smallest normal (2^-126), which clamps to e = -127 (code 0).
//   amax NaN or Inf: NaN scale (0xFF). e < -127 clamps; e > 127 would be NaN.
// emax_elem is the element format's largest exponent (2 for E2M1, 8 for E4M3, 15 for E5M2).
FP4JIT_HD u32 scale_ocp_floor(float amax, int emax_elem) {
  if (!is_finite(amax)) return kE8M0Nan;
  const int e = (amax == 0.0f ? -126 : floor_log2(amax)) - emax_elem;
  return e8m0_from_exponent(e);
}

// TetraJet: s = 2^ceil(log2(amax / elem_max)), exponent clamped to [-127, 127], amax 0 -> 1e-8.
// Computed exactly: the smallest e with amax <= elem_max * 2^e.
FP4JIT_HD u32 scale_ceil_pow2(float amax, float elem_max) {
  if (!is_finite(amax)) return kE8M0Nan;
  const float a = amax == 0.0f ? 1e-8f : amax;
  int e = ceil_log2_ratio(a, elem_max);
  if (e > 127) e = 127;
  return e8m0_from_exponent(e);
}

// The two rules above from a block's stat word: the bits of max |x| (sign clear), or any word
// >= 0x7f800000 for a block holding NaN or Inf. Same codes, a handful of integer operations (no
// branches, no count of leading zeros): a subnormal amax lands below 2^-127 under either rule and
// clamps to code 0 from its zero exponent field. emax_elem >= 1.
FP4JIT_HD u32 scale_ocp_floor_bits(u32 amax_bits, int emax_elem) {
  const int e = static_cast<int>(amax_bits >> 23) - emax_elem;  // amax 0 or subnormal: clamps
  const u32 code = static_cast<u32>(e < 0 ? 0 : e);
  return amax_bits >= 0x7f800000u ? kE8M0Nan : code;
}
// ceil: the exponent fields' difference, plus one where amax's significand exceeds elem_max's
// (then amax > elem_max * 2^(e_a - e_m)); amax 0 is taken as 1e-8. elem_max >= 2.
FP4JIT_HD u32 scale_ceil_pow2_bits(u32 amax_bits, float elem_max) {
  const u32 m = float_bits(elem_max);
  const u32 a = amax_bits == 0u ? float_bits(1e-8f) : amax_bits;
  const int e = static_cast<int>(a >> 23) - static_cast<int>(m >> 23) + 127 +
                ((a & 0x7fffffu) > (m & 0x7fffffu) ? 1 : 0);
  const u32 code = static_cast<u32>(e < 0 ? 0 : (e > 254 ? 254 : e));
  return amax_bits >= 0x7f800000u ? kE8M0Nan : code;
}

// Microsoft FP4 / MS-AMP: sf = 2^floor(log2(elem_max / amax)) multiplies the elements; amax 0 or
// not finite: sf = 1. Returns the exponent of sf, clamped to [-126, 126] so that sf and 1/sf are
// both normal floats (the clamp only acts for amax below 2^-123 or above 2^125).
FP4JIT_HD int scale_ms_pow2_exponent(float amax, float elem_max) {
  if (amax == 0.0f || !is_finite(amax)) return 0;
  int e = floor_log2_ratio(elem_max, amax);
  if (e > 126) e = 126;
  if (e < -126) e = -126;
  return e;
}

// NVFP4 (Transformer Engine) two-level scaling, generalised to any block-scale format
// (UE4M3: scale_max 448; UE5M3: its variant's max). The operation order is the reference's, which
// makes the results bit-exact with it.
//   per tensor:  s_enc = scale_max * elem_max / global_amax, capped at FLT_MAX;
//                global_amax = 0 (or s_enc = 0) -> 1
//   per block:   s_dec = round_even_satfinite(block_amax * (s_enc * (1 / elem_max)))  (a code)
//   encode:      enc = 1 / (float(s_dec) * (1 / s_enc)), capped at FLT_MAX
//   value:       decode(code) * s_dec / s_enc
FP4JIT_HD float two_level_tensor_scale(float global_amax, float scale_max, float elem_max) {
  float s = div_rn(mul_rn(scale_max, elem_max), global_amax);
  s = min_f(s, kFloatMax);
  if (global_amax == 0.0f || s == 0.0f) return 1.0f;
  return s;
}
FP4JIT_HD u32 two_level_block_scale(const MiniFloat& fmt, float block_amax, float s_enc,
                                    float elem_max) {
  const float s_dec = mul_rn(block_amax, mul_rn(s_enc, div_rn(1.0f, elem_max)));
  return mf_encode(fmt, min_f(s_dec, kFloatMax), Round::even, /*saturate=*/true);
}
FP4JIT_HD float two_level_encode_factor(const MiniFloat& fmt, u32 block_code, float s_enc) {
  const float global_decode = div_rn(1.0f, s_enc);
  return min_f(div_rn(1.0f, mul_rn(mf_decode(fmt, block_code), global_decode)), kFloatMax);
}

// Real-valued absmax scale (FP32): s = amax / elem_max, amax 0 -> 1; encode divides by s.
FP4JIT_HD float scale_absmax(float amax, float elem_max) {
  if (amax == 0.0f) return 1.0f;
  return div_rn(amax, elem_max);
}

}  // namespace fp4jit::nx
