// E2M1 (FP4): sign, 2 exponent bits (bias 1), 1 mantissa bit. No Inf, no NaN.
//   code (magnitude) 0..7  ->  0, 0.5, 1, 1.5, 2, 3, 4, 6;   bit 3 is the sign.
// Two codes per byte in memory: element 2i in the low nibble, element 2i+1 in the high nibble.
#pragma once
#include "numerics/common.cuh"
#include "numerics/rounding.cuh"

namespace fp4jit::nx {

constexpr float kE2M1Max = 6.0f;

FP4JIT_HD float e2m1_decode(u32 code) {
  const u32 m = code & 7u;
  // 0.5 * {0,1,2,3} below 2, then 2, 3, 4, 6
  const float mag = m < 4u ? 0.5f * static_cast<float>(m) : (m == 7u ? 6.0f : static_cast<float>(m - 2u));
  return (code & 8u) ? -mag : mag;
}

// Locate |v| (finite, below 6) on the grid: the lower code and the exact fraction towards the next.
// Intervals: [0, 2) step 0.5, [2, 4) step 1, [4, 6) step 2. Every subtraction below is exact
// (Sterbenz) and every scaling is by a power of two, so frac is exact.
FP4JIT_HD void e2m1_locate(float a, u32* lo_code, float* frac) {
  if (a < 2.0f) {
    const float n = a * 2.0f;
    const u32 i = static_cast<u32>(n);
    *lo_code = i;
    *frac = n - static_cast<float>(i);
  } else if (a < 4.0f) {
    const float n = a - 2.0f;
    const u32 i = static_cast<u32>(n);
    *lo_code = 4u + i;
    *frac = n - static_cast<float>(i);
  } else {
    *lo_code = 6u;
    *frac = (a - 4.0f) * 0.5f;
  }
}

// Round the (already scaled) value v to E2M1. Saturates to +-6; NaN encodes as +0 (E2M1 has no NaN:
// quantizers flag non-finite blocks through their scale). The sign of v is kept, also for zero.
FP4JIT_HD u32 e2m1_encode(float v, Round mode, u32 rbits = 0, int sr_bits = 8) {
  if (is_nan(v)) return 0u;
  const bool neg = sign_bit(v);
  const float a = abs_f(v);
  u32 mag;
  if (a >= kE2M1Max) {
    mag = 7u;
  } else {
    u32 lo;
    float frac;
    e2m1_locate(a, &lo, &frac);
    mag = lo + (round_up(frac, (lo & 1u) != 0u, neg, mode, rbits, sr_bits) ? 1u : 0u);
  }
  return mag | (neg ? 8u : 0u);
}

// e2m1_encode computed from the float's bits: the same code for every input (proved by
// tests/unit/e2m1_fast_test.cpp over every float below 6), without the float <-> integer
// conversions of e2m1_locate (a quarter of the arithmetic rate on GPUs) and without branches
// (selects only, so a warp never diverges on the element's range). For 1 <= a < 6 the lower
// grid point keeps the top mantissa bit and frac is the rest of the mantissa, exactly; on
// [0.5, 1) frac is the whole mantissa; below 0.5 frac = 2a.
FP4JIT_HD u32 e2m1_encode_fast(float v, Round mode, u32 rbits = 0, int sr_bits = 8) {
  const u32 u = float_bits(v);
  const u32 au = u & 0x7fffffffu;
  const u32 sign = (u >> 28) & 8u;
  const bool small = au < 0x3f000000u;  // below 0.5: code 0
  const bool half = au < 0x3f800000u;   // [0.5, 1): code 1
  const u32 lo = small ? 0u : (half ? 1u : 2u * (au >> 23) - 252u + ((au >> 22) & 1u));
  const u32 mantissa = half ? (au & 0x7fffffu) : ((au << 1) & 0x7fffffu);
  const float frac = small ? bits_float(au) * 2.0f : bits_float(0x3f800000u | mantissa) - 1.0f;
  const u32 code = (lo + (round_up(frac, (lo & 1u) != 0u, sign != 0u, mode, rbits, sr_bits) ? 1u : 0u)) | sign;
  // NaN: 0 (E2M1 has none); |v| >= 6, Inf included: saturate.
  return au > 0x7f800000u ? 0u : (au >= 0x40c00000u ? 7u | sign : code);
}

// The two grid neighbours of v (equal when v is on the grid), for rounding toward a target
// (TetraJet's Q-EMA picks whichever neighbour lies nearer an EMA of the weight).
FP4JIT_HD void e2m1_neighbours(float v, u32* lower_mag_code, u32* upper_mag_code) {
  const float a = abs_f(v);
  if (is_nan(v) || a >= kE2M1Max) {
    *lower_mag_code = *upper_mag_code = is_nan(v) ? 0u : 7u;
    return;
  }
  u32 lo;
  float frac;
  e2m1_locate(a, &lo, &frac);
  *lower_mag_code = lo;
  *upper_mag_code = frac > 0.0f ? lo + 1u : lo;
}

// Pack two 4-bit codes into one byte: first element in the low nibble.
FP4JIT_HD u8 pack_e2m1(u32 first, u32 second) { return static_cast<u8>((first & 15u) | ((second & 15u) << 4)); }

}  // namespace fp4jit::nx
