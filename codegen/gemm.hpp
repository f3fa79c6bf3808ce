// Stub generators of the GEMM kernels (templates/gemm/): the problem a CUDA GEMM kernel solves
// (GemmSpec: the operand pair's quantization, the path that multiplies it, N, K, output type),
// the tunable choices per target (GemmSm90Config, GemmSm100Config) with the heuristic that picks
// them for any shape, and the stubs. M stays a run-time argument: only the heuristic's choice of
// tile width depends on it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

// sm_90a: the kernel (fused: templates/gemm/sm90/kernel.cuh, expanding on chip; staged:
// templates/gemm/sm90/staged.cuh after the expansion pass), tile width, ring depths, raster order
// (templates/gemm/sm90/config.cuh). The staged kernel has one ring of packed_stages stages.
struct GemmSm90Config {
  bool staged = false;
  int block_n = 128;
  int packed_stages = 7, exp_stages = 4;
  int raster_group = 8;
  bool raster_along_m = true;
  bool nv_interleave = false;
  int period = 1;     // staged mx / ms_grad: K tiles per promotion segment (staged_geometry.cuh)
  int cluster_m = 1;  // staged: CTAs per cluster along M sharing B by TMA multicast (1 or 2)
  // staged: D stored through shared memory and TMA (a buffer of the whole tile beside the ring),
  // overlapping the next tile's main loop; where D is not TMA-addressable the kernel falls back to
  // register stores at run time.
  bool tma_store = false;
  // The swapped small-M kernel (templates/gemm/sm90/swap.cuh, mx and nv): B expanded in the
  // consumers' registers, A expanded once; block_n is then its tile of A's rows (64 or 128), and
  // period its K tiles per segment (mx: per promotion; nv: per load of B's scale codes).
  bool swap = false;
  // Swapped kernel with split-K: the splits of a tile run as one cluster (one CTA per split, 2..8)
  // and sum their partials in distributed shared memory instead of a global workspace (also the
  // direct kernel's).
  bool cluster_split = false;
  // Swapped kernel, stream-K (templates/gemm/sm90/scheduler.cuh, StreamScheduler): the tiles'
  // segments cut into equal runs, one per CTA of a full grid, a tile's pieces summed through the
  // workspace (the choice's splits: the most pieces a tile has); not with cluster_split.
  bool stream_k = false;
  // The direct small-M kernel (templates/gemm/sm90/direct.cuh, mx): one launch from both packed
  // operands, A expanded by the CTA's producer warpgroup into a ring of packed_stages stages, B
  // copied by each consumer thread into a ring of exp_stages stages and expanded into registers;
  // block_n (rows of A per tile) is 64 or 128, period its K tiles per promotion segment.
  bool direct = false;
  // fused "bn=128,ps=7,es=4,rg=8m,il=0"; staged "sg=1,bn=256,ps=4,rg=8m" (",pp=4" when the
  // period is not 1, ",cm=2" for clusters of two, ",ts=1" for TMA stores of D); swapped
  // "sw=1,bn=128,ps=7,rg=8m,pp=4" (",cs=1" with cluster split-K, ",ks=1" with stream-K); direct
  // "dk=1,bn=128,ps=4,es=8,rg=8m,pp=2" (",cs=1" likewise)
  std::string text() const;
  void validate(const GemmSpec& spec) const;  // throws Error(invalid_argument)
};
// The ring depths that fit shared memory for a tile width (measured defaults of
// bench/gemm_sm90_notes.md).
GemmSm90Config default_sm90_config(const GemmSpec& spec, int block_n);
// The staged kernel's config for a tile width: TMA stores of D (sm90_staged_tma_store_default), and
// as many stages as fit beside its buffer (at most 6).
GemmSm90Config default_sm90_staged_config(const GemmSpec& spec, int block_n);
// ... with TMA stores of D on or off.
GemmSm90Config default_sm90_staged_config(const GemmSpec& spec, int block_n, bool tma_store);
// Whether the staged kernel's default stores D through TMA for this output type.
bool sm90_staged_tma_store_default(DType out);
// Bytes per element of D in the staged kernel's epilogue buffer (0: no buffer, register stores).
int sm90_staged_epi_out_bytes(const GemmSpec& spec, const GemmSm90Config& config);
// The swapped kernel's config for a tile of block_t rows of A: as many stages as fit (at most 8).
GemmSm90Config default_sm90_swap_config(const GemmSpec& spec, int block_t);
// The direct kernel's config (mx) for a tile of block_t rows of A (64 or 128): kDirectAStages
// stages of A, kDirectBStages of B, the swapped kernel's promotion period.
GemmSm90Config default_sm90_direct_config(const GemmSpec& spec, int block_t);
constexpr int kDirectAStages = 4, kDirectBStages = 8;

// sm_100a: pipeline depth (tiles of 128 x 128, templates/gemm/sm100/config.cuh).
struct GemmSm100Config {
  int block_n = 128;
  int stages = 4;
  std::string text() const;  // "bn=128,st=4"
  void validate(const GemmSpec& spec) const;
};

// The launch the heuristic picks for M rows (templates/gemm/sm90/heuristic.cuh on sm_90a; the
// staged path from kStagedMinRows rows on, below it the fused kernel).
struct GemmChoice {
  GemmSm90Config sm90;
  GemmSm100Config sm100;
  int splits = 1;  // split-K (sm_90a)
  int grid = 1;    // CTAs
};
GemmChoice choose_gemm(const GemmSpec& spec, std::int64_t m, int sm_count,
                       const std::string& target);
