// NVRTC, loaded at run time (libnvrtc.so.13, or $FP4JIT_NVRTC), compiling a KernelSource with
// the template headers embedded in the library: no file system access, no GPU needed.
//
// Errors are Error(compile) carrying the NVRTC log, the options and the SHA-256 of the stub.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/kernel_source.hpp"

namespace fp4jit::cuda {

struct CompiledKernel {
  std::vector<std::uint8_t> cubin;
  std::string lowered_name;  // the mangled name of the instantiation (nvrtcGetLoweredName)
  std::string log;
  std::string ptx;  // only when asked for
  double compile_ms = 0.0;
};

class Nvrtc {
 public:
  // The process's NVRTC; throws Error(unsupported) naming what was tried when it cannot load.
  static const Nvrtc& get();

  int major() const { return major_; }
  int minor() const { return minor_; }
  std::string compiler() const;  // "nvrtc 13.0"

  CompiledKernel compile(const codegen::KernelSource& kernel, bool want_ptx = false) const;
  // Compiles arbitrary source against the embedded headers (tests of the error path).
  CompiledKernel compile_source(const std::string& source, const std::string& name_expression,
                                const std::vector<std::string>& options, bool want_ptx) const;

  struct Api;

 private:
  Nvrtc() = default;
  const Api* api_ = nullptr;
  int major_ = 0, minor_ = 0;
};

}  // namespace fp4jit::cuda
