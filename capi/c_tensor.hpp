// The C API's argument conversions: C tensors and quantized buffers to the Engine's views, each
// checked first so that a bad argument is an Error(invalid_argument) naming the argument and
// what is wrong with it (dimensions, strides, dtype, alignment, device, buffer sizes).
#pragma once
#include <cstdint>
#include <string_view>

#include "fp4jit/engine.hpp"
#include "fp4jit/fp4jit.h"

namespace fp4jit::capi {

// A tensor used as a matrix [rows, cols]: cols = the last dimension (stride 1), rows = the
// product of the others (collapsible into one row stride). `what` names it in errors.
TensorView to_view(const fp4jit_tensor* t, std::string_view what, BackendKind backend, int device);
// A contiguous vector of n float32, bfloat16 or float16 elements (a GEMM bias).
TensorView to_vector(const fp4jit_tensor* t, std::string_view what, std::int64_t n,
                     BackendKind backend, int device);
// A quantized operand's buffers, checked against its layout (sizes, alignment, required
// pointers).
QuantizedView to_quantized(const fp4jit_quantized* q, const QuantLayout& layout, bool occ,
                           std::string_view what);

// The residual capacity an OCC operand of a [source_rows, source_cols] tensor needs: per source
// row, the values below the low quantile and above the high one.
std::int64_t occ_capacity(const Recipe& recipe, std::int64_t source_rows, std::int64_t source_cols);

DType to_dtype(fp4jit_dtype d, std::string_view what);

}  // namespace fp4jit::capi
