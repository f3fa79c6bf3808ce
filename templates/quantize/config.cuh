// Compile-time description of one quantized operand, as the generated stubs spell it, and the
// constants derived from it. Shared by NVRTC, nvcc (the offline check) and the host (codegen and
// the launch code include it to agree on enum values).
//
// A stub describes an operand with a struct of static constexpr members (codegen/operand.cpp
// writes it from the recipe's OperandSpec):
//   struct RowOp {
//     static constexpr fp4jit::kern::Elem elem = ...;         // element format
//     static constexpr fp4jit::kern::ScaleFmt scale = ...;    // block-scale format
//     static constexpr fp4jit::kern::Rule rule = ...;         // scale rule
//     static constexpr fp4jit::kern::BlockKind block = ...;   // tile, row, col, tensor
//     static constexpr int block_rows = 1, block_cols = 16;   // tile blocks (operand layout)
//     static constexpr fp4jit::nx::Round round = ...;
//     static constexpr int sr_bits = 8;                       // stochastic rounding bits
//     static constexpr int had = 16;                          // Hadamard size along K, 0: none
//     static constexpr fp4jit::nx::u32 sign0 = ..., sign1, sign2, sign3;  // bit i set: s_i = -1
//     static constexpr bool occ = false;                      // clamp rows to lo/hi first
//     static constexpr float scale_max = 448.0f;              // two-level: block-scale format max
//   };
#pragma once
#include "numerics/common.cuh"
#include "numerics/minifloat.cuh"
#include "numerics/rounding.cuh"

// constexpr helpers usable from host and device code.
#if defined(__CUDACC__)
#define FP4JIT_CONSTEXPR __host__ __device__ constexpr
#else
#define FP4JIT_CONSTEXPR constexpr
#endif

