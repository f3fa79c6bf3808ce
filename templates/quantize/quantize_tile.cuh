// quantize_tile: the column-wise (transposed) operand, both operands from one read, or a
// row-wise operand whose blocks span several rows (16 x 16), through a shared-memory tile.
//
// CTAs are persistent: each walks tiles of [kTileRows x kTileCols] of the source, with the next
// tile's 16-byte loads (coalesced) in flight while the current one is quantized. A tile is
// OCC-clamped and stored as float into shared memory with a row pitch of kTileCols + 1 words.
// Operands of quantize/groups.cuh (E2M1 1 x 16 / 1 x 32 blocks, and 16 x 16 ones where the tile
// allows) are then taken a whole group of K-elements per thread, consecutive lanes on consecutive
// lines (tile rows, or tile columns for the transposed operand), so the reads hit distinct banks;
// both operands' groups share one loop.
// Other operands go by segments: a warp holds L lines x (32 / L) segments of kVec elements.
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
//   static constexpr bool col_sums;   also the source's column sums per 64-row chunk (quantize
//                                     phase, no OCC, tile_rows a multiple of 64)
#pragma once
#include "quantize/args.cuh"
#include "quantize/column_sums.cuh"
#include "quantize/groups.cuh"
#include "quantize/quantize_rows.cuh"
#include "quantize/segment.cuh"

namespace fp4jit::kern {

// Accumulators of one operand's non-tile block stats in a CTA (stats phase).
template <class Op, int kRows, int kCols>
struct TileAcc {
  static constexpr bool kUsed = Op::block != BlockKind::tile;
  static constexpr int kSize = kUsed ? kRows + kCols : 1;
};

// The block scales of an operand scaled per operand column (block=col: msfp4's xt and wt, one
// scale per source row or column), for the tile's operand columns, in the quantize pass:
// computed once per tile into shared memory by fill_column_scales, not once per element.
template <class Cfg, class Op, bool kTransposed>
struct ColumnScales {
  static constexpr bool kUsed = Cfg::phase == Phase::quantize && Op::block == BlockKind::col;
  static constexpr int kK = kTransposed ? Cfg::tile_rows : Cfg::tile_cols;
  static constexpr int kSize = kUsed ? kK : 1;
};
template <class Cfg, class Op, bool kTransposed>
FP4JIT_DEV void fill_column_scales(BlockScale* table, const OperandOut& o, i64 i0, i64 j0) {
  using CS = ColumnScales<Cfg, Op, kTransposed>;
  if constexpr (CS::kUsed) {
    float s_enc = 1.0f;
    if constexpr (Op::rule == Rule::two_level) s_enc = operand_s_enc<Op>(o);
    const i64 col0 = kTransposed ? i0 : j0;
    for (int i = static_cast<int>(threadIdx.x); i < CS::kK; i += Cfg::threads)
      if (col0 + i < o.cols) table[i] = block_scale<Op>(o.stats[col0 + i], s_enc);
  }
}

// The float-tile path's 16 x 16 lane groups (k2d in tile_float) and whether its pair takes the
// transposed copy from the row-wise codes (tile_group_both), from the config alone.
template <class Cfg>
FP4JIT_CONSTEXPR bool tile_float_2d() {
  using RowOp = typename Cfg::RowOp;
  using ColOp = typename Cfg::ColOp;
  constexpr bool kRows = Cfg::mode != Mode::cols, kCols = Cfg::mode != Mode::rows;
  constexpr int kTM = Cfg::tile_rows, kTN = Cfg::tile_cols;
  return (!kRows || lane_groups_2d<RowOp>()) && (!kCols || lane_groups_2d<ColOp>()) &&
         !Cfg::requant && kTM % 32 == 0 && kTN % 32 == 0 &&
         ((kRows ? kTM * (kTN / 16) : 0) + (kCols ? kTN * (kTM / 16) : 0)) % Cfg::threads == 0;
}
template <class Cfg>
FP4JIT_CONSTEXPR bool tile_float_derive() {
  return tile_float_2d<Cfg>() && Cfg::mode == Mode::both && Cfg::phase == Phase::quantize &&
         same_block_codes<typename Cfg::RowOp, typename Cfg::ColOp>();
}
// A pair whose copies give every element the same code: one scale per source row in both (block
// row / col) or one per tensor, the same element and scale formats, rule and deterministic
// rounding, no Hadamard (msfp4's x + xt, w + wt and dy + dyt; OCC clamps both alike). Its
// transposed copy is the row-wise codes transposed (tile_codes_transposed) where, at run time,
// both read the same stat words.
template <class A, class B>
FP4JIT_CONSTEXPR bool same_element_codes() {
  return ((A::block == BlockKind::row && B::block == BlockKind::col) ||
          (A::block == BlockKind::tensor && B::block == BlockKind::tensor)) &&
         A::elem == B::elem && A::scale == B::scale && A::rule == B::rule &&
         A::rule != Rule::two_level && A::round == B::round && A::round != nx::Round::stochastic &&
         A::scale_max == B::scale_max && A::had == 0 && B::had == 0 && A::occ == B::occ;
}
template <class Cfg>
FP4JIT_CONSTEXPR bool tile_float_same() {
  return Cfg::mode == Mode::both && Cfg::phase == Phase::quantize && !Cfg::requant &&
         !lane_groups<typename Cfg::RowOp>() && !lane_groups<typename Cfg::ColOp>() &&
         !tile_float_2d<Cfg>() && Cfg::tile_rows % kVec == 0 && 32 % (Cfg::tile_rows / kVec) == 0 &&
         same_element_codes<typename Cfg::RowOp, typename Cfg::ColOp>();
}
// Floats per row of the float tile: one more than the row, so that a warp reading one column
// down 32 rows (the transposed operand) or one element of 32 rows hits 32 banks; four more where
// the pair derives the transposed copy (its row-wise units read 16-byte pieces of 32 rows, the
// fill stores them: 16-byte aligned, a quarter warp over all banks).
template <class Cfg>
FP4JIT_CONSTEXPR int tile_float_pitch() {
  return Cfg::tile_cols + (tile_float_derive<Cfg>() ? 4 : 1);
}

// Processes one operand held in the tile. kTransposed: operand rows are source columns.
// col_scales: the operand's ColumnScales table for this tile (block=col), else unused.
template <class Cfg, class Op, bool kTransposed>
FP4JIT_DEV void tile_operand(float* tile, u32* acc, const OperandOut& o, i64 i0, i64 j0, u64 seed,
                             u64 offset, u32& global_max, const BlockScale* col_scales,
                             bool codes_back = false) {
  constexpr int kTM = Cfg::tile_rows, kTN = Cfg::tile_cols, kPitch = tile_float_pitch<Cfg>();
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
  if constexpr (!kStats && Op::rule == Rule::two_level) s_enc = operand_s_enc<Op>(o);
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
      // codes_back (row-wise operand): each code over its element's slot of the tile.
      quantize_segment<Op, 1>(
          v, stat, r, c0, n, o, s_enc, seed, offset, kRequant ? tile + tl * kPitch + tk : nullptr,
          col_scales, col0, nullptr,
          !kTransposed && codes_back ? reinterpret_cast<u32*>(tile) + tl * kPitch + tk : nullptr);
    }
  }
}

// The transposed copy of a tile_float_same pair from the row-wise codes that tile_operand left in
// the tile's slots: kG lanes along each operand row (the tile's rows, kVec a lane), so that a
// warp stores whole 32-byte pieces of 32 / kG operand rows; the scales of the tile's source rows
// where it holds the operand's first row.
template <class Cfg, class Op>
FP4JIT_DEV void tile_codes_transposed(const float* tile, const OperandOut& o, i64 i0, i64 j0) {
  constexpr int kTM = Cfg::tile_rows, kTN = Cfg::tile_cols, kPitch = tile_float_pitch<Cfg>();
  constexpr int kG = kTM / kVec;
  constexpr int kBytesPer = elem_packed(Op::elem) ? 1 : 2;  // bytes per two elements
  const u32* codes = reinterpret_cast<const u32*>(tile);
  const bool aligned = elem_packed(Op::elem) ? (o.row_bytes % 4 == 0) : (o.row_bytes % 8 == 0);
  for (int u = static_cast<int>(threadIdx.x); u < kTN * kG; u += Cfg::threads) {
    const int tl = u / kG, tk = (u % kG) * kVec;
    const i64 r = j0 + tl, c0 = i0 + tk;  // operand row and first column
    const i64 left = o.cols - c0;
    const int n = r >= o.rows || left <= 0 ? 0 : (left >= kVec ? kVec : static_cast<int>(left));
    if (n == 0) continue;
    u32 code[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) code[e] = e < n ? codes[(tk + e) * kPitch + tl] : 0u;
    store_codes(o.codes + r * o.row_bytes + (c0 / 2) * kBytesPer, code, elem_packed(Op::elem), n,
                aligned);
    if (r != 0) continue;
    if constexpr (Op::block == BlockKind::col) {
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        if (e < n) store_scale<Op>(o.scales, c0 + e, block_scale<Op>(o.stats[c0 + e], 1.0f));
    } else {
      if (c0 == 0) store_scale<Op>(o.scales, 0, block_scale<Op>(o.stats[0], 1.0f));
    }
  }
}

