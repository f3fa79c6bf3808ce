// Test operands for the sm90 GEMM harness, made on the GPU in the real quantized layout
// (core/quantized.hpp) with the project's own rounding rules (templates/numerics), and the
// double-precision reference of the dequantized product on sampled outputs.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gemm/sm90/config.cuh"
#include "numerics/common.cuh"
#include "numerics/e2m1.cuh"
#include "numerics/minifloat.cuh"
#include "numerics/scale.cuh"

#define CUDA_CHECK(x)                                                                        \
  do {                                                                                       \
    cudaError_t err_ = (x);                                                                  \
    if (err_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_), __FILE__, \
                   __LINE__, cudaGetErrorString(err_));                                      \
      std::exit(2);                                                                          \
    }                                                                                        \
  } while (0)

namespace fp4jit::bench {

using sm90::ScaleCode;
using sm90::ScaleKind;

// What the operands look like.
enum class Recipe { msfp4, mxfp4, tetrajet, nvfp4, ue5m3, mx_stress };

struct RecipeInfo {
  const char* name;
  ScaleKind kind;
  ScaleCode code;  // nv block-scale format
  int a_block_rows, b_block_rows;
};

inline RecipeInfo recipe_info(Recipe r) {
  switch (r) {
    case Recipe::msfp4: return {"msfp4", ScaleKind::ms, ScaleCode::ue4m3, 1, 1};
    case Recipe::mxfp4: return {"mxfp4", ScaleKind::mx, ScaleCode::ue4m3, 1, 1};
    case Recipe::tetrajet: return {"tetrajet", ScaleKind::mx, ScaleCode::ue4m3, 1, 1};
    case Recipe::nvfp4: return {"nvfp4", ScaleKind::nv, ScaleCode::ue4m3, 1, 16};
    case Recipe::ue5m3: return {"ue5m3", ScaleKind::nv, ScaleCode::ue5m3_nan, 1, 1};
    case Recipe::mx_stress: return {"mx_stress", ScaleKind::mx, ScaleCode::ue4m3, 1, 1};
  }
  return {"?", ScaleKind::mx, ScaleCode::ue4m3, 1, 1};
}

__host__ __device__ inline nx::MiniFloat scale_format(ScaleCode c) {
  switch (c) {
    case ScaleCode::ue4m3: return nx::kUE4M3;
    case ScaleCode::ue5m3_nan: return nx::kUE5M3Nan;
    case ScaleCode::ue5m3_finite: return nx::kUE5M3Finite;
    case ScaleCode::ue5m3_ieee: return nx::kUE5M3Ieee;
  }
  return nx::kUE4M3;
}

// A quantized K-major operand in device memory.
struct Operand {
  int rows = 0, K = 0;
  std::uint8_t* codes = nullptr;  // [rows, K/2]
  std::uint8_t* scales = nullptr; // block-scale codes [ceil(rows / block_rows), K / block]
  int scale_ld = 0, block_rows = 1;
  float* row_scale = nullptr;  // ms: [rows]
  float s_enc = 1.0f;          // nv
  void release() {
    cudaFree(codes);
    cudaFree(scales);
    cudaFree(row_scale);
    codes = scales = nullptr;
    row_scale = nullptr;
  }
};

// ---- random values -----------------------------------------------------------------------------
__host__ __device__ inline std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}
__device__ inline float uniform01(std::uint64_t seed, std::uint64_t i) {
  return (static_cast<float>(mix64(seed * 0x9E3779B97F4A7C15ull + i) >> 40) + 0.5f) * (1.0f / 16777216.0f);
}
__device__ inline float gauss(std::uint64_t seed, std::uint64_t i) {
  const float u1 = uniform01(seed, 2 * i), u2 = uniform01(seed, 2 * i + 1);
  return sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}
// Activation-like (A: per-row lognormal magnitude, 1% outlier columns x 20) or weight-like (B).
__device__ inline float value(std::uint64_t seed, bool is_a, int r, int k, int K) {
  float row = expf((is_a ? 1.0f : 0.3f) * gauss(seed ^ 0x5555ull, static_cast<std::uint64_t>(r)));
  float v = gauss(seed, static_cast<std::uint64_t>(r) * K + k) * row;
  if (is_a && (mix64(seed + 77 + static_cast<std::uint64_t>(k)) % 100) == 0) v *= 20.0f;
  return v;
}

