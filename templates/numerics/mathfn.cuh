// log2 and exp2 from basic correctly-rounded operations only, so the host and the GPU agree to
// the bit (library log2f/exp2f differ in their last bits between glibc and CUDA). Accuracy: a few
// ulp of float, ample for the DGE factor, which is stored in BF16 or FP32.
#pragma once
#include "numerics/common.cuh"

namespace fp4jit::nx {

// log2(x) for finite x > 0.
FP4JIT_HD float log2_portable(float x) {
  int e = floor_log2(x);
  float m = significand(x);  // [1, 2)
  if (m > 1.41421356f) {     // centre the range on 1: m in [0.707, 1.414)
    m = mul_rn(m, 0.5f);
    e += 1;
  }
  // log2(m) = 2/ln2 * atanh(s), s = (m - 1) / (m + 1), |s| < 0.1716
  const float s = div_rn(add_rn(m, -1.0f), add_rn(m, 1.0f));
  const float s2 = mul_rn(s, s);
  // atanh(s)/s = 1 + s^2/3 + s^4/5 + ... (truncated after s^12: error below 2^-31)
  float p = 1.0f / 13.0f;
  p = add_rn(mul_rn(p, s2), 1.0f / 11.0f);
  p = add_rn(mul_rn(p, s2), 1.0f / 9.0f);
  p = add_rn(mul_rn(p, s2), 1.0f / 7.0f);
  p = add_rn(mul_rn(p, s2), 1.0f / 5.0f);
  p = add_rn(mul_rn(p, s2), 1.0f / 3.0f);
  p = add_rn(mul_rn(p, s2), 1.0f);
  const float two_over_ln2 = 2.8853900817779268f;
  return add_rn(static_cast<float>(e), mul_rn(mul_rn(s, p), two_over_ln2));
}

// 2^y for y in [-126, 127]; smaller y flush to 0, larger to +inf.
FP4JIT_HD float exp2_portable(float y) {
  if (y < -126.0f) return 0.0f;
  if (y > 127.0f) return bits_float(0x7f800000u);
  // y = n + f with n the nearest integer, |f| <= 0.5
  const float shifted = add_rn(y, 12582912.0f);  // 1.5 * 2^23: rounds y to an integer
  const float nf = add_rn(shifted, -12582912.0f);
  const int n = static_cast<int>(nf);
  const float f = add_rn(y, -nf);
  const float t = mul_rn(f, 0.69314718055994531f);  // f * ln2, |t| <= 0.347
  // e^t by its Taylor series through t^9 (remainder below 2^-33)
  float p = 1.0f / 362880.0f;
  p = add_rn(mul_rn(p, t), 1.0f / 40320.0f);
  p = add_rn(mul_rn(p, t), 1.0f / 5040.0f);
  p = add_rn(mul_rn(p, t), 1.0f / 720.0f);
  p = add_rn(mul_rn(p, t), 1.0f / 120.0f);
  p = add_rn(mul_rn(p, t), 1.0f / 24.0f);
  p = add_rn(mul_rn(p, t), 1.0f / 6.0f);
  p = add_rn(mul_rn(p, t), 0.5f);
  p = add_rn(mul_rn(p, t), 1.0f);
  p = add_rn(mul_rn(p, t), 1.0f);
  return mul_rn(p, pow2f(n));
}

}  // namespace fp4jit::nx
