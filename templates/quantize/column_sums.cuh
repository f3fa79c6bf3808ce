// Column sums of a source tensor [rows, cols] (a bias gradient: dY summed over its tokens), in
// FP32, in one fixed order, so that every kernel that computes them (the quantize pair's tile
// loop, the standalone pass below) and the reference (reference/column_sums.cpp) give the same
// bits:
//   chunk k = source rows 64 k .. 64 k + 63 (rows past the tensor count as +0);
//   slice s (0..7) of a chunk = 0 + x[64 k + s] + x[64 k + s + 8] + ... + x[64 k + s + 56], in
//   that order;
//   P_k = ((slice0 + slice4) + (slice2 + slice6)) + ((slice1 + slice5) + (slice3 + slice7))
//   (the butterfly of three xor shuffles over lanes 16, 8, 4 apart: FP32 addition commutes, so
//   every lane of it ends with these bits);
//   G_g (g = 0..7) = 0 + P_g + P_{g+8} + P_{g+16} + ..., in that order;
//   sum = 0 + G_0 + G_1 + ... + G_7, rounded once to the output type.
// The first pass writes P [ceil(rows / 64)][cols] (FP32, scratch); column_sums_reduce the sums.
//
// column_sums_partial config:
//   static constexpr InType in;
// column_sums_reduce config:
//   static constexpr InType out;
#pragma once
#include "quantize/args.cuh"
#include "quantize/dequantize.cuh"

namespace fp4jit::kern {

// P from the chunk's eight slice sums (the butterfly's result, in the same order).
FP4JIT_DEV float chunk_sum(const float (&slice)[kSumSlices]) {
  const float a0 = slice[0] + slice[4], a1 = slice[1] + slice[5];
  const float a2 = slice[2] + slice[6], a3 = slice[3] + slice[7];
  return (a0 + a2) + (a1 + a3);
}

// A lane's slice sum, on to P across the eight lanes (16, 8, 4 apart) that hold one column's
// slices: lane = 4 s + (column within a group of four).
FP4JIT_DEV float chunk_butterfly(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 16);
  v += __shfl_xor_sync(0xffffffffu, v, 8);
  v += __shfl_xor_sync(0xffffffffu, v, 4);
  return v;
}

// The standalone first pass: one thread per (chunk, column), the chunk's rows read in order
// (consecutive threads on consecutive columns: coalesced), the eight slices in registers.
// Launched over ceil(cols / threads) x chunks blocks, grid-strided.
template <class Cfg>
__global__ void __launch_bounds__(256) column_sums_partial(ColumnSumsArgs a) {
  const i64 col_blocks = (a.cols + 255) / 256;
  const i64 chunks = (a.rows + kSumChunkRows - 1) / kSumChunkRows;
  for (i64 item = blockIdx.x; item < chunks * col_blocks; item += gridDim.x) {
    const i64 k = item / col_blocks;
    const i64 c = (item % col_blocks) * 256 + threadIdx.x;
    if (c >= a.cols) continue;
    float slice[kSumSlices];
#pragma unroll
    for (int s = 0; s < kSumSlices; ++s) slice[s] = 0.0f;
    for (int j = 0; j < kSumChunkRows / kSumSlices; ++j) {
#pragma unroll
      for (int s = 0; s < kSumSlices; ++s) {
        const i64 r = k * kSumChunkRows + j * kSumSlices + s;
        slice[s] += r < a.rows ? load_one<Cfg::in>(a.in, r * a.stride + c) : 0.0f;
      }
    }
    a.partial[k * a.cols + c] = chunk_sum(slice);
  }
}

// The sums from P: threads (column t % 32, group t / 32) of 256, G_g in registers, the eight G
// of a column added in order through shared memory.
template <class Cfg>
__global__ void __launch_bounds__(256) column_sums_reduce(ColumnSumsArgs a) {
  __shared__ float g_sums[kSumSlices][32];
  const i64 chunks = (a.rows + kSumChunkRows - 1) / kSumChunkRows;
  const int tx = static_cast<int>(threadIdx.x) % 32, g = static_cast<int>(threadIdx.x) / 32;
  for (i64 c0 = static_cast<i64>(blockIdx.x) * 32; c0 < a.cols;
       c0 += static_cast<i64>(gridDim.x) * 32) {
    const i64 c = c0 + tx;
    float acc = 0.0f;
    if (c < a.cols)
      for (i64 k = g; k < chunks; k += kSumSlices) acc += a.partial[k * a.cols + c];
    g_sums[g][tx] = acc;
    __syncthreads();
    if (g == 0 && c < a.cols) {
      float sum = 0.0f;
#pragma unroll
      for (int q = 0; q < kSumSlices; ++q) sum += g_sums[q][tx];
      store_value<Cfg::out>(a.out, c, sum);
    }
    __syncthreads();
  }
}

}  // namespace fp4jit::kern
