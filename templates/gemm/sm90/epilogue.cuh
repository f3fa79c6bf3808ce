// Epilogue of the sm90 GEMM, run by each consumer thread on its accumulator fragment:
//   D[m, n] = alpha * factor(m, n) * acc [+ bias[n]] [+ beta * C[m, n]]
// factor: ms: 2^12 (undoes the 2^-6 of both expansions) * sa[m] * sb[n]; mx: 1 (the stage factors
// were applied at promotion; the staged kernel's B factors, one per column, here: T::kBColFactor);
// nv: tensor_factor / (s_enc_a * s_enc_b); ms_grad: A's per-tensor scale (B's column scales were
// applied at promotion).
// Fragment element j = v0 + 2 v1 + 4 v2: row g + 8 v1, column 8 v2 + 2 tig + v0. Rows >= M and
// columns >= N (ragged edges) are not stored.
//
// Split-K (a tile of several splits, WorkUnit::count; GemmParams::splits bounds it: the workspace
// holds that many slots per tile): every split stores its raw fragment into the workspace
// (fragment order, coalesced float4), then bumps the tile's counter; the split that arrives last
// sums all splits in split order (deterministic), runs the epilogue and resets the counter.
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

// A per-column vector of the epilogue (ms's B column scales, the bias) over a tile's kBlockN
// columns, spread over a warp: lane 4 j + t holds columns n0 + 8 v2 + 2 t + e for v2 = j + 8 i
// (i < kBlockN / 64, e < 2), kBlockN / 32 of them, loaded by straight-line code (the bias type
// dispatched once, indices past D's edge clamped) at the start of the tile's epilogue; the
// fragment's element (v2, e) of thread tig is register 2 (v2 / 8) + e of lane tig + 4 (v2 % 8),
// fetched by a shuffle. Loaded element by element next to the stores instead (a branch per element
// on the bias type and the edges), every load waited for the one before: 96 per thread per
// 128 x 192 tile, and an mxfp4 fprop with a bias took 1.2x the time of one without at
// 8192x11008x4096 (bench/gemm_sm90_notes.md). All lanes of the warp call load and get.
template <int kBlockN>
struct WarpColumns {
  static constexpr int kPer = kBlockN / 32;
  float v[kPer];

  template <class Load>
  __device__ __forceinline__ void load(int n0, int last, const Load& ld) {
    const int lane = static_cast<int>(threadIdx.x & 31u);
    const int n = n0 + 8 * (lane >> 2) + 2 * (lane & 3);
    if (n0 + kBlockN - 1 <= last) {  // every column inside D: constant offsets from one address
#pragma unroll
      for (int i = 0; i < kPer / 2; ++i)
#pragma unroll
        for (int e = 0; e < 2; ++e) v[2 * i + e] = ld(n + 64 * i + e);
    } else {
#pragma unroll
      for (int i = 0; i < kPer / 2; ++i)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = n + 64 * i + e;
          const float x = ld(min(col, last));
          v[2 * i + e] = col <= last ? x : 0.0f;
        }
    }
  }
  __device__ __forceinline__ float get(int v2, int e, int tig) const {
    return __shfl_sync(0xffffffffu, v[2 * (v2 / 8) + e], tig + 4 * (v2 % 8));
  }
};

// The staged mx kernel's B factors of a tile (T::kBColFactor; else empty): loaded by the consumers
// when they start the tile, so that the loads' latency passes behind the tile's main loop rather
// than at the start of its epilogue.
template <class T, bool kUsed = T::kBColFactor>
struct BColumnFactors {
  WarpColumns<T::BLOCK_N> v;
  __device__ __forceinline__ void load(const GemmParams& p, int n0) {
    v.load(n0, p.N - 1, [&](int col) { return p.b_factor[col]; });
  }
};
template <class T>
struct BColumnFactors<T, false> {
  __device__ __forceinline__ void load(const GemmParams&, int) {}
};

