// Thin wrappers over the sm_90a PTX the GEMM uses: mbarriers, TMA tile loads, proxy fences,
// wgmma group control, register reconfiguration, named barriers and warp reductions.
// Device code only; compiles under nvcc and NVRTC (no standard headers needed).
#pragma once
#include "numerics/cp_async.cuh"

namespace fp4jit::sm90 {

// A CUtensorMap (cuda.h) as the kernel sees it: 128 opaque bytes, passed __grid_constant__.
struct alignas(64) TmaDesc {
  unsigned long long opaque[16];
};

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// The dynamic shared memory rounded up to 1024 bytes (128-byte swizzle atoms need it); the
// kernels' layouts add 1024 bytes of slack for this.
struct AlignedSmem {
  unsigned char* base;  // 1024-aligned generic pointer
  unsigned addr;        // its shared-window address
  __device__ __forceinline__ explicit AlignedSmem(unsigned char* raw) {
    const unsigned a = smem_u32(raw);
    const unsigned aligned = (a + 1023u) & ~1023u;
    base = raw + (aligned - a);
    addr = aligned;
  }
};

// ---- mbarrier -------------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count)
               : "memory");
}
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar))
               : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned long long* bar, unsigned bytes) {
  asm volatile(
      "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)),
      "r"(bytes)
      : "memory");
}
// True once the phase with the given parity has completed.
__device__ __forceinline__ bool mbar_test(unsigned long long* bar, unsigned parity) {
  unsigned ok;
  asm volatile(
      "{\n.reg .pred p;\n"
      "mbarrier.test_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(ok)
      : "r"(smem_u32(bar)), "r"(parity)
      : "memory");
  return ok != 0;
}
// Spins until the phase with the given parity has completed, acquiring at `scope` (cta, cluster).
#define FP4JIT_MBAR_WAIT(scope, bar, parity)        \
  asm volatile(                                     \
      "{\n.reg .pred p;\n"                          \
      "WAIT_%=:\n"                                  \
      "mbarrier.try_wait.parity.acquire." scope     \
      ".shared::cta.b64 p, [%0], %1;\n"             \
      "@!p bra WAIT_%=;\n}\n" ::"r"(smem_u32(bar)), \
      "r"(parity)                                   \
      : "memory")
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
  FP4JIT_MBAR_WAIT("cta", bar, parity);
}

// ---- TMA --------------------------------------------------------------------------------------
// 2D tile load: box at (c0 = inner coordinate, c1 = outer) into smem, completing bytes on bar.
__device__ __forceinline__ void tma_load_2d(void* dst, const TmaDesc* desc, unsigned long long* bar,
                                            int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
      "%3}], [%4];" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<unsigned long long>(desc)), "r"(c0), "r"(c1), "r"(smem_u32(bar))
      : "memory");
}
// The same load multicast to the CTAs of `mask` in the cluster: each receives the box at the same
// shared-memory offset, and its barrier at bar's offset gets the bytes' completion.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const TmaDesc* desc,
                                                      unsigned long long* bar, int c0, int c1,
                                                      unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::"
      "cluster [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<unsigned long long>(desc)), "r"(c0), "r"(c1), "r"(smem_u32(bar)),
      "h"(mask)
      : "memory");
}
// 2D tile store: the box at smem src to (c0, c1) of the tensor (elements past its edges are not
// written), in the thread's bulk group.
__device__ __forceinline__ void tma_store_2d(const TmaDesc* desc, unsigned src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                   reinterpret_cast<unsigned long long>(desc)),
               "r"(c0), "r"(c1), "r"(src)
               : "memory");
}
__device__ __forceinline__ void bulk_commit_group() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
// Until at most N of the thread's bulk groups are still reading their shared memory.
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
// Until at most N of the thread's bulk groups are incomplete (their writes done).
template <int N>
__device__ __forceinline__ void bulk_wait_group() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ void tma_prefetch_desc(const TmaDesc* desc) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(desc))
               : "memory");
}

// Ordinary shared-memory stores made visible to the async proxy (wgmma operand reads).
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// ---- cp.async (the direct kernel's per-thread copies: numerics/cp_async.cuh) -----------------
// 16 bytes from global memory into shared memory, L2 only (zeros where !valid: nothing is read).
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool valid) {
  nx::cp_async16_shared(dst, src, valid ? 16u : 0u);
}
// One commit group per call; cp_async_wait<N> waits until at most N of the thread's groups are
// pending.
__device__ __forceinline__ void cp_async_commit() {
  nx::cp_async_commit_group();
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  nx::cp_async_wait_group<N>();
}

