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
// C[M, N] = epilogue(A[M, K] * B[N, K]^T), both operands K-major and quantized (core/quantized.hpp).
#pragma once

namespace fp4jit::sm90 {

// How the operands' scales enter the product; decides the tensor-core path.
enum class ScaleKind : int {
  ms = 0,  // per-row scales of A and of B (msfp4): fixed E4M3 expansion, QGMMA, scales in the epilogue
  mx = 1,  // 1x32 E8M0 blocks (mxfp4, tetrajet): shifted E4M3 expansion per K tile, QGMMA,
           //   exact per-tile promotion to FP32; multi-pass over exponent bands when the window fails
  nv = 2,  // 1x16 (or 16x16) UE4M3 / UE5M3 blocks + FP32 tensor scale (nvfp4, ue5m3): E2M1 x scale
           //   expanded to FP16 (UE4M3) or BF16 (UE5M3), HGMMA
};

// Block-scale code formats of the nv kind (numerics/minifloat.cuh).
enum class ScaleCode : int { ue4m3 = 0, ue5m3_nan = 1, ue5m3_finite = 2, ue5m3_ieee = 3 };

enum class OutType : int { bf16 = 0, f16 = 1, f32 = 2 };

struct GemmConfigBase {
  static constexpr ScaleKind kKind = ScaleKind::mx;
  static constexpr ScaleCode kScaleCode = ScaleCode::ue4m3;  // nv only
  static constexpr int kABlockRows = 1;                      // nv: 1 (1x16) or 16 (16x16)
  static constexpr int kBBlockRows = 1;
  static constexpr int BLOCK_M = 128;  // two consumer warpgroups of 64 rows
  static constexpr int BLOCK_N = 128;  // 64..256, a multiple of 64
  static constexpr int kPackedStages = 6;    // TMA ring of packed tiles
  static constexpr int kExpandedStages = 3;  // ring of expanded B tiles
  static constexpr OutType kOut = OutType::bf16;
  static constexpr int kRasterGroup = 8;       // tiles of the grouped dimension per raster band
  static constexpr bool kRasterAlongM = true;  // consecutive tiles walk M inside a band of N
  static constexpr int kClusterM = 1, kClusterN = 1;  // TMA multicast: not implemented yet
  static constexpr int kPromoteTiles = 0;  // ms: promote the accumulator every N K tiles (0: never)
  static constexpr int kTransformWGs = 1;  // 1 or 2 transform warpgroups (B expansion split by rows)
  // Registers per thread after setmaxnreg (0: no setmaxnreg, every role keeps the launch
  // allocation, 168 with one transform warpgroup). ptxas compiles each role's code for its value;
  // the split must fit the launch allocation (traits.cuh): 128 * 104 + 256 * 200 = 384 * 168.
  static constexpr int kTransformRegs = 104, kConsumerRegs = 200;
  // nv: expand both B rows of a thread interleaved (more independent work per instruction stream).
  static constexpr bool kNvInterleave = false;
  // Measurement only (wrong results): 1 skips the B expansion, 2 the A expansion, 4 the wgmmas.
  static constexpr int kAblate = 0;
};

// Runtime arguments (one struct, passed by value).
struct GemmParams {
  int M, N, K;
  // mx / nv: block-scale codes [rows / block_rows, K / block] row-major, with their row pitch.
  const unsigned char* a_scale;
  const unsigned char* b_scale;
  int a_scale_ld, b_scale_ld;
  // ms: per-row FP32 decode scales of A [M] and B [N].
  const float* a_row_scale;
  const float* b_row_scale;
  // Epilogue: D = alpha * tensor_factor * (A B^T) [+ bias[n]] [+ beta * C]. tensor_factor is
  // 1 / (s_enc_a * s_enc_b) for two-level recipes, else 1.
  float alpha, beta, tensor_factor;
  const float* bias;  // [N] or null
  const void* c;      // [M, ldc] of the output type, or null (beta ignored)
  void* d;            // [M, ldd]
  long long ldc, ldd;
  // Split-K: splits > 1 needs workspace (tiles * splits * BLOCK_M * BLOCK_N floats) and zeroed
  // counters (one int per tile; the kernel leaves them zero again).
  int splits;
  float* workspace;
  int* counters;
  // Debugging: when set, each CTA publishes its progress at progress[4 * blockIdx.x + i]:
  // 0 K tiles expanded, 1 K tiles issued to TMA, 2 / 3 stages consumed by consumer warpgroup 0 / 1.
  unsigned* progress;
};

}  // namespace fp4jit::sm90
