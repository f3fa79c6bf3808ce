// The CUDA names the quantize templates and the staged GEMM expansion use, for compiling them as
// host C++ and running them on the CPU emulator (emulator.hpp): one fiber per GPU thread, CTAs one
// after another, __shared__ variables as function statics, warp shuffles and barriers as fiber
// rendezvous.
// Include before any template.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

struct uint4 {
  unsigned x, y, z, w;
};
struct uint2 {
  unsigned x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) {
  return float4{x, y, z, w};
}

namespace fp4jit::emu {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

struct ThreadIds {
  Dim3 thread, block, block_dim, grid_dim;
};
// The running fiber's ids.
const ThreadIds& ids();

// Rendezvous of the calling thread's warp: every live lane deposits 8 bytes, all 32 are returned.
std::array<std::uint64_t, 32> warp_exchange(std::uint64_t value);
int lane();
void sync_threads();

template <class T>
std::uint64_t to_bits(T v) {
  std::uint64_t u = 0;
  std::memcpy(&u, &v, sizeof(T));
  return u;
}
template <class T>
T from_bits(std::uint64_t u) {
  T v;
  std::memcpy(&v, &u, sizeof(T));
  return v;
}

}  // namespace fp4jit::emu

#define threadIdx (::fp4jit::emu::ids().thread)
#define blockIdx (::fp4jit::emu::ids().block)
#define blockDim (::fp4jit::emu::ids().block_dim)
#define gridDim (::fp4jit::emu::ids().grid_dim)

inline void __syncthreads() {
  fp4jit::emu::sync_threads();
}

template <class T>
T __shfl_xor_sync(unsigned, T v, int mask) {
  const auto all = fp4jit::emu::warp_exchange(fp4jit::emu::to_bits(v));
  return fp4jit::emu::from_bits<T>(all[static_cast<unsigned>(fp4jit::emu::lane() ^ mask) & 31u]);
}
template <class T>
T __shfl_up_sync(unsigned, T v, unsigned delta) {
  const auto all = fp4jit::emu::warp_exchange(fp4jit::emu::to_bits(v));
  const int src = fp4jit::emu::lane() - static_cast<int>(delta);
  return src < 0 ? v : fp4jit::emu::from_bits<T>(all[src]);
}
template <class T>
T __shfl_sync(unsigned, T v, int src) {
  const auto all = fp4jit::emu::warp_exchange(fp4jit::emu::to_bits(v));
  return fp4jit::emu::from_bits<T>(all[src & 31]);
}
inline void __syncwarp(unsigned = 0xffffffffu) {
  fp4jit::emu::warp_exchange(0);
}
inline unsigned __ballot_sync(unsigned, int pred) {
  const auto all = fp4jit::emu::warp_exchange(pred != 0 ? 1u : 0u);
  unsigned m = 0;
  for (int i = 0; i < 32; ++i) m |= static_cast<unsigned>(all[i] & 1u) << i;
  return m;
}

inline unsigned atomicMax(unsigned* p, unsigned v) {
  const unsigned old = *p;
  if (v > old) *p = v;
  return old;
}
inline unsigned atomicMin(unsigned* p, unsigned v) {
  const unsigned old = *p;
  if (v < old) *p = v;
  return old;
}
inline unsigned atomicAdd(unsigned* p, unsigned v) {
  const unsigned old = *p;
  *p = old + v;
  return old;
}
inline int __clz(int v) {
  return v == 0 ? 32 : __builtin_clz(static_cast<unsigned>(v));
}
inline float __uint_as_float(unsigned u) {
  return fp4jit::emu::from_bits<float>(u);
}
inline unsigned __float_as_uint(float f) {
  return static_cast<unsigned>(fp4jit::emu::to_bits(f));
}
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) {
  return uint4{a, b, c, d};
}
inline int max(int a, int b) {
  return a > b ? a : b;
}
inline int min(int a, int b) {
  return a < b ? a : b;
}
inline int __popc(unsigned v) {
  return __builtin_popcount(v);
}
inline int __ffs(int v) {
  return __builtin_ffs(v);
}
inline double __dsqrt_rn(double v) {
  return std::sqrt(v);
}
inline uint4 __ldg(const uint4* p) {
  return *p;
}
inline uint4 __ldcs(const uint4* p) {
  return *p;
}
