// fp4jit sm100 (Blackwell) FP4 GEMM: C = epilogue(deq(A) deq(B)^T) with the block scales applied
// by the tensor core (tcgen05.mma kind::mxf4nvf4.block_scale), accumulators in tensor memory.
//
// STATUS: compiled through NVRTC for sm_100a (tests/nvrtc) and inspected with cuobjdump; NOT YET
// RUN on hardware. Correctness rests on the PTX ISA's layouts as read, untested on a GPU.
//
// One output tile of 128 x BLOCK_N per CTA, 192 threads:
//   warp 0     producer: per K tile (256 elements), waits for a free stage, writes both operands'
//              block scales into the stage in the scale-factor atom layout (config.cuh), then
//              lane 0 issues the two TMA loads of the packed codes (128-byte swizzle)
//   warp 1     allocates tensor memory; lane 0 copies each stage's scale atoms into tensor memory
//              (tcgen05.cp), issues 4 MMAs of K = 64 (M = 128, N = BLOCK_N) and commits the
//              stage back to the producer; after the last K tile, commits the accumulator
//   warps 2-5  epilogue: warp w reads lanes 32 (w % 4) .. + 31 (tile rows) of the accumulator,
//              32 columns at a time, and stores alpha * factor * acc [+ bias] [+ beta C]
// Host side: runtime/cuda/gemm_launch.cpp; uint8 tensor maps {128 bytes, 128 / BLOCK_N rows},
// CU_TENSOR_MAP_SWIZZLE_128B; grid = output tiles; GemmGeometry::smem_bytes of dynamic shared
// memory. Preconditions: K a multiple of 32, code pointers 16-byte aligned.
#pragma once
#include "gemm/epilogue_io.cuh"
#include "gemm/sm100/config.cuh"
#include "gemm/sm100/ptx.cuh"
#include "gemm/sm90/ptx.cuh"

namespace fp4jit::sm100 {

using sm90::TmaDesc;

// The scale code of (row, block kb), 0 outside the tensor (a zero scale: the padding adds 0).
__device__ __forceinline__ unsigned sf_code(const unsigned char* base, int ld, int row, int rows,
                                            int block_rows, int kb, int kbs) {
  if (row >= rows || kb >= kbs) return 0u;
  return __ldg(base + static_cast<long long>(row / block_rows) * ld + kb);
}

// Warp 0: the stage's scale atoms of one operand (128 rows from r0), one 32-bit word (4 scales of
// one row) per lane and step.
template <class Cfg, int kAtoms>
__device__ __forceinline__ void write_sf(unsigned char* dst, const unsigned char* base, int ld,
                                         int r0, int rows, int block_rows, int kb0, int kbs) {
  const int lane = threadIdx.x & 31;
#pragma unroll 1
  for (int w = lane; w < kAtoms * 128; w += 32) {
    const int atom = w / 128, i = (w % 128) / 4, c = w % 4;
    const int row = r0 + 32 * c + i, kb = kb0 + 4 * atom;
    unsigned word = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j)
      word |= sf_code(base, ld, row, rows, block_rows, kb + j, kbs) << (8 * j);
    *reinterpret_cast<unsigned*>(dst + atom * 512 + i * 16 + c * 4) = word;
  }
}

