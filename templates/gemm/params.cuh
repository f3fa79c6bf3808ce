// Runtime arguments of the FP4 GEMM kernels (sm90/ and sm100/), one struct passed by value, and
// the output types. Plain C++: the host library fills it.
//
// C[M, N] = epilogue(A[M, K] * B[N, K]^T), both operands K-major and quantized
// (core/quantized.hpp):
//   D = alpha * factor * (A B^T) [+ bias[n]] [+ beta * C]
// factor: the scales the kernel does not apply inside the product (per-row scales of ms, the
// tensor scales 1 / (s_enc_a s_enc_b) of two-level recipes, A's per-tensor scale of ms_grad).
#pragma once

// Plain constexpr helpers shared by the kernels (NVRTC needs them annotated) and the host library.
#if defined(__CUDACC__)
#define FP4JIT_GEMM_CONSTEXPR __host__ __device__ constexpr
#else
#define FP4JIT_GEMM_CONSTEXPR constexpr
#endif

namespace fp4jit::gemm {

enum class OutType : int { bf16 = 0, f16 = 1, f32 = 2 };
// The bias's element type (zero, as in a zero-initialized GemmParams: float32).
enum class BiasType : int { f32 = 0, bf16 = 1, f16 = 2 };

struct GemmParams {
  int M, N, K;
  // mx / nv: block-scale codes [rows / block_rows, K / block] row-major, with their row pitch.
  const unsigned char* a_scale;
  const unsigned char* b_scale;
  int a_scale_ld, b_scale_ld;
  // ms: per-row FP32 decode scales of A [M] and B [N]. ms_grad: a_row_scale is A's one
  // per-tensor decode scale, b_col_scale B's per-column (per-K) power-of-two decode scales [K].
  const float* a_row_scale;
  const float* b_row_scale;
  const float* b_col_scale;
  // Two-level recipes: device pointers to s_enc of A and B (null: 1); tensor_factor multiplies
  // on top (1 unless a caller folds something in).
  const float* a_tensor_scale;
  const float* b_tensor_scale;
  float alpha, beta, tensor_factor;
  const void* bias;  // [N] of bias_type, or null
  int bias_type;     // BiasType
  const void* c;     // [M, ldc] of the output type, or null (beta ignored)
  void* d;           // [M, ldd]
  long long ldc, ldd;
  // Split-K: splits > 1 needs workspace (tiles * splits * BLOCK_M * BLOCK_N floats) and zeroed
  // counters (one int per tile; the kernel leaves them zero again).
  int splits;
  float* workspace;
  int* counters;
  // Debugging: when set, each CTA publishes its progress at progress[4 * blockIdx.x + i]:
  // 0 K tiles expanded, 1 K tiles issued to TMA, 2 / 3 stages consumed by consumer warpgroup 0 / 1.
  unsigned* progress;
  // Staged sm90 path (gemm/sm90/staged.cuh): the FP32 factors of the expanded operands, one per
  // (promotion segment, row) at factor[seg * factor_ld + row] (null where the path has none;
  // mx's B: one per row over all of K, b_factor[row]), written by gemm/sm90/staged_expand.cuh.
  const float* a_factor;
  const float* b_factor;
  int a_factor_ld, b_factor_ld;
  // Window flag of the staged path (null: none): the expansion writes fallback_mark into it when a
  // shift falls outside the exact window. The staged kernel does nothing when it holds the mark;
  // the fused kernel launched after it with fallback_runs = 1 runs only when it does, so exactly
  // one of them writes D. The mark changes from call to call, so the flag needs no clearing: any
  // other value the word holds means "in the window" (a stale word that happened to equal the
  // mark would only send the product to the fused kernel, which computes it as well). A launch
  // replayed with the same parameters (a captured CUDA graph) keeps its mark, so after one window
  // failure its later replays also take the fused kernel: still exact, slower.
  const unsigned* fallback;
  int fallback_runs;
  unsigned fallback_mark;
  // Staged sm90 kernel with Cfg::kTmaStore: 1 when the launch passed a tensor map of D (its base
  // 16-byte aligned, its row pitch a multiple of 16 bytes), else 0 (register stores).
  int tma_store;
  // The direct small-M sm90 kernel (gemm/sm90/direct.cuh), which reads both operands' packed codes
  // itself (no tensor maps): their base pointers (16-byte aligned) and row pitches in bytes
  // (K / 2, multiples of 16). Null elsewhere.
  const unsigned char* a_codes;
  const unsigned char* b_codes;
  long long a_code_ld, b_code_ld;
  // The direct kernel: 1 makes a unit whose blocks leave the exact window stop the kernel (a
  // launch error) instead of recomputing it on the CUDA cores: proof that a call ran the tensor-
  // core path (FP4JIT_DIRECT_STRICT=1; diagnostics and tests). 0 otherwise.
  int direct_strict;
};

#if defined(__CUDACC__)
// Whether this call's expansion found a shift outside the exact window (GemmParams::fallback):
// the staged and swapped kernels then leave D to the fused fallback, which runs only then. Read at
// GPU scope (not from L1): the word was written by the expansion grid, which has completed
// whenever one of these kernels reads it.
__device__ __forceinline__ bool window_failed(const GemmParams& p) {
  if (p.fallback == nullptr) return false;
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p.fallback) : "memory");
  return v == p.fallback_mark;
}
#endif