// ---- wgmma group control ----------------------------------------------------------------------
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accesses of an accumulator across wgmma instructions.
template <int N>
__device__ __forceinline__ void fence_operands(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// K-major, 128-byte-swizzled shared-memory operand: rows of 128 bytes, 8-row atoms of 1024 bytes.
__device__ __forceinline__ unsigned long long smem_desc_sw128(unsigned smem_addr) {
  const unsigned long long start = (smem_addr & 0x3FFFFu) >> 4;
  const unsigned long long lbo = 1;          // unused for swizzled K-major layouts
  const unsigned long long sbo = 1024 >> 4;  // stride between 8-row groups
  return start | (lbo << 16) | (sbo << 32) | (1ull << 62);
}

// ---- clusters ---------------------------------------------------------------------------------
__device__ __forceinline__ unsigned cluster_ctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// Every thread of every CTA of the cluster (none may have exited): arrive, then wait; release /
// acquire order shared-memory writes (barrier initialization included) across the cluster.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
}
// One arrival on the mbarrier at bar's offset in the shared memory of cluster CTA `rank`, with
// the arrive's default (CTA-scope) release: what it orders is this thread's completed reads of
// a stage (wgmma_wait) before the peer's next TMA write into it; a cluster-scope release costs
// a fence per arrival.
__device__ __forceinline__ void mbar_arrive_cluster(unsigned long long* bar, unsigned rank) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(smem_u32(bar)),
      "r"(rank)
      : "memory");
}

// The address of this CTA's shared location `addr` in cluster CTA `rank` (shared::cluster window).
__device__ __forceinline__ unsigned cluster_map(unsigned addr, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
// One arrival on the mbarrier at bar's offset in cluster CTA `rank`, releasing at cluster scope:
// what this thread (and, through a barrier before it, its CTA) wrote or read is ordered before
// what the peer does after its acquiring wait (mbar_wait_cluster).
__device__ __forceinline__ void mbar_arrive_release_cluster(unsigned long long* bar,
                                                            unsigned rank) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(
                   cluster_map(smem_u32(bar), rank))
               : "memory");
}
// mbar_wait, acquiring at cluster scope (the arrivals came from other CTAs of the cluster).
__device__ __forceinline__ void mbar_wait_cluster(unsigned long long* bar, unsigned parity) {
  FP4JIT_MBAR_WAIT("cluster", bar, parity);
}
// 16 bytes at a shared::cluster address (cluster_map).
__device__ __forceinline__ float4 ld_cluster_f4(unsigned addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}

// ---- registers, barriers, reductions ---------------------------------------------------------
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
// Programmatic dependent launch, in the dependent kernel: wait until the grid before it on the
// stream has completed and its memory operations are visible (a no-op for a kernel launched
// without the attribute). The grid before lets it start early with
// griddepcontrol.launch_dependents (staged_expand.cuh).
__device__ __forceinline__ void wait_prerequisite_grid() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}
// Lets the grid launched after this one as a programmatic dependent start (it still waits for
// this grid's completion in wait_prerequisite_grid before it reads what this grid wrote).
__device__ __forceinline__ void launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
// Release / acquire at GPU scope for the split-K hand-off (a relaxed atomic after it releases,
// before it acquires): lighter than __threadfence()'s sequentially consistent fence.sc.gpu.
__device__ __forceinline__ void fence_acq_rel_gpu() {
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
}
// Non-aligned form: the warps may arrive diverged (e.g. after the TMA issuer's branch).
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("barrier.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ unsigned redux_max(unsigned v) {
  unsigned r;
  asm volatile("redux.sync.max.u32 %0, %1, 0xffffffff;" : "=r"(r) : "r"(v));
  return r;
}
__device__ __forceinline__ unsigned redux_min(unsigned v) {
  unsigned r;
  asm volatile("redux.sync.min.u32 %0, %1, 0xffffffff;" : "=r"(r) : "r"(v));
  return r;
}

// ---- shared-memory vector access -------------------------------------------------------------
__device__ __forceinline__ unsigned lds32(unsigned addr) {
  unsigned v;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr));
  return v;
}
__device__ __forceinline__ void lds64(unsigned addr, unsigned& a, unsigned& b) {
  asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];" : "=r"(a), "=r"(b) : "r"(addr));
}
__device__ __forceinline__ void lds128(unsigned addr, unsigned& a, unsigned& b, unsigned& c,
                                       unsigned& d) {
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(a), "=r"(b), "=r"(c), "=r"(d)
               : "r"(addr));
}
__device__ __forceinline__ void sts32(unsigned addr, unsigned a) {
  asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(a) : "memory");
}
__device__ __forceinline__ void sts64(unsigned addr, unsigned a, unsigned b) {
  asm volatile("st.shared.v2.b32 [%0], {%1, %2};" ::"r"(addr), "r"(a), "r"(b) : "memory");
}
__device__ __forceinline__ void sts128(unsigned addr, unsigned a, unsigned b, unsigned c,
                                       unsigned d) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(a), "r"(b), "r"(c),
               "r"(d)
               : "memory");
}

}  // namespace fp4jit::sm90
