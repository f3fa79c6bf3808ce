// The staged sm90 GEMM's expansion pass (templates/gemm/sm90/staged_expand.cuh) on the CPU
// emulator, for every path: each expanded value, times its (segment, row) factor where the path
// has one, equals the dequantized element exactly (E2M1 times its block or column scale, E5M2 for
// msfp4's gradients); a scale outside the window of a segment sets the flag, one outside only
// with all-zero codes does not; NaN scales give NaN factors. Ragged shapes (rows ending inside a
// warp, K ending inside a promotion segment); every output byte is written over a poisoned
// buffer and nothing past the operand.
#include "tests/emu/cuda_shim.hpp"
// clang-format off: the shim goes first
#include "gemm/sm90/staged_expand.cuh"
// clang-format on

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "numerics/e2m1.cuh"
#include "numerics/minifloat.cuh"
#include "tests/emu/emulator.hpp"

namespace fp4jit::test {
namespace {

namespace g = fp4jit::sm90;
using g::ScaleCode;
using g::ScaleKind;

template <ScaleKind kK, bool kB, int kP, ScaleCode kS = ScaleCode::ue4m3, int kRows = 1,
          bool kFrag = false, bool kSplit = false>
struct Cfg : g::ExpandConfigBase {
  static constexpr ScaleKind kKind = kK;
  static constexpr bool kOperandB = kB;
  static constexpr ScaleCode kScaleCode = kS;
  static constexpr int kBlockRows = kRows;
  static constexpr int kPeriod = kP;
  static constexpr bool kFragOrder = kFrag;
  static constexpr bool kSplitFactors = kSplit;
};
// The staged kernel's mx expansions (codegen: A's and B's factors applied apart).
using MxSplitA = Cfg<ScaleKind::mx, false, 4, ScaleCode::ue4m3, 1, false, true>;
using MxSplitB = Cfg<ScaleKind::mx, true, 4, ScaleCode::ue4m3, 1, false, true>;

constexpr std::uint8_t kPoison = 0x7F;  // E4M3 NaN; FP16 / BF16 words 0x7F7F are NaN too
constexpr int kGuard = 4096;
// The launch's window mark (GemmParams::fallback_mark) the expansion writes into its flag.
constexpr unsigned kMark = 0x5EED1234u;

// One operand [rows, K] and the expansion's outputs.
struct Operand {
  int rows = 0, k = 0;
  std::vector<std::uint8_t> codes;  // packed E2M1 (ms_grad A: E5M2 bytes)
  std::vector<std::uint8_t> scale;  // mx: E8M0 per 32; nv: UE4M3 / UE5M3 per 16
  std::vector<float> col_scale;     // ms_grad B: per K column
  std::vector<std::uint8_t> out;
  std::vector<float> factor;
  int factor_ld = 0;
  unsigned flag = 0;