// ---- quantizers (one thread per block) --------------------------------------------------------
__global__ void quant_mx(Operand op, std::uint64_t seed, bool is_a, bool tetrajet) {
  const long long b = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const int nkb = op.K / 32;
  if (b >= static_cast<long long>(op.rows) * nkb) return;
  const int r = static_cast<int>(b / nkb), kb = static_cast<int>(b % nkb);
  float v[32], amax = 0.0f;
  for (int i = 0; i < 32; ++i) {
    v[i] = value(seed, is_a, r, kb * 32 + i, op.K);
    amax = fmaxf(amax, fabsf(v[i]));
  }
  const unsigned code = tetrajet ? nx::scale_ceil_pow2(amax, 6.0f) : nx::scale_ocp_floor(amax, 2);
  const float inv = 1.0f / nx::e8m0_decode(code);
  op.scales[static_cast<long long>(r) * op.scale_ld + kb] = static_cast<std::uint8_t>(code);
  for (int i = 0; i < 16; ++i) {
    const unsigned lo = nx::e2m1_encode(fminf(fmaxf(v[2 * i] * inv, -6.0f), 6.0f), nx::Round::away);
    const unsigned hi = nx::e2m1_encode(fminf(fmaxf(v[2 * i + 1] * inv, -6.0f), 6.0f), nx::Round::away);
    op.codes[static_cast<long long>(r) * (op.K / 2) + kb * 16 + i] = nx::pack_e2m1(lo, hi);
  }
}

// Random codes with E8M0 exponents spread over +-24 binades: many blocks outside one window.
__global__ void quant_mx_stress(Operand op, std::uint64_t seed) {
  const long long b = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const int nkb = op.K / 32;
  if (b >= static_cast<long long>(op.rows) * nkb) return;
  const int r = static_cast<int>(b / nkb), kb = static_cast<int>(b % nkb);
  op.scales[static_cast<long long>(r) * op.scale_ld + kb] = static_cast<std::uint8_t>(103 + mix64(seed + b) % 49);
  for (int i = 0; i < 16; ++i)
    op.codes[static_cast<long long>(r) * (op.K / 2) + kb * 16 + i] =
        static_cast<std::uint8_t>(mix64(seed * 31 + b * 16 + i) & 0xFF);
}

// msfp4: one CTA per row; sf = 2^floor(log2(6 / amax)), ties toward +inf, decode scale 1 / sf.
__global__ void quant_ms(Operand op, std::uint64_t seed, bool is_a) {
  const int r = blockIdx.x;
  __shared__ float red[32];
  float amax = 0.0f;
  for (int k = threadIdx.x; k < op.K; k += blockDim.x) amax = fmaxf(amax, fabsf(value(seed, is_a, r, k, op.K)));
  for (int o = 16; o > 0; o /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = amax;
  __syncthreads();
  amax = 0.0f;
  for (int i = 0; i < static_cast<int>(blockDim.x / 32); ++i) amax = fmaxf(amax, red[i]);
  const int e = nx::scale_ms_pow2_exponent(amax, 6.0f);
  const float sf = nx::pow2f(e);
  if (threadIdx.x == 0) op.row_scale[r] = nx::pow2f(-e);
  for (int i = threadIdx.x; i < op.K / 2; i += blockDim.x) {
    const unsigned lo = nx::e2m1_encode(value(seed, is_a, r, 2 * i, op.K) * sf, nx::Round::up);
    const unsigned hi = nx::e2m1_encode(value(seed, is_a, r, 2 * i + 1, op.K) * sf, nx::Round::up);
    op.codes[static_cast<long long>(r) * (op.K / 2) + i] = nx::pack_e2m1(lo, hi);
  }
}

__global__ void tensor_amax(Operand op, std::uint64_t seed, bool is_a, unsigned* amax_bits) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  float a = 0.0f;
  if (i < static_cast<long long>(op.rows) * op.K)
    a = fabsf(value(seed, is_a, static_cast<int>(i / op.K), static_cast<int>(i % op.K), op.K));
  for (int o = 16; o > 0; o /= 2) a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, o));
  if ((threadIdx.x & 31) == 0) atomicMax(amax_bits, __float_as_uint(a));  // non-negative floats order as bits
}

// Two-level (nvfp4, ue5m3): thread per (block_rows x 16) block.
__global__ void quant_nv(Operand op, std::uint64_t seed, bool is_a, ScaleCode code_kind) {
  const long long b = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const int nkb = op.K / 16, br = op.block_rows;
  const int srows = (op.rows + br - 1) / br;
  if (b >= static_cast<long long>(srows) * nkb) return;
  const int sr = static_cast<int>(b / nkb), kb = static_cast<int>(b % nkb);
  const nx::MiniFloat fmt = scale_format(code_kind);
  float amax = 0.0f;
  for (int rr = 0; rr < br && sr * br + rr < op.rows; ++rr)
    for (int i = 0; i < 16; ++i) amax = fmaxf(amax, fabsf(value(seed, is_a, sr * br + rr, kb * 16 + i, op.K)));
  const unsigned sc = nx::two_level_block_scale(fmt, amax, op.s_enc, 6.0f);
  const float enc = nx::two_level_encode_factor(fmt, sc, op.s_enc);
  op.scales[static_cast<long long>(sr) * op.scale_ld + kb] = static_cast<std::uint8_t>(sc);
  for (int rr = 0; rr < br && sr * br + rr < op.rows; ++rr) {
    const int r = sr * br + rr;
    for (int i = 0; i < 8; ++i) {
      const float x0 = nx::mul_rn(value(seed, is_a, r, kb * 16 + 2 * i, op.K), enc);
      const float x1 = nx::mul_rn(value(seed, is_a, r, kb * 16 + 2 * i + 1, op.K), enc);
      const unsigned lo = nx::e2m1_encode(fminf(fmaxf(x0, -6.0f), 6.0f), nx::Round::even);
      const unsigned hi = nx::e2m1_encode(fminf(fmaxf(x1, -6.0f), 6.0f), nx::Round::even);
      op.codes[static_cast<long long>(r) * (op.K / 2) + kb * 8 + i] = nx::pack_e2m1(lo, hi);
    }
  }
}