// Flushes one operand's CTA accumulators of non-tile block stats (stats phase), per tile.
template <class Cfg, class Op, bool kTransposed>
FP4JIT_DEV void tile_flush(u32* acc, const OperandOut& o, i64 i0, i64 j0) {
  if constexpr (Cfg::phase == Phase::stats && TileAcc<Op, 1, 1>::kUsed) {
    constexpr int kLines = kTransposed ? Cfg::tile_cols : Cfg::tile_rows;
    constexpr int kK = kTransposed ? Cfg::tile_rows : Cfg::tile_cols;
    const i64 row0 = kTransposed ? j0 : i0, col0 = kTransposed ? i0 : j0;
    constexpr int kN =
        Op::block == BlockKind::row ? kLines : (Op::block == BlockKind::col ? kK : 1);
    for (int i = static_cast<int>(threadIdx.x); i < kN; i += Cfg::threads) {
      const u32 s = acc[i];
      acc[i] = 0u;  // for the next tile (after the barrier that ends this one)
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
}

// Publishes one operand's global results once per CTA (see quantize_rows' finish_rows).
template <class Cfg, class Op>
FP4JIT_DEV void tile_finish(const OperandOut& o, u32 global_max) {
  constexpr bool kStats = Cfg::phase == Phase::stats;
  float s_enc = 1.0f;
  if constexpr (!kStats && Op::rule == Rule::two_level)
    if (o.amax_in != nullptr || o.amax_bits != nullptr) s_enc = operand_s_enc<Op>(o);
  finish_rows<Op, kStats>(o, global_max, s_enc);
}

// The lane-owned-group path for one operand held in the tile: each thread takes whole groups of
// kGroup K-elements of one operand row (a tile row, or a tile column when transposed), unit by
// unit; consecutive lanes take consecutive lines, so the reads (pitch kTN + 1) hit distinct banks.
template <class Cfg, class Op, bool kTransposed>
FP4JIT_DEV void tile_group(const float* tile, int unit, const OperandOut& o, i64 i0, i64 j0,
                           float s_enc, const TwoLevel& tl, u64 seed, u64 offset, bool want_max,
                           u32& global_max) {
  constexpr int kPitch = tile_float_pitch<Cfg>();
  constexpr int kG = group_size<Op>();
  constexpr int kLines = kTransposed ? Cfg::tile_cols : Cfg::tile_rows;
  constexpr bool kStats = Cfg::phase == Phase::stats;
  const int tl_line = unit % kLines, tk = (unit / kLines) * kG;
  const i64 r = (kTransposed ? j0 : i0) + tl_line, c0 = (kTransposed ? i0 : j0) + tk;
  const i64 left = o.cols - c0;
  const int n = r >= o.rows || left <= 0 ? 0 : (left >= kG ? kG : static_cast<int>(left));
  // 16 x 16 blocks: every lane takes part in its block's maximum (one past the edge with the
  // tile's zeros) and stores nothing.
  if (n == 0 && !lane_groups_2d<Op>()) return;
  float v[kG];
#pragma unroll
  for (int e = 0; e < kG; ++e)
    v[e] = kTransposed ? tile[(tk + e) * kPitch + tl_line] : tile[tl_line * kPitch + tk + e];
  u32 m[kG / Op::block_cols];
  quantize_group<Op, kStats>(v, false, m, r, c0, n, o, s_enc, tl, seed, offset, want_max,
                             global_max);
}

// Both copies of a pair whose blocks are 16 x 16 with the same codes in each (same_block_codes, the
// same s_enc; the operand's sides multiples of 16, so a block's 16 lanes are all in range or all
// out): a row-wise unit encodes its 1 x 16 row of a block as tile_group does and stores it, then
// the block's 16 lanes transpose their codes (transpose_nibbles16) and lane j stores the block's
// column j, a row of the transposed operand, with the same scale code. The transposed operand's
// units are not run at all.
template <class Cfg, class Op, class TOp>
FP4JIT_DEV void tile_group_both(const float* tile, int unit, const OperandOut& o,
                                const OperandOut& ot, i64 i0, i64 j0, float s_enc,
                                const TwoLevel& tl, bool want_max, u32& global_max) {
  static_assert(same_block_codes<Op, TOp>() && scale_is_code(Op::scale), "same codes, code scales");
  constexpr int kPitch = tile_float_pitch<Cfg>();
  static_assert(kPitch % 4 == 0, "16-byte rows");
  const int tl_line = unit % Cfg::tile_rows, tk = (unit / Cfg::tile_rows) * 16;
  const i64 r = i0 + tl_line, c0 = j0 + tk;
  const bool in = r < o.rows && c0 < o.cols;
  const int lane16 = tl_line & 15;  // the row within its block (tile rows: multiples of 32)
  float v[16];
  const float4* row = reinterpret_cast<const float4*>(tile + tl_line * kPitch + tk);
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const float4 f = row[q];
    v[4 * q] = f.x;
    v[4 * q + 1] = f.y;
    v[4 * q + 2] = f.z;
    v[4 * q + 3] = f.w;
  }
  u32 m[1];
  GroupCodes<Op> g;
  quantize_group<Op, false, false, false, true>(v, false, m, r, c0, in ? 16 : 0, o, s_enc, tl, 0u,
                                                0u, want_max, global_max, nullptr, true, &g);
  u32 w0 = g.words[0], w1 = g.words[1];
  if (in) {
    *reinterpret_cast<uint2*>(o.codes + r * o.row_bytes + (c0 >> 1)) = uint2{w0, w1};
    if (lane16 == 0)
      static_cast<u8*>(o.scales)[block_index<Op>(r, c0, o.scale_cols)] =
          static_cast<u8>(g.scales[0]);
  }
  transpose_nibbles16(w0, w1, lane16);
  if (in) {
    const i64 tr = c0 + lane16, tc0 = r - lane16;
    *reinterpret_cast<uint2*>(ot.codes + tr * ot.row_bytes + (tc0 >> 1)) = uint2{w0, w1};
    if (lane16 == 0)
      static_cast<u8*>(ot.scales)[block_index<TOp>(tr, tc0, ot.scale_cols)] =
          static_cast<u8>(g.scales[0]);
  }
}

// Per-operand constants of a quantize_tile pass: s_enc and the two-level constants (quantize pass
// of a two-level operand), and whether this pass accumulates the global amax.
template <class Cfg, class Op, bool kUsed>
struct OperandConsts {
  float s_enc = 1.0f;
  TwoLevel tl{1.0f, 1.0f};
  bool want_max = false;
  FP4JIT_DEV explicit OperandConsts(const OperandOut& o) {
    constexpr bool kStats = Cfg::phase == Phase::stats;
    if constexpr (!kStats && kUsed && Op::rule == Rule::two_level) {
      s_enc = operand_s_enc<Op>(o);
      tl = two_level_consts<Op>(s_enc);
    }
    want_max = kStats ? o.amax_bits != nullptr : (o.amax_out != nullptr && o.amax_bits == nullptr);
  }
  // Whether this pass scales Op's blocks by two-level codes, whose factors a table holds.
  static constexpr bool kTable = Cfg::phase == Phase::quantize && kUsed && two_level_codes<Op>();
  // Every scale code's factor into `table` (a CTA's shared memory, 256 entries where kTable), read
  // by group_scale from then on; the CTA syncs before any thread encodes.
  FP4JIT_DEV void fill_factors(float* table) {
    if constexpr (kTable) fill_factor_table<Op, Cfg::threads>(table, tl);
  }
};

// The row and column operands' factor tables of a quantize_tile pass (the CTA syncs once after).
template <class Pass>
FP4JIT_DEV void tile_factor_tables(Pass& pass) {
  using Row = decltype(pass.row);
  using Col = decltype(pass.col);
  if constexpr (Row::kTable || Col::kTable) {
    __shared__ float row_factors[Row::kTable ? 256 : 1];
    __shared__ float col_factors[Col::kTable ? 256 : 1];
    pass.row.fill_factors(row_factors);
    pass.col.fill_factors(col_factors);
    __syncthreads();
  }
}

// What both paths of a quantize_tile pass derive from the arguments: the tile grid and each
// operand's constants.
template <class Cfg>
struct TilePass {
  static constexpr int kTM = Cfg::tile_rows, kTN = Cfg::tile_cols;
  i64 tiles_j, tiles;
  OperandConsts<Cfg, typename Cfg::RowOp, Cfg::mode != Mode::cols> row;
  OperandConsts<Cfg, typename Cfg::ColOp, Cfg::mode != Mode::rows> col;
  FP4JIT_DEV explicit TilePass(const QuantizeArgs& a)
      : tiles_j((a.cols + kTN - 1) / kTN),
        tiles(((a.rows + kTM - 1) / kTM) * tiles_j),
        row(a.row),
        col(a.col) {}
  // Tiles t, t + step, t + 2 step, ... as (tile row, tile column), walked in reverse by the
  // stats pass (GridWalk); Walk in 32-bit arithmetic (the launch refuses 2^30 tiles or more).
  template <class Index>
  struct WalkOf : GridWalk<Cfg::phase == Phase::stats, Index> {
    FP4JIT_DEV WalkOf(const TilePass& p, i64 t, i64 step)
        : GridWalk<Cfg::phase == Phase::stats, Index>(t, step, p.tiles_j, p.tiles) {}
    FP4JIT_DEV i64 i0() const { return static_cast<i64>(this->r) * kTM; }
    FP4JIT_DEV i64 j0() const { return static_cast<i64>(this->c) * kTN; }
  };
  using Walk = WalkOf<int>;
};

// The raw-tile path: every operand of the kernel by lane-owned groups (no OCC, no double
// quantization). Tiles stay in the input's own type in shared memory, kStages of them in a ring
// filled by cp.async (coalesced, zero-filled past the tensor) while an earlier one is quantized;
// 16-byte chunks of a row are XOR-swizzled (raw_chunk), so that both a lane reading its row group
// (16-byte reads, consecutive lanes on consecutive groups of a row) and a warp reading one 4-byte
// word of 32 consecutive words of a row (the transposed operand) hit distinct banks. The transposed
// operand's lanes own one 4-byte column word (two BF16/FP16 columns, one FP32 column) over a group
// of rows: one shared-memory read per row for both columns, block stats of both BF16 columns by one
// packed max per row. In mode both, half the warps take the transposed operand and half the
// row-wise one (equal element counts per tile).
template <class Cfg>
FP4JIT_CONSTEXPR int tile_raw_stages() {
  constexpr int kBytes = Cfg::tile_rows * Cfg::tile_cols * in_size(Cfg::in);
  constexpr int kFit = kTileRingBytes / kBytes;
  return kFit < 4 ? kFit : 4;
}
// Double quantization on the raw path: the row-wise pass writes the values its codes stand for
// back into the tile, in the input's own type, where they are exact: FP32, or BF16 with power-of-
// two block scales (E2M1 x 2^e has 2 significant bits, BF16 spans FP32's exponents).
template <class Cfg>
FP4JIT_CONSTEXPR bool tile_raw_requant() {
  using RowOp = typename Cfg::RowOp;
  using ColOp = typename Cfg::ColOp;
  return Cfg::requant && Cfg::mode == Mode::both && Cfg::phase == Phase::quantize &&
         lane_groups<RowOp>() && !RowOp::occ && lane_groups<ColOp>() && !ColOp::occ &&
         (Cfg::in == InType::f32 || (Cfg::in == InType::bf16 && RowOp::scale == ScaleFmt::e8m0));
}
template <class Cfg>
FP4JIT_CONSTEXPR bool tile_raw_path() {
  using RowOp = typename Cfg::RowOp;
  using ColOp = typename Cfg::ColOp;
  constexpr bool kRows = Cfg::mode != Mode::cols, kCols = Cfg::mode != Mode::rows;
  constexpr bool kOps = (!kRows || (lane_groups<RowOp>() && !RowOp::occ)) &&
                        (!kCols || (lane_groups<ColOp>() && !ColOp::occ)) && !Cfg::requant;
  // Whole swizzle groups of 8 chunks per row, at least two ring slots, whole groups per tile.
  return (kOps || tile_raw_requant<Cfg>()) && (Cfg::tile_cols * in_size(Cfg::in)) % 128 == 0 &&
         tile_raw_stages<Cfg>() >= 2 && (!kRows || Cfg::tile_cols % group_size<RowOp>() == 0) &&
         (!kCols || Cfg::tile_rows % group_size<ColOp>() == 0) &&
         (Cfg::mode != Mode::both || Cfg::threads % 64 == 0);
}
// Index of chunk c of row r in a raw tile of kCPR chunks per row: within each aligned run of 8
// chunks (128 bytes, all banks) the chunk moves by XOR with 2r + (c / 8). A quarter warp reading
// 16 bytes each (row groups of 2, 4 or 8 chunks, consecutive lanes on consecutive groups, rows
// from an even one) and a warp reading 32 consecutive 4-byte words of one row both hit 8 distinct
// 16-byte bank groups.
template <int kCPR>
FP4JIT_DEV int raw_chunk(int r, int c) {
  return r * kCPR + (c ^ ((2 * r + (c >> 3)) & 7));
}

// Column sums (Cfg::col_sums: the source's, e.g. a bias gradient) of the tile's 64-row chunks,
// P of quantize/column_sums.cuh, into a.col_sums, from the tile before its units run (double
// quantization writes the tile back; rows and columns past the source are zero in it). One warp
// per (chunk, four columns or column words): lane 4 s + q sums slice s (rows s, s + 8, ..., s +
// 56) of its column, the butterfly adds the slices, lanes 0-3 store. On the raw path the eight
// slices' rows share their swizzle in pairs (2r mod 8): two-way bank conflicts, no barrier; the
// warps kWarp0 .. kWarp0 + kWarps - 1 take the items (tile_sum_warps: those the units leave
// idle, where there are any).
FP4JIT_DEV void store_chunk_sum(const QuantizeArgs& a, i64 chunk, i64 c, float v) {
  if (chunk * kSumChunkRows < a.rows && c < a.cols) a.col_sums[chunk * a.cols + c] = v;
}
// The transposed operand's units in a raw tile of tile_rows x tile_cols elements of in_bytes each
// (tile_raw), for groups of `group` operand elements (source rows). A unit is a column word's row
// group (a 4-byte word: both of a 16-bit word's columns), unless, in a pair's halves (half the CTA
// on each operand), that leaves threads of the transposed operand's half without a unit: then
// each column of a word is a unit of its own (split), so that no warp idles while the others
// carry twice its elements to the tile's barrier (mxfp4's 1 x 32 pairs on 512 threads, one CTA
// per SM: 128 word units for 256 threads, a third of the warps' time spent waiting there;
// Nsight Compute, H200; split, the pair 1.04-1.05x faster). The word is then read by both of its
// columns' lanes (one broadcast read) and its block maxima taken for both columns by each. Not
// for double quantization's column phase (every thread, after the row phase): tetrajet's x pair
// (256 threads, several CTAs per SM to fill the idle lanes' time) lost 2 % split.
struct ColUnits {
  bool split;         // one column per unit
  int lines_per_row;  // units per row group: column words, or columns when split
  int unit_cols;      // columns per unit
  int units;          // per tile
};
FP4JIT_CONSTEXPR ColUnits col_units(bool cols, bool halves, int threads, int tile_rows,
                                    int tile_cols, int in_bytes, int group) {
  const int words = tile_cols * in_bytes / 4, cols_per_word = 4 / in_bytes;
  const int word_units = cols ? words * (tile_rows / group) : 0;
  const bool split = halves && cols_per_word == 2 && word_units < threads / 2;
  const int lines = split ? tile_cols : words;
  return ColUnits{split, lines, split ? 1 : cols_per_word, cols ? lines * (tile_rows / group) : 0};
}

// The warps that sum a raw tile's columns: in mode both (half the CTA on each operand) those of
// a half that its operand's units leave idle (where there are any: tile_raw splits column words
// into one unit per column where they would), else the row-wise operand's half (the transposed
// operand's units read column words and carry the wgrad operands' Hadamard transforms: the
// heavier half); else, one operand, all.
struct WarpRange {
  int first, count;
};
FP4JIT_CONSTEXPR WarpRange sum_warps(int warps, bool halves, int col_units, int row_units) {
  if (halves) {
    const int half = warps / 2, col_busy = (col_units + 31) / 32, row_busy = (row_units + 31) / 32;
    if (col_busy < half) return WarpRange{col_busy, half - col_busy};
    if (row_busy < half) return WarpRange{half + row_busy, half - row_busy};
    return WarpRange{half, half};
  }
  return WarpRange{0, warps};
}
template <class Cfg, int kWarp0, int kWarps>
FP4JIT_DEV void tile_raw_column_sums(const uint4* tile, const QuantizeArgs& a, i64 i0, i64 j0) {
  constexpr int kEsz = in_size(Cfg::in);
  constexpr int kCPR = Cfg::tile_cols * kEsz / 16;
  constexpr int kWords = Cfg::tile_cols * kEsz / 4;  // 4-byte words per tile row
  constexpr int kColsPerWord = 4 / kEsz;
  constexpr int kItems = (Cfg::tile_rows / kSumChunkRows) * (kWords / 4);
  static_assert(Cfg::tile_rows % kSumChunkRows == 0 && kWords % 4 == 0,
                "column sums: tiles of whole 64-row chunks and groups of four words");
  const u32* words = reinterpret_cast<const u32*>(tile);
  const int s = lane_id() / 4, q = lane_id() % 4;
  const int first = warp_id() - kWarp0;
  if (first < 0 || first >= kWarps) return;
  for (int item = first; item < kItems; item += kWarps) {
    const int k = item / (kWords / 4), wg = item % (kWords / 4);
    float lo = 0.0f, hi = 0.0f;
#pragma unroll
    for (int j = 0; j < kSumChunkRows / kSumSlices; ++j) {
      const int r = k * kSumChunkRows + j * kSumSlices + s;
      const u32 x = words[raw_chunk<kCPR>(r, wg) * 4 + q];
      if constexpr (Cfg::in == InType::f32) {
        lo += nx::bits_float(x);
      } else if constexpr (Cfg::in == InType::bf16) {
        lo += nx::bf16_to_float(static_cast<u16>(x & 0xffffu));
        hi += nx::bf16_to_float(static_cast<u16>(x >> 16));
      } else {
        lo += nx::f16_to_float(static_cast<u16>(x & 0xffffu));
        hi += nx::f16_to_float(static_cast<u16>(x >> 16));
      }
    }
    lo = chunk_butterfly(lo);
    if constexpr (kColsPerWord == 2) hi = chunk_butterfly(hi);
    if (s == 0) {
      const i64 chunk = i0 / kSumChunkRows + k, c = j0 + (wg * 4 + q) * kColsPerWord;
      store_chunk_sum(a, chunk, c, lo);
      if constexpr (kColsPerWord == 2) store_chunk_sum(a, chunk, c + 1, hi);
    }
  }
}
template <class Cfg>
FP4JIT_DEV void tile_float_column_sums(const float* tile, const QuantizeArgs& a, i64 i0, i64 j0) {
  constexpr int kPitch = tile_float_pitch<Cfg>();
  constexpr int kItems = (Cfg::tile_rows / kSumChunkRows) * (Cfg::tile_cols / 4);
  static_assert(Cfg::tile_rows % kSumChunkRows == 0 && Cfg::tile_cols % 4 == 0,
                "column sums: tiles of whole 64-row chunks and groups of four columns");
  const int s = lane_id() / 4, q = lane_id() % 4;
  for (int item = warp_id(); item < kItems; item += Cfg::threads / 32) {
    const int k = item / (Cfg::tile_cols / 4), c = (item % (Cfg::tile_cols / 4)) * 4 + q;
    float v = 0.0f;
#pragma unroll
    for (int j = 0; j < kSumChunkRows / kSumSlices; ++j)
      v += tile[(k * kSumChunkRows + j * kSumSlices + s) * kPitch + c];
    v = chunk_butterfly(v);
    if (s == 0) store_chunk_sum(a, i0 / kSumChunkRows + k, j0 + c, v);
  }
}

// CTAs per SM asked of the register allocator on the raw path: 768 threads per SM (at most 85
// registers) where every operand takes the packed encoder, else 512 (128: left free, the allocator
// took up to 209 on the stochastic-rounding kernels, one CTA per SM, tetrajet x pair 0.28 -> 0.41
// ms). cuobjdump -res-usage over the emulator's recipes: no spills, but for 8 bytes of stack in
// the pair kernel of x with 16-bit stochastic rounding; Hadamard kernels are left free (nvfp4's
// dy pair at 256 threads: 144 registers; capped for two CTAs per SM, 116 and no spills, but 1.2x
// slower). The float-tile path without a Hadamard: 768 threads per SM (msfp4's pair kernel 103
// -> 78 registers, no spill in any preset's kernels, the pair 1.05-1.08x). A config's minb= asks
// for its own count instead.
template <class Cfg>
FP4JIT_CONSTEXPR int tile_min_blocks_rule() {
  constexpr bool kRows = Cfg::mode != Mode::cols, kCols = Cfg::mode != Mode::rows;
  constexpr bool kPacked = (!kRows || packed_pow2<typename Cfg::RowOp, Cfg::in>()) &&
                           (!kCols || packed_pow2<typename Cfg::ColOp, Cfg::in>());
  constexpr bool kHadamard = (kRows && Cfg::RowOp::had != 0) || (kCols && Cfg::ColOp::had != 0);
  constexpr int kPerSm = kPacked ? 768 : 512;
  if constexpr (kHadamard || kPerSm % Cfg::threads != 0) return 1;
  if constexpr (!tile_raw_path<Cfg>()) return 768 / Cfg::threads;
  return kPerSm / Cfg::threads;
}
// The config's own ask (minb= in its text), else the rule above.
template <class Cfg>
FP4JIT_CONSTEXPR int tile_min_blocks() {
  return Cfg::min_blocks > 0 ? Cfg::min_blocks : tile_min_blocks_rule<Cfg>();
}

template <class Cfg>
FP4JIT_DEV void tile_raw(const QuantizeArgs& a) {
  using RowOp = typename Cfg::RowOp;
  using ColOp = typename Cfg::ColOp;
  constexpr int kTM = Cfg::tile_rows, kTN = Cfg::tile_cols;
  constexpr int kEsz = in_size(Cfg::in);
  constexpr int kPerLoad = 16 / kEsz;
  constexpr int kCPR = kTN * kEsz / 16;  // 16-byte chunks per tile row
  constexpr int kChunks = kTM * kCPR;
  constexpr int kStages = tile_raw_stages<Cfg>();
  constexpr bool kRows = Cfg::mode != Mode::cols, kCols = Cfg::mode != Mode::rows;
  constexpr bool kStats = Cfg::phase == Phase::stats;
  constexpr int kGR = group_size<RowOp>(), kGC = group_size<ColOp>();
  [[maybe_unused]] constexpr int kRowUnits = kRows ? kTM * (kTN / kGR) : 0;  // a row group each
  constexpr int kColsPerWord = 4 / kEsz;
  constexpr bool kRequant = tile_raw_requant<Cfg>();
  constexpr bool kHalves = kRows && kCols && !kRequant;  // half the CTA on each operand
  constexpr ColUnits kCU = col_units(kCols, kHalves, Cfg::threads, kTM, kTN, kEsz, kGC);
  constexpr bool kSplitCols = kCU.split;
  constexpr int kLinesPerRow = kCU.lines_per_row;  // a unit's columns: one line
  constexpr int kUnitCols = kCU.unit_cols;
  [[maybe_unused]] constexpr int kColUnits = kCU.units;
  constexpr WarpRange kSumWarps = sum_warps(Cfg::threads / 32, kHalves, kColUnits, kRowUnits);
  __shared__ __align__(16) uint4 ring[kStages * kChunks];

  TilePass<Cfg> pass(a);
  tile_factor_tables(pass);
  // Double quantization's kernels (at their register cap) keep the walk in 64-bit arithmetic:
  // with 32-bit moves ptxas held it in vector registers there and spilled (tetrajet's x pair).
  using Walk = typename TilePass<Cfg>::template WalkOf<typename Pick<kRequant, i64, int>::type>;
  const int tiles = static_cast<int>(pass.tiles);  // below 2^30: the launch refuses more
  const bool vector_ok = a.vector_ok != 0u;
  const char* in = static_cast<const char*>(a.in);
  const int tid = static_cast<int>(threadIdx.x);
  u32 row_max = 0u, col_max = 0u;
  // Tiles inside the source (tile row < in_r, tile column < in_c): whole 16-byte loads, no
  // bounds. i0 + kTM <= rows exactly when r < rows / kTM.
  const int in_r = bound32(a.rows / kTM), in_c = bound32(a.cols / kTN);
  // A thread's chunks of a tile share a column and step kRowStep rows, which keeps their swizzle
  // (raw_chunk's term 2r & 7 repeats every 4 rows): inside the tensor, one address and offsets,
  // the thread's part of them (its chunk's slot and source offset from the tile's corner) set
  // apart from the tile's.
  constexpr int kRowStep = Cfg::threads / kCPR;
  constexpr bool kStrided =
      Cfg::threads % kCPR == 0 && kRowStep % 4 == 0 && kChunks % Cfg::threads == 0;
  const int q_r = tid / kCPR, q_c = tid % kCPR;
  const i64 q_src = static_cast<i64>(q_r) * a.stride * kEsz + q_c * 16;
  const i64 q_step = static_cast<i64>(kRowStep) * a.stride * kEsz;
  const int q_dst = raw_chunk<kCPR>(q_r, q_c);
  const auto issue = [&](const Walk& w, int stage) {
    uint4* slot = ring + stage * kChunks;
    const i64 i0 = w.i0(), j0 = w.j0();
    if constexpr (kStrided) {
      if (vector_ok && w.r < in_r && w.c < in_c) {
        const char* src = in + (i0 * a.stride + j0) * kEsz + q_src;
        uint4* dst = slot + q_dst;
#pragma unroll
        for (int k = 0; k < kChunks / Cfg::threads; ++k)
          cp_async16(dst + k * kRowStep * kCPR, src + k * q_step, 16);
        return;
      }
    }
    for (int q = tid; q < kChunks; q += Cfg::threads) {
      const int r = q / kCPR, c = q % kCPR;
      const i64 i = i0 + r;
      // Rows past the tensor: an empty row (zero-filled).
      fetch16<kEsz>(slot + raw_chunk<kCPR>(r, c), i < a.rows ? in + i * a.stride * kEsz : in,
                    j0 + static_cast<i64>(c) * kPerLoad, i < a.rows ? a.cols : 0, vector_ok);
    }
  };

  constexpr bool kRowRawSigns =
      kRows && !kStats && !kRequant && Cfg::in == InType::bf16 && RowOp::had == 0 && !RowOp::occ;
  // Row-wise unit u of the tile at (i0, j0): group u % (kTN / kGR) of tile row u / (kTN / kGR)
  // (consecutive lanes on consecutive groups of a row: their code stores are contiguous).
  const auto row_unit = [&](bool whole, uint4* tile, int u, i64 i0, i64 j0) {
    if constexpr (kRows) {
      constexpr int kGroupsPerRow = kTN / kGR;
      constexpr int kGChunks = kGR / kPerLoad;
      const int r = u / kGroupsPerRow, g = u % kGroupsPerRow;
      const i64 row = i0 + r, c0 = j0 + static_cast<i64>(g) * kGR;
      int n = kGR;
      if (!whole) {
        const i64 left = a.row.cols - c0;
        n = row >= a.row.rows || left <= 0 ? 0 : (left >= kGR ? kGR : static_cast<int>(left));
        if (n == 0) return;
      }
      uint4 cur[kGChunks];
#pragma unroll
      for (int l = 0; l < kGChunks; ++l) cur[l] = tile[raw_chunk<kCPR>(r, g * kGChunks + l)];
      float v[kGR];
      u32 m[kGR / RowOp::block_cols];
      const bool given = group_from_chunks<RowOp, Cfg::in>(cur, 0, v, m);
      if constexpr (packed_pow2<RowOp, Cfg::in>()) {
        u32 p[kGR / 2];
        pairs_from_chunks<RowOp>(cur, 0, p);
        quantize_group<RowOp, kStats, kRequant, true>(v, given, m, row, c0, n, a.row,
                                                      pass.row.s_enc, pass.row.tl, a.seed, a.offset,
                                                      pass.row.want_max, row_max, p, whole);
      } else if constexpr (kRowRawSigns) {
        // The codes' signs from the BF16 input (the encoded values are it scaled by a positive
        // factor), as the rows kernel takes them: no funnel shift per element.
        u32 raw[kGR / 2];
        words_from_chunks<kGR>(cur, 0, raw);
        quantize_group<RowOp, kStats, false, false, false, true>(
            v, given, m, row, c0, n, a.row, pass.row.s_enc, pass.row.tl, a.seed, a.offset,
            pass.row.want_max, row_max, raw, whole);
      } else {
        quantize_group<RowOp, kStats, kRequant, false>(
            v, given, m, row, c0, n, a.row, pass.row.s_enc, pass.row.tl, a.seed, a.offset,
            pass.row.want_max, row_max, nullptr, whole);
      }
      if constexpr (kRequant) {
        // The dequantized values (exact in the input type) replace the group's input.
#pragma unroll
        for (int l = 0; l < kGChunks; ++l) {
          u32 w[4];
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            if constexpr (Cfg::in == InType::f32) {
              w[k] = nx::float_bits(v[4 * l + k]);
            } else {
              w[k] = (nx::float_bits(v[8 * l + 2 * k]) >> 16) |
                     (nx::float_bits(v[8 * l + 2 * k + 1]) & 0xffff0000u);
            }
          }
          tile[raw_chunk<kCPR>(r, g * kGChunks + l)] = make_uint4(w[0], w[1], w[2], w[3]);
        }
      }
    }
  };
  // Transposed unit u: line u % kLinesPerRow (a column word, or with kSplitCols one column) over
  // the tile rows of group u / kLinesPerRow.
  // Parted: a tile of kParts row groups making 32 bytes of codes per operand row (a full sector),
  // whose warps each take 32 / kParts lines over all the groups (lane l: line l % (32 /
  // kParts), group l / (32 / kParts)); the kParts pieces of an operand row (codes and scales) meet
  // in adjacent lanes by shuffles, and whole tiles store them as full 32-byte sectors (one lane
  // per piece filled a sector by halves or quarters: a third of the pair kernel's L2 sectors).
  constexpr int kParts = kTM / kGC;
  constexpr int kPartWords = 32 / kParts;  // lines per warp
  // Taken in two parts (1 x 32 groups: mxfp4, tetrajet) or four (1 x 16 groups: nvfp4, ue5m3,
  // whose transposed codes otherwise left in quarter sectors, their scale bytes one sector each:
  // 1024 of a 64 x 128 tile's 1216 store sectors, the L2 at 78 % of its throughput). Not by
  // operands that round stochastically off the packed encoder: their kernels sit at the register
  // cap already (nvfp4's dy pair 116 of 128 at 512 threads), and the deferred codes spilled them.
  constexpr bool kPartedCols =
      kCols && !kStats && (kParts == 2 || kParts == 4) && kTM == 64 &&
      kLinesPerRow % kPartWords == 0 && scale_is_code(ColOp::scale) &&
      kGC / ColOp::block_cols <= 2 &&
      (packed_pow2<ColOp, Cfg::in>() || ColOp::round != nx::Round::stochastic);
  const auto col_store_parted = [&](const GroupCodes<ColOp>& gc, int u, int h, i64 i0, i64 j0) {
    if constexpr (kPartedCols) {
      constexpr int kBlocks = kGC / ColOp::block_cols;
      const int lane = lane_id();
      const int src = (lane % kParts) * kPartWords + lane / kParts;
      u32 wv[kGC / 8];
#pragma unroll
      for (int k = 0; k < kGC / 8; ++k) wv[k] = __shfl_sync(0xffffffffu, gc.words[k], src);
      u32 sc = gc.scales[0];
      if constexpr (kBlocks == 2) sc |= gc.scales[1] << 8;
      sc = __shfl_sync(0xffffffffu, sc, src);
      const int line = (u >> 5) * kPartWords + lane / kParts;
      const i64 orow =
          j0 + (kSplitCols ? static_cast<i64>(line) : static_cast<i64>(line) * kColsPerWord + h);
      const i64 c0 = i0 + static_cast<i64>(lane % kParts) * kGC;
      u8* dst = a.col.codes + orow * a.col.row_bytes + (c0 >> 1);
      if constexpr (kGC == 32)
        *reinterpret_cast<uint4*>(dst) = uint4{wv[0], wv[1], wv[2], wv[3]};
      else
        *reinterpret_cast<uint2*>(dst) = uint2{wv[0], wv[1]};
      u8* sdst = static_cast<u8*>(a.col.scales) + block_index<ColOp>(orow, c0, a.col.scale_cols);
      if constexpr (kBlocks == 1) {
        *sdst = static_cast<u8>(sc);
      } else {
        *reinterpret_cast<u16*>(sdst) = static_cast<u16>(sc);  // an even block index
      }
    }
  };
  // Transposed unit u's column word w, its first column h0 in it, and its row group rg.
  struct ColPlace {
    int w, h0, rg;
  };
  const auto col_place = [&](int u) {
    const int line = kPartedCols ? (u >> 5) * kPartWords + u % kPartWords : u % kLinesPerRow;
    const int rg = kPartedCols ? (u & 31) / kPartWords : u / kLinesPerRow;
    return ColPlace{kSplitCols ? line / kColsPerWord : line, kSplitCols ? line % kColsPerWord : 0,
                    rg};
  };
  // Random words drawn ahead: where the transposed half of a pair carries a Hadamard transform
  // and stochastic rounding, its units' Philox calls (about 90 of nvfp4's dY pair's 970
  // instructions per warp and tile, against the row-wise half's 760) are made by the row-wise
  // half one tile ahead, into shared memory (call j of unit u at [j][u]: 16-byte words of
  // consecutive units side by side), double-buffered between the tiles' barriers. Only where
  // every group's first index is a multiple of a call's elements (the caller's offset and the
  // operand's row length), else each unit draws its own; and only for tiles whose words fit 16 KB
  // a buffer (nvfp4's dY pair: 8 KB).
  constexpr bool kPreRandOp = kHalves && !kStats && ColOp::round == nx::Round::stochastic &&
                              ColOp::had != 0 && !packed_pow2<ColOp, Cfg::in>() && !kPartedCols;
  constexpr int kRandPer = kPreRandOp ? 128 / ColOp::sr_bits : kGC;  // elements per Philox call
  constexpr int kCallsPerGroup = kGC / kRandPer;
  constexpr int kPreWordsWanted = kColUnits * kUnitCols * kCallsPerGroup;
  constexpr bool kPreRand = kPreRandOp && kPreWordsWanted * 16 <= 16 * 1024;
  constexpr int kPreWords = kPreRand ? kPreWordsWanted : 1;
  __shared__ uint4 pre_rand[2 * kPreWords];
  const bool pre_ok = kPreRand && a.offset % kRandPer == 0 && a.col.cols % kRandPer == 0;
  int pre_at = 0;  // the buffer of the tile being quantized
  // Buffer buf's first call of unit u's column hh (its later calls kColUnits words apart).
  const auto pre_slot = [&](int buf, int u, int hh) {
    return pre_rand + buf * kPreWords + hh * kCallsPerGroup * kColUnits + u;
  };
  // The row-wise half's thread `first` draws for the units first, first + threads / 2, ... of the
  // tile at (i0, j0), into buffer `buf`.
  const auto draw_col_rand = [&](int buf, int first, i64 i0, i64 j0) {
    if constexpr (kPreRand) {
      for_units<kColUnits, Cfg::threads / 2, false>(first, [&](int u) {
        const ColPlace cp = col_place(u);
        const i64 c0 = i0 + static_cast<i64>(cp.rg) * kGC;
#pragma unroll
        for (int hh = 0; hh < kUnitCols; ++hh) {
          const i64 orow = j0 + static_cast<i64>(cp.w) * kColsPerWord + cp.h0 + hh;
          const u64 block = sr_index(a.col, a.offset, orow, c0) / kRandPer;
          uint4* dst = pre_slot(buf, u, hh);
#pragma unroll
          for (int c = 0; c < kCallsPerGroup; ++c) {
            const nx::U32x4 r = nx::sr_block(a.seed, block + c);
            dst[c * kColUnits] = make_uint4(r.v[0], r.v[1], r.v[2], r.v[3]);
          }
        }
      });
    }
  };
  const auto col_unit = [&](bool whole, const uint4* tile, int u, i64 i0, i64 j0) {
    if constexpr (kCols) {
      constexpr int kBlocks = kGC / ColOp::block_cols;
      constexpr bool kPacked = Cfg::in == InType::bf16 && ColOp::had == 0;
      const ColPlace cp = col_place(u);
      const int w = cp.w, h0 = cp.h0, rg = cp.rg;      // column word, first column, row group
      const i64 c0 = i0 + static_cast<i64>(rg) * kGC;  // operand column (source row)
      int n = kGC;
      if (!whole) {
        const i64 left = a.col.cols - c0;
        n = left <= 0 ? 0 : (left >= kGC ? kGC : static_cast<int>(left));
        if (n == 0) return;
      }
      const u32* words = reinterpret_cast<const u32*>(tile);
      u32 x[kGC];
#pragma unroll
      for (int e = 0; e < kGC; ++e) {
        const int r = rg * kGC + e;
        x[e] = words[raw_chunk<kCPR>(r, w / 4) * 4 + w % 4];
      }
      u32 mm[kBlocks];
      if constexpr (kPacked) {
#pragma unroll
        for (int b = 0; b < kBlocks; ++b)
          mm[b] = absmax_bf16x2_tree<ColOp::block_cols>(x + b * ColOp::block_cols);
      }
#pragma unroll
      for (int h = h0; h < h0 + kUnitCols; ++h) {
        const i64 orow =
            j0 + static_cast<i64>(w) * kColsPerWord + h;  // operand row (source column)
        if (!whole && orow >= a.col.rows) break;
        float v[kGC];
#pragma unroll
        for (int e = 0; e < kGC; ++e) {
          if constexpr (Cfg::in == InType::f32) {
            v[e] = nx::bits_float(x[e]);
          } else {
            const u16 half = static_cast<u16>(h == 0 ? (x[e] & 0xffffu) : (x[e] >> 16));
            v[e] = Cfg::in == InType::bf16 ? nx::bf16_to_float(half) : nx::f16_to_float(half);
          }
        }
        u32 m[kBlocks];
        if constexpr (kPacked) {
#pragma unroll
          for (int b = 0; b < kBlocks; ++b)
            m[b] = h == 0 ? (mm[b] & 0x7fffu) << 16 : mm[b] & 0x7fff0000u;
        }
        if constexpr (packed_pow2<ColOp, Cfg::in>()) {
          u32 p[kGC / 2];
          pairs_from_column_words<kGC>(x, h, p);
          if (kPartedCols && whole) {
            GroupCodes<ColOp> gc;
            quantize_group<ColOp, kStats, false, true, kPartedCols>(
                v, kPacked, m, orow, c0, n, a.col, pass.col.s_enc, pass.col.tl, a.seed, a.offset,
                pass.col.want_max, col_max, p, true, &gc);
            col_store_parted(gc, u, h, i0, j0);
          } else {
            quantize_group<ColOp, kStats, false, true>(
                v, kPacked, m, orow, c0, n, a.col, pass.col.s_enc, pass.col.tl, a.seed, a.offset,
                pass.col.want_max, col_max, p, whole);
          }
        } else if (kPartedCols && whole) {
          GroupCodes<ColOp> gc;
          quantize_group<ColOp, kStats, false, false, kPartedCols>(
              v, kPacked, m, orow, c0, n, a.col, pass.col.s_enc, pass.col.tl, a.seed, a.offset,
              pass.col.want_max, col_max, nullptr, true, &gc);
          col_store_parted(gc, u, h, i0, j0);
        } else {
          PreRand pre{};
          if (kPreRand && pre_ok) pre = PreRand{pre_slot(pre_at, u, h - h0), kColUnits};
          quantize_group<ColOp, kStats, false, false>(
              v, kPacked, m, orow, c0, n, a.col, pass.col.s_enc, pass.col.tl, a.seed, a.offset,
              pass.col.want_max, col_max, nullptr, whole, nullptr, pre);
        }
      }
    }
  };

  const int t0 = static_cast<int>(blockIdx.x), tstep = static_cast<int>(gridDim.x);
  Walk ahead_at(pass, t0, tstep);
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (t0 + s * tstep < tiles) issue(ahead_at, s);
    cp_async_commit();
    ahead_at.next();
  }
  Walk at(pass, t0, tstep);
  if (kPreRand && pre_ok && tid >= Cfg::threads / 2 && t0 < tiles)
    draw_col_rand(0, tid - Cfg::threads / 2, at.i0(), at.j0());  // before the first barrier
  int stage = 0;
  // Tiles whose units are all whole (inside both operands: no bounds to check, and code rows
  // whose 16-byte stores need no alignment test): tile row < whole_r and column < whole_c.
  const bool aligned =
      (!kRows || a.row.row_bytes % 16 == 0) && (!kCols || a.col.row_bytes % 16 == 0);
  int whole_r = aligned ? 2147483647 : 0, whole_c = whole_r;
  if constexpr (kRows) {
    whole_r = imin(whole_r, bound32(a.row.rows / kTM));
    whole_c = imin(whole_c, bound32(a.row.cols / kTN));
  }
  if constexpr (kCols) {
    whole_r = imin(whole_r, bound32(a.col.cols / kTM));
    whole_c = imin(whole_c, bound32(a.col.rows / kTN));
  }
  for (int t = t0; t < tiles; t += tstep, at.next(), ahead_at.next()) {
    // The slot of the tile quantized last round takes the tile kStages - 1 rounds ahead.
    if (t + (kStages - 1) * tstep < tiles) issue(ahead_at, stage == 0 ? kStages - 1 : stage - 1);
    cp_async_commit();
    cp_async_wait<kStages - 1>();
    __syncthreads();
    const i64 i0 = at.i0(), j0 = at.j0();
    uint4* tile = ring + stage * kChunks;
    if constexpr (Cfg::col_sums)
      tile_raw_column_sums<Cfg, kSumWarps.first, kSumWarps.count>(tile, a, i0, j0);
    // The tile's units, for a tile whose units are all whole (inside both operands: no bounds
    // to check, stores of whole groups) or not.
    // Units unrolled where every operand takes the packed encoder (at most 85 registers and no
    // spills: the stochastic-rounding kernels spilled under their cap of 128 with two units live).
    constexpr bool kUnrollUnits = tile_min_blocks_rule<Cfg>() == 3;
    const auto units = [&](bool whole) {
      if constexpr (kRequant) {
        // The transposed operand reads what the row-wise pass wrote.
        for_units<kRowUnits, Cfg::threads, kUnrollUnits>(
            tid, [&](int u) { row_unit(whole, tile, u, i0, j0); });
        __syncthreads();
        for_units<kColUnits, Cfg::threads, kUnrollUnits>(
            tid, [&](int u) { col_unit(whole, tile, u, i0, j0); });
      } else if constexpr (kRows && kCols) {
        constexpr int kHalf = Cfg::threads / 2;
        if (tid < kHalf) {
          for_units<kColUnits, kHalf, kUnrollUnits>(
              tid, [&](int u) { col_unit(whole, tile, u, i0, j0); });
        } else {
          for_units<kRowUnits, kHalf, kUnrollUnits>(
              tid - kHalf, [&](int u) { row_unit(whole, tile, u, i0, j0); });
          // The next tile's random words: its transposed units read them after the next barrier;
          // the other buffer's readers were done before this tile's.
          if (kPreRand && pre_ok && t + tstep < tiles) {
            Walk ahead = at;
            ahead.next();
            draw_col_rand(pre_at ^ 1, tid - kHalf, ahead.i0(), ahead.j0());
          }
        }
      } else if constexpr (kRows) {
        for_units<kRowUnits, Cfg::threads, kUnrollUnits>(
            tid, [&](int u) { row_unit(whole, tile, u, i0, j0); });
      } else {
        for_units<kColUnits, Cfg::threads, kUnrollUnits>(
            tid, [&](int u) { col_unit(whole, tile, u, i0, j0); });
      }
    };
    if (at.r < whole_r && at.c < whole_c)
      units(true);
    else
      units(false);
    __syncthreads();  // every thread is done with the slot before it is refilled
    stage = stage + 1 == kStages ? 0 : stage + 1;
    pre_at ^= 1;
  }
  cp_async_wait<0>();
  if constexpr (kRows) tile_finish<Cfg, RowOp>(a.row, row_max);
  if constexpr (kCols) tile_finish<Cfg, ColOp>(a.col, col_max);
}