namespace fp4jit::kern {

using nx::i64;
using nx::u16;
using nx::u32;
using nx::u64;
using nx::u8;

enum class InType : u8 { f32 = 0, f16 = 1, bf16 = 2 };
enum class Elem : u8 { e2m1 = 0, e4m3 = 1, e5m2 = 2 };
enum class ScaleFmt : u8 {
  e8m0 = 0,
  ue4m3 = 1,
  ue5m3_nan = 2,
  ue5m3_finite = 3,
  ue5m3_ieee = 4,
  fp32 = 5
};
enum class Rule : u8 { ocp_floor = 0, ceil_pow2 = 1, ms_pow2 = 2, two_level = 3, absmax = 4 };
enum class BlockKind : u8 { tile = 0, row = 1, col = 2, tensor = 3 };
// stats: the pre-pass that accumulates amaxes; quantize: the pass that writes codes and scales.
enum class Phase : u8 { stats = 0, quantize = 1 };
// Which operands one kernel writes: the row-wise (non-transposed) one, the column-wise
// (transposed) one, or both from one read of the input.
enum class Mode : u8 { rows = 0, cols = 1, both = 2 };

// Elements every thread holds: 16 bytes of BF16/FP16 (two 16-byte loads of FP32).
constexpr int kVec = 8;

FP4JIT_CONSTEXPR int in_size(InType t) {
  return t == InType::f32 ? 4 : 2;
}

FP4JIT_CONSTEXPR float elem_max(Elem e) {
  return e == Elem::e2m1 ? 6.0f : (e == Elem::e4m3 ? 448.0f : 57344.0f);
}
FP4JIT_CONSTEXPR int elem_emax(Elem e) {
  return e == Elem::e2m1 ? 2 : (e == Elem::e4m3 ? 8 : 15);
}
FP4JIT_CONSTEXPR bool elem_packed(Elem e) {
  return e == Elem::e2m1;
}

// Literal MiniFloat descriptions (never a reference to a namespace-scope constant: device code
// may only use such constants' scalar values).
FP4JIT_CONSTEXPR nx::MiniFloat elem_minifloat(Elem e) {
  return e == Elem::e4m3 ? nx::MiniFloat{4, 3, 7, true, nx::Special::all_ones_nan}
                         : nx::MiniFloat{5, 2, 15, true, nx::Special::ieee};
}
FP4JIT_CONSTEXPR nx::MiniFloat scale_minifloat(ScaleFmt f) {
  switch (f) {
    case ScaleFmt::ue5m3_nan:
      return nx::MiniFloat{5, 3, 15, false, nx::Special::all_ones_nan};
    case ScaleFmt::ue5m3_finite:
      return nx::MiniFloat{5, 3, 15, false, nx::Special::all_finite};
    case ScaleFmt::ue5m3_ieee:
      return nx::MiniFloat{5, 3, 15, false, nx::Special::ieee};
    default:
      return nx::MiniFloat{4, 3, 7, false, nx::Special::all_ones_nan};
  }
}
FP4JIT_CONSTEXPR bool scale_is_code(ScaleFmt f) {
  return f != ScaleFmt::fp32;
}

// Lanes that share one quantization group along K: a block of block_cols elements, or a
// Hadamard chunk, whichever is longer (at least one lane).
template <class Op>
FP4JIT_CONSTEXPR int group_k_lanes() {
  int span = Op::had > kVec ? Op::had : kVec;
  if (Op::block == BlockKind::tile && Op::block_cols > span) span = Op::block_cols;
  return span / kVec;
}
// Blocks one thread's kVec elements hold (tile blocks narrower than kVec).
template <class Op>
FP4JIT_CONSTEXPR int sub_blocks() {
  return (Op::block == BlockKind::tile && Op::block_cols < kVec) ? kVec / Op::block_cols : 1;
}
FP4JIT_CONSTEXPR bool is_pow2(int v) {
  return v > 0 && (v & (v - 1)) == 0;
}

// quantize_rows' lane-owned-group path (host and device agree on its shared-memory rings).
// Shared memory the path may take per CTA for its rings: dynamic shared memory (the launch passes
// rows_ring_bytes, opting in above 48 KB), at most two CTAs' worth of an SM's 228 KB.
constexpr int kRowsRingBytes = 96 * 1024;
// Its item: one row's chunk of 32 lanes x 32 elements.
FP4JIT_CONSTEXPR int rows_item_bytes(InType in) {
  return 32 * 32 * in_size(in);
}
// Items in each warp's ring: the one being encoded and up to `unroll` in flight, as the CTA's
// rings fit kRowsRingBytes (0: the config does not fit).
FP4JIT_CONSTEXPR int rows_ring_stages(int threads, int unroll, InType in) {
  const int fit = kRowsRingBytes / ((threads / 32) * rows_item_bytes(in));
  return fit < unroll + 1 ? fit : unroll + 1;
}
// The CTA's rings in bytes: the dynamic shared memory a launch of the path passes.
FP4JIT_CONSTEXPR int rows_ring_bytes(int threads, int unroll, InType in) {
  return (threads / 32) * rows_ring_stages(threads, unroll, in) * rows_item_bytes(in);
}

// quantize_tile's raw-tile path: shared memory its ring of tiles may take per CTA.
constexpr int kTileRingBytes = 48 * 1024;

// Preconditions every kernel asserts on its operands.
template <class Op>
FP4JIT_CONSTEXPR bool operand_ok() {
  if (Op::had != 0 && (Op::had < 16 || Op::had > 128 || !is_pow2(Op::had))) return false;
  if (Op::block == BlockKind::tile) {
    if (!is_pow2(Op::block_cols) || !is_pow2(Op::block_rows)) return false;
    if (Op::block_cols > 256 || Op::block_rows > 32) return false;
  }
  if (Op::round == nx::Round::stochastic && Op::sr_bits != 8 && Op::sr_bits != 16) return false;
  return group_k_lanes<Op>() <= 32;
}

}  // namespace fp4jit::kern
