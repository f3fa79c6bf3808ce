// quantize_tile: the column-wise (transposed) operand, both operands from one read, or a
// row-wise operand whose blocks span several rows (16 x 16), through a shared-memory tile.
//
// A CTA loads a [kTileRows x kTileCols] tile of the source (16-byte loads, coalesced), applies
// the OCC clamp, and stores it as float into shared memory with a row pitch of kTileCols + 1
// words: segments are then read along rows (row-wise operand) or along columns (the transposed
// operand) without bank conflicts when a warp holds L lines x (32 / L) segments:
// bank = line + 8 * kpos + e (mod 32) either way.
//
// Double quantization (Cfg::requant, mode both): the transposed operand is quantized from the
// row-wise operand's dequantized values (TetraJet's Q(deq(Q(X)))^T), which the row pass writes
// back into the tile.
//
// Config:
//   using RowOp, ColOp;               the row-wise / transposed operands (unused one: any Op)
//   static constexpr InType in;
//   static constexpr Phase phase;
//   static constexpr Mode mode;
//   static constexpr bool requant;
//   static constexpr int threads, tile_rows, tile_cols;   source tile
#pragma once
#include "quantize/args.cuh"
#include "quantize/segment.cuh"

namespace fp4jit::kern {

// Accumulators of one operand's non-tile block stats in a CTA (stats phase).
template <class Op, int kRows, int kCols>
struct TileAcc {
  static constexpr bool kUsed = Op::block != BlockKind::tile;
  static constexpr int kSize = kUsed ? kRows + kCols : 1;
};

// Processes one operand held in the tile. kTransposed: operand rows are source columns.
template <class Cfg, class Op, bool kTransposed>
FP4JIT_DEV void tile_operand(float* tile, u32* acc, const OperandOut& o, i64 i0, i64 j0, u64 seed,
                             u64 offset, u32& global_max) {
  constexpr int kTM = Cfg::tile_rows, kTN = Cfg::tile_cols, kPitch = kTN + 1;
  constexpr int kG = group_k_lanes<Op>();
  constexpr int kL = 32 / kG;                      // lines (operand rows) per warp
  constexpr int kLines = kTransposed ? kTN : kTM;  // operand rows in the tile
  constexpr int kK = kTransposed ? kTM : kTN;      // operand K extent of the tile
  constexpr int kKUnits = kK / (kG * kVec);
  constexpr int kUnits = (kLines / kL) * kKUnits;
  constexpr bool kStats = Cfg::phase == Phase::stats;
  constexpr bool kRequant = Cfg::requant && !kTransposed;
  constexpr int kSub = sub_blocks<Op>();
  static_assert(kLines % kL == 0 && kK % (kG * kVec) == 0, "tile does not hold whole groups");
  static_assert(Op::block != BlockKind::tile || kL % Op::block_rows == 0,
                "block rows must share a warp");

  const int lane = lane_id();
  const int line = lane % kL, kpos = lane / kL;
  const i64 row0 = kTransposed ? j0 : i0;  // first operand row of the tile
  const i64 col0 = kTransposed ? i0 : j0;  // first operand column
  float s_enc = 1.0f;
  if constexpr (!kStats && Op::rule == Rule::two_level)
    s_enc = tensor_scale<Op>(nx::bits_float(*o.amax_bits));
  // The global amax: accumulated by the stats pass, else here when the caller wants it.
  const bool want_max =
      kStats ? o.amax_bits != nullptr : (o.amax_out != nullptr && o.amax_bits == nullptr);

  for (int unit = warp_id(); unit < kUnits; unit += Cfg::threads / 32) {
    const int tl = (unit / kKUnits) * kL + line;                  // operand row within the tile
    const int tk = (unit % kKUnits) * (kG * kVec) + kpos * kVec;  // operand column within the tile
    float v[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      v[e] = kTransposed ? tile[(tk + e) * kPitch + tl] : tile[tl * kPitch + tk + e];
    const i64 r = row0 + tl, c0 = col0 + tk;
    const i64 left = o.cols - c0;
    const int n = r >= o.rows || left <= 0 ? 0 : (left >= kVec ? kVec : static_cast<int>(left));
    hadamard<Op, kL>(v, kpos);
    if (want_max) global_max = umax(global_max, finite_max(v));
    u32 stat[kSub];
    if constexpr (kStats) {
      // Non-tile blocks: the CTA's shared accumulators (tile blocks need only the global amax).
      if constexpr (Op::block == BlockKind::col) {
#pragma unroll
        for (int e = 0; e < kVec; ++e)
          if (e < n) atomicMax(acc + tk + e, stat_key(v[e]));
      } else if constexpr (Op::block != BlockKind::tile) {
        u32 m = 0u;
#pragma unroll
        for (int e = 0; e < kVec; ++e) m = umax(m, abs_bits(v[e]));  // padding holds 0
        if (n > 0) atomicMax(Op::block == BlockKind::row ? acc + tl : acc, stat_of(m));
      }
    } else {
      if constexpr (Op::block == BlockKind::tile) tile_stats<Op, kL, 1>(v, stat);
      // Double quantization: the transposed pass reads the dequantized values (padding stays 0).
      quantize_segment<Op, 1>(v, stat, r, c0, n, o, s_enc, seed, offset,
                              kRequant ? tile + tl * kPitch + tk : nullptr);
    }
  }
}

// Publishes one operand's global results (see quantize_rows) and flushes its CTA accumulators.
template <class Cfg, class Op, bool kTransposed>
FP4JIT_DEV void tile_finish(u32* acc, const OperandOut& o, i64 i0, i64 j0, u32 global_max) {
  constexpr bool kStats = Cfg::phase == Phase::stats;
  global_max = warp_max(global_max);
  const int lane = lane_id();
  if constexpr (kStats) {
    if (lane == 0 && o.amax_bits != nullptr) atomicMax(o.amax_bits, global_max);
    if constexpr (TileAcc<Op, 1, 1>::kUsed) {
      constexpr int kLines = kTransposed ? Cfg::tile_cols : Cfg::tile_rows;
      constexpr int kK = kTransposed ? Cfg::tile_rows : Cfg::tile_cols;
      const i64 row0 = kTransposed ? j0 : i0, col0 = kTransposed ? i0 : j0;
      constexpr int kN =
          Op::block == BlockKind::row ? kLines : (Op::block == BlockKind::col ? kK : 1);
      for (int i = static_cast<int>(threadIdx.x); i < kN; i += Cfg::threads) {
        const u32 s = acc[i];
        if (s == 0u || o.stats_out == nullptr) continue;
        if constexpr (Op::block == BlockKind::row) {
          if (row0 + i < o.rows) atomicMax(o.stats_out + row0 + i, s);
        } else if constexpr (Op::block == BlockKind::col) {
          if (col0 + i < o.cols) atomicMax(o.stats_out + col0 + i, s);
        } else {
          atomicMax(o.stats_out, s);
        }
      }
    }
  } else if (o.amax_bits != nullptr) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      if (o.amax_out != nullptr) *o.amax_out = *o.amax_bits;
      if constexpr (Op::rule == Rule::two_level)
        if (o.tensor_scale != nullptr)
          *o.tensor_scale = tensor_scale<Op>(nx::bits_float(*o.amax_bits));
    }
  } else if (lane == 0 && o.amax_out != nullptr) {
    atomicMax(o.amax_out, global_max);
  }
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::threads) quantize_tile(QuantizeArgs a) {
  using RowOp = typename Cfg::RowOp;
  using ColOp = typename Cfg::ColOp;
  constexpr int kTM = Cfg::tile_rows, kTN = Cfg::tile_cols, kPitch = kTN + 1;
  constexpr bool kRows = Cfg::mode != Mode::cols, kCols = Cfg::mode != Mode::rows;
  constexpr bool kStats = Cfg::phase == Phase::stats;
  constexpr int kSegsPerRow = kTN / kVec;
  constexpr int kLoads = kTM * kSegsPerRow / Cfg::threads;
  static_assert(operand_ok<RowOp>() && operand_ok<ColOp>(),
                "operand not supported by the CUDA kernels");
  static_assert(kTN % kVec == 0 && (kTM * kSegsPerRow) % Cfg::threads == 0,
                "tile must split evenly into loads");
  static_assert(!Cfg::requant || Cfg::mode == Mode::both,
                "double quantization reads the row-wise copy");

  __shared__ float tile[kTM * kPitch];
  __shared__ u32 acc_row[TileAcc<RowOp, kTM, kTN>::kSize];
  __shared__ u32 acc_col[TileAcc<ColOp, kTN, kTM>::kSize];

  const i64 tiles_j = (a.cols + kTN - 1) / kTN;
  const i64 tiles = ((a.rows + kTM - 1) / kTM) * tiles_j;
  const i64 t = kStats ? tiles - 1 - static_cast<i64>(blockIdx.x) : static_cast<i64>(blockIdx.x);
  const i64 i0 = (t / tiles_j) * kTM, j0 = (t % tiles_j) * kTN;

  if constexpr (kStats) {
    for (int i = static_cast<int>(threadIdx.x); i < TileAcc<RowOp, kTM, kTN>::kSize;
         i += Cfg::threads)
      acc_row[i] = 0u;
    for (int i = static_cast<int>(threadIdx.x); i < TileAcc<ColOp, kTN, kTM>::kSize;
         i += Cfg::threads)
      acc_col[i] = 0u;
  }

  // Load: every load of the tile in flight before the first store to shared memory.
  float v[kLoads][kVec];
  int n[kLoads];
  const bool vector_ok = a.vector_ok != 0u;
#pragma unroll
  for (int l = 0; l < kLoads; ++l) {
    const int idx = static_cast<int>(threadIdx.x) + l * Cfg::threads;
    const int tr = idx / kSegsPerRow, tc = (idx % kSegsPerRow) * kVec;
    const i64 i = i0 + tr, j = j0 + tc;
    const i64 left = a.cols - j;
    n[l] = i >= a.rows || left <= 0 ? 0 : (left >= kVec ? kVec : static_cast<int>(left));
    load_vec<Cfg::in>(a.in, i * a.stride + j, n[l], vector_ok && n[l] == kVec, !kStats, v[l]);
  }
  constexpr bool kOcc = (kRows && RowOp::occ) || (kCols && ColOp::occ);
#pragma unroll
  for (int l = 0; l < kLoads; ++l) {
    const int idx = static_cast<int>(threadIdx.x) + l * Cfg::threads;
    const int tr = idx / kSegsPerRow, tc = (idx % kSegsPerRow) * kVec;
    if constexpr (kOcc) {
      if (n[l] > 0) {
        const float* lohi = kRows ? a.row.lohi : a.col.lohi;
        const float lo = lohi[2 * (i0 + tr)], hi = lohi[2 * (i0 + tr) + 1];
#pragma unroll
        for (int e = 0; e < kVec; ++e)
          if (e < n[l]) v[l][e] = v[l][e] < lo ? lo : (v[l][e] > hi ? hi : v[l][e]);
      }
    }
#pragma unroll
    for (int e = 0; e < kVec; ++e) tile[tr * kPitch + tc + e] = v[l][e];
  }
  __syncthreads();

  u32 row_max = 0u, col_max = 0u;
  if constexpr (kRows) {
    const OperandOut o = a.row;
    tile_operand<Cfg, RowOp, false>(tile, acc_row, o, i0, j0, a.seed, a.offset, row_max);
  }
  if constexpr (kRows && kCols && Cfg::requant) __syncthreads();
  if constexpr (kCols) {
    const OperandOut o = a.col;
    tile_operand<Cfg, ColOp, true>(tile, acc_col, o, i0, j0, a.seed, a.offset, col_max);
  }
  if constexpr (kStats) __syncthreads();
  if constexpr (kRows) tile_finish<Cfg, RowOp, false>(acc_row, a.row, i0, j0, row_max);
  if constexpr (kCols) tile_finish<Cfg, ColOp, true>(acc_col, a.col, i0, j0, col_max);
}

}  // namespace fp4jit::kern
