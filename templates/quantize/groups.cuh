// Lane-owned groups: the E2M1 path for 1 x 16 and 1 x 32 tile blocks (with Hadamard chunks of at
// most 32 along K), and for 16 x 16 blocks in quantize_tile's float-tile path (lane_groups_2d).
// One thread holds whole groups of kGroup consecutive K-elements (a block, or a Hadamard chunk
// spanning blocks), so block stats, the Hadamard butterfly and the block scale need no shuffles
// (a 16 x 16 block's maximum: four, over the lanes holding its rows) and each block's scale is
// computed once per lane. Elements are encoded by three FMAs and a three-input minimum each
// (numerics/fast_encode.cuh) and packed eight to a word with integer sums whose constant parts
// cancel:
//   word = sum_j q_j << 4j  -  kConst   (magnitudes, mod 2^32)
// merged with the sign bits, gathered by a funnel shift per element.
//
// Order of operations per element as in reference/quantize.cpp: (OCC clamp) -> Hadamard -> block
// stat -> block scale -> scale -> round (SR bits of the element's index) -> code.
#pragma once
#include "numerics/fast_encode.cuh"
#include "quantize/segment.cuh"

namespace fp4jit::kern {

template <class Op>
FP4JIT_CONSTEXPR bool lane_groups() {
  return Op::elem == Elem::e2m1 && Op::block == BlockKind::tile && Op::block_rows == 1 &&
         (Op::block_cols == 16 || Op::block_cols == 32) && Op::had <= 32;
}
// 16 x 16 tile blocks (NVFP4's weights) as lane groups, in quantize_tile's float-tile path: a lane
// holds one 1 x 16 row of a block and the block's 16 rows sit on 16 consecutive lanes of a warp
// (every lane of which calls quantize_group: the block's maximum is gathered by shuffles).
template <class Op>
FP4JIT_CONSTEXPR bool lane_groups_2d() {
  return Op::elem == Elem::e2m1 && Op::block == BlockKind::tile && Op::block_rows == 16 &&
         Op::block_cols == 16 && Op::had == 0 && !Op::occ;
}
// Whether two 16 x 16 lane-group operands give one block the same codes and scale code (NVFP4's w
// and wt: the transposed copy's blocks are the row-wise copy's): the same element and scale
// formats, scale rule and rounding, and no random bits (stochastic rounding draws by each copy's
// own element order). Their s_enc must also agree (checked at run time: it comes from each
// operand's amax).
template <class A, class B>
FP4JIT_CONSTEXPR bool same_block_codes() {
  return lane_groups_2d<A>() && lane_groups_2d<B>() && A::elem == B::elem && A::scale == B::scale &&
         A::rule == B::rule && A::round == B::round && A::round != nx::Round::stochastic &&
         A::scale_max == B::scale_max;
}
// K-elements per group: a block, or a Hadamard chunk if longer.
template <class Op>
FP4JIT_CONSTEXPR int group_size() {
  return Op::had > Op::block_cols ? Op::had : Op::block_cols;
}

// min(|x|, 6) (a NaN gives 6: such elements are never encoded by this path).
FP4JIT_DEV float abs_min6(float x) {
#if defined(__CUDA_ARCH__)
  return fminf(fabsf(x), 6.0f);
#else
  const float a = nx::abs_f(x);
  return a < 6.0f ? a : 6.0f;
#endif
}
// |x| (on the device the FMAs that read it take it as an operand modifier).
FP4JIT_DEV float abs_dev(float x) {
#if defined(__CUDA_ARCH__)
  return fabsf(x);
#else
  return nx::abs_f(x);
#endif
}
// max(|a|, |b|) of float bits, NaN-propagating: a result >= 0x7f800000 means NaN or Inf seen.
FP4JIT_DEV u32 absmax_bits(u32 m, float x) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(nx::bits_float(m)), "f"(fabsf(x)));
  return nx::float_bits(r);
#else
  return umax(m, abs_bits(x));
