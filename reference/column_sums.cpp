// Column sums in the order every kernel follows (templates/quantize/column_sums.cuh): plain
// FP32 additions, no reassociation.
#include "reference/reference.hpp"

namespace fp4jit::reference {

std::vector<float> column_sums(const Matrix<float>& m) {
  constexpr std::int64_t kChunk = 64, kSlices = 8;
  const std::int64_t chunks = (m.rows + kChunk - 1) / kChunk;
  std::vector<float> out(static_cast<std::size_t>(m.cols));
  std::vector<float> partial(static_cast<std::size_t>(chunks));
  for (std::int64_t c = 0; c < m.cols; ++c) {
    for (std::int64_t k = 0; k < chunks; ++k) {
      float slice[kSlices];
      for (std::int64_t s = 0; s < kSlices; ++s) {
        slice[s] = 0.0f;
        for (std::int64_t j = 0; j < kChunk / kSlices; ++j) {
          const std::int64_t r = k * kChunk + j * kSlices + s;
          slice[s] += r < m.rows ? m(r, c) : 0.0f;
        }
      }
      const float a0 = slice[0] + slice[4], a1 = slice[1] + slice[5];
      const float a2 = slice[2] + slice[6], a3 = slice[3] + slice[7];
      partial[k] = (a0 + a2) + (a1 + a3);
    }
    float sum = 0.0f;
    for (std::int64_t g = 0; g < kSlices; ++g) {
      float acc = 0.0f;
      for (std::int64_t k = g; k < chunks; k += kSlices) acc += partial[k];
      sum += acc;
    }
    out[c] = sum;
  }
  return out;
}

}  // namespace fp4jit::reference
