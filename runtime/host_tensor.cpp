#include "runtime/host_tensor.hpp"

#include <cstring>

#include "numerics/common.cuh"

namespace fp4jit {

namespace {
std::int64_t stride_of(const TensorView& v) { return v.row_stride == 0 ? v.cols : v.row_stride; }

template <typename T>
void write_values(const Matrix<T>& m, const TensorView& view) {
  if (m.rows != view.rows || m.cols != view.cols)
    fail(ErrorKind::invalid_argument, "output tensor is [{}, {}] but the result is [{}, {}]", view.rows,
         view.cols, m.rows, m.cols);
  const std::int64_t stride = stride_of(view);
  for (std::int64_t r = 0; r < m.rows; ++r) {
    for (std::int64_t c = 0; c < m.cols; ++c) {
      const float v = static_cast<float>(m(r, c));
      const std::int64_t i = r * stride + c;
      switch (view.dtype) {
        case DType::f32: static_cast<float*>(view.data)[i] = v; break;
        case DType::bf16: static_cast<std::uint16_t*>(view.data)[i] = nx::float_to_bf16(v); break;
        case DType::f16: {
          const nx::MiniFloat half{5, 10, 15, true, nx::Special::ieee};
          // float -> f16 round to nearest even, overflow to Inf (IEEE)
          static_cast<std::uint16_t*>(view.data)[i] =
              static_cast<std::uint16_t>(nx::mf_encode(half, v, nx::Round::even, false));
          break;
        }
      }
    }
  }
}
}  // namespace

Matrix<float> to_matrix(const TensorView& view) {
  Matrix<float> m(view.rows, view.cols);
  const std::int64_t stride = stride_of(view);
  for (std::int64_t r = 0; r < view.rows; ++r) {
    for (std::int64_t c = 0; c < view.cols; ++c) {
      const std::int64_t i = r * stride + c;
      switch (view.dtype) {
        case DType::f32: m(r, c) = static_cast<const float*>(view.data)[i]; break;
        case DType::bf16: m(r, c) = nx::bf16_to_float(static_cast<const std::uint16_t*>(view.data)[i]); break;
        case DType::f16: m(r, c) = nx::f16_to_float(static_cast<const std::uint16_t*>(view.data)[i]); break;
      }
    }
  }
  return m;
}

void from_matrix(const Matrix<double>& m, const TensorView& view) { write_values(m, view); }
void from_matrix(const Matrix<float>& m, const TensorView& view) { write_values(m, view); }

void store_quantized(const QuantizedTensor& q, const QuantizedView& out) {
  std::memcpy(out.codes, q.codes.data(), q.codes.size());
  if (q.layout.scale_is_code) std::memcpy(out.scales, q.scale_codes.data(), q.scale_codes.size());
  else std::memcpy(out.scales, q.scale_values.data(), q.scale_values.size() * sizeof(float));
  if (out.tensor_scale != nullptr) *out.tensor_scale = q.tensor_scale;
  if (out.amax != nullptr) *out.amax = q.amax;
  const auto count = static_cast<std::int64_t>(q.residual_index.size());
  if (out.residual_count != nullptr) *out.residual_count = count;
  if (count > 0) {
    if (count > out.residual_capacity || out.residual_index == nullptr || out.residual_value == nullptr)
      fail(ErrorKind::invalid_argument, "OCC residual has {} entries but the output holds {}", count,
           out.residual_capacity);
    std::memcpy(out.residual_index, q.residual_index.data(), count * sizeof(std::int64_t));
    std::memcpy(out.residual_value, q.residual_value.data(), count * sizeof(float));
  }
}

QuantizedTensor load_quantized(const Recipe& recipe, Role role, const QuantLayout& layout, const QuantizedView& in) {
  QuantizedTensor q;
  q.recipe = canonical(recipe);
  q.role = role;
  q.layout = layout;
  q.codes.assign(in.codes, in.codes + layout.code_bytes());
  if (layout.scale_is_code) {
    const auto* s = static_cast<const std::uint8_t*>(in.scales);
    q.scale_codes.assign(s, s + layout.scale_count());
  } else {
    const auto* s = static_cast<const float*>(in.scales);
    q.scale_values.assign(s, s + layout.scale_count());
  }
  if (layout.two_level) {
    if (in.tensor_scale == nullptr)
      fail(ErrorKind::invalid_argument, "operand {} is two-level: its tensor scale is required", name(role));
    q.tensor_scale = *in.tensor_scale;
  }
  if (in.residual_count != nullptr && *in.residual_count > 0) {
    q.residual_index.assign(in.residual_index, in.residual_index + *in.residual_count);
    q.residual_value.assign(in.residual_value, in.residual_value + *in.residual_count);
  }
  return q;
}

}  // namespace fp4jit
