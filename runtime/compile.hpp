// Ahead-of-time compilation of a recipe's CUDA kernels into the kernel cache, with no GPU needed
// (what `fp4jit compile --arch sm_90a|sm_100a --recipe SPEC [--gemm MxNxK]` runs).
#pragma once
#include <span>
#include <string>
#include <vector>

#include "cache/cache.hpp"
#include "codegen/kernel_source.hpp"
#include "core/gemm.hpp"
#include "core/recipe.hpp"

namespace fp4jit {

struct CompiledKernelInfo {
  std::string op;        // template name, e.g. "quantize_rows"
  std::string key_hash;  // the cache key
  std::string key_text;
  bool from_cache = false;  // already cached: nothing compiled
  double compile_ms = 0.0;
};

// Every kernel the CUDA backend can launch for `recipe` on `target` ("sm_90a", "sm_100a", ...)
// with these input types (and dequantize/dge output types), compiled with NVRTC on `jobs`
// threads (0: one per core) and stored into `cache` (may be null: compile only). Throws
// Error(unsupported) when fp4jit was built without CUDA or NVRTC cannot be loaded, and
// Error(compile) with the NVRTC log when a kernel fails.
std::vector<CompiledKernelInfo> compile_recipe(const Recipe& recipe, const std::string& target,
                                               KernelCache* cache, std::span<const DType> dtypes,
                                               int jobs = 0);

// The kernels of the GEMMs the requests stand for (a layer's three, or one; core/gemm.hpp), and the
// OCC compensation where the recipe has it, on `target`, for output types `outs`, with the
// configs the heuristic picks for each shape (assuming default_sm_count(target) SMs), compiled
// like compile_recipe. GEMMs the target has no kernel for are skipped and named in `skipped`.
std::vector<CompiledKernelInfo> compile_gemms(const Recipe& recipe, const std::string& target,
                                              KernelCache* cache,
                                              std::span<const GemmRequest> requests,
                                              std::span<const DType> outs, int jobs = 0,
                                              std::vector<std::string>* skipped = nullptr);

// Compiles a list of kernels in parallel into `cache` (may be null), skipping those already cached.
std::vector<CompiledKernelInfo> compile_sources(const std::vector<codegen::KernelSource>& kernels,
                                                KernelCache* cache, int jobs = 0);

}  // namespace fp4jit
