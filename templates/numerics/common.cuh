// fp4jit numerics: portability layer shared by the host library (g++), nvcc and NVRTC.
//
// Every rounding rule of fp4jit lives in templates/numerics/ as __host__ __device__ code, so the
// CPU reference and the CUDA kernels run one definition. Bit-identical results on both sides rest
// on three rules kept throughout these files:
//   * only correctly rounded IEEE operations (+, -, *, /) and integer/bit manipulation;
//   * products that feed a sum go through mul_rn()/add_rn() so no compiler fuses them into an FMA
//     (the host build also passes -ffp-contract=off);
//   * no library transcendental functions (their last bit differs between libm and CUDA):
//     log2/exp2 are computed by mathfn.cuh from basic operations.
#pragma once

#if defined(__CUDACC__)
#define FP4JIT_HD __host__ __device__ __forceinline__
#else
#define FP4JIT_HD inline
#endif

#if defined(__CUDACC_RTC__)
// NVRTC has no C++ standard library headers on its search path.
namespace fp4jit::nx {
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef int i32;
typedef unsigned long long u64;
typedef long long i64;
}  // namespace fp4jit::nx
#else
#include <cstdint>
#include <cstring>
namespace fp4jit::nx {
using u8 = std::uint8_t;
using u16 = std::uint16_t;
using u32 = std::uint32_t;
using i32 = std::int32_t;
using u64 = std::uint64_t;
using i64 = std::int64_t;
}  // namespace fp4jit::nx
#endif

namespace fp4jit::nx {

constexpr float kFloatMax = 3.40282346638528859812e+38f;

// A if kFirst, else B (std::conditional_t without the standard headers NVRTC lacks).
template <bool kFirst, class A, class B>
struct Pick {
  using type = A;
};
template <class A, class B>
struct Pick<false, A, B> {
  using type = B;
};

FP4JIT_HD u32 float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  u32 u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

FP4JIT_HD float bits_float(u32 u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

// Correctly rounded binary operations that are never fused with a neighbour.
FP4JIT_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
FP4JIT_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
FP4JIT_HD float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

FP4JIT_HD bool is_nan(float x) {
  return (float_bits(x) & 0x7fffffffu) > 0x7f800000u;
}
FP4JIT_HD bool is_finite(float x) {
  return (float_bits(x) & 0x7f800000u) != 0x7f800000u;
}
FP4JIT_HD bool sign_bit(float x) {
  return (float_bits(x) >> 31) != 0;
}
FP4JIT_HD float abs_f(float x) {
  return bits_float(float_bits(x) & 0x7fffffffu);
}
// min/max that ignore nothing: the caller handles NaN explicitly.
FP4JIT_HD float min_f(float a, float b) {
  return b < a ? b : a;
}
FP4JIT_HD float max_f(float a, float b) {
  return b > a ? b : a;
}

FP4JIT_HD int count_leading_zeros(u32 v) {
#if defined(__CUDA_ARCH__)
  return __clz(static_cast<int>(v));
#else
  return v == 0 ? 32 : __builtin_clz(v);
#endif
}

// floor(log2(a)) for a finite, positive float (normal or subnormal): exact, from the bits.
FP4JIT_HD int floor_log2(float a) {
  const u32 u = float_bits(a) & 0x7fffffffu;
  const int biased = static_cast<int>(u >> 23);
  if (biased != 0) return biased - 127;
  return (31 - count_leading_zeros(u)) - 149;  // subnormal: m * 2^-149
}

// The significand of a finite, positive float scaled into [1, 2): a = significand *
// 2^floor_log2(a).
FP4JIT_HD float significand(float a) {
  const u32 u = float_bits(a) & 0x7fffffffu;
  if ((u >> 23) != 0) return bits_float((u & 0x007fffffu) | 0x3f800000u);
  const int e = floor_log2(a);    // subnormal: shift the leading one into place
  const u32 m = u << (-126 - e);  // mantissa with its top bit at position 23
  return bits_float((m & 0x007fffffu) | 0x3f800000u);
}

// 2^e as a float, for e in [-149, 127] (subnormal powers included).
FP4JIT_HD float pow2f(int e) {
  if (e >= -126) return bits_float(static_cast<u32>(e + 127) << 23);
  return bits_float(1u << (e + 149));
}

// bfloat16 / float16 <-> float. bf16 -> float and f16 -> float are exact.
FP4JIT_HD float bf16_to_float(u16 h) {
  return bits_float(static_cast<u32>(h) << 16);
}
FP4JIT_HD u16 float_to_bf16(float x) {  // round to nearest even; NaN stays a quiet NaN
  const u32 u = float_bits(x);
  if (is_nan(x)) return static_cast<u16>((u >> 16) | 0x0040u);
  const u32 rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<u16>((u + rounding) >> 16);
}
FP4JIT_HD float f16_to_float(u16 h) {
  const u32 sign = static_cast<u32>(h & 0x8000u) << 16;
  const u32 exp = (h >> 10) & 0x1fu;
  const u32 man = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (man << 13));  // Inf / NaN
  if (exp != 0) return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
  // zero or subnormal: man * 2^-24, exact in float
  const float v = mul_rn(static_cast<float>(man), pow2f(-24));
  return sign ? -v : v;
}

// PTX lop3.b32: bit k of the result is bit (a_k << 2 | b_k << 1 | c_k) of kLut (the table of
// F(0xF0, 0xCC, 0xAA) for the function F of a, b, c), in one instruction that the compiler keeps
// whole (from the C++ form it may split a three-input function or fold constants apart).
template <u32 kLut>
FP4JIT_HD u32 lop3(u32 a, u32 b, u32 c) {
#if defined(__CUDA_ARCH__)
  u32 d;
  asm("lop3.b32 %0, %1, %2, %3, %4;" : "=r"(d) : "r"(a), "r"(b), "r"(c), "n"(kLut));
  return d;
#else
  u32 d = 0u;
  for (u32 i = 0; i < 8; ++i)
    if ((kLut >> i) & 1u) d |= ((i & 4u) ? a : ~a) & ((i & 2u) ? b : ~b) & ((i & 1u) ? c : ~c);
  return d;
#endif
}

// PTX prmt.b32 (default mode): byte i of the result is byte sel_i & 7 of {b, a} (a the low four
// bytes), or that byte's sign replicated when sel_i & 8.
FP4JIT_HD u32 prmt(u32 a, u32 b, u32 sel) {
#if defined(__CUDA_ARCH__)
  u32 d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
#else
  const u64 bytes = (static_cast<u64>(b) << 32) | a;
  u32 d = 0u;
  for (int i = 0; i < 4; ++i) {
    const u32 s = (sel >> (4 * i)) & 15u;
    u32 byte = static_cast<u32>(bytes >> (8 * (s & 7u))) & 0xffu;
    if ((s & 8u) != 0u) byte = (byte & 0x80u) != 0u ? 0xffu : 0u;
    d |= byte << (8 * i);
  }
  return d;
#endif
}

}  // namespace fp4jit::nx
