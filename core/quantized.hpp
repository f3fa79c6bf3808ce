// A quantized operand on the host, and its memory layout. Every backend (reference, host JIT,
// CUDA) produces exactly this layout, so results compare byte for byte:
//   codes   [rows, cols] row-major; E2M1 packed two per byte (element 2i in the low nibble),
//           FP8 elements one per byte. rows x cols is the operand in its K-major layout.
//   scales  [scale_rows, scale_cols] row-major, one per block: uint8 codes of the scale format
//           (e8m0, ue4m3, ue5m3) or float32 (fp32 scales, stored as decode factors).
//   tensor scale (two-level recipes): s_enc; value = decode(code) * decode(scale) / s_enc.
//   residual (OCC): positions (row * cols + col in the operand layout), sorted, and float32
//           values x - clamp(x): the part of the input the codes do not hold.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/recipe.hpp"

namespace fp4jit {

struct QuantLayout {
  std::int64_t rows = 0, cols = 0;  // the operand, K-major
  std::int64_t row_bytes = 0;       // bytes of codes per row
  std::int64_t scale_rows = 0, scale_cols = 0;
  bool scale_is_code = true;  // uint8 codes (else float32)
  bool two_level = false;

  std::int64_t code_bytes() const { return rows * row_bytes; }
  std::int64_t scale_count() const { return scale_rows * scale_cols; }
};

// The most elements a tensor may have (2^56): every byte count and element offset fp4jit computes
// for it, in any element or scale format, then fits 64-bit arithmetic. Larger shapes are refused.
constexpr std::int64_t kMaxTensorElements = std::int64_t{1} << 56;

// The operand's dimensions from the source tensor's ([rows, cols] as given by the caller).
struct OperandShape {
  std::int64_t rows = 0, cols = 0;
};
OperandShape operand_shape(Role role, std::int64_t source_rows, std::int64_t source_cols);

// Layout of `role`'s operand made from a [source_rows, source_cols] tensor; throws
// Error(invalid_argument) naming the shape, the block and the rule it breaks.
QuantLayout quant_layout(const Recipe& recipe, Role role, std::int64_t source_rows,
                         std::int64_t source_cols);

// The block (scale) index of operand element (r, c).
struct BlockIndex {
  std::int64_t row, col;
};
BlockIndex block_of(const Block& block, std::int64_t r, std::int64_t c);

struct QuantizedTensor {
  std::string recipe;  // canonical recipe text
  Role role = Role::x;
  QuantLayout layout;
  std::vector<std::uint8_t> codes;
  std::vector<std::uint8_t> scale_codes;  // layout.scale_is_code
  std::vector<float> scale_values;        // !layout.scale_is_code
  float tensor_scale = 1.0f;              // s_enc (two-level)
  float amax = 0.0f;  // largest finite |value| of the operand (after transforms)
  std::vector<std::int64_t> residual_index;
  std::vector<float> residual_value;
  std::uint64_t seed = 0,
                offset = 0;  // stochastic rounding: element i draws sr_bits(seed, offset + i)
};

}  // namespace fp4jit
