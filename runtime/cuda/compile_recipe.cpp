#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <set>
#include <thread>

#include "runtime/compile.hpp"
#include "runtime/cuda/gemm_plan.hpp"
#include "runtime/cuda/kernel_binary.hpp"
#include "runtime/cuda/nvrtc.hpp"
#include "runtime/cuda/plan.hpp"

namespace fp4jit {

std::vector<CompiledKernelInfo> compile_recipe(const Recipe& recipe, const std::string& target,
                                               KernelCache* cache, std::span<const DType> dtypes,
                                               int jobs) {
  codegen::check_target(target);
  cuda::Nvrtc::get();  // fails early, naming what was tried, when NVRTC is missing
  return compile_sources(cuda::recipe_kernels(recipe, target, dtypes), cache, jobs);
}

std::vector<CompiledKernelInfo> compile_sources(const std::vector<codegen::KernelSource>& kernels,
                                                KernelCache* cache, int jobs) {
  cuda::Nvrtc::get();
  std::vector<CompiledKernelInfo> out(kernels.size());
  std::vector<cuda::KernelBinary> binaries(kernels.size());
  std::vector<char> todo(kernels.size(), 0);
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    out[i].op = kernels[i].op;
    out[i].key_text = kernels[i].key_text;
    out[i].key_hash = cuda::kernel_key_hash(kernels[i]);
    if (cache != nullptr && cache->enabled() && cache->get(out[i].key_hash))
      out[i].from_cache = true;
    else
      todo[i] = 1;
  }
  // NVRTC programs compile independently: one per thread.
  const int threads =
      std::max(1, jobs > 0 ? jobs : static_cast<int>(std::thread::hardware_concurrency()));
  std::atomic<std::size_t> next{0};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  const auto work = [&] {
    for (std::size_t i = next++; i < kernels.size(); i = next++) {
      if (!todo[i]) continue;
      try {
        binaries[i] = cuda::compile_kernel(kernels[i]);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    if (!todo[i]) continue;
    out[i].compile_ms = binaries[i].compile_ms;
    if (cache != nullptr && cache->enabled()) cuda::store_kernel(*cache, kernels[i], binaries[i]);
  }
  return out;
}

}  // namespace fp4jit

namespace fp4jit {

std::vector<CompiledKernelInfo> compile_gemms(const Recipe& recipe, const std::string& target,
                                              KernelCache* cache,
                                              std::span<const GemmRequest> requests,
                                              std::span<const DType> outs, int jobs,
                                              std::vector<std::string>* skipped) {
  codegen::check_target(target);
  std::vector<codegen::KernelSource> kernels;
  std::set<std::string> seen;
  for (const GemmRequest& request : requests)
    for (auto& k : cuda::request_gemm_kernels(recipe, request, target,
                                              cuda::default_sm_count(target), outs, skipped))
      if (seen.insert(k.key_text).second) kernels.push_back(std::move(k));
  return compile_sources(kernels, cache, jobs);
}

}  // namespace fp4jit
