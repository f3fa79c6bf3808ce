// Device helpers of the quantize kernels: warp shuffles and reductions, 16-byte loads of any
// input type, packed code stores, correctly rounded double arithmetic.
//
// Compiled by NVRTC and nvcc. The host emulator (tests/emu) compiles these templates too: it
// provides the CUDA names used here (threadIdx, __shfl_xor_sync, __syncthreads, atomics, uint4,
// __ldg, __ldcs) before including them, so this file needs no host branch beyond the arithmetic.
#pragma once
#include "numerics/cp_async.cuh"
#include "quantize/config.cuh"

#if defined(__CUDACC__)
#define FP4JIT_DEV __device__ __forceinline__
#else
#define FP4JIT_DEV inline
#endif

namespace fp4jit::kern {

FP4JIT_DEV int lane_id() {
  return static_cast<int>(threadIdx.x & 31u);
}
FP4JIT_DEV int warp_id() {
  return static_cast<int>(threadIdx.x >> 5);
}

// Position (r, c) in a grid `cols` wide (flat index r * cols + c), moved by a fixed step without
// a 64-bit division per move. kReverse walks the flat indices from the end (total - 1 - i): the
// stats passes do, so that the quantize pass after them finds the last items still in L2. Index:
// the type of the position and the step (int where the launch keeps the grid below 2^31 items:
// the moves then stay in 32-bit arithmetic).
template <bool kReverse, class Index = i64>
struct GridWalk {
  Index r, c, dr, dc, cols;
  FP4JIT_DEV GridWalk(i64 first, i64 step, i64 grid_cols, i64 total)
      : cols(static_cast<Index>(grid_cols)) {
    const i64 i = kReverse ? total - 1 - first : first;
    const i64 ri = i / grid_cols, si = step / grid_cols;
    r = static_cast<Index>(ri);
    c = static_cast<Index>(i - ri * grid_cols);
    dr = static_cast<Index>(si);
    dc = static_cast<Index>(step - si * grid_cols);
  }
  FP4JIT_DEV void next() {
    if constexpr (kReverse) {
      r -= dr;
      c -= dc;
      if (c < 0) {
        c += cols;
        --r;
      }
    } else {
      r += dr;
      c += dc;
      if (c >= cols) {
        c -= cols;
        ++r;
      }
    }
  }
};

// f(u) for u = first, first + kStep, ... below kUnits (first < kStep). kUnroll: unrolled with a
// fixed count where kStep divides kUnits, so no thread tests a bound per unit (and the compiler
// may interleave the units: more registers live).
template <int kUnits, int kStep, bool kUnroll, class F>
FP4JIT_DEV void for_units(int first, F&& f) {
  if constexpr (kUnroll && kUnits % kStep == 0) {
#pragma unroll
    for (int k = 0; k < kUnits / kStep; ++k) f(first + k * kStep);
  } else {
#pragma unroll 1
    for (int u = first; u < kUnits; u += kStep) f(u);
  }
}

FP4JIT_DEV float shfl_xor(float v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}
FP4JIT_DEV u32 shfl_xor(u32 v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}

using nx::Pick;

// v (>= 0) as int, capped at 2^31 - 1: a bound that no 32-bit tile index reaches.
FP4JIT_DEV int bound32(i64 v) {
  return v < 2147483647 ? static_cast<int>(v) : 2147483647;
}
FP4JIT_DEV int imin(int a, int b) {
  return a < b ? a : b;
}
FP4JIT_DEV u32 umax(u32 a, u32 b) {
  return a > b ? a : b;
}
FP4JIT_DEV u32 warp_max(u32 v) {
  for (int d = 16; d > 0; d >>= 1) v = umax(v, shfl_xor(v, d));
  return v;
}
// warp_max by one redux.sync where the hardware has it (sm_80 on).
FP4JIT_DEV u32 redux_umax(u32 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return __reduce_max_sync(0xffffffffu, v);
#else
  return warp_max(v);
#endif
}
FP4JIT_DEV u32 warp_sum(u32 v) {
  for (int d = 16; d > 0; d >>= 1) v += shfl_xor(v, d);
  return v;
}

// Stat words: a block's stat is the max over its elements of
//   |x|'s bits for finite x (ordered like the magnitudes), 0xFFFFFFFF for NaN or Inf,
// so one atomicMax keeps both the finite amax and the "non-finite block" flag.
constexpr u32 kNonFinite = 0xffffffffu;
FP4JIT_DEV u32 stat_key(float x) {
  return nx::is_finite(x) ? (nx::float_bits(x) & 0x7fffffffu) : kNonFinite;
}
// |x|'s bits: their max over a block is the finite amax, or >= 0x7f800000 when the block holds
// a NaN or an Inf (stat_of maps that to kNonFinite).
FP4JIT_DEV u32 abs_bits(float x) {
  return nx::float_bits(x) & 0x7fffffffu;
}
FP4JIT_DEV u32 stat_of(u32 max_abs_bits) {
  return max_abs_bits >= 0x7f800000u ? kNonFinite : max_abs_bits;
}
// The global amax ignores non-finite values.
FP4JIT_DEV u32 finite_key(float x) {
  return nx::is_finite(x) ? (nx::float_bits(x) & 0x7fffffffu) : 0u;
}

// NaN results as the reference computes them on the CPU, where an operation on a NaN returns
// that NaN quieted (x86 SSE, and AArch64 without default-NaN mode); GPU arithmetic returns the
// canonical 0x7fffffff instead. Used where a NaN result is stored for the caller.
FP4JIT_DEV float host_nan(float x) {
  return nx::bits_float(nx::float_bits(x) | 0x00400000u);
}

// Correctly rounded double operations (never contracted).
FP4JIT_DEV double dmul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
FP4JIT_DEV double ddiv_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}
FP4JIT_DEV double dadd_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
FP4JIT_DEV float double_to_float(double a) {
#if defined(__CUDA_ARCH__)
  return __double2float_rn(a);
#else
  return static_cast<float>(a);
#endif
}

