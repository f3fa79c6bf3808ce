// Outlier clamping and compensation (Wang et al. 2025), per row: lo and hi are the row's values
// at sorted index int((1 - alpha) n) and int(alpha n) in the total order of numerics/occ.cuh
// (-0 before +0, NaN last); NaN is never clamped.
#include <algorithm>
#include <cmath>

#include "numerics/occ.cuh"
#include "reference/reference.hpp"

namespace fp4jit::reference {

Residual occ_clamp(Matrix<float>& m, double alpha) {
  Residual out;
  const std::int64_t n = m.cols;
  const auto lo_index = std::min<std::int64_t>(n - 1, static_cast<std::int64_t>((1.0 - alpha) * n));
  const auto hi_index = std::min<std::int64_t>(n - 1, static_cast<std::int64_t>(alpha * n));
  std::vector<float> sorted(n);
  for (std::int64_t r = 0; r < m.rows; ++r) {
    float* row = m.row(r);
    std::copy(row, row + n, sorted.begin());
    std::sort(sorted.begin(), sorted.end(), nx::occ_less);
    const float lo = sorted[lo_index], hi = sorted[hi_index];
    for (std::int64_t c = 0; c < n; ++c) {
      const float x = row[c];
      const float clamped = nx::occ_clamp_value(x, lo, hi);
      if (clamped != x) {
        out.index.push_back(r * n + c);
        out.value.push_back(x - clamped);
        row[c] = clamped;
      }
    }
  }
  return out;
}

}  // namespace fp4jit::reference
