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
  int a_box_bytes = 0, b_box_bytes = 0;  // TMA box widths (bytes of one row per K tile)
  int a_box_rows = 0, b_box_rows = 0;    // TMA box heights (rows one CTA loads per K tile)
  int a_swizzle = 0, b_swizzle = 0;      // TMA swizzle: 0, 64 or 128
  int cluster_m = 1;  // CTAs per cluster along M (staged; launched with a cluster dimension)
  std::int64_t a_row_bytes = 0, b_row_bytes = 0;  // bytes of codes per operand row (TMA row pitch)
  std::int64_t tiles = 0;                         // output tiles
  std::int64_t workspace_floats = 0;  // split-K partial sums (0: unsplit, or split in clusters)
  // Staged sm_90a path: the expansion passes, the expanded operands' row pitch (the TMA row
  // pitch above is the same), the promotion period, the factor arrays (factor_rows segments of
  // a_factor_ld / b_factor_ld floats, ld 0: none; b_whole_row: B's one segment, each row of B
  // expanded by one warp against its whole row, mx), and the fused plan that runs instead when an
  // expansion leaves the exact window (mx, ms_grad). `expand`: the expansion launches
  // (gemm_sm90_expand_kernels): one over both operands, or A's and B's (ms_grad); the swapped
  // kernel (swap) is staged for A only: B stays packed, and A's expansion also checks B's scale
  // window.
  bool staged = false;
  bool swap = false;
  // The direct small-M kernel (mx): one launch over both packed operands (GemmParams::a_codes,
  // b_codes), no tensor maps, expansions or fallback.
  bool direct = false;
  // The staged kernel takes a third tensor map, D's; tma_store: its config stores D through it
  // (the launch encodes it when D is TMA-addressable, GemmParams::tma_store).
  bool tma_store = false;
  std::vector<codegen::KernelSource> expand;
  std::int64_t a_code_row_bytes = 0, b_code_row_bytes = 0;  // packed codes (the expansions' input)
  int period = 1;
  int factor_rows = 0;
  int a_factor_ld = 0, b_factor_ld = 0;
  bool b_whole_row = false;
  int b_factor_rows() const { return b_whole_row ? 1 : factor_rows; }
  std::vector<GemmPlan> fallback;  // empty or one
  // Every kernel this plan launches.
  std::vector<codegen::KernelSource> kernels() const;
  // CTAs per cluster the GEMM kernel is launched in (1: none): the staged kernel's cluster_m, or
  // the swapped kernel's splits when they sum in clusters.
  int launch_cluster() const {
    return swap || direct ? (choice.sm90.cluster_split ? choice.splits : 1) : cluster_m;
  }
};

// Throws Error(unsupported) where the device's target has no kernel for the recipe's operand
// pair or the shape (see gemm_spec). `choice` (null: the heuristic's) fixes the config and split-K
// (a tuned result); its grid is recomputed for the shape.
GemmPlan plan_gemm(const Recipe& recipe, GemmOp op, const GemmShape& shape, DType out,
                   const DeviceInfo& device, const codegen::GemmChoice* choice = nullptr);

// A choice as the tuner stores it: sm_90a "bn=128,ps=7,es=4,rg=8m,il=0,sk=2" (the config text and
// split-K), sm_100a "bn=128,st=4". parse_gemm_choice validates it against the spec (shared
// memory, tile width per path, split-K <= its split units) and sets the grid for M rows; throws
// Error(invalid_argument) naming the field at fault.
std::string gemm_choice_text(const codegen::GemmChoice& choice, const std::string& target);
codegen::GemmChoice parse_gemm_choice(const std::string& text, const codegen::GemmSpec& spec,
                                      std::int64_t m, int sm_count, const std::string& target);
// K tiles of the sm90 kernel for a spec (its BLOCK_K: 64 for nv and ms_grad, else 128).
int sm90_k_tiles(const codegen::GemmSpec& spec);
// What split-K divides: K tiles, or for the staged and swapped kernels whole segments (the
// swapped kernel's K tiles are 128 elements on every path).
int sm90_split_units(const codegen::GemmSpec& spec, const codegen::GemmSm90Config& config);
// Persistent grid: min(tiles * splits, SMs); with clusters of cluster_m CTAs along M, whole
// clusters: cluster_m * min(cluster tiles * splits, SMs / cluster_m).
int gemm_grid(const codegen::GemmSpec& spec, std::int64_t m, int block_n, int splits, int sm_count,
              int cluster_m = 1);

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
