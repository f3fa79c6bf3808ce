// Tuning jobs of the CUDA backend. GEMMs: candidates from tuner/cuda_space.hpp, compiled by
// NVRTC on the tuner's threads into the cache, verified against the reference product of the
// dequantized operands (sampled rows; FP32 output within 1e-5, BF16 / FP16 within 4e-3 relative
// Frobenius error), timed with CUDA events over operand sets rotated past twice the L2 cache.
// The caller keeps the backend's device current (cuda::DeviceScope).
#pragma once
#include <memory>

#include "core/gemm.hpp"
#include "runtime/cuda/cuda_backend.hpp"
#include "tuner/tuner.hpp"

namespace fp4jit::tuner {

std::unique_ptr<TuneJob> cuda_gemm_job(cuda::CudaBackend& backend, const Recipe& recipe, GemmOp op,
                                       const GemmShape& shape, DType out);
// Quantize of operand `role` from a [rows, cols] source of `in` (with `pair`: role x, w or dy and
// its transposed copy from one read, as quantize_pair runs them): candidates of the kernel its
// plan launches (tuner/cuda_space.hpp), codes, scales and tensor scale byte for byte against the
// reference backend, timed with events (GB/s of the bytes read and written).
std::unique_ptr<TuneJob> cuda_quantize_job(cuda::CudaBackend& backend, const Recipe& recipe,
                                           Role role, std::int64_t rows, std::int64_t cols,
                                           DType in, bool pair = false);

}  // namespace fp4jit::tuner
