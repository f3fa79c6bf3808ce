// The three GEMMs of a linear layer, as problems: which operand pair each multiplies and the
// layouts those operands have for a given M, N, K. Shared by Engine (validation), every backend
// and the code generators.
//
// For Y = X W^T with X [tokens, in] and W [out, in]:
//   fprop  Y  [tokens, out] = x   . w^T     M = tokens  N = out  K = in
//   dgrad  dX [tokens, in]  = dy  . wt^T    M = tokens  N = in   K = out
//   wgrad  dW [out, in]     = dyt . xt^T    M = out     N = in   K = tokens
// A is [M, K] and B is [N, K], both K-major (core/quantized.hpp); C = A B^T is [M, N] row-major.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/quantized.hpp"
#include "core/recipe.hpp"

namespace fp4jit {

enum class GemmOp : std::uint8_t { fprop, dgrad, wgrad };
std::span<const Named<GemmOp>> gemm_op_names();  // "fprop", "dgrad", "wgrad"
inline std::string_view name(GemmOp op) {
  return name_of(gemm_op_names(), op);
}

struct GemmRoles {
  Role a, b;
};
GemmRoles gemm_roles(GemmOp op);  // fprop: (x, w); dgrad: (dy, wt); wgrad: (dyt, xt)

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  bool operator==(const GemmShape&) const = default;
};
// "MxNxK", and its parse (throws Error(invalid_argument) naming the text).
std::string gemm_shape_text(const GemmShape& s);
GemmShape parse_gemm_shape(std::string_view text);

// The source tensor an operand of `rows` x K is quantized from ([rows, k], or [k, rows] for the
// transposed roles wt, dyt, xt).
OperandShape gemm_source_shape(Role role, std::int64_t rows, std::int64_t k);

// Layouts of the GEMM's operands; throw Error(invalid_argument) naming the GEMM, the operand and
// the rule its shape breaks (K not a multiple of the block, ...).
struct GemmLayouts {
  QuantLayout a, b;
};
GemmLayouts gemm_layouts(const Recipe& recipe, GemmOp op, const GemmShape& shape);

// The shapes of a linear layer's three GEMMs from the fprop shape (tokens x out x in).
GemmShape gemm_shape_of(GemmOp op, const GemmShape& fprop);

// GEMMs named on a command line: "MxNxK" is a linear layer of that fprop shape (tokens x out x in:
// its three GEMMs), "fprop:MxNxK" (dgrad:, wgrad:) one GEMM of that M x N x K.
struct GemmRequest {
  bool layer = true;
  GemmOp op = GemmOp::fprop;
  GemmShape shape;
};
GemmRequest parse_gemm_request(std::string_view text);
// The (op, shape) pairs a request stands for.
std::vector<std::pair<GemmOp, GemmShape>> gemm_list(const GemmRequest& r);

}  // namespace fp4jit