// The float-tile path (every other operand set).
template <class Cfg>
FP4JIT_DEV void tile_float(const QuantizeArgs& a) {
  using RowOp = typename Cfg::RowOp;
  using ColOp = typename Cfg::ColOp;
  constexpr int kTM = Cfg::tile_rows, kTN = Cfg::tile_cols, kPitch = tile_float_pitch<Cfg>();
  constexpr bool kRows = Cfg::mode != Mode::cols, kCols = Cfg::mode != Mode::rows;
  constexpr bool kStats = Cfg::phase == Phase::stats;
  constexpr int kSegsPerRow = kTN / kVec;
  constexpr int kLoads = kTM * kSegsPerRow / Cfg::threads;
  constexpr int kRaw = in_size(Cfg::in) * kVec / 16;  // 16-byte loads per segment
  static_assert(operand_ok<RowOp>() && operand_ok<ColOp>(),
                "operand not supported by the CUDA kernels");
  static_assert(kTN % kVec == 0 && (kTM * kSegsPerRow) % Cfg::threads == 0,
                "tile must split evenly into loads");
  static_assert(!Cfg::requant || Cfg::mode == Mode::both,
                "double quantization reads the row-wise copy");
  // Operands taken by lane-owned groups (double quantization's row pass writes the tile back:
  // segments).
  // 16 x 16 blocks (every operand of the pass) as lane groups where a warp's 32 units are 32
  // consecutive lines of one operand and one group column (tile sides multiples of 32) and every
  // thread runs every pass of the unit loop (the block maxima are shuffles over whole warps);
  // other tiles keep the segments.
  constexpr bool k2d = tile_float_2d<Cfg>();
  constexpr bool kRowGroups = kRows && (lane_groups<RowOp>() || k2d) && !Cfg::requant;
  constexpr bool kColGroups = kCols && (lane_groups<ColOp>() || k2d) && !Cfg::requant;
  constexpr int kRowUnits = kRowGroups ? kTM * (kTN / group_size<RowOp>()) : 0;
  constexpr int kColUnits = kColGroups ? kTN * (kTM / group_size<ColOp>()) : 0;
  static_assert(!kRowGroups || kTN % group_size<RowOp>() == 0, "tile holds whole groups");
  static_assert(!kColGroups || kTM % group_size<ColOp>() == 0, "tile holds whole groups");
  // A pair of 16 x 16 lane-group operands with the same codes per block (NVFP4's w + wt): the
  // transposed copy is the row-wise one transposed (tile_group_both) where, at run time, both take
  // the same s_enc and every block lies wholly in or out of the operand (sides multiples of 16),
  // with rows of codes whole 8-byte words.
  constexpr bool kDerive = tile_float_derive<Cfg>();

  __shared__ __align__(16) float tile[kTM * kPitch];
  __shared__ u32 acc_row[TileAcc<RowOp, kTM, kTN>::kSize];
  __shared__ u32 acc_col[TileAcc<ColOp, kTN, kTM>::kSize];
  __shared__ BlockScale row_col_scales[ColumnScales<Cfg, RowOp, false>::kSize];
  __shared__ BlockScale col_col_scales[ColumnScales<Cfg, ColOp, true>::kSize];

  TilePass<Cfg> pass(a);
  tile_factor_tables(pass);
  const i64 tiles = pass.tiles;
  const bool vector_ok = a.vector_ok != 0u;
  const char* in = static_cast<const char*>(a.in);
  const bool derive = kDerive && nx::float_bits(pass.row.s_enc) == nx::float_bits(pass.col.s_enc) &&
                      a.rows % 16 == 0 && a.cols % 16 == 0 && a.row.row_bytes % 8 == 0 &&
                      a.col.row_bytes % 8 == 0;
  const bool want_both = pass.row.want_max || pass.col.want_max;
  // Both copies from the row-wise codes (tile_float_same): where both read the same stat words
  // and the row-wise pass takes the global amax whenever the transposed copy wants it.
  constexpr bool kSame = tile_float_same<Cfg>();
  const bool same =
      kSame && a.row.stats == a.col.stats && (!pass.col.want_max || pass.row.want_max);

  for (int i = static_cast<int>(threadIdx.x); i < TileAcc<RowOp, kTM, kTN>::kSize;
       i += Cfg::threads)
    acc_row[i] = 0u;
  for (int i = static_cast<int>(threadIdx.x); i < TileAcc<ColOp, kTN, kTM>::kSize;
       i += Cfg::threads)
    acc_col[i] = 0u;

  // The amaxes this thread saw.
  u32 row_max = 0u, col_max = 0u;

  // 16-byte loads of tile t in flight (segments fully in range), the rest read when stored.
  uint4 raw[kLoads][kRaw];
  bool raw_ok[kLoads];
  const auto fetch = [&](i64 i0, i64 j0) {
#pragma unroll
    for (int l = 0; l < kLoads; ++l) {
      const int idx = static_cast<int>(threadIdx.x) + l * Cfg::threads;
      const i64 i = i0 + idx / kSegsPerRow, j = j0 + (idx % kSegsPerRow) * kVec;
      raw_ok[l] = vector_ok && i < a.rows && j + kVec <= a.cols;
      if (raw_ok[l]) {
        const char* p = in + (i * a.stride + j) * in_size(Cfg::in);
#pragma unroll
        for (int q = 0; q < kRaw; ++q) raw[l][q] = load16(p + 16 * q, !kStats);
      }
    }
  };

  typename TilePass<Cfg>::Walk at(pass, blockIdx.x, gridDim.x), next_at = at;
  next_at.next();
  i64 t = blockIdx.x;
  if (t < tiles) fetch(at.i0(), at.j0());
  for (; t < tiles; t += gridDim.x, at.next(), next_at.next()) {
    const i64 i0 = at.i0(), j0 = at.j0();
    // Store tile t (widened, OCC-clamped) into shared memory.
#pragma unroll
    for (int l = 0; l < kLoads; ++l) {
      const int idx = static_cast<int>(threadIdx.x) + l * Cfg::threads;
      const int tr = idx / kSegsPerRow, tc = (idx % kSegsPerRow) * kVec;
      const i64 i = i0 + tr, j = j0 + tc;
      float v[kVec];
      int n = kVec;
      if (raw_ok[l]) {
#pragma unroll
        for (int q = 0; q < kRaw; ++q) widen<Cfg::in>(raw[l][q], v + q * (16 / in_size(Cfg::in)));
      } else {
        const i64 left = a.cols - j;
        n = i >= a.rows || left <= 0 ? 0 : (left >= kVec ? kVec : static_cast<int>(left));
        load_vec<Cfg::in>(a.in, i * a.stride + j, n, false, !kStats, v);
      }
      constexpr bool kOcc = (kRows && RowOp::occ) || (kCols && ColOp::occ);
      if constexpr (kOcc) {
        if (n > 0) {
          const float* lohi = kRows ? a.row.lohi : a.col.lohi;
          const float lo = lohi[2 * i], hi = lohi[2 * i + 1];
#pragma unroll
          for (int e = 0; e < kVec; ++e)
            if (e < n) v[e] = v[e] < lo ? lo : (v[e] > hi ? hi : v[e]);
        }
      }
      if constexpr (kPitch % 4 == 0 && kVec % 4 == 0) {
        float4* dst = reinterpret_cast<float4*>(tile + tr * kPitch + tc);
#pragma unroll
        for (int q = 0; q < kVec / 4; ++q)
          dst[q] = make_float4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]);
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) tile[tr * kPitch + tc + e] = v[e];
      }
    }
    if constexpr (kRows) fill_column_scales<Cfg, RowOp, false>(row_col_scales, a.row, i0, j0);
    if constexpr (kCols) fill_column_scales<Cfg, ColOp, true>(col_col_scales, a.col, i0, j0);
    __syncthreads();
    if constexpr (Cfg::col_sums) {
      tile_float_column_sums<Cfg>(tile, a, i0, j0);
      if (kSame && same) __syncthreads();  // the row-wise pass writes codes over the values
    }
    // The next tile's loads fly while this one is quantized.
    if (t + gridDim.x < tiles) fetch(next_at.i0(), next_at.j0());

    if constexpr (kRowGroups || kColGroups) {
      if (kDerive && derive) {  // both copies from the row-wise units
        for (int u = static_cast<int>(threadIdx.x); u < kRowUnits; u += Cfg::threads)
          if constexpr (kDerive)
            tile_group_both<Cfg, RowOp, ColOp>(tile, u, a.row, a.col, i0, j0, pass.row.s_enc,
                                               pass.row.tl, want_both, row_max);
      } else {
        for (int u = static_cast<int>(threadIdx.x); u < kRowUnits + kColUnits; u += Cfg::threads) {
          if (u < kRowUnits) {
            if constexpr (kRowGroups)
              tile_group<Cfg, RowOp, false>(tile, u, a.row, i0, j0, pass.row.s_enc, pass.row.tl,
                                            a.seed, a.offset, pass.row.want_max, row_max);
          } else {
            if constexpr (kColGroups)
              tile_group<Cfg, ColOp, true>(tile, u - kRowUnits, a.col, i0, j0, pass.col.s_enc,
                                           pass.col.tl, a.seed, a.offset, pass.col.want_max,
                                           col_max);
          }
        }
      }
    }
    if constexpr (kRows && !kRowGroups)
      tile_operand<Cfg, RowOp, false>(tile, acc_row, a.row, i0, j0, a.seed, a.offset, row_max,
                                      row_col_scales, same);
    if constexpr (kRows && kCols && Cfg::requant) __syncthreads();
    if constexpr (kCols && !kColGroups) {
      if (kSame && same) {
        __syncthreads();  // the row-wise codes are in the tile
        if constexpr (kSame) tile_codes_transposed<Cfg, ColOp>(tile, a.col, i0, j0);
      } else {
        tile_operand<Cfg, ColOp, true>(tile, acc_col, a.col, i0, j0, a.seed, a.offset, col_max,
                                       col_col_scales);
      }
    }
    __syncthreads();  // the tile and the accumulators are free again
    if constexpr (kStats) {
      if constexpr (kRows) tile_flush<Cfg, RowOp, false>(acc_row, a.row, i0, j0);
      if constexpr (kCols) tile_flush<Cfg, ColOp, true>(acc_col, a.col, i0, j0);
      __syncthreads();
    }
  }
  if (derive || same) col_max = row_max;  // the same elements
  if constexpr (kRows) tile_finish<Cfg, RowOp>(a.row, row_max);
  if constexpr (kCols) tile_finish<Cfg, ColOp>(a.col, col_max);
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::threads, tile_min_blocks<Cfg>())
    quantize_tile(QuantizeArgs a) {
  static_assert(operand_ok<typename Cfg::RowOp>() && operand_ok<typename Cfg::ColOp>(),
                "operand not supported by the CUDA kernels");
  // Column sums are of the source as given: not of OCC-clamped tiles, not in a stats pass.
  static_assert(!Cfg::col_sums || (Cfg::phase == Phase::quantize &&
                                   !(Cfg::mode != Mode::cols && Cfg::RowOp::occ) &&
                                   !(Cfg::mode != Mode::rows && Cfg::ColOp::occ)),
                "column sums: quantize phase, no OCC");
  resolve_seed<Cfg, typename Cfg::RowOp, typename Cfg::ColOp>(a);
  if constexpr (tile_raw_path<Cfg>()) {
    tile_raw<Cfg>(a);
  } else {
    tile_float<Cfg>(a);
  }
}

}  // namespace fp4jit::kern
