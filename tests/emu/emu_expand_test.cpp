// The staged sm90 GEMM's expansion pass (templates/gemm/sm90/staged_expand.cuh) on the CPU
// emulator, for the ms, nv and ms_grad paths and the one-launch pair of operands (mx:
// emu_expand_mx_test.cpp): each expanded value, times its factor where the path has one, equals
// the dequantized element exactly (E2M1 times its block or column scale, E5M2 for msfp4's
// gradients); a scale outside the window of a segment sets the flag, one outside only with
// all-zero codes does not. Ragged shapes; every output byte is written over a poisoned buffer
// and nothing past the operand.
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

TEST(EmuExpand, MsIsE2M1TimesTwoToMinus6InEvenOddOrder) {
  std::mt19937 rng(14);
  Operand a = random_codes(37, 1440, rng);
  expand<Cfg<ScaleKind::ms, false, 1>>(a);
  for (int r = 0; r < a.rows; ++r)
    for (int j = 0; j < a.k; ++j) {
      // Inside every 8 elements: the even ones, then the odd ones.
      const int g8 = j / 8, i = j % 8, pos = 8 * g8 + (i % 2 == 0 ? i / 2 : 4 + i / 2);
      ASSERT_EQ(e4m3(a.out[static_cast<std::size_t>(r) * a.k + pos]),
                nx::e2m1_decode(a.code(r, j)) * 0x1p-6f)
          << r << " " << j;
    }
}

// kFrag: the swapped kernel's order (swap.cuh): inside each 32-element chunk, element pair q of
// packed word i (elements 8 i + 2 q, 8 i + 2 q + 1) at pair position 4 q + i.
template <ScaleCode kS, bool kBF16, int kRows, bool kFrag = false>
void nv_case(std::mt19937& rng) {
  const nx::MiniFloat fmt = kS == ScaleCode::ue4m3       ? nx::kUE4M3
                            : kS == ScaleCode::ue5m3_nan ? nx::kUE5M3Nan
                                                         : nx::kUE5M3Finite;
  Operand a = random_codes(50, 1440 - 32, rng);
  const int blocks = a.k / 16, scale_rows = (a.rows + kRows - 1) / kRows;
  a.scale.resize(static_cast<std::size_t>(scale_rows) * blocks);
  for (auto& s : a.scale) s = static_cast<std::uint8_t>(rng() % (nx::mf_max_code(fmt) + 1));
  expand<Cfg<ScaleKind::nv, false, 1, kS, kRows, kFrag>>(a);
  EXPECT_EQ(a.flag, 0u);
  for (int r = 0; r < a.rows; ++r)
    for (int j = 0; j < a.k; ++j) {
      const int l = j % 32, pos = kFrag ? j - l + 2 * (4 * (l % 8 / 2) + l / 8) + l % 2 : j;
      const std::size_t i = static_cast<std::size_t>(r) * a.k + pos;
      const float want =
          nx::e2m1_decode(a.code(r, j)) *
          nx::mf_decode(fmt, a.scale[static_cast<std::size_t>(r / kRows) * blocks + j / 16]);
      ASSERT_EQ(kBF16 ? bf16(a.out, i) : f16(a.out, i), want) << r << " " << j;
    }
}

TEST(EmuExpand, NvIsE2M1TimesTheBlockScaleIn16Bits) {
  std::mt19937 rng(15);
  nv_case<ScaleCode::ue4m3, false, 1>(rng);
  nv_case<ScaleCode::ue4m3, false, 16>(rng);  // 16x16 weight blocks
  nv_case<ScaleCode::ue5m3_nan, true, 1>(rng);
  nv_case<ScaleCode::ue5m3_finite, true, 16>(rng);
}

TEST(EmuExpand, NvInTheSwappedKernelsFragmentOrder) {
  std::mt19937 rng(17);
  nv_case<ScaleCode::ue4m3, false, 1, true>(rng);
  nv_case<ScaleCode::ue5m3_nan, true, 1, true>(rng);
}

TEST(EmuExpand, MsGradAIsTheE5M2CodeInFp16) {
  std::mt19937 rng(16);
  Operand a;
  a.rows = 21;
  a.k = 1440;
  a.codes.resize(static_cast<std::size_t>(a.rows) * a.k);
  for (auto& b : a.codes) b = static_cast<std::uint8_t>(rng());
  expand<Cfg<ScaleKind::ms_grad, false, 4>>(a);
  for (std::size_t i = 0; i < a.codes.size(); ++i) {
    const float want = nx::mf_decode(nx::kE5M2, a.codes[i]), got = f16(a.out, i);
    if (std::isnan(want))
      ASSERT_TRUE(std::isnan(got)) << i;
    else
      ASSERT_EQ(got, want) << i;
  }
}

// ms_grad B: E2M1 times a power-of-two scale per K column, the window 24 binades per segment.
Operand ms_grad_b(int rows, int k, std::mt19937& rng) {
  Operand b = random_codes(rows, k, rng);
  b.col_scale.resize(k);
  for (int j = 0; j < k; ++j)
    b.col_scale[j] = rng() % 13 == 0 ? 0.0f : std::ldexp(1.0f, 5 - static_cast<int>(rng() % 24));
  return b;
}

