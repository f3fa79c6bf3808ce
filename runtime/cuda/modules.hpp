// Loaded kernels of one CUDA context: each module is loaded once (from the cache or compiled)
// and kept until the registry goes, keyed by its kernel key text.
#pragma once
#include <cuda.h>

#include <mutex>
#include <string>
#include <unordered_map>

#include "cache/cache.hpp"
#include "codegen/kernel_source.hpp"
#include "runtime/cuda/driver.hpp"

namespace fp4jit::cuda {

// Makes a context current for a scope (push / pop) unless it already is (a framework's thread
// usually has the device's primary context current: then no push or pop); the destructor never
// throws.
class ContextGuard {
 public:
  ContextGuard(const Driver& d, CUcontext ctx) : d_(d) {
    CUcontext current = nullptr;
    if (d_.ctx_get_current(&current) == CUDA_SUCCESS && current == ctx) return;
    check(d_.ctx_push_current(ctx), "cuCtxPushCurrent");
    pushed_ = true;
  }
  ~ContextGuard() {
    if (!pushed_) return;
    CUcontext popped = nullptr;
    d_.ctx_pop_current(&popped);
  }
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;

 private:
  const Driver& d_;
  bool pushed_ = false;
};

// Launch attributes: clusters of `cluster` CTAs along x.
inline CUlaunchAttribute cluster_attribute(int cluster) {
  CUlaunchAttribute a{};
  a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  a.value.clusterDim.x = static_cast<unsigned>(cluster);
  a.value.clusterDim.y = a.value.clusterDim.z = 1;
  return a;
}
// Programmatic dependent launch: the kernel may start while the kernel before it on the stream
// finishes (once that one's CTAs have all started or triggered `griddepcontrol.launch_dependents`),
// and waits for it with `griddepcontrol.wait` before reading what it wrote
// (templates/gemm/sm90/swap.cuh).
inline CUlaunchAttribute dependent_attribute() {
  CUlaunchAttribute a{};
  a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  a.value.programmaticStreamSerializationAllowed = 1;
  return a;
}

// A launch of `grid` CTAs of `block` threads with `smem` bytes of dynamic shared memory each on
// `stream`, with `count` launch attributes at `attrs` (the caller's, alive while the config is
// used).
inline CUlaunchConfig launch_config(int grid, int block, int smem, CUstream stream,
                                    CUlaunchAttribute* attrs, unsigned count) {
  CUlaunchConfig config{};
  config.gridDimX = static_cast<unsigned>(grid);
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = static_cast<unsigned>(block);
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = static_cast<unsigned>(smem);
  config.hStream = stream;
  config.attrs = attrs;
  config.numAttrs = count;
  return config;
}

class ModuleRegistry {
 public:
  // `cache` may be null (no persistent cache); it must outlive the registry.
  ModuleRegistry(const Driver& d, CUcontext ctx, KernelCache* cache)
      : d_(d), ctx_(ctx), cache_(cache) {}
  ~ModuleRegistry();
  ModuleRegistry(const ModuleRegistry&) = delete;
  ModuleRegistry& operator=(const ModuleRegistry&) = delete;

  // The kernel's function in this context (the context must be current). Thread-safe.
  CUfunction function(const codegen::KernelSource& kernel);
  // How many CTAs of `block` threads and `smem` bytes of dynamic shared memory of the kernel fit
  // one SM at once (registers, shared memory), at least 1; asked of the driver once per kernel and
  // launch shape. Thread-safe.
  int blocks_per_sm(const codegen::KernelSource& kernel, int block, int smem = 0);
  // The kernel's function with its dynamic shared-memory limit raised to at least `bytes` (one
  // cuFuncSetAttribute per kernel and larger size). Thread-safe.
  CUfunction function_with_smem(const codegen::KernelSource& kernel, int bytes);
  // How many clusters of `cluster` CTAs (along x) of the kernel can be resident at once with
  // `block` threads and `smem` bytes of dynamic shared memory each, at least 1; asked of the driver
  // once per kernel and launch shape. Thread-safe.
  int max_active_clusters(const codegen::KernelSource& kernel, int block, int smem, int cluster);

  struct Counts {
    int compiled = 0, from_cache = 0;
    double compile_ms = 0.0, load_ms = 0.0;  // totals
  };
  Counts counts() const;

 private:
  struct Loaded {
    CUmodule module = nullptr;
    CUfunction function = nullptr;
    int occupancy_block = 0, occupancy_smem = 0, occupancy = 0;  // the last blocks_per_sm answer
    int smem_limit = 0;          // the dynamic shared memory allowed so far
    long long clusters_key = 0;  // the last max_active_clusters question
    int clusters = 0;            // and its answer
  };
  const Driver& d_;
  CUcontext ctx_;
  KernelCache* cache_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Loaded> loaded_;
  Counts counts_;
};

}  // namespace fp4jit::cuda
