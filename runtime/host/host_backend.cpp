// HostBackend: construction, kernel requests, dequantize and DGE. Quantize is in
// host_quantize.cpp, the GEMM in host_gemm.cpp.
#include "runtime/host/host_backend.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "codegen/host/dequantize_ir.hpp"
#include "codegen/host/quantize_ir.hpp"
#include "runtime/host/host_run.hpp"

namespace fp4jit::host {

HostConfig default_host_config(const HostTarget& target) {
  HostConfig c;
  c.vector_width = target.vector_bits >= 512 ? 16 : (target.vector_bits >= 256 ? 8 : 4);
  c.gemm_nr = 2 * c.vector_width;
  c.gemm_mr = target.vector_bits >= 512 ? 8 : 4;
  c.gemm_mc = c.gemm_mr * 16;
  return c;
}

HostBackend::HostBackend(const HostBackendOptions& options)
    : kernels_(std::make_unique<KernelRegistry>(options.cache_path)) {
  config_ = options.use_default_config ? default_host_config(kernels_->target()) : options.config;
  if (const char* env = std::getenv("FP4JIT_HOST_CONFIG"); env != nullptr && *env != '\0')
    config_ = parse_host_config(env, config_);
  config_.validate();
  pool_ = std::make_unique<ThreadPool>(config_.threads);
}

HostBackend::~HostBackend() = default;

std::string HostBackend::description() const {
  const HostTarget& t = kernels_->target();
  return fmt::format("host: {} ({}-bit vectors, {} threads), {}, ORC JIT; config {}", t.cpu,
                     t.vector_bits, pool_->size(), t.compiler, config_.text());
}

std::vector<void*> HostBackend::quantize_kernel(const Recipe& recipe, Role role, DType input) {
  QuantizeKernelSpec spec;
  spec.op = recipe[role];
  spec.role = role;
  spec.input = input;
  spec.ue5m3 = recipe.ue5m3;
  spec.config = config_;
  KernelRequest request;
  request.op = "quantize";
  request.key_text = fmt::format("op=quantize;operand={};role={};input={};mode=rowwise;config={}",
                                 canonical(recipe, role), name(role), name(input), config_.text());
  request.entries = {"stats", "scales", "encode", "fused"};
  request.emit = [spec](llvm::Module& m, const std::string& prefix) {
    emit_quantize(m, spec, prefix);
  };
  return kernels_->get(request);
}

void HostBackend::dequantize(const Recipe& recipe, Role role, const QuantizedView& in,
                             std::int64_t source_rows, std::int64_t source_cols,
                             const TensorView& out, void*) {
  std::lock_guard lock(mutex_);
  const QuantLayout l = quant_layout(recipe, role, source_rows, source_cols);
  DequantizeKernelSpec spec;
  spec.op = recipe[role];
  spec.output = out.dtype;
  spec.ue5m3 = recipe.ue5m3;
  spec.config = config_;
  KernelRequest request;
  request.op = "dequantize";
  request.key_text =
      fmt::format("op=dequantize;operand={};role={};output={};config={}", canonical(recipe, role),
                  name(role), name(out.dtype), config_.text());
  request.entries = {"dequantize"};
  request.emit = [spec](llvm::Module& m, const std::string& prefix) {
    emit_dequantize(m, spec, prefix);
  };
  const auto fn = reinterpret_cast<RangeKernel>(kernels_->get(request)[0]);
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
  QuantizeKernelSpec spec;
  spec.op = recipe[Role::w];
  spec.op.had = {};  // the DGE factor is taken of W itself
  spec.role = Role::w;
  spec.input = w.dtype;
  spec.output = out.dtype;
  spec.config = config_;
  spec.dge_k = recipe.dge_k;
  spec.dge_clip = recipe.dge_clip;
  KernelRequest request;
  request.op = "dge";
  request.key_text =
      fmt::format("op=dge;operand={};role=w;input={};output={};config={}",
                  canonical(recipe, Role::w), name(w.dtype), name(out.dtype), config_.text());
  request.entries = {"stats", "dge"};
  request.emit = [spec](llvm::Module& m, const std::string& prefix) { emit_dge(m, spec, prefix); };
  const std::vector<void*> fns = kernels_->get(request);
  QuantizeKernelArgs a;
  a.src = w.data;
  a.src_stride = w.row_stride == 0 ? w.cols : w.row_stride;
  a.rows = l.rows;
  a.cols = l.cols;
  a.codes = static_cast<std::uint8_t*>(out.data);
  a.row_bytes = out.row_stride == 0 ? out.cols : out.row_stride;
  a.scale_cols = l.scale_cols;
  StatsBuffers stats(*pool_, spec.op.block, l);
  std::uint32_t amax = 0;
  run_stats(*pool_, spec.band_rows(), l.rows, l.cols, a, reinterpret_cast<RangeKernel>(fns[0]),
            stats, amax);
  a.stats = stats.merged();
  ScratchBuffers scratch(*pool_, spec.band_rows(), l.cols);
  run_rows(*pool_, l.rows, spec.band_rows(), [&](std::int64_t r0, std::int64_t r1, int worker) {
    QuantizeKernelArgs mine = a;
    mine.scratch = scratch.get(worker);
    reinterpret_cast<RangeKernel>(fns[1])(&mine, r0, r1);
  });
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
