// Reference dequantization, in double: decode(code) * decode(scale) [/ s_enc], exact products.
#include <cmath>

#include "numerics/e2m1.cuh"
#include "numerics/minifloat.cuh"
#include "reference/reference.hpp"

namespace fp4jit::reference {

namespace {

double element_value(const OperandSpec& s, const QuantizedTensor& q, std::int64_t r,
                     std::int64_t c) {
  if (s.elem == ElemFormat::e2m1) {
    const std::uint8_t byte = q.codes[r * q.layout.row_bytes + c / 2];
    return nx::e2m1_decode(c % 2 == 0 ? byte & 0x0Fu : byte >> 4);
  }
  return nx::mf_decode(minifloat(s.elem), q.codes[r * q.layout.row_bytes + c]);
}

double scale_value(const Recipe& recipe, const OperandSpec& s, const QuantizedTensor& q,
                   std::int64_t i) {
  switch (s.scale) {
    case ScaleFormat::e8m0:
      return nx::e8m0_decode(q.scale_codes[i]);
    case ScaleFormat::ue4m3:
    case ScaleFormat::ue5m3:
      return nx::mf_decode(minifloat(s.scale, recipe.ue5m3), q.scale_codes[i]);
    case ScaleFormat::fp32:
      return q.scale_values[i];
  }
  return NAN;
}

}  // namespace

Matrix<double> dequantize_operand(const Recipe& recipe, const QuantizedTensor& q) {
  const OperandSpec& s = recipe[q.role];
  const QuantLayout& l = q.layout;
  Matrix<double> out(l.rows, l.cols);
  for (std::int64_t r = 0; r < l.rows; ++r) {
    for (std::int64_t c = 0; c < l.cols; ++c) {
      const BlockIndex bi = block_of(s.block, r, c);
      double v =
          element_value(s, q, r, c) * scale_value(recipe, s, q, bi.row * l.scale_cols + bi.col);
      if (l.two_level) v /= q.tensor_scale;
      out(r, c) = v;
    }
  }
  return out;
}

Matrix<double> dequantize_source(const Recipe& recipe, const QuantizedTensor& q,
                                 bool add_residual) {
  return operand_to_source(recipe, q, dequantize_operand(recipe, q), add_residual);
}

Matrix<double> operand_to_source(const Recipe& recipe, const QuantizedTensor& q, Matrix<double> op,
                                 bool add_residual) {
  const OperandSpec& s = recipe[q.role];
  if (op.rows != q.layout.rows || op.cols != q.layout.cols)
    fail(ErrorKind::invalid_argument, "operand {}: values are [{}, {}] but the operand is [{}, {}]",
         name(q.role), op.rows, op.cols, q.layout.rows, q.layout.cols);
  if (s.had.size != 0) {
    // Inverse of y = c * H * S * x (H symmetric, H H = N I, c = 1/sqrt(N)): x = S * H * y * c.
    const int n = s.had.size;
    const nx::SignMask signs = s.had.effective_mask();
    const double c = 1.0 / std::sqrt(static_cast<double>(n));
    std::vector<double> chunk(n);
    for (std::int64_t r = 0; r < op.rows; ++r) {
      for (std::int64_t k0 = 0; k0 < op.cols; k0 += n) {
        for (int i = 0; i < n; ++i) {
          double sum = 0.0;
          for (int j = 0; j < n; ++j)
            sum +=
                (__builtin_popcount(static_cast<unsigned>(i & j)) % 2 ? -1.0 : 1.0) * op(r, k0 + j);
          chunk[i] = sum * c * (nx::sign_negative(signs, i) ? -1.0 : 1.0);
        }
        for (int i = 0; i < n; ++i) op(r, k0 + i) = chunk[i];
      }
    }
  }
  if (add_residual)
    for (std::size_t i = 0; i < q.residual_index.size(); ++i)
      op.data[q.residual_index[i]] += q.residual_value[i];
  return role_info(q.role).transposed ? transpose(op) : op;
}

}  // namespace fp4jit::reference
