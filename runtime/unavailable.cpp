// Backends this build of fp4jit does not include. Each backend's own sources replace the matching
// definition here when CMake enables it (FP4JIT_WITH_CUDA, FP4JIT_WITH_LLVM).
#include "runtime/backend.hpp"
#include "runtime/compile.hpp"

namespace fp4jit {

#if !defined(FP4JIT_HAVE_LLVM)
std::unique_ptr<Backend> make_host_backend(const EngineOptions&) {
  fail(ErrorKind::unsupported,
       "the host backend is not built into this fp4jit (configure with FP4JIT_WITH_LLVM=ON)");
}
#endif

#if !defined(FP4JIT_HAVE_CUDA)
std::unique_ptr<Backend> make_cuda_backend(const EngineOptions&) {
  fail(ErrorKind::no_gpu,
       "the CUDA backend is not built into this fp4jit (configure with FP4JIT_WITH_CUDA=ON)");
}
bool cuda_available() {
  return false;
}
std::vector<CompiledKernelInfo> compile_recipe(const Recipe&, const std::string&, KernelCache*,
                                               std::span<const DType>, int) {
  fail(ErrorKind::unsupported,
       "CUDA kernels are not built into this fp4jit (configure with FP4JIT_WITH_CUDA=ON)");
}
std::vector<CompiledKernelInfo> compile_gemms(const Recipe&, const std::string&, KernelCache*,
                                              std::span<const GemmRequest>, std::span<const DType>,
                                              int, std::vector<std::string>*) {
  fail(ErrorKind::unsupported,
       "CUDA kernels are not built into this fp4jit (configure with FP4JIT_WITH_CUDA=ON)");
}
std::vector<CompiledKernelInfo> compile_sources(const std::vector<codegen::KernelSource>&,
                                                KernelCache*, int) {
  fail(ErrorKind::unsupported,
       "CUDA kernels are not built into this fp4jit (configure with FP4JIT_WITH_CUDA=ON)");
}
#endif

}  // namespace fp4jit
