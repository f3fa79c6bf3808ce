// Candidate spaces of the CUDA kernels, pruned on the host before anything compiles (no GPU
// needed):
//   GEMM sm_90a   tile width BLOCK_N (64, 128, 256; mx and ms_grad at most 128), ring depths
//                 (the measured defaults, two deeper, two shallower), raster order (groups of 8
//                 along M, 8 along N, 16 along M), split-K (1, 2, 4, 8 and the heuristic's),
//                 interleaved B expansion (nv, tiles of 128 or 256). Pruned: shared memory over
//                 227 KiB, tile widths the path cannot hold, splits leaving under 2 K tiles per
//                 split, split-K where the tiles alone fill the SMs. TMA multicast clusters are not
//                 implemented by the kernel (kClusterM/N = 1), so they are not in the space.
//   GEMM sm_100a  pipeline depth 2..8 (tiles of 128 x 128), pruned by shared memory.
//   quantize      rows kernel: CTA threads x segments per lane per iteration; tile kernel: CTA
//                 threads x source tile, pruned by each config's validate() (whole groups per
//                 tile, CTA size).
// The heuristic's choice comes first, then the others by how many fields differ from it (single
// changes first), then by text: a cap on the count keeps the nearest neighbours.
#pragma once
#include <string>
#include <vector>

#include "codegen/gemm.hpp"
#include "codegen/kernels.hpp"
#include "runtime/cuda/plan.hpp"
#include "tuner/tuner.hpp"

namespace fp4jit::tuner {

struct CudaGemmCandidate {
  codegen::GemmChoice choice;  // grid set for the problem's M and the SM count
  Candidate candidate;         // text: runtime/cuda/gemm_plan.hpp gemm_choice_text
};

std::vector<CudaGemmCandidate> cuda_gemm_space(const codegen::GemmSpec& spec, std::int64_t m,
                                               int sm_count, const std::string& target,
                                               std::vector<CandidateResult>* pruned);

struct CudaRowsCandidate {
  codegen::RowsConfig config;
  Candidate candidate;
};
struct CudaTileCandidate {
  codegen::TileConfig config;
  Candidate candidate;
};
std::vector<CudaRowsCandidate> cuda_rows_space(const OperandSpec& op, DType in,
                                               std::vector<CandidateResult>* pruned);
std::vector<CudaTileCandidate> cuda_tile_space(const OperandSpec* row, const OperandSpec* col,
                                               DType in, std::vector<CandidateResult>* pruned);

// The candidates for quantizing operand `role` from a [rows, cols] tensor of `in`: configs of the
// kernel kind its plan launches (quantize_rows or quantize_tile), the plan's own first. Each is
// planned on the host (no device) and pruned when the plan sets it aside for that operand.
struct CudaQuantizeCandidate {
  cuda::QuantizeTuning config;
  Candidate candidate;  // text: QuantizeTuning::text()
};
// pair: the pair (role x, w or dy and its transposed copy) from one read, as quantize_pair plans
// it; its candidates are configs of its quantize_tile kernels.
std::vector<CudaQuantizeCandidate> cuda_quantize_space(const Recipe& recipe, Role role,
                                                       std::int64_t rows, std::int64_t cols,
                                                       DType in, const cuda::DeviceInfo& device,
                                                       std::vector<CandidateResult>* pruned,
                                                       bool pair = false);
// The kernels a quantize (pair) plan with `device`'s overrides launches (planned on the host).
std::vector<codegen::KernelSource> cuda_quantize_plan(const Recipe& recipe, Role role,
                                                      std::int64_t rows, std::int64_t cols,
                                                      DType in, const cuda::DeviceInfo& device,
                                                      bool pair = false);
// The same as (op, config text) per launch.
std::vector<std::pair<std::string, std::string>> cuda_quantize_kernels(
    const Recipe& recipe, Role role, std::int64_t rows, std::int64_t cols, DType in,
    const cuda::DeviceInfo& device, bool pair = false);

}  // namespace fp4jit::tuner
