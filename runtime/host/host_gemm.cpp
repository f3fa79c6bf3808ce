// HostBackend::gemm: decode both operands into packed panels, run the blocked FP32 kernel over
// tasks of C, then add the OCC compensation.
#include <algorithm>
#include <cstring>

#include "numerics/common.cuh"
#include "runtime/gemm_epilogue.hpp"
#include "runtime/host/host_backend.hpp"
#include "runtime/host/requests.hpp"

namespace fp4jit::host {

namespace {

float weight_at(const TensorView& w, std::int64_t r, std::int64_t c) {
  return tensor_value(w, r, c);
}

void check(const Recipe& recipe, const GemmOperand& a, const GemmOperand& b) {
  if (a.layout.cols != b.layout.cols)
    fail(ErrorKind::invalid_argument, "gemm: operand {} has K = {} but operand {} has K = {}",
         name(a.role), a.layout.cols, name(b.role), b.layout.cols);
  if (!(recipe[a.role].had == recipe[b.role].had))
    fail(ErrorKind::invalid_argument, "gemm: operands {} and {} use different Hadamard transforms",
         name(a.role), name(b.role));
  for (const GemmOperand* o : {&a, &b})
    if (o->view.codes == nullptr || o->view.scales == nullptr ||
        (o->layout.two_level && o->view.tensor_scale == nullptr))
      fail(ErrorKind::invalid_argument,
           "gemm: operand {}: codes, scales (and the tensor scale) are required", name(o->role));
}

}  // namespace

void HostBackend::gemm(const Recipe& recipe, const GemmOperand& a, const GemmOperand& b, float* c,
                       std::int64_t ldc, const GemmResidual* residual, const HostConfig* config) {
  std::lock_guard lock(mutex_);
  check(recipe, a, b);
  const HostConfig& cfg = config != nullptr ? *config : config_;
  const std::vector<void*> fns = kernels_->get(gemm_request(recipe, a.role, b.role, cfg));

  const std::int64_t m = a.layout.rows, n = b.layout.rows, k = a.layout.cols;
  const std::int64_t mr = cfg.gemm_mr, nr = cfg.gemm_nr;
  const std::int64_t a_panels = (m + mr - 1) / mr, b_panels = (n + nr - 1) / nr;
  std::vector<float> a_packed(static_cast<std::size_t>(a_panels * mr * k));
  std::vector<float> b_packed(static_cast<std::size_t>(b_panels * nr * k));
  GemmKernelArgs g;
  g.a_codes = a.view.codes;
  g.a_row_bytes = a.layout.row_bytes;
  g.a_scales = a.view.scales;
  g.a_scale_cols = a.layout.scale_cols;
  g.b_codes = b.view.codes;
  g.b_row_bytes = b.layout.row_bytes;
  g.b_scales = b.view.scales;
  g.b_scale_cols = b.layout.scale_cols;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a_packed = a_packed.data();
  g.b_packed = b_packed.data();
  g.c = c;
  g.ldc = ldc;
  const float inv_a = a.layout.two_level ? 1.0f / *a.view.tensor_scale : 1.0f;
  const float inv_b = b.layout.two_level ? 1.0f / *b.view.tensor_scale : 1.0f;
  g.alpha = inv_a * inv_b;
  const std::int64_t m_blocks = (m + cfg.gemm_mc - 1) / cfg.gemm_mc;
  g.nb_panels = cfg.gemm_np > 0
                    ? std::min<std::int64_t>(cfg.gemm_np, b_panels)
                    : std::clamp<std::int64_t>(b_panels * m_blocks / (4 * pool_->size()), 1, 16);
  const std::int64_t n_blocks = (b_panels + g.nb_panels - 1) / g.nb_panels;

  const auto pack_a = reinterpret_cast<RangeKernel>(fns[0]);
  const auto pack_b = reinterpret_cast<RangeKernel>(fns[1]);
  const auto compute = reinterpret_cast<RangeKernel>(fns[2]);
  pool_->run(a_panels, [&](std::int64_t p, int) { pack_a(&g, p, p + 1); });
  pool_->run(b_panels, [&](std::int64_t p, int) { pack_b(&g, p, p + 1); });
  pool_->run(m, [&](std::int64_t r, int) {
    std::memset(c + r * ldc, 0, static_cast<std::size_t>(n) * sizeof(float));
  });
  pool_->run(m_blocks * n_blocks, [&](std::int64_t t, int) { compute(&g, t, t + 1); });

  if (residual == nullptr || residual->of == nullptr || residual->of->residual_count == nullptr)
    return;
  const QuantizedView& r = *residual->of;
  const TensorView& w = residual->weight;
  if (w.data == nullptr || w.rows != n || w.cols != k)
    fail(ErrorKind::invalid_argument,
         "gemm: OCC compensation needs an [{}, {}] weight (got [{}, {}])", n, k, w.rows, w.cols);
  const std::int64_t count = *r.residual_count;
  // entries are sorted by row: each task takes the entries of whole rows
  std::vector<std::int64_t> row_start(static_cast<std::size_t>(m) + 1, 0);
  for (std::int64_t t = 0; t < count; ++t)
    ++row_start[static_cast<std::size_t>(r.residual_index[t] / k) + 1];
  for (std::int64_t i = 0; i < m; ++i)
    row_start[static_cast<std::size_t>(i) + 1] += row_start[static_cast<std::size_t>(i)];
  pool_->run(m, [&](std::int64_t i, int) {
    float* row = c + i * ldc;
    for (std::int64_t t = row_start[static_cast<std::size_t>(i)];
         t < row_start[static_cast<std::size_t>(i) + 1]; ++t) {
      const std::int64_t p = r.residual_index[t] % k;
      const double v = r.residual_value[t];
      for (std::int64_t j = 0; j < n; ++j)
        row[j] = static_cast<float>(row[j] + v * weight_at(w, j, p));
    }
  });
}

void HostBackend::gemm(const Recipe& recipe, GemmOp op, const QuantizedView& a,
                       const QuantizedView& b, const GemmShape& shape, const TensorView& out,
                       const GemmEpilogue& epilogue, void*) {
  const GemmLayouts l = gemm_layouts(recipe, op, shape);
  const GemmRoles roles = gemm_roles(op);
  const std::int64_t m = shape.m, n = shape.n;
  FloatBuffer acc(new float[static_cast<std::size_t>(m * n)]);
  const GemmResidual residual{&a, epilogue.occ_weight};
  const HostConfig cfg = gemm_config_for(recipe, op, shape);
  gemm(recipe, {roles.a, l.a, a}, {roles.b, l.b, b}, acc.get(), n,
       epilogue.occ_weight.data != nullptr ? &residual : nullptr, &cfg);
  std::lock_guard lock(mutex_);
  pool_->run(m, [&](std::int64_t r, int) {
    std::vector<double> row(acc.get() + r * n, acc.get() + (r + 1) * n);
    write_gemm_row(r, row.data(), epilogue, out);
  });
}

}  // namespace fp4jit::host
