// Generic small floating-point formats of at most 8 bits: E4M3, E5M2, UE4M3, UE5M3 (each
// variant) and E8M0. Encoding rounds from float with any Round mode and either saturates or
// overflows to the format's Inf/NaN.
#pragma once
#include "numerics/common.cuh"
#include "numerics/rounding.cuh"

namespace fp4jit::nx {

// What the top codes mean.
enum class Special : u8 {
  all_finite = 0,   // every code is a number (UE5M3 "all finite", max 122880)
  all_ones_nan = 1, // the all-ones magnitude is NaN, no Inf (E4M3 FN: 0x7F; UE5M3 default: 0xFF)
  ieee = 2,         // top exponent holds Inf (mantissa 0) and NaN (E5M2; UE5M3 E5M2-style)
};

struct MiniFloat {
  int exp_bits;
  int man_bits;
  int bias;
  bool has_sign;
  Special special;
};

constexpr MiniFloat kE4M3{4, 3, 7, true, Special::all_ones_nan};
constexpr MiniFloat kE5M2{5, 2, 15, true, Special::ieee};
constexpr MiniFloat kUE4M3{4, 3, 7, false, Special::all_ones_nan};
constexpr MiniFloat kUE5M3Nan{5, 3, 15, false, Special::all_ones_nan};  // max 0xFE = 114688
constexpr MiniFloat kUE5M3Finite{5, 3, 15, false, Special::all_finite}; // max 0xFF = 122880
constexpr MiniFloat kUE5M3Ieee{5, 3, 15, false, Special::ieee};         // max 0xF7 = 61440

FP4JIT_HD u32 mf_sign_mask(const MiniFloat& f) { return f.has_sign ? (1u << (f.exp_bits + f.man_bits)) : 0u; }
FP4JIT_HD u32 mf_mag_mask(const MiniFloat& f) { return (1u << (f.exp_bits + f.man_bits)) - 1u; }

// Largest finite magnitude code.
FP4JIT_HD u32 mf_max_code(const MiniFloat& f) {
  const u32 all = mf_mag_mask(f);
  switch (f.special) {
    case Special::all_finite: return all;
    case Special::all_ones_nan: return all - 1u;
    case Special::ieee: return all - (1u << f.man_bits);  // top exponent reserved
  }
  return all;
}
FP4JIT_HD bool mf_has_nan(const MiniFloat& f) { return f.special != Special::all_finite; }
FP4JIT_HD u32 mf_nan_code(const MiniFloat& f) { return mf_mag_mask(f); }  // all ones
FP4JIT_HD u32 mf_inf_code(const MiniFloat& f) { return mf_mag_mask(f) - ((1u << f.man_bits) - 1u); }

FP4JIT_HD bool mf_is_nan_code(const MiniFloat& f, u32 code) {
  const u32 mag = code & mf_mag_mask(f);
  if (f.special == Special::all_ones_nan) return mag == mf_mag_mask(f);
  if (f.special == Special::ieee) return mag > mf_inf_code(f);
  return false;
}

FP4JIT_HD float mf_decode(const MiniFloat& f, u32 code) {
  const bool neg = (code & mf_sign_mask(f)) != 0u;
  const u32 mag = code & mf_mag_mask(f);
  const u32 nan = 0x7fc00000u;
  if (mf_is_nan_code(f, code)) return bits_float(nan);
  if (f.special == Special::ieee && mag == mf_inf_code(f)) return bits_float(neg ? 0xff800000u : 0x7f800000u);
  const u32 e = mag >> f.man_bits;
  const u32 m = mag & ((1u << f.man_bits) - 1u);
  // normal: (2^M + m) * 2^(e - bias - M); subnormal: m * 2^(1 - bias - M). Both exact in float.
  const float v = e == 0u ? mul_rn(static_cast<float>(m), pow2f(1 - f.bias - f.man_bits))
                          : mul_rn(static_cast<float>((1u << f.man_bits) + m),
                                   pow2f(static_cast<int>(e) - f.bias - f.man_bits));
  return neg ? -v : v;
}

FP4JIT_HD float mf_max_value(const MiniFloat& f) { return mf_decode(f, mf_max_code(f)); }

// Round float x to the format.
//   saturate: values beyond the largest finite magnitude (and +-Inf) become it; otherwise they
//             become Inf (ieee formats) or NaN (all-ones-NaN formats).
//   NaN -> the NaN code (formats without NaN: 0). Unsigned formats: negative values -> 0.
FP4JIT_HD u32 mf_encode(const MiniFloat& f, float x, Round mode, bool saturate, u32 rbits = 0,
                        int sr_bits = 8) {
  if (is_nan(x)) return mf_has_nan(f) ? mf_nan_code(f) : 0u;
  const bool neg = sign_bit(x);
  if (neg && !f.has_sign) return 0u;
  const u32 sign = neg ? mf_sign_mask(f) : 0u;
  const float a = abs_f(x);
  const u32 max_code = mf_max_code(f);
  const u32 overflow = saturate ? max_code : (f.special == Special::ieee ? mf_inf_code(f) : mf_nan_code(f));
  if (a == 0.0f) return sign;
  if (!is_finite(a)) return (f.special == Special::all_finite ? max_code : overflow) | sign;

  const int emin = 1 - f.bias;
  const int emax = (1 << f.exp_bits) - 1 - f.bias;  // exponent of the all-ones field
  int e = floor_log2(a);
  if (e > emax) return (f.special == Special::all_finite ? max_code : overflow) | sign;
  if (e < emin) e = emin;
  // n = a / 2^(e - M): below 2^(M+1), exact (a power-of-two scaling with no overflow).
  const float n = mul_rn(a, pow2f(f.man_bits - e));
  const u32 i = static_cast<u32>(n);
  const float frac = n - static_cast<float>(i);
  u32 m = i + (round_up(frac, (i & 1u) != 0u, neg, mode, rbits, sr_bits) ? 1u : 0u);
  // Re-normalize a carry into the next binade; build the code from (e, m).
  u32 code;
  if (m < (1u << f.man_bits)) {
    code = m;  // subnormal (only possible at e == emin), or zero
  } else {
    if (m == (2u << f.man_bits)) {
      m >>= 1;
      ++e;
    }
    if (e > emax) return (f.special == Special::all_finite ? max_code : overflow) | sign;
    code = (static_cast<u32>(e + f.bias) << f.man_bits) | (m - (1u << f.man_bits));
  }
  if (code > max_code) {
    if (f.special == Special::all_finite) code = max_code;
    else code = overflow;
  }
  return code | sign;
}

// E8M0: an unsigned biased exponent, value 2^(code - 127); 0xFF is NaN; no zero.
constexpr u32 kE8M0Nan = 0xffu;
FP4JIT_HD float e8m0_decode(u32 code) {
  return code == kE8M0Nan ? bits_float(0x7fc00000u) : pow2f(static_cast<int>(code) - 127);
}
// Exponent e -> code, clamped into [-127, 127].
FP4JIT_HD u32 e8m0_from_exponent(int e) {
  if (e < -127) e = -127;
  if (e > 127) return kE8M0Nan;
  return static_cast<u32>(e + 127);
}

}  // namespace fp4jit::nx
