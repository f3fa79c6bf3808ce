// What one thread does with its segment: kVec consecutive elements of one operand row (K-major),
// whatever kernel brought them into registers.
//
// Lanes cooperate in groups: the lanes holding one block (block_cols elements along K, and
// block_rows operand rows) or one Hadamard chunk. Two strides describe where a thread's
// neighbours sit in its warp:
//   kKStride     lane distance to the segment kVec elements further along K
//   kLineStride  lane distance to the next operand row (0: rows are in different warps; then
//                only blocks one row high are reduced locally)
// quantize_rows uses (1, 0): a warp walks along one row. quantize_tile uses (L, 1): a warp holds
// L rows x (32 / L) segments of a shared-memory tile.
//
// Order of operations per element, as in reference/quantize.cpp: (OCC clamp, by the caller)
// -> Hadamard butterfly -> block stat -> block scale -> scale -> round (with its SR bits) -> code.
#pragma once
#include "numerics/hadamard.cuh"
#include "quantize/encode.cuh"

namespace fp4jit::kern {

template <class Op>
FP4JIT_DEV bool sign_negative(int p) {
  const u32 w = p < 32 ? Op::sign0 : (p < 64 ? Op::sign1 : (p < 96 ? Op::sign2 : Op::sign3));
  return ((w >> (p & 31)) & 1u) != 0u;
}

// The butterflies of a Hadamard transform of kN values v[c, c + kN) in place, stage by stage
// (h = 1, 2, 4, ...: (v[j], v[j + h]) <- (v[j] + v[j + h], v[j] - v[j + h])), the order of
// nx::hadamard_transform. Indices are flat functions of constants, so every loop unrolls and v
// stays in registers (nested loops bounded by h left the array in local memory).
template <int kN>
FP4JIT_CONSTEXPR int log2_of() {
  int s = 0;
  while ((1 << s) < kN) ++s;
  return s;
}
template <int kN, int kLen>
FP4JIT_DEV void butterflies(float (&v)[kLen], int c) {
  constexpr int kStages = log2_of<kN>();
#pragma unroll
  for (int s = 0; s < kStages; ++s) {
#pragma unroll
    for (int p = 0; p < kN / 2; ++p) {
      const int h = 1 << s;
      const int j = c + (((p >> s) << (s + 1)) | (p & (h - 1)));
      const float x = v[j], y = v[j + h];
      v[j] = nx::add_rn(x, y);
      v[j + h] = nx::add_rn(x, -y);
    }
  }
}

// In-place Hadamard transform of the chunk this thread's segment belongs to; `kpos` is the
// segment's index along K within its group (its chunk position is kpos % (had / kVec)). The
// butterfly runs stage by stage exactly as nx::hadamard_transform; stages longer than kVec pair
// lanes through shuffles (the lower lane keeps a + b, the upper a - b).
template <class Op, int kKStride>
FP4JIT_DEV void hadamard(float (&v)[kVec], int kpos) {
  if constexpr (Op::had != 0) {
    constexpr int kChunkSegs = Op::had / kVec;
    const int seg = kpos % kChunkSegs;
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      if (sign_negative<Op>(seg * kVec + e)) v[e] = -v[e];
    butterflies<kVec>(v, 0);
#pragma unroll
    for (int d = 1; d < kChunkSegs; d <<= 1) {
      const bool upper = (seg & d) != 0;
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const float other = shfl_xor(v[e], d * kKStride);
        v[e] = upper ? nx::add_rn(other, -v[e]) : nx::add_rn(v[e], other);
      }
    }
    const float norm = nx::hadamard_norm(Op::had);
#pragma unroll
    for (int e = 0; e < kVec; ++e) v[e] = nx::mul_rn(v[e], norm);
  }
}

// Stat words of the tile blocks this thread's elements belong to (sub_blocks of them), reduced
// over the lanes of the block: along K, and over its rows when they share the warp.
template <class Op, int kKStride, int kLineStride>
FP4JIT_DEV void tile_stats(const float (&v)[kVec], u32 (&stat)[sub_blocks<Op>()]) {
  constexpr int kSub = sub_blocks<Op>();
  constexpr int kPer = kVec / kSub;
#pragma unroll
  for (int s = 0; s < kSub; ++s) {
    stat[s] = 0u;
#pragma unroll
    for (int e = s * kPer; e < (s + 1) * kPer; ++e) stat[s] = umax(stat[s], abs_bits(v[e]));
  }
  constexpr int kKLanes = Op::block_cols > kVec ? Op::block_cols / kVec : 1;
#pragma unroll
  for (int d = 1; d < kKLanes; d <<= 1)
#pragma unroll
    for (int s = 0; s < kSub; ++s) stat[s] = umax(stat[s], shfl_xor(stat[s], d * kKStride));
  if constexpr (kLineStride != 0) {
#pragma unroll
    for (int d = 1; d < Op::block_rows; d <<= 1)
#pragma unroll
      for (int s = 0; s < kSub; ++s) stat[s] = umax(stat[s], shfl_xor(stat[s], d * kLineStride));
  }
#pragma unroll
  for (int s = 0; s < kSub; ++s) stat[s] = stat_of(stat[s]);
}