template <int kP>
void check_ms_grad_b(const Operand& b) {
  const int seg_k = 64 * kP;
  for (int r = 0; r < b.rows; ++r)
    for (int j = 0; j < b.k; ++j) {
      const std::size_t i = static_cast<std::size_t>(r) * b.k + j;
      const double want = static_cast<double>(nx::e2m1_decode(b.code(r, j))) * b.col_scale[j];
      const double got = static_cast<double>(f16(b.out, i)) *
                         b.factor[static_cast<std::size_t>(j / seg_k) * b.factor_ld + r];
      ASSERT_EQ(got, want) << r << " " << j;
    }
}

TEST(EmuExpand, MsGradBColumnScalesFoldedPerSegment) {
  std::mt19937 rng(17);
  // 70 rows: the last group of 8 rows a thread covers is partial.
  Operand b = ms_grad_b(70, 1440, rng);
  expand<Cfg<ScaleKind::ms_grad, true, 4>>(b);
  EXPECT_EQ(b.flag, 0u);
  check_ms_grad_b<4>(b);
  Operand c = ms_grad_b(17, 2048, rng);
  expand<Cfg<ScaleKind::ms_grad, true, 8>>(c);
  EXPECT_EQ(c.flag, 0u);
  check_ms_grad_b<8>(c);
}

TEST(EmuExpand, MsGradBColumnBelowTheWindowSetsTheFlagOnlyWithNonzeroCodes) {
  std::mt19937 rng(18);
  Operand b = ms_grad_b(24, 512, rng);
  b.col_scale[300] = std::ldexp(1.0f, 5 - 40);  // 40 binades below the others of its segment
  for (int r = 0; r < b.rows; ++r) {  // column 300's chunk (288..319) all zero in every row
    for (int j = 288; j < 320; j += 2) b.codes[static_cast<std::size_t>(r) * 256 + j / 2] = 0;
  }
  Operand zero = b;
  expand<Cfg<ScaleKind::ms_grad, true, 4>>(zero);
  EXPECT_EQ(zero.flag, 0u);
  b.codes[static_cast<std::size_t>(19) * 256 + 300 / 2] = 0x03;  // row 19: nonzero codes there
  expand<Cfg<ScaleKind::ms_grad, true, 4>>(b);
  EXPECT_EQ(b.flag, kMark);
}

// The one-launch expansion of both operands writes what the two single launches write, byte for
// byte (codes, factors), for every path, ragged shapes and B with other rows than A.
template <class CA, class CB>
void pair_equals_singles(Operand a, Operand b, unsigned want_flag) {
  Operand a1 = a, b1 = b;
  expand<CA>(a1);
  expand<CB>(b1);
  expand_pair<CA, CB>(a, b);
  EXPECT_EQ(a.out, a1.out);
  EXPECT_EQ(b.out, b1.out);
  EXPECT_EQ(a.factor, a1.factor);
  EXPECT_EQ(b.factor, b1.factor);
  EXPECT_EQ(a1.flag | b1.flag, want_flag);
  EXPECT_EQ(a.flag, want_flag);
}

TEST(EmuExpand, PairLaunchEqualsTheTwoSingleLaunches) {
  std::mt19937 rng(19);
  using MxA = Cfg<ScaleKind::mx, false, 4>;
  using MxB = Cfg<ScaleKind::mx, true, 4>;
  pair_equals_singles<MxA, MxB>(mx_operand(70, 1440, 14, rng), mx_operand(33, 1440, 14, rng), 0u);
  pair_equals_singles<MxSplitA, MxSplitB>(mx_operand(70, 1440, 14, rng),
                                          mx_operand(33, 1440, 14, rng), 0u);
  pair_equals_singles<Cfg<ScaleKind::ms, false, 1>, Cfg<ScaleKind::ms, true, 1>>(
      random_codes(37, 1440, rng), random_codes(90, 1440, rng), 0u);
  {
    Operand a = random_codes(50, 1408, rng), b = random_codes(40, 1408, rng);
    for (Operand* op : {&a, &b}) {
      op->scale.resize(static_cast<std::size_t>(op->rows) * (op->k / 16));
      for (auto& x : op->scale) x = static_cast<std::uint8_t>(rng() % 127);
    }
    b.scale.resize(static_cast<std::size_t>((b.rows + 15) / 16) * (b.k / 16));  // 16x16 blocks
    pair_equals_singles<Cfg<ScaleKind::nv, false, 1>,
                        Cfg<ScaleKind::nv, true, 1, ScaleCode::ue4m3, 16>>(a, b, 0u);
  }
  {
    Operand a;
    a.rows = 21;
    a.k = 1440;
    a.codes.resize(static_cast<std::size_t>(a.rows) * a.k);
    for (auto& x : a.codes) x = static_cast<std::uint8_t>(rng());
    pair_equals_singles<Cfg<ScaleKind::ms_grad, false, 4>, Cfg<ScaleKind::ms_grad, true, 4>>(
        a, ms_grad_b(70, 1440, rng), 0u);
  }
  // B's segment outside the window: the one flag is set.
  Operand a = mx_operand(40, 1024, 14, rng), b = mx_operand(24, 1024, 14, rng);
  b.scale[3 * 32 + 0] = 100;  // 20 binades below block 1, the window is 15
  b.scale[3 * 32 + 1] = 120;
  for (int j = 0; j < 32; ++j) b.codes[3 * 512 + j] = 0x11;  // blocks 0 and 1 of row 3 nonzero
  pair_equals_singles<MxA, MxB>(a, b, kMark);
  pair_equals_singles<MxSplitA, MxSplitB>(a, b, kMark);
}

}  // namespace
}  // namespace fp4jit::test