// The expansion pass of the staged sm90 path: one quantized operand [rows, K] -> its tensor-core
// operand [rows, K] (E4M3 bytes, or FP16 / BF16) plus per-(segment, row) factors.
struct ExpandParams {
  const unsigned char* codes;  // packed E2M1 (ms_grad A: E5M2 bytes), rows of code_ld bytes
  long long code_ld;
  int rows, K;
  const unsigned char* scale;  // mx / nv: block-scale codes [rows / block_rows, K / block]
  int scale_ld;
  const float* col_scale;  // ms_grad B: power-of-two scale per K column [K]
  void* out;               // [rows, out_ld bytes]
  long long out_ld;
  float* factor;  // [segments, factor_ld] (mx, ms_grad B; mx B, kSplitFactors: [rows]); or null
  int factor_ld;
  unsigned* flag;      // set to flag_mark when a shift falls outside the window (mx, ms_grad B)
  unsigned flag_mark;  // GemmParams::fallback_mark of the GEMM it expands for
  // Swapped small-M path (gemm/sm90/swap.cuh, mx): the launch that expands A also checks the
  // block-scale codes of B, which the GEMM expands on chip, against the exact window: CTAs from
  // expand_ctas on take one (row, promotion segment) of B per thread and mark *flag when a code
  // lies more than 14 binades below the segment's largest (NaN codes aside). The check sees codes
  // only, so an all-zero block with a small scale counts too. check_scale null: no check.
  const unsigned char* check_scale;
  int check_rows, check_scale_ld;
  int expand_ctas;
};

// OCC compensation (gemm/occ_compensate.cuh).
struct OccTransposeArgs {
  const void* w;  // [rows, cols], row stride ld elements
  void* wt;       // [cols, rows], W's type
  long long rows, cols, ld;
};

struct OccRowsArgs {
  const long long* index;  // sorted: row * K + col of A
  const long long* count;  // entries (device)
  long long* row_ptr;      // [m + 1]: the first entry of each row, then the count
  long long m, k;
};

struct OccCompensateArgs {
  const long long* row_ptr;  // from occ_rows
  const long long* index;    // sorted: row * K + col of A
  const float* value;
  const void* wt;  // W^T [K, N], W's type
  void* d;         // [M, ldd] of the output type
  long long m, n, k, ldd;
  float alpha;
  unsigned vector_ok;  // W^T rows are 16-byte aligned and hold whole 8-column groups (N % 8 == 0)
};

}  // namespace fp4jit::gemm
