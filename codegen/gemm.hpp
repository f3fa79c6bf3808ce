// Stub generators of the GEMM kernels (templates/gemm/): the problem a CUDA GEMM kernel solves
// (GemmSpec: the operand pair's quantization, the path that multiplies it, N, K, output type),
// the tunable choices per target (GemmSm90Config, GemmSm100Config) with the heuristic that picks
// them for any shape, and the stubs. M stays a run-time argument: only the heuristic's choice of
// tile width depends on it.
#pragma once
#include <cstdint>
#include <string>

#include "codegen/kernel_source.hpp"
#include "core/gemm.hpp"

namespace fp4jit::codegen {

// How the operand pair's scales enter the product (templates/gemm/sm90/config.cuh ScaleKind;
// sm_100a has mx and nv only).
enum class GemmPath : std::uint8_t { ms, mx, nv, ms_grad };
std::string_view gemm_path_name(GemmPath p);  // "ms", "mx", "nv", "ms_grad"

struct GemmSpec {
  GemmOp op = GemmOp::fprop;
  Role a_role = Role::x, b_role = Role::w;
  std::string a_text, b_text;  // the operand fields a GEMM kernel reads: elem, scale, block
  GemmPath path = GemmPath::mx;
  int scale_code = 0;                      // nv: sm90::ScaleCode (0 ue4m3, 1-3 the UE5M3 variants)
  int a_block_rows = 1, b_block_rows = 1;  // nv: 16 for 16x16 blocks
  std::int64_t n = 0, k = 0;
  DType out = DType::bf16;
};

// The CUDA GEMM for `op` of `recipe` on `target` ("sm_90a", "sm_100a"); throws Error(unsupported)
// naming the operands when no kernel covers the pair or the shape (K must be a multiple of 32:
// the TMA row pitch), Error(invalid_argument) for an unknown target.
GemmSpec gemm_spec(const Recipe& recipe, GemmOp op, std::int64_t n, std::int64_t k, DType out,
                   const std::string& target);

// sm_90a: tile width, ring depths, raster order (templates/gemm/sm90/config.cuh).
struct GemmSm90Config {
  int block_n = 128;
  int packed_stages = 7, exp_stages = 4;
  int raster_group = 8;
  bool raster_along_m = true;
  bool nv_interleave = false;
  std::string text() const;                   // "bn=128,ps=7,es=4,rg=8m,il=0"
  void validate(const GemmSpec& spec) const;  // throws Error(invalid_argument)
};
// The ring depths that fit shared memory for a tile width (measured defaults of
// bench/gemm_sm90_notes.md).
GemmSm90Config default_sm90_config(const GemmSpec& spec, int block_n);

// sm_100a: pipeline depth (tiles of 128 x 128, templates/gemm/sm100/config.cuh).
struct GemmSm100Config {
  int block_n = 128;
  int stages = 4;
  std::string text() const;  // "bn=128,st=4"
  void validate(const GemmSpec& spec) const;
};

// The launch the heuristic picks for M rows (templates/gemm/sm90/heuristic.cuh on sm_90a).
struct GemmChoice {
  GemmSm90Config sm90;
  GemmSm100Config sm100;
  int splits = 1;  // split-K (sm_90a)
  int grid = 1;    // CTAs
};
GemmChoice choose_gemm(const GemmSpec& spec, std::int64_t m, int sm_count,
                       const std::string& target);

KernelSource gemm_sm90_kernel(const GemmSpec& spec, const GemmSm90Config& config,
                              const std::string& target);
KernelSource gemm_sm100_kernel(const GemmSpec& spec, const GemmSm100Config& config,
                               const std::string& target);
// The parts every target's GEMM kernel shares: the stub's template gemm/<arch>/kernel.cuh, its
// arguments (two TMA descriptors and GemmParams) and the cache key; `declarations` holds the
// target's Config.
KernelSource gemm_kernel_source(const GemmSpec& spec, const std::string& arch,
                                const std::string& config_text, const std::string& target,
                                std::string declarations);
// The kernel of `choice` for the spec's target.
KernelSource gemm_kernel(const GemmSpec& spec, const GemmChoice& choice, const std::string& target);

// OCC compensation (templates/gemm/occ_compensate.cuh): W [N, K] of type `weight` -> W^T of that
// type, the residual's row ranges, and D += alpha * R W^T with D of type `out`.
KernelSource occ_transpose_kernel(DType weight, const std::string& target);
KernelSource occ_rows_kernel(const std::string& target);
KernelSource occ_compensate_kernel(DType out, DType weight, const std::string& target);
constexpr int kOccCompensateThreads = 128;  // per CTA
constexpr int kOccCompensateCols = 8;       // output columns per thread
constexpr int kOccCompensateBatch = 4;      // residual entries with their loads in flight

// "g::OutType::bf16" for a stub.
std::string gemm_out_name(DType d);

}  // namespace fp4jit::codegen
