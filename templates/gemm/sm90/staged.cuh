// fp4jit sm90 staged GEMM: C = epilogue(A' B'^T) where A' and B' are the operands expanded by
// staged_expand.cuh into global scratch (E4M3 bytes for ms / mx, FP16 / BF16 for nv and ms_grad).
//
// Why a staged path next to the fused kernel (kernel.cuh): on Hopper the fused kernel expands B in
// shared memory between the TMA load and the wgmma read, which costs more shared-memory bandwidth
// and issue slots than the tensor cores leave (bench/gemm_sm90_notes.md). Writing the expanded
// operands once (a memory-bound pass that moves about a tenth of the GEMM's time at LLaMA shapes)
// lets this kernel be a plain TMA + shared-memory wgmma pipeline. Small M, where the bytes of the
// weight dominate, stays with the fused kernel; the heuristic and the tuner choose per shape.
//
// 384 threads, one CTA per SM, persistent:
//   warpgroup 0: one thread issues the TMA loads of A' (128 rows) and B' (BLOCK_N rows), 128 bytes
//                of each row per K tile (128-byte swizzle), and the bulk copies of the tile's
//                factors (mx, ms_grad) into a ring of kStages stages
//   warpgroups 1, 2: 64 rows each, 4 shared-memory wgmmas per stage (K = 32 FP8 or 16 16-bit
//                elements each); ms / nv accumulate over all of K in the tensor cores, mx and
//                ms_grad accumulate one segment (kPeriod K tiles, staged_geometry.cuh) in the
//                tensor cores and promote it into FP32 registers with the segment's factors
//                (mx: a'[row]; B's factor b'[col], one per column over all of K, is applied in
//                the epilogue; ms_grad: one per segment) that come with its last stage; while one
//                warpgroup promotes, the other keeps the tensor cores busy; split-K shared with
//                the fused kernel (split-K splits whole segments); the epilogue's D leaves either
//                from registers (epilogue_store, as the fused kernel) or, with Cfg::kTmaStore,
//                through a tile in shared memory and TMA stores that run while the warpgroup
//                starts its next tile (epilogue_store_tma: register stores of 16-bit D left the
//                tensor cores idle for a fifth of an LLaMA-7B GEMM, bench/gemm_sm90_notes.md)
// The same K permutation (ms) is applied to both operands by the expansion, so the product is
// unchanged. Host side: runtime/cuda/gemm_launch.cpp (tensor maps: uint8, row pitch = bytes of an
// expanded row, box {128, 128} and {128, BLOCK_N / kClusterM}, CU_TENSOR_MAP_SWIZZLE_128B).
// Clusters (Cfg::kClusterM = 2, launched with a cluster dimension, one split): the two CTAs of a
// cluster take the two 128-row halves of a 256-row tile of one column tile; each loads half of the
// B tile and multicasts it into both, so a stage is refilled once the consumers of both CTAs have
// released it (the empty barriers count 16 warps). On an H200 at LLaMA shapes no faster than one
// CTA (bench/gemm_sm90_notes.md): a tuner candidate, not the heuristic's.
#pragma once
#include "gemm/sm90/config.cuh"
#include "gemm/sm90/consumer.cuh"
#include "gemm/sm90/epilogue.cuh"
#include "gemm/sm90/ptx.cuh"
#include "gemm/sm90/scheduler.cuh"
#include "gemm/sm90/staged_geometry.cuh"
#include "gemm/sm90/wgmma_ss.cuh"