// Whether an epilogue body tests for a bias per column pair (test) or knows, for the whole GEMM,
// that there is none (no) or one (yes).
enum class BiasUse { test, no, yes };

// The column terms of a tile's epilogue: the staged mx kernel's B factors (powers of two, applied
// to the accumulator first), ms's column scales, the bias (per column, WarpColumns); beta * C (per
// element: apply_c next to its store in the register-store epilogue, load_c_clamped in groups
// ahead of the stores in the TMA one).
template <class Cfg, class T>
struct EpilogueTerms {
  static constexpr bool kScale = T::kKind == ScaleKind::ms;
  static constexpr bool kFactor = T::kBColFactor;
  WarpColumns<T::BLOCK_N> scale, bias;
  bool has_bias, has_c;

  __device__ __forceinline__ void load(const GemmParams& p, int n0,
                                       const BColumnFactors<T>& factors) {
    const int last = p.N - 1;
    has_bias = p.bias != nullptr;
    has_c = p.c != nullptr && p.beta != 0.0f;
    if constexpr (kScale) scale.load(n0, last, [&](int col) { return p.b_row_scale[col]; });
    if constexpr (kFactor) scale = factors.v;
    if (has_bias) {  // gemm::load_bias's dispatch, once for the tile rather than per element
      if (p.bias_type == static_cast<int>(gemm::BiasType::bf16))
        bias.load(n0, last, [&](int col) { return load_out<OutType::bf16>(p.bias, col); });
      else if (p.bias_type == static_cast<int>(gemm::BiasType::f16))
        bias.load(n0, last, [&](int col) { return load_out<OutType::f16>(p.bias, col); });
      else
        bias.load(n0, last, [&](int col) { return load_out<OutType::f32>(p.bias, col); });
    }
  }

  // The column terms of fragment column pair v2 (columns n, n + 1): ms's column scales and the
  // bias, fetched once for both of the thread's rows. Called by every lane of the warp (the
  // shuffles).
  struct Pair {
    float s0, s1, b0, b1;
  };
  // kBias: BiasUse::test reads has_bias per pair; no / yes: the caller knows has_bias (false /
  // true) for the GEMM, so the pairs take no test.
  template <BiasUse kBias = BiasUse::test>
  __device__ __forceinline__ Pair columns(int v2, int tig) const {
    Pair c{1.0f, 1.0f, 0.0f, 0.0f};
    if constexpr (kScale || kFactor) c.s0 = scale.get(v2, 0, tig), c.s1 = scale.get(v2, 1, tig);
    if (uses_bias<kBias>()) c.b0 = bias.get(v2, 0, tig), c.b1 = bias.get(v2, 1, tig);
    return c;
  }
  template <BiasUse kBias>
  __device__ __forceinline__ bool uses_bias() const {
    if constexpr (kBias == BiasUse::test) return has_bias;
    return kBias == BiasUse::yes;
  }
  // The accumulators of column pair c times B's factors (kFactor), before alpha * factor: a
  // partial sum times A's factor stays in FP32's normal range (kSplitFactorExp), and the products
  // are exact, so D gets the bits of a promotion by both factors.
  __device__ __forceinline__ void apply_factors(const Pair& c, float& a0, float& a1) const {
    if constexpr (kFactor) a0 *= c.s0, a1 *= c.s1;
  }
  // x0, x1 (after alpha * factor) times ms's column scales, plus the bias.
  template <BiasUse kBias = BiasUse::test>
  __device__ __forceinline__ void apply_columns(const Pair& c, float& x0, float& x1) const {
    if constexpr (kScale) x0 *= c.s0, x1 *= c.s1;
    if (uses_bias<kBias>()) x0 += c.b0, x1 += c.b1;
  }

