#include "tuner/gemm_check.hpp"

#include <cmath>

#include "core/matrix.hpp"
#include "runtime/host_tensor.hpp"

namespace fp4jit::tuner {

namespace {

Matrix<float> dequantized(Engine& ref, const Recipe& recipe, Role role, std::int64_t rows,
                          std::int64_t k, const QuantizedView& q) {
  const OperandShape src = gemm_source_shape(role, rows, k);
  const QuantLayout l = quant_layout(recipe, role, src.rows, src.cols);
  Matrix<float> m(l.rows, l.cols);
  ref.dequantize(recipe, role, q, src.rows, src.cols,
                 TensorView{m.data.data(), DType::f32, l.rows, l.cols, 0});
  return m;
}

}  // namespace

GemmReference::GemmReference(const Recipe& recipe, GemmOp op, const GemmShape& shape,
                             const QuantizedView& a, const QuantizedView& b)
    : shape_(shape) {
  EngineOptions o;
  o.backend = BackendKind::reference;
  Engine ref(o);
  const GemmRoles roles = gemm_roles(op);
  const Matrix<float> da = dequantized(ref, recipe, roles.a, shape.m, shape.k, a);
  const Matrix<float> db = dequantized(ref, recipe, roles.b, shape.n, shape.k, b);
  const std::int64_t samples = std::min<std::int64_t>(shape.m, 32);
  for (std::int64_t i = 0; i < samples; ++i)
    rows_.push_back(samples == shape.m ? i : (i * shape.m) / samples + i % 3);
  ref_.assign(static_cast<std::size_t>(samples * shape.n), 0.0);
  for (std::size_t s = 0; s < rows_.size(); ++s) {
    const float* ar = da.row(std::min(rows_[s], shape.m - 1));
    for (std::int64_t j = 0; j < shape.n; ++j) {
      const float* br = db.row(j);
      double acc = 0.0;
      for (std::int64_t t = 0; t < shape.k; ++t) acc += static_cast<double>(ar[t]) * br[t];
      ref_[s * static_cast<std::size_t>(shape.n) + static_cast<std::size_t>(j)] = acc;
    }
  }
  for (auto& r : rows_) r = std::min(r, shape.m - 1);
}

std::optional<std::string> GemmReference::compare(const std::vector<double>& got,
                                                  double tolerance) const {
  double err = 0.0, norm = 0.0;
  std::int64_t worst = -1;
  double worst_d = 0.0;
  for (std::size_t i = 0; i < ref_.size(); ++i) {
    const double d = got[i] - ref_[i];
    if (!std::isfinite(got[i])) {
      return fmt::format("row {} column {}: {} where the reference has {}",
                         rows_[i / static_cast<std::size_t>(shape_.n)],
                         i % static_cast<std::size_t>(shape_.n), got[i], ref_[i]);
    }
    err += d * d;
    norm += ref_[i] * ref_[i];
    if (std::abs(d) > worst_d) worst_d = std::abs(d), worst = static_cast<std::int64_t>(i);
  }
  const double rel = norm > 0.0 ? std::sqrt(err / norm) : std::sqrt(err);
  if (rel <= tolerance) return std::nullopt;
  const auto wi = static_cast<std::size_t>(worst);
  return fmt::format(
      "relative error {:.3g} > {:.3g} over {} sampled rows; worst at row {} column {}: {} vs {}",
      rel, tolerance, rows_.size(), rows_[wi / static_cast<std::size_t>(shape_.n)],
      wi % static_cast<std::size_t>(shape_.n), got[wi], ref_[wi]);
}

std::optional<std::string> GemmReference::check(const float* c, std::int64_t ldc,
                                                double tolerance) const {
  std::vector<double> got(ref_.size());
  for (std::size_t s = 0; s < rows_.size(); ++s)
    for (std::int64_t j = 0; j < shape_.n; ++j)
      got[s * static_cast<std::size_t>(shape_.n) + static_cast<std::size_t>(j)] =
          c[rows_[s] * ldc + j];
  return compare(got, tolerance);
}

std::optional<std::string> GemmReference::check(const std::uint16_t* c, DType dtype,
                                                std::int64_t ldc, double tolerance) const {
  std::vector<double> got(ref_.size());
  for (std::size_t s = 0; s < rows_.size(); ++s) {
    const Matrix<float> row = to_matrix(
        TensorView{const_cast<std::uint16_t*>(c + rows_[s] * ldc), dtype, 1, shape_.n, 0});
    for (std::int64_t j = 0; j < shape_.n; ++j)
      got[s * static_cast<std::size_t>(shape_.n) + static_cast<std::size_t>(j)] =
          row.data[static_cast<std::size_t>(j)];
  }
  return compare(got, tolerance);
}

}  // namespace fp4jit::tuner