  std::uint32_t code(int r, int j) const {  // E2M1 code of element (r, j)
    const std::uint8_t b = codes[static_cast<std::size_t>(r) * (k / 2) + j / 2];
    return (j % 2 == 0 ? b : b >> 4) & 15u;
  }
};

// Poisons op's outputs and returns the parameters of its expansion with config C, and the CTAs.
template <class C>
std::pair<gemm::ExpandParams, unsigned> prepare(Operand& op) {
  using T = g::ExpandTraits<C>;
  const int elem = T::kFp8 ? 1 : 2;
  const long long out_ld = static_cast<long long>(op.k) * elem;
  op.out.assign(static_cast<std::size_t>(op.rows * out_ld + kGuard), kPoison);
  op.factor_ld = g::staged_factor_ld(op.rows);
  const int block_k = 32 * T::kTileChunks;
  const int segments = g::staged_k_units((op.k + block_k - 1) / block_k, C::kPeriod);
  op.factor.assign(static_cast<std::size_t>(segments) * op.factor_ld, -1.0f);
  op.flag = 0;
  gemm::ExpandParams p{};
  p.codes = op.codes.data();
  p.code_ld = C::kKind == ScaleKind::ms_grad && !C::kOperandB ? op.k : op.k / 2;
  p.rows = op.rows;
  p.K = op.k;
  p.scale = op.scale.empty() ? nullptr : op.scale.data();
  p.scale_ld = C::kKind == ScaleKind::mx ? op.k / 32 : op.k / 16;
  p.col_scale = op.col_scale.empty() ? nullptr : op.col_scale.data();
  p.out = op.out.data();
  p.out_ld = out_ld;
  p.factor = op.factor.data();
  p.factor_ld = op.factor_ld;
  p.flag = &op.flag;
  p.flag_mark = kMark;
  if (C::kKind == ScaleKind::mx && C::kSplitFactors && C::kOperandB)
    return {p, static_cast<unsigned>(g::expand_whole_row_ctas(op.rows))};
  const int per_thread = g::expand_rows_per_thread(C::kKind, C::kOperandB);
  const long long threads = static_cast<long long>((op.rows + per_thread - 1) / per_thread) *
                            g::expand_chunks_pad(T::kFp8, op.k, C::kPeriod);
  return {p, static_cast<unsigned>((threads + 255) / 256)};
}

void check_guard(const Operand& op) {
  for (int i = 0; i < kGuard; ++i)
    ASSERT_EQ(op.out[op.out.size() - kGuard + i], kPoison)
        << "written past the operand, byte " << i;
}

template <class C>
void expand(Operand& op) {
  auto [p, ctas] = prepare<C>(op);
  emu::launch(
      +[](const void* a) { g::expand_kernel<C>(*static_cast<const gemm::ExpandParams*>(a)); }, ctas,
      256, &p);
  check_guard(op);
}

// Both operands in one launch (expand_pair_kernel), one flag for both as the GEMM launch gives:
// a's flag field holds it.
template <class CA, class CB>
struct Pair {  // expand_pair_kernel's config
  using A = CA;
  using B = CB;
};

template <class CA, class CB>
void expand_pair(Operand& a, Operand& b) {
  struct Args {
    gemm::ExpandParams a, b;
    int a_ctas;
  } args{};
  auto [pa, a_ctas] = prepare<CA>(a);
  auto [pb, b_ctas] = prepare<CB>(b);
  pb.flag = pa.flag;
  args = {pa, pb, static_cast<int>(a_ctas)};
  emu::launch(
      +[](const void* v) {
        const auto& x = *static_cast<const Args*>(v);
        g::expand_pair_kernel<Pair<CA, CB>>(x.a, x.b, x.a_ctas);
      },
      a_ctas + b_ctas, 256, &args);
  check_guard(a);
  check_guard(b);
}

float e4m3(std::uint8_t b) {
  return nx::mf_decode(nx::kE4M3, b);
}
float f16(const std::vector<std::uint8_t>& out, std::size_t i) {
  return g::f16_bits_to_float(out[2 * i] | (out[2 * i + 1] << 8));
}
float bf16(const std::vector<std::uint8_t>& out, std::size_t i) {
  return nx::bits_float(static_cast<std::uint32_t>(out[2 * i] | (out[2 * i + 1] << 8)) << 16);
}

Operand random_codes(int rows, int k, std::mt19937& rng) {
  Operand op;
  op.rows = rows;
  op.k = k;
  op.codes.resize(static_cast<std::size_t>(rows) * k / 2);
  for (auto& b : op.codes) b = static_cast<std::uint8_t>(rng());
  return op;
}

// mx: E8M0 block scales spread over at most `spread` binades below each row's top (the window is
// 15 per segment), some all-zero blocks with wild scales.
Operand mx_operand(int rows, int k, int spread, std::mt19937& rng) {
  Operand op = random_codes(rows, k, rng);
  op.scale.resize(static_cast<std::size_t>(rows) * (k / 32));
  for (int r = 0; r < rows; ++r) {
    const int top = 110 + static_cast<int>(rng() % 30);
    for (int b = 0; b < k / 32; ++b) {
      auto& s = op.scale[static_cast<std::size_t>(r) * (k / 32) + b];
      s = static_cast<std::uint8_t>(top - static_cast<int>(rng() % (spread + 1)));
      if (rng() % 9 == 0) {  // all-zero codes: any scale, no part in the window
        for (int j = 0; j < 16; ++j)
          op.codes[static_cast<std::size_t>(r) * (k / 2) + 16 * b + j] = 0;
        s = static_cast<std::uint8_t>(rng() % 250);
      }
    }
  }
  return op;
}

// kP: the period (factor per segment of kP K tiles); 0: one factor per row (whole-row B).
template <int kP>
void check_mx(const Operand& op) {
  const int seg_k = kP > 0 ? 128 * kP : op.k;
  for (int r = 0; r < op.rows; ++r)
    for (int j = 0; j < op.k; ++j) {
      const int e = op.scale[static_cast<std::size_t>(r) * (op.k / 32) + j / 32];
      const float f = op.factor[static_cast<std::size_t>(j / seg_k) * op.factor_ld + r];
      const double want = nx::e2m1_decode(op.code(r, j)) * std::ldexp(1.0, e - 127);
      const double got =
          static_cast<double>(e4m3(op.out[static_cast<std::size_t>(r) * op.k + j])) * f;
      ASSERT_EQ(got, want) << "row " << r << " col " << j << " scale " << e;
    }
}

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