  // The value an element pair is stored as, the same operations in the same order in every
  // epilogue body: B's factors, the row factor f (alpha, A's factor), the column terms, then
  // beta * C (kC; cv: the pair's C elements).
  template <bool kC, BiasUse kBias = BiasUse::test>
  __device__ __forceinline__ void pair_value(const GemmParams& p, const Pair& c, float f,
                                             const float (&cv)[2], float& x0, float& x1) const {
    apply_factors(c, x0, x1);
    x0 *= f;
    x1 *= f;
    apply_columns<kBias>(c, x0, x1);
    if constexpr (kC) {
      x0 = fmaf(p.beta, cv[0], x0);
      x1 = fmaf(p.beta, cv[1], x1);
    }
  }

  // C's elements (m, n) and (m, n + 1), the indices clamped into D, so the loads need no test and
  // no branch (the values read for elements past D's edges are never stored).
  __device__ __forceinline__ void load_c_clamped(const GemmParams& p, int m, int n,
                                                 float (&c)[2]) const {
    const long long row = static_cast<long long>(min(m, p.M - 1)) * p.ldc;
    c[0] = load_out<Cfg::kOut>(p.c, row + min(n, p.N - 1));
    c[1] = load_out<Cfg::kOut>(p.c, row + min(n + 1, p.N - 1));
  }
};

// The thread's two rows of a tile's epilogue (v1 = 0, 1: rows rw.r0, rw.r1 of the tile): D's row,
// whether it is inside D, its factor (base; ms: times the row's scale).
template <ScaleKind kKind>
struct EpilogueRows {
  int m[2];
  bool in[2];
  float f[2];
  __device__ __forceinline__ EpilogueRows(const GemmParams& p, const WorkUnit& w,
                                          const ConsumerRows& rw, float base) {
#pragma unroll
    for (int v1 = 0; v1 < 2; ++v1) {
      m[v1] = w.m0 + (v1 ? rw.r1 : rw.r0);
      in[v1] = m[v1] < p.M;
      f[v1] = base;
      if constexpr (kKind == ScaleKind::ms) f[v1] *= in[v1] ? p.a_row_scale[m[v1]] : 0.0f;
    }
  }
};

// Column pairs whose C elements (beta * C) are loaded together, in both epilogue bodies: 16 or 8
// values in flight, as many as the registers beside the accumulators hold without spilling
// (ptxas, bn = 192 / 256); without C the whole tile width.
template <class T, bool kC>
__device__ constexpr int c_group_pairs() {
  return kC ? (T::kAccum > 96 ? 2 : 4) : T::BLOCK_N / 8;
}

// The C elements of column pairs g .. g + kGroup - 1, both of the thread's rows (indices clamped
// into D), loaded before any of the group is stored. The __syncwarp orders them after the previous
// group's stores for ptxas as well, which would otherwise hoist every load of the tile and spill
// their values.
template <int kGroup, class Cfg, class T>
__device__ __forceinline__ void load_c_group(const GemmParams& p, const WorkUnit& w,
                                             const ConsumerRows& rw, const EpilogueTerms<Cfg, T>& t,
                                             const EpilogueRows<T::kKind>& rows, int g,
                                             float (&cv)[kGroup][2][2]) {
  if (g > 0) __syncwarp();
#pragma unroll
  for (int j = 0; j < kGroup; ++j)
#pragma unroll
    for (int v1 = 0; v1 < 2; ++v1)
      t.load_c_clamped(p, rows.m[v1], w.n0 + 8 * (g + j) + 2 * rw.tig, cv[j][v1]);
}

