// HostBackend: construction, kernel requests, dequantize and DGE. Quantize is in
// host_quantize.cpp, the GEMM in host_gemm.cpp.
#include "runtime/host/host_backend.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "core/log.hpp"

#include "codegen/host/quantize_ir.hpp"
#include "runtime/host/host_run.hpp"
#include "runtime/host/requests.hpp"

namespace fp4jit::host {

HostConfig default_host_config(const HostTarget& target) {
  HostConfig c;
  c.vector_width = target.vector_bits >= 512 ? 16 : (target.vector_bits >= 256 ? 8 : 4);
  c.gemm_nr = 2 * c.vector_width;
  c.gemm_mr = target.vector_bits >= 512 ? 8 : 4;
  c.gemm_mc = c.gemm_mr * 16;
  return c;
}

DeviceIdentity host_identity(const HostTarget& target, int threads) {
  return DeviceIdentity{target.cpu, target.name, threads, "", target.compiler};
}

HostBackend::HostBackend(const HostBackendOptions& options)
    : kernels_(std::make_unique<KernelRegistry>(options.cache_path)) {
  config_ = options.use_default_config ? default_host_config(kernels_->target()) : options.config;
  if (const char* env = std::getenv("FP4JIT_HOST_CONFIG"); env != nullptr && *env != '\0')
    config_ = parse_host_config(env, config_);
  config_.validate();
  pool_ = std::make_unique<ThreadPool>(config_.threads);
  const DeviceIdentity id = host_identity(kernels_->target(), pool_->size());
  if (KernelCache* cache = kernels_->cache()) cache->use_bundles(id);
  tuned_ = std::make_unique<TunedConfigs>(kernels_->cache(), id);
}

namespace {

// The winner's text over `base`; a result that no longer parses is ignored with a warning.
// *tuned (may be null): whether the winner was taken.
HostConfig apply_tuned(const std::optional<std::string>& winner, const HostConfig& base,
                       const TuningKey& key, bool* tuned = nullptr) {
  if (tuned != nullptr) *tuned = false;
  if (!winner) return base;
  try {
    HostConfig c = parse_host_config(*winner, base);
    if (tuned != nullptr) *tuned = true;
    return c;
  } catch (const Error& e) {
    warn("tuned config '{}' for {} is not usable ({}); using the default", *winner, key.problem,
         e.what());
    return base;
  }
}

}  // namespace

HostConfig HostBackend::gemm_config_for(const Recipe& recipe, GemmOp op, const GemmShape& shape,
                                        bool* tuned) {
  const TuningKey key = gemm_tuning_key(identity(), recipe, op, shape, "");
  return apply_tuned(tuned_->winner(key), config_, key, tuned);
}

std::string HostBackend::gemm_kernel(const Recipe& recipe, GemmOp op, const GemmShape& shape,
                                     DType /*out*/) {
  bool tuned = false;
  const HostConfig c = gemm_config_for(recipe, op, shape, &tuned);
  return fmt::format("{} ({})", c.gemm_tuned_text(), tuned ? "tuned" : "default");
}

HostConfig HostBackend::quantize_config_for(const Recipe& recipe, Role role, const TensorView& in) {
  const TuningKey key = quantize_tuning_key(identity(), recipe, role, in.rows, in.cols, in.dtype);
  return apply_tuned(tuned_->winner(key), config_, key);
}

HostBackend::~HostBackend() = default;

std::string HostBackend::description() const {
  const HostTarget& t = kernels_->target();
  return fmt::format("host: {} ({}-bit vectors, {} threads), {}, ORC JIT; config {}", t.cpu,
                     t.vector_bits, pool_->size(), t.compiler, config_.text());
}

std::vector<void*> HostBackend::quantize_kernel(const Recipe& recipe, Role role, DType input) {
  return kernels_->get(quantize_request(recipe, role, input, config_));
}

void HostBackend::dequantize(const Recipe& recipe, Role role, const QuantizedView& in,
                             std::int64_t source_rows, std::int64_t source_cols,
                             const TensorView& out, void*) {
  std::lock_guard lock(mutex_);
  const QuantLayout l = quant_layout(recipe, role, source_rows, source_cols);
  const auto fn = reinterpret_cast<RangeKernel>(
      kernels_->get(dequantize_request(recipe, role, out.dtype, config_))[0]);
  DequantizeKernelArgs a;
  a.codes = in.codes;
  a.row_bytes = l.row_bytes;
  a.scales = in.scales;
  a.scale_cols = l.scale_cols;
  a.rows = l.rows;
  a.cols = l.cols;
  a.out = out.data;
  a.out_stride = out.row_stride == 0 ? out.cols : out.row_stride;
  a.s_enc = l.two_level ? *in.tensor_scale : 1.0f;
  run_rows(*pool_, l.rows, 1, [&](std::int64_t r0, std::int64_t r1, int) { fn(&a, r0, r1); });
}

void HostBackend::dge(const Recipe& recipe, const TensorView& w, const TensorView& out, void*) {
  std::lock_guard lock(mutex_);
  const QuantLayout l = quant_layout(recipe, Role::w, w.rows, w.cols);
  const int band = QuantizeKernelSpec{.op = recipe[Role::w], .config = config_}.band_rows();
  const std::vector<void*> fns = kernels_->get(dge_request(recipe, w.dtype, out.dtype, config_));
  QuantizeKernelArgs a;
  a.src = w.data;
  a.src_stride = w.row_stride == 0 ? w.cols : w.row_stride;
  a.rows = l.rows;
  a.cols = l.cols;
  a.codes = static_cast<std::uint8_t*>(out.data);
  a.row_bytes = out.row_stride == 0 ? out.cols : out.row_stride;
  a.scale_cols = l.scale_cols;
  StatsBuffers stats(*pool_, recipe[Role::w].block, l);
  std::uint32_t amax = 0;
  run_stats(*pool_, band, l.rows, l.cols, a, reinterpret_cast<RangeKernel>(fns[0]), stats, amax);
  a.stats = stats.merged();
  ScratchBuffers scratch(*pool_, band, l.cols);
  run_rows(*pool_, l.rows, band, [&](std::int64_t r0, std::int64_t r1, int worker) {
    QuantizeKernelArgs mine = a;
    mine.scratch = scratch.get(worker);
    reinterpret_cast<RangeKernel>(fns[1])(&mine, r0, r1);
  });
}

int HostBackend::precompile(const Recipe& recipe, std::span<const DType> dtypes) {
  std::lock_guard lock(mutex_);
  std::vector<KernelRequest> requests;
  for (DType d : dtypes) {
    for (Role role : kAllRoles) {
      requests.push_back(quantize_request(recipe, role, quantize_input(recipe, role, d), config_));
      requests.push_back(dequantize_request(recipe, role, d, config_));
      if (recipe[role].occ)
        requests.push_back(
            occ_request(recipe[role].src == Source::requant ? DType::f32 : d, config_));
      if (recipe[role].src == Source::requant) {
        const Role forward = role_info(role).forward;
        requests.push_back(
            quantize_request(recipe, forward, quantize_input(recipe, forward, d), config_));
        requests.push_back(dequantize_request(recipe, forward, DType::f32, config_));
      }
    }
    if (recipe[Role::w].dge) requests.push_back(dge_request(recipe, d, d, config_));
  }
  for (Role role : {Role::x, Role::dy, Role::dyt})
    requests.push_back(gemm_request(recipe, role, role_info(role).partner, config_));
  const std::int64_t before = kernels_->stats().compiled;
  for (const KernelRequest& r : requests) kernels_->get(r);
  return static_cast<int>(kernels_->stats().compiled - before);
}

}  // namespace fp4jit::host

namespace fp4jit {

std::unique_ptr<Backend> make_host_backend(const EngineOptions& options) {
  host::HostBackendOptions o;
  if (options.use_cache)
    o.cache_path = options.cache_path.empty() ? KernelCache::default_path() : options.cache_path;
  return std::make_unique<host::HostBackend>(o);
}

}  // namespace fp4jit
