// tcgen05 (Blackwell tensor core generation 5) PTX wrappers of the sm100 GEMM: tensor-memory
// allocation, shared-memory-to-tensor-memory copies of scale factors, block-scaled FP4 MMAs,
// commits to mbarriers and tensor-memory loads. sm_100a only. Compiled, NOT YET RUN on hardware.
#pragma once

namespace fp4jit::sm100 {

// K-major operand in shared memory, 128-byte swizzle (rows of 128 bytes, 8-row atoms of 1024 B):
// start >> 4, leading offset 16 B (unused when swizzled), stride 1024 B, descriptor version 1,
// layout type 2 (SWIZZLE_128B).
__device__ __forceinline__ unsigned long long umma_desc_sw128(unsigned smem_addr) {
  return static_cast<unsigned long long>((smem_addr & 0x3FFFFu) >> 4) | (1ull << 16) |
         (static_cast<unsigned long long>(1024 >> 4) << 32) | (1ull << 46) | (2ull << 61);
}
// Scale-factor atom in shared memory (no swizzle): 8-row core matrices of 16 bytes, 128 B apart.
__device__ __forceinline__ unsigned long long umma_desc_sf(unsigned smem_addr) {
  return static_cast<unsigned long long>((smem_addr & 0x3FFFFu) >> 4) |
         (static_cast<unsigned long long>(128 >> 4) << 32) | (1ull << 46);
}

// Instruction descriptor of kind::mxf4nvf4 (block-scaled dense MMA, D in FP32, both K-major):
// A and B E2M1 (format 1), N >> 3, M >> 4, scale format (0 UE4M3, 1 UE8M0) and the byte of the
// 32-bit scale word each operand starts at (scale-factor id).
__host__ __device__ constexpr unsigned umma_idesc_fp4(int m, int n, bool e8m0, unsigned sfa_id, unsigned sfb_id) {
  return (sfb_id << 4) | (1u << 7) | (1u << 10) | (static_cast<unsigned>(n >> 3) << 17) |
         ((e8m0 ? 1u : 0u) << 23) | (static_cast<unsigned>(m >> 4) << 24) | (sfa_id << 29);
}

__device__ __forceinline__ void tmem_alloc(unsigned holder_smem, unsigned cols) {
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(holder_smem), "r"(cols)
               : "memory");
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void tmem_dealloc(unsigned taddr, unsigned cols) {
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" ::"r"(taddr), "r"(cols) : "memory");
}
__device__ __forceinline__ void tc_fence_before() {
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
}
__device__ __forceinline__ void tc_fence_after() { asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory"); }

// 32 lanes x 128 bits of scale factors from shared memory, replicated into the 4 lane quarters.
__device__ __forceinline__ void tmem_copy_sf(unsigned taddr, unsigned long long sdesc) {
  asm volatile("tcgen05.cp.cta_group::1.32x128b.warpx4 [%0], %1;" ::"r"(taddr), "l"(sdesc) : "memory");
}

// D (tensor memory) (+)= A B^T with per-block scales from tensor memory.
template <ScaleKind kKind>
__device__ __forceinline__ void umma_fp4(unsigned d_tmem, unsigned long long a_desc, unsigned long long b_desc,
                                         unsigned idesc, unsigned sfa_tmem, unsigned sfb_tmem, bool accumulate) {
  if constexpr (kKind == ScaleKind::nv) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
        "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16 [%0], %1, %2, %3, [%5], [%6], p;\n}\n" ::"r"(
            d_tmem),
        "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(accumulate ? 1u : 0u), "r"(sfa_tmem), "r"(sfb_tmem)
        : "memory");
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
        "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block32 [%0], %1, %2, %3, [%5], [%6], p;\n}\n" ::"r"(
            d_tmem),
        "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(accumulate ? 1u : 0u), "r"(sfa_tmem), "r"(sfb_tmem)
        : "memory");
  }
}

// Arrives on the mbarrier once every tcgen05 operation this thread issued before has completed.
__device__ __forceinline__ void umma_commit(unsigned bar_smem) {
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" ::"r"(bar_smem)
               : "memory");
}

// 32 consecutive FP32 columns of this warp's 32 lanes (one row per thread).
__device__ __forceinline__ void tmem_load_32(unsigned taddr, float (&v)[32]) {
  unsigned r[32];
  asm volatile(
      "tcgen05.ld.sync.aligned.32x32b.x32.b32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, "
      "%15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, [%32];"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]), "=r"(r[8]),
        "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15]), "=r"(r[16]),
        "=r"(r[17]), "=r"(r[18]), "=r"(r[19]), "=r"(r[20]), "=r"(r[21]), "=r"(r[22]), "=r"(r[23]), "=r"(r[24]),
        "=r"(r[25]), "=r"(r[26]), "=r"(r[27]), "=r"(r[28]), "=r"(r[29]), "=r"(r[30]), "=r"(r[31])
      : "r"(taddr));
  asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
  // The loaded registers are valid only after the wait: tie every use to it.
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    asm volatile("" : "+r"(r[i])::"memory");
    v[i] = __uint_as_float(r[i]);
  }
}

}  // namespace fp4jit::sm100
