// Host kernels by key: from memory, else from the kernel cache (object code linked without
// compiling), else generated as IR and compiled (stored in the cache on the way).
//   FP4JIT_NO_COMPILE=1      a kernel missing from the cache is an error (proves a run was cached)
//   FP4JIT_PRINT_KERNELS=1   logs every kernel obtained (key, source: cache or compiled, time)
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cache/cache.hpp"
#include "runtime/host/jit.hpp"
#include "runtime/host/object_cache.hpp"

namespace fp4jit::host {

struct KernelRequest {
  std::string op;                    // "quantize", "dequantize", "dge", "gemm": names the symbols
  std::string key_text;              // everything that decides the IR except the target
  std::vector<std::string> entries;  // entry point suffixes, e.g. {"stats", "scales", "encode"}
  // Emits the module; its functions are named <prefix>_<entry>.
  std::function<void(llvm::Module&, const std::string& prefix)> emit;
};

struct KernelStats {
  std::int64_t memory_hits = 0, cache_hits = 0, compiled = 0;
};

class KernelRegistry {
 public:
  // cache_path empty: no persistent cache.
  explicit KernelRegistry(const std::string& cache_path);
  ~KernelRegistry();

  HostJit& jit() { return *jit_; }
  KernelCache* cache() { return cache_.get(); }  // null without a persistent cache
  const HostTarget& target() const { return jit_->target(); }
  KernelStats stats() const;

  // The entry points of the request's kernel, in the order of request.entries.
  std::vector<void*> get(const KernelRequest& request);
  // The hash naming a request's kernel (key text + target + compiler + options + generator).
  std::string key_hash(const KernelRequest& request) const;

 private:
  std::unique_ptr<HostJit> jit_;
  std::unique_ptr<KernelCache> cache_;
  std::unique_ptr<KernelObjectCache> object_cache_;
  bool no_compile_ = false;
  bool print_ = false;
  mutable std::mutex mutex_;
  std::map<std::string, std::vector<void*>> loaded_;
  KernelStats stats_;
};

// Hash of the IR generators' sources (codegen/host, templates/numerics), fixed at build time:
// a change to any of them names new kernels.
const std::string& generator_hash();

}  // namespace fp4jit::host
