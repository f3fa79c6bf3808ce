// Reference DGE factor: f'(W * sf) elementwise, sf the weight operand's power-of-two scale.
#include <cmath>

#include "numerics/dge.cuh"
#include "numerics/scale.cuh"
#include "reference/reference.hpp"

namespace fp4jit::reference {

Matrix<float> dge_factor(const Recipe& recipe, const Matrix<float>& w) {
  const OperandSpec& s = recipe[Role::w];
  if (!s.dge)
    fail(ErrorKind::invalid_argument, "dge: recipe '{}' has dge=off for the weight operand w", recipe.preset);
  const QuantLayout l = quant_layout(recipe, Role::w, w.rows, w.cols);
  // The weight's block amax (non-finite blocks take sf = 1, as in quantize).
  std::vector<float> amax(l.scale_count(), 0.0f);
  for (std::int64_t r = 0; r < w.rows; ++r) {
    for (std::int64_t c = 0; c < w.cols; ++c) {
      const BlockIndex bi = block_of(s.block, r, c);
      float& a = amax[bi.row * l.scale_cols + bi.col];
      a = nx::is_finite(w(r, c)) ? std::max(a, std::fabs(w(r, c))) : INFINITY;
    }
  }
  Matrix<float> out(w.rows, w.cols);
  for (std::int64_t r = 0; r < w.rows; ++r) {
    for (std::int64_t c = 0; c < w.cols; ++c) {
      const BlockIndex bi = block_of(s.block, r, c);
      const int e = nx::scale_ms_pow2_exponent(amax[bi.row * l.scale_cols + bi.col], elem_max(s.elem));
      out(r, c) = nx::dge_factor(nx::mul_rn(w(r, c), nx::pow2f(e)), recipe.dge_k, recipe.dge_clip);
    }
  }
  return out;
}

}  // namespace fp4jit::reference
