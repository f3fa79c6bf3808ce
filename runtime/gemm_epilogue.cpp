#include "runtime/gemm_epilogue.hpp"

#include "numerics/minifloat.cuh"

namespace fp4jit {

namespace {

std::int64_t stride_of(const TensorView& t) {
  return t.row_stride == 0 ? t.cols : t.row_stride;
}

void store(const TensorView& t, std::int64_t i, double value) {
  const float v = static_cast<float>(value);
  switch (t.dtype) {
    case DType::f32:
      static_cast<float*>(t.data)[i] = v;
      break;
    case DType::bf16:
      static_cast<std::uint16_t*>(t.data)[i] = nx::float_to_bf16(v);
      break;
    case DType::f16: {
      const nx::MiniFloat half{5, 10, 15, true, nx::Special::ieee};
      static_cast<std::uint16_t*>(t.data)[i] =
          static_cast<std::uint16_t>(nx::mf_encode(half, v, nx::Round::even, false));
      break;
    }
  }
}

}  // namespace

float tensor_value(const TensorView& t, std::int64_t row, std::int64_t col) {
  const std::int64_t i = row * stride_of(t) + col;
  switch (t.dtype) {
    case DType::f32:
      return static_cast<const float*>(t.data)[i];
    case DType::bf16:
      return nx::bf16_to_float(static_cast<const std::uint16_t*>(t.data)[i]);
    case DType::f16:
      return nx::f16_to_float(static_cast<const std::uint16_t*>(t.data)[i]);
  }
  return 0.0f;
}

void write_gemm_row(std::int64_t row, const double* acc, const GemmEpilogue& e,
                    const TensorView& out) {
  const bool use_c = e.beta != 0.0f && e.c.data != nullptr;
  const TensorView bias{const_cast<void*>(e.bias), e.bias_dtype, 1, out.cols, 0};
  for (std::int64_t j = 0; j < out.cols; ++j) {
    double v = static_cast<double>(e.alpha) * acc[j];
    if (e.bias != nullptr) v += tensor_value(bias, 0, j);
    if (use_c) v += static_cast<double>(e.beta) * tensor_value(e.c, row, j);
    store(out, row * stride_of(out) + j, v);
  }
}

}  // namespace fp4jit
