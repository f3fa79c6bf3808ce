// Quantized operand layouts (core/quantized.hpp): code and scale shapes of every preset's six
// operands, computed here from RECIPES.md's block shapes, and the shape errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/quantized.hpp"

namespace fp4jit {
namespace {

using Kind = Block::Kind;

// What RECIPES.md says about one operand's layout.
struct LayoutSpec {
  Kind kind;
  int block_rows = 0, block_cols = 0;  // tile
  bool fp4 = true;                     // E2M1: two codes per byte; else one byte per code
  bool scale_is_code = true;           // uint8 scale codes; else float32 scales
  bool two_level = false;
};

LayoutSpec expected(const std::string& preset, Role role) {
  const bool weight = role == Role::w || role == Role::wt;
  const bool grad = role == Role::dy || role == Role::dyt;
  if (preset == "mxfp4" || preset == "tetrajet") return {Kind::tile, 1, 32};
  if (preset == "nvfp4") return {Kind::tile, weight ? 16 : 1, 16, true, true, true};
  if (preset == "ue5m3") return {Kind::tile, 1, 16, true, true, true};
  // msfp4: one scale per token (X rows, X^T columns), per output channel (W rows, W^T columns),
  // one per gradient tensor (E5M2).
  if (grad) return {Kind::tensor, 0, 0, false, false};
  return {role_info(role).transposed ? Kind::col : Kind::row, 0, 0, true, false};
}

using LayoutCase = std::tuple<std::string, Role>;
class QuantLayoutShapes : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(QuantLayoutShapes, CodesAndScales) {
  const auto& [preset, role] = GetParam();
  const Recipe recipe = parse_recipe(preset);
  const LayoutSpec e = expected(preset, role);
  // Source shapes whose both sides are multiples of 32 suit every operand of every preset.
  for (auto [src_rows, src_cols] :
       {std::pair<std::int64_t, std::int64_t>{32, 64}, {96, 32}, {160, 128}, {64, 4096}}) {
    SCOPED_TRACE(preset + " " + std::string(name(role)) + " from [" + std::to_string(src_rows) +
                 ", " + std::to_string(src_cols) + "]");
    const QuantLayout l = quant_layout(recipe, role, src_rows, src_cols);
    // Transposed operands swap rows and columns; K is always the operand's column count.
    const bool t = role_info(role).transposed;
    const std::int64_t rows = t ? src_cols : src_rows, cols = t ? src_rows : src_cols;
    EXPECT_EQ(l.rows, rows);
    EXPECT_EQ(l.cols, cols);
    const OperandShape shape = operand_shape(role, src_rows, src_cols);
    EXPECT_EQ(shape.rows, rows);
    EXPECT_EQ(shape.cols, cols);
    EXPECT_EQ(l.row_bytes, e.fp4 ? cols / 2 : cols);
    EXPECT_EQ(l.code_bytes(), rows * l.row_bytes);
    std::int64_t scale_rows = 1, scale_cols = 1;
    switch (e.kind) {
      case Kind::tile:
        scale_rows = (rows + e.block_rows - 1) / e.block_rows;
        scale_cols = cols / e.block_cols;
        break;
      case Kind::row:
        scale_rows = rows;
        break;
      case Kind::col:
        scale_cols = cols;
        break;
      case Kind::tensor:
        break;
    }
    EXPECT_EQ(l.scale_rows, scale_rows);
    EXPECT_EQ(l.scale_cols, scale_cols);
    EXPECT_EQ(l.scale_count(), scale_rows * scale_cols);
    EXPECT_EQ(l.scale_is_code, e.scale_is_code);
    EXPECT_EQ(l.two_level, e.two_level);
  }
}

std::string layout_name(const ::testing::TestParamInfo<LayoutCase>& info) {
  return std::get<0>(info.param) + "_" + std::string(name(std::get<1>(info.param)));
}
INSTANTIATE_TEST_SUITE_P(Presets, QuantLayoutShapes,
                         ::testing::Combine(::testing::Values("mxfp4", "nvfp4", "msfp4", "tetrajet",
                                                              "ue5m3"),
                                            ::testing::ValuesIn(kAllRoles)),
                         layout_name);

TEST(QuantLayout, RaggedRowsRoundUp) {
  const Recipe nv = parse_recipe("nvfp4");
  // W [40, 64]: 16x16 tiles over 40 rows -> 3 tile rows, the last one partial.
  QuantLayout l = quant_layout(nv, Role::w, 40, 64);
  EXPECT_EQ(l.scale_rows, 3);
  EXPECT_EQ(l.scale_cols, 4);
  // W^T of W [64, 40] is [40, 64].
  l = quant_layout(nv, Role::wt, 64, 40);
  EXPECT_EQ(l.rows, 40);
  EXPECT_EQ(l.scale_rows, 3);
  // Any row count works for 1xN blocks.
  l = quant_layout(parse_recipe("mxfp4"), Role::x, 7, 64);
  EXPECT_EQ(l.rows, 7);
  EXPECT_EQ(l.scale_rows, 7);
  EXPECT_EQ(l.scale_cols, 2);
  l = quant_layout(parse_recipe("mxfp4:x.block=32x32"), Role::x, 33, 64);
  EXPECT_EQ(l.scale_rows, 2);
  // Per-tensor E5M2 gradients take any K, odd included (one byte per code).
  l = quant_layout(parse_recipe("msfp4"), Role::dy, 5, 7);
  EXPECT_EQ(l.row_bytes, 7);
  EXPECT_EQ(l.scale_count(), 1);
}

// A tensor of more than 2^56 elements is refused: its byte counts (codes, FP32 scales, int64
// residual positions) would overflow 64-bit arithmetic. Exactly 2^56 is laid out.
TEST(QuantLayout, TensorsPastTwoToThe56ElementsAreRefused) {
  const Recipe mx = parse_recipe("mxfp4");
  const QuantLayout l = quant_layout(mx, Role::x, std::int64_t{1} << 40, std::int64_t{1} << 16);
  EXPECT_EQ(l.code_bytes(), std::int64_t{1} << 55);
  for (const auto& [rows, cols] : {std::pair<std::int64_t, std::int64_t>{(1ll << 40) + 1, 1 << 16},
                                   {1ll << 62, 64},
                                   {1ll << 32, 1ll << 32}}) {
    try {
      quant_layout(mx, Role::x, rows, cols);
      ADD_FAILURE() << rows << " x " << cols << " was laid out";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("2^56"), std::string::npos) << e.what();
    }
  }
}

TEST(QuantLayout, BlockOfAnElement) {
  const Block tile{Kind::tile, 16, 32};
  EXPECT_EQ(block_of(tile, 0, 0).row, 0);
  EXPECT_EQ(block_of(tile, 15, 31).row, 0);
  EXPECT_EQ(block_of(tile, 15, 31).col, 0);
  EXPECT_EQ(block_of(tile, 16, 32).row, 1);
  EXPECT_EQ(block_of(tile, 16, 32).col, 1);
  EXPECT_EQ(block_of(tile, 47, 100).row, 2);
  EXPECT_EQ(block_of(tile, 47, 100).col, 3);
  const Block row{Kind::row, 0, 0}, col{Kind::col, 0, 0}, tensor{Kind::tensor, 0, 0};
  EXPECT_EQ(block_of(row, 5, 9).row, 5);
  EXPECT_EQ(block_of(row, 5, 9).col, 0);
  EXPECT_EQ(block_of(col, 5, 9).row, 0);
  EXPECT_EQ(block_of(col, 5, 9).col, 9);
  EXPECT_EQ(block_of(tensor, 5, 9).row, 0);
  EXPECT_EQ(block_of(tensor, 5, 9).col, 0);
}

void expect_layout_error(const Recipe& recipe, Role role, std::int64_t rows, std::int64_t cols,
                         std::initializer_list<const char*> parts) {
  try {
    quant_layout(recipe, role, rows, cols);
    ADD_FAILURE() << name(role) << " [" << rows << ", " << cols << "] accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    const std::string message = e.what();
    for (const char* part : parts)
      EXPECT_NE(message.find(part), std::string::npos)
          << "'" << message << "' lacks '" << part << "'";
  }
}

TEST(QuantLayout, ErrorsNameTheOperandTheShapeAndTheBlock) {
  const Recipe mx = parse_recipe("mxfp4");
  // K not a multiple of the block width.
  expect_layout_error(mx, Role::x, 4, 48,
                      {"operand x", "[4, 48]", "K = 48", "block width 32", "block=1x32"});
  // Transposed: the source [48, 64] becomes [64, 48], K = 48.
  expect_layout_error(mx, Role::xt, 48, 64,
                      {"operand xt", "[48, 64]", "[64, 48]", "K = 48", "block=1x32"});
  expect_layout_error(parse_recipe("nvfp4"), Role::w, 16, 24,
                      {"operand w", "[16, 24]", "block=16x16"});
  // Odd K for E2M1 (row blocks put no constraint on K themselves).
  expect_layout_error(parse_recipe("msfp4"), Role::x, 4, 7,
                      {"operand x", "[4, 7]", "K = 7", "even", "block=row"});
  expect_layout_error(parse_recipe("msfp4"), Role::wt, 7, 4,
                      {"operand wt", "[7, 4]", "[4, 7]", "even", "block=col"});
  // K not a multiple of the Hadamard size (larger than the block here).
  const Recipe had32 = parse_recipe("nvfp4:wgrad.had=32");
  expect_layout_error(had32, Role::dyt, 48, 64,
                      {"operand dyt", "[48, 64]", "K = 48", "Hadamard size 32", "block=1x16"});
  expect_layout_error(parse_recipe("msfp4:fprop.had=16"), Role::x, 4, 24,
                      {"operand x", "[4, 24]", "Hadamard size 16", "block=row"});
  // Empty tensors.
  expect_layout_error(mx, Role::x, 0, 32, {"operand x", "empty", "[0, 32]"});
  expect_layout_error(mx, Role::w, 32, -1, {"operand w", "empty"});
}

TEST(QuantLayout, RequantizedOperandsNeedAValidForwardOperand) {
  // TetraJet's W^T is re-quantized from the dequantized fprop copy of W [64, 40], whose K = 40 is
  // not a multiple of 32, although W^T's own K = 64 is.
  expect_layout_error(parse_recipe("tetrajet"), Role::wt, 64, 40,
                      {"operand w", "[64, 40]", "block=1x32"});
  EXPECT_NO_THROW(quant_layout(parse_recipe("tetrajet"), Role::wt, 64, 64));
}

}  // namespace
}  // namespace fp4jit
