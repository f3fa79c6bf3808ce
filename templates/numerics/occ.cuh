// Outlier clamping (OCC): the order in which a row's values are ranked to find its quantiles.
// A total order, so the value at a quantile never depends on how a sort or a selection breaks
// ties: -inf < ... < -0 < +0 < ... < +inf < NaN (every NaN ranks last, whatever its sign).
#pragma once
#include "numerics/common.cuh"

namespace fp4jit::nx {

// An unsigned key whose integer order is the ranking order.
FP4JIT_HD u32 occ_rank_key(float x) {
  if (is_nan(x)) return 0xffffffffu;
  const u32 u = float_bits(x);
  return (u >> 31) ? ~u : (u | 0x80000000u);
}

FP4JIT_HD bool occ_less(float a, float b) { return occ_rank_key(a) < occ_rank_key(b); }

// clamp(x, lo, hi) as OCC applies it: NaN passes through; a NaN bound clamps nothing.
FP4JIT_HD float occ_clamp_value(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }

}  // namespace fp4jit::nx
