// The tunable parameters of the host kernels (the "config" of a host kernel key) and the ABI the
// generated functions share with the runtime.
#pragma once
#include <cstdint>
#include <string>

namespace fp4jit::host {

struct HostConfig {
  // quantize, dequantize, dge
  int vector_width = 16;  // lanes per vector operation: 4, 8, 16 or 32
  int band_rows =
      16;          // operand rows produced per band (rounded up to a multiple of the block height)
  int unroll = 1;  // unroll factor asked of the element loops (1: none)
  // GEMM micro-kernel: an mr x nr tile of C in registers over a K panel of kc
  int gemm_mr = 6;
  int gemm_nr = 32;  // a multiple of vector_width
  int gemm_kc = 256;
  int gemm_mc = 96;  // rows of A per task (a multiple of mr)
  // panels of nr columns per task (0: chosen per shape, about four tasks per thread); a launch
  // parameter only: it decides no binary
  int gemm_np = 0;
  // worker threads (0: every core); decides no binary, so it is not part of a kernel key
  int threads = 0;

  std::string text() const;       // the parameters that decide quantize/dequantize/dge binaries
  std::string gemm_text() const;  // ... and GEMM binaries
  std::string gemm_tuned_text() const;  // gemm_text() and, when set, np: a tuned GEMM config
  void validate() const;                // throws Error(invalid_argument)
};

// Parses "vw=8,band=32,unroll=2,mr=4,nr=16,kc=128,mc=64,np=4,threads=2" over `base` (any subset).
HostConfig parse_host_config(const std::string& text, HostConfig base = {});

// Arguments of the quantize kernels. Every field is 8 bytes: the IR reads field i at byte 8 * i.
struct QuantizeKernelArgs {
  const void* src = nullptr;      //  0 source tensor (the kernel's input dtype)
  std::int64_t src_stride = 0;    //  1 elements between source rows
  std::int64_t rows = 0;          //  2 operand rows (K-major layout)
  std::int64_t cols = 0;          //  3 operand columns (K)
  std::uint8_t* codes = nullptr;  //  4 [rows, row_bytes]
  std::int64_t row_bytes = 0;     //  5
  void* scales = nullptr;         //  6 [scale_count] uint8 codes or float32 values
  float* factors = nullptr;       //  7 [scale_count] encode factor per block; NaN: non-finite block
  std::uint32_t* stats = nullptr;  //  8 [scale_count] largest |x| bits per block (max-updated)
  std::int64_t scale_cols = 0;     //  9
  float* scratch = nullptr;        // 10 band_rows * cols floats, private to one call
  std::uint64_t seed = 0;          // 11 stochastic rounding
  std::uint64_t offset = 0;        // 12
  float s_enc = 1.0f;              // 13 two-level tensor scale
  std::uint32_t s_enc_pad = 0;
  std::uint32_t* amax_bits = nullptr;  // 14 largest finite |x| bits (max-updated), one word
};
static_assert(sizeof(QuantizeKernelArgs) == 15 * 8);

// Arguments of the dequantize kernel ([rows, cols] operand -> out) and the DGE kernel
// (w = src, out; stats as in quantize).
struct DequantizeKernelArgs {
  const std::uint8_t* codes = nullptr;  // 0
  std::int64_t row_bytes = 0;           // 1
  const void* scales = nullptr;         // 2
  std::int64_t scale_cols = 0;          // 3
  std::int64_t rows = 0;                // 4
  std::int64_t cols = 0;                // 5
  void* out = nullptr;                  // 6 output tensor (the kernel's output dtype)
  std::int64_t out_stride = 0;          // 7
  float s_enc = 1.0f;                   // 8
  std::uint32_t s_enc_pad = 0;
};
static_assert(sizeof(DequantizeKernelArgs) == 9 * 8);

// Arguments of the GEMM kernels: C[m, n] = alpha * A B^T for quantized A [m, k] and B [n, k]
// (both K-major). pack_a / pack_b decode panels of mr / nr rows into a_packed / b_packed
// ([panel][k][mr or nr] floats, rows past the end zero); compute runs tasks over blocks of mc rows
// x nb_panels panels of nr columns.
struct GemmKernelArgs {
  const std::uint8_t* a_codes = nullptr;  //  0
  std::int64_t a_row_bytes = 0;           //  1
  const void* a_scales = nullptr;         //  2
  std::int64_t a_scale_cols = 0;          //  3
  const std::uint8_t* b_codes = nullptr;  //  4
  std::int64_t b_row_bytes = 0;           //  5
  const void* b_scales = nullptr;         //  6
  std::int64_t b_scale_cols = 0;          //  7
  std::int64_t m = 0, n = 0, k = 0;       //  8 9 10
  float* a_packed = nullptr;              // 11
  float* b_packed = nullptr;              // 12
  float* c = nullptr;                     // 13
  std::int64_t ldc = 0;                   // 14
  float alpha = 1.0f;                     // 15
  std::uint32_t alpha_pad = 0;
  std::int64_t nb_panels = 1;  // 16 panels of nr columns per task
};
static_assert(sizeof(GemmKernelArgs) == 17 * 8);

// Arguments of the OCC kernels over source rows: clamp to [lo[r], hi[r]] (the row's quantiles),
// count the changed elements (count pass), then write the clamped row as float32 and the residual
// x - clamp(x) at index r * cols + c into slots from offset[r] (apply pass).
struct OccKernelArgs {
  const void* src = nullptr;       // 0 source tensor (the kernel's input dtype)
  std::int64_t src_stride = 0;     // 1
  std::int64_t cols = 0;           // 2
  const float* lo = nullptr;       // 3 [rows]
  const float* hi = nullptr;       // 4 [rows]
  std::int64_t* offset = nullptr;  // 5 [rows]: count pass writes counts, apply pass reads offsets
  float* out = nullptr;            // 6 [rows, cols] clamped values
  std::int64_t* residual_index = nullptr;  // 7
  float* residual_value = nullptr;         // 8
};
static_assert(sizeof(OccKernelArgs) == 9 * 8);

// Entry points: fn(args, begin, end) over rows (stats, encode, dequantize, dge) or blocks (scales).
using RangeKernel = void (*)(void* args, std::int64_t begin, std::int64_t end);

}  // namespace fp4jit::host
