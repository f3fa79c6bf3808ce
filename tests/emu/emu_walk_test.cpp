// The persistent quantize kernels' walk over a grid of tiles or items (GridWalk in
// templates/quantize/device.cuh) on the host, forward (quantize passes) and in reverse (stats
// passes), for CTA counts below a grid row, above it and above the whole grid. Every CTA walks
// t = b, b + step, ... below the total, as quantize_tile and quantize_rows do; the union of the
// walks must be every tile once, each at the row-major place its flat index names.
#include "tests/emu/cuda_shim.hpp"
// clang-format off: the shim goes first
#include "quantize/device.cuh"
// clang-format on

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace fp4jit::test {
namespace {

using kern::i64;

// Runs every CTA's walk over a rows x cols grid: each flat index once, at its row-major place.
template <bool kReverse>
void check_grid(i64 rows, i64 cols, i64 ctas) {
  SCOPED_TRACE(testing::Message() << rows << "x" << cols << " tiles, " << ctas << " CTAs"
                                  << (kReverse ? ", reverse" : ""));
  const i64 total = rows * cols;
  std::vector<int> count(static_cast<std::size_t>(total), 0);
  for (i64 b = 0; b < ctas; ++b) {
    kern::GridWalk<kReverse> w(b, ctas, cols, total);
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
  }
}

}  // namespace
}  // namespace fp4jit::test
