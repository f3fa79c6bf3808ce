#include "tuner/gemm_check.hpp"

#include <algorithm>
#include <cmath>

#include "core/matrix.hpp"
#include "runtime/host_tensor.hpp"
#include "tuner/parallel.hpp"

namespace fp4jit::tuner {

namespace {

// Operand rows that share their scale rows: a slice starting at a multiple of this dequantizes
// exactly as those rows do within the whole operand.
std::int64_t row_group(const Block& b) {
  return b.kind == Block::Kind::tile ? b.rows : 1;
}

// Operand rows [r0, r0 + count) of `role` (layout `l`, K = l.cols) dequantized by the reference
// backend, [count, K] float32: the same values as the whole operand's rows, from a view of the
// slice (r0 a multiple of row_group). The values are the operand's own: an OCC residual is a term
// of its own in a GEMM (the candidates run without it), so the slice carries an empty one.
Matrix<float> dequantized_rows(Engine& ref, const Recipe& recipe, Role role, const QuantLayout& l,
                               const QuantizedView& q, std::int64_t r0, std::int64_t count) {
  const OperandShape src = gemm_source_shape(role, count, l.cols);
  const QuantLayout sl = quant_layout(recipe, role, src.rows, src.cols);
  if (sl.rows != count || sl.row_bytes != l.row_bytes || sl.scale_cols != l.scale_cols)
    fail(ErrorKind::internal, "GEMM reference: rows {}..{} of operand {} do not slice its layout",
         r0, r0 + count, name(role));
  const std::int64_t scale0 = block_of(recipe[role].block, r0, 0).row * l.scale_cols;
  QuantizedView v;
  v.codes = q.codes + r0 * l.row_bytes;
  v.scales = static_cast<std::uint8_t*>(q.scales) + scale0 * (l.scale_is_code ? 1 : 4);
  v.tensor_scale = q.tensor_scale;
  v.amax = q.amax;
  std::int64_t no_residual = 0;
  v.residual_count = &no_residual;
  Matrix<float> m(sl.rows, sl.cols);
  ref.dequantize(recipe, role, v, src.rows, src.cols,
                 TensorView{m.data.data(), DType::f32, sl.rows, sl.cols, 0});
  return m;
}

Engine reference_engine() {
  EngineOptions o;
  o.backend = BackendKind::reference;
  return Engine(o);
}

}  // namespace

// Only the sampled rows of A are dequantized; B is dequantized and multiplied in slices of rows
// on the host threads. Every product is the same sequential sum over K that one loop over the
// whole dequantized operands makes, so the reference does not depend on the thread count.
GemmReference::GemmReference(const Recipe& recipe, GemmOp op, const GemmShape& shape,
                             const QuantizedView& a, const QuantizedView& b)
    : shape_(shape) {
  const GemmRoles roles = gemm_roles(op);
  const GemmLayouts layouts = gemm_layouts(recipe, op, shape);
  const std::int64_t samples = std::min<std::int64_t>(shape.m, 32);
  for (std::int64_t i = 0; i < samples; ++i)
    rows_.push_back(
        std::min(samples == shape.m ? i : (i * shape.m) / samples + i % 3, shape.m - 1));
  Engine ref = reference_engine();
  Matrix<float> da(samples, shape.k);  // [samples, K]: row s is A's row rows_[s]
  const std::int64_t ga = row_group(recipe[roles.a].block);
  for (std::size_t s = 0; s < rows_.size(); ++s) {
    const std::int64_t r0 = rows_[s] / ga * ga;
    const Matrix<float> slice =
        dequantized_rows(ref, recipe, roles.a, layouts.a, a, r0, std::min(ga, shape.m - r0));
    std::copy_n(slice.row(rows_[s] - r0), shape.k, da.row(static_cast<std::int64_t>(s)));
  }
  ref_.assign(static_cast<std::size_t>(samples * shape.n), 0.0);
  const std::int64_t gb = row_group(recipe[roles.b].block);
  const std::int64_t groups = (shape.n + gb - 1) / gb;
  parallel_for(groups, std::max<std::int64_t>(1, 256 / gb), [&](std::int64_t g0, std::int64_t g1) {
    Engine local = reference_engine();
    const std::int64_t j0 = g0 * gb, j1 = std::min(g1 * gb, shape.n);
    const Matrix<float> db = dequantized_rows(local, recipe, roles.b, layouts.b, b, j0, j1 - j0);
    for (std::int64_t j = j0; j < j1; ++j) {
      const float* br = db.row(j - j0);
      // Four sampled rows at a time: four independent sums in flight, each over t in order.
      for (std::int64_t s0 = 0; s0 < samples; s0 += 4) {
        const std::int64_t ns = std::min<std::int64_t>(4, samples - s0);
        const float* ar[4];
        for (std::int64_t i = 0; i < 4; ++i) ar[i] = da.row(s0 + std::min(i, ns - 1));
        double acc[4] = {0.0, 0.0, 0.0, 0.0};
        for (std::int64_t t = 0; t < shape.k; ++t) {
          const double bt = br[t];
          for (int i = 0; i < 4; ++i) acc[i] += static_cast<double>(ar[i][t]) * bt;
        }
        for (std::int64_t i = 0; i < ns; ++i)
          ref_[static_cast<std::size_t>((s0 + i) * shape.n + j)] = acc[i];
      }
    }
  });
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

template <class RowAt>
std::vector<double> GemmReference::gather_f32(RowAt row_at) const {
  std::vector<double> got(ref_.size());
  for (std::size_t s = 0; s < rows_.size(); ++s) {
    const float* row = row_at(s);
    for (std::int64_t j = 0; j < shape_.n; ++j)
      got[s * static_cast<std::size_t>(shape_.n) + static_cast<std::size_t>(j)] = row[j];
  }
  return got;
}

template <class RowAt>
std::vector<double> GemmReference::gather_16(RowAt row_at, DType dtype) const {
  std::vector<double> got(ref_.size());
  for (std::size_t s = 0; s < rows_.size(); ++s) {
    const Matrix<float> row =
        to_matrix(TensorView{const_cast<std::uint16_t*>(row_at(s)), dtype, 1, shape_.n, 0});
    for (std::int64_t j = 0; j < shape_.n; ++j)
      got[s * static_cast<std::size_t>(shape_.n) + static_cast<std::size_t>(j)] =
          row.data[static_cast<std::size_t>(j)];
  }
  return got;
}

std::optional<std::string> GemmReference::check(const float* c, std::int64_t ldc,
                                                double tolerance) const {
  return compare(gather_f32([&](std::size_t s) { return c + rows_[s] * ldc; }), tolerance);
}

std::optional<std::string> GemmReference::check(const std::uint16_t* c, DType dtype,
                                                std::int64_t ldc, double tolerance) const {
  return compare(gather_16([&](std::size_t s) { return c + rows_[s] * ldc; }, dtype), tolerance);
}

std::optional<std::string> GemmReference::check_sampled(const float* rows, double tolerance) const {
  return compare(
      gather_f32([&](std::size_t s) { return rows + static_cast<std::int64_t>(s) * shape_.n; }),
      tolerance);
}

std::optional<std::string> GemmReference::check_sampled(const std::uint16_t* rows, DType dtype,
                                                        double tolerance) const {
  return compare(
      gather_16([&](std::size_t s) { return rows + static_cast<std::int64_t>(s) * shape_.n; },
                dtype),
      tolerance);
}

}  // namespace fp4jit::tuner