// epilogue_store's element loop. kC: with beta * C, whose elements for kGroup column pairs are
// loaded (indices clamped into D: no test, no branch) before any of the group is stored. Loaded
// under each pair's inside-D branch, after the previous pair's store to the same buffer (C may be
// D), every C load waited for the one before it: FP32 out with beta * C took 1.87x the GEMM
// without C at 8192x4096x4096 that way, 1.09-1.28x this way (bench/gemm_sm90_notes.md). The same
// operations in the same order on every stored element.
template <bool kC, class Cfg, class T>
__device__ __forceinline__ void epilogue_store_pairs(const GemmParams& p, const WorkUnit& w,
                                                     const ConsumerRows& rw,
                                                     const float (&acc)[T::kAccum],
                                                     const EpilogueTerms<Cfg, T>& t,
                                                     const EpilogueRows<T::kKind>& rows, bool vec) {
  constexpr int kPairs = T::BLOCK_N / 8;
  constexpr int kGroup = c_group_pairs<T, kC>();
  static_assert(kPairs % kGroup == 0, "tile width: whole groups of column pairs");
#pragma unroll
  for (int g = 0; g < kPairs; g += kGroup) {
    float cv[kC ? kGroup : 1][2][2];
    if constexpr (kC) {
      load_c_group<kGroup>(p, w, rw, t, rows, g, cv);
    }
    // Column pairs outer: each pair's column terms are fetched once for both rows.
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      const int v2 = g + j;
      const int n = w.n0 + 8 * v2 + 2 * rw.tig;
      const bool has1 = n + 1 < p.N;
      const auto c = t.columns(v2, rw.tig);  // every lane (shuffles)
#pragma unroll
      for (int v1 = 0; v1 < 2; ++v1) {
        if (!rows.in[v1] || n >= p.N) continue;
        float x0 = acc[4 * v2 + 2 * v1], x1 = acc[4 * v2 + 2 * v1 + 1];
        // (x1 is stored only where has1.)
        t.template pair_value<kC>(p, c, rows.f[v1], cv[kC ? j : 0][v1], x0, x1);
        store_pair<Cfg::kOut>(p.d, static_cast<long long>(rows.m[v1]) * p.ldd + n, x0, x1, has1,
                              vec);
      }
    }
  }
}

// T: the kernel's traits (GemmTraits of the fused kernel, StagedTraits of the staged one).
template <class Cfg, class T = GemmTraits<Cfg>>
__device__ __forceinline__ void epilogue_store(const GemmParams& p, const WorkUnit& w,
                                               const ConsumerRows& rw,
                                               const float (&acc)[T::kAccum],
                                               const BColumnFactors<T>& factors = {}) {
  constexpr unsigned kPairBytes = Cfg::kOut == OutType::f32 ? 8u : 4u;
  const bool vec = (p.ldd % 2 == 0) && reinterpret_cast<unsigned long long>(p.d) % kPairBytes == 0;
  const float base = epilogue_base<T::kKind>(p);
  EpilogueTerms<Cfg, T> t;
  t.load(p, w.n0, factors);
  const EpilogueRows<T::kKind> rows(p, w, rw, base);
  // The same for every thread (the GEMM's terms), so the shuffles of each body see the whole warp.
  if (t.has_c)
    epilogue_store_pairs<true, Cfg, T>(p, w, rw, acc, t, rows, vec);
  else
    epilogue_store_pairs<false, Cfg, T>(p, w, rw, acc, t, rows, vec);
}

