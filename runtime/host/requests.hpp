// The kernel requests of the host backend: for each op, the key text (everything that decides the
// generated IR: op, canonical(recipe, role), role, dtypes, mode, config) and the IR generator.
// The registry adds the target, compiler, options and generator hash to name the binary.
#pragma once
#include "codegen/host/host_config.hpp"
#include "core/recipe.hpp"
#include "runtime/host/kernels.hpp"

namespace fp4jit::host {

KernelRequest quantize_request(const Recipe& recipe, Role role, DType input,
                               const HostConfig& config);
KernelRequest dequantize_request(const Recipe& recipe, Role role, DType output,
                                 const HostConfig& config);
KernelRequest dge_request(const Recipe& recipe, DType input, DType output,
                          const HostConfig& config);
KernelRequest occ_request(DType input, const HostConfig& config);
KernelRequest gemm_request(const Recipe& recipe, Role a, Role b, const HostConfig& config);

// The dtype the quantize kernel of `role` reads when the source is `input`: operands whose source
// is staged first (OCC, double quantization) read float32.
DType quantize_input(const Recipe& recipe, Role role, DType input);

}  // namespace fp4jit::host
