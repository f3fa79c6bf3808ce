// The reference a GEMM candidate is verified against: the product of the dequantized operands
// (reference backend) with double accumulation, on a deterministic sample of output rows (all
// rows up to 32, else 32 spread over M), so that verification stays cheap for large shapes: only
// those rows of A are dequantized, and B's rows are dequantized and multiplied on the host's
// threads.
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
  // The same from the sampled rows alone, packed [rows().size(), N]: row s is output row rows()[s]
  // (a device result needs only these rows copied back).
  std::optional<std::string> check_sampled(const float* rows, double tolerance) const;
  std::optional<std::string> check_sampled(const std::uint16_t* rows, DType dtype,
                                           double tolerance) const;
  const std::vector<std::int64_t>& rows() const { return rows_; }
  const std::vector<double>& values() const { return ref_; }  // [rows().size(), N]

 private:
  std::optional<std::string> compare(const std::vector<double>& got, double tolerance) const;
  // got[s * N + j] = output (rows_[s], j), read from row_at(s)[j].
  template <class RowAt>
  std::vector<double> gather_f32(RowAt row_at) const;
  template <class RowAt>
  std::vector<double> gather_16(RowAt row_at, DType dtype) const;
  GemmShape shape_;
  std::vector<std::int64_t> rows_;
  std::vector<double> ref_;  // [rows_.size(), N]
};

}  // namespace fp4jit::tuner
