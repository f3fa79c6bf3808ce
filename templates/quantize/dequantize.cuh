// dequantize: an operand's codes and scales back to values, as reference/dequantize.cpp computes
// them: decode(code) * decode(scale) [/ s_enc] in double, then rounded to the output type
// through float (the reference's Matrix<double> -> float -> BF16/FP16).
//
// to_source (double quantization when it cannot be fused): the values in the source layout as
// float, with the operand's Hadamard transform undone in double (the reference's order of sums)
// and the transpose undone; what src=requant re-quantizes.
//
// Config:
//   using Op;                           the quantized operand
//   static constexpr InType out;        output element type
//   static constexpr bool to_source;    (then out is f32 and transposed says the layout)
//   static constexpr bool transposed;   the operand is the transpose of its source
//   static constexpr int threads;
#pragma once
#include "quantize/args.cuh"
#include "quantize/segment.cuh"

namespace fp4jit::kern {

template <class Op>
FP4JIT_DEV u32 load_code(const u8* codes, i64 row_bytes, i64 r, i64 c) {
  if constexpr (elem_packed(Op::elem)) {
    const u8 byte = codes[r * row_bytes + c / 2];
    return c % 2 == 0 ? (byte & 15u) : (byte >> 4);
  } else {
    return codes[r * row_bytes + c];
  }
}

template <class Op>
FP4JIT_DEV double operand_value(const DequantizeArgs& a, i64 r, i64 c, double s_enc) {
  const double s = decode_scale<Op>(a.scales, block_index<Op>(r, c, a.scale_cols));
  double v = dmul_rn(
      static_cast<double>(decode_element<Op>(load_code<Op>(a.codes, a.row_bytes, r, c))), s);
  if constexpr (Op::rule == Rule::two_level) v = ddiv_rn(v, s_enc);
  return v;
}

template <InType T>
FP4JIT_DEV void store_value(void* out, i64 i, float v) {
  if constexpr (T == InType::f32) {
    static_cast<float*>(out)[i] = v;
  } else if constexpr (T == InType::bf16) {
    static_cast<u16*>(out)[i] = nx::float_to_bf16(v);
  } else {
    const nx::MiniFloat half{5, 10, 15, true, nx::Special::ieee};
    static_cast<u16*>(out)[i] = static_cast<u16>(nx::mf_encode(half, v, nx::Round::even, false));
  }
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::threads) dequantize(DequantizeArgs a) {
  using Op = typename Cfg::Op;
  const double s_enc = Op::rule == Rule::two_level ? static_cast<double>(*a.tensor_scale) : 1.0;
  const i64 total = a.rows * a.cols;
  for (i64 i = static_cast<i64>(blockIdx.x) * Cfg::threads + threadIdx.x; i < total;
       i += static_cast<i64>(gridDim.x) * Cfg::threads) {
    const i64 r = i / a.cols, c = i - r * a.cols;
    if constexpr (!Cfg::to_source) {
      store_value<Cfg::out>(a.out, r * a.out_stride + c,
                            double_to_float(operand_value<Op>(a, r, c, s_enc)));
    } else {
      double v;
      if constexpr (Op::had == 0) {
        v = operand_value<Op>(a, r, c, s_enc);
      } else {
        // Inverse of y = (1/sqrt(n)) H S x: x_i = s_i * (sum_j H_ij y_j) * (1/sqrt(n)), sums in j
        // order.
        constexpr int kN = Op::had;
        const i64 k0 = c - c % kN;
        const int ii = static_cast<int>(c - k0);
        double sum = 0.0;
        for (int j = 0; j < kN; ++j) {
          const double sign = (__popc(static_cast<unsigned>(ii & j)) % 2) ? -1.0 : 1.0;
          sum = dadd_rn(sum, dmul_rn(sign, operand_value<Op>(a, r, k0 + j, s_enc)));
        }
        const double norm = ddiv_rn(1.0, __dsqrt_rn(static_cast<double>(kN)));
        v = dmul_rn(dmul_rn(sum, norm), sign_negative<Op>(ii) ? -1.0 : 1.0);
      }
      const i64 dst = Cfg::transposed ? c * a.out_stride + r : r * a.out_stride + c;
      static_cast<float*>(a.out)[dst] = double_to_float(v);
    }
  }
}

}  // namespace fp4jit::kern
