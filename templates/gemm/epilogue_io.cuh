// Output element access of the GEMM epilogues (sm90 and sm100): loads of C and stores of D in
// the output type, FP32 to BF16 / FP16 rounding to nearest even.
#pragma once
#include "gemm/params.cuh"

namespace fp4jit::gemm {

template <OutType kOut>
__device__ __forceinline__ float load_out(const void* c, long long idx) {
  if constexpr (kOut == OutType::f32) {
    return static_cast<const float*>(c)[idx];
  } else {
    const unsigned short h = static_cast<const unsigned short*>(c)[idx];
    if constexpr (kOut == OutType::bf16) return __uint_as_float(static_cast<unsigned>(h) << 16);
    float f;
    asm("{ .reg .f16 t; mov.b16 t, %1; cvt.f32.f16 %0, t; }" : "=f"(f) : "h"(h));
    return f;
  }
}

// bias[n] as float, of any BiasType (GemmParams::bias_type, uniform across the grid).
__device__ __forceinline__ float load_bias(const void* bias, int type, long long n) {
  if (type == static_cast<int>(BiasType::bf16)) return load_out<OutType::bf16>(bias, n);
  if (type == static_cast<int>(BiasType::f16)) return load_out<OutType::f16>(bias, n);
  return load_out<OutType::f32>(bias, n);
}

template <OutType kOut>
__device__ __forceinline__ void store_pair(void* d, long long idx, float x0, float x1, bool has1,
                                           bool vec) {
  if constexpr (kOut == OutType::f32) {
    float* p = static_cast<float*>(d) + idx;
    if (has1 && vec) {
      *reinterpret_cast<float2*>(p) = make_float2(x0, x1);
    } else {
      p[0] = x0;
      if (has1) p[1] = x1;
    }
  } else {
    unsigned packed;
    if constexpr (kOut == OutType::bf16) {
      asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(x1), "f"(x0));
    } else {
      asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(x1), "f"(x0));
    }
    unsigned short* p = static_cast<unsigned short*>(d) + idx;
    if (has1 && vec) {
      *reinterpret_cast<unsigned*>(p) = packed;
    } else {
      p[0] = static_cast<unsigned short>(packed & 0xFFFFu);
      if (has1) p[1] = static_cast<unsigned short>(packed >> 16);
    }
  }
}

template <OutType kOut>
__device__ __forceinline__ void store_one(void* d, long long idx, float x) {
  if constexpr (kOut == OutType::f32) {
    static_cast<float*>(d)[idx] = x;
  } else {
    unsigned short h;
    if constexpr (kOut == OutType::bf16) {
      asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
    } else {
      asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    }
    static_cast<unsigned short*>(d)[idx] = h;
  }
}

}  // namespace fp4jit::gemm
