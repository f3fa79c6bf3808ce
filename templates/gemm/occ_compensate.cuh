// OCC compensation of a GEMM (msfp4 fprop): D[i, :] += alpha * sum_t r_t * W[:, p_t] over the
// sparse residual entries t = (i * K + p_t, r_t) of A's row i, in FP32, after the GEMM kernel
// wrote D. Three kernels:
//   occ_transpose   W [N, K] -> W^T [K, N] in W's own type (exact, scratch), 32 x 32 tiles through
//                   shared memory, so that each residual entry reads one contiguous row
//   occ_rows        the entry range of every row of A (row_ptr[i] = first entry of row i, M + 1
//                   values), one binary search per thread in the sorted index list (the count is
//                   read on the device)
//   occ_compensate  one CTA per (row i, kCols * kThreads columns), each thread kCols consecutive
//                   columns; the row's entries go by batches of kBatch with all their W^T loads in
//                   flight before the FMAs; then a read-modify-write of D in its type
// A row without entries is left untouched. At ~2 % density (a = 0.99) every entry reads a full
// W^T row: the cost is entries x N x sizeof(W) bytes from L2.
// Arguments: OccTransposeArgs, OccRowsArgs, OccCompensateArgs (gemm/params.cuh).
#pragma once
#include "gemm/epilogue_io.cuh"

namespace fp4jit::gemm {

template <OutType kIn>
__device__ __forceinline__ float load_in(const void* p, long long i) {
  return load_out<kIn>(p, i);
}

// The storage word of a type.
template <OutType kT>
struct Bits {
  using type = unsigned short;
};
template <>
struct Bits<OutType::f32> {
  using type = unsigned;
};

// Config: kIn (the weight's type). 32 x 8 threads per 32 x 32 tile; W^T keeps kIn's bits.
template <class Config>
__global__ void __launch_bounds__(256) occ_transpose(const OccTransposeArgs a) {
  using Bits = typename Bits<Config::kIn>::type;
  __shared__ Bits tile[32][33];
  const long long r0 = static_cast<long long>(blockIdx.y) * 32,
                  c0 = static_cast<long long>(blockIdx.x) * 32;
  const int tx = threadIdx.x & 31, ty = threadIdx.x / 32;
  const Bits* w = static_cast<const Bits*>(a.w);
  Bits* wt = static_cast<Bits*>(a.wt);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const long long r = r0 + ty + 8 * i, c = c0 + tx;
    if (r < a.rows && c < a.cols) tile[ty + 8 * i][tx] = w[r * a.ld + c];
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const long long c = c0 + ty + 8 * i, r = r0 + tx;
    if (r < a.rows && c < a.cols) wt[c * a.rows + r] = tile[tx][ty + 8 * i];
  }
}

__device__ __forceinline__ long long lower_bound(const long long* idx, long long n, long long key) {
  long long lo = 0, hi = n;
  while (lo < hi) {
    const long long mid = (lo + hi) / 2;
    if (idx[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// Grid: ceil((M + 1) / 256) x 256 threads.
template <class Config>
__global__ void __launch_bounds__(256) occ_rows(const OccRowsArgs a) {
  const long long i = static_cast<long long>(blockIdx.x) * 256 + threadIdx.x;
  if (i > a.m) return;
  a.row_ptr[i] = lower_bound(a.index, *a.count, i * a.k);
}

// kCols consecutive W^T elements (type kIn) from p as floats; vec: 16-byte aligned, all in range.
template <OutType kIn, int kCols>
__device__ __forceinline__ void load_cols(const void* base, long long idx, int n, bool vec,
                                          float (&w)[kCols]) {
  if (vec) {
    constexpr int kPer16 = kIn == OutType::f32 ? 4 : 8;
    const uint4* p = reinterpret_cast<const uint4*>(static_cast<const char*>(base) +
                                                    idx * (kIn == OutType::f32 ? 4 : 2));
#pragma unroll
    for (int v = 0; v < kCols / kPer16; ++v) {
      const uint4 u = p[v];
      const unsigned word[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        if constexpr (kIn == OutType::f32) {
          w[v * 4 + q] = __uint_as_float(word[q]);
        } else if constexpr (kIn == OutType::bf16) {
          w[v * 8 + 2 * q] = __uint_as_float(word[q] << 16);
          w[v * 8 + 2 * q + 1] = __uint_as_float(word[q] & 0xFFFF0000u);
        } else {
          float lo, hi;
          asm("{ .reg .f16 l, h; mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h; }"
              : "=f"(lo), "=f"(hi)
              : "r"(word[q]));
          w[v * 8 + 2 * q] = lo;
          w[v * 8 + 2 * q + 1] = hi;
        }
      }
    }
  } else {
#pragma unroll
    for (int q = 0; q < kCols; ++q) w[q] = q < n ? load_in<kIn>(base, idx + q) : 0.0f;
  }
}

// Config: kOut (D's type), kIn (W's type), kThreads, kCols (8: one 16-byte load of a 16-bit W^T,
// two of FP32), kBatch. Grid: (M, ceil(N / (kCols * kThreads))).
template <class Config>
__global__ void __launch_bounds__(Config::kThreads) occ_compensate(const OccCompensateArgs a) {
  constexpr int kCols = Config::kCols, kBatch = Config::kBatch;
  const long long i = blockIdx.x;
  const long long lo = a.row_ptr[i], hi = a.row_ptr[i + 1];
  if (lo >= hi) return;
  const long long j0 =
      (static_cast<long long>(blockIdx.y) * Config::kThreads + threadIdx.x) * kCols;
  if (j0 >= a.n) return;
  const int n = a.n - j0 >= kCols ? kCols : static_cast<int>(a.n - j0);
  const bool vec = a.vector_ok != 0u && n == kCols;
  const long long base = i * a.k;
  float acc[kCols];
#pragma unroll
  for (int q = 0; q < kCols; ++q) acc[q] = 0.0f;
  for (long long t0 = lo; t0 < hi; t0 += kBatch) {
    float r[kBatch];
    float w[kBatch][kCols];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (t0 + b < hi) {  // the same for the whole CTA
        r[b] = a.value[t0 + b];
        load_cols<Config::kIn, kCols>(a.wt, (a.index[t0 + b] - base) * a.n + j0, n, vec, w[b]);
      } else {  // past the row's end: adds exactly 0 (no load, so no 0 * Inf)
        r[b] = 0.0f;
#pragma unroll
        for (int q = 0; q < kCols; ++q) w[b][q] = 0.0f;
      }
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b)
#pragma unroll
      for (int q = 0; q < kCols; ++q) acc[q] = fmaf(r[b], w[b][q], acc[q]);
  }
#pragma unroll
  for (int q = 0; q < kCols; ++q) {
    if (q >= n) break;
    const long long di = i * a.ldd + j0 + q;
    store_one<Config::kOut>(a.d, di, fmaf(a.alpha, acc[q], load_out<Config::kOut>(a.d, di)));
  }
}

}  // namespace fp4jit::gemm
