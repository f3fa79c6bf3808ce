#include "runtime/cuda/modules.hpp"

#include "core/log.hpp"

#include <chrono>

#include "runtime/cuda/kernel_binary.hpp"

namespace fp4jit::cuda {

ModuleRegistry::~ModuleRegistry() {
  if (loaded_.empty()) return;
  if (d_.ctx_push_current(ctx_) != CUDA_SUCCESS) return;
  for (auto& [key, l] : loaded_) d_.module_unload(l.module);
  CUcontext popped = nullptr;
  d_.ctx_pop_current(&popped);
}

CUfunction ModuleRegistry::function(const codegen::KernelSource& kernel) {
  std::lock_guard lock(mutex_);
  if (auto it = loaded_.find(kernel.key_text); it != loaded_.end()) return it->second.function;
  const auto start = std::chrono::steady_clock::now();
  const KernelBinary b = kernel_binary(kernel, cache_);
  const RelaxedCapture relaxed(d_);
  Loaded l;
  check(d_.module_load_data(&l.module, b.cubin.data()), "cuModuleLoadData");
  const CUresult r = d_.module_get_function(&l.function, l.module, b.symbol.c_str());
  if (r != CUDA_SUCCESS) {
    d_.module_unload(l.module);
    check(r, "cuModuleGetFunction");
  }
  loaded_.emplace(kernel.key_text, l);
  if (b.from_cache)
    ++counts_.from_cache;
  else
    ++counts_.compiled, counts_.compile_ms += b.compile_ms;
  counts_.load_ms +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return l.function;
}

int ModuleRegistry::blocks_per_sm(const codegen::KernelSource& kernel, int block, int smem) {
  const CUfunction fn = function_with_smem(kernel, smem);
  std::lock_guard lock(mutex_);
  Loaded& l = loaded_.at(kernel.key_text);
  if (l.occupancy_block != block || l.occupancy_smem != smem) {
    const RelaxedCapture relaxed(d_);
    int n = 0;
    check(d_.occupancy_max_active_blocks(&n, fn, block, static_cast<std::size_t>(smem)),
          "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    l.occupancy_block = block;
    l.occupancy_smem = smem;
    l.occupancy = n < 1 ? 1 : n;
  }
  return l.occupancy;
}

CUfunction ModuleRegistry::function_with_smem(const codegen::KernelSource& kernel, int bytes) {
  const CUfunction fn = function(kernel);
  std::lock_guard lock(mutex_);
  Loaded& l = loaded_.at(kernel.key_text);
  if (bytes > l.smem_limit) {
    const RelaxedCapture relaxed(d_);
    check(d_.func_set_attribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
          "cuFuncSetAttribute (dynamic shared memory)");
    l.smem_limit = bytes;
  }
  return fn;
}

int ModuleRegistry::max_active_clusters(const codegen::KernelSource& kernel, int block, int smem,
                                        int cluster) {
  const CUfunction fn = function_with_smem(kernel, smem);
  std::lock_guard lock(mutex_);
  Loaded& l = loaded_.at(kernel.key_text);
  const long long key = (static_cast<long long>(block) << 40) |
                        (static_cast<long long>(cluster) << 32) | static_cast<unsigned>(smem);
  if (l.clusters_key != key) {
    const RelaxedCapture relaxed(d_);
    CUlaunchAttribute attr = cluster_attribute(cluster);
    const CUlaunchConfig config = launch_config(cluster, block, smem, nullptr, &attr, 1);
    int n = 0;
    check(d_.occupancy_max_active_clusters(&n, fn, &config), "cuOccupancyMaxActiveClusters");
    l.clusters_key = key;
    l.clusters = n < 1 ? 1 : n;
    debug("{}: {} clusters of {} CTAs resident at once", kernel.key_text, l.clusters, cluster);
  }
  return l.clusters;
}

ModuleRegistry::Counts ModuleRegistry::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

}  // namespace fp4jit::cuda
