// Host OCC kernels (outlier clamping and compensation), as LLVM IR, over source rows with their
// quantiles given (OccKernelArgs):
//   <prefix>_count(args, r0, r1)  offset[r] = number of x in row r with clamp(x) != x
//   <prefix>_apply(args, r0, r1)  out row = clamp(x); residual (r * cols + c, x - clamp(x)) for
//                                 those elements, in column order, from slot offset[r]
// clamp(x) = x < lo ? lo : (x > hi ? hi : x), compared with != as the reference does (so a NaN,
// never clamped, still lands in the residual, as NaN).
#pragma once
#include <string>

#include "codegen/host/host_config.hpp"
#include "core/format.hpp"

namespace llvm {
class Module;
}

namespace fp4jit::host {

struct OccKernelSpec {
  DType input = DType::f32;
  HostConfig config;
};

void emit_occ(llvm::Module& module, const OccKernelSpec& spec, const std::string& prefix);

}  // namespace fp4jit::host
