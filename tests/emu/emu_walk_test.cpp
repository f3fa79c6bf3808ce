// The persistent quantize kernels' walk over a grid of tiles or items (GridWalk in
// templates/quantize/device.cuh) on the host, forward (quantize passes) and in reverse (stats
// passes), for CTA counts below a grid row, above it and above the whole grid. Every CTA walks
// t = b, b + step, ... below the total, as quantize_tile and quantize_rows do; the union of the
// walks must be every tile once, each at the row-major place its flat index names. And how a raw
// tile's transposed operand is cut into units (col_units in templates/quantize/quantize_tile.cuh).
#include "tests/emu/cuda_shim.hpp"
// clang-format off: the shim goes first
#include "quantize/device.cuh"
#include "quantize/quantize_tile.cuh"
// clang-format on

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace fp4jit::test {
namespace {

using kern::i64;

// Runs every CTA's walk over a rows x cols grid: each flat index once, at its row-major place.
// Index: the walk's position type (int: quantize_tile's 32-bit walk).
template <bool kReverse, class Index = i64>
void check_grid(i64 rows, i64 cols, i64 ctas) {
  SCOPED_TRACE(testing::Message() << rows << "x" << cols << " tiles, " << ctas << " CTAs"
                                  << (kReverse ? ", reverse" : "") << ", " << sizeof(Index) * 8
                                  << "-bit");
  const i64 total = rows * cols;
  std::vector<int> count(static_cast<std::size_t>(total), 0);
  for (i64 b = 0; b < ctas; ++b) {
    kern::GridWalk<kReverse, Index> w(b, ctas, cols, total);
    for (i64 t = b; t < total; t += ctas, w.next()) {
      const i64 i = kReverse ? total - 1 - t : t;
      ASSERT_EQ(w.r, i / cols) << "flat index " << i;
      ASSERT_EQ(w.c, i % cols) << "flat index " << i;
      ++count[static_cast<std::size_t>(i)];
    }
    // Moves past the end are made (the prefetching walker runs ahead) and must stay harmless.
    for (int k = 0; k < 3; ++k) w.next();
  }
  for (i64 i = 0; i < total; ++i)
    ASSERT_EQ(count[static_cast<std::size_t>(i)], 1) << "flat index " << i;
}

struct Grid {
  i64 rows, cols, ctas;
};
// One row, one column, steps below a row, above it (skipping whole rows) and above the grid.
const Grid kGrids[] = {{128, 64, 396}, {256, 128, 396}, {37, 5, 7},  {131, 3, 64},
                       {5, 17, 1},     {1, 9, 4},       {16, 1, 3},  {33, 64, 1000},
                       {64, 2, 100},   {20, 20, 33},    {9, 4, 100}, {300, 7, 132}};

TEST(EmuWalk, GridWalkVisitsEveryTileOnceRowByRow) {
  for (const Grid& g : kGrids) {
    check_grid<false>(g.rows, g.cols, g.ctas);
    check_grid<true>(g.rows, g.cols, g.ctas);
    check_grid<false, int>(g.rows, g.cols, g.ctas);
    check_grid<true, int>(g.rows, g.cols, g.ctas);
  }
}

// In a pair's halves the transposed operand's units are column words unless those leave threads
// of its half idle; then one column each. The cases the kernels run, then every tile shape: the
// units cover each column of each row group once.
TEST(EmuTileUnits, TransposedUnitsFillTheirHalfWhereWordsCannot) {
  using kern::col_units;
  // mxfp4's large pairs: BF16, 64 x 128 tiles, 1 x 32 groups, 512 threads: 128 word units for
  // the 256 threads of the transposed half, so one column per unit.
  kern::ColUnits u = col_units(true, true, 512, 64, 128, 2, 32);
  EXPECT_TRUE(u.split);
  EXPECT_EQ(u.units, 256);
  EXPECT_EQ(u.unit_cols, 1);
  EXPECT_EQ(u.lines_per_row, 128);
  // 256 threads: 128 word units for 128 threads.
  u = col_units(true, true, 256, 64, 128, 2, 32);
  EXPECT_FALSE(u.split);
  EXPECT_EQ(u.units, 128);
  EXPECT_EQ(u.unit_cols, 2);
  EXPECT_EQ(u.lines_per_row, 64);
  // nvfp4's 1 x 16 groups on 512 threads: 256 word units already.
  u = col_units(true, true, 512, 64, 128, 2, 16);
  EXPECT_FALSE(u.split);
  EXPECT_EQ(u.units, 256);
  // Double quantization's column phase (no halves): words.
  u = col_units(true, false, 256, 64, 128, 2, 32);
  EXPECT_FALSE(u.split);
  EXPECT_EQ(u.units, 128);
  // FP32 input: one column per word, nothing to split.
  u = col_units(true, true, 512, 64, 64, 4, 32);
  EXPECT_FALSE(u.split);
  EXPECT_EQ(u.unit_cols, 1);
  EXPECT_EQ(col_units(false, false, 256, 64, 128, 2, 32).units, 0);
  for (int threads : {64, 128, 256, 512, 1024})
    for (int rows : {16, 32, 64, 128, 256})
      for (int cols : {32, 64, 128, 256})
        for (int in_bytes : {2, 4})
          for (int group : {16, 32}) {
            if (rows % group != 0) continue;
            SCOPED_TRACE(testing::Message() << threads << " threads, " << rows << "x" << cols
                                            << " of " << in_bytes << " bytes, groups of " << group);
            const kern::ColUnits c = col_units(true, true, threads, rows, cols, in_bytes, group);
            EXPECT_EQ(c.units * c.unit_cols * group, rows * cols);
            const int word_units = cols * in_bytes / 4 * (rows / group);
            EXPECT_EQ(c.split, in_bytes == 2 && word_units < threads / 2);
            EXPECT_EQ(c.units, c.split ? 2 * word_units : word_units);
          }
}

}  // namespace
}  // namespace fp4jit::test
