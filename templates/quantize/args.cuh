// Kernel arguments: one struct per kernel family, passed by value. The host launch code includes
// this same header, so both sides agree on the layout (8-byte fields first, no bool members).
// Pointers are device pointers; every count is in elements unless it says bytes.
#pragma once
#include "numerics/philox.cuh"
#include "quantize/config.cuh"

namespace fp4jit::kern {

// One quantized operand: where its pieces go and the shared scratch of its passes.
struct OperandOut {
  u8* codes;             // [rows, row_bytes]
  void* scales;          // [scale_rows, scale_cols]: u8 codes, or float (ScaleFmt::fp32)
  float* tensor_scale;   // two-level s_enc (1 float), or null
  u32* amax_out;         // the operand's largest finite |value| as float bits (1 word), or null
  const u32* stats;      // quantize phase: per-block stat words from the stats pass, or null
  u32* stats_out;        // stats phase: per-block stat words (zeroed first), or null
  u32* amax_bits;        // global finite amax: accumulated by the stats phase, read after; or null
  const float* lohi;     // OCC: {lo, hi} per source row, or null
  const float* amax_in;  // two-level: the caller's global amax for s_enc (delayed scaling), or
                         // null (then amax_bits, from the stats pass)
  i64 rows, cols;        // the operand, K-major
  i64 row_bytes;         // bytes of codes per operand row
  i64 scale_cols;        // scales per scale row
};
// Stochastic rounding's index of element (r, c) of operand o: its row-major position plus the
// caller's offset (QuantizeArgs::offset); the element draws that index's bits (nx::sr_bits).
FP4JIT_HD u64 sr_index(const OperandOut& o, u64 offset, i64 r, i64 c) {
  return offset + static_cast<u64>(r * o.cols + c);
}

// quantize_rows and quantize_tile.
struct QuantizeArgs {
  const void* in;  // source tensor [rows, cols], row stride `stride` elements
  i64 rows, cols, stride;
  u64 seed, offset;  // stochastic rounding: element i draws the bits of index offset + i
  // Cfg::col_sums: the source's column sums per 64-row chunk (P of quantize/column_sums.cuh),
  // [ceil(rows / 64)][cols]; else unused.
  float* col_sums;
  OperandOut row;  // the non-transposed operand (mode rows, both)
  OperandOut col;  // the transposed operand (mode cols, both)
  u32 vector_ok;   // 16-byte vector loads are aligned (checked by the host)
  u32 reserved;
  // Null, or the seed is nx::mix_seed(seed, *seed_step), read by the kernel when it runs (a CUDA
  // graph's replays advance the step in device memory and draw new bits). Last, so that the
  // other fields keep their offsets in kernels that draw no bits.
  const u64* seed_step;
};

// The seed a quantize pass of Cfg rounds with (kernel entry): by value, or mixed with the step
// read now. Only where the pass draws random bits (a stochastic operand, the quantize phase), so
// other kernels compile as they did without it.
template <class Cfg, class... Ops>
FP4JIT_HD void resolve_seed(QuantizeArgs& a) {
  if constexpr (Cfg::phase == Phase::quantize && ((Ops::round == nx::Round::stochastic) || ...)) {
    if (a.seed_step != nullptr) a.seed = nx::mix_seed(a.seed, *a.seed_step);
  }
}

// column_sums_partial and column_sums_reduce (quantize/column_sums.cuh): sums of chunks of
// kSumChunkRows source rows, each of kSumSlices interleaved slices.
constexpr int kSumChunkRows = 64;
constexpr int kSumSlices = 8;
struct ColumnSumsArgs {
  const void* in;  // source [rows, cols], row stride `stride` elements (the partial pass)
  float* partial;  // [ceil(rows / 64)][cols]: written by the partial pass or a quantize pair,
                   // read by the reduce
  void* out;       // [cols] of the reduce's output type
  i64 rows, cols, stride;
};

// occ_select: per source row, lo and hi and the counts of clamped elements.
struct OccSelectArgs {
  const void* in;
  i64 rows, cols, stride;
  i64 lo_index, hi_index;  // sorted positions int((1 - alpha) n) and int(alpha n), clamped to n - 1
  float* lohi;             // [rows][2]
  u32* row_counts;         // per source row (the row-wise operand's rows), or null
  u32* chunk_counts;  // [ceil(rows / kOccChunkRows)][cols] (zeroed first): the column counts of
                      // each chunk of source rows (the transposed operand's list), or null
  // The stats pass of operands whose blocks are the source rows (no Hadamard; a pair's two share
  // it), done here: the stat word of each clamped row (its largest |clamp(x)|, stat_of) into
  // stats[row], and the finite amax of the clamped values accumulated into *amax_bits (zeroed
  // first). Null: not wanted.
  u32* stats;
  u32* amax_bits;
  u32 vector_ok;  // 16-byte loads of the rows are aligned (checked by the host)
};
// Source rows per chunk of the transposed operand's residual list: occ_write walks each chunk of
// every kVec columns in its own thread, from the chunk's first list position of each column.
constexpr int kOccChunkRows = 64;

// occ_scan: exclusive prefix sum of the per-row counts.
struct OccScanArgs {
  const u32* counts;
  i64* offsets;  // [n]
  i64* total;    // the residual count (1 value, the caller's residual_count)
  i64 n;
};

// occ_chunk_scan: per column, the chunk counts of OccSelectArgs::chunk_counts replaced in place by
// the column's counts in the chunks before, and the column's total (its operand row's count).
struct OccChunkScanArgs {
  u32* chunk_counts;  // [chunks][cols]
  u32* col_counts;    // [cols]
  i64 cols, chunks;
};

// occ_write: the residual list, sorted by operand index.
struct OccWriteArgs {
  const void* in;
  i64 rows, cols, stride;  // source tensor
  const float* lohi;
  const i64* offsets;       // per operand row
  const u32* chunk_counts;  // the transposed operand: after occ_chunk_scan
  i64* index;               // [capacity]
  float* value;             // [capacity]
  i64 capacity;
  u32 vector_ok;  // 16-byte loads of the rows are aligned (checked by the host)
};

// occ_rows (quantize/occ_rows.cuh): a row-wise OCC operand scaled per source row in one pass.
// q: the quantize arguments (q.row the operand; q.row.amax_out zeroed first, or null); status
// and ticket zeroed first.
struct OccRowsArgs {
  QuantizeArgs q;
  i64 lo_index, hi_index;  // as OccSelectArgs; lo_index <= hi_index
  i64* index;              // [capacity]
  float* value;            // [capacity]
  i64 capacity;
  i64* total;   // the residual count (the caller's residual_count)
  u64* status;  // [rows]: the look-back's per-row words
  u32* ticket;  // rows are taken in this counter's order
};

// dequantize: operand codes and scales back to values (operand layout), or to the source layout
// as float (to_source: inverse Hadamard and transpose, what double quantization re-reads).
struct DequantizeArgs {
  const u8* codes;
  const void* scales;
  const float* tensor_scale;  // two-level, else null
  void* out;
  i64 rows, cols;  // the operand
  i64 row_bytes, scale_cols;
  i64 out_stride;  // elements between rows of out
};

// dge_apply: f'(w * sf) elementwise from the weight's per-block stats.
struct DgeArgs {
  const void* w;
  void* out;
  const u32* stats;  // per block of the weight operand
  i64 rows, cols;
  i64 w_stride, out_stride;
  i64 scale_cols;
};

}  // namespace fp4jit::kern