// One value of the input tensor as float (BF16 and FP16 widen exactly).
template <InType T>
FP4JIT_DEV float load_one(const void* base, i64 i) {
  if constexpr (T == InType::f32) {
    return static_cast<const float*>(base)[i];
  } else if constexpr (T == InType::bf16) {
    return nx::bf16_to_float(static_cast<const u16*>(base)[i]);
  } else {
    return nx::f16_to_float(static_cast<const u16*>(base)[i]);
  }
}

FP4JIT_DEV uint4 load16(const void* p, bool streaming) {
  const uint4* q = static_cast<const uint4*>(p);
  return streaming ? __ldcs(q) : __ldg(q);
}

// Asynchronous 16-byte copies from global to shared memory (cp.async through L2): `bytes` (0 to
// 16) read from `gmem`, the rest of the 16 zero-filled. A thread's copies since its last
// cp_async_commit form one group; cp_async_wait<N> returns once at most N of its groups are still
// in flight (other lanes' copies need a __syncwarp / __syncthreads after that). The host emulator
// copies at once. kPrefetch256: L2's 256-byte prefetch hint (nx::cp_async16_shared), for copies
// of whole 512-byte runs.
template <bool kPrefetch256 = false>
FP4JIT_DEV void cp_async16(void* smem, const void* gmem, int bytes) {
#if defined(__CUDA_ARCH__)
  nx::cp_async16_shared<kPrefetch256>(static_cast<u32>(__cvta_generic_to_shared(smem)), gmem,
                                      static_cast<u32>(bytes));
#else
  const char* src = static_cast<const char*>(gmem);
  char* dst = static_cast<char*>(smem);
  for (int i = 0; i < 16; ++i) dst[i] = i < bytes ? src[i] : '\0';
#endif
}
FP4JIT_DEV void cp_async_commit() {
#if defined(__CUDA_ARCH__)
  nx::cp_async_commit_group();
#endif
}
template <int N>
FP4JIT_DEV void cp_async_wait() {
#if defined(__CUDA_ARCH__)
  nx::cp_async_wait_group<N>();
#endif
}
// The same 16 bytes copied synchronously, element by element (input rows not 16-byte aligned:
// elements are still aligned to their size).
template <int kEsz>
FP4JIT_DEV void copy16_sync(void* smem, const void* gmem, int bytes) {
  if constexpr (kEsz == 4) {
    const u32* src = static_cast<const u32*>(gmem);
#pragma unroll
    for (int i = 0; i < 4; ++i) static_cast<u32*>(smem)[i] = 4 * i < bytes ? src[i] : 0u;
  } else {
    const u16* src = static_cast<const u16*>(gmem);
#pragma unroll
    for (int i = 0; i < 8; ++i)
      static_cast<u16*>(smem)[i] = 2 * i < bytes ? src[i] : static_cast<u16>(0);
  }
}

