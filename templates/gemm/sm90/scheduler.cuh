// Persistent work distribution of the sm90 GEMM: a work unit is (output tile, K split). CTA b
// takes units b, b + gridDim.x, ...; every role of the CTA walks the same sequence. Split-K splits
// every tile alike (TileScheduler) or, stream-K, as the CTAs' equal runs cut it
// (StreamScheduler).
//
// Raster order: tiles are grouped into bands of kRasterGroup tiles along M (or N); inside a band
// consecutive tiles walk the grouped dimension first, so the CTAs running at the same time share
// one operand tile of the other dimension and a few of the grouped one (L2 reuse).
#pragma once
#include "gemm/sm90/heuristic.cuh"
#include "numerics/common.cuh"

namespace fp4jit::sm90 {

struct WorkUnit {
  int tile;              // linear tile index (the split-K counter / workspace slot)
  int split;             // K split of the tile
  int count;             // the tile's K splits (the units splitk_reduce sums)
  int m0, n0;            // first row and column of the output tile
  int kt_begin, kt_end;  // K tiles [begin, end)
};

// Output tile t's first row and column in the raster order above.
template <int BLOCK_M, int BLOCK_N, int kGroup, bool kAlongM>
__device__ __forceinline__ void tile_origin(int tiles_m, int tiles_n, int t, int& m0, int& n0) {
  const int grouped = kAlongM ? tiles_m : tiles_n;
  const int other = kAlongM ? tiles_n : tiles_m;
  const int per_band = kGroup * other;
  const int band = t / per_band;
  const int first = band * kGroup;
  const int size = grouped - first < kGroup ? grouped - first : kGroup;
  const int local = t - band * per_band;
  const int g = first + local % size;
  const int o = local / size;
  m0 = (kAlongM ? g : o) * BLOCK_M;
  n0 = (kAlongM ? o : g) * BLOCK_N;
}

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
    w.count = splits;
    // Balanced split of the K tiles: non-empty whenever splits <= k_tiles.
    w.kt_begin = static_cast<int>((static_cast<long long>(w.split) * k_tiles) / splits);
    w.kt_end = static_cast<int>((static_cast<long long>(w.split + 1) * k_tiles) / splits);
    tile_origin<BLOCK_M, BLOCK_N, kGroup, kAlongM>(tiles_m, tiles_n, w.tile, w.m0, w.n0);
    return w;
  }
};

// Stream-K: every tile's K units (K tiles, or segments) in one sequence, tile after tile, cut
// into `ctas` runs of equal length (to one unit), run b for CTA b; where a run ends inside a tile
// the next CTA's run goes on with it. CTA b's work units are the pieces of its run, one per tile
// it touches: unit b + j * ctas for its j-th piece, so that every role's loop `for (u = b; u <
// units; u += ctas)` walks exactly them (units is CTA b's own bound). A tile's pieces are the
// splits of split-K (count: how many CTAs' runs touch it; split: this CTA's place among them),
// which splitk_reduce sums in split order. For grids whose tiles leave SMs idle: with T tiles of
// U units on G CTAs each CTA runs T * U / G units instead of U (one tile) or 2 U (two).
template <int BLOCK_M, int BLOCK_N, int kGroup, bool kAlongM>
struct StreamScheduler {
  int tiles_m, tiles_n, k_units, ctas, cta, units;
  long long total, run_begin, run_end;

  // The CTA whose run holds unit s of the sequence; where run b starts (heuristic.cuh's cuts).
  __device__ __forceinline__ int cta_of(long long s) const {
    return static_cast<int>(stream_k_run_of(s, total, ctas));
  }
  __device__ __forceinline__ long long run_start(int b) const {
    return stream_k_run_start(b, total, ctas);
  }

  __device__ __forceinline__ StreamScheduler(int M, int N, int k_units_, int ctas_, int cta_)
      : tiles_m((M + BLOCK_M - 1) / BLOCK_M),
        tiles_n((N + BLOCK_N - 1) / BLOCK_N),
        k_units(k_units_),
        ctas(ctas_),
        cta(cta_) {
    total = static_cast<long long>(tiles_m) * tiles_n * k_units;
    run_begin = run_start(cta);
    run_end = run_start(cta + 1);
    // Pieces of the run: the tiles from its first unit's to its last unit's (none if empty).
    const int pieces = run_end > run_begin
                           ? static_cast<int>((run_end - 1) / k_units - run_begin / k_units) + 1
                           : 0;
    units = pieces > 0 ? cta + (pieces - 1) * ctas + 1 : 0;
  }

  __device__ __forceinline__ WorkUnit unit(int u) const {
    WorkUnit w;
    const int j = (u - cta) / ctas;
    w.tile = static_cast<int>(run_begin / k_units) + j;
    const long long t0 = static_cast<long long>(w.tile) * k_units;
    const long long b = run_begin > t0 ? run_begin : t0;
    const long long e = run_end < t0 + k_units ? run_end : t0 + k_units;
    w.kt_begin = static_cast<int>(b - t0);
    w.kt_end = static_cast<int>(e - t0);
    const int lo = cta_of(t0), hi = cta_of(t0 + k_units - 1);
    w.split = cta - lo;
    w.count = hi - lo + 1;
    tile_origin<BLOCK_M, BLOCK_N, kGroup, kAlongM>(tiles_m, tiles_n, w.tile, w.m0, w.n0);
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
