// The golden model: plain, readable C++ over the numerics of templates/numerics. Every other
// backend (host JIT, CUDA) is checked against it byte for byte (quantize) or against its
// double-precision GEMM.
#pragma once
#include <cstdint>
#include <vector>

#include "core/matrix.hpp"
#include "core/quantized.hpp"
#include "core/recipe.hpp"

namespace fp4jit::reference {

struct QuantizeOptions {
  std::uint64_t seed = 0;    // stochastic rounding and nothing else
  std::uint64_t offset = 0;  // added to each element's index before drawing its random bits
  // Q-EMA (operands with qema=on): the EMA of the weights, same shape as the input, and the step.
  const Matrix<float>* ema = nullptr;
  int step = 0;
};

// Quantizes the operand `role` of `recipe` from `tensor`, given in the source layout of the role
// (X [tokens, in] for x and xt, W [out, in] for w and wt, dY [tokens, out] for dy and dyt).
QuantizedTensor quantize(const Recipe& recipe, Role role, const Matrix<float>& tensor,
                         const QuantizeOptions& options = {});

// The operand's values in its own layout and domain (K-major, after any Hadamard transform):
// what the GEMM multiplies. NaN scales give NaN. OCC residuals are not included.
Matrix<double> dequantize_operand(const Recipe& recipe, const QuantizedTensor& q);

// The quantized values mapped back to the source tensor: transposed back, Hadamard undone, and
// (when `add_residual`) the OCC residual added back.
Matrix<double> dequantize_source(const Recipe& recipe, const QuantizedTensor& q, bool add_residual);
// The same mapping applied to operand values computed elsewhere (e.g. by another backend's
// dequantize): `operand` is [q.layout.rows, q.layout.cols] in the operand's layout and domain.
Matrix<double> operand_to_source(const Recipe& recipe, const QuantizedTensor& q,
                                 Matrix<double> operand, bool add_residual);

// The columns of `m` summed over its rows in FP32, in the fixed order of
// templates/quantize/column_sums.cuh (64-row chunks of eight interleaved slices), the order every
// backend's kernels follow, so that all give these bits (e.g. a bias gradient from dY).
std::vector<float> column_sums(const Matrix<float>& m);

// OCC, one row at a time: clamps each row of `m` (in place) to its (1-alpha, alpha) quantiles
// and returns the residual x - clamp(x) at the changed positions, in row-major order.
struct Residual {
  std::vector<std::int64_t> index;  // row * cols + col
  std::vector<float> value;
};
Residual occ_clamp(Matrix<float>& m, double alpha);

struct GemmOptions {
  // OCC compensation for fprop: Y += R * W^T, with R the x operand's sparse residual and W the
  // weight in high precision [N, K].
  const QuantizedTensor* residual_of = nullptr;
  const Matrix<float>* residual_weight = nullptr;
};

// C[M, N] = A B^T for A = deq(a) [M, K], B = deq(b) [N, K]: exact products, double accumulation.
// Throws if K differs or the operands' Hadamard transforms differ.
Matrix<double> gemm(const Recipe& recipe, const QuantizedTensor& a, const QuantizedTensor& b,
                    const GemmOptions& options = {});

// The DGE factor f'(W * sf) of the weight operand, elementwise over W [out, in]; sf is the
// weight's own power-of-two scale. Needs a recipe whose w has dge=on.
Matrix<float> dge_factor(const Recipe& recipe, const Matrix<float>& w);

// Applies the operand's Hadamard transform to every row of m (in chunks along the row).
void apply_hadamard(const HadamardSpec& had, Matrix<float>& m);

}  // namespace fp4jit::reference
