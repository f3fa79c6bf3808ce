// Persistent work distribution of the sm90 GEMM: a work unit is (output tile, K split). CTA b
// takes units b, b + gridDim.x, ...; every role of the CTA walks the same sequence.
//
// Raster order: tiles are grouped into bands of kRasterGroup tiles along M (or N); inside a band
// consecutive tiles walk the grouped dimension first, so the CTAs running at the same time share
// one operand tile of the other dimension and a few of the grouped one (L2 reuse).
#pragma once

namespace fp4jit::sm90 {

struct WorkUnit {
  int tile;              // linear tile index (the split-K counter / workspace slot)
  int split;             // K split of the tile
  int m0, n0;            // first row and column of the output tile
  int kt_begin, kt_end;  // K tiles [begin, end)
};

template <int BLOCK_M, int BLOCK_N, int kGroup, bool kAlongM>
struct TileScheduler {
  int tiles_m, tiles_n, splits, k_tiles, units;

  __device__ __forceinline__ TileScheduler(int M, int N, int k_tiles_, int splits_)
      : tiles_m((M + BLOCK_M - 1) / BLOCK_M),
        tiles_n((N + BLOCK_N - 1) / BLOCK_N),
        splits(splits_),
        k_tiles(k_tiles_),
        units(tiles_m * tiles_n * splits_) {}

  __device__ __forceinline__ WorkUnit unit(int u) const {
    WorkUnit w;
    w.tile = u / splits;
    w.split = u - w.tile * splits;
    // Balanced split of the K tiles: non-empty whenever splits <= k_tiles.
    w.kt_begin = static_cast<int>((static_cast<long long>(w.split) * k_tiles) / splits);
    w.kt_end = static_cast<int>((static_cast<long long>(w.split + 1) * k_tiles) / splits);
    const int grouped = kAlongM ? tiles_m : tiles_n;
    const int other = kAlongM ? tiles_n : tiles_m;
    const int per_band = kGroup * other;
    const int band = w.tile / per_band;
    const int first = band * kGroup;
    const int size = grouped - first < kGroup ? grouped - first : kGroup;
    const int local = w.tile - band * per_band;
    const int g = first + local % size;
    const int o = local / size;
    w.m0 = (kAlongM ? g : o) * BLOCK_M;
    w.n0 = (kAlongM ? o : g) * BLOCK_N;
    return w;
  }
};

// Units whose K range counts promotion segments of `period` K tiles (the staged and swapped
// kernels split K by whole segments): the range in K tiles, clipped to the last one.
__device__ __forceinline__ void segments_to_k_tiles(WorkUnit& w, int period, int k_tiles) {
  w.kt_begin *= period;
  w.kt_end = w.kt_end * period < k_tiles ? w.kt_end * period : k_tiles;
}

}  // namespace fp4jit::sm90
