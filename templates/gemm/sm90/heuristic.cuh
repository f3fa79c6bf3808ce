// Default launch choice of the sm90 GEMM for any shape: tile width, split-K and grid. Plain
// constexpr C++ (no headers), usable by the host library, the code generator and NVRTC alike.
//
// Rules (first version, from the FLOP-per-byte of each tile and the wave count):
//   * BLOCK_N: ms and nv prefer 256 (two 64x256 consumer tiles read each expanded B stage), mx
//     and ms_grad are limited to 128 by their two accumulator sets; 128 also wherever it gives a
//     fuller last wave.
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

FP4JIT_GEMM_CONSTEXPR int ceil_div_i(int a, int b) { return (a + b - 1) / b; }

FP4JIT_GEMM_CONSTEXPR GemmChoice choose_gemm(ScaleKind kind, int M, int N, int K, int sms) {
  const int block_k = (kind == ScaleKind::nv || kind == ScaleKind::ms_grad) ? 64 : 128;
  const int k_tiles = ceil_div_i(K, block_k);
  const int tm = ceil_div_i(M, 128);
  int best_bn = 128;
  if (kind == ScaleKind::ms || kind == ScaleKind::nv) {
    // Fraction of the SM-waves doing useful work, with a bonus for the wider tile.
    const int t256 = tm * ceil_div_i(N, 256), t128 = tm * ceil_div_i(N, 128);
    const double e256 = static_cast<double>(t256) / (ceil_div_i(t256, sms) * sms);
    const double e128 = static_cast<double>(t128) / (ceil_div_i(t128, sms) * sms);
    // Wider tiles read fewer bytes per FLOP: worth ~12% of utilisation.
    best_bn = e256 * 1.12 >= e128 ? 256 : 128;
    // Narrow outputs waste half of a 256-wide tile.
    if (N <= 128) best_bn = 128;
  }
  const int tiles = tm * ceil_div_i(N, best_bn);
  int splits = 1;
  if (2 * tiles <= sms) {
    splits = sms / tiles;
    const int max_splits = k_tiles / 4 > 1 ? k_tiles / 4 : 1;
    if (splits > max_splits) splits = max_splits;
    if (splits > 16) splits = 16;
    if (splits < 1) splits = 1;
  }
  const int units = tiles * splits;
  return GemmChoice{best_bn, splits, units < sms ? units : sms};
}

}  // namespace fp4jit::sm90
