// Outlier clamping and compensation on the host backend, exactly as reference::occ_clamp: per
// row, lo and hi are the values at sorted positions int((1 - alpha) n) and int(alpha n) (NaN
// last); values outside are clamped and x - clamp(x) kept as a sparse residual. The order
// statistics come from std::nth_element (linear time); where the result could depend on how
// equal values are ordered (a zero quantile in a row holding both +0 and -0, which sort as
// equals) the row is sorted exactly as the reference sorts it.
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/host/thread_pool.hpp"

namespace fp4jit::host {

struct OccResidual {
  std::vector<std::int64_t> index;  // row * cols + col, ascending
  std::vector<float> value;
};

// Clamps m [rows, cols] (row-major floats) in place, one row per task.
OccResidual occ_clamp_rows(float* m, std::int64_t rows, std::int64_t cols, double alpha,
                           ThreadPool& pool);

// The residual of a [rows, cols] source at the transposed operand's positions (c * rows + r),
// ascending, as the reference reorders it.
OccResidual transpose_residual(const OccResidual& r, std::int64_t rows, std::int64_t cols);

}  // namespace fp4jit::host
