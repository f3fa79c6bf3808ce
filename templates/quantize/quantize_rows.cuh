// quantize_rows: the row-wise (non-transposed) operand straight from global memory, one pass.
//
// Each warp walks one operand row at a time, 32 x kUnroll segments of kVec elements (a 16-byte
// load per segment for BF16/FP16): all loads of an iteration are issued before the first use.
// Block stats of 1 x block_cols tiles (and Hadamard chunks) are reduced over neighbouring lanes;
// blocks spanning more rows, whole rows or columns, or the tensor come from the stats pass.
//
// Phases (Cfg::phase):
//   stats     accumulates the global finite amax (two-level s_enc, the amax output) and the stat
//             words of blocks that are not local; walks the rows in reverse so that the rows the
//             quantize pass reads first are still in L2.
//   quantize  writes codes and scales (and s_enc and amax).
//
// Config (a named struct in the generated stub):
//   using Op = ...;                      the operand (quantize/config.cuh)
//   static constexpr InType in;          input element type
//   static constexpr Phase phase;
//   static constexpr int threads;        per CTA, a multiple of 32
//   static constexpr int unroll;         segments per lane per iteration
#pragma once
#include "quantize/args.cuh"
#include "quantize/segment.cuh"

namespace fp4jit::kern {

template <class Cfg>
__global__ void __launch_bounds__(Cfg::threads) quantize_rows(QuantizeArgs a) {
  using Op = typename Cfg::Op;
  static_assert(operand_ok<Op>(), "operand not supported by the CUDA kernels");
  static_assert(Cfg::threads % 32 == 0 && Cfg::unroll >= 1, "bad launch shape");
  constexpr int kU = Cfg::unroll;
  constexpr int kWarps = Cfg::threads / 32;
  constexpr int kG = group_k_lanes<Op>();
  constexpr int kSub = sub_blocks<Op>();
  constexpr bool kStats = Cfg::phase == Phase::stats;

  const OperandOut o = a.row;
  const int lane = lane_id();
  const i64 cols = o.cols;
  const i64 segs_per_row = (cols + kVec - 1) / kVec;
  const i64 chunks = (segs_per_row + 32 * kU - 1) / (32 * kU);
  const i64 items = o.rows * chunks;
  const bool vector_ok = a.vector_ok != 0u;

  float s_enc = 1.0f;
  if constexpr (!kStats && Op::rule == Rule::two_level)
    s_enc = tensor_scale<Op>(nx::bits_float(*o.amax_bits));
  // The global amax: accumulated by the stats pass, else here when the caller wants it.
  const bool want_max =
      kStats ? o.amax_bits != nullptr : (o.amax_out != nullptr && o.amax_bits == nullptr);
  u32 global_max = 0u;  // finite amax of what this lane saw
  u32 tensor_stat = 0u;

  for (i64 it = static_cast<i64>(blockIdx.x) * kWarps + warp_id(); it < items;
       it += static_cast<i64>(gridDim.x) * kWarps) {
    const i64 item = kStats ? items - 1 - it : it;
    const i64 r = item / chunks;
    const i64 seg0 = (item - r * chunks) * (32 * kU);
    float v[kU][kVec];
    int n[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const i64 c0 = (seg0 + u * 32 + lane) * kVec;
      const i64 left = cols - c0;
      n[u] = left <= 0 ? 0 : (left >= kVec ? kVec : static_cast<int>(left));
      load_vec<Cfg::in>(a.in, r * a.stride + c0, n[u], vector_ok && n[u] == kVec, !kStats, v[u]);
    }
    if constexpr (Op::occ) {
      const float lo = o.lohi[2 * r], hi = o.lohi[2 * r + 1];
#pragma unroll
      for (int u = 0; u < kU; ++u)
#pragma unroll
        for (int e = 0; e < kVec; ++e)
          if (e < n[u]) v[u][e] = v[u][e] < lo ? lo : (v[u][e] > hi ? hi : v[u][e]);
    }
    u32 row_stat = 0u;
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const i64 c0 = (seg0 + u * 32 + lane) * kVec;
      hadamard<Op, 1>(v[u], lane % kG);
      if (want_max) global_max = umax(global_max, finite_max(v[u]));
      u32 stat[kSub];
      if constexpr (kStats) {
        if (o.stats_out == nullptr) continue;  // the global amax only (two-level tile blocks)
        if constexpr (Op::block == BlockKind::tile) {
          constexpr int kPer = kVec / kSub;
          tile_stats<Op, 1, 0>(v[u], stat);
          if (n[u] > 0)
#pragma unroll
            for (int s = 0; s < kSub; ++s) {
              const i64 c = c0 + s * kPer;
              if (c % Op::block_cols == 0)
                atomicMax(o.stats_out + block_index<Op>(r, c, o.scale_cols), stat[s]);
            }
        } else {
#pragma unroll
          for (int e = 0; e < kVec; ++e) {
            if (e >= n[u]) continue;
            const u32 key = stat_key(v[u][e]);
            if constexpr (Op::block == BlockKind::row)
              row_stat = umax(row_stat, key);
            else if constexpr (Op::block == BlockKind::tensor)
              tensor_stat = umax(tensor_stat, key);
            else
              atomicMax(o.stats_out + c0 + e, key);
          }
        }
      } else {
        if constexpr (Op::block == BlockKind::tile) tile_stats<Op, 1, 0>(v[u], stat);
        quantize_segment<Op, 0>(v[u], stat, r, c0, n[u], o, s_enc, a.seed, a.offset, nullptr);
      }
    }
    if constexpr (kStats && Op::block == BlockKind::row) {
      row_stat = warp_max(row_stat);
      if (lane == 0 && o.stats_out != nullptr && row_stat != 0u)
        atomicMax(o.stats_out + r, row_stat);
    }
  }

  global_max = warp_max(global_max);
  if constexpr (kStats) {
    if (lane == 0 && o.amax_bits != nullptr) atomicMax(o.amax_bits, global_max);
    if constexpr (Op::block == BlockKind::tensor) {
      tensor_stat = warp_max(tensor_stat);
      if (lane == 0 && o.stats_out != nullptr) atomicMax(o.stats_out, tensor_stat);
    }
  } else if (o.amax_bits != nullptr) {
    // The stats pass knew the amax: one thread publishes it (and s_enc).
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      if (o.amax_out != nullptr) *o.amax_out = *o.amax_bits;
      if constexpr (Op::rule == Rule::two_level)
        if (o.tensor_scale != nullptr) *o.tensor_scale = s_enc;
    }
  } else if (lane == 0 && o.amax_out != nullptr) {
    atomicMax(o.amax_out, global_max);
  }
}

}  // namespace fp4jit::kern
