// Host dequantize kernel: <prefix>_dequantize(args, r0, r1) writes decode(code) * decode(scale)
// [/ s_enc] of operand rows r0..r1 into args.out (DequantizeKernelArgs), rounded to the output
// dtype. Every product is exact in float and the one division correctly rounded, so the values
// equal the reference's double computation rounded to float.
#pragma once
#include <string>

#include "codegen/host/host_config.hpp"
#include "core/recipe.hpp"

namespace llvm {
class Module;
}

namespace fp4jit::host {

struct DequantizeKernelSpec {
  OperandSpec op;
  DType output = DType::f32;
  Ue5m3Variant ue5m3 = Ue5m3Variant::nan_ff;
  HostConfig config;
};

void emit_dequantize(llvm::Module& module, const DequantizeKernelSpec& spec,
                     const std::string& prefix);

// IR pieces the GEMM's packing shares: element values of `lanes` codes at column c of a code row,
// and the decoded block scale of a chunk.
}  // namespace fp4jit::host