#endif
}
// The same per half of two packed BF16 values: each half holds max(|a|, |b|) in its low 15 bits
// (on the device its sign bit is the XOR of the inputs' signs: readers mask it off).
FP4JIT_DEV u32 absmax_bf16x2(u32 m, u32 w) {
#if defined(__CUDA_ARCH__)
  u32 r;
  asm("max.NaN.xorsign.abs.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(m), "r"(w));
  return r;
#else
  const u32 a = m & 0x7fff7fffu, b = w & 0x7fff7fffu;
  const u32 lo = umax(a & 0xffffu, b & 0xffffu), hi = umax(a >> 16, b >> 16);
  return lo | (hi << 16);
#endif
}
// absmax_bf16x2 over kN words as a tree (depth log2 kN instead of a chain of kN dependent
// maxima: the lanes have few other instructions to issue meanwhile).
template <int kN>
FP4JIT_DEV u32 absmax_bf16x2_tree(const u32* w) {
  if constexpr (kN == 1) {
    return absmax_bf16x2(0u, w[0]);
  } else if constexpr (kN == 2) {
    return absmax_bf16x2(w[0], w[1]);  // sign bits: junk, masked by every reader
  } else {
    static_assert(kN % 2 == 0, "a power of two");
    return absmax_bf16x2(absmax_bf16x2_tree<kN / 2>(w), absmax_bf16x2_tree<kN / 2>(w + kN / 2));
  }
}
// Bits of the larger |half| of an absmax_bf16x2 word, as float bits.
FP4JIT_DEV u32 bf16x2_max_bits(u32 m) {
  const u32 lo = (m & 0x7fffu) << 16, hi = m & 0x7fff0000u;
  return umax(lo, hi);
}
FP4JIT_DEV float rcp_rn(float x) {
#if defined(__CUDA_ARCH__)
  return __frcp_rn(x);
#else
  return 1.0f / x;
#endif
}
FP4JIT_DEV u32 funnel_l4(u32 lo, u32 hi) {  // (hi << 4) | (lo >> 28)
#if defined(__CUDA_ARCH__)
  return __funnelshift_l(lo, hi, 4);
#else
  return (hi << 4) | (lo >> 28);
#endif
}

// Per-kernel constants of two-level scaling: s_enc * (1 / elem_max) and 1 / s_enc; for operands
// with two-level scale codes (two_level_codes), factors is the CTA's shared-memory table of
// two_level_factor for every 8-bit code, which every quantize pass of such an operand fills first
// (rows_groups, tile_factor_tables): one load instead of a decode, a multiply and a reciprocal per
// block.
struct TwoLevel {
  float to_block;
  float global_decode;
  const float* factors = nullptr;
};
// factors[code] from shared memory.
FP4JIT_DEV float shared_factor(const float* factors, u32 code) {
#if defined(__CUDA_ARCH__)
  float f;
  asm("ld.shared.f32 %0, [%1];"
      : "=f"(f)
      : "r"(static_cast<u32>(__cvta_generic_to_shared(factors)) + 4u * code));
  return f;
#else
  return factors[code];
#endif
}
template <class Op>
FP4JIT_DEV TwoLevel two_level_consts(float s_enc) {
  return TwoLevel{nx::mul_rn(s_enc, nx::div_rn(1.0f, elem_max(Op::elem))), nx::div_rn(1.0f, s_enc)};
}
// Whether Op's block scales are two-level 8-bit codes with 3 mantissa bits (UE4M3, UE5M3), whose
// factors a 256-entry table holds.
template <class Op>
FP4JIT_CONSTEXPR bool two_level_codes() {
  return Op::rule == Rule::two_level && Op::scale != ScaleFmt::e8m0 && Op::scale != ScaleFmt::fp32;
}
// The factor that scales a block of scale code `code` (a finite code of Op's format).
template <class Op>
FP4JIT_DEV float two_level_factor(u32 code, const TwoLevel& tl) {
  const nx::MiniFloat fmt = scale_minifloat(Op::scale);
  return nx::min_f(rcp_rn(nx::mul_rn(nx::umf3_decode(fmt, code), tl.global_decode)), nx::kFloatMax);
}
// Fills `table` (a CTA's shared memory, 256 entries) with every code's factor, the CTA's kThreads
// threads sharing the work, and points tl at it; the caller syncs the CTA before any thread reads.
template <class Op, int kThreads>
FP4JIT_DEV void fill_factor_table(float* table, TwoLevel& tl) {
  for (int i = static_cast<int>(threadIdx.x); i < 256; i += kThreads)
    table[i] = two_level_factor<Op>(static_cast<u32>(i), tl);
  tl.factors = table;
}

// A two-level block's scale code of x >= 0 (not NaN): nx::umf3_encode_even_sat for Op's format.
// UE4M3 on the device by the hardware's E4M3 conversion, which rounds to nearest even and
// saturates to 448 as that encoder does (a positive value's E4M3 code is its UE4M3 code;
// segment.cuh's cvt_f8x2): one instruction instead of about fifteen on the integer pipe.
template <class Op>
FP4JIT_DEV u32 ue_scale_code(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if constexpr (Op::scale == ScaleFmt::ue4m3) return cvt_f8x2<Elem::e4m3>(x, 0.0f) & 0xffu;
#endif
  return nx::umf3_encode_even_sat(scale_minifloat(Op::scale), x);
}
// block_scale<Op> for a block's stat word, with two-level UE4M3/UE5M3 scales from the bits.
template <class Op>
FP4JIT_DEV BlockScale group_scale(u32 stat, float s_enc, const TwoLevel& tl) {
  if constexpr (two_level_codes<Op>()) {
    // UE4M3 and the UE5M3 variants: unsigned, 3 mantissa bits.
    const nx::MiniFloat fmt = scale_minifloat(Op::scale);
    BlockScale out{0u, 0.0f, 1.0f, false, false};
    if (stat == kNonFinite) {
      out.nan = true;
      out.code = nx::mf_has_nan(fmt) ? nx::mf_nan_code(fmt) : nx::mf_max_code(fmt);
      return out;
    }
    out.code = ue_scale_code<Op>(nx::mul_rn(nx::bits_float(stat), tl.to_block));
    out.factor = shared_factor(tl.factors, out.code);
    return out;
  }
  return block_scale<Op>(stat, s_enc);
}

// Where q_j's magnitude sits: (q_j - kBase) >> kShift (see nx::e2m1_fma_q).
template <class Op>
FP4JIT_CONSTEXPR int q_shift() {
  return nx::e2m1_qshift(Op::round, Op::sr_bits);
}
template <class Op>
FP4JIT_CONSTEXPR u32 q_base() {
  return nx::e2m1_qbase(Op::round, Op::sr_bits);
}
// Whether stochastic rounding's codes are floored on the FMA pipe (nx::e2m1_sr_floor) rather than
// shifted: for 8 random bits. With 16 (tetrajet's gradients) the floors made the compiler spill
// tetrajet's dY pair kernel at its 128 registers (8 bytes of stack, 9 % slower on an H200).
template <class Op>
FP4JIT_CONSTEXPR bool sr_floor() {
  return Op::round == nx::Round::stochastic && Op::sr_bits == 8;
}
// The constant part of sum_j (packed q_j), mod 2^32 (see pack_word).
template <class Op>
FP4JIT_CONSTEXPR u32 pack_const() {
  constexpr int kShift = q_shift<Op>();
  constexpr u32 kBase = q_base<Op>();
  u32 c = 0u;
  for (int j = 0; j < 8; ++j) {
    if (kShift == 0)
      c += kBase << (4 * j);
    else if (kShift == 1)
      c += j == 0 ? kBase >> 1 : kBase << (4 * j - 1);
    else
      c += (sr_floor<Op>() ? nx::e2m1_sr_floor_base(Op::sr_bits) : kBase >> kShift) << (4 * j);
  }
  return c;
}

// (a & ~m) | (b & m), one LOP3 with m in a register (from the C++ form the compiler folded the
// constant parts of m into immediates: three instructions).
FP4JIT_DEV u32 bitselect(u32 a, u32 b, u32 m) {
  return nx::lop3<0xD8u>(a, b, m);
}
// The sign bits of eight BF16 elements held as pair words raw[j] = (element 2j, element 2j + 1),
// at bit 4e + 3 for element e (other bits junk, masked by the caller): each sign byte replicated
// by PRMT, then gathered, even elements to bit 3 of byte e / 2, odd ones to bit 7.
FP4JIT_DEV u32 bf16_signs8(const u32* raw) {
  const u32 t0 = nx::prmt(raw[0], raw[1], 0xfdb9u);  // signs of elements 0, 1, 2, 3
  const u32 t1 = nx::prmt(raw[2], raw[3], 0xfdb9u);  // 4, 5, 6, 7
  return bitselect(nx::prmt(t0, t1, 0x6420u), nx::prmt(t0, t1, 0x7531u), 0x80808080u);
}

// One word of 8 codes from 8 scaled values s_j and their random bits. Shifts are written as
// multiplies (IMAD on the FMA pipe, beside the integer pipe's minima and logic). kRawSigns: the
// signs come from the elements' BF16 inputs raw (bf16_signs8), whose signs the scaled values keep
// (a positive factor, nothing applied before), instead of one funnel shift each. kClamp = false
// (unclamped_ok: every |s_j| below 7, rounding without random bits): the clamp to 6 is left out,
// since the minimum of the pieces (fast_encode.cuh) then gives code 7 for [6, 7) as it does for 6.
template <class Op, bool kRawSigns = false, bool kClamp = true>
FP4JIT_DEV u32 pack_word(const float (&s)[8], const u32 (&r)[8], const u32* raw = nullptr) {
  constexpr int kShift = q_shift<Op>();
  u32 qsum = 0u, signs = 0u;
#pragma unroll
  for (int j = 7; j >= 0; --j) {
    const float a = kClamp ? abs_min6(s[j]) : abs_dev(s[j]);
    // r[j] below 2^R (group_rbits, sr_bits_vec).
    const u32 q = nx::e2m1_fma_q(a, Op::round, nx::sign_bit(s[j]), r[j], Op::sr_bits);
    if constexpr (kShift == 0)
      qsum += q * (1u << (4 * j));
    else if constexpr (kShift == 1)
      qsum += j == 0 ? q >> 1 : q * (1u << (4 * j - 1));  // q's bit 0 lands on a sign bit
    else if constexpr (sr_floor<Op>())                    // the FMA pipe drops q's fraction bits
      qsum += nx::e2m1_sr_floor(q) * (1u << (4 * j));
    else
      qsum += (q >> kShift) * (1u << (4 * j));
    if constexpr (!kRawSigns) signs = funnel_l4(nx::float_bits(s[j]), signs);  // bit 4j + 3
  }
  if constexpr (kRawSigns) signs = bf16_signs8(raw);
  return ((qsum - pack_const<Op>()) & 0x77777777u) | (signs & 0x88888888u);
}

// x rotated right by k bits, 0 < k < 32.
FP4JIT_DEV u32 rotr(u32 x, u32 k) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_r(x, x, k);
#else
  return (x >> k) | (x << (32u - k));
#endif
}
// A 16 x 16 matrix of 4-bit codes held a row per lane by 16 consecutive lanes (lane16 = i: row i,
// column e at nibble e of the 64 bits w1:w0) transposed in place: lane j then holds column j (row i
// at nibble i). Element (i, e) moves to (e, i), i.e. bit b of the row index trades places with bit
// b of the column index, one exchange with lane i ^ b per bit: for b = 8 whole words; for b = 4, 2,
// 1 each word is rotated by 4b bits toward the place it goes, shuffled, and the partner's bits
// taken where the column bit differs from the lane's own.
FP4JIT_DEV void transpose_nibbles16(u32& w0, u32& w1, int lane16) {
  {
    const bool hi = (lane16 & 8) != 0;
    const u32 got = shfl_xor(hi ? w0 : w1, 8);
    if (hi)
      w0 = got;
    else
      w1 = got;
  }
#pragma unroll
  for (int step = 0; step < 3; ++step) {
    const int b = 4 >> step;  // nibbles
    const u32 bits = 4u * static_cast<u32>(b);
    // Nibbles whose column has bit b set.
    const u32 m = step == 0 ? 0xffff0000u : (step == 1 ? 0xff00ff00u : 0xf0f0f0f0u);
    const bool hi = (lane16 & b) != 0;
    // A lane without bit b sends its m part down and takes the partner's (sent up) into m.
    const u32 rot = hi ? 32u - bits : bits;
    const u32 take = hi ? ~m : m;
    const u32 g0 = shfl_xor(rotr(w0, rot), b);
    const u32 g1 = shfl_xor(rotr(w1, rot), b);
    w0 = bitselect(w0, g0, take);
    w1 = bitselect(w1, g1, take);
  }
}