template <class Cfg>
__global__ void __launch_bounds__(192, 1)
    gemm_kernel(const __grid_constant__ TmaDesc tma_a, const __grid_constant__ TmaDesc tma_b,
                const GemmParams p_in) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 1000)
  constexpr GemmGeometry G = GemmShapeOf<Cfg>::G;
  constexpr int kStages = Cfg::kStages, BLOCK_N = Cfg::BLOCK_N;
  static_assert(Cfg::BLOCK_M == 128 && BLOCK_N == 128, "sm100 GEMM: tiles of 128 x 128");
  static_assert(kStages >= 2 && kStages <= 8, "stages: 2..8");
  static_assert(G.smem_bytes <= 227 * 1024, "shared memory exceeds 227 KB");
  GemmParams p = p_in;
  if constexpr (Cfg::kN > 0) p.N = Cfg::kN;
  if constexpr (Cfg::kK > 0) p.K = Cfg::kK;

  extern __shared__ unsigned char smem_raw[];
  const unsigned raw = sm90::smem_u32(smem_raw);
  unsigned char* smem =
      smem_raw + (((raw + 1023u) & ~1023u) - raw);  // 1024-aligned (swizzle atoms)
  const unsigned base = sm90::smem_u32(smem);
  auto* bars = reinterpret_cast<unsigned long long*>(smem + G.barrier_offset);
  unsigned long long* full = bars;
  unsigned long long* empty = bars + kStages;
  unsigned long long* accum_full = bars + 2 * kStages;
  auto* tmem_holder = reinterpret_cast<unsigned*>(bars + 2 * kStages + 1);

  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int tiles_n = (p.N + BLOCK_N - 1) / BLOCK_N;
  const int m0 = static_cast<int>(blockIdx.x) / tiles_n * 128,
            n0 = static_cast<int>(blockIdx.x) % tiles_n * BLOCK_N;
  const int k_tiles = (p.K + G.block_k - 1) / G.block_k;
  const int kbs = p.K / G.sf_vec;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      sm90::mbar_init(full + s, 1);
      sm90::mbar_init(empty + s, 1);
    }
    sm90::mbar_init(accum_full, 1);
    sm90::fence_barrier_init();
    sm90::tma_prefetch_desc(&tma_a);
    sm90::tma_prefetch_desc(&tma_b);
  }
  if (warp == 1) tmem_alloc(sm90::smem_u32(tmem_holder), G.tmem_cols);
  tc_fence_before();
  __syncthreads();
  tc_fence_after();
  const unsigned tmem = *tmem_holder;  // lane 0, column base
  const unsigned acc_tmem = tmem;
  const unsigned sf_tmem = tmem + BLOCK_N;  // per stage: A atoms, then B atoms, 4 columns each

  if (warp == 0) {
    for (int kt = 0; kt < k_tiles; ++kt) {
      const int s = kt % kStages;
      sm90::mbar_wait(empty + s, ((kt / kStages) & 1) ^ 1);
      unsigned char* stage = smem + s * G.stage_bytes;
      unsigned char* sfa = stage + G.a_bytes + G.b_bytes;
      const int kb0 = kt * (G.block_k / G.sf_vec);
      write_sf<Cfg, G.sf_atoms>(sfa, p.a_scale, p.a_scale_ld, m0, p.M, Cfg::kABlockRows, kb0, kbs);
      write_sf<Cfg, G.sf_atoms>(sfa + G.sf_atoms * 512, p.b_scale, p.b_scale_ld, n0, p.N,
                                Cfg::kBBlockRows, kb0, kbs);
      sm90::fence_proxy_async();  // tcgen05.cp reads the scales through the async proxy
      __syncwarp();
      if (lane == 0) {
        sm90::mbar_arrive_expect_tx(full + s, G.tma_bytes);
        sm90::tma_load_2d(stage, &tma_a, full + s, kt * G.row_bytes, m0);
        sm90::tma_load_2d(stage + G.a_bytes, &tma_b, full + s, kt * G.row_bytes, n0);
      }
      __syncwarp();
    }
  } else if (warp == 1) {
    if (lane == 0) {
      constexpr bool kE8M0 = Cfg::kKind == ScaleKind::mx;
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % kStages;
        sm90::mbar_wait(full + s, (kt / kStages) & 1);
        tc_fence_after();
        const unsigned stage = base + s * G.stage_bytes;
        const unsigned sfa = stage + G.a_bytes + G.b_bytes, sfb = sfa + G.sf_atoms * 512;
        const unsigned sfa_t = sf_tmem + s * 8 * G.sf_atoms, sfb_t = sfa_t + 4 * G.sf_atoms;
#pragma unroll
        for (int a = 0; a < G.sf_atoms; ++a) {
          tmem_copy_sf(sfa_t + 4 * a, umma_desc_sf(sfa + 512 * a));
          tmem_copy_sf(sfb_t + 4 * a, umma_desc_sf(sfb + 512 * a));
        }
#pragma unroll
        for (int k = 0; k < G.block_k / 64; ++k) {
          // block16: one atom (4 scales) per MMA of K = 64; block32: two scales, bytes 0-1 or 2-3.
          const int atom = kE8M0 ? k / 2 : k;
          const unsigned sf_id = kE8M0 ? 2u * (k % 2) : 0u;
          const unsigned idesc = umma_idesc_fp4(128, BLOCK_N, kE8M0, sf_id, sf_id);
          umma_fp4<Cfg::kKind>(acc_tmem, umma_desc_sw128(stage + 32 * k),
                               umma_desc_sw128(stage + G.a_bytes + 32 * k), idesc, sfa_t + 4 * atom,
                               sfb_t + 4 * atom, kt > 0 || k > 0);
        }
        umma_commit(sm90::smem_u32(empty + s));
      }
      umma_commit(sm90::smem_u32(accum_full));
    }
    __syncwarp();
  } else {
    const int quarter = warp % 4;  // tensor-memory lanes 32 quarter .. + 31
    const int row = 32 * quarter + lane, m = m0 + row;
    sm90::mbar_wait(accum_full, 0);
    tc_fence_after();
    float base_f = p.alpha;
    if constexpr (Cfg::kKind == ScaleKind::nv) {
      base_f *= p.tensor_factor;
      if (p.a_tensor_scale != nullptr) base_f *= 1.0f / *p.a_tensor_scale;
      if (p.b_tensor_scale != nullptr) base_f *= 1.0f / *p.b_tensor_scale;
    }
#pragma unroll 1
    for (int c = 0; c < BLOCK_N / 32; ++c) {
      float v[32];
      tmem_load_32(acc_tmem + (static_cast<unsigned>(32 * quarter) << 16) + 32 * c, v);
      if (m < p.M && k_tiles > 0) {
#pragma unroll
        for (int j = 0; j < 32; ++j) {
          const int n = n0 + 32 * c + j;
          if (n >= p.N) break;
          float x = v[j] * base_f;
          if (p.bias != nullptr) x += gemm::load_bias(p.bias, p.bias_type, n);
          const long long ci = static_cast<long long>(m) * p.ldc + n;
          if (p.c != nullptr && p.beta != 0.0f)
            x = fmaf(p.beta, gemm::load_out<Cfg::kOut>(p.c, ci), x);
          gemm::store_one<Cfg::kOut>(p.d, static_cast<long long>(m) * p.ldd + n, x);
        }
      }
    }
  }
  tc_fence_before();
  __syncthreads();
  if (warp == 1) tmem_dealloc(tmem, G.tmem_cols);
#endif
}

}  // namespace fp4jit::sm100
