// Conversions between host-memory views and the reference's containers.
#pragma once
#include "core/matrix.hpp"
#include "fp4jit/engine.hpp"

namespace fp4jit {

// Reads a host tensor of any DType into float (exact: f16 and bf16 widen exactly).
Matrix<float> to_matrix(const TensorView& view);
// Writes values into a host tensor, rounding to its DType (to nearest even).
void from_matrix(const Matrix<double>& m, const TensorView& view);
void from_matrix(const Matrix<float>& m, const TensorView& view);

// Copies a quantized operand into host buffers described by `out` (residual entries beyond
// out.residual_capacity are an error naming both counts).
void store_quantized(const QuantizedTensor& q, const QuantizedView& out);
// Reads a quantized operand of the given layout from host buffers.
QuantizedTensor load_quantized(const Recipe& recipe, Role role, const QuantLayout& layout, const QuantizedView& in);

}  // namespace fp4jit
