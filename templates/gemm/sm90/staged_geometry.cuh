// Tile geometry and shared-memory layout of the staged sm90 GEMM (staged.cuh) as plain constexpr
// C++: the kernel's traits derive from it and the host library computes the same numbers for the
// launch and the scratch it allocates.
//
// Per K tile every row holds 128 bytes of the expanded operand (128 E4M3 elements, or 64 FP16 /
// BF16): one 128-byte swizzle atom row, consumed by 4 wgmma K steps of 32 bytes.
#pragma once
#include "gemm/sm90/config.cuh"

namespace fp4jit::sm90 {

struct StagedGeometry {
  bool fp8;           // E4M3 operands (QGMMA), else FP16 / BF16 (HGMMA)
  bool promote;       // promotion per segment with factors (mx, ms_grad)
  bool a_factor;      // per-(segment, row) factors of A (mx)
  bool b_factor;      // per-segment factors of B, applied at promotion (ms_grad)
  bool b_col_factor;  // one factor per row of B over all of K, applied per column of D in the
                      // epilogue (mx: promotion then scales by A's row factors alone)
  int block_k;        // elements per K tile
  int elem_bytes;     // bytes per expanded element
  int a_bytes, b_bytes, stage_bytes;
  int a_factor_bytes, b_factor_bytes, factor_stage_bytes;
  int epi_bytes;  // the TMA-store epilogue's tile of D (0: D stored from registers)
  int factor_offset, epi_offset, barrier_offset, scratch_offset;
  int smem_bytes;  // dynamic shared memory to launch with
  int threads;
  unsigned tma_bytes;   // bytes one stage receives: its tiles, plus the factors on a segment's last
  unsigned tile_bytes;  // ... and on its other K tiles
};

// Bytes per element of D in the TMA-store epilogue's tile (0: no tile, D stored from registers).
FP4JIT_GEMM_CONSTEXPR int staged_epi_out_bytes(bool tma_store, bool f32_out) {
  return tma_store ? (f32_out ? 4 : 2) : 0;
}

// out_bytes: bytes per element of D when the epilogue stores through shared memory and TMA
// (Cfg::kTmaStore), else 0. Its buffer holds the whole 128 x block_n tile as 128-byte rows of
// 128 / out_bytes columns (one chunk of 64 rows per consumer warpgroup and column group), 1024-byte
// aligned for the 128-byte swizzle.
FP4JIT_GEMM_CONSTEXPR StagedGeometry staged_geometry(ScaleKind kind, int block_n, int stages,
                                                     int out_bytes = 0) {
  StagedGeometry g{};
  g.fp8 = kind == ScaleKind::ms || kind == ScaleKind::mx;
  g.promote = kind == ScaleKind::mx || kind == ScaleKind::ms_grad;
  g.a_factor = kind == ScaleKind::mx;
  g.b_factor = kind == ScaleKind::ms_grad;
  g.b_col_factor = kind == ScaleKind::mx;
  g.elem_bytes = g.fp8 ? 1 : 2;
  g.block_k = 128 / g.elem_bytes;
  g.a_bytes = 128 * 128;
  g.b_bytes = block_n * 128;
  g.stage_bytes = g.a_bytes + g.b_bytes;  // multiples of 1024: every stage is swizzle-atom aligned
  g.a_factor_bytes = g.a_factor ? 128 * 4 : 0;
  g.b_factor_bytes = g.b_factor ? block_n * 4 : 0;
  g.factor_stage_bytes = g.a_factor_bytes + g.b_factor_bytes;
  g.factor_offset = stages * g.stage_bytes;
  g.epi_bytes = out_bytes > 0 ? 128 * block_n * out_bytes : 0;
  const int factors_end = g.factor_offset + stages * g.factor_stage_bytes;
  g.epi_offset = g.epi_bytes > 0 ? (factors_end + 1023) / 1024 * 1024 : factors_end;
  g.barrier_offset = g.epi_offset + g.epi_bytes;
  g.scratch_offset = g.barrier_offset + 2 * stages * 8;
  g.smem_bytes = g.scratch_offset + 16 + 1024;  // split-K flag + alignment slack
  g.threads = 384;
  g.tma_bytes = static_cast<unsigned>(g.stage_bytes + g.factor_stage_bytes);
  g.tile_bytes = static_cast<unsigned>(g.stage_bytes);
  return g;
}

// The swapped small-M kernel (swap.cuh; mx and nv): D^T = W X^T with W (operand B, N rows) packed
// in shared memory and expanded by the consumers straight into register fragments, X (operand A,
// M rows, expanded once by staged_expand.cuh) as the shared-memory operand. Per stage (a K tile of
// 128 elements): W's packed tile (128 rows x 64 bytes, 64-byte swizzle), X's expanded tile
// (block_t rows x 128 elements: E4M3 for mx, one 128-byte swizzle atom per row; FP16 / BF16 for
// nv, two atoms of 64 elements, the second block_t * 128 bytes after the first), and beside the
// ring per stage 32 bytes per W row (mx: the E4M3 tables of its 4 blocks; nv: its 8 block scales
// as 16-bit pairs) and for mx W's and X's segment factors; one [64][132] FP32 tile for the
// epilogue; the constant table (mx: 17 E4M3 tables of expand.cuh; nv: the 256 scale codes
// decoded, each as a pair of equal 16-bit values).
struct SwapGeometry {
  bool fp8;        // mx: E4M3 and QGMMA; nv: 16-bit and HGMMA
  int elem_bytes;  // of X's expanded elements
  int w_bytes, x_bytes, stage_bytes;
  int lut_bytes, w_factor_bytes, x_factor_bytes, aux_stage_bytes;
  int epi_bytes;  // the epilogue's [64][132] FP32 tile
  int table_bytes;
  int aux_offset, epi_offset, barrier_offset, table_offset, scratch_offset;
  int smem_bytes;
  int threads;
  unsigned tma_bytes;   // bytes one stage receives on a segment's last K tile (X's factors too)
  unsigned tile_bytes;  // ... on its other K tiles
};

FP4JIT_GEMM_CONSTEXPR SwapGeometry swap_geometry(ScaleKind kind, int block_t, int stages) {
  SwapGeometry g{};
  g.fp8 = kind == ScaleKind::mx;
  g.elem_bytes = g.fp8 ? 1 : 2;
  g.w_bytes = 128 * 64;
  g.x_bytes = block_t * 128 * g.elem_bytes;
  g.stage_bytes = g.w_bytes + g.x_bytes;  // multiples of 1024 for block_t 64 or 128
  g.lut_bytes = 128 * 32;
  g.w_factor_bytes = g.fp8 ? 128 * 4 : 0;
  g.x_factor_bytes = g.fp8 ? block_t * 4 : 0;
  g.aux_stage_bytes = g.lut_bytes + g.w_factor_bytes + g.x_factor_bytes;
  g.epi_bytes = 64 * (128 + 4) * 4;
  g.table_bytes = g.fp8 ? 17 * 8 + 8 : 256 * 4;
  g.aux_offset = stages * g.stage_bytes;
  g.epi_offset = g.aux_offset + stages * g.aux_stage_bytes;  // 16-byte aligned
  g.barrier_offset = g.epi_offset + g.epi_bytes;
  g.table_offset = g.barrier_offset + 2 * stages * 8;
  g.scratch_offset = g.table_offset + g.table_bytes;
  // Scratch: the split-K flag (4 bytes, 8 with padding), the cluster reduction's two mbarriers.
  g.smem_bytes = g.scratch_offset + 24 + 1024;
  g.threads = 384;
  g.tile_bytes = static_cast<unsigned>(g.stage_bytes);
  g.tma_bytes = g.tile_bytes + static_cast<unsigned>(g.x_factor_bytes);
  return g;
}

// The direct small-M kernel (direct.cuh, mx): shared memory of a CTA of 384 threads. Rings: A's
// expanded K tiles (a_stages x block_t tokens x 128 E4M3 bytes, 128-byte swizzle) with their
// tokens' segment factors, and B's packed K tiles as each consumer thread copied them (b_stages x 2
// rows x 256 threads x 16 bytes); A's packed K tiles as the producer copied them (kDirectAPre x
// block_t rows x 64 bytes); the epilogue's [64][132] FP32 tile; the A ring's mbarriers and the
// cluster reduction's two; the E4M3 shift tables; scratch (the split-K flag, the window-failure
// slots).
struct DirectGeometry {
  int a_stage_bytes, b_stage_bytes, a_factor_bytes, staging_bytes;
  int b_offset, stage_offset, factor_offset, epi_offset, barrier_offset, table_offset,
      scratch_offset;
  int smem_bytes;
  int threads;
};

// Window-failure words, by the CTA's unit count modulo this: more than the units the producer can
// run ahead of the consumers (at most a stage each, 8 stages).
constexpr int kDirectFailSlots = 16;
constexpr int kDirectAPre = 4;  // K tiles of A's packed codes the producer stages ahead

FP4JIT_GEMM_CONSTEXPR DirectGeometry direct_geometry(int block_t, int a_stages, int b_stages) {
  DirectGeometry g{};
  g.a_stage_bytes = block_t * 128;  // 1024-byte multiples: the swizzle atoms stay aligned
  g.b_stage_bytes = 2 * 256 * 16;
  g.a_factor_bytes = block_t * 4;
  g.staging_bytes = kDirectAPre * block_t * 64;  // A's packed K tiles (4 x 16 bytes a row)
  g.b_offset = a_stages * g.a_stage_bytes;
  g.stage_offset = g.b_offset + b_stages * g.b_stage_bytes;
  g.factor_offset = g.stage_offset + g.staging_bytes;
  g.epi_offset = g.factor_offset + a_stages * g.a_factor_bytes;
  g.barrier_offset = g.epi_offset + 64 * (128 + 4) * 4;
  g.table_offset = g.barrier_offset + (2 * a_stages + 2) * 8;
  g.scratch_offset = g.table_offset + 17 * 8 + 8;
  g.smem_bytes = g.scratch_offset + 8 + 4 * kDirectFailSlots + 1024;
  g.threads = 384;
  return g;
}

// Promotion period of the staged path (mx, ms_grad): K tiles per segment. The expansion takes
// its exact window and factors per (segment, row) (mx: of A; B's per row, kSplitFactorExp's
// comment), and the kernel promotes its FP32 partial
// product once per segment: promoting every K tile cost a third of the mx kernel's time (the
// tensor cores waited for it), every 4th K tile recovers most of that. Paths that do not promote
// have a period of 1. A segment's chunks sit in consecutive lanes of the expansion (4 per K tile
// on the FP8 path, 2 on the 16-bit path), so the period is a power of two up to 8.
// Accuracy: the FP8 tensor cores keep fewer bits than FP32 while they accumulate a segment, so
// longer segments lose more of the products of blocks scaled below the segment's largest (operands
// with one large outlier per block: relative Frobenius error 0.9-1.4e-4 at a period of 4,
// bench/gemm_sm90_notes.md).
constexpr int kStagedPeriod = 4;
// The swapped small-M kernel's period on the mx path: it is bound by latency, not by its tensor
// cores, and ran as fast promoting every 2nd K tile as every 4th (H100, 128 rows x 4096-11008),
// with half the accumulation error on outlier-heavy operands.
constexpr int kSwapPeriodMx = 2;
FP4JIT_GEMM_CONSTEXPR bool staged_period_ok(bool promote, int period) {
  return promote ? (period == 1 || period == 2 || period == 4 || period == 8) : period == 1;
}

// The split-K units (whole segments) of k_tiles K tiles.
FP4JIT_GEMM_CONSTEXPR int staged_k_units(int k_tiles, int period) {
  return (k_tiles + period - 1) / period;
}

// mx on the staged path: B's reference is the largest scale code of its whole row (not of each
// segment), so B's factor is one per row of B, i.e. per column of D, and the epilogue applies it;
// the promotion multiplies by A's (segment, row) factors alone. A promotion that multiplied by
// a[row] * b[col] per element (a product and a shared-memory load per element pair besides the
// FMA) cost the mx kernel 6-8 % of its time (bench/gemm_sm90_notes.md). The price is a window
// over B's whole row (15 binades, blocks with nonzero codes): a wider row falls back to the fused
// kernel, as a wider segment always did. Applied apart, each factor must also stay inside
// 2^+-kSplitFactorExp, so that no partial sum times A's factor leaves FP32's normal range where
// the product of both factors would not (a partial sum of E4M3 products is at least 2^-18 and at
// most 2^27 in magnitude): factors outside fall back as well.
constexpr int kSplitFactorExp = 64;

// CTAs of B's whole-row expansion (mx, staged): one warp per row, 8 rows per CTA of 256 threads.
FP4JIT_GEMM_CONSTEXPR long long expand_whole_row_ctas(long long rows) {
  return (rows + 7) / 8;
}

// Rows one expansion thread covers (with one chunk of each): ms_grad B derives its columns'
// multipliers once for 8 rows; every other expansion takes one row.
FP4JIT_GEMM_CONSTEXPR int expand_rows_per_thread(ScaleKind kind, bool operand_b) {
  return kind == ScaleKind::ms_grad && operand_b ? 8 : 1;
}

// 32-element chunks per row of the expansion pass (one thread each), K / 32 rounded up to a whole
// segment (period K tiles of 4 chunks on the FP8 path, 2 on the 16-bit path); its grid is
// ceil(ceil(rows / expand_rows_per_thread) * this / 256) CTAs.
FP4JIT_GEMM_CONSTEXPR int expand_chunks_pad(bool fp8, int k, int period) {
  const int chunks = k / 32, per_segment = (fp8 ? 4 : 2) * period;
  return (chunks + per_segment - 1) / per_segment * per_segment;
}

// 32-element chunks one expansion thread takes (mx: two, at t and t + 256 of its CTA's 512, both
// loads issued before either is used, so that an SM has more bytes in flight in this
// memory-bound pass: 1.5x at the pair launch's six CTAs per SM against one chunk at eight; else
// one).
FP4JIT_GEMM_CONSTEXPR int expand_units_per_thread(ScaleKind kind) {
  return kind == ScaleKind::mx ? 2 : 1;
}

// CTAs of 256 threads of an operand's expansion; whole_row: B's whole-row expansion (mx with
// split factors: expand_whole_row_ctas).
FP4JIT_GEMM_CONSTEXPR long long expand_grid_ctas(ScaleKind kind, bool operand_b, bool whole_row,
                                                 long long rows, int k, int period) {
  if (kind == ScaleKind::mx && operand_b && whole_row) return expand_whole_row_ctas(rows);
  const bool fp8 = kind == ScaleKind::ms || kind == ScaleKind::mx;
  const int per_thread = expand_rows_per_thread(kind, operand_b);
  const long long threads =
      (rows + per_thread - 1) / per_thread * expand_chunks_pad(fp8, k, period);
  const long long per_cta = 256ll * expand_units_per_thread(kind);
  return (threads + per_cta - 1) / per_cta;
}

// Rows of the factor arrays (factor_ld): every tile's slice [n0, n0 + BLOCK_N) stays inside.
FP4JIT_GEMM_CONSTEXPR int staged_factor_ld(int rows) {
  return (rows + 255) / 256 * 256 + 256;
}

}  // namespace fp4jit::sm90