// Bits [bit, bit + kBits) of w, zero-extended, for kBits 8 or 16 and bit a multiple of it: one
// PRMT on the device (a shift and a mask otherwise).
template <int kBits>
FP4JIT_DEV u32 bit_field(u32 w, int bit) {
  static_assert(kBits == 8 || kBits == 16, "whole bytes or halves");
  const u32 b = static_cast<u32>(bit) / 8u;  // first byte
  return nx::prmt(w, 0u, kBits == 8 ? 0x4440u | b : 0x4400u | ((b + 1u) << 4) | b);
}
// Philox outputs of a group drawn ahead of it (stochastic rounding): call c of the group (block
// i0 / (128 / R) + c) at words[c * stride], or none (words null: the group draws its own).
struct PreRand {
  const uint4* words = nullptr;
  int stride = 0;
};
// Random bits of kN consecutive elements from index i0 (stochastic rounding), each below 2^R: one
// Philox call per 128 / R elements when i0 is a multiple of that (or those calls' outputs from
// `pre`, drawn for such an i0), else per element's call as sr_bits_vec.
template <class Op, int kN>
FP4JIT_DEV void group_rbits(u64 seed, u64 i0, u32 (&r)[kN], PreRand pre = {}) {
  if constexpr (Op::round == nx::Round::stochastic) {
    constexpr int kPer = 128 / Op::sr_bits;
    static_assert(kN % kPer == 0 && kN % kVec == 0, "groups hold whole Philox outputs");
    if (pre.words != nullptr || i0 % kPer == 0) {
#pragma unroll
      for (int c = 0; c < kN / kPer; ++c) {
        nx::U32x4 w;
        if (pre.words != nullptr) {
          const uint4 q = pre.words[c * pre.stride];
          w = nx::U32x4{{q.x, q.y, q.z, q.w}};
        } else {
          w = nx::sr_block(seed, i0 / kPer + c);
        }
#pragma unroll
        for (int e = 0; e < kPer; ++e) {
          const int bit = e * Op::sr_bits;
          r[c * kPer + e] = bit_field<Op::sr_bits>(w.v[bit / 32], bit % 32);
        }
      }
    } else {
#pragma unroll
      for (int s = 0; s < kN / kVec; ++s) {
        u32 seg[kVec];
        sr_bits_vec<Op>(seed, i0 + s * kVec, seg);
#pragma unroll
        for (int e = 0; e < kVec; ++e) r[s * kVec + e] = seg[e];
      }
    }
  } else {
#pragma unroll
    for (int e = 0; e < kN; ++e) r[e] = 0u;
  }
}

