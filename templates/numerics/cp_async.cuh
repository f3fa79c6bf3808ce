// cp.async on the device: 16-byte copies from global to shared memory through L2 (sm_80 and up),
// in commit groups. One definition for the quantize kernels' input rings (quantize/device.cuh,
// which adds the host emulator's synchronous copy) and the direct GEMM's operand rings
// (gemm/sm90/ptx.cuh).
#pragma once
#include "numerics/common.cuh"

#if defined(__CUDA_ARCH__)
namespace fp4jit::nx {

// `bytes` (0 to 16) read from `src` into the 16 bytes at shared-window address `dst`, the rest
// zero-filled (0: nothing is read). kPrefetch256: with L2's prefetch size hint of 256 bytes, for
// streams whose warps read every byte of 512-byte runs (the rows kernels' rings: 1.01-1.02x at
// 8192^2 and 16384^2 on an H200; the tile kernels' rings, 128-256 bytes per tile row, lost up to
// 2 % with it).
template <bool kPrefetch256 = false>
__device__ __forceinline__ void cp_async16_shared(u32 dst, const void* src, u32 bytes) {
  if constexpr (kPrefetch256)
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
                 "r"(bytes)
                 : "memory");
  else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes)
                 : "memory");
}
// The thread's copies since its last commit form one group.
__device__ __forceinline__ void cp_async_commit_group() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
// Until at most N of the thread's groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait_group() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

}  // namespace fp4jit::nx
#endif