// The largest finite |v| of the segment's elements as bits (0 if none); elements past the end
// of a row hold 0 and do not change it.
FP4JIT_DEV u32 finite_max(const float (&v)[kVec]) {
  u32 m = 0u;
#pragma unroll
  for (int e = 0; e < kVec; ++e) m = umax(m, abs_bits(v[e]));
  if (m < 0x7f800000u) return m;
  m = 0u;  // rare: a NaN or an Inf among them
#pragma unroll
  for (int e = 0; e < kVec; ++e) m = umax(m, finite_key(v[e]));
  return m;
}

// Index of operand element (r, c)'s block in the scale array (core/quantized.cpp block_of).
template <class Op>
FP4JIT_DEV i64 block_index(i64 r, i64 c, i64 scale_cols) {
  if constexpr (Op::block == BlockKind::tile)  // r, c >= 0: unsigned division (shifts)
    return static_cast<i64>(static_cast<u64>(r) / Op::block_rows) * scale_cols +
           static_cast<i64>(static_cast<u64>(c) / Op::block_cols);
  if constexpr (Op::block == BlockKind::row) return r;
  if constexpr (Op::block == BlockKind::col) return c;
  return 0;
}

// Scales come from this thread's group (tile blocks whose rows the group holds) rather than from
// the stats pass.
template <class Op, int kLineStride>
FP4JIT_CONSTEXPR bool local_blocks() {
  return Op::block == BlockKind::tile && (Op::block_rows == 1 || kLineStride != 0);
}

// The scales of a segment's elements: one per sub-block, or one per element (column blocks).
template <class Op>
struct SegmentScales {
  static constexpr int kSub = sub_blocks<Op>();
  static constexpr int kPer = kVec / kSub;
  static constexpr bool kPerColumn = Op::block == BlockKind::col;
  BlockScale local[kSub];
  BlockScale per_col[kPerColumn ? kVec : 1];
  FP4JIT_DEV const BlockScale& at(int e) const {
    if constexpr (kPerColumn)
      return per_col[e];
    else
      return local[e / kPer];
  }
};

// E4M3 / E5M2 elements rounded to nearest even go through the hardware conversion of two floats
// (cvt.rn.satfinite, sm_89 and later): IEEE rounding of normals and subnormals, finite values
// past the largest saturating to it, as the reference's encode does. NaN and Inf, which it turns
// into the format's NaN or largest value, take encode_element (the reference's codes: E5M2 keeps
// Inf). The host build (emulator) takes encode_element throughout.
template <class Op>
FP4JIT_CONSTEXPR bool hardware_f8() {
  return Op::elem != Elem::e2m1 && Op::round == nx::Round::even;
}
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
// The codes of lo (bits 0-7) and hi (bits 8-15).
template <Elem kElem>
FP4JIT_DEV u32 cvt_f8x2(float lo, float hi) {
  unsigned short h;
  if constexpr (kElem == Elem::e5m2)
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(h) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(h) : "f"(hi), "f"(lo));
  return h;
}
#endif

// Codes of the segment: element e is scaled by its block's scale and rounded with the random
// bits of index i0 + e. NaN blocks give code 0.
template <class Op>
FP4JIT_DEV void encode_vec(const float (&v)[kVec], const SegmentScales<Op>& sc, u64 seed, u64 i0,
                           u32 (&code)[kVec]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if constexpr (hardware_f8<Op>()) {
#pragma unroll
    for (int e = 0; e < kVec; e += 2) {
      const float x0 = apply_scale<Op>(v[e], sc.at(e)),
                  x1 = apply_scale<Op>(v[e + 1], sc.at(e + 1));
      const u32 pair = cvt_f8x2<Op::elem>(x0, x1);
      u32 c0 = pair & 0xffu, c1 = pair >> 8;
      if (!nx::is_finite(x0)) c0 = encode_element<Op>(x0, 0u);
      if (!nx::is_finite(x1)) c1 = encode_element<Op>(x1, 0u);
      code[e] = scale_nan<Op>(sc.at(e)) ? 0u : c0;
      code[e + 1] = scale_nan<Op>(sc.at(e + 1)) ? 0u : c1;
    }
    return;
  }
#endif
  u32 rbits[kVec];
#pragma unroll
  for (int e = 0; e < kVec; ++e) rbits[e] = 0u;
  if constexpr (Op::round == nx::Round::stochastic) sr_bits_vec<Op>(seed, i0, rbits);
#pragma unroll
  for (int e = 0; e < kVec; ++e) {
    const BlockScale& b = sc.at(e);
    const u32 c = encode_element<Op>(apply_scale<Op>(v[e], b), rbits[e]);  // no branch per element
    code[e] = scale_nan<Op>(b) ? 0u : c;
  }
}

