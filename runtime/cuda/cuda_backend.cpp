#include "runtime/cuda/cuda_backend.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/log.hpp"
#include "core/quantized.hpp"
#include "runtime/cuda/nvrtc.hpp"

namespace fp4jit::cuda {

namespace {

int attribute(const Driver& d, CUdevice dev, CUdevice_attribute a) {
  int v = 0;
  check(d.device_get_attribute(&v, a, dev), "cuDeviceGetAttribute");
  return v;
}

void check_aligned(const void* p, std::size_t alignment, std::string_view what) {
  if (p != nullptr && reinterpret_cast<std::uintptr_t>(p) % alignment != 0)
    fail(ErrorKind::invalid_argument, "{} must be {}-byte aligned (got {})", what, alignment, p);
}

}  // namespace

CudaBackend::CudaBackend(const EngineOptions& options) : d_(require_driver()) {
  int count = 0;
  check(d_.device_get_count(&count), "cuDeviceGetCount");
  if (options.device < 0 || options.device >= count)
    fail(ErrorKind::invalid_argument, "CUDA device {} does not exist ({} device(s))",
         options.device, count);
  check(d_.device_get(&device_, options.device), "cuDeviceGet");
  check(d_.primary_ctx_retain(&ctx_, device_), "cuDevicePrimaryCtxRetain");
  const int major = attribute(d_, device_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  const int minor = attribute(d_, device_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info_.target = codegen::target_for(major, minor);
  info_.sm_count = attribute(d_, device_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  if (options.use_cache)
    cache_ = std::make_unique<KernelCache>(options.cache_path.empty() ? KernelCache::default_path()
                                                                      : options.cache_path);
  modules_ = std::make_unique<ModuleRegistry>(d_, ctx_, cache_.get());
  {
    ContextGuard guard(d_, ctx_);
    workspace_ = std::make_unique<WorkspacePool>(d_, device_);
  }
  char name[256] = {};
  check(d_.device_get_name(name, sizeof name, device_), "cuDeviceGetName");
  const Nvrtc& nvrtc = Nvrtc::get();
  const DeviceIdentity id{name, info_.target, info_.sm_count,
                          fmt::format("{}.{}", d_.version / 1000, (d_.version % 1000) / 10),
                          nvrtc.compiler()};
  if (cache_) cache_->use_bundles(id);
  tuned_ = std::make_unique<TunedConfigs>(cache_.get(), id);
  description_ =
      fmt::format("cuda: {} ({}, {} SMs), {}, driver {}.{}, cache {}", name, info_.target,
                  info_.sm_count, nvrtc.compiler(), d_.version / 1000, (d_.version % 1000) / 10,
                  cache_ && cache_->enabled() ? cache_->path() : std::string("off"));
}

CudaBackend::~CudaBackend() {
  if (workspace_) {
    ContextGuard guard(d_, ctx_);
    workspace_.reset();
  }
  modules_.reset();
  if (ctx_ != nullptr) d_.primary_ctx_release(device_);
}

void CudaBackend::check_device_pointer(const void* p, std::string_view what, void* stream) const {
  if (p == nullptr) return;
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  {
    std::lock_guard lock(ranges_mutex_);
    for (std::size_t i = 0; i < addressable_.size(); ++i) {
      if (at >= addressable_[i].start && at < addressable_[i].end) {
        if (i > 0) std::swap(addressable_[i], addressable_[i - 1]);  // keep the busy ones first
        return;
      }
    }
  }
  if (workspace_ && workspace_->holds(at)) return;  // the backend's own scratch
  unsigned type = 0;
  CUdeviceptr start = 0;
  std::size_t size = 0;
  CUpointer_attribute attributes[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                       CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                       CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void* data[3] = {&type, &start, &size};
  const auto dp = static_cast<CUdeviceptr>(at);
  if (d_.pointer_get_attributes(3, attributes, data, dp) != CUDA_SUCCESS || type == 0) {
    // Some memory (host-registered, older drivers) reports no range: ask for the type alone.
    if (d_.pointer_get_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dp) != CUDA_SUCCESS) {
      // Memory a CUDA graph allocates while the stream is captured (a framework's stream-ordered
      // allocator, e.g. PyTorch's cudaMallocAsync backend) is mapped only when the graph runs, and
      // the driver cannot describe it yet: during a capture such a pointer is taken unchecked.
      CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
      if (d_.stream_is_capturing(static_cast<CUstream>(stream), &capture) == CUDA_SUCCESS &&
          capture == CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return;
      fail(ErrorKind::invalid_argument,
           "{} ({}) is not memory the GPU can address (the CUDA backend takes device pointers)",
           what, p);
    }
    return;  // addressable, range unknown: not remembered
  }
  const auto first = static_cast<std::uintptr_t>(start);
  if (size == 0 || at < first || at - first >= size) return;
  std::lock_guard lock(ranges_mutex_);
  if (addressable_.size() == kRanges) addressable_.pop_back();
  addressable_.insert(addressable_.begin(), Range{first, first + size});
}

template <class MakePlan>
void CudaBackend::run(void* stream, MakePlan make_plan) {
  ContextGuard guard(d_, ctx_);
  const auto s = static_cast<CUstream>(stream);
  // Planned once to count the scratch bytes, again with the scratch's addresses; a plan that took
  // no scratch holds no counting address and is used as it is.
  Arena counting;
  Plan plan = make_plan(counting);
  const Workspace scratch(*workspace_, s, counting.used());
  if (counting.used() > 0) {
    Arena arena(scratch.base());
    plan = make_plan(arena);
  }
  for (const Step& step : plan) {
    if (const Memset* m = std::get_if<Memset>(&step)) {
      check(d_.memset_d32_async(static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(m->ptr)),
                                m->value, static_cast<std::size_t>(m->words), s),
            "cuMemsetD32Async");
      continue;
    }
    const Launch& l = std::get<Launch>(step);
    CUfunction fn = modules_->function_with_smem(l.kernel, l.smem);
    std::uint32_t grid = l.grid;
    if (l.persistent) {
      const auto fit = static_cast<std::int64_t>(info_.sm_count) *
                       modules_->blocks_per_sm(l.kernel, static_cast<int>(l.block), l.smem);
      grid = static_cast<std::uint32_t>(std::min<std::int64_t>(grid, fit));
    }
    void* params[] = {const_cast<std::uint8_t*>(l.args.data())};
    check(d_.launch_kernel(fn, grid, 1, 1, l.block, 1, 1, static_cast<unsigned>(l.smem), s, params,
                           nullptr),
          "cuLaunchKernel");
  }
  last_bytes_ = plan_bytes(plan);
}

std::shared_ptr<void> CudaBackend::scratch(std::int64_t bytes, void* stream) {
  ContextGuard guard(d_, ctx_);
  const auto s = static_cast<CUstream>(stream);
  const CUdeviceptr p =
      workspace_->allocate(static_cast<std::size_t>(std::max<std::int64_t>(bytes, 1)), s);
  const auto release = [this, s](void* q) noexcept {
    try {
      ContextGuard release_guard(d_, ctx_);
      workspace_->free(static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(q)), s);
    } catch (...) {  // the context is gone: so is the pool's memory
    }
  };
  // (Should the handle's own allocation fail, the shared_ptr releases p before it throws.)
  return std::shared_ptr<void>(reinterpret_cast<void*>(static_cast<std::uintptr_t>(p)), release);
}

void CudaBackend::quantize(const Recipe& recipe, Role role, const TensorView& in,
                           const QuantizedView& out, const QuantizeArgs& args, void* stream) {
  check_device_pointer(in.data, "quantize input", stream);
  check_device_pointer(out.codes, "quantize output codes", stream);
  check_device_pointer(args.seed_step, "seed_step", stream);
  check_aligned(out.codes, 8, "quantize output codes");
  check_aligned(out.scales, 4, "quantize output scales");
  if (args.column_sums != nullptr)
    check_device_pointer(args.column_sums, "column sums output", stream);
  const std::optional<QuantizeTuning> tuned = tuned_quantize(recipe, role, in);
  quantize_with(tuned ? &*tuned : nullptr, recipe, role, in, out, args, stream);
}

std::optional<QuantizeTuning> CudaBackend::tuned_quantize(const Recipe& recipe, Role role,
                                                          const TensorView& in, bool pair) {
  const TuningKey key =
      quantize_tuning_key(identity(), recipe, role, in.rows, in.cols, in.dtype, pair);
  const std::optional<std::string> winner = tuned_->winner(key);
  if (!winner) return std::nullopt;
  try {
    return parse_quantize_tuning(*winner);
  } catch (const Error& e) {
    warn("tuned quantize config '{}' for {} is not usable ({}); using the heuristic", *winner,
         key.problem, e.what());
    return std::nullopt;
  }
}

void CudaBackend::quantize_with(const QuantizeTuning* config, const Recipe& recipe, Role role,
                                const TensorView& in, const QuantizedView& out,
                                const QuantizeArgs& args, void* stream) {
  quantize_planned(config, recipe, role, in, out, nullptr, args, stream);
}

void CudaBackend::quantize_planned(const QuantizeTuning* config, const Recipe& recipe, Role role,
                                   const TensorView& in, const QuantizedView& out,
                                   const QuantizedView* out_t, const QuantizeArgs& args,
                                   void* stream) {
  DeviceInfo info = info_;
  if (config != nullptr) {
    info.rows_config = config->rows ? &*config->rows : nullptr;
    info.tile_config = config->tile ? &*config->tile : nullptr;
  }
  run(stream, [&](Arena& a) { return plan_quantize(recipe, role, in, out, out_t, args, info, a); });
}

void CudaBackend::quantize_pair(const Recipe& recipe, Role role, const TensorView& in,
                                const QuantizedView& out, const QuantizedView& out_t,
                                const QuantizeArgs& args, void* stream) {
  check_device_pointer(in.data, "quantize input", stream);
  check_device_pointer(out.codes, "quantize output codes", stream);
  check_device_pointer(out_t.codes, "quantize transposed output codes", stream);
  check_device_pointer(args.seed_step, "seed_step", stream);
  for (const QuantizedView* q : {&out, &out_t}) {
    check_aligned(q->codes, 8, "quantize output codes");
    check_aligned(q->scales, 4, "quantize output scales");
  }
  if (args.column_sums != nullptr)
    check_device_pointer(args.column_sums, "column sums output", stream);
  const std::optional<QuantizeTuning> tuned = tuned_quantize(recipe, role, in, true);
  quantize_pair_with(tuned ? &*tuned : nullptr, recipe, role, in, out, out_t, args, stream);
}

void CudaBackend::quantize_pair_with(const QuantizeTuning* config, const Recipe& recipe, Role role,
                                     const TensorView& in, const QuantizedView& out,
                                     const QuantizedView& out_t, const QuantizeArgs& args,
                                     void* stream) {
  quantize_planned(config, recipe, role, in, out, &out_t, args, stream);
}

void CudaBackend::dequantize(const Recipe& recipe, Role role, const QuantizedView& in,
                             std::int64_t source_rows, std::int64_t source_cols,
                             const TensorView& out, void* stream) {
  check_device_pointer(in.codes, "dequantize input codes", stream);
  check_device_pointer(out.data, "dequantize output", stream);
  run(stream, [&](Arena& a) {
    return plan_dequantize(recipe, role, in, source_rows, source_cols, out, info_, a);
  });
}

void CudaBackend::dge(const Recipe& recipe, const TensorView& w, const TensorView& out,
                      void* stream) {
  check_device_pointer(w.data, "dge input", stream);
  check_device_pointer(out.data, "dge output", stream);
  run(stream, [&](Arena& a) { return plan_dge(recipe, w, out, info_, a); });
}

}  // namespace fp4jit::cuda

namespace fp4jit {

std::unique_ptr<Backend> make_cuda_backend(const EngineOptions& options) {
  return std::make_unique<cuda::CudaBackend>(options);
}

}  // namespace fp4jit
