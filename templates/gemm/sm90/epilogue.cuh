// Epilogue of the sm90 GEMM, run by each consumer thread on its accumulator fragment:
//   D[m, n] = alpha * factor(m, n) * acc [+ bias[n]] [+ beta * C[m, n]]
// factor: ms: 2^12 (undoes the 2^-6 of both expansions) * sa[m] * sb[n]; mx: 1 (the stage factors
// were applied at promotion); nv: tensor_factor / (s_enc_a * s_enc_b); ms_grad: A's per-tensor
// scale (B's column scales were applied at promotion).
// Fragment element j = v0 + 2 v1 + 4 v2: row g + 8 v1, column 8 v2 + 2 tig + v0. Rows >= M and
// columns >= N (ragged edges) are not stored.
//
// Split-K (splits > 1): every split stores its raw fragment into the workspace (fragment order,
// coalesced float4), then bumps the tile's counter; the split that arrives last sums all splits in
// split order (deterministic), runs the epilogue and resets the counter.
#pragma once
#include "gemm/epilogue_io.cuh"
#include "gemm/sm90/consumer.cuh"
#include "gemm/sm90/scheduler.cuh"
#include "gemm/sm90/smem.cuh"

namespace fp4jit::sm90 {

using gemm::load_out;
using gemm::store_pair;

// alpha times the factor every element of the kind shares (ms: 2^12; ms_grad: A's per-tensor
// scale; nv: tensor_factor / (s_enc_a * s_enc_b); mx: 1).
template <ScaleKind kKind>
__device__ __forceinline__ float epilogue_base(const GemmParams& p) {
  float base = p.alpha;
  if constexpr (kKind == ScaleKind::ms) base *= 4096.0f;
  if constexpr (kKind == ScaleKind::ms_grad) base *= p.a_row_scale[0];
  if constexpr (kKind == ScaleKind::nv) {
    base *= p.tensor_factor;
    if (p.a_tensor_scale != nullptr) base *= 1.0f / *p.a_tensor_scale;
    if (p.b_tensor_scale != nullptr) base *= 1.0f / *p.b_tensor_scale;
  }
  return base;
}

// The epilogue's terms after alpha * factor (x0, x1 at (m, n), (m, n + 1); has1: n + 1 < N):
// ms's column scales, the bias, beta * C.
template <class Cfg, class T>
__device__ __forceinline__ void epilogue_terms(const GemmParams& p, int m, int n, bool has1,
                                               float& x0, float& x1) {
  if constexpr (T::kKind == ScaleKind::ms) {
    x0 *= p.b_row_scale[n];
    if (has1) x1 *= p.b_row_scale[n + 1];
  }
  if (p.bias != nullptr) {
    x0 += gemm::load_bias(p.bias, p.bias_type, n);
    if (has1) x1 += gemm::load_bias(p.bias, p.bias_type, n + 1);
  }
  if (p.c != nullptr && p.beta != 0.0f) {
    const long long ci = static_cast<long long>(m) * p.ldc + n;
    x0 = fmaf(p.beta, load_out<Cfg::kOut>(p.c, ci), x0);
    if (has1) x1 = fmaf(p.beta, load_out<Cfg::kOut>(p.c, ci + 1), x1);
  }
}

// T: the kernel's traits (GemmTraits of the fused kernel, StagedTraits of the staged one).
template <class Cfg, class T = GemmTraits<Cfg>>
__device__ __forceinline__ void epilogue_store(const GemmParams& p, const WorkUnit& w,
                                               const ConsumerRows& rw,
                                               const float (&acc)[T::kAccum]) {
  constexpr unsigned kPairBytes = Cfg::kOut == OutType::f32 ? 8u : 4u;
  const bool vec = (p.ldd % 2 == 0) && reinterpret_cast<unsigned long long>(p.d) % kPairBytes == 0;
  const float base = epilogue_base<T::kKind>(p);
#pragma unroll
  for (int v1 = 0; v1 < 2; ++v1) {
    const int m = w.m0 + (v1 ? rw.r1 : rw.r0);
    if (m >= p.M) continue;
    float row_f = base;
    if constexpr (T::kKind == ScaleKind::ms) row_f *= p.a_row_scale[m];
#pragma unroll
    for (int v2 = 0; v2 < T::BLOCK_N / 8; ++v2) {
      const int n = w.n0 + 8 * v2 + 2 * rw.tig;
      if (n >= p.N) continue;
      const bool has1 = n + 1 < p.N;
      float x0 = acc[4 * v2 + 2 * v1] * row_f;
      float x1 = acc[4 * v2 + 2 * v1 + 1] * row_f;
      epilogue_terms<Cfg, T>(p, m, n, has1, x0, x1);
      store_pair<Cfg::kOut>(p.d, static_cast<long long>(m) * p.ldd + n, x0, x1, has1, vec);
    }
  }
}

// The same epilogue through shared memory and TMA stores (staged kernel, Cfg::kTmaStore): the
// consumer warpgroup writes its 64 rows of D's tile, in the output type, into its part of the
// epilogue buffer at epi (shared-window address): chunks of 64 rows x 128 bytes (128 / sizeof(out)
// columns), 128-byte swizzled as the tensor map's box {128 / sizeof(out), 64} reads them; then
// `issuer` (one thread of the warpgroup) stores the chunks with cp.async.bulk.tensor and commits
// them as one bulk group. The stores run while the warpgroup goes on to its next tile; before it
// writes the buffer again the issuer waits until they have read it. The TMA unit clips rows and
// columns past D's edges. bar: the warpgroup's named barrier. Same arithmetic as epilogue_store,
// so the same bits.
template <class Cfg, class T>
__device__ __forceinline__ void epilogue_store_tma(const GemmParams& p, const WorkUnit& w,
                                                   const ConsumerRows& rw,
                                                   const float (&acc)[T::kAccum], unsigned epi,
                                                   const TmaDesc* tma_d, bool issuer, int bar) {
  constexpr int kBytes = Cfg::kOut == OutType::f32 ? 4 : 2;
  constexpr int kChunkCols = 128 / kBytes;
  constexpr int kChunks = T::BLOCK_N / kChunkCols;
  constexpr int kChunkBytes = 64 * 128;
  static_assert(T::BLOCK_N % kChunkCols == 0, "tile width: whole 128-byte chunks of D");
  if (issuer) bulk_wait_group_read<0>();  // the previous tile's stores have read the buffer
  named_barrier_sync(bar, 128);
  const float base = epilogue_base<T::kKind>(p);
#pragma unroll
  for (int v1 = 0; v1 < 2; ++v1) {
    const int r = v1 ? rw.r1 : rw.r0;
    const int lr = r & 63;  // row in the warpgroup's chunks
    const int m = w.m0 + r;
    const bool row_in = m < p.M;
    float row_f = base;
    if constexpr (T::kKind == ScaleKind::ms) row_f *= row_in ? p.a_row_scale[m] : 0.0f;
    const unsigned row_addr = epi + static_cast<unsigned>(lr) * 128u;
#pragma unroll
    for (int v2 = 0; v2 < T::BLOCK_N / 8; ++v2) {
      const int n = w.n0 + 8 * v2 + 2 * rw.tig;
      float x0 = acc[4 * v2 + 2 * v1] * row_f;
      float x1 = acc[4 * v2 + 2 * v1 + 1] * row_f;
      if (row_in && n < p.N) epilogue_terms<Cfg, T>(p, m, n, n + 1 < p.N, x0, x1);
      if constexpr (kBytes == 2) {
        unsigned packed;
        if constexpr (Cfg::kOut == OutType::bf16)
          asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(x1), "f"(x0));
        else
          asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(x1), "f"(x0));
        const int chunk = v2 / 8, unit = v2 % 8;
        sts32(row_addr + chunk * kChunkBytes + ((unit ^ (lr & 7)) << 4) + 4 * rw.tig, packed);
      } else {
        const int chunk = v2 / 4, unit = 2 * (v2 % 4) + (rw.tig >> 1);
        sts64(row_addr + chunk * kChunkBytes + ((unit ^ (lr & 7)) << 4) + 8 * (rw.tig & 1),
              __float_as_uint(x0), __float_as_uint(x1));
      }
    }
  }
  fence_proxy_async();  // the generic-proxy writes above, before the TMA unit reads them
  named_barrier_sync(bar, 128);
  if (issuer) {
    const int m0 = w.m0 + (rw.r0 & ~63);
    if (m0 < p.M) {
#pragma unroll
      for (int c = 0; c < kChunks; ++c)
        if (w.n0 + c * kChunkCols < p.N)
          tma_store_2d(tma_d, epi + c * kChunkBytes, w.n0 + c * kChunkCols, m0);
    }
    bulk_commit_group();
  }
}