namespace fp4jit::sm90 {

template <class Cfg>
struct StagedTraits {
  static constexpr ScaleKind kKind = Cfg::kKind;
  static constexpr bool kTmaStore = Cfg::kTmaStore;
  static constexpr StagedGeometry G =
      staged_geometry(kKind, Cfg::BLOCK_N, Cfg::kPackedStages,
                      staged_epi_out_bytes(kTmaStore, Cfg::kOut == OutType::f32));
  static constexpr bool kFp8 = G.fp8;
  static constexpr bool kBF16 = kKind == ScaleKind::nv && Cfg::kScaleCode != ScaleCode::ue4m3;
  static constexpr bool kPromote = G.promote;
  static constexpr bool kAFactor = G.a_factor;
  static constexpr bool kBFactor = G.b_factor;
  static constexpr bool kBColFactor = G.b_col_factor;  // the epilogue's (epilogue.cuh)
  static constexpr int BLOCK_M = 128, BLOCK_N = Cfg::BLOCK_N;
  static constexpr int BLOCK_K = G.block_k;
  static constexpr int kAccum = BLOCK_N / 2;
  static constexpr int kStages = Cfg::kPackedStages;
  static constexpr int kPeriod = Cfg::kPeriod;
  static constexpr int kThreads = G.threads;
  static constexpr int kTransformThreads = 128;  // the producer warpgroup (epilogue.cuh's name)
  static constexpr int kConsumers = 256;
  static constexpr unsigned kTmaBytes = G.tma_bytes;    // a segment's last K tile
  static constexpr unsigned kTileBytes = G.tile_bytes;  // its other K tiles
  static constexpr int kProducerRegs = 40, kConsumerRegs = 232;
  // CTAs per cluster along M (1 or 2): a pair works on two row tiles of one column tile and each
  // CTA loads half of the B tile, multicast into both (half of B's L2 -> SM traffic).
  static constexpr int kCluster = Cfg::kClusterM;
  static constexpr int kBRows = BLOCK_N / kCluster;  // rows of B one CTA loads per K tile
  static constexpr unsigned kBPartBytes = kBRows * 128;

  static_assert(BLOCK_N % 64 == 0 && BLOCK_N >= 64 && BLOCK_N <= 256,
                "BLOCK_N: 64, 128, 192 or 256");
  static_assert(!kPromote || BLOCK_N <= 192,
                "promotion keeps two accumulator sets: BLOCK_N <= 192");
  static_assert(staged_period_ok(kPromote, kPeriod),
                "kPeriod: 1, 2, 4 or 8 where the path promotes, else 1");
  static_assert(kStages >= 2 && kStages <= 16, "stages out of range");
  static_assert((kCluster == 1 || kCluster == 2) && Cfg::kClusterN == 1,
                "staged clusters: 1 or 2 CTAs along M");
  static_assert(kBRows % 8 == 0, "a CTA's part of B: whole 8-row swizzle atoms");
  static_assert(G.smem_bytes <= 227 * 1024,
                "shared memory exceeds 227 KB: fewer stages or a smaller tile");
  static_assert(128 * kProducerRegs + 256 * kConsumerRegs <= kThreads * (65536 / kThreads / 8 * 8),
                "register split exceeds the registers the CTA is launched with");

  using MmaFp8 = WgmmaSS_e4m3<BLOCK_N>;
  using MmaF16 = WgmmaSS_f16<BLOCK_N>;
  using MmaBF16 = WgmmaSS_bf16<BLOCK_N>;
};

template <class T>
struct StagedSmem : AlignedSmem {
  __device__ __forceinline__ explicit StagedSmem(unsigned char* raw) : AlignedSmem(raw) {}
  __device__ __forceinline__ unsigned a(int s) const { return addr + s * T::G.stage_bytes; }
  __device__ __forceinline__ unsigned b(int s) const { return a(s) + T::G.a_bytes; }
  __device__ __forceinline__ unsigned char* a_ptr(int s) const {
    return base + s * T::G.stage_bytes;
  }
  __device__ __forceinline__ unsigned char* b_ptr(int s) const { return a_ptr(s) + T::G.a_bytes; }
  __device__ __forceinline__ unsigned char* factor_ptr(int s) const {
    return base + T::G.factor_offset + s * T::G.factor_stage_bytes;
  }
  __device__ __forceinline__ unsigned factor(int s) const {
    return addr + T::G.factor_offset + s * T::G.factor_stage_bytes;
  }
  __device__ __forceinline__ unsigned long long* full(int s) const {
    return reinterpret_cast<unsigned long long*>(base + T::G.barrier_offset) + s;
  }
  __device__ __forceinline__ unsigned long long* empty(int s) const { return full(T::kStages + s); }
  // Consumer warpgroup wg's half of the TMA-store epilogue buffer.
  __device__ __forceinline__ unsigned epi(int wg) const {
    return addr + T::G.epi_offset + wg * (T::G.epi_bytes / 2);
  }
  __device__ __forceinline__ unsigned* split_flag() const {
    return reinterpret_cast<unsigned*>(base + T::G.scratch_offset);
  }
};

// 1D bulk copy global -> shared, completing bytes on bar (16-byte aligned, a multiple of 16 bytes).
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes,
                                          unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(smem_u32(dst)),
      "l"(reinterpret_cast<unsigned long long>(src)), "r"(bytes), "r"(smem_u32(bar))
      : "memory");
}

