// HostBackend::quantize: source preparation (double quantization through the generated quantize
// and dequantize kernels; OCC: quantiles in C++, clamp and residual by the generated OCC kernels),
// then the generated stats -> scales -> encode kernels.
#include <algorithm>
#include <cstring>
#include <utility>

#include "codegen/host/quantize_ir.hpp"
#include "numerics/common.cuh"
#include "numerics/scale.cuh"
#include "runtime/host/host_backend.hpp"
#include "runtime/host/host_run.hpp"
#include "runtime/host/occ.hpp"
#include "runtime/host/requests.hpp"

namespace fp4jit::host {

namespace {

std::int64_t stride_of(const TensorView& v) {
  return v.row_stride == 0 ? v.cols : v.row_stride;
}

// Buffers for a whole quantized operand, owned here.
struct OwnedQuantized {
  std::vector<std::uint8_t> codes;
  std::vector<float> scales;  // large enough for float scales; byte codes use its storage
  float tensor_scale = 1.0f, amax = 0.0f;
  std::vector<std::int64_t> residual_index;
  std::vector<float> residual_value;
  std::int64_t residual_count = 0;
  QuantizedView view;

  OwnedQuantized(const QuantLayout& l, bool occ)
      : codes(static_cast<std::size_t>(l.code_bytes())),
        scales(static_cast<std::size_t>(l.scale_count())),
        residual_index(occ ? static_cast<std::size_t>(l.rows * l.cols) : 0),
        residual_value(occ ? static_cast<std::size_t>(l.rows * l.cols) : 0) {
    view.codes = codes.data();
    view.scales = scales.data();
    view.tensor_scale = &tensor_scale;
    view.amax = &amax;
    view.residual_index = residual_index.data();
    view.residual_value = residual_value.data();
    view.residual_count = &residual_count;
    view.residual_capacity = static_cast<std::int64_t>(residual_index.size());
  }
};

void store_residual(const OccResidual& r, const QuantizedView& out) {
  const auto count = static_cast<std::int64_t>(r.index.size());
  if (out.residual_count != nullptr) *out.residual_count = count;
  if (count == 0) return;
  if (count > out.residual_capacity || out.residual_index == nullptr ||
      out.residual_value == nullptr)
    fail(ErrorKind::invalid_argument, "OCC residual has {} entries but the output holds {}", count,
         out.residual_capacity);
  std::memcpy(out.residual_index, r.index.data(),
              static_cast<std::size_t>(count) * sizeof(std::int64_t));
  std::memcpy(out.residual_value, r.value.data(), static_cast<std::size_t>(count) * sizeof(float));
}

}  // namespace

FloatBuffer HostBackend::requant_source(const Recipe& recipe, Role role, const TensorView& in,
                                        const QuantizeArgs& args) {
  const Role forward = role_info(role).forward;
  if (recipe[forward].had.size != 0)
    fail(ErrorKind::unsupported,
         "host backend: operand {} re-quantizes operand {}, which has a Hadamard transform",
         name(role), name(forward));
  const QuantLayout fl = quant_layout(recipe, forward, in.rows, in.cols);
  OwnedQuantized fq(fl, recipe[forward].occ);
  quantize(recipe, forward, in, fq.view, args, nullptr);
  FloatBuffer source =
      std::make_unique_for_overwrite<float[]>(static_cast<std::size_t>(in.rows * in.cols));
  const TensorView out{source.get(), DType::f32, in.rows, in.cols, 0};
  dequantize(recipe, forward, fq.view, in.rows, in.cols, out, nullptr);  // exact in float
  return source;
}

FloatBuffer HostBackend::occ_clamp(const Recipe& recipe, const TensorView& in,
                                   OccResidual& residual) {
  std::vector<float> lo, hi;
  occ_quantiles(in, recipe.occ_alpha, *pool_, lo, hi);
  const std::vector<void*> fns = kernels_->get(occ_request(in.dtype, config_));
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(in.rows));
  FloatBuffer clamped =
      std::make_unique_for_overwrite<float[]>(static_cast<std::size_t>(in.rows * in.cols));
  OccKernelArgs a;
  a.src = in.data;
  a.src_stride = stride_of(in);
  a.cols = in.cols;
  a.lo = lo.data();
  a.hi = hi.data();
  a.offset = offsets.data();
  a.out = clamped.get();
  const auto count = reinterpret_cast<RangeKernel>(fns[0]);
  const auto apply = reinterpret_cast<RangeKernel>(fns[1]);
  run_rows(*pool_, in.rows, 1, [&](std::int64_t r0, std::int64_t r1, int) { count(&a, r0, r1); });
  std::int64_t total = 0;
  for (std::int64_t& o : offsets) total += std::exchange(o, total);  // counts -> offsets
  residual.index.resize(static_cast<std::size_t>(total));
  residual.value.resize(static_cast<std::size_t>(total));
  a.residual_index = residual.index.data();
  a.residual_value = residual.value.data();
  run_rows(*pool_, in.rows, 1, [&](std::int64_t r0, std::int64_t r1, int) { apply(&a, r0, r1); });
  return clamped;
}