// The value a code stands for, in float, as double quantization re-reads it
// (reference dequantize_source: decode(code) * decode(scale) [/ s_enc] in double, then float).
template <class Op>
FP4JIT_DEV float requant_value(u32 code, const BlockScale& b, float s_enc) {
  double scale;
  if constexpr (scale_is_code(Op::scale)) {
    const u8 stored = static_cast<u8>(b.code);
    scale = decode_scale<Op>(&stored, 0);
  } else {
    scale = b.value;
  }
  double v = dmul_rn(static_cast<double>(decode_element<Op>(code)), scale);
  if constexpr (Op::rule == Rule::two_level) v = ddiv_rn(v, static_cast<double>(s_enc));
  return double_to_float(v);
}

// Everything after the stats, for one segment: the scales, the codes, the stores. `stat` holds
// the segment's local tile-block stats (local_blocks) and is ignored otherwise; other scales
// come from o.stats. n: elements in range (0: nothing is stored). requant_to (double
// quantization): where the dequantized values of the n elements go, or null.
// col_scales (block=col operands, or null): the block scales of operand columns col_base on,
// computed once for the caller's tile instead of once per element here. given (operands with
// one scale per segment, not block=col): that scale, computed by the caller (occ_rows), instead
// of from o.stats. codes_to (or null): where the n codes also go, one word each (a pair whose
// transposed copy has the same codes: tile_codes_transposed).
template <class Op, int kLineStride>
FP4JIT_DEV void quantize_segment(const float (&v)[kVec], const u32 (&stat)[sub_blocks<Op>()], i64 r,
                                 i64 c0, int n, const OperandOut& o, float s_enc, u64 seed,
                                 u64 offset, float* requant_to,
                                 const BlockScale* col_scales = nullptr, i64 col_base = 0,
                                 const BlockScale* given = nullptr, u32* codes_to = nullptr) {
  using Scales = SegmentScales<Op>;
  constexpr int kSub = Scales::kSub;
  constexpr int kPer = Scales::kPer;
  const bool valid = n > 0;
  constexpr BlockScale kUnit{0u, 0.0f, 1.0f, false, false};
  Scales sc;
#pragma unroll
  for (int s = 0; s < kSub; ++s) sc.local[s] = kUnit;
  if (given != nullptr) {
#pragma unroll
    for (int s = 0; s < kSub; ++s) sc.local[s] = *given;
  } else if constexpr (local_blocks<Op, kLineStride>()) {
#pragma unroll
    for (int s = 0; s < kSub; ++s) sc.local[s] = block_scale<Op>(stat[s], s_enc);
  } else if constexpr (Scales::kPerColumn) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) {  // if/else: a select of two structs goes through memory
      if (e >= n)
        sc.per_col[e] = kUnit;
      else if (col_scales != nullptr)
        sc.per_col[e] = col_scales[c0 + e - col_base];
      else
        sc.per_col[e] = block_scale<Op>(o.stats[c0 + e], s_enc);
    }
  } else {
#pragma unroll
    for (int s = 0; s < kSub; ++s)
      if (valid)
        sc.local[s] =
            block_scale<Op>(o.stats[block_index<Op>(r, c0 + s * kPer, o.scale_cols)], s_enc);
  }
  u32 code[kVec];
  const u64 i0 = sr_index(o, offset, r, c0);
  encode_vec<Op>(v, sc, seed, i0, code);
  if (!valid) return;
  if (codes_to != nullptr) {
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      if (e < n) codes_to[e] = code[e];
  }
  constexpr int kBytesPer = elem_packed(Op::elem) ? 1 : 2;  // bytes per two elements
  const i64 byte0 = r * o.row_bytes + (c0 / 2) * kBytesPer;
  const bool aligned = elem_packed(Op::elem) ? (o.row_bytes % 4 == 0) : (o.row_bytes % 8 == 0);
  store_codes(o.codes + byte0, code, elem_packed(Op::elem), n, aligned);
  // Scales: the thread at a block's first element stores it (of the n in range: a segment past
  // K's end holds no block, and its index would be another row's block or past the scales).
  if constexpr (Op::block == BlockKind::tile) {
    if (r % Op::block_rows == 0) {
#pragma unroll
      for (int s = 0; s < kSub; ++s) {
        const i64 c = c0 + s * kPer;
        if (c % Op::block_cols == 0 && s * kPer < n)
          store_scale<Op>(o.scales, block_index<Op>(r, c, o.scale_cols), sc.local[s]);
      }
    }
  } else if constexpr (Op::block == BlockKind::row) {
    if (c0 == 0) store_scale<Op>(o.scales, r, sc.local[0]);
  } else if constexpr (Op::block == BlockKind::col) {
    if (r == 0) {
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        if (e < n) store_scale<Op>(o.scales, c0 + e, sc.per_col[e]);
    }
  } else {
    if (r == 0 && c0 == 0) store_scale<Op>(o.scales, 0, sc.local[0]);
  }
  if (requant_to != nullptr) {
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      if (e < n) requant_to[e] = requant_value<Op>(code[e], sc.at(e), s_enc);
  }
}

}  // namespace fp4jit::kern