// Whether a block may be encoded without the clamp to 6 (pack_word's kClamp = false): a rounding
// without random bits (stochastic rounding could take a value in (6, 7) up to 8) and the block's
// largest scaled magnitude, apply_scale of its stat word (a finite max |x|; scaling is monotone,
// so no element's |s| exceeds it), below 7. Under two-level scales that holds for every block
// whose scale code is a normal, unsaturated one (|s| <= 6 (1 + 2^-4) there); a subnormal or
// saturated code, or an E8M0 scale, may fail it, and the block then takes the clamped encoder.
template <class Op>
FP4JIT_DEV bool unclamped_ok(u32 stat, const BlockScale& b) {
  if constexpr (Op::round == nx::Round::stochastic) {
    return false;
  } else {
    return !b.nan && stat < 0x7f800000u && apply_scale<Op>(nx::bits_float(stat), b) < 7.0f;
  }
}
// Codes of one block of kB elements (kB / 8 words) with its scale; NaN blocks give zeros;
// ms_pow2 blocks holding NaN or Inf (scaled by 1, where NaN must give 0 and Inf saturate) take
// the per-element encoder.
// kRawSigns: raw holds the block's BF16 input as kB / 2 pair words (pack_word). kClamp: as
// pack_word's (false only where unclamped_ok holds).
template <class Op, int kB, bool kRawSigns = false, bool kClamp = true>
FP4JIT_DEV void encode_block(const float* v, const BlockScale& b, bool nonfinite, const u32* r,
                             u32* words, const u32* raw = nullptr) {
  if (b.nan) {
#pragma unroll
    for (int w = 0; w < kB / 8; ++w) words[w] = 0u;
    return;
  }
  if (Op::rule == Rule::ms_pow2 && nonfinite) {
    for (int w = 0; w < kB / 8; ++w) {
      u32 word = 0u;
      for (int j = 0; j < 8; ++j)
        word |= (encode_element<Op>(apply_scale<Op>(v[8 * w + j], b), r[8 * w + j]) & 15u)
                << (4 * j);
      words[w] = word;
    }
    return;
  }
#pragma unroll
  for (int w = 0; w < kB / 8; ++w) {
    float s[8];
    u32 rr[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      s[j] = apply_scale<Op>(v[8 * w + j], b);
      rr[j] = r[8 * w + j];
    }
    words[w] = pack_word<Op, kRawSigns, kClamp>(s, rr, kRawSigns ? raw + 4 * w : nullptr);
  }
}

