// Reference GEMM: C = deq(A) deq(B)^T with exact products and double accumulation.
#include "reference/reference.hpp"

namespace fp4jit::reference {

Matrix<double> gemm(const Recipe& recipe, const QuantizedTensor& a, const QuantizedTensor& b,
                    const GemmOptions& options) {
  if (a.layout.cols != b.layout.cols)
    fail(ErrorKind::invalid_argument, "gemm: operand {} has K = {} but operand {} has K = {}",
         name(a.role), a.layout.cols, name(b.role), b.layout.cols);
  const std::string expected = canonical(recipe);
  for (const QuantizedTensor* q : {&a, &b})
    if (q->recipe != expected)
      fail(ErrorKind::invalid_argument, "gemm: operand {} was quantized with recipe '{}', not '{}'",
           name(q->role), q->recipe, expected);
  if (!(recipe[a.role].had == recipe[b.role].had))
    fail(ErrorKind::invalid_argument, "gemm: operands {} and {} use different Hadamard transforms",
         name(a.role), name(b.role));
  const Matrix<double> da = dequantize_operand(recipe, a);
  const Matrix<double> db = dequantize_operand(recipe, b);
  const std::int64_t m = da.rows, n = db.rows, k = da.cols;
  Matrix<double> c(m, n);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (std::int64_t p = 0; p < k; ++p) sum += da(i, p) * db(j, p);
      c(i, j) = sum;
    }
  }
  if (options.residual_of != nullptr) {
    const QuantizedTensor& r = *options.residual_of;
    const Matrix<float>* w = options.residual_weight;
    if (w == nullptr || w->rows != n || w->cols != k || r.layout.rows != m || r.layout.cols != k)
      fail(ErrorKind::invalid_argument,
           "gemm: OCC compensation needs the residual of an [{}, {}] operand and a [{}, {}] weight",
           m, k, n, k);
    for (std::size_t t = 0; t < r.residual_index.size(); ++t) {
      const std::int64_t i = r.residual_index[t] / k, p = r.residual_index[t] % k;
      for (std::int64_t j = 0; j < n; ++j) c(i, j) += double(r.residual_value[t]) * (*w)(j, p);
    }
  }
  return c;
}

}  // namespace fp4jit::reference