void HostBackend::quantize(const Recipe& recipe, Role role, const TensorView& in,
                           const QuantizedView& out, const QuantizeArgs& args, void*) {
  std::lock_guard lock(mutex_);
  quantize_with(quantize_config_for(recipe, role, in), recipe, role, in, out, args);
}

void HostBackend::quantize_with(const HostConfig& config, const Recipe& recipe, Role role,
                                const TensorView& in, const QuantizedView& out,
                                const QuantizeArgs& args) {
  std::lock_guard lock(mutex_);
  config.validate();
  // The call's config replaces the backend's for its duration (the mutex is held throughout;
  // nested quantizes of double quantization use it too). The pool keeps its threads.
  struct Restore {
    HostConfig& slot;
    HostConfig saved;
    ~Restore() { slot = saved; }
  } restore{config_, config_};
  config_ = config;
  config_.threads = restore.saved.threads;
  quantize_locked(recipe, role, in, out, args);
}

void HostBackend::quantize_locked(const Recipe& recipe, Role role, const TensorView& in,
                                  const QuantizedView& out, const QuantizeArgs& args) {
  const OperandSpec& s = recipe[role];
  FloatBuffer staged;
  if (s.src == Source::requant) staged = requant_source(recipe, role, in, args);
  OccResidual residual;
  if (s.occ) {
    const TensorView occ_in =
        !staged ? in : TensorView{staged.get(), DType::f32, in.rows, in.cols, 0};
    staged = occ_clamp(recipe, occ_in, residual);
    if (role_info(role).transposed) residual = transpose_residual(residual, in.rows, in.cols);
  }
  const TensorView src = !staged ? in : TensorView{staged.get(), DType::f32, in.rows, in.cols, 0};
  quantize_operand(recipe, role, src, out, args);
  store_residual(residual, out);
}

void HostBackend::quantize_operand(const Recipe& recipe, Role role, const TensorView& src,
                                   const QuantizedView& out, const QuantizeArgs& args) {
  const OperandSpec& s = recipe[role];
  const QuantLayout l = quant_layout(recipe, role, src.rows, src.cols);
  const std::vector<void*> fns = quantize_kernel(recipe, role, src.dtype);
  QuantizeKernelSpec shape;
  shape.op = s;
  shape.config = config_;
  const int band = shape.band_rows();

  std::vector<float> factors(static_cast<std::size_t>(l.scale_count()));
  QuantizeKernelArgs a;
  a.src = src.data;
  a.src_stride = stride_of(src);
  a.rows = l.rows;
  a.cols = l.cols;
  a.codes = out.codes;
  a.row_bytes = l.row_bytes;
  a.scales = out.scales;
  a.factors = factors.data();
  a.scale_cols = l.scale_cols;
  a.seed = args.seed;
  a.offset = args.offset;

  StatsBuffers stats(*pool_, s.block, l);
  ScratchBuffers scratch(*pool_, band, l.cols);
  float amax = 0.0f;
  if (shape.uses_fused()) {  // one pass: stats, scales and codes band by band
    std::vector<std::uint32_t> amax_bits(static_cast<std::size_t>(pool_->size()), 0u);
    a.stats = stats.get(0);
    run_rows(*pool_, l.rows, band, [&](std::int64_t r0, std::int64_t r1, int worker) {
      QuantizeKernelArgs mine = a;
      mine.scratch = scratch.get(worker);
      mine.amax_bits = &amax_bits[static_cast<std::size_t>(worker)];
      reinterpret_cast<RangeKernel>(fns[3])(&mine, r0, r1);
    });
    amax = nx::bits_float(*std::max_element(amax_bits.begin(), amax_bits.end()));
  } else {
    std::uint32_t amax_bits = 0;
    run_stats(*pool_, band, l.rows, l.cols, a, reinterpret_cast<RangeKernel>(fns[0]), stats,
              amax_bits);
    a.stats = stats.merged();
    amax = nx::bits_float(amax_bits);
    if (l.two_level)
      a.s_enc = nx::two_level_tensor_scale(amax, scale_format_max(s.scale, recipe.ue5m3),
                                           elem_max(s.elem));
    const std::int64_t per_task =
        std::max<std::int64_t>(4096, l.scale_count() / (4 * pool_->size()));
    pool_->run((l.scale_count() + per_task - 1) / per_task, [&](std::int64_t t, int) {
      reinterpret_cast<RangeKernel>(fns[1])(&a, t * per_task,
                                            std::min(l.scale_count(), (t + 1) * per_task));
    });
    run_rows(*pool_, l.rows, band, [&](std::int64_t r0, std::int64_t r1, int worker) {
      QuantizeKernelArgs mine = a;
      mine.scratch = scratch.get(worker);
      reinterpret_cast<RangeKernel>(fns[2])(&mine, r0, r1);
    });
  }
  if (out.tensor_scale != nullptr) *out.tensor_scale = a.s_enc;
  if (out.amax != nullptr) *out.amax = amax;
  if (out.residual_count != nullptr) *out.residual_count = 0;
}

}  // namespace fp4jit::host
