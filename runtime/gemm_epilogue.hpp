// The GEMM epilogue on the host (reference and host backends): one row of
//   out = alpha * acc [+ bias] [+ beta * c]
// computed in double and rounded once to the output's dtype (host memory). `c` may alias `out`:
// each element is read before it is written.
#pragma once
#include <cstdint>

#include "fp4jit/engine.hpp"

namespace fp4jit {

void write_gemm_row(std::int64_t row, const double* acc, const GemmEpilogue& epilogue,
                    const TensorView& out);

// An element of a host tensor of any dtype, widened exactly to float.
float tensor_value(const TensorView& t, std::int64_t row, std::int64_t col);

}  // namespace fp4jit
