// Outlier clamping and compensation on the host backend, exactly as reference::occ_clamp: per
// row, lo and hi are the values at sorted positions int((1 - alpha) n) and int(alpha n) (NaN
// last); the generated OCC kernels (codegen/host/occ_ir.hpp) then clamp and collect the residual.
// The order statistics come from small heaps of the extreme values (std::nth_element for
// quantiles far from the tails); where the result could depend on how equal values are ordered
// (a zero quantile in a row holding both +0 and -0, which sort as equals) the row is sorted
// exactly as the reference sorts it.
#pragma once
#include <cstdint>
#include <vector>

#include "fp4jit/engine.hpp"
#include "runtime/host/thread_pool.hpp"

namespace fp4jit::host {

struct OccResidual {
  std::vector<std::int64_t> index;  // row * cols + col, ascending
  std::vector<float> value;
};

// The quantiles lo[r], hi[r] of every row of `in` (any dtype, read exactly as float).
void occ_quantiles(const TensorView& in, double alpha, ThreadPool& pool, std::vector<float>& lo,
                   std::vector<float>& hi);

// The residual of a [rows, cols] source at the transposed operand's positions (c * rows + r),
// ascending, as the reference reorders it.
OccResidual transpose_residual(const OccResidual& r, std::int64_t rows, std::int64_t cols);

}  // namespace fp4jit::host
