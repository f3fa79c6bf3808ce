// Host GEMM on quantized operands: C = alpha * deq(A) deq(B)^T with FP32 accumulation, as LLVM
// IR. Block scales are applied when the operands are decoded into packed panels (element * block
// scale, exact in float); the two-level tensor scales are applied in the epilogue as
// alpha = (1 / s_enc_a) * (1 / s_enc_b), as the GPU kernels do. Entry points (GemmKernelArgs):
//   <prefix>_pack_a(args, p0, p1)   panels p0..p1 of mr rows of A
//   <prefix>_pack_b(args, p0, p1)   panels of nr rows of B
//   <prefix>_compute(args, t0, t1)  tasks: (mc rows) x (nb_panels * nr columns) of C, K in kc steps
#pragma once
#include <string>

#include "codegen/host/host_config.hpp"
#include "core/recipe.hpp"

namespace llvm {
class Module;
}

namespace fp4jit::host {

struct GemmKernelSpec {
  OperandSpec a, b;
  Ue5m3Variant ue5m3 = Ue5m3Variant::nan_ff;
  HostConfig config;
};

void emit_gemm(llvm::Module& module, const GemmKernelSpec& spec, const std::string& prefix);

}  // namespace fp4jit::host
