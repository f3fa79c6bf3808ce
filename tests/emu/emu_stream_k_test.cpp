// The swapped GEMM's stream-K schedule (templates/gemm/sm90/scheduler.cuh, StreamScheduler) on the
// CPU, for the grids the host plans (codegen::sm90_stream_k): every CTA's loop `for (u = b; u <
// units; u += ctas)` walks pieces of its own run; together the pieces cover every (tile, K unit)
// exactly once, the runs differ in length by at most one unit, a tile's pieces carry splits 0 ..
// count - 1 in K order with the same count, every tile sits where TileScheduler puts it, and the
// most pieces of a tile is the host's split count (the workspace slots per tile).
#include "tests/emu/cuda_shim.hpp"
// clang-format off: the shim first
#include "gemm/sm90/scheduler.cuh"
// clang-format on

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "codegen/gemm.hpp"

namespace fp4jit::test {
namespace {

constexpr int kBlockM = 64, kBlockN = 128, kGroup = 8;
using Stream = sm90::StreamScheduler<kBlockM, kBlockN, kGroup, true>;
using Tiles = sm90::TileScheduler<kBlockM, kBlockN, kGroup, true>;

struct Piece {
  int cta, split, count, begin, end, m0, n0;
};

void check_schedule(int M, int N, int k_units, int sm_count) {
  SCOPED_TRACE(testing::Message() << M << " x " << N << ", " << k_units << " K units, " << sm_count
                                  << " SMs");
  const std::int64_t tiles =
      static_cast<std::int64_t>((M + kBlockM - 1) / kBlockM) * ((N + kBlockN - 1) / kBlockN);
  const codegen::StreamK plan = codegen::sm90_stream_k(tiles, k_units, sm_count);
  const int ctas = plan.grid;
  ASSERT_EQ(ctas, std::min<std::int64_t>(sm_count, tiles * k_units));
  const Tiles reference(M, N, k_units, 1);
  std::map<int, std::vector<Piece>> by_tile;
  std::vector<int> covered(static_cast<std::size_t>(tiles * k_units), 0);
  std::int64_t shortest = tiles * k_units, longest = 0;
  for (int b = 0; b < ctas; ++b) {
    const Stream s(M, N, k_units, ctas, b);
    std::int64_t run = 0;
    int last_tile = -1;
    for (int u = b; u < s.units; u += ctas) {
      const sm90::WorkUnit w = s.unit(u);
      ASSERT_LT(w.kt_begin, w.kt_end) << "an empty piece, CTA " << b << " unit " << u;
      ASSERT_GE(w.kt_begin, 0);
      ASSERT_LE(w.kt_end, k_units);
      ASSERT_GE(w.tile, 0);
      ASSERT_LT(w.tile, tiles);
      if (last_tile >= 0) {
        ASSERT_EQ(w.tile, last_tile + 1) << "CTA " << b << ": tiles in order";
      }
      last_tile = w.tile;
      const sm90::WorkUnit r = reference.unit(w.tile);
      EXPECT_EQ(w.m0, r.m0) << "tile " << w.tile;
      EXPECT_EQ(w.n0, r.n0) << "tile " << w.tile;
      for (int k = w.kt_begin; k < w.kt_end; ++k)
        ++covered[static_cast<std::size_t>(w.tile) * k_units + k];
      run += w.kt_end - w.kt_begin;
      by_tile[w.tile].push_back({b, w.split, w.count, w.kt_begin, w.kt_end, w.m0, w.n0});
    }
    shortest = std::min(shortest, run);
    longest = std::max(longest, run);
  }
  for (std::size_t i = 0; i < covered.size(); ++i)
    ASSERT_EQ(covered[i], 1) << "tile " << i / k_units << " K unit " << i % k_units;
  EXPECT_LE(longest - shortest, 1) << "unequal runs";
  int most = 0;
  for (auto& [tile, pieces] : by_tile) {
    std::sort(pieces.begin(), pieces.end(),
              [](const Piece& a, const Piece& b) { return a.split < b.split; });
    const int count = static_cast<int>(pieces.size());
    most = std::max(most, count);
    for (int i = 0; i < count; ++i) {
      const Piece& p = pieces[static_cast<std::size_t>(i)];
      EXPECT_EQ(p.split, i) << "tile " << tile;
      EXPECT_EQ(p.count, count) << "tile " << tile;
      // Split order is K order (splitk_reduce sums the splits in it).
      if (i > 0) {
        EXPECT_EQ(p.begin, pieces[static_cast<std::size_t>(i - 1)].end) << "tile " << tile;
      }
    }
    EXPECT_EQ(pieces.front().begin, 0);
    EXPECT_EQ(pieces.back().end, k_units);
  }
  EXPECT_EQ(plan.splits, most) << "the host's workspace slots per tile";
}

TEST(EmuStreamK, RunsCoverEveryTileOnceWithTheHostsSplits) {
  // The 128-token GEMMs of the shapes: 108 tiles of 20 segments (N = 13824, K = 5120, one
  // tile of A's rows), 86 of 16 (11008 x 4096), 64 of 16 (4096 x 4096, two tiles of A's rows).
  check_schedule(64, 13824, 20, 132);
  check_schedule(64, 11008, 16, 132);
  check_schedule(128, 4096, 16, 132);
  // Fewer units than SMs (a CTA per unit, three pieces a tile); more tiles than SMs; one tile;
  // ragged M and N; a grid that does not divide the units.
  check_schedule(64, 256, 3, 10);
  check_schedule(1000, 3000, 5, 132);
  check_schedule(64, 128, 1, 132);
  check_schedule(100, 1000, 7, 13);
  check_schedule(300, 640, 9, 130);
}

TEST(EmuStreamK, HostSplitsOfSmallCases) {
  // 3 tiles of 4 units on 5 CTAs: runs [0, 2) [2, 4) [4, 7) [7, 9) [9, 12), two pieces a tile.
  EXPECT_EQ(codegen::sm90_stream_k(3, 4, 5).grid, 5);
  EXPECT_EQ(codegen::sm90_stream_k(3, 4, 5).splits, 2);
  // 2 tiles of 3 units on 10 SMs: 6 CTAs of one unit each, three pieces a tile.
  EXPECT_EQ(codegen::sm90_stream_k(2, 3, 10).grid, 6);
  EXPECT_EQ(codegen::sm90_stream_k(2, 3, 10).splits, 3);
  // Whole tiles per CTA: no piece is shared.
  EXPECT_EQ(codegen::sm90_stream_k(264, 4, 132).splits, 1);
}

}  // namespace
}  // namespace fp4jit::test