// 4 shared-memory wgmmas (one 128-byte K tile) of this consumer warpgroup into d.
template <class T>
__device__ __forceinline__ void staged_mma(float (&d)[T::kAccum], unsigned a_rows, unsigned b,
                                           bool accumulate) {
  fence_operands(d);
  wgmma_fence();
#pragma unroll
  for (int st = 0; st < 4; ++st) {
    const unsigned long long da = smem_desc_sw128(a_rows + 32 * st);
    const unsigned long long db = smem_desc_sw128(b + 32 * st);
    const int scale_d = (st > 0 || accumulate) ? 1 : 0;
    if constexpr (T::kFp8) {
      T::MmaFp8::mma(d, da, db, scale_d);
    } else if constexpr (T::kBF16) {
      T::MmaBF16::mma(d, da, db, scale_d);
    } else {
      T::MmaF16::mma(d, da, db, scale_d);
    }
  }
  wgmma_commit();
  fence_operands(d);
}

// Releases stage s: one arrival per warp on its empty barrier in every CTA of the cluster (the
// CTAs' multicast loads write each other's stages).
template <class T, class Smem>
__device__ __forceinline__ void staged_release(const Smem& sm, int s) {
  if constexpr (T::kCluster == 1) {
    warp_arrive(sm.empty(s));
  } else {
    // Lane r arrives on CTA r's barrier (the arrivals in parallel).
    __syncwarp();
    const unsigned lane = threadIdx.x & 31;
    if (lane < static_cast<unsigned>(T::kCluster)) mbar_arrive_cluster(sm.empty(s), lane);
  }
}

// acc += tmp * a_factor[row] (mx) or tmp * b_factor (ms_grad: one factor per segment, stored for
// every column) with stage s's factors (the segment's), then stage s is released.
template <class T, class Smem>
__device__ __forceinline__ void staged_promote(const Smem& sm, const ConsumerRows& rw,
                                               float (&tmp)[T::kAccum], int s,
                                               float (&acc)[T::kAccum]) {
  fence_operands(tmp);
  const unsigned fac = sm.factor(s);
  float f0 = 1.0f, f1 = 1.0f;
  if constexpr (T::kAFactor) {
    f0 = __uint_as_float(lds32(fac + 4 * rw.r0));
    f1 = __uint_as_float(lds32(fac + 4 * rw.r1));
  }
  const unsigned fb = fac + T::G.a_factor_bytes;
  if constexpr (T::kKind == ScaleKind::ms_grad) {
    const float g = __uint_as_float(lds32(fb));
    f0 *= g;
    f1 *= g;
  }
  promote_fragment<T::BLOCK_N, false>(tmp, f0, f1, 0u, rw.tig, acc);
  staged_release<T>(sm, s);
}