// In-place Hadamard transform of each chunk of a group (nx::hadamard_transform's order).
template <class Op, int kG>
FP4JIT_DEV void group_hadamard(float (&v)[kG]) {
  if constexpr (Op::had != 0) {
    constexpr int kN = Op::had;
#pragma unroll
    for (int c = 0; c < kG; c += kN) {
#pragma unroll
      for (int i = 0; i < kN; ++i)
        if (sign_negative<Op>(i)) v[c + i] = -v[c + i];
      butterflies<kN>(v, c);
      const float norm = nx::hadamard_norm(kN);
#pragma unroll
      for (int i = 0; i < kN; ++i) v[c + i] = nx::mul_rn(v[c + i], norm);
    }
  }
}

// Stat words (max |x| bits, NaN/Inf >= 0x7f800000) of the group's blocks from float values.
template <class Op, int kG>
FP4JIT_DEV void group_stats(const float (&v)[kG], u32 (&m)[kG / Op::block_cols]) {
#pragma unroll
  for (int b = 0; b < kG / Op::block_cols; ++b) {
    u32 x = 0u;
#pragma unroll
    for (int e = 0; e < Op::block_cols; ++e) x = absmax_bits(x, v[b * Op::block_cols + e]);
    m[b] = x;
  }
}

// Group g of a lane's kPerLane consecutive input elements held as 16-byte chunks `cur`: its values
// as float, and, for BF16 without a transform, its blocks' stats from the packed input (max |x| of
// two BF16 values per instruction); returns whether `m` holds them.
template <class Op, InType kIn, int kChunks>
FP4JIT_DEV bool group_from_chunks(const uint4 (&cur)[kChunks], int g, float (&v)[group_size<Op>()],
                                  u32 (&m)[group_size<Op>() / Op::block_cols]) {
  constexpr int kG = group_size<Op>();
  constexpr int kPerLoad = 16 / in_size(kIn);
#pragma unroll
  for (int l = 0; l < kG / kPerLoad; ++l)
    widen<kIn>(cur[g * (kG / kPerLoad) + l], v + l * kPerLoad);
  if constexpr (kIn == InType::bf16 && Op::had == 0 && !Op::occ) {
    constexpr int kWords = Op::block_cols / 2;
#pragma unroll
    for (int b = 0; b < kG / Op::block_cols; ++b) {
      u32 x[kWords];
#pragma unroll
      for (int w = 0; w < kWords; ++w) {
        const int word = g * (kG / 2) + b * kWords + w;  // packed pair index in cur
        const uint4& u = cur[word / 4];
        const int k = word % 4;
        x[w] = k == 0 ? u.x : (k == 1 ? u.y : (k == 2 ? u.z : u.w));
      }
      m[b] = bf16x2_max_bits(absmax_bf16x2_tree<kWords>(x));
    }
    return true;
  }
  return false;
}

