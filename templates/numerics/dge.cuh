// Differentiable gradient estimator (Wang et al. 2025): the derivative of a smooth stand-in for
// the E2M1 quantizer, by which the weight gradient is multiplied elementwise.
// In the scaled domain (v = w * sf), within each quantization interval of width d
// (0.5 on [0, 2), 1 on [2, 4), 2 on [4, 6], mirrored for negative v), with x' = |v| - (interval start):
//   f'(v) = (1/k) * |2 x'/d - 1|^(1/k - 1),  clipped at `clip`.
// |v| >= 6 is evaluated at 6 (the end of the last interval).
#pragma once
#include "numerics/common.cuh"
#include "numerics/mathfn.cuh"

namespace fp4jit::nx {

FP4JIT_HD float dge_factor(float v, float k, float clip) {
  if (is_nan(v)) return v;
  const float a = min_f(abs_f(v), 6.0f);
  float t;  // |2x'/d - 1|, each step exact or a single rounding
  if (a < 2.0f) {
    const float n = a * 2.0f;  // in units of d = 0.5
    t = add_rn(mul_rn(add_rn(n, -static_cast<float>(static_cast<u32>(n))), 2.0f), -1.0f);
  } else if (a < 4.0f) {
    const float n = a - 2.0f;
    t = add_rn(mul_rn(add_rn(n, -static_cast<float>(static_cast<u32>(n))), 2.0f), -1.0f);
  } else {
    t = add_rn(a - 4.0f, -1.0f);  // x' in [0, 2], d = 2: 2x'/d - 1 = x' - 1
  }
  t = abs_f(t);
  const float inv_k = div_rn(1.0f, k);
  const float power = add_rn(inv_k, -1.0f);
  if (t == 0.0f) {  // 0^power: +inf for k > 1, 1 for k = 1, 0 for k < 1
    if (power < 0.0f) return clip;
    return power == 0.0f ? min_f(inv_k, clip) : 0.0f;
  }
  const float f = mul_rn(inv_k, exp2_portable(mul_rn(power, log2_portable(t))));
  return min_f(f, clip);
}

}  // namespace fp4jit::nx
