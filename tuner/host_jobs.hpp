// Tuning jobs of the host backend: one GEMM (fprop, dgrad or wgrad of one shape) or one quantize
// (an operand of one source shape), on a HostBackend that stores its kernels in the tuning
// cache. Verification: GEMM results against the reference product of the dequantized operands
// (double accumulation) on a deterministic sample of rows, relative Frobenius error <= 1e-5;
// quantize outputs byte for byte against the reference backend.
#pragma once
#include <memory>

#include "core/gemm.hpp"
#include "runtime/host/host_backend.hpp"
#include "tuner/tuner.hpp"

namespace fp4jit::tuner {

// Input sets rotated so that their bytes exceed twice the L2 cache (at most 8 sets).
int rotation_sets(std::int64_t set_bytes);

std::unique_ptr<TuneJob> host_gemm_job(host::HostBackend& backend, const Recipe& recipe, GemmOp op,
                                       const GemmShape& shape);
// `rows` x `cols`: the source tensor of the operand (core/gemm.hpp gemm_source_shape).
std::unique_ptr<TuneJob> host_quantize_job(host::HostBackend& backend, const Recipe& recipe,
                                           Role role, std::int64_t rows, std::int64_t cols,
                                           DType in);

}  // namespace fp4jit::tuner
