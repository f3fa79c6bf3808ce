// Randomized Hadamard transform along the reduction axis, in chunks of N = 16, 32, 64 or 128:
//   y = (1/sqrt(N)) * H_N * (s .* x)
// with H_N the Sylvester Hadamard matrix (H_2n = [[H_n, H_n], [H_n, -H_n]]) and s a +-1 vector.
// Applying the same transform to both GEMM operands along K leaves the product unchanged
// (H is orthogonal up to the 1/sqrt(N) factor, which is applied to each side).
//
// Bit-exactness: the butterfly below fixes the order of every addition, and the signs and the
// 1/4 (N = 16) or 1/8 (N = 64) normalisation are exact; for N = 32 and 128 the normalisation is one
// correctly rounded multiply by float(1/sqrt(N)). Any kernel that computes the transform must
// reproduce exactly this sequence of operations.
#pragma once
#include "numerics/common.cuh"
#include "numerics/philox.cuh"

namespace fp4jit::nx {

// Sign masks: bit i set means s_i = -1. Up to 128 entries, four 32-bit words.
struct SignMask {
  u32 w[4];
};

FP4JIT_HD bool sign_negative(const SignMask& s, int i) { return (s.w[i >> 5] >> (i & 31)) & 1u; }

// A seeded random sign vector: the 128 bits of one Philox call with counter {0, 0, 0, 0x48414441}
// ("HADA") under the seed; entry i takes bit i.
FP4JIT_HD SignMask random_signs(u64 seed) {
  const U32x4 r = philox4x32_10(U32x4{{0u, 0u, 0u, 0x48414441u}}, static_cast<u32>(seed),
                                static_cast<u32>(seed >> 32));
  return SignMask{{r.v[0], r.v[1], r.v[2], r.v[3]}};
}

FP4JIT_HD float hadamard_norm(int n) {
  switch (n) {
    case 16: return 0.25f;
    case 32: return 0.17677669529663688f;  // float(1/sqrt(32))
    case 64: return 0.125f;
    case 128: return 0.088388347648318440f;  // float(1/sqrt(128))
  }
  return 1.0f;
}

// In-place transform of v[0..n) (n a power of two <= 128).
FP4JIT_HD void hadamard_transform(float* v, int n, const SignMask& signs) {
  for (int i = 0; i < n; ++i)
    if (sign_negative(signs, i)) v[i] = -v[i];
  for (int h = 1; h < n; h <<= 1) {
    for (int i = 0; i < n; i += 2 * h) {
      for (int j = i; j < i + h; ++j) {
        const float a = v[j], b = v[j + h];
        v[j] = add_rn(a, b);
        v[j + h] = add_rn(a, -b);
      }
    }
  }
  const float norm = hadamard_norm(n);
  for (int i = 0; i < n; ++i) v[i] = mul_rn(v[i], norm);
}

}  // namespace fp4jit::nx