// epilogue_store_tma's element loop: the warpgroup's 64 rows of the tile, in the output type, into
// its chunks of the epilogue buffer at epi. Column pairs outer: each pair's column terms are
// fetched once for both rows (half the shuffles of a row-outer loop). Elements past D's edges are
// written too and clipped by the TMA unit, so nothing here needs to know where D ends: the column
// terms are clamped at D's edge when loaded, ms's rows past it have factor 0 and C's reads are
// clamped into D. The body is chosen for the whole GEMM (kC: beta * C; kBias: the bias absent /
// present, or tested per pair where there is a C), so the pairs take no tests or branches (per-pair
// tests and their branch regions were 40 % of the instructions a warp ran per tile, and the tensor
// cores wait while both warpgroups run them). With kC, the C elements of kGroup (two or four)
// column pairs are loaded before any of them is used: a load under a per-pair branch waited for
// the one before it, after a store to shared memory (beta * C took 1.6x the GEMM's time at
// 8192x4096x4096). The same operations in the same order on every element that is stored, so the
// same bits.
template <bool kC, BiasUse kBias, class Cfg, class T>
__device__ __forceinline__ void epilogue_tma_pairs(
    const GemmParams& p, const WorkUnit& w, const ConsumerRows& rw, const float (&acc)[T::kAccum],
    const EpilogueTerms<Cfg, T>& t, const EpilogueRows<T::kKind>& rows, unsigned epi) {
  constexpr int kBytes = Cfg::kOut == OutType::f32 ? 4 : 2;
  constexpr int kChunkBytes = 64 * 128;
  constexpr int kPairs = T::BLOCK_N / 8;
  constexpr int kGroup = c_group_pairs<T, kC>();
  static_assert(kPairs % kGroup == 0, "tile width: whole groups of column pairs");
  const int lr[2] = {rw.r0 & 63, rw.r1 & 63};  // the rows in the warpgroup's chunks
#pragma unroll
  for (int g = 0; g < kPairs; g += kGroup) {
    float cv[kC ? kGroup : 1][2][2];
    if constexpr (kC) {
      load_c_group<kGroup>(p, w, rw, t, rows, g, cv);
    }
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      const int v2 = g + j;
      const auto c = t.template columns<kBias>(v2, rw.tig);  // every lane (shuffles)
#pragma unroll
      for (int v1 = 0; v1 < 2; ++v1) {
        float x0 = acc[4 * v2 + 2 * v1], x1 = acc[4 * v2 + 2 * v1 + 1];
        t.template pair_value<kC, kBias>(p, c, rows.f[v1], cv[kC ? j : 0][v1], x0, x1);
        const unsigned row_addr = epi + static_cast<unsigned>(lr[v1]) * 128u;
        if constexpr (kBytes == 2) {
          unsigned packed;
          if constexpr (Cfg::kOut == OutType::bf16)
            asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(x1), "f"(x0));
          else
            asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(x1), "f"(x0));
          const int chunk = v2 / 8, unit = v2 % 8;
          sts32(row_addr + chunk * kChunkBytes + ((unit ^ (lr[v1] & 7)) << 4) + 4 * rw.tig, packed);
        } else {
          const int chunk = v2 / 4, unit = 2 * (v2 % 4) + (rw.tig >> 1);
          sts64(row_addr + chunk * kChunkBytes + ((unit ^ (lr[v1] & 7)) << 4) + 8 * (rw.tig & 1),
                __float_as_uint(x0), __float_as_uint(x1));
        }
      }
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
                                                   const TmaDesc* tma_d, bool issuer, int bar,
                                                   const BColumnFactors<T>& factors = {}) {
  constexpr int kBytes = Cfg::kOut == OutType::f32 ? 4 : 2;
  constexpr int kChunkCols = 128 / kBytes;
  constexpr int kChunks = T::BLOCK_N / kChunkCols;
  constexpr int kChunkBytes = 64 * 128;
  static_assert(T::BLOCK_N % kChunkCols == 0, "tile width: whole 128-byte chunks of D");
  EpilogueTerms<Cfg, T> t;
  // The column terms' loads go out before the wait below, which hides their latency.
  t.load(p, w.n0, factors);
  if (issuer) bulk_wait_group_read<0>();  // the previous tile's stores have read the buffer
  named_barrier_sync(bar, 128);
  const EpilogueRows<T::kKind> rows(p, w, rw, epilogue_base<T::kKind>(p));
  // The same for every thread (the GEMM's terms), so the shuffles of each body see the whole warp.
  if (t.has_c)
    epilogue_tma_pairs<true, BiasUse::test, Cfg, T>(p, w, rw, acc, t, rows, epi);
  else if (t.has_bias)
    epilogue_tma_pairs<false, BiasUse::yes, Cfg, T>(p, w, rw, acc, t, rows, epi);
  else
    epilogue_tma_pairs<false, BiasUse::no, Cfg, T>(p, w, rw, acc, t, rows, epi);
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
  if (w.count == 1) return true;
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
    const bool last = old == w.count - 1;
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
  for (int s = 0; s < w.count; ++s) {
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
