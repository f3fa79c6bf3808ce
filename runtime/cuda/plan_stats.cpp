// Which stats passes a quantize plan can leave out (plan.cpp): those occ_select does as it reads
// the rows anyway, and those a pair's two operands share because they see the same values.
#include "runtime/cuda/plan.hpp"

namespace fp4jit::cuda {

namespace {

// Whether a pair's transposed operand quantizes the same values as the row-wise one: no Hadamard
// on either, the same OCC clamp, the transposed one quantized directly (not requantized).
bool same_values(const OperandSpec& r, const OperandSpec& c) {
  return r.had.size == 0 && c.had.size == 0 && r.occ == c.occ && c.src == Source::direct;
}

}  // namespace

// One block per source row (block=row row-wise, block=col transposed, as msfp4's x and xt) and no
// Hadamard: a block's stat word is the largest |clamp(x)| over the row the select has just read.
bool occ_stats_in_select(const OperandSpec& s, bool transposed) {
  return s.occ && s.had.size == 0 &&
         s.block.kind == (transposed ? Block::Kind::col : Block::Kind::row);
}

// Both scaled per source row (block=row row-wise, block=col transposed: msfp4's x and xt, w and
// wt) or both per tensor (msfp4's dy and dyt), from the same values. The stats pass is then
// occ_select's or quantize_rows'.
bool shared_source_stats(const OperandSpec& r, const OperandSpec& c) {
  const bool per_row = r.block.kind == Block::Kind::row && c.block.kind == Block::Kind::col;
  const bool per_tensor =
      r.block.kind == Block::Kind::tensor && c.block.kind == Block::Kind::tensor;
  return (per_row || per_tensor) && same_values(r, c);
}

// Tile blocks scaled in two levels (the amax gives s_enc) from the same values, as NVFP4's w and
// wt: no stat words, one amax.
bool shared_tensor_amax(const OperandSpec& r, const OperandSpec& c) {
  return r.block.kind == Block::Kind::tile && c.block.kind == Block::Kind::tile &&
         r.rule == ScaleRule::two_level && c.rule == ScaleRule::two_level && same_values(r, c);
}

}  // namespace fp4jit::cuda