constexpr std::int64_t kStagedMinRows = 512;
// The swapped kernel's rows of A on the heuristic's path (bench/gemm_sm90_notes.md, H100): mx up
// to kStagedMinRows - 1 (at 384 and 511 rows 1.0-1.2x the staged kernel and 2.2-2.6x the fused
// one; the staged kernel wins from 768 rows on), nv up to 1024 (1.3-1.6x the staged kernel at
// 384-511 rows, 1.07-1.09x at 768 and 1024, 0.96x at 2048); other paths never.
constexpr std::int64_t kSwapMaxRows = kStagedMinRows - 1;
constexpr std::int64_t kSwapMaxRowsNv = 1024;
std::int64_t swap_max_rows(GemmPath path);
// The swapped kernel's launch for M rows: tile of 64 or 128 rows of A, split-K over segments
// only where the tiles fill less than half of the SMs, two splits in clusters (cluster_split;
// the tuner also tries clusters of up to kMaxClusterSplits).
GemmChoice choose_sm90_swap(const GemmSpec& spec, std::int64_t m, int sm_count);
// Stream-K's grid and splits for `tiles` tiles of `k_units` units (segments) each: a CTA per SM
// (at most one per unit), and the most pieces the CTAs' equal runs cut a tile into (the same
// integer cuts as StreamScheduler).
struct StreamK {
  int grid;
  int splits;
};
StreamK sm90_stream_k(std::int64_t tiles, std::int64_t k_units, int sm_count);
constexpr int kMaxClusterSplits = 8;  // the portable cluster size
// The direct kernel's launch for M rows (mx): tiles of 64 rows of A up to 64 rows, and up to 128
// where 128-row tiles would fill less than half of the SMs, else 128 (x 128 rows of B); K split
// over segments so that the units fill the SMs once where the tiles alone leave half of them idle
// (split-K in clusters of 2 CTAs, through the global workspace beyond).
GemmChoice choose_sm90_direct(const GemmSpec& spec, std::int64_t m, int sm_count);
// Tiles of the swapped kernel: ceil(m / block_t) x ceil(n / 128).
std::int64_t sm90_swap_tiles(std::int64_t m, std::int64_t n, int block_t);
// The swapped kernel's persistent grid: min(tiles * splits, SMs) CTAs, with cluster split-K whole
// clusters of `splits` CTAs (at most one per tile, at least one).
int sm90_swap_grid(std::int64_t tiles, int splits, bool cluster_split, int sm_count);
// The sm_90a heuristic's choice with the kernel fixed: fused (staged = false) or staged; split:
// whether split-K may be chosen.
GemmChoice choose_sm90_gemm(const GemmSpec& spec, std::int64_t m, int sm_count, bool staged,
                            bool split = true);

// The GEMM kernels' parameter list: tensor_maps TMA descriptors (__grid_constant__), then the
// GemmParams (the fused and swapped sm90 kernels and sm100 take the operands' two, the staged one
// D's as well).
std::string gemm_args_type(int tensor_maps);

KernelSource gemm_sm90_kernel(const GemmSpec& spec, const GemmSm90Config& config,
                              const std::string& target);
// The expansion pass of the staged sm90 path for operand A (b = false) or B of the spec
// (templates/gemm/sm90/staged_expand.cuh); independent of the shape.
// The staged path's expansion of operand A (b = false) or B, for a promotion period.
// frag_order: A's expansion for the swapped kernel (mx, nv; the chunk order of its fragments).
KernelSource gemm_sm90_expand_kernel(const GemmSpec& spec, bool b, int period,
                                     const std::string& target, bool frag_order = false);
// Both operands' expansions (A's and B's of gemm_sm90_expand_kernel, frag_order off) in one
// launch: CTAs [0, a_ctas) expand A, the rest B (the unswapped staged path).
KernelSource gemm_sm90_expand_pair_kernel(const GemmSpec& spec, int period,
                                          const std::string& target);
// Whether the unswapped staged path expands its operands in two launches rather than one:
// ms_grad, whose B expansion needs twice the registers of A's (63 against 32 on sm_90a), which
// in one kernel would halve the CTAs per SM of A's.
bool sm90_expand_apart(const GemmSpec& spec);
// The expansion kernels of a staged choice, in launch order: A's (swapped: in fragment order),
// then B's where it has its own launch; or the pair kernel.
std::vector<KernelSource> gemm_sm90_expand_kernels(const GemmSpec& spec, const GemmSm90Config& c,
                                                   const std::string& target);
// The period an expansion of the spec's path is built for: the choice's where the expansion
// derives segment references (mx, ms_grad), else 1 (the swapped kernel's nv period paces only its
// loads of B's scales).
int sm90_expand_period(const GemmSpec& spec, int period);
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
// The fused sm90 config that stands in for a staged or swapped one when its expansion leaves the
// exact window (mx, ms_grad; the heuristic's fused config for the same shape), or nullopt where
// the staged path is always exact (ms, nv) or the choice is the fused kernel.
std::optional<GemmChoice> sm90_fallback_choice(const GemmSpec& spec, const GemmChoice& choice,
                                               std::int64_t m, int sm_count);
// Every kernel a launch of `choice` runs: the GEMM kernel, and for a staged choice the two
// expansion passes and the fused fallback's kernel where the path has one.
std::vector<KernelSource> gemm_kernels(const GemmSpec& spec, const GemmChoice& choice,
                                       std::int64_t m, int sm_count, const std::string& target);

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