inline Operand make_operand(Recipe recipe, bool is_a, int rows, int K, std::uint64_t seed) {
  const RecipeInfo info = recipe_info(recipe);
  Operand op;
  op.rows = rows;
  op.K = K;
  CUDA_CHECK(cudaMalloc(&op.codes, static_cast<size_t>(rows) * K / 2));
  const int threads = 128;
  if (info.kind == ScaleKind::ms) {
    CUDA_CHECK(cudaMalloc(&op.row_scale, sizeof(float) * rows));
    quant_ms<<<rows, 256>>>(op, seed, is_a);
  } else if (info.kind == ScaleKind::mx) {
    op.scale_ld = K / 32;
    CUDA_CHECK(cudaMalloc(&op.scales, static_cast<size_t>(rows) * op.scale_ld));
    const long long blocks = static_cast<long long>(rows) * op.scale_ld;
    if (recipe == Recipe::mx_stress)
      quant_mx_stress<<<static_cast<unsigned>((blocks + threads - 1) / threads), threads>>>(op, seed);
    else
      quant_mx<<<static_cast<unsigned>((blocks + threads - 1) / threads), threads>>>(op, seed, is_a,
                                                                                     recipe == Recipe::tetrajet);
  } else {
    op.block_rows = is_a ? info.a_block_rows : info.b_block_rows;
    op.scale_ld = K / 16;
    const int srows = (rows + op.block_rows - 1) / op.block_rows;
    CUDA_CHECK(cudaMalloc(&op.scales, static_cast<size_t>(srows) * op.scale_ld));
    unsigned* amax_bits;
    CUDA_CHECK(cudaMalloc(&amax_bits, sizeof(unsigned)));
    CUDA_CHECK(cudaMemset(amax_bits, 0, sizeof(unsigned)));
    const long long n = static_cast<long long>(rows) * K;
    tensor_amax<<<static_cast<unsigned>((n + 255) / 256), 256>>>(op, seed, is_a, amax_bits);
    unsigned bits;
    CUDA_CHECK(cudaMemcpy(&bits, amax_bits, sizeof bits, cudaMemcpyDeviceToHost));
    cudaFree(amax_bits);
    float amax;
    std::memcpy(&amax, &bits, sizeof amax);
    const nx::MiniFloat fmt = scale_format(info.code);
    op.s_enc = nx::two_level_tensor_scale(amax, nx::mf_max_value(fmt), 6.0f);
    const long long blocks = static_cast<long long>(srows) * op.scale_ld;
    quant_nv<<<static_cast<unsigned>((blocks + threads - 1) / threads), threads>>>(op, seed, is_a, info.code);
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  return op;
}

// ---- reference ----------------------------------------------------------------------------------
__device__ inline double deq(const Operand& op, ScaleKind kind, ScaleCode code_kind, int r, int k) {
  const std::uint8_t byte = op.codes[static_cast<long long>(r) * (op.K / 2) + k / 2];
  const double c = nx::e2m1_decode((k & 1) ? (byte >> 4) : (byte & 15));
  if (kind == ScaleKind::ms) return c * op.row_scale[r];
  if (kind == ScaleKind::mx) return c * nx::e8m0_decode(op.scales[static_cast<long long>(r) * op.scale_ld + k / 32]);
  const double s = nx::mf_decode(scale_format(code_kind), op.scales[static_cast<long long>(r / op.block_rows) * op.scale_ld + k / 16]);
  return c * s / op.s_enc;
}

// ref[i] = sum_k deq(A)[m_i, k] deq(B)[n_i, k] in double (exact products).
__global__ void reference_samples(Operand a, Operand b, ScaleKind kind, ScaleCode code_kind, const int* sm,
                                  const int* sn, int count, double* ref) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const int m = sm[i], n = sn[i];
  double sum = 0.0;
  for (int k = 0; k < a.K; ++k) sum += deq(a, kind, code_kind, m, k) * deq(b, kind, code_kind, n, k);
  ref[i] = sum;
}

}  // namespace fp4jit::bench
