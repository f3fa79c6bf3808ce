// On-chip expansion of packed E2M1 (FP4) codes into tensor-core operands, exact by construction.
// Shared by the sm90 GEMM kernels and the host unit test (tests/unit/gemm_expand_test.cpp), so
// every function is __host__ __device__ (nx::prmt emulates PTX prmt.b32 on the host).
//
// Packed layout (core/quantized.hpp): element 2i in the low nibble of byte i. A 32-bit word w
// holds 8 codes, element j in bits [4j, 4j+4): bit 4j+3 is the sign, bits 4j..4j+2 the magnitude
// code c (0..7 -> 0, 0.5, 1, 1.5, 2, 3, 4, 6).
//
// FP8 path (QGMMA, E4M3 operands):
//   * e2m1x8_to_e4m3_eo: fixed placement, value = E2M1 * 2^-6. Sign to bit 7, c to bits 4..2:
//     c<<2 read as E4M3 is E2M1(c) * 2^-6 for every c (0.5 lands on the subnormal 2^-7).
//     Outputs the even elements (0,2,4,6) and the odd elements (1,3,5,7) as two words.
//   * e2m1x8_to_e4m3_lut: value = E2M1 * 2^(t-8) for a per-block shift t in [0, 14] (the window
//     where every E2M1 value times the power of two is exact in E4M3), through an 8-byte
//     magnitude table selected by prmt. Outputs elements 0..3 and 4..7 in natural order.
// 16-bit path (HGMMA, FP16 or BF16 operands):
//   * e2m1x4_to_16bit: 4 codes -> two 16-bit pairs (elements (0,1) and (2,3)) through byte
//     tables; the caller multiplies by the block scale with one exact mul.f16x2/bf16x2.
// Every output keeps its own element order within a 32-element group; the kernels apply the
// same permutation of K to both operands, which leaves the GEMM unchanged.
#pragma once
#include "numerics/common.cuh"

