// fp4jit sm90 FP4 GEMM: C = epilogue(deq(A) deq(B)^T) on Hopper's FP8 (QGMMA) or 16-bit (HGMMA)
// tensor cores, operands kept packed (E2M1, two per byte) in global memory.
//
// One kernel template, one config type (config.cuh). 384 threads (512 with a second transform
// warpgroup), one CTA per SM, persistent:
//   transform warpgroup(s): TMA loads of packed A and B tiles (thread 0), block-scale processing,
//                B expansion into 128-byte-swizzled K-major shared memory, copy of the packed A
//                tile next to it (transform.cuh)
//   2 consumer warpgroups: 64 rows each; A expanded straight into wgmma register fragments,
//                B from shared memory; FP32 accumulation; epilogue and split-K (consumer.cuh,
//                epilogue.cuh)
// Host side: two 2D tensor maps (uint8, box {kPackedRow bytes, BLOCK_M / BLOCK_N rows}, the FP8
// path with 64-byte swizzle, the 16-bit path without), dynamic shared memory
// GemmTraits<Cfg>::kSmemBytes, grid = min(units, SMs), GemmTraits<Cfg>::kThreads threads;
// bench/gemm_sm90_harness.cu does exactly this, and choose_gemm (heuristic.cuh) picks the config.
// Host side in the library: runtime/cuda/gemm_launch.cpp (geometry.cuh gives it the same
// numbers). Preconditions (checked by the host): K a multiple of 32 (TMA row pitch K/2 a multiple
// of 16 bytes), code pointers 16-byte aligned; Cfg::kN / kK, when set, equal to p.N / p.K.
#pragma once
#include "gemm/sm90/config.cuh"
#include "gemm/sm90/consumer.cuh"
#include "gemm/sm90/epilogue.cuh"
#include "gemm/sm90/expand.cuh"
#include "gemm/sm90/nv_decode.cuh"
#include "gemm/sm90/ptx.cuh"
#include "gemm/sm90/scheduler.cuh"
#include "gemm/sm90/smem.cuh"
#include "gemm/sm90/traits.cuh"
#include "gemm/sm90/transform.cuh"

namespace fp4jit::sm90 {

template <class Cfg>
__global__ void __launch_bounds__(GemmTraits<Cfg>::kThreads, 1)
    gemm_kernel(const __grid_constant__ TmaDesc tma_a, const __grid_constant__ TmaDesc tma_b,
                const GemmParams p_in) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
  using T = GemmTraits<Cfg>;
  // Fallback of the staged path: run only when its expansion found a shift outside the window.
  // Launched as a programmatic dependent of the staged or swapped kernel (gemm_launch.cpp), whose
  // CTAs let it start only after their own test of the flag, i.e. after the expansion grid (the
  // flag's only writer) completed: the flag is final here, so when the window held this grid's
  // CTAs leave at once, on the SMs the other grid leaves free, instead of waiting for its end.
  // When it failed, that grid's CTAs returned without writing anything; the wait is for order.
  if (p_in.fallback != nullptr && p_in.fallback_runs != 0) {
    if (!gemm::window_failed(p_in)) return;
    wait_prerequisite_grid();
  }
  // Compile-time sizes fold into every role's loops and edge checks.
  const GemmParams p = with_fixed_sizes<Cfg>(p_in);
  extern __shared__ unsigned char smem_raw[];
  const SmemView<T> sm(smem_raw);
  const int tid = threadIdx.x;

  if (tid == 0) {
    for (int s = 0; s < T::kPackedStages; ++s) {
      mbar_init(sm.packed_full(s), 1);
      mbar_init(sm.packed_empty(s), T::kPackedEmptyArrivals);
    }
    for (int e = 0; e < T::kExpStages; ++e) {
      mbar_init(sm.exp_full(e), T::kExpFullArrivals);
      mbar_init(sm.exp_empty(e), T::kExpEmptyArrivals);
    }
    fence_barrier_init();
    tma_prefetch_desc(&tma_a);
    tma_prefetch_desc(&tma_b);
  }
  if constexpr (T::kKind == ScaleKind::mx) {
    if (tid < kLutEntries) {
      unsigned lo, hi;
      e4m3_lut(tid, lo, hi);
      reinterpret_cast<unsigned*>(sm.table_ptr())[2 * tid] = lo;
      reinterpret_cast<unsigned*>(sm.table_ptr())[2 * tid + 1] = hi;
    }
  } else if constexpr (T::kKind == ScaleKind::nv) {
    if (tid < 256)
      reinterpret_cast<unsigned short*>(sm.table_ptr())[tid] =
          nv_decode_bits<T::kBF16>(Cfg::kScaleCode, tid);
  }
  __syncthreads();

  if (tid < T::kTransformThreads) {
    if constexpr (T::kSetMaxNReg) setmaxnreg_dec<Cfg::kTransformRegs>();
    transform_role<Cfg>(sm, &tma_a, &tma_b, p);
  } else {
    if constexpr (T::kSetMaxNReg) setmaxnreg_inc<Cfg::kConsumerRegs>();
    using Sched = TileScheduler<T::BLOCK_M, T::BLOCK_N, Cfg::kRasterGroup, Cfg::kRasterAlongM>;
    const int k_tiles = (p.K + T::BLOCK_K - 1) / T::BLOCK_K;
    const Sched sched(p.M, p.N, k_tiles, p.splits);
    const int ctid = tid - T::kTransformThreads;  // 0..255
    const int wl = ctid & 127;
    const ConsumerRows rw = consumer_rows(ctid);
    ConsumerPipe<T> pp;
    pp.progress = p.progress;
    pp.progress_slot = 2 + ctid / 128;
    pp.leader = wl == 0;
    for (int u = blockIdx.x; u < sched.units; u += gridDim.x) {
      const WorkUnit w = sched.unit(u);
      float acc[T::kAccum];
      if constexpr (T::kPromote) {
        float tmp[T::kAccum];
        mainloop_promote<T>(sm, pp, rw, tmp, acc);
      } else {
        mainloop_accumulate<T>(sm, pp, rw, acc);
      }
      if (splitk_reduce<T>(p, w, sm.scratch() + T::kSplitFlagWord, acc))
        epilogue_store<Cfg>(p, w, rw, acc);
    }
  }
#endif
}

}  // namespace fp4jit::sm90
