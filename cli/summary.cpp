#include "cli/summary.hpp"

#include <algorithm>
#include <cmath>

#include "numerics/minifloat.cuh"

namespace fp4jit::cli {

CodeStats code_stats(const Recipe& recipe, const QuantizedTensor& q) {
  const OperandSpec& s = recipe[q.role];
  const QuantLayout& l = q.layout;
  CodeStats st;
  st.elements = l.rows * l.cols;
  const bool fp4 = s.elem == ElemFormat::e2m1;
  const std::uint32_t max_mag = fp4 ? 7u : nx::mf_max_code(minifloat(s.elem));
  const std::uint32_t mag_mask = fp4 ? 7u : 0x7Fu;
  for (std::int64_t r = 0; r < l.rows; ++r) {
    for (std::int64_t c = 0; c < l.cols; ++c) {
      const std::uint8_t byte = q.codes[r * l.row_bytes + (fp4 ? c / 2 : c)];
      const std::uint32_t code = fp4 ? (c % 2 == 0 ? byte & 0x0Fu : byte >> 4) : byte;
      const std::uint32_t mag = code & mag_mask;
      st.zero += mag == 0;
      st.saturated += mag == max_mag;
    }
  }
  return st;
}

ScaleRange scale_range(const Recipe& recipe, const QuantizedTensor& q) {
  const OperandSpec& s = recipe[q.role];
  ScaleRange range{INFINITY, -INFINITY, 0};
  for (std::int64_t i = 0; i < q.layout.scale_count(); ++i) {
    double v = 0.0;
    switch (s.scale) {
      case ScaleFormat::e8m0:
        v = nx::e8m0_decode(q.scale_codes[i]);
        break;
      case ScaleFormat::ue4m3:
      case ScaleFormat::ue5m3:
        v = nx::mf_decode(minifloat(s.scale, recipe.ue5m3), q.scale_codes[i]);
        break;
      case ScaleFormat::fp32:
        v = q.scale_values[i];
        break;
    }
    if (!std::isfinite(v)) {
      ++range.nonfinite;
      continue;
    }
    range.min = std::min(range.min, v);
    range.max = std::max(range.max, v);
  }
  if (range.min > range.max) range.min = range.max = NAN;
  return range;
}

ErrorStats relative_error(const Matrix<double>& approx, const Matrix<float>& exact) {
  ErrorStats st;
  double diff = 0.0, norm = 0.0;
  for (std::int64_t i = 0; i < exact.size(); ++i) {
    const double x = exact.data[i], y = approx.data[i];
    if (!std::isfinite(x) || !std::isfinite(y)) {
      ++st.skipped;
      continue;
    }
    ++st.compared;
    diff += (y - x) * (y - x);
    norm += x * x;
  }
  st.relative = norm > 0.0 ? std::sqrt(diff / norm) : (diff > 0.0 ? INFINITY : 0.0);
  return st;
}

std::int64_t stored_bytes(const QuantizedTensor& q) {
  const QuantLayout& l = q.layout;
  std::int64_t bytes = l.code_bytes() + l.scale_count() * (l.scale_is_code ? 1 : 4);
  if (l.two_level) bytes += 4;
  bytes += static_cast<std::int64_t>(q.residual_index.size()) * (8 + 4);
  return bytes;
}

}  // namespace fp4jit::cli