// Whether a group's codes come from the packed BF16 encoder (nx::e2m1_pack8_pow2): raw BF16
// input that nothing transforms first, power-of-two block scales, ties away or to even.
template <class Op, InType kIn>
FP4JIT_CONSTEXPR bool packed_pow2() {
  return kIn == InType::bf16 && lane_groups<Op>() && Op::had == 0 && !Op::occ &&
         (Op::rule == Rule::ocp_floor || Op::rule == Rule::ceil_pow2) &&
         (Op::round == nx::Round::away || Op::round == nx::Round::even);
}
// The encoder's pair words of group g of a lane's 16-byte chunks of consecutive BF16 elements:
// p[4w + j] = (element 8w + j, element 8w + j + 4).
template <class Op, int kChunks>
FP4JIT_DEV void pairs_from_chunks(const uint4 (&cur)[kChunks], int g,
                                  u32 (&p)[group_size<Op>() / 2]) {
  constexpr int kWords = group_size<Op>() / 8;
#pragma unroll
  for (int w = 0; w < kWords; ++w) {
    const uint4& u = cur[g * kWords + w];
    p[4 * w + 0] = nx::prmt(u.x, u.z, 0x5410u);
    p[4 * w + 1] = nx::prmt(u.x, u.z, 0x7632u);
    p[4 * w + 2] = nx::prmt(u.y, u.w, 0x5410u);
    p[4 * w + 3] = nx::prmt(u.y, u.w, 0x7632u);
  }
}
// The same from words x[e] holding element e of two operand rows (half h: this row).
template <int kG>
FP4JIT_DEV void pairs_from_column_words(const u32 (&x)[kG], int h, u32 (&p)[kG / 2]) {
  const u32 sel = h == 0 ? 0x5410u : 0x7632u;
#pragma unroll
  for (int w = 0; w < kG / 8; ++w)
#pragma unroll
    for (int j = 0; j < 4; ++j) p[4 * w + j] = nx::prmt(x[8 * w + j], x[8 * w + j + 4], sel);
}
// Group g of a lane's 16-byte chunks of consecutive BF16 elements as kG / 2 words in element
// order (quantize_group's kRawSigns input).
template <int kG, int kChunks>
FP4JIT_DEV void words_from_chunks(const uint4 (&cur)[kChunks], int g, u32 (&raw)[kG / 2]) {
#pragma unroll
  for (int w = 0; w < kG / 2; ++w) {
    const uint4& u = cur[(g * (kG / 2) + w) / 4];
    const int k = (g * (kG / 2) + w) % 4;
    raw[w] = k == 0 ? u.x : (k == 1 ? u.y : (k == 2 ? u.z : u.w));
  }
}
// Element i of a group held as pair words.
FP4JIT_DEV float pair_value(const u32* p, int i) {
  const u32 word = p[4 * (i / 8) + i % 4];
  return nx::bf16_to_float(static_cast<u16>(i % 8 < 4 ? word & 0xffffu : word >> 16));
}
// Codes of one block from pair words (kB / 8 words): the packed encoder where the block's scale
// exponent allows it, else the FP32 path on the widened values.
template <class Op, int kB>
FP4JIT_DEV void encode_block_pairs(const u32* p, const BlockScale& b, const u32* r, u32* words) {
  static_assert(Op::rule == Rule::ocp_floor || Op::rule == Rule::ceil_pow2, "E8M0 block scales");
  const int s = 127 - static_cast<int>(b.code);
  if (!b.nan && s <= 112) {
    const nx::E2m1Pow2Pack k = nx::e2m1_pow2_pack_consts(s, Op::round == nx::Round::away);
#pragma unroll
    for (int w = 0; w < kB / 8; ++w)
      words[w] = nx::e2m1_pack8_pow2<Op::rule == Rule::ocp_floor>(
          *reinterpret_cast<const u32(*)[4]>(p + 4 * w), k);
    return;
  }
  float v[kB];
#pragma unroll
  for (int i = 0; i < kB; ++i) v[i] = pair_value(p, i);
  encode_block<Op, kB>(v, b, false, r, words);
}