// The 16-byte chunk of a source row from column c into shared memory (elements at or past `cols`
// zero-filled): asynchronous when the rows are 16-byte aligned (vector_ok), else element by
// element.
template <int kEsz>
FP4JIT_DEV void fetch16(void* smem, const char* row, i64 c, i64 cols, bool vector_ok) {
  const i64 left = cols - c;
  const int bytes = left <= 0 ? 0 : (left >= 16 / kEsz ? 16 : static_cast<int>(left) * kEsz);
  const char* src = bytes > 0 ? row + c * kEsz : row;
  if (vector_ok) {
    cp_async16(smem, src, bytes);
  } else {
    copy16_sync<kEsz>(smem, src, bytes);
  }
}

template <InType T>
FP4JIT_DEV void widen(const uint4& u, float* v) {
  const u32 w[4] = {u.x, u.y, u.z, u.w};
  if constexpr (T == InType::f32) {
#pragma unroll
    for (int i = 0; i < 4; ++i) v[i] = nx::bits_float(w[i]);
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const u16 h = static_cast<u16>(i % 2 == 0 ? (w[i / 2] & 0xffffu) : (w[i / 2] >> 16));
      v[i] = T == InType::bf16 ? nx::bf16_to_float(h) : nx::f16_to_float(h);
    }
  }
}

// kVec consecutive values of one row starting at element i of the flat tensor; `n` of them are
// in range (the rest read as 0). `vector` says 16-byte loads are aligned and all kVec in range.
template <InType T>
FP4JIT_DEV void load_vec(const void* base, i64 i, int n, bool vector, bool streaming,
                         float (&v)[kVec]) {
  if (vector) {
    const char* p = static_cast<const char*>(base) + i * in_size(T);
    widen<T>(load16(p, streaming), v);
    if constexpr (T == InType::f32) widen<T>(load16(p + 16, streaming), v + 4);
    return;
  }
#pragma unroll
  for (int e = 0; e < kVec; ++e) v[e] = e < n ? load_one<T>(base, i + e) : 0.0f;
}

// Packed codes of kVec elements: E2M1 two per byte (element 2i in the low nibble), 8-bit
// formats one per byte; `bytes` of them, at `dst` (aligned to their size when `aligned`).
FP4JIT_DEV void store_codes(u8* dst, const u32 (&code)[kVec], bool packed, int n, bool aligned) {
  if (packed) {
    u32 word = 0;
#pragma unroll
    for (int e = 0; e < kVec; ++e) word |= (code[e] & 15u) << (4 * e);
    if (aligned && n == kVec) {
      *reinterpret_cast<u32*>(dst) = word;
    } else {
      for (int b = 0; b < n / 2; ++b) dst[b] = static_cast<u8>(word >> (8 * b));
    }
    return;
  }
  if (aligned && n == kVec) {
    u64 word = 0;
#pragma unroll
    for (int e = 0; e < kVec; ++e) word |= static_cast<u64>(code[e] & 0xffu) << (8 * e);
    *reinterpret_cast<u64*>(dst) = word;
    return;
  }
#pragma unroll
  for (int e = 0; e < kVec; ++e)  // constant indices: code[] stays in registers
    if (e < n) dst[e] = static_cast<u8>(code[e]);
}

}  // namespace fp4jit::kern
