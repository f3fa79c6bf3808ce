// dge_apply: the differentiable gradient estimator's factor f'(W * sf) elementwise
// (reference/dge.cpp), sf = 2^e the weight block's power-of-two scale from its stat word
// (the stats pass of quantize_rows over the raw weight: no Hadamard, no OCC).
//
// Config:
//   using Op;                       the weight operand (rule ms_pow2)
//   static constexpr InType in, out;
//   static constexpr float dge_k, dge_clip;  recipe dge.k and dge.clip
//   static constexpr int threads;
#pragma once
#include "numerics/dge.cuh"
#include "quantize/dequantize.cuh"

namespace fp4jit::kern {

template <class Cfg>
__global__ void __launch_bounds__(Cfg::threads) dge_apply(DgeArgs a) {
  using Op = typename Cfg::Op;
  const i64 total = a.rows * a.cols;
  for (i64 i = static_cast<i64>(blockIdx.x) * Cfg::threads + threadIdx.x; i < total;
       i += static_cast<i64>(gridDim.x) * Cfg::threads) {
    const i64 r = i / a.cols, c = i - r * a.cols;
    const u32 stat = a.stats[block_index<Op>(r, c, a.scale_cols)];
    const float amax = stat == kNonFinite ? nx::bits_float(0x7f800000u) : nx::bits_float(stat);
    const int e = nx::scale_ms_pow2_exponent(amax, elem_max(Op::elem));
    const float w = load_one<Cfg::in>(a.w, r * a.w_stride + c);
    const float scaled = nx::is_nan(w) ? host_nan(w) : nx::mul_rn(w, nx::pow2f(e));
    store_value<Cfg::out>(a.out, r * a.out_stride + c,
                          nx::dge_factor(scaled, Cfg::dge_k, Cfg::dge_clip));
  }
}

}  // namespace fp4jit::kern
