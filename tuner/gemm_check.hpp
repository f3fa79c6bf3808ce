// The reference a GEMM candidate is verified against: the product of the dequantized operands
// (reference backend) with double accumulation, on a deterministic sample of output rows (all
// rows up to 32, else 32 spread over M), so that verification stays cheap for large shapes.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/gemm.hpp"
#include "fp4jit/engine.hpp"

namespace fp4jit::tuner {

class GemmReference {
 public:
  // a, b: the operands in host memory (QuantizedView of host buffers).
  GemmReference(const Recipe& recipe, GemmOp op, const GemmShape& shape, const QuantizedView& a,
                const QuantizedView& b);
  // c: [M, N] row-major float32 with row stride ldc. nullopt when every sampled row is within a
  // relative Frobenius error of `tolerance`, else what differs.
  std::optional<std::string> check(const float* c, std::int64_t ldc, double tolerance) const;
  // Same for a bfloat16 / float16 output (raw bits; `dtype` says which).
  std::optional<std::string> check(const std::uint16_t* c, DType dtype, std::int64_t ldc,
                                   double tolerance) const;
  const std::vector<std::int64_t>& rows() const { return rows_; }

 private:
  std::optional<std::string> compare(const std::vector<double>& got, double tolerance) const;
  GemmShape shape_;
  std::vector<std::int64_t> rows_;
  std::vector<double> ref_;  // [rows_.size(), N]
};

}  // namespace fp4jit::tuner
