// Configuration and launch parameters of the sm90 FP4 GEMM (templates/gemm/sm90/kernel.cuh).
//
// A generated stub instantiates the kernel with one named config type:
//   struct Cfg : fp4jit::sm90::GemmConfigBase {
//     static constexpr fp4jit::sm90::ScaleKind kKind = fp4jit::sm90::ScaleKind::mx;
//     static constexpr int BLOCK_N = 128;
//   };
//   template __global__ void fp4jit::sm90::gemm_kernel<Cfg>(...);
// Every member not overridden keeps GemmConfigBase's value. GemmTraits<Cfg> derives the rest and
// rejects invalid combinations at compile time.
//
// C[M, N] = epilogue(A[M, K] * B[N, K]^T), both operands K-major and quantized
// (core/quantized.hpp).
#pragma once
#include "gemm/params.cuh"

namespace fp4jit::sm90 {

// How the operands' scales enter the product; decides the tensor-core path.
enum class ScaleKind : int {
  ms = 0,  // per-row scales of A and of B (msfp4): fixed E4M3 expansion, QGMMA, scales in the
           // epilogue
  mx = 1,  // 1x32 E8M0 blocks (mxfp4, tetrajet): shifted E4M3 expansion per K tile, QGMMA,
           //   exact per-tile promotion to FP32; multi-pass over exponent bands when the window
           //   fails
  nv = 2,  // 1x16 (or 16x16) UE4M3 / UE5M3 blocks + FP32 tensor scale (nvfp4, ue5m3): E2M1 x scale
           //   expanded to FP16 (UE4M3) or BF16 (UE5M3), HGMMA
  ms_grad =
      3,  // msfp4 backward (dgrad, wgrad): A = E5M2 codes with one per-tensor scale (no
          //   expansion: E5M2 is the top byte of FP16), B = E2M1 with a power-of-two scale per
          //   K column folded exactly into its FP16 expansion (shift window of 37 binades per
          //   K tile, further columns in later passes), HGMMA F16, per-tile FP32 promotion
};

// Block-scale code formats of the nv kind (numerics/minifloat.cuh).
enum class ScaleCode : int { ue4m3 = 0, ue5m3_nan = 1, ue5m3_finite = 2, ue5m3_ieee = 3 };

using gemm::OutType;

struct GemmConfigBase {
  static constexpr ScaleKind kKind = ScaleKind::mx;
  static constexpr ScaleCode kScaleCode = ScaleCode::ue4m3;  // nv only
  static constexpr int kABlockRows = 1;                      // nv: 1 (1x16) or 16 (16x16)
  static constexpr int kBBlockRows = 1;
  static constexpr int BLOCK_M = 128;        // two consumer warpgroups of 64 rows
  static constexpr int BLOCK_N = 128;        // 64..256, a multiple of 64
  static constexpr int kPackedStages = 6;    // TMA ring of packed tiles
  static constexpr int kExpandedStages = 3;  // ring of expanded B tiles
  static constexpr OutType kOut = OutType::bf16;
  static constexpr int kRasterGroup = 8;       // tiles of the grouped dimension per raster band
  static constexpr bool kRasterAlongM = true;  // consecutive tiles walk M inside a band of N
  // CTAs per cluster sharing an operand by TMA multicast: the staged kernel takes kClusterM = 2
  // (B shared along M); the fused kernel none.
  static constexpr int kClusterM = 1, kClusterN = 1;
  static constexpr int kPromoteTiles = 0;  // ms: promote the accumulator every N K tiles (0: never)
  static constexpr int kPeriod = 1;        // staged mx / ms_grad: K tiles per promotion segment
  static constexpr int kTransformWGs =
      1;  // 1 or 2 transform warpgroups (B expansion split by rows)
  // Registers per thread after setmaxnreg (0: no setmaxnreg, every role keeps the launch
  // allocation, 168 with one transform warpgroup). ptxas compiles each role's code for its value;
  // the split must fit the launch allocation (traits.cuh): 128 * 104 + 256 * 200 = 384 * 168.
  static constexpr int kTransformRegs = 104, kConsumerRegs = 200;
  // nv: expand both B rows of a thread interleaved (more independent work per instruction stream).
  static constexpr bool kNvInterleave = false;
  // Swapped kernel: split-K across the CTAs of a cluster (one per split, launched in clusters of
  // GemmParams::splits), partial sums summed through distributed shared memory (swap.cuh).
  static constexpr bool kSplitCluster = false;
  // Swapped kernel: stream-K (scheduler.cuh's StreamScheduler) instead of tiles x equal splits:
  // the grid's CTAs take equal runs of the tiles' segments; GemmParams::splits bounds the pieces
  // of a tile (its workspace slots). Not with kSplitCluster.
  static constexpr bool kStreamK = false;
  // Staged kernel: D leaves through shared memory and TMA stores (staged_geometry.cuh's epilogue
  // buffer), the store overlapping the warpgroup's next tile; GemmParams::tma_store = 0 (D not
  // TMA-addressable) takes the register stores instead.
  static constexpr bool kTmaStore = false;
  // Measurement only (wrong results): 1 skips the B expansion, 2 the A expansion, 4 the wgmmas.
  static constexpr int kAblate = 0;
  // Problem sizes fixed at compile time (0: taken from GemmParams at run time). The runtime keys
  // its kernels by N and K and passes the same values; M always stays a run-time argument.
  static constexpr int kN = 0, kK = 0;
};

// Runtime arguments: gemm/params.cuh.
using gemm::GemmParams;

// p with the problem sizes Cfg fixes at compile time (kN, kK) in place of the run-time ones.
template <class Cfg>
FP4JIT_GEMM_CONSTEXPR GemmParams with_fixed_sizes(GemmParams p) {
  if constexpr (Cfg::kN > 0) p.N = Cfg::kN;
  if constexpr (Cfg::kK > 0) p.K = Cfg::kK;
  return p;
}

}  // namespace fp4jit::sm90
