// Statistics the CLI prints about a quantized operand.
#pragma once
#include <cstdint>

#include "core/matrix.hpp"
#include "core/quantized.hpp"
#include "core/recipe.hpp"

namespace fp4jit::cli {

struct CodeStats {
  std::int64_t elements = 0;
  std::int64_t zero = 0;       // magnitude code 0
  std::int64_t saturated = 0;  // the largest finite magnitude (E2M1: +-6)
};
CodeStats code_stats(const Recipe& recipe, const QuantizedTensor& q);

struct ScaleRange {
  double min = 0.0, max = 0.0;  // decoded block scales, finite ones
  std::int64_t nonfinite = 0;   // NaN scales (non-finite blocks)
};
ScaleRange scale_range(const Recipe& recipe, const QuantizedTensor& q);

// ||approx - exact||_F / ||exact||_F over the positions where both are finite.
struct ErrorStats {
  double relative = 0.0;
  std::int64_t compared = 0;
  std::int64_t skipped = 0;  // positions where either value is NaN or Inf
};
ErrorStats relative_error(const Matrix<double>& approx, const Matrix<float>& exact);

// Bytes of the stored operand: codes, scales, tensor scale, residual.
std::int64_t stored_bytes(const QuantizedTensor& q);

}  // namespace fp4jit::cli
