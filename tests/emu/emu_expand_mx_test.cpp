// The mx path of the staged sm90 GEMM's expansion pass on the CPU emulator: each expanded value,
// times its factor (per segment and row; B of the staged kernel: per row over all of K), equals
// E2M1 times its block scale exactly; a scale below the window (of a segment, or of B's whole row)
// sets the flag, one with all-zero codes does not; factors applied apart outside 2^+-64 set it
// too; NaN scales give NaN factors. Ragged shapes (rows ending inside a warp, K ending inside a
// segment or a warp's chunks); outputs written over a poisoned buffer and nothing past them.
#include "tests/emu/emu_expand.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace fp4jit::test {
namespace {

using namespace expand;  // NOLINT: the suite's helpers

TEST(EmuExpand, MxEveryValueTimesItsSegmentFactorIsExact) {
  std::mt19937 rng(11);
  for (auto [rows, k] : {std::pair{70, 1440}, std::pair{33, 4096}}) {
    Operand a = mx_operand(rows, k, 14, rng);
    expand<Cfg<ScaleKind::mx, false, 4>>(a);
    EXPECT_EQ(a.flag, 0u);
    check_mx<4>(a);
    Operand b = mx_operand(rows, k, 14, rng);
    expand<Cfg<ScaleKind::mx, true, 1>>(b);
    EXPECT_EQ(b.flag, 0u);
    check_mx<1>(b);
  }
}

// A of the swapped kernel (period 2, its fragment order), two chunks per thread like every mx
// expansion but B's whole-row one (units t and t + 256 of a CTA's 512): the last CTA's chunks
// ending inside its second 256 (3 x 4096: 384 chunks), inside its first (129 x 1440, K ending
// inside a segment: 6192 chunks, 48 in the last CTA) and at its end (8 x 2048: 512).
TEST(EmuExpand, MxInTheSwappedKernelsFragmentOrder) {
  std::mt19937 rng(18);
  for (auto [rows, k] : {std::pair{3, 4096}, std::pair{129, 1440}, std::pair{8, 2048}}) {
    Operand a = mx_operand(rows, k, 14, rng);
    expand<Cfg<ScaleKind::mx, false, 2, ScaleCode::ue4m3, 1, true>>(a);
    EXPECT_EQ(a.flag, 0u);
    check_mx<2, true>(a);
  }
}

TEST(EmuExpand, MxScaleBelowTheSegmentWindowSetsTheFlag) {
  std::mt19937 rng(12);
  Operand a = mx_operand(40, 1024, 14, rng);
  // Row 5, segment 1 (blocks 16..31, K tiles 4..7 of 128 with a period of 4): tile 4 at scale
  // 135, tiles 5..7 at 120 with all-zero codes except block 28: every K tile is inside its own
  // window, the segment is not (15 binades).
  const int blocks = 1024 / 32;
  std::uint8_t* row5 = &a.codes[5 * 512];
  for (int b = 16; b < 32; ++b) {
    a.scale[5 * blocks + b] = b < 20 ? 135 : 120;
    for (int j = 0; j < 16; ++j) row5[16 * b + j] = b < 20 ? 0x31 : (b == 28 ? 0x22 : 0);
  }
  Operand one_tile = a;
  expand<Cfg<ScaleKind::mx, false, 4>>(a);
  EXPECT_EQ(a.flag, kMark);
  expand<Cfg<ScaleKind::mx, false, 1>>(one_tile);
  EXPECT_EQ(one_tile.flag, 0u);
  check_mx<1>(one_tile);
  // The same spread with the low block's codes all zero: no flag.
  for (int j = 0; j < 16; ++j) row5[16 * 28 + j] = 0;
  expand<Cfg<ScaleKind::mx, false, 4>>(a);
  EXPECT_EQ(a.flag, 0u);
  check_mx<4>(a);
}

TEST(EmuExpand, MxNanScaleGivesANanFactor) {
  std::mt19937 rng(13);
  Operand a = mx_operand(9, 512, 10, rng);
  a.scale[3 * 16 + 2] = 0xFF;
  expand<Cfg<ScaleKind::mx, false, 4>>(a);
  EXPECT_TRUE(std::isnan(a.factor[0 * a.factor_ld + 3]));
  EXPECT_FALSE(std::isnan(a.factor[0 * a.factor_ld + 4]));
}

TEST(EmuExpand, MxWholeRowBEveryValueTimesItsRowFactorIsExact) {
  std::mt19937 rng(21);
  // Rows ending inside a warp and a CTA; K ending inside a warp's 32 chunks and inside a segment.
  for (auto [rows, k] :
       {std::pair{70, 1440}, std::pair{33, 4096}, std::pair{9, 11008}, std::pair{8, 96}}) {
    Operand b = mx_operand(rows, k, 14, rng);  // at most 14 binades below the row's top
    expand<MxSplitB>(b);
    EXPECT_EQ(b.flag, 0u) << rows << "x" << k;
    check_mx<0>(b);
    for (int r = rows; r < b.factor_ld; ++r) ASSERT_EQ(b.factor[r], -1.0f) << "past the rows";
    // A of the same GEMM: per segment, as without split factors.
    Operand a = mx_operand(rows, k, 14, rng);
    Operand a0 = a;
    expand<MxSplitA>(a);
    expand<Cfg<ScaleKind::mx, false, 4>>(a0);
    EXPECT_EQ(a.flag, 0u);
    EXPECT_EQ(a.out, a0.out);
    EXPECT_EQ(a.factor, a0.factor);
  }
}

TEST(EmuExpand, MxWholeRowBWindowIsTheRowsNotTheSegments) {
  std::mt19937 rng(22);
  Operand b = mx_operand(12, 2048, 6, rng);
  // Row 7: segment 0 (blocks 0..15) at 140, segment 2 (blocks 32..47) at 120, codes nonzero:
  // each segment inside its own window, the row 20 binades wide.
  const int blocks = 2048 / 32;
  for (int blk = 0; blk < blocks; ++blk) {
    b.scale[7 * blocks + blk] = blk < 16 ? 140 : 120 + static_cast<int>(blk % 3);
    for (int j = 0; j < 16; ++j) b.codes[7 * 1024 + 16 * blk + j] = 0x21;
  }
  Operand per_segment = b;
  expand<Cfg<ScaleKind::mx, true, 4>>(per_segment);
  EXPECT_EQ(per_segment.flag, 0u);
  check_mx<4>(per_segment);
  Operand whole = b;
  expand<MxSplitB>(whole);
  EXPECT_EQ(whole.flag, kMark);
  // The low blocks' codes all zero: they take no part, and the row's window holds.
  for (int blk = 16; blk < blocks; ++blk)
    for (int j = 0; j < 16; ++j) b.codes[7 * 1024 + 16 * blk + j] = 0;
  expand<MxSplitB>(b);
  EXPECT_EQ(b.flag, 0u);
  check_mx<0>(b);
}

TEST(EmuExpand, MxSplitFactorsOutsideTheirRangeSetTheFlag) {
  std::mt19937 rng(23);
  // ref - 133 within [-64, 64]: codes 69 .. 197 (scales 2^-58 .. 2^70).
  for (int top : {68, 69, 197, 198}) {
    const bool inside = top >= 69 && top <= 197;
    for (bool operand_b : {false, true}) {
      Operand op = mx_operand(5, 1024, 0, rng);  // every block of a row at its row's top
      for (int blk = 0; blk < 32; ++blk) op.scale[2 * 32 + blk] = static_cast<std::uint8_t>(top);
      for (int j = 0; j < 16; ++j) op.codes[2 * 512 + j] = 0x43;
      if (operand_b)
        expand<MxSplitB>(op);
      else
        expand<MxSplitA>(op);
      EXPECT_EQ(op.flag, inside ? 0u : kMark) << "top " << top << " operand_b " << operand_b;
      if (operand_b)
        check_mx<0>(op);
      else
        check_mx<4>(op);
      // Without split factors the same codes never flag: the product of both factors is applied.
      Operand plain = mx_operand(5, 1024, 0, rng);
      for (int blk = 0; blk < 32; ++blk) plain.scale[2 * 32 + blk] = static_cast<std::uint8_t>(top);
      expand<Cfg<ScaleKind::mx, false, 4>>(plain);
      EXPECT_EQ(plain.flag, 0u);
    }
  }
}

TEST(EmuExpand, MxWholeRowBNanScaleGivesANanRowFactor) {
  std::mt19937 rng(24);
  Operand b = mx_operand(9, 1536, 10, rng);
  b.scale[3 * 48 + 40] = 0xFF;
  expand<MxSplitB>(b);
  EXPECT_EQ(b.flag, 0u);
  EXPECT_TRUE(std::isnan(b.factor[3]));
  EXPECT_FALSE(std::isnan(b.factor[4]));
  for (int j = 40 * 32; j < 41 * 32; ++j)  // the NaN block's values are NaN
    EXPECT_TRUE(std::isnan(e4m3(b.out[static_cast<std::size_t>(3) * b.k + j]))) << j;
}

}  // namespace
}  // namespace fp4jit::test
