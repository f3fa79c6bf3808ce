// GEMM launch planning, on the host without touching a device: the kernel path and config the
// heuristic picks for a shape (codegen/gemm.hpp), with the geometry the launch needs (threads,
// dynamic shared memory, TMA boxes, split-K scratch); and the kernels a layer's GEMMs use, for
// ahead-of-time compilation.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "codegen/gemm.hpp"
#include "runtime/cuda/plan.hpp"

namespace fp4jit::cuda {

struct GemmPlan {
  codegen::GemmSpec spec;
  codegen::GemmChoice choice;
  codegen::KernelSource kernel;
  int block_m = 128, block_n = 128;
  int threads = 0, smem_bytes = 0;
  int a_box_bytes = 0, b_box_bytes = 0;           // TMA box widths (bytes of one row per K tile)
  int swizzle_bytes = 0;                          // TMA swizzle: 0, 64 or 128
  std::int64_t a_row_bytes = 0, b_row_bytes = 0;  // bytes of codes per operand row (TMA row pitch)
  std::int64_t tiles = 0;                         // output tiles
  std::int64_t workspace_floats = 0;              // split-K partial sums (0 without split-K)
};

// Throws Error(unsupported) where the device's target has no kernel for the recipe's operand
// pair or the shape (see gemm_spec).
GemmPlan plan_gemm(const Recipe& recipe, GemmOp op, const GemmShape& shape, DType out,
                   const DeviceInfo& device);

// SMs the heuristic assumes when compiling ahead of time without a device: 132 (H100 / H200 SXM)
// for sm_90a, 148 (B200) for sm_100a.
int default_sm_count(const std::string& target);

// The kernels of the GEMMs a request stands for (core/gemm.hpp: a layer's three, or one) on
// `target`, for each output type in `outs` (and, for an fprop whose recipe compensates OCC, the
// compensation kernels for weights of those types), with the heuristic's configs for `sm_count`
// SMs. GEMMs the target has no kernel for are left out and named in `skipped` (when given).
std::vector<codegen::KernelSource> request_gemm_kernels(
    const Recipe& recipe, const GemmRequest& request, const std::string& target, int sm_count,
    std::span<const DType> outs, std::vector<std::string>* skipped = nullptr);

}  // namespace fp4jit::cuda