// Returns true when this CTA must run the epilogue (single split, or the last split of the tile);
// then acc holds the sum of all splits. flag: a shared-memory word of the CTA's scratch.
template <class T>
__device__ __forceinline__ bool splitk_reduce(const GemmParams& p, const WorkUnit& w,
                                              unsigned* flag, float (&acc)[T::kAccum]) {
  if (p.splits == 1) return true;
  const int ctid = threadIdx.x - T::kTransformThreads;
  constexpr int kVec = T::kAccum / 4;
  const long long tile_base = static_cast<long long>(w.tile) * p.splits;
  float4* ws = reinterpret_cast<float4*>(p.workspace);
#pragma unroll
  for (int q = 0; q < kVec; ++q)
    ws[((tile_base + w.split) * kVec + q) * T::kConsumers + ctid] =
        make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]);
  named_barrier_sync(2, T::kConsumers);
  if (ctid == 0) {
    fence_acq_rel_gpu();  // the CTA's partial sums (ordered before it by the barrier) are released
    const int old = atomicAdd(p.counters + w.tile, 1);
    const bool last = old == p.splits - 1;
    if (last) fence_acq_rel_gpu();  // acquires the other splits' sums for the whole CTA
    if (last) p.counters[w.tile] = 0;
    *flag = last ? 1u : 0u;
  }
  named_barrier_sync(2, T::kConsumers);
  const bool last = *flag != 0u;
  named_barrier_sync(2, T::kConsumers);  // the flag is read before the next unit rewrites it
  if (!last) return false;               // thread 0's acquire and the barrier order the reads below
#pragma unroll
  for (int i = 0; i < T::kAccum; ++i) acc[i] = 0.0f;
  for (int s = 0; s < p.splits; ++s) {
#pragma unroll
    for (int q = 0; q < kVec; ++q) {
      const float4 v = __ldcg(&ws[((tile_base + s) * kVec + q) * T::kConsumers + ctid]);
      acc[4 * q] += v.x;
      acc[4 * q + 1] += v.y;
      acc[4 * q + 2] += v.z;
      acc[4 * q + 3] += v.w;
    }
  }
  return true;
}

}  // namespace fp4jit::sm90
