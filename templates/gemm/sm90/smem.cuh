// Shared-memory view of the sm90 GEMM (layout in traits.cuh) and the pipeline bookkeeping shared
// by its roles.
//
// Rings (each slot guarded by a full and an empty mbarrier, phases tracked by running counters):
//   packed   [kPackedStages]  TMA writes A and B codes of one K tile; freed by the transform
//                             warpgroup once it has expanded B and copied A.
//   expanded [kExpStages]     the transform warpgroup writes B expanded (128-byte swizzled rows),
//                             a copy of the packed A tile and a header (per-row A info, tile
//                             info); freed by the consumers once their wgmmas on it have completed.
// A K tile takes one packed slot and one or more expanded stages (mx band passes).
#pragma once
#include "gemm/sm90/ptx.cuh"
#include "gemm/sm90/traits.cuh"

namespace fp4jit::sm90 {

// Tile info word of an expanded stage header.
constexpr unsigned kLastPass = 1u;   // the last stage of this K tile: the packed slot is released
constexpr unsigned kUnitLast = 2u;   // the last stage of this work unit
constexpr unsigned kChainCont = 4u;  // (ms promotion) continue the accumulation chain

template <class T>
struct SmemView : AlignedSmem {
  __device__ __forceinline__ explicit SmemView(unsigned char* raw) : AlignedSmem(raw) {}
  __device__ __forceinline__ unsigned exp(int e) const {
    return addr + T::kExpOffset + e * T::kExpStageBytes;
  }
  __device__ __forceinline__ unsigned exp_a(int e) const {
    return exp(e) + T::kExpBBytes;
  }  // packed A copy
  __device__ __forceinline__ unsigned char* packed_a_ptr(int s) const {
    return base + T::kPackedOffset + s * T::kPackedStageBytes;
  }
  __device__ __forceinline__ unsigned char* packed_b_ptr(int s) const {
    return packed_a_ptr(s) + T::kPackedABytes;
  }
  __device__ __forceinline__ unsigned packed_a(int s) const {
    return addr + T::kPackedOffset + s * T::kPackedStageBytes;
  }
  __device__ __forceinline__ unsigned packed_b(int s) const {
    return packed_a(s) + T::kPackedABytes;
  }
  __device__ __forceinline__ unsigned header(int e) const {
    return addr + T::kHeaderOffset + e * T::kHeaderBytes;
  }
  __device__ __forceinline__ unsigned tile_info(int e) const {
    return header(e) + T::BLOCK_M * T::kRowInfoBytes;
  }
  __device__ __forceinline__ unsigned table() const { return addr + T::kTableOffset; }
  __device__ __forceinline__ unsigned char* table_ptr() const { return base + T::kTableOffset; }
  __device__ __forceinline__ unsigned long long* bar(int k) const {
    return reinterpret_cast<unsigned long long*>(base + T::kBarrierOffset) + k;
  }
  __device__ __forceinline__ unsigned long long* packed_full(int s) const { return bar(s); }
  __device__ __forceinline__ unsigned long long* packed_empty(int s) const {
    return bar(T::kPackedStages + s);
  }
  __device__ __forceinline__ unsigned long long* exp_full(int e) const {
    return bar(2 * T::kPackedStages + e);
  }
  __device__ __forceinline__ unsigned long long* exp_empty(int e) const {
    return bar(2 * T::kPackedStages + T::kExpStages + e);
  }
  __device__ __forceinline__ unsigned* scratch() const {
    return reinterpret_cast<unsigned*>(base + T::kScratchOffset);
  }
};

// Running position in a ring: slot and the parity of the phase that fills it.
template <int kStages>
struct RingPos {
  int count = 0;
  __device__ __forceinline__ int slot() const { return count % kStages; }
  __device__ __forceinline__ unsigned full_parity() const {
    return static_cast<unsigned>(count / kStages) & 1u;
  }
  __device__ __forceinline__ unsigned empty_parity() const { return full_parity() ^ 1u; }
};

// The same kept incrementally (slot and phase, no division by the stage count), for pipelines
// that need no running count (staged.cuh, swap.cuh).
template <int kStages>
struct RingSlot {
  int s = 0;
  unsigned phase = 0;
  __device__ __forceinline__ int slot() const { return s; }
  __device__ __forceinline__ unsigned full_parity() const { return phase; }
  __device__ __forceinline__ unsigned empty_parity() const { return phase ^ 1u; }
  __device__ __forceinline__ void advance() {
    if (++s == kStages) {
      s = 0;
      phase ^= 1u;
    }
  }
};

__device__ __forceinline__ void publish_progress(unsigned* progress, int slot, unsigned value) {
  if (progress != nullptr)
    *reinterpret_cast<volatile unsigned*>(progress + 4 * blockIdx.x + slot) = value;
}

// One arrive per warp, after every lane's prior shared-memory accesses.
__device__ __forceinline__ void warp_arrive(unsigned long long* bar) {
  __syncwarp();
  if ((threadIdx.x & 31) == 0) mbar_arrive(bar);
}

}  // namespace fp4jit::sm90