namespace fp4jit::sm90 {

using nx::u16;
using nx::u32;
using nx::u64;
using nx::u8;

using nx::prmt;

// ---- FP8 path -------------------------------------------------------------------------------

// Fixed expansion: E4M3 bytes of E2M1 * 2^-6. even = elements 0,2,4,6; odd = elements 1,3,5,7.
FP4JIT_HD void e2m1x8_to_e4m3_eo(u32 w, u32& even, u32& odd) {
  even = ((w & 0x07070707u) << 2) | ((w & 0x08080808u) << 4);
  odd = ((w >> 2) & 0x1C1C1C1Cu) | (w & 0x80808080u);
}

// Table expansion: lut_lo holds the E4M3 magnitude bytes for codes 0..3, lut_hi for 4..7 (sign
// bits clear). lo = elements 0..3, hi = elements 4..7, each byte the table entry with the
// element's sign or'ed in (for the NaN table 0x7F, the signed byte 0xFF is NaN as well).
FP4JIT_HD void e2m1x8_to_e4m3_lut(u32 w, u32 lut_lo, u32 lut_hi, u32& lo, u32& hi) {
  const u32 sel = w & 0x77777777u;
  const u32 w4 = w << 4;
  // Sign of element j is bit 4j+3 of w: the msb of byte j/2 of w (odd j) or of w<<4 (even j).
  const u32 slo = prmt(w4, w, 0xD9C8u);
  const u32 shi = prmt(w4, w, 0xFBEAu);
  lo = prmt(lut_lo, lut_hi, sel) | (slo & 0x80808080u);
  hi = prmt(lut_lo, lut_hi, sel >> 16) | (shi & 0x80808080u);
}

// Shifts of the table expansion: value = E2M1 * 2^(t - kLutBias), t in [0, kLutMaxShift].
constexpr int kLutBias = 8;
constexpr int kLutMaxShift = 14;  // 15 binades: 0.5 * 2^-8 = 2^-9 .. 6 * 2^6 = 384
constexpr int kLutZero = 15;      // every code -> 0 (blocks outside the current band)
constexpr int kLutNan = 16;       // every code -> NaN (NaN block scales)
constexpr int kLutEntries = 17;

// E4M3 bits of v = n * 2^q for n in {1, 3} (n * 2^q representable), positive.
FP4JIT_HD u32 e4m3_bits_pow2(u32 n, int q) {
  // n = 1: 2^q; n = 3: 1.5 * 2^(q+1).
  const int e = n == 1u ? q : q + 1;  // unbiased exponent of the leading bit
  const u32 mant = n == 1u ? 0u : 4u;
  if (e >= -6) return (static_cast<u32>(e + 7) << 3) | mant;
  // subnormal: value / 2^-9 as an integer in [1, 7]
  return n << (q + 9);
}

// The two words of the magnitude table for shift t (or kLutZero / kLutNan).
FP4JIT_HD void e4m3_lut(int t, u32& lut_lo, u32& lut_hi) {
  if (t == kLutZero) {
    lut_lo = lut_hi = 0u;
    return;
  }
  if (t == kLutNan) {
    lut_lo = lut_hi = 0x7F7F7F7Fu;
    return;
  }
  // 2 * E2M1(c) = {0, 1, 2, 3, 4, 6, 8, 12} = n * 2^p with n in {1, 3}
  const u32 n[8] = {0, 1, 1, 3, 1, 3, 1, 3};
  const int p[8] = {0, 0, 1, 0, 2, 1, 3, 2};
  u32 bytes[8];
  for (int c = 0; c < 8; ++c)
    bytes[c] = c == 0 ? 0u : e4m3_bits_pow2(n[c], p[c] + t - kLutBias - 1);
  lut_lo = bytes[0] | (bytes[1] << 8) | (bytes[2] << 16) | (bytes[3] << 24);
  lut_hi = bytes[4] | (bytes[5] << 8) | (bytes[6] << 16) | (bytes[7] << 24);
}

// ---- 16-bit path ----------------------------------------------------------------------------

// x: 4 codes in bits 0..15. w0 = (element 0, element 1), w1 = (element 2, element 3), each a pair
// of 16-bit floats (first element in the low half; FP16, or BF16 when kBF16) holding E2M1(c) with
// the code's sign. Byte tables of the 16-bit encodings of 0, 0.5, 1, 1.5 | 2, 3, 4, 6: FP16 high
// bytes 00 38 3C 3E | 40 42 44 46 (low bytes all zero); BF16 high bytes 00 3F 3F 3F | 40 40 40 40,
// low bytes 00 00 80 C0 | 00 40 80 C0.
template <bool kBF16>
FP4JIT_HD void e2m1x4_to_16bit(u32 x, u32& w0, u32& w1) {
  const u32 sel = x & 0x7777u;
  const u32 signs = prmt(x << 4, x, 0xD9C8u) & 0x80808080u;
  const u32 hi4 =
      (kBF16 ? prmt(0x3F3F3F00u, 0x40404040u, sel) : prmt(0x3E3C3800u, 0x46444240u, sel)) | signs;
  const u32 lo4 = kBF16 ? prmt(0xC0800000u, 0xC0804000u, sel) : 0u;
  w0 = prmt(lo4, hi4, 0x5140u);
  w1 = prmt(lo4, hi4, 0x7362u);
}

// The tables e2m1x8_to_16bit looks codes up in: the high bytes of magnitudes 0..3 (its other
// table, for 4..7, and the BF16 low bytes' second half are immediates of the lookups) and for
// BF16 the low bytes of 0..3. A caller in a loop may pass them in registers it holds
// (E2m1Tables16::in_registers), where the compiler would otherwise copy the constants from a
// uniform register before every lookup.
template <bool kBF16>
struct E2m1Tables16 {
  u32 hi = kBF16 ? 0x3F3F3F00u : 0x3E3C3800u;
  u32 lo = 0xC0800000u;
#if defined(__CUDA_ARCH__)
  __device__ static E2m1Tables16 in_registers() {
    E2m1Tables16 t;
    asm volatile("mov.b32 %0, %1;" : "=r"(t.hi) : "r"(t.hi));
    asm volatile("mov.b32 %0, %1;" : "=r"(t.lo) : "r"(t.lo));
    return t;
  }
#endif
};

// 8 codes (a 32-bit packed word) at once: lo0/lo1 = elements (0,1)/(2,3), hi0/hi1 = elements
// (4,5)/(6,7); equal to e2m1x4_to_16bit on each half, with the masks and shifts shared.
template <bool kBF16>
FP4JIT_HD void e2m1x8_to_16bit(u32 w, u32& lo0, u32& lo1, u32& hi0, u32& hi1,
                               const E2m1Tables16<kBF16>& tab = E2m1Tables16<kBF16>{}) {
  const u32 sel = w & 0x77777777u;
  const u32 w4 = w << 4;
  const u32 hsel = sel >> 16;
  const u32 hl = tab.hi, hh = kBF16 ? 0x40404040u : 0x46444240u;
  const u32 mlo = prmt(hl, hh, sel), mhi = prmt(hl, hh, hsel);
  const u32 slo = prmt(w4, w, 0xD9C8u), shi = prmt(w4, w, 0xFBEAu);
  const u32 hi4_lo = mlo | (slo & 0x80808080u), hi4_hi = mhi | (shi & 0x80808080u);
  const u32 lo4_lo = kBF16 ? prmt(tab.lo, 0xC0804000u, sel) : 0u;
  const u32 lo4_hi = kBF16 ? prmt(tab.lo, 0xC0804000u, hsel) : 0u;
  lo0 = prmt(lo4_lo, hi4_lo, 0x5140u);
  lo1 = prmt(lo4_lo, hi4_lo, 0x7362u);
  hi0 = prmt(lo4_hi, hi4_hi, 0x5140u);
  hi1 = prmt(lo4_hi, hi4_hi, 0x7362u);
}

// Products of 16-bit pairs, rounded to nearest even (the expansions choose their operands so
// that no rounding happens). The host versions (CPU emulator, unit tests) compute the same bits.
FP4JIT_HD float f16_bits_to_float(u32 h) {
  const u32 e = (h >> 10) & 31u, m = h & 1023u;
  const float mag = e == 0    ? static_cast<float>(m) * 0x1p-24f
                    : e == 31 ? (m != 0 ? nx::bits_float(0x7FC00000u) : nx::bits_float(0x7F800000u))
                              : nx::bits_float(((e + 112u) << 23) | (m << 13));
  return (h & 0x8000u) != 0 ? -mag : mag;
}

FP4JIT_HD u32 float_to_f16_bits_rn(float x) {
  const u32 u = nx::float_bits(x), sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return sign | 0x7E00u;     // NaN
  if (a >= 0x477FF000u) return sign | 0x7C00u;    // >= 65520: Inf
  if (a < 0x38800000u) {                          // below 2^-14: subnormal or zero
    const float q = nx::bits_float(a) * 0x1p24f;  // exact: units of 2^-24
    const u32 lo = static_cast<u32>(q);
    const float rest = q - static_cast<float>(lo);
    const u32 r = lo + ((rest > 0.5f || (rest == 0.5f && (lo & 1u))) ? 1u : 0u);
    return sign | r;  // r == 1024 is the smallest normal, as bits
  }
  const u32 e = (a >> 23) - 112u, m = a & 0x7FFFFFu;
  u32 h = (e << 10) | (m >> 13);
  const u32 rest = m & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent
  return sign | h;
}

FP4JIT_HD u32 float_to_bf16_bits_rn(float x) {
  const u32 u = nx::float_bits(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return ((u >> 16) & 0x8000u) | 0x7FC0u;
  return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}

template <bool kBF16>
FP4JIT_HD u32 mul16x2(u32 a, u32 b) {
#if defined(__CUDA_ARCH__)
  u32 d;
  if constexpr (kBF16)
    asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  else
    asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
#else
  const auto to_float = [](u32 h) {
    return kBF16 ? nx::bits_float(h << 16) : f16_bits_to_float(h);
  };
  u32 d = 0;
  for (int h = 0; h < 2; ++h) {
    const float p = to_float((a >> (16 * h)) & 0xFFFFu) * to_float((b >> (16 * h)) & 0xFFFFu);
    d |= (kBF16 ? float_to_bf16_bits_rn(p) : float_to_f16_bits_rn(p)) << (16 * h);
  }
  return d;
#endif
}
FP4JIT_HD u32 mul_f16x2(u32 a, u32 b) {
  return mul16x2<false>(a, b);
}
FP4JIT_HD u32 mul_bf16x2(u32 a, u32 b) {
  return mul16x2<true>(a, b);
}

}  // namespace fp4jit::sm90
