// Scale rules (numerics/scale.cuh) against their definitions evaluated exactly in double, over
// random and boundary amax values, and the NVFP4 two-level scales against a plain float
// transcription of Transformer Engine's order of operations.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "numerics/scale.cuh"
#include "tests/unit/format_oracle.hpp"

namespace fp4jit::test {
namespace {

using nx::u32;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kFltMax = std::numeric_limits<float>::max();

float next_up(float x) {
  return std::nextafter(x, kInf);
}
float next_down(float x) {
  return std::nextafter(x, -kInf);
}

// Positive finite amax values: random bit patterns (every binade, subnormals included), the
// boundaries m * 2^k and their float neighbours, and special values.
std::vector<float> amax_samples(float m) {
  std::vector<float> out = {
      0.0f,    std::numeric_limits<float>::denorm_min(), 1e-8f, 1.0f, 6.0f, 448.0f,
      kFltMax, std::numeric_limits<float>::min()};
  for (int k = -160; k <= 130; ++k) {
    const float b = std::ldexp(m, k);  // exact, or 0 / Inf past the float range
    if (b == 0.0f || std::isinf(b)) continue;
    out.insert(out.end(), {b, next_up(b), next_down(b)});
    if (std::isfinite(b * (1.0f + 0x1p-23f))) out.push_back(b * (1.0f + 0x1p-23f));
  }
  std::mt19937_64 gen(17);
  for (int n = 0; n < 300000; ++n) {
    const float a = std::bit_cast<float>(static_cast<u32>(gen()) & 0x7fffffffu);
    if (std::isfinite(a)) out.push_back(a);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// OCP MX: e = floor(log2(amax)) - emax_elem.

u32 ocp_floor_oracle(float amax, int emax_elem) {
  if (!std::isfinite(amax)) return 0xFFu;
  const double a = amax == 0.0f ? 0x1p-126 : double(amax);
  int e = std::ilogb(a) - emax_elem;  // floor(log2(a)), exact for every positive double
  if (e < -127) e = -127;
  if (e > 127) return 0xFFu;
  return static_cast<u32>(e + 127);
}

TEST(ScaleOcpFloor, PublishedPoints) {
  EXPECT_EQ(nx::scale_ocp_floor(6.0f, 2), 127u);  // 2^(2 - 2) = 1
  EXPECT_EQ(nx::scale_ocp_floor(4.0f, 2), 127u);
  EXPECT_EQ(nx::scale_ocp_floor(next_down(4.0f), 2), 126u);
  EXPECT_EQ(nx::scale_ocp_floor(7.99f, 2), 127u);  // amax / scale reaches ~8: E2M1 saturates
  EXPECT_EQ(nx::scale_ocp_floor(8.0f, 2), 128u);
  EXPECT_EQ(nx::scale_ocp_floor(0.0f, 2), 0u);  // smallest normal, then clamped to 2^-127
  EXPECT_EQ(nx::scale_ocp_floor(std::nanf(""), 2), 0xFFu);
  EXPECT_EQ(nx::scale_ocp_floor(kInf, 2), 0xFFu);
  EXPECT_EQ(nx::scale_ocp_floor(-kInf, 2), 0xFFu);
  EXPECT_EQ(nx::scale_ocp_floor(std::numeric_limits<float>::denorm_min(), 2), 0u);  // clamped
  EXPECT_EQ(nx::scale_ocp_floor(0x1p-120f, 2), 5u);
  EXPECT_EQ(nx::scale_ocp_floor(kFltMax, 2), 252u);  // 2^125: finite amax never gives NaN
  EXPECT_EQ(nx::scale_ocp_floor(448.0f, 8), 127u);
  EXPECT_EQ(nx::scale_ocp_floor(57344.0f, 15), 127u);
}

TEST(ScaleOcpFloor, MatchesDefinitionEverywhere) {
  for (int emax : {2, 8, 15}) {
    for (float a : amax_samples(1.0f)) {
      ASSERT_EQ(nx::scale_ocp_floor(a, emax), ocp_floor_oracle(a, emax)) << a << " emax " << emax;
      // Unclamped, the scaled amax lands in [2^emax, 2^(emax+1)).
      const u32 code = nx::scale_ocp_floor(a, emax);
      if (a > 0.0f && code > 0u) {
        const double scaled = double(a) / std::ldexp(1.0, int(code) - 127);
        EXPECT_GE(scaled, std::ldexp(1.0, emax)) << a;
        EXPECT_LT(scaled, std::ldexp(1.0, emax + 1)) << a;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// TetraJet: the smallest e with amax <= elem_max * 2^e, clamped to [-127, 127]; amax 0 -> 1e-8.

u32 ceil_pow2_oracle(float amax, float elem_max) {
  if (!std::isfinite(amax)) return 0xFFu;
  const double a = amax == 0.0f ? double(1e-8f) : double(amax);
  int e = std::ilogb(a) - std::ilogb(double(elem_max)) - 2;
  while (a > std::ldexp(double(elem_max), e)) ++e;
  if (e < -127) e = -127;
  if (e > 127) e = 127;
  return static_cast<u32>(e + 127);
}

TEST(ScaleCeilPow2, PublishedPoints) {
  EXPECT_EQ(nx::scale_ceil_pow2(6.0f, 6.0f), 127u);  // 6 <= 6 * 2^0
  EXPECT_EQ(nx::scale_ceil_pow2(next_up(6.0f), 6.0f), 128u);
  EXPECT_EQ(nx::scale_ceil_pow2(6.0f * (1.0f + 0x1p-23f), 6.0f), 128u);
  EXPECT_EQ(nx::scale_ceil_pow2(3.0f, 6.0f), 126u);
  EXPECT_EQ(nx::scale_ceil_pow2(next_up(3.0f), 6.0f), 127u);
  EXPECT_EQ(nx::scale_ceil_pow2(0.0f, 6.0f), 127u - 29u);  // 1e-8 / 6 -> 2^-29
  EXPECT_EQ(nx::scale_ceil_pow2(std::numeric_limits<float>::denorm_min(), 6.0f), 0u);  // clamped
  EXPECT_EQ(nx::scale_ceil_pow2(kFltMax, 6.0f), 127u + 126u);
  EXPECT_EQ(nx::scale_ceil_pow2(kFltMax, 0x1p-20f), 254u);  // e = 148 clamps to 127
  EXPECT_EQ(nx::scale_ceil_pow2(std::nanf(""), 6.0f), 0xFFu);
  EXPECT_EQ(nx::scale_ceil_pow2(kInf, 6.0f), 0xFFu);
}

TEST(ScaleCeilPow2, MatchesDefinitionEverywhere) {
  for (float elem_max : {6.0f, 448.0f, 57344.0f, 0x1p-20f}) {
    for (float a : amax_samples(elem_max)) {
      ASSERT_EQ(nx::scale_ceil_pow2(a, elem_max), ceil_pow2_oracle(a, elem_max))
          << a << " max " << elem_max;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Microsoft FP4: the largest e with amax * 2^e <= elem_max, clamped to [-126, 126]; 0 for amax 0
// or not finite.

int ms_pow2_oracle(float amax, float elem_max) {
  if (amax == 0.0f || !std::isfinite(amax)) return 0;
  int e = std::ilogb(double(elem_max)) - std::ilogb(double(amax)) + 2;
  while (std::ldexp(double(amax), e) > double(elem_max)) --e;
  return std::clamp(e, -126, 126);
}

// The stat-word forms of the two power-of-two rules give the float forms' codes for every exponent
// field with the mantissas that matter (0, around each element format's significand, the extremes,
// a spread of others), every BF16 magnitude, and every non-finite word.
TEST(ScalePow2Bits, MatchFloatRules) {
  std::vector<u32> words;
  std::mt19937 rng(7);
  for (u32 e = 0; e <= 254; ++e) {
    for (u32 m :
         {0x0u, 0x1u, 0x3fffffu, 0x400000u, 0x400001u, 0x5fffffu, 0x600000u, 0x600001u, 0x7fffffu})
      words.push_back((e << 23) | m);
    for (int k = 0; k < 16; ++k) words.push_back((e << 23) | (rng() & 0x7fffffu));
  }
  for (u32 b = 0; b < 0x7f80u; ++b) words.push_back(b << 16);  // BF16 magnitudes
  int checked = 0;
  for (const auto& [emax, emax_value] : {std::pair{2, 6.0f}, {8, 448.0f}, {15, 57344.0f}}) {
    for (const u32 w : words) {
      const float a = std::bit_cast<float>(w);
      ASSERT_EQ(nx::scale_ocp_floor_bits(w, emax), nx::scale_ocp_floor(a, emax)) << std::hex << w;
      ASSERT_EQ(nx::scale_ceil_pow2_bits(w, emax_value), nx::scale_ceil_pow2(a, emax_value))
          << std::hex << w << " elem_max " << emax_value;
      ++checked;
    }
    for (const u32 w : {0x7f800000u, 0x7f800001u, 0x7fc00000u, 0x7fffffffu, 0xffffffffu}) {
      EXPECT_EQ(nx::scale_ocp_floor_bits(w, emax), nx::kE8M0Nan);
      EXPECT_EQ(nx::scale_ceil_pow2_bits(w, emax_value), nx::kE8M0Nan);
    }
  }
  EXPECT_GT(checked, 3 * 0x7f80);
}

TEST(ScaleMsPow2, PublishedPoints) {
  EXPECT_EQ(nx::scale_ms_pow2_exponent(6.0f, 6.0f), 0);
  EXPECT_EQ(nx::scale_ms_pow2_exponent(next_up(6.0f), 6.0f), -1);
  EXPECT_EQ(nx::scale_ms_pow2_exponent(0.75f, 6.0f), 3);
  EXPECT_EQ(nx::scale_ms_pow2_exponent(0.2002f, 6.0f), 4);
  EXPECT_EQ(nx::scale_ms_pow2_exponent(0.0f, 6.0f), 0);
  EXPECT_EQ(nx::scale_ms_pow2_exponent(std::nanf(""), 6.0f), 0);
  EXPECT_EQ(nx::scale_ms_pow2_exponent(kInf, 6.0f), 0);
  EXPECT_EQ(nx::scale_ms_pow2_exponent(std::numeric_limits<float>::denorm_min(), 6.0f), 126);
  EXPECT_EQ(nx::scale_ms_pow2_exponent(kFltMax, 6.0f), -126);
  EXPECT_EQ(nx::scale_ms_pow2_exponent(kFltMax, 0x1p-10f), -126);  // -138 clamps
}

TEST(ScaleMsPow2, MatchesDefinitionEverywhere) {
  for (float elem_max : {6.0f, 448.0f, 57344.0f, 0x1p-10f}) {
    for (float a : amax_samples(elem_max)) {
      const int e = nx::scale_ms_pow2_exponent(a, elem_max);
      ASSERT_EQ(e, ms_pow2_oracle(a, elem_max)) << a << " max " << elem_max;
      // sf and 1/sf are both normal floats.
      EXPECT_TRUE(std::isnormal(nx::pow2f(e)) && std::isnormal(nx::pow2f(-e))) << a;
    }
  }
}

TEST(ScaleLog2Ratios, MatchDefinitions) {
  std::mt19937_64 gen(23);
  for (int n = 0; n < 300000; ++n) {
    const float a = std::bit_cast<float>(static_cast<u32>(gen()) & 0x7fffffffu);
    const float b = std::bit_cast<float>(static_cast<u32>(gen()) & 0x7fffffffu);
    if (!(a > 0.0f) || !(b > 0.0f) || std::isinf(a) || std::isinf(b)) continue;
    // Smallest e with a <= b * 2^e; largest e with a * 2^e <= b. Exact in double: the
    // exponents stay within [-300, 300].
    int up = std::ilogb(double(a)) - std::ilogb(double(b)) - 2;
    while (double(a) > std::ldexp(double(b), up)) ++up;
    int down = std::ilogb(double(b)) - std::ilogb(double(a)) + 2;
    while (std::ldexp(double(a), down) > double(b)) --down;
    ASSERT_EQ(nx::ceil_log2_ratio(a, b), up) << a << " " << b;
    ASSERT_EQ(nx::floor_log2_ratio(b, a), down) << a << " " << b;
  }
}

TEST(ScaleAbsmax, AmaxOverMax) {
  EXPECT_EQ(nx::scale_absmax(0.0f, 6.0f), 1.0f);
  EXPECT_EQ(nx::scale_absmax(3.0f, 6.0f), 0.5f);
  EXPECT_EQ(nx::scale_absmax(1.0f, 6.0f), 1.0f / 6.0f);
  EXPECT_EQ(nx::scale_absmax(448.0f, 448.0f), 1.0f);
}

// ---------------------------------------------------------------------------------------------
// NVFP4 two-level scaling, transcribed from Transformer Engine's order of operations in plain
// float arithmetic, with the block scale rounded by the brute-force oracle (RNE, saturating).

float te_tensor_scale(float global_amax, float scale_max) {
  float s = std::fmin(scale_max * 6.0f / global_amax, kFltMax);
  if (global_amax == 0.0f || s == 0.0f) s = 1.0f;
  return s;
}
u32 te_block_scale(const Grid& g, float block_amax, float s_enc) {
  const float s_dec_b = block_amax * (s_enc * (1.0f / 6.0f));
  return oracle_encode(g, std::fmin(s_dec_b, kFltMax), Round::even, /*saturate=*/true);
}
float te_encode_factor(const Grid& g, u32 code, float s_enc) {
  return std::fmin(1.0f / (float(oracle_decode(g.spec, code)) * (1.0f / s_enc)), kFltMax);
}

struct TwoLevelCase {
  FormatSpec spec;
  nx::MiniFloat mf;
  float scale_max;
};

class TwoLevel : public ::testing::TestWithParam<TwoLevelCase> {};

TEST_P(TwoLevel, TensorScale) {
  const TwoLevelCase& c = GetParam();
  const float product = c.scale_max * 6.0f;
  EXPECT_EQ(nx::two_level_tensor_scale(0.0f, c.scale_max, 6.0f), 1.0f);       // amax 0 -> 1
  EXPECT_EQ(nx::two_level_tensor_scale(kInf, c.scale_max, 6.0f), 1.0f);       // s_enc 0 -> 1
  EXPECT_EQ(nx::two_level_tensor_scale(1e-45f, c.scale_max, 6.0f), kFltMax);  // Inf -> FLT_MAX
  EXPECT_EQ(nx::two_level_tensor_scale(product, c.scale_max, 6.0f), 1.0f);
  std::mt19937_64 gen(31);
  for (int n = 0; n < 200000; ++n) {
    const float a = std::bit_cast<float>(static_cast<u32>(gen()) & 0x7fffffffu);
    if (!std::isfinite(a)) continue;
    ASSERT_EQ(nx::two_level_tensor_scale(a, c.scale_max, 6.0f), te_tensor_scale(a, c.scale_max))
        << a;
  }
}

TEST_P(TwoLevel, BlockScaleAndEncodeFactor) {
  const TwoLevelCase& c = GetParam();
  const Grid g = make_grid(c.spec);
  std::mt19937_64 gen(37);
  std::uniform_real_distribution<double> log_amax(-140.0, 127.0), log_ratio(-40.0, 0.0);
  int zero_scales = 0;
  for (int n = 0; n < 200000; ++n) {
    const float global = float(std::exp2(log_amax(gen)));
    // Blocks from the global amax down to 2^-40 of it (tiny blocks round to a zero scale), and
    // now and then an amax past the global one (saturates at the scale's max).
    float block = float(double(global) * std::exp2(log_ratio(gen)));
    if (n % 50 == 0) block = global * 8.0f;
    if (n % 97 == 0) block = 0.0f;
    if (std::isinf(block) || global == 0.0f) continue;
    const float s_enc = nx::two_level_tensor_scale(global, c.scale_max, 6.0f);
    ASSERT_EQ(s_enc, te_tensor_scale(global, c.scale_max));
    const u32 code = nx::two_level_block_scale(c.mf, block, s_enc, 6.0f);
    ASSERT_EQ(code, te_block_scale(g, block, s_enc)) << "global " << global << " block " << block;
    const float enc = nx::two_level_encode_factor(c.mf, code, s_enc);
    ASSERT_EQ(enc, te_encode_factor(g, code, s_enc)) << "global " << global << " block " << block;
    if (code == 0u) {
      ++zero_scales;
      EXPECT_EQ(enc, kFltMax);  // 1 / 0 capped
    }
  }
  EXPECT_GT(zero_scales, 1000);  // the sweep does reach scales that round to 0
}

// The order of operations decides the last bit of s_dec, and that bit decides the rounding when
// s_dec lies next to a midpoint of the scale format. Block amaxes around every midpoint, for
// several tensor scales, pin the order: block_amax * (s_enc * (1/6)), not block_amax * s_enc / 6.
TEST_P(TwoLevel, BlockScaleAtEveryRoundingBoundary) {
  const TwoLevelCase& c = GetParam();
  const Grid g = make_grid(c.spec);
  int order_matters = 0;
  for (float global : {c.scale_max * 6.0f, 1.0f, 3.0f, 0.7f, 1e-3f, 12345.0f}) {
    const float s_enc = nx::two_level_tensor_scale(global, c.scale_max, 6.0f);
    for (std::size_t i = 0; i + 1 < g.mag.size(); ++i) {
      const double mid = (g.mag[i] + g.mag[i + 1]) / 2.0;
      float block = float(mid * 6.0 / double(s_enc));
      for (int k = 0; k < 8; ++k) block = next_down(block);
      for (int k = 0; k < 16; ++k, block = next_up(block)) {
        const u32 want = te_block_scale(g, block, s_enc);
        ASSERT_EQ(nx::two_level_block_scale(c.mf, block, s_enc, 6.0f), want)
            << "global " << global << " block " << std::hexfloat << block;
        const float other_order = block * s_enc / 6.0f;
        order_matters += oracle_encode(g, other_order, Round::even, true) != want;
      }
    }
  }
  EXPECT_GT(order_matters, 0);  // the sweep does separate the two orders
}

TEST_P(TwoLevel, WorkedExample) {
  const TwoLevelCase& c = GetParam();
  // global amax = scale_max * 6: s_enc = 1, and a block with amax 6 * s has decode scale s.
  const float s_enc = nx::two_level_tensor_scale(c.scale_max * 6.0f, c.scale_max, 6.0f);
  ASSERT_EQ(s_enc, 1.0f);
  EXPECT_EQ(nx::two_level_block_scale(c.mf, 6.0f, s_enc, 6.0f),
            nx::mf_encode(c.mf, 1.0f, Round::even, true));
  EXPECT_EQ(nx::two_level_block_scale(c.mf, c.scale_max * 6.0f, s_enc, 6.0f),
            nx::mf_max_code(c.mf));
  EXPECT_EQ(nx::two_level_block_scale(c.mf, kInf, s_enc, 6.0f),
            nx::mf_max_code(c.mf));  // saturates
  EXPECT_EQ(nx::two_level_block_scale(c.mf, 0.0f, s_enc, 6.0f), 0u);
  EXPECT_EQ(nx::two_level_encode_factor(c.mf, 0u, s_enc), kFltMax);
  EXPECT_EQ(nx::two_level_encode_factor(c.mf, nx::mf_encode(c.mf, 2.0f, Round::even, true), 4.0f),
            2.0f);
}

std::string two_level_name(const ::testing::TestParamInfo<TwoLevelCase>& info) {
  return info.param.spec.name;
}
INSTANTIATE_TEST_SUITE_P(
    ScaleFormats, TwoLevel,
    ::testing::Values(TwoLevelCase{spec_ue4m3(), nx::kUE4M3, 448.0f},
                      TwoLevelCase{spec_ue5m3_nan(), nx::kUE5M3Nan, 114688.0f},
                      TwoLevelCase{spec_ue5m3_finite(), nx::kUE5M3Finite, 122880.0f},
                      TwoLevelCase{spec_ue5m3_ieee(), nx::kUE5M3Ieee, 61440.0f}),
    two_level_name);

TEST(TwoLevelNvfp4, TransformerEngineConstants) {
  // NVFP4: s_enc = 448 * 6 / global_amax = 2688 / global_amax.
  EXPECT_EQ(nx::two_level_tensor_scale(2688.0f, 448.0f, 6.0f), 1.0f);
  EXPECT_EQ(nx::two_level_tensor_scale(1.0f, 448.0f, 6.0f), 2688.0f);
  EXPECT_EQ(nx::two_level_tensor_scale(3.0f, 448.0f, 6.0f), 2688.0f / 3.0f);
  // global amax 2688, block amax 12: s_dec = 12 * (1 * (1/6)) = 2 -> UE4M3 code 0x40.
  EXPECT_EQ(nx::two_level_block_scale(nx::kUE4M3, 12.0f, 1.0f, 6.0f), 0x40u);
  EXPECT_EQ(nx::two_level_encode_factor(nx::kUE4M3, 0x40u, 1.0f), 0.5f);
}

}  // namespace
}  // namespace fp4jit::test
