// Exact shortcuts for the kernels' hot loops: the same results as e2m1_encode and mf_encode
// (proved over every relevant float by tests/unit/fast_encode_test.cpp), in a handful of
// instructions each.
//
// E2M1 by three fused multiply-adds and a minimum. For a = min(|v|, 6) the magnitude code is
// g(a) = min(2a, a + 2, a / 2 + 4) rounded to an integer: 2a on [0, 2], a + 2 on [2, 4] and
// a / 2 + 4 on [4, 6] map each interval's grid points to consecutive codes (the pieces meet at
// 2 and 4). Each rounding below is monotone and commutes with adding an even integer (ties to
// even look at a parity that such a shift keeps), so the rounded minimum is the minimum of the
// three pieces rounded apart, and each piece is one FMA of y = a * k (k = 2, 1, 0.5) into a float
// of the binade where floats are spaced by the rounding's unit, with the piece's offset (0, 2, 4)
// in the addend:
//   even        n = rn(y)                               (into 2^23, spacing 1)
//   away        n = (rz(2y + 1)) >> 1 = floor(y + 1/2)  (y added into 2^22 + 1/2: spacing 1/2)
//   zero        n = (ru(2y)) >> 1     = ceil(y - 1/2)   (y added into 2^22)
//   stochastic  n = ceil((ceil(2^(R+1) y) - (2r + 1)) / 2^(R+1)) = floor(y) + [frac(y) > (r + 1/2)
//   / 2^R]
//               = the step-up rule of nx::round_up (r + 1/2 < frac * 2^R): an RU FMA per piece,
//               then a shift (or, in the kernels, e2m1_sr_floor)
// The three results share their binade, so their bits compare as integers: one three-way integer
// minimum, and the code is the minimum's bits less the binade's base, shifted. Every FMA addend
// is a float of the result's binade, so it is exact, and the exact result stays in that binade.
// Against the single-FMA form that picks the interval from a's exponent first (a maximum, a mask
// and an offset sum per element, all on the integer pipe), this trades three integer instructions
// for two FMAs and a three-input minimum: the quantize kernels are bound by the integer pipe.
#pragma once
#include "numerics/common.cuh"
#include "numerics/minifloat.cuh"
#include "numerics/rounding.cuh"

