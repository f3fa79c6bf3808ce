#include "core/quantized.hpp"

namespace fp4jit {

OperandShape operand_shape(Role role, std::int64_t source_rows, std::int64_t source_cols) {
  if (role_info(role).transposed) return {source_cols, source_rows};
  return {source_rows, source_cols};
}

BlockIndex block_of(const Block& block, std::int64_t r, std::int64_t c) {
  switch (block.kind) {
    case Block::Kind::tile:
      return {r / block.rows, c / block.cols};
    case Block::Kind::row:
      return {r, 0};
    case Block::Kind::col:
      return {0, c};
    case Block::Kind::tensor:
      return {0, 0};
  }
  return {0, 0};
}

QuantLayout quant_layout(const Recipe& recipe, Role role, std::int64_t source_rows,
                         std::int64_t source_cols) {
  const OperandSpec& s = recipe[role];
  if (source_rows <= 0 || source_cols <= 0)
    fail(ErrorKind::invalid_argument, "operand {}: empty tensor [{}, {}]", name(role), source_rows,
         source_cols);
  if (source_rows > kMaxTensorElements / source_cols)
    fail(ErrorKind::invalid_argument,
         "operand {}: a [{}, {}] tensor has more elements than fp4jit addresses (2^56)", name(role),
         source_rows, source_cols);
  const OperandShape shape = operand_shape(role, source_rows, source_cols);
  // Formatted only for an error: planners ask for layouts on every call.
  const auto where = [&] {
    return fmt::format("operand {} ({}) made from a [{}, {}] tensor is [{}, {}] with K = {}",
                       name(role), role_info(role).description, source_rows, source_cols,
                       shape.rows, shape.cols, shape.cols);
  };
  QuantLayout l;
  l.rows = shape.rows;
  l.cols = shape.cols;
  if (s.block.kind == Block::Kind::tile && l.cols % s.block.cols != 0)
    fail(ErrorKind::invalid_argument, "{}: K is not a multiple of the block width {} (block={})",
         where(), s.block.cols, block_text(s.block));
  if (s.elem == ElemFormat::e2m1 && l.cols % 2 != 0)
    fail(ErrorKind::invalid_argument,
         "{}: K must be even to pack two E2M1 codes per byte (block={})", where(),
         block_text(s.block));
  if (s.had.size != 0 && l.cols % s.had.size != 0)
    fail(ErrorKind::invalid_argument, "{}: K is not a multiple of the Hadamard size {} (block={})",
         where(), s.had.size, block_text(s.block));
  if (s.src == Source::requant)
    quant_layout(recipe, role_info(role).forward, source_rows, source_cols);
  l.row_bytes = s.elem == ElemFormat::e2m1 ? l.cols / 2 : l.cols;
  switch (s.block.kind) {
    case Block::Kind::tile:
      l.scale_rows = (l.rows + s.block.rows - 1) / s.block.rows;
      l.scale_cols = l.cols / s.block.cols;
      break;
    case Block::Kind::row:
      l.scale_rows = l.rows, l.scale_cols = 1;
      break;
    case Block::Kind::col:
      l.scale_rows = 1, l.scale_cols = l.cols;
      break;
    case Block::Kind::tensor:
      l.scale_rows = l.scale_cols = 1;
      break;
  }
  l.scale_is_code = s.scale != ScaleFormat::fp32;
  l.two_level = s.rule == ScaleRule::two_level;
  return l;
}

}  // namespace fp4jit