// The TMA issuer's walk in the staged and swapped kernels: every K tile of the CTA's units (first,
// first + stride, ...; k_range turns a unit's segments into K tiles), in the order the consumers
// take them; for each it waits until the stage is free and calls load(s, w, kt, seg_last, seg),
// seg_last marking the segment's last K tile (its factors travel with it).
template <int kPeriod, class Sched, class KRange, class Ring, class Smem, class Load>
__device__ __forceinline__ void issue_stages(const Sched& sched, int first, int stride,
                                             const KRange& k_range, Ring& pos, const Smem& sm,
                                             const Load& load) {
  for (int u = first; u < sched.units; u += stride) {
    WorkUnit w = sched.unit(u);
    k_range(w);
    for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
      const int s = pos.slot();
      mbar_wait(sm.empty(s), pos.empty_parity());
      load(s, w, kt, (kt + 1) % kPeriod == 0 || kt + 1 == w.kt_end,
           static_cast<long long>(kt / kPeriod));
      pos.advance();
    }
  }
}

template <class Cfg>
__global__ void __launch_bounds__(StagedTraits<Cfg>::kThreads, 1)
    gemm_staged_kernel(const __grid_constant__ TmaDesc tma_a, const __grid_constant__ TmaDesc tma_b,
                       const __grid_constant__ TmaDesc tma_d, const GemmParams p_in) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
  using T = StagedTraits<Cfg>;
  // The expansion found a shift outside the exact window: the fused kernel launched next does the
  // work.
  if (gemm::window_failed(p_in)) return;
  // The fused fallback, launched next as a programmatic dependent, may take SMs as this grid's
  // CTAs leave; it reads the flag (final: the expansion has completed) and leaves at once when the
  // window held.
  launch_dependents();
  const GemmParams p = with_fixed_sizes<Cfg>(p_in);
  extern __shared__ unsigned char smem_raw[];
  const StagedSmem<T> sm(smem_raw);
  const int tid = threadIdx.x;
  if (tid == 0) {
    for (int s = 0; s < T::kStages; ++s) {
      mbar_init(sm.full(s), 1);
      mbar_init(sm.empty(s), 8 * T::kCluster);  // one arrive per consumer warp of the cluster
    }
    fence_barrier_init();
    tma_prefetch_desc(&tma_a);
    tma_prefetch_desc(&tma_b);
    if (T::kTmaStore && p_in.tma_store != 0) tma_prefetch_desc(&tma_d);
  }
  __syncthreads();
  if constexpr (T::kCluster > 1) cluster_sync();  // the peer's barriers exist before any arrival
  // Cluster c = blockIdx.x / kCluster takes units c, c + clusters, ...
  const int rank = T::kCluster > 1 ? static_cast<int>(cluster_ctarank()) : 0;
  const int first = static_cast<int>(blockIdx.x) / T::kCluster;
  const int stride = static_cast<int>(gridDim.x) / T::kCluster;

  // A cluster's unit covers kCluster row tiles (split-K is not combined with clusters: the host
  // launches clusters only with one split); this CTA takes the rank-th.
  using Sched =
      TileScheduler<T::BLOCK_M * T::kCluster, T::BLOCK_N, Cfg::kRasterGroup, Cfg::kRasterAlongM>;
  const int k_tiles = (p.K + T::BLOCK_K - 1) / T::BLOCK_K;
  // Split-K and the scheduler count whole segments; unit.kt_* are scaled to K tiles below.
  const Sched sched(p.M, p.N, staged_k_units(k_tiles, T::kPeriod), p.splits);
  const auto k_range = [&](WorkUnit& w) {
    segments_to_k_tiles(w, T::kPeriod, k_tiles);
    w.m0 += rank * T::BLOCK_M;
  };
  RingSlot<T::kStages> pos;

  if (tid < 128) {
    setmaxnreg_dec<T::kProducerRegs>();
    if (tid == 0) {
      issue_stages<T::kPeriod>(
          sched, first, stride, k_range, pos, sm,
          [&](int s, const WorkUnit& w, int kt, bool seg_last, long long seg) {
            mbar_arrive_expect_tx(sm.full(s), seg_last ? T::kTmaBytes : T::kTileBytes);
            tma_load_2d(sm.a_ptr(s), &tma_a, sm.full(s), 128 * kt, w.m0);
            if constexpr (T::kCluster > 1)
              tma_load_2d_multicast(sm.b_ptr(s) + rank * T::kBPartBytes, &tma_b, sm.full(s),
                                    128 * kt, w.n0 + rank * T::kBRows,
                                    static_cast<unsigned short>((1u << T::kCluster) - 1u));
            else
              tma_load_2d(sm.b_ptr(s), &tma_b, sm.full(s), 128 * kt, w.n0);
            if constexpr (T::kAFactor)
              if (seg_last)
                bulk_load(sm.factor_ptr(s), p.a_factor + seg * p.a_factor_ld + w.m0,
                          T::G.a_factor_bytes, sm.full(s));
            if constexpr (T::kBFactor)
              if (seg_last)
                bulk_load(sm.factor_ptr(s) + T::G.a_factor_bytes,
                          p.b_factor + seg * p.b_factor_ld + w.n0, T::G.b_factor_bytes, sm.full(s));
          });
    }
    if constexpr (T::kCluster > 1) {
      __syncwarp();
      cluster_sync();  // no CTA leaves while its peer may still arrive on its barriers
    }
    return;
  }

  setmaxnreg_inc<T::kConsumerRegs>();
  const int ctid = tid - 128;  // 0..255
  const int wg = ctid / 128;
  const ConsumerRows rw = consumer_rows(ctid);
  for (int u = first; u < sched.units; u += stride) {
    WorkUnit w = sched.unit(u);
    k_range(w);
    BColumnFactors<T> b_factors;  // in registers through the main loop (their latency hidden)
    b_factors.load(p, w.n0);
    float acc[T::kAccum];
#pragma unroll
    for (int i = 0; i < T::kAccum; ++i) acc[i] = 0.0f;
    if constexpr (!T::kPromote) {
      int prev = -1;  // stage whose wgmmas may still be reading it
      for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
        const int s = pos.slot();
        mbar_wait(sm.full(s), pos.full_parity());
        staged_mma<T>(acc, sm.a(s) + wg * 64 * 128, sm.b(s), true);
        wgmma_wait<1>();
        if (prev >= 0) staged_release<T>(sm, prev);
        prev = s;
        pos.advance();
      }
      wgmma_wait<0>();
      if (prev >= 0) staged_release<T>(sm, prev);
    } else {
      // One segment at a time into tmp; after its last K tile wait for the tensor cores and
      // promote (which releases that stage).
      float tmp[T::kAccum];
      for (int kt = w.kt_begin; kt < w.kt_end;) {
        const int seg_end = min((kt / T::kPeriod + 1) * T::kPeriod, w.kt_end);
        int s = pos.slot();
        mbar_wait(sm.full(s), pos.full_parity());
        staged_mma<T>(tmp, sm.a(s) + wg * 64 * 128, sm.b(s), false);
        pos.advance();
        for (++kt; kt < seg_end; ++kt) {
          const int next = pos.slot();
          mbar_wait(sm.full(next), pos.full_parity());
          staged_mma<T>(tmp, sm.a(next) + wg * 64 * 128, sm.b(next), true);
          pos.advance();
          wgmma_wait<1>();
          staged_release<T>(sm, s);
          s = next;
        }
        wgmma_wait<0>();
        staged_promote<T>(sm, rw, tmp, s, acc);
      }
    }
    if (splitk_reduce<T>(p, w, sm.split_flag(), acc)) {
      if (T::kTmaStore && p.tma_store != 0)
        epilogue_store_tma<Cfg, T>(p, w, rw, acc, sm.epi(wg), &tma_d, (ctid & 127) == 0, 3 + wg,
                                   b_factors);
      else
        epilogue_store<Cfg, T>(p, w, rw, acc, b_factors);
    }
  }
  // D's last stores are complete before the CTA (and its shared memory) goes.
  if (T::kTmaStore && (ctid & 127) == 0) bulk_wait_group<0>();
  if constexpr (T::kCluster > 1) {
    __syncwarp();
    cluster_sync();
  }
#endif
}

}  // namespace fp4jit::sm90
