// Default launch choice of the sm90 GEMM for any shape: tile width, split-K and grid. Plain
// constexpr C++ (no headers), usable by the host library, the code generator and NVRTC alike.
//
// Rules (first version, from the FLOP-per-byte of each tile and the wave count):
//   * BLOCK_N: ms and nv prefer 256 (two 64x256 consumer tiles read each expanded B stage), mx
//     and ms_grad 128 in the fused kernel and 192 in the staged one (their two accumulator sets'
//     limit); 128 wherever it gives a fuller last wave (by 12 %, by 5 % for the staged 192: with
//     TMA stores of D, 192 columns ran 1.01-1.10x faster than 128 at LLaMA-7B shapes on an H100
//     and 0.96x at 4096^3, whose 192-wide tiles fill 89 % of the last wave against 97 %).
//   * split-K when the tiles fill less than half of the SMs: enough splits to fill them, at least
//     4 K tiles per split.
//   * persistent grid: min(work units, SMs).
#pragma once
#include "gemm/sm90/config.cuh"

namespace fp4jit::sm90 {

struct GemmChoice {
  int block_n;
  int splits;
  int grid;
};

FP4JIT_GEMM_CONSTEXPR int ceil_div_i(int a, int b) {
  return (a + b - 1) / b;
}

// Elements per K tile: 128 on the FP8 path, 64 on the 16-bit path (both kernels).
FP4JIT_GEMM_CONSTEXPR int sm90_block_k(ScaleKind kind) {
  return (kind == ScaleKind::nv || kind == ScaleKind::ms_grad) ? 64 : 128;
}

// Output tiles of 128 rows x block_n.
FP4JIT_GEMM_CONSTEXPR long long sm90_tiles(long long M, long long N, int block_n) {
  return ((M + 127) / 128) * ((N + block_n - 1) / block_n);
}

// Fraction of the SM-waves that does useful work.
FP4JIT_GEMM_CONSTEXPR double wave_fill(long long tiles, int sms) {
  return static_cast<double>(tiles) / static_cast<double>((tiles + sms - 1) / sms * sms);
}

// Split-K when the tiles fill less than half of the SMs: enough splits to fill them, at least 4
// K tiles per split, at most 16.
FP4JIT_GEMM_CONSTEXPR int split_k(long long tiles, int k_tiles, int sms) {
  if (2 * tiles > sms) return 1;
  long long splits = sms / tiles;
  const int max_splits = k_tiles / 4 > 1 ? k_tiles / 4 : 1;
  if (splits > max_splits) splits = max_splits;
  if (splits > 16) splits = 16;
  return splits < 1 ? 1 : static_cast<int>(splits);
}

// Stream-K's cuts, for the kernel's scheduler (scheduler.cuh, StreamScheduler) and the host's grid
// and workspace (codegen::sm90_stream_k) alike: the `total` K units of all tiles in one sequence,
// cut into `ctas` runs of equal length (to one unit); run b starts at unit b * total / ctas, and
// unit s lies in run ((s + 1) * ctas - 1) / total (the largest b whose run starts at or before s).
FP4JIT_GEMM_CONSTEXPR long long stream_k_run_start(long long b, long long total, long long ctas) {
  return b * total / ctas;
}
FP4JIT_GEMM_CONSTEXPR long long stream_k_run_of(long long s, long long total, long long ctas) {
  return ((s + 1) * ctas - 1) / total;
}

// staged: the staged kernel (staged.cuh); split: whether split-K may be chosen (the fallback of the
// staged and swapped paths runs unsplit: it needs no tile counters).
FP4JIT_GEMM_CONSTEXPR GemmChoice choose_gemm(ScaleKind kind, int M, int N, int K, int sms,
                                             bool staged = false, bool split = true) {
  const int k_tiles = ceil_div_i(K, sm90_block_k(kind));
  const bool promote = kind == ScaleKind::mx || kind == ScaleKind::ms_grad;
  // Wider tiles read fewer bytes per FLOP: worth ~12% of utilisation (5 % from 128 to 192).
  const int wide =
      staged ? (promote ? 192 : 256) : (kind == ScaleKind::ms || kind == ScaleKind::nv ? 256 : 128);
  const double worth = wide == 192 ? 1.05 : 1.12;
  int best_bn =
      wave_fill(sm90_tiles(M, N, wide), sms) * worth >= wave_fill(sm90_tiles(M, N, 128), sms) ? wide
                                                                                              : 128;
  // Narrow outputs waste half of a 256-wide tile (fused kernel).
  if (!staged && N <= 128) best_bn = 128;
  const long long tiles = sm90_tiles(M, N, best_bn);
  const int splits = split ? split_k(tiles, k_tiles, sms) : 1;
  const long long units = tiles * splits;
  return GemmChoice{best_bn, splits, static_cast<int>(units < sms ? units : sms)};
}

}  // namespace fp4jit::sm90