namespace fp4jit::nx {

enum class FmaMode : u8 { rn = 0, rz = 1, ru = 2 };

// a * b + c rounded once, for a, b >= 0 finite and c a multiple of 2^(kExp - 23) with the exact
// result in [2^kExp, 2^(kExp + 1)] (spacing 2^(kExp - 23)). The host branch computes the same
// from the exact product.
template <FmaMode kMode, int kExp = 23>
FP4JIT_HD float fma_unit(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  if constexpr (kMode == FmaMode::rn) return __fmaf_rn(a, b, c);
  if constexpr (kMode == FmaMode::rz) return __fmaf_rz(a, b, c);
  return __fmaf_ru(a, b, c);
#else
  // Scaled by 2^(23 - kExp) (exact), the result is an integer in [2^23, 2^24].
  const double scale = static_cast<double>(pow2f(23 - kExp));
  const double p = static_cast<double>(a) * static_cast<double>(b) * scale;  // exact
  const double fl = static_cast<double>(static_cast<i64>(p));  // p < 2^24: exact floor
  const double fr = p - fl;                                    // exact
  const double base = static_cast<double>(c) * scale + fl;     // an integer below 2^25
  bool up = false;
  if constexpr (kMode == FmaMode::rn)
    up = fr > 0.5 || (fr == 0.5 && (static_cast<i64>(base) & 1) != 0);
  else if constexpr (kMode == FmaMode::ru)
    up = fr > 0.0;
  return static_cast<float>((base + (up ? 1.0 : 0.0)) / scale);
#endif
}

// The rounding's unit and base: for a = min(|v|, 6) (not NaN) in rounding `mode` (stochastic:
// rbits holds the element's R = sr_bits random bits, below 2^R) e2m1_fma_q's result bits q give the
// magnitude code ((q - e2m1_qbase(mode, sr_bits)) >> e2m1_qshift(mode, sr_bits)) (away, zero,
// up: the shift drops bit 0 of q, which carries nothing). The modes that round 2y (away, zero) or
// 2^(R+1) y (stochastic) to integers add into the binade where floats are spaced by 1/2 or
// 2^-(R+1) instead of scaling k.
FP4JIT_HD constexpr int e2m1_qshift(Round mode, int sr_bits) {
  return mode == Round::even ? 0 : (mode == Round::stochastic ? sr_bits + 1 : 1);
}
FP4JIT_HD constexpr u32 e2m1_qbase(Round mode, int sr_bits) {
  if (mode == Round::even) return 0x4b000000u;  // 2^23
  if (mode == Round::stochastic) return 0x4b100000u - (static_cast<u32>(sr_bits + 1) << 23);
  return 0x4a800000u;  // 2^22
}
// Stochastic rounding's addend bits for random bits r: (2^23 + 2^20 + 2^(R+1) - 2 - 2r) *
// 2^-(R+1), here for r = 0 (e2m1_sr_q takes 2r off the result). The 2^20 keeps the sum in its
// binade for any r (and the pieces' offsets) and is a multiple of 2^(R+1), like the base
// subtracted.
FP4JIT_HD u32 e2m1_sr_addend0_bits(int sr_bits) {
  return e2m1_qbase(Round::stochastic, sr_bits) + (2u << sr_bits) - 2u;
}
// Stochastic rounding's q (bits of 9 * 2^(19 - R) + n + f, f in [0, 1) the fraction below the
// unit) floored by one RZ addition into 2^23, where floats are spaced by 1: the bits
// e2m1_sr_floor_base(R) + n, the code n in the low nibble, with an FMA-pipe instruction instead
// of the shift that (q - base) >> (R + 1) costs on the integer pipe.
FP4JIT_HD u32 e2m1_sr_floor(u32 q) {
  return float_bits(fma_unit<FmaMode::rz>(bits_float(q), 1.0f, 8388608.0f));
}
FP4JIT_HD constexpr u32 e2m1_sr_floor_base(int sr_bits) {
  // The value of e2m1_qbase(stochastic): 1.125 * 2^(22 - R) = 9 * 2^(19 - R), an integer.
  return 0x4b000000u + (9u << (19 - sr_bits));
}
FP4JIT_HD u32 umin3(u32 a, u32 b, u32 c) {
  const u32 m = a < b ? a : b;  // a three-input VIMNMX on sm_90
  return m < c ? m : c;
}
// min over the pieces of FMA(a, k_i, c_i), c_i = c + off_i (off_i = 0, 2, 4: floats of the
// result's binade).
template <FmaMode kMode, int kExp>
FP4JIT_HD u32 e2m1_pieces(float a, float c0, float c1, float c2) {
  return umin3(float_bits(fma_unit<kMode, kExp>(a, 2.0f, c0)),
               float_bits(fma_unit<kMode, kExp>(a, 1.0f, c1)),
               float_bits(fma_unit<kMode, kExp>(a, 0.5f, c2)));
}
// The same with c given as bits: the offsets in units of 2^-shift (constants fold).
template <FmaMode kMode, int kExp, int kShift>
FP4JIT_HD u32 e2m1_pieces_from(float a, u32 c) {
  return e2m1_pieces<kMode, kExp>(a, bits_float(c), bits_float(c + (2u << kShift)),
                                  bits_float(c + (4u << kShift)));
}
// Stochastic rounding's q for random bits r already below 2^R. The pieces take the addend of
// r = 0 (a constant: no per-element additions) and 2r is taken off the minimum's bits after: each
// piece's exact sum for r is the sum for 0 less 2r units of the binade's spacing, which is in
// the same binade for every r (the 2^20 of e2m1_sr_addend0_bits), and rounding up commutes with
// subtracting a multiple of the spacing there, as the minimum does with subtracting the same
// amount from all three.
FP4JIT_HD u32 e2m1_sr_q(float a, u32 r, int sr_bits) {
  const u32 c = e2m1_sr_addend0_bits(sr_bits);
  const u32 m = sr_bits == 8 ? e2m1_pieces_from<FmaMode::ru, 14, 9>(a, c)
                             // The other width the recipes allow (16 bits): spacing 2^-17 in
                             // [2^6, 2^7).
                             : e2m1_pieces_from<FmaMode::ru, 6, 17>(a, c);
  return m - 2u * r;
}
FP4JIT_HD u32 e2m1_fma_q(float a, Round mode, bool negative, u32 rbits, int sr_bits) {
  constexpr u32 kHalf = 0x4a800001u;  // 2^22 + 1/2
  constexpr u32 kTwo22 = 0x4a800000u;
  switch (mode) {
    case Round::even:
      return e2m1_pieces_from<FmaMode::rn, 23, 0>(a, 0x4b000000u);
    case Round::away:
      return e2m1_pieces_from<FmaMode::rz, 22, 1>(a, kHalf);
    case Round::zero:
      return e2m1_pieces_from<FmaMode::ru, 22, 1>(a, kTwo22);
    case Round::up: {
      // Ties toward +inf: away in magnitude for positive values, toward zero for negative ones,
      // which is away for the float just below a (it lies at or past a midpoint exactly when a
      // lies past it, and every grid point and midpoint is a float): one set of pieces either way.
      const float b = negative && a > 0.0f ? bits_float(float_bits(a) - 1u) : a;
      return e2m1_pieces_from<FmaMode::rz, 22, 1>(b, kHalf);
    }
    case Round::stochastic:
      return e2m1_sr_q(a, rbits, sr_bits);
  }
  return 0u;
}

// The full E2M1 code of v by the FMA path: equals e2m1_encode(v, mode, rbits, sr_bits) for
// every v (NaN: 0, as e2m1_encode).
FP4JIT_HD u32 e2m1_encode_fma(float v, Round mode, u32 rbits = 0, int sr_bits = 8) {
  const u32 sign = (float_bits(v) >> 28) & 8u;
  if (is_nan(v)) return 0u;
  const float a = min_f(abs_f(v), 6.0f);
  // Any bits above the element's R random ones are dropped here (as e2m1_encode does).
  const u32 r = mode == Round::stochastic ? rbits & ((1u << sr_bits) - 1u) : rbits;
  const u32 q = e2m1_fma_q(a, mode, sign != 0u, r, sr_bits);
  const u32 mag = (q - e2m1_qbase(mode, sr_bits)) >> e2m1_qshift(mode, sr_bits);
  return (mag & 7u) | sign;
}

// Packed BF16 -> E2M1 under a power-of-two block scale (x multiplied by 2^s), two elements per
// instruction. Each 32-bit pair word holds two BF16 inputs. Per half:
//   a = max(|x| bits, c) with c = (112 - s) * 128: inputs below 2^(-14 - s) (scaled values below
//       FP16's smallest normal, all code 0) are raised to it, so that
//   f = 8 * (a - c) + nudge is the FP16 bits of x * 2^s (exact: 8 significant bits in 11), plus
//       half a BF16 ulp for ties away from zero (a tie then lies above the midpoint, and any
//       other value stays on its side of it: the scaled values sit on a grid of a BF16 ulp);
//   t = max(f, 1.0), k = ~t & exponent mask = 2^(16 - e5(t)) (2, 1, 0.5 on [0, 2), [2, 4),
//       [4, 8)), and one FP16 FMA rounds y = f * k into 1024 + n (spacing 1 there);
//   code = n + 2 * (e5(t) - 15) = q - (bits(k) >> 9) - 0x63e0.
// Eight codes are summed into a word as in fast_encode's FP32 path (constant parts cancel, no
// carries: every code fits its nibble). Valid for s <= 112 (so c >= 0 and BF16 subnormals scale
// below 2^-14) and scaled values below 8; a code of 8 (scaled value at or past 7, possible only
// under OCP's floor rule) is saturated to 7 by the caller's choice of kSaturate.

// Per 16-bit half: unsigned max.
FP4JIT_HD u32 umax16x2(u32 a, u32 b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  u32 d;
  asm("max.u16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
#else
  const u32 lo = (a & 0xffffu) > (b & 0xffffu) ? (a & 0xffffu) : (b & 0xffffu);
  const u32 hi = (a >> 16) > (b >> 16) ? (a >> 16) : (b >> 16);
  return lo | (hi << 16);
#endif
}
// fma.rn.f16x2 for what the packed encoder asks of it: a >= 0 finite, b a power of two (or 0),
// c = 1024 and a * b + c below 2048, where the exact result rounds once to an integer.
FP4JIT_HD u32 hfma2_rn_unit(u32 a, u32 b, u32 c) {
#if defined(__CUDA_ARCH__)
  u32 d;
  asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
#else
  u32 d = 0u;
  for (int h = 0; h < 2; ++h) {
    const double x = static_cast<double>(f16_to_float(static_cast<u16>(a >> (16 * h)))) *
                         static_cast<double>(f16_to_float(static_cast<u16>(b >> (16 * h)))) +
                     static_cast<double>(f16_to_float(static_cast<u16>(c >> (16 * h))));
    // Round half to even onto the integers of [1024, 2048) (exact in double: x has at most
    // 11 + 26 significant bits here).
    const double fl = static_cast<double>(static_cast<i64>(x));
    const double fr = x - fl;
    const bool up = fr > 0.5 || (fr == 0.5 && (static_cast<i64>(fl) & 1) != 0);
    const u32 n = static_cast<u32>(static_cast<i64>(fl) + (up ? 1 : 0));
    d |= (0x6400u + (n - 1024u)) << (16 * h);
  }
  return d;
#endif
}

// Per-block constants of the packed encoder for scale exponent s (<= 112).
struct E2m1Pow2Pack {
  u32 floor;  // c in both halves
  u32 add;    // -8c + nudge in both halves (mod 2^32)
};
FP4JIT_HD E2m1Pow2Pack e2m1_pow2_pack_consts(int s, bool away) {
  const u32 c = static_cast<u32>(112 - s) * 128u;
  return E2m1Pow2Pack{c * 0x10001u, (0u - 8u * c + (away ? 4u : 0u)) * 0x10001u};
}
FP4JIT_HD u32 umulhi_hd(u32 a, u32 b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<u32>((static_cast<u64>(a) * b) >> 32);
#endif
}
// Eight E2M1 codes (element e at nibble e) from pair words p[j] = (element j, element j + 4)
// of BF16 inputs.
template <bool kSaturate>
FP4JIT_HD u32 e2m1_pack8_pow2(const u32 (&p)[4], const E2m1Pow2Pack& k) {
  u32 qsum = 0u, ksum = 0u;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int j = 3; j >= 0; --j) {
    const u32 a = umax16x2(p[j] & 0x7fff7fffu, k.floor);
    const u32 f = a * 8u + k.add;
    const u32 kb = ~umax16x2(f, 0x3c003c00u) & 0x7c007c00u;
    qsum = qsum * 16u + hfma2_rn_unit(f, kb, 0x64006400u);
    // (kb >> 9) << 4j, exact: kb's low 10 bits of each half are zero.
    ksum += j == 3 ? kb * 8u : umulhi_hd(kb, 1u << (23 + 4 * j));
  }
  u32 mag = qsum - ksum - 0x63e063e0u * 0x1111u;
  if constexpr (kSaturate) mag -= (mag & 0x88888888u) >> 3;  // 8 -> 7
  // Sign bytes: element j's sign replicated into byte j of sa (even) or sb (odd) positions.
  const u32 sa = prmt(p[0], p[2], 0xfbd9u);  // elements 0, 2, 4, 6
  const u32 sb = prmt(p[1], p[3], 0xfbd9u);  // elements 1, 3, 5, 7
  return (mag & 0x77777777u) | (sa & 0x08080808u) | (sb & 0x80808080u);
}

// mf_encode(fmt, x, Round::even, saturate = true) for an unsigned format with 3 mantissa bits
// (UE4M3, UE5M3 in each variant) and x >= 0 (+0 to +Inf, not NaN), without branches: below the
// smallest normal one FMA rounds x / 2^(emin - 3) to an integer; above it the mantissa is
// rounded to nearest even on the bits; the code is then clamped to the format's largest.
FP4JIT_HD u32 umf3_encode_even_sat(const MiniFloat& f, float x) {
  const int emin = 1 - f.bias;
  const u32 u = float_bits(x);
  const float below = min_f(x, pow2f(emin));  // keeps the FMA's result below 2^23 + 8
  const float sub = fma_unit<FmaMode::rn>(below, pow2f(3 - emin), 8388608.0f);
  const u32 code_sub = float_bits(sub) - 0x4b000000u;
  const u32 rounded = (u + 0x7ffffu + ((u >> 20) & 1u)) >> 20;
  const u32 code_norm = rounded - (static_cast<u32>(127 - f.bias) << 3);
  const u32 code = u < (static_cast<u32>(emin + 127) << 23) ? code_sub : code_norm;
  const u32 max_code = mf_max_code(f);
  return code < max_code ? code : max_code;
}

// mf_decode of a finite code of such a format, as float: normal codes are rebiased bits,
// subnormal ones (1 + m/8) * 2^emin - 2^emin, both exact.
FP4JIT_HD float umf3_decode(const MiniFloat& f, u32 code) {
  const u32 normal = (code << 20) + (static_cast<u32>(127 - f.bias) << 23);
  if (code >= 8u) return bits_float(normal);
  const float one = pow2f(1 - f.bias);
  return add_rn(bits_float((code << 20) + (static_cast<u32>(128 - f.bias) << 23)), -one);
}

}  // namespace fp4jit::nx
