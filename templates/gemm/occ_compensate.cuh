// OCC compensation of a GEMM (msfp4 fprop): D[i, :] += alpha * sum_t r_t * W[:, p_t] over the
// sparse residual entries t = (i * K + p_t, r_t) of A's row i, in FP32, after the GEMM kernel
// wrote D. Two kernels:
//   occ_transpose   W [N, K] (any input type) -> W^T [K, N] float32 (scratch), 32 x 32 tiles
//                   through shared memory, so that each residual entry reads a contiguous row
//   occ_compensate  one CTA per (row i, 4 * threads columns): the row's entries found by binary
//                   search in the sorted index list (the count is read on the device), each
//                   thread accumulating 4 columns, then a read-modify-write of D in its type
// A row without entries is left untouched. Plain loads: this is a small kernel next to the GEMM.
// Arguments: OccTransposeArgs, OccCompensateArgs (gemm/params.cuh).
#pragma once
#include "gemm/epilogue_io.cuh"

namespace fp4jit::gemm {

template <OutType kIn>
__device__ __forceinline__ float load_in(const void* p, long long i) {
  return load_out<kIn>(p, i);
}

// Config: kIn (the weight's type). 32 x 8 threads per 32 x 32 tile.
template <class Config>
__global__ void __launch_bounds__(256) occ_transpose(const OccTransposeArgs a) {
  __shared__ float tile[32][33];
  const long long r0 = static_cast<long long>(blockIdx.y) * 32, c0 = static_cast<long long>(blockIdx.x) * 32;
  const int tx = threadIdx.x & 31, ty = threadIdx.x / 32;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const long long r = r0 + ty + 8 * i, c = c0 + tx;
    if (r < a.rows && c < a.cols) tile[ty + 8 * i][tx] = load_in<Config::kIn>(a.w, r * a.ld + c);
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const long long c = c0 + ty + 8 * i, r = r0 + tx;
    if (r < a.rows && c < a.cols) a.wt[c * a.rows + r] = tile[tx][ty + 8 * i];
  }
}

__device__ __forceinline__ long long lower_bound(const long long* idx, long long n, long long key) {
  long long lo = 0, hi = n;
  while (lo < hi) {
    const long long mid = (lo + hi) / 2;
    if (idx[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// Config: kOut (D's type), kThreads. Grid: (M, ceil(N / (4 * kThreads))).
template <class Config>
__global__ void __launch_bounds__(Config::kThreads) occ_compensate(const OccCompensateArgs a) {
  __shared__ long long range[2];
  const long long i = blockIdx.x;
  if (threadIdx.x == 0) {
    const long long count = *a.count;
    range[0] = lower_bound(a.index, count, i * a.k);
    range[1] = lower_bound(a.index, count, (i + 1) * a.k);
  }
  __syncthreads();
  const long long lo = range[0], hi = range[1];
  if (lo >= hi) return;
  const long long j0 = (static_cast<long long>(blockIdx.y) * Config::kThreads + threadIdx.x) * 4;
  if (j0 >= a.n) return;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (long long t = lo; t < hi; ++t) {
    const long long p = a.index[t] - i * a.k;
    const float r = a.value[t];
    const float* row = a.wt + p * a.n + j0;
    if (a.vector_ok != 0u && j0 + 4 <= a.n) {
      const float4 w = *reinterpret_cast<const float4*>(row);
      acc[0] = fmaf(r, w.x, acc[0]);
      acc[1] = fmaf(r, w.y, acc[1]);
      acc[2] = fmaf(r, w.z, acc[2]);
      acc[3] = fmaf(r, w.w, acc[3]);
    } else {
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (j0 + q < a.n) acc[q] = fmaf(r, row[q], acc[q]);
    }
  }
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const long long j = j0 + q;
    if (j >= a.n) break;
    const long long di = i * a.ldd + j;
    store_one<Config::kOut>(a.d, di, fmaf(a.alpha, acc[q], load_out<Config::kOut>(a.d, di)));
  }
}

}  // namespace fp4jit::gemm
