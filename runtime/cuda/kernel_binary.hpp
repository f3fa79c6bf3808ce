// A kernel's binary, from the SQLite cache or compiled now: the one path every CUDA kernel takes
// to a cubin, used by the launch-time loader and by ahead-of-time compilation.
//   FP4JIT_DUMP=<dir>        writes the stub (.cu), PTX (.ptx, when compiled), the cubin (.cubin,
//                            for cuobjdump -sass) and the key, options and log (.txt) of each
//                            kernel
//   FP4JIT_NO_COMPILE=1      a kernel missing from the cache is an error (proves a run was cached)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cache/cache.hpp"
#include "codegen/kernel_source.hpp"

namespace fp4jit::cuda {

struct KernelBinary {
  std::string key_hash;
  std::vector<std::uint8_t> cubin;
  std::string symbol;  // lowered name
  bool from_cache = false;
  bool shared = false;      // compiled by another thread that asked for the same kernel at once
  double compile_ms = 0.0;  // NVRTC time when compiled now (by this caller or the one it shared)
  double lookup_ms = 0.0;   // cache lookup time
};

// The cache key of a kernel: make_key_hash over its key text, target, "nvrtc X.Y", options and
// the embedded templates' hash.
std::string kernel_key_hash(const codegen::KernelSource& kernel);

// From `cache` (may be null or disabled), else compiled (and stored into `cache`). A kernel is
// compiled once at a time in a process: callers asking for the same key and cache while it
// compiles wait and take its binary (`shared`).
KernelBinary kernel_binary(const codegen::KernelSource& kernel, KernelCache* cache);

// Compiles without looking at any cache (ahead-of-time compilation in parallel; cold timings).
KernelBinary compile_kernel(const codegen::KernelSource& kernel);
// Stores a compiled kernel; false (with a warning from the cache) when it could not.
bool store_kernel(KernelCache& cache, const codegen::KernelSource& kernel,
                  const KernelBinary& binary);

}  // namespace fp4jit::cuda