// Everything after the values: stats (unless given), global amax, scales, codes and stores of one
// group at operand (r, c0) whose first n elements are in range. stats_given: m holds the blocks'
// max |x| bits already (from the packed BF16 input, no transform); else they are computed here.
// whole: n == kG and o.row_bytes % 16 == 0 are known. kRequant (double quantization, quantize
// pass): v becomes the values the codes stand for (segment.cuh requant_value), 0 past the n in
// range. kPairs (packed_pow2 operands): the codes come from `pairs` (pairs_from_chunks' layout) by
// the packed encoder, and v is not read. kDefer: the codes and scale codes go to *deferred, not
// to memory (the caller stores them). kRawSigns (not with kPairs): `pairs` holds the group's BF16
// input as kG / 2 words in element order, v its widened values (nothing applied), and the codes'
// signs come from it (pack_word). pre: the group's Philox outputs drawn ahead (group_rbits).
template <class Op>
struct GroupCodes {
  u32 words[group_size<Op>() / 8];                // codes, element e at nibble e % 8 of word e / 8
  u32 scales[group_size<Op>() / Op::block_cols];  // scale codes (code-format scales)
};
template <class Op, bool kStats, bool kRequant = false, bool kPairs = false, bool kDefer = false,
          bool kRawSigns = false>
