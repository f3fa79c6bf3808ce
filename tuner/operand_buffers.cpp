#include "tuner/operand_buffers.hpp"

#include <cmath>
#include <numbers>

#include "numerics/philox.cuh"
#include "tuner/parallel.hpp"

namespace fp4jit::tuner {

namespace {

constexpr std::int64_t kRowsPerBlock = 64;   // rows made and converted together
constexpr nx::u32 kSourceTag = 0x53524345u;  // "SRCE": counter word 3 of every draw

// Uniform float in (0, 1] from 32 bits.
float unit(nx::u32 bits) {
  return (static_cast<float>(bits >> 8) + 1.0f) * 0x1p-24f;
}

// Row r of the source: elements 4q..4q+3 from one Philox call with counter
// {q, lo32(r), hi32(r), "SRCE"} and key {seed, 0}: two Box-Muller pairs of its four words.
void make_row(std::int64_t r, std::int64_t cols, std::uint32_t seed, float* out) {
  const float scale = std::exp2(static_cast<float>(r % 7) - 3.0f);
  for (std::int64_t q = 0; 4 * q < cols; ++q) {
    const nx::U32x4 w = nx::philox4x32_10(
        nx::U32x4{{static_cast<nx::u32>(q), static_cast<nx::u32>(r),
                   static_cast<nx::u32>(static_cast<std::uint64_t>(r) >> 32), kSourceTag}},
        seed, 0u);
    float z[4];
    for (int pair = 0; pair < 2; ++pair) {
      const float radius = std::sqrt(-2.0f * std::log(unit(w.v[2 * pair])));
      const float angle = 2.0f * std::numbers::pi_v<float> * unit(w.v[2 * pair + 1]);
      z[2 * pair] = radius * std::cos(angle);
      z[2 * pair + 1] = radius * std::sin(angle);
    }
    for (std::int64_t i = 0; i < 4 && 4 * q + i < cols; ++i) out[4 * q + i] = z[i] * scale;
  }
}

}  // namespace

std::vector<std::uint8_t> random_source(std::int64_t rows, std::int64_t cols, DType dtype,
                                        std::uint32_t seed, int threads) {
  const std::int64_t row_bytes = cols * dtype_size(dtype);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(rows * row_bytes));
  const std::int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  parallel_for(
      blocks, 1,
      [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t b = begin; b < end; ++b) {
          const std::int64_t r0 = b * kRowsPerBlock, n = std::min(kRowsPerBlock, rows - r0);
          Matrix<float> m(n, cols);
          for (std::int64_t i = 0; i < n; ++i) make_row(r0 + i, cols, seed, m.row(i));
          from_matrix(m, TensorView{out.data() + r0 * row_bytes, dtype, n, cols, 0});
        }
      },
      threads);
  return out;
}

}  // namespace fp4jit::tuner