FP4JIT_DEV void quantize_group(float (&v)[group_size<Op>()], bool stats_given,
                               u32 (&m)[group_size<Op>() / Op::block_cols], i64 r, i64 c0, int n,
                               const OperandOut& o, float s_enc, const TwoLevel& tl, u64 seed,
                               u64 offset, bool want_max, u32& global_max,
                               const u32* pairs = nullptr, bool whole = false,
                               GroupCodes<Op>* deferred = nullptr, PreRand pre = {}) {
  constexpr int kG = group_size<Op>();
  constexpr int kB = Op::block_cols;
  constexpr int kBlocks = kG / kB;
  group_hadamard<Op, kG>(v);
  if (!stats_given) group_stats<Op, kG>(v, m);
  if (want_max) {
#pragma unroll
    for (int b = 0; b < kBlocks; ++b) {
      u32 fm = m[b];
      if (fm >= 0x7f800000u) {  // rare: NaN or Inf in the block
        fm = 0u;
        for (int e = 0; e < kB; ++e)
          fm = umax(fm, finite_key(kPairs ? pair_value(pairs, b * kB + e) : v[b * kB + e]));
      }
      global_max = umax(global_max, fm);
    }
  }
  if constexpr (!kStats && Op::block_rows > 1) {
    // The block's other rows are on the lanes whose index differs in its low bits (lanes past
    // the operand's edge hold zeros, which change no maximum; NaN and Inf bits stay on top).
    static_assert(lane_groups_2d<Op>(), "row blocks: 16 x 16 lane groups only");
#pragma unroll
    for (int b = 0; b < kBlocks; ++b)
#pragma unroll
      for (int d = 1; d < Op::block_rows; d <<= 1) m[b] = umax(m[b], shfl_xor(m[b], d));
  }
  if constexpr (!kStats) {
    u32 rb[kG];
    group_rbits<Op, kG>(seed, sr_index(o, offset, r, c0), rb, pre);
    u32 words[kG / 8];
#pragma unroll
    for (int b = 0; b < kBlocks; ++b) {
      const u32 stat = stat_of(m[b]);
      const BlockScale sc = group_scale<Op>(stat, s_enc, tl);
      if constexpr (kPairs)
        encode_block_pairs<Op, kB>(pairs + b * (kB / 2), sc, rb + b * kB, words + b * (kB / 8));
      else if (unclamped_ok<Op>(stat, sc))  // nearly every block (a branch, not a select)
        encode_block<Op, kB, kRawSigns, false>(v + b * kB, sc, false, rb + b * kB,
                                               words + b * (kB / 8),
                                               kRawSigns ? pairs + b * (kB / 2) : nullptr);
      else
        encode_block<Op, kB, kRawSigns>(v + b * kB, sc, stat == kNonFinite, rb + b * kB,
                                        words + b * (kB / 8),
                                        kRawSigns ? pairs + b * (kB / 2) : nullptr);
      if constexpr (kDefer)
        deferred->scales[b] = sc.code;
      else if (c0 + b * kB < c0 + n && r % Op::block_rows == 0)  // a block's first row stores it
        store_scale<Op>(o.scales, block_index<Op>(r, c0 + b * kB, o.scale_cols), sc);
      if constexpr (kRequant) {
#pragma unroll
        for (int e = 0; e < kB; ++e) {
          const int i = b * kB + e;
          const u32 code = (words[i / 8] >> (4 * (i % 8))) & 15u;
          v[i] = i < n ? requant_value<Op>(code, sc, s_enc) : 0.0f;
        }
      }
    }
    if constexpr (kDefer) {
      static_assert(scale_is_code(Op::scale) && !kRequant, "deferred stores: code scales");
#pragma unroll
      for (int w = 0; w < kG / 8; ++w) deferred->words[w] = words[w];
      return;
    }
    u8* dst = o.codes + r * o.row_bytes + static_cast<i64>(static_cast<u64>(c0) >> 1);
    if (whole || (n == kG && o.row_bytes % 16 == 0)) {
      if constexpr (kG == 32) {
        *reinterpret_cast<uint4*>(dst) = uint4{words[0], words[1], words[2], words[3]};
      } else {
        *reinterpret_cast<uint2*>(dst) = uint2{words[0], words[1]};
      }
    } else if (n == kG && o.row_bytes % 4 == 0) {
#pragma unroll
      for (int w = 0; w < kG / 8; ++w) reinterpret_cast<u32*>(dst)[w] = words[w];
    } else {
#pragma unroll
      for (int e = 0; e < kG / 2; ++e)
        if (e < n / 2) dst[e] = static_cast<u8>(words[e / 4] >> (8 * (e % 4)));
    }
  }
}

}  // namespace fp4jit::kern
