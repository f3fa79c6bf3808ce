// The generic minifloats of numerics/minifloat.cuh (E4M3, E5M2, UE4M3 and the three UE5M3
// variants): every code decoded against the textbook definition, encode of decode, saturation,
// subnormals and NaN, published codes, and the rounding of every midpoint between neighbouring
// values and of random floats in every tie mode against the brute-force oracle
// (tests/unit/format_oracle.hpp).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/format.hpp"
#include "numerics/common.cuh"
#include "numerics/e2m1.cuh"
#include "numerics/minifloat.cuh"
#include "tests/unit/format_oracle.hpp"
#include "tests/unit/format_test_util.hpp"

namespace fp4jit::test {
namespace {

using nx::u32;

// ---------------------------------------------------------------------------------------------
// The generic minifloats (E4M3, E5M2, UE4M3 and the three UE5M3 variants).

struct MiniCase {
  FormatSpec spec;
  nx::MiniFloat mf;
  double max;            // the largest finite value, as published
  double min_subnormal;  // 2^(1 - bias - M)
};

std::vector<MiniCase> mini_cases() {
  return {
      {spec_e4m3(), nx::kE4M3, 448.0, 0x1p-9},
      {spec_e5m2(), nx::kE5M2, 57344.0, 0x1p-16},
      {spec_ue4m3(), nx::kUE4M3, 448.0, 0x1p-9},
      {spec_ue5m3_nan(), nx::kUE5M3Nan, 114688.0, 0x1p-17},
      {spec_ue5m3_finite(), nx::kUE5M3Finite, 122880.0, 0x1p-17},
      {spec_ue5m3_ieee(), nx::kUE5M3Ieee, 61440.0, 0x1p-17},
  };
}

bool is_nan_code(const FormatSpec& f, u32 code) {
  return std::isnan(oracle_decode(f, code));
}

// Checks mf_encode(x) against the oracle; returns a description of the mismatch, or "".
std::string check_encode(const Grid& g, const nx::MiniFloat& mf, float x, Round mode,
                         bool saturate) {
  const u32 want = oracle_encode(g, x, mode, saturate);
  const u32 got = nx::mf_encode(mf, x, mode, saturate);
  const bool ok = want == kAnyNan ? is_nan_code(g.spec, got) : got == want;
  if (ok) return "";
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s x=%.9g (%a) round=%s saturate=%d: got 0x%02x want %s0x%02x",
                g.spec.name.c_str(), double(x), double(x), round_name(mode).c_str(), saturate, got,
                want == kAnyNan ? "NaN " : "", want == kAnyNan ? g.nan_code : want);
  return buf;
}

class MiniFloatFormat : public ::testing::TestWithParam<MiniCase> {};

TEST_P(MiniFloatFormat, DecodeMatchesTextbookDefinition) {
  const MiniCase& c = GetParam();
  for (u32 code = 0; code < code_count(c.spec); ++code) {
    const double want = oracle_decode(c.spec, code);
    const float got = nx::mf_decode(c.mf, code);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << c.spec.name << " code " << code;
    } else {
      EXPECT_EQ(double(got), want) << c.spec.name << " code " << code;
      EXPECT_EQ(std::signbit(got), std::signbit(want)) << c.spec.name << " code " << code;
    }
    EXPECT_EQ(nx::mf_is_nan_code(c.mf, code), std::isnan(want)) << c.spec.name << " code " << code;
  }
}

TEST_P(MiniFloatFormat, EncodeOfDecodeRoundTripsEveryCode) {
  const MiniCase& c = GetParam();
  const u32 sign = sign_mask(c.spec);
  for (u32 code = 0; code < code_count(c.spec); ++code) {
    const float v = nx::mf_decode(c.mf, code);
    if (std::isnan(v)) {
      // NaN codes decode to NaN, and NaN encodes to a NaN code.
      EXPECT_TRUE(is_nan_code(c.spec, nx::mf_encode(c.mf, v, Round::even, false))) << code;
      EXPECT_TRUE(is_nan_code(c.spec, nx::mf_encode(c.mf, v, Round::even, true))) << code;
      continue;
    }
    if (std::isinf(v)) {
      // Inf codes decode to Inf, which encodes back to Inf unless saturating.
      EXPECT_EQ(nx::mf_encode(c.mf, v, Round::even, false), code) << code;
      EXPECT_EQ(nx::mf_encode(c.mf, v, Round::even, true), nx::mf_max_code(c.mf) | (code & sign));
      continue;
    }
    for (Round mode : kNearestModes) {
      EXPECT_EQ(nx::mf_encode(c.mf, v, mode, false), code) << code << " " << round_name(mode);
      EXPECT_EQ(nx::mf_encode(c.mf, v, mode, true), code) << code << " " << round_name(mode);
    }
    // An exact value never moves under stochastic rounding either, whatever the random bits.
    for (u32 r : {0u, 1u, 127u, 128u, 255u})
      EXPECT_EQ(nx::mf_encode(c.mf, v, Round::stochastic, true, r, 8), code) << code << " r=" << r;
  }
}

TEST_P(MiniFloatFormat, ValuesIncreaseWithTheCodeAndNegativesMirror) {
  const MiniCase& c = GetParam();
  const u32 max_code = nx::mf_max_code(c.mf);
  for (u32 code = 1; code <= max_code; ++code)
    EXPECT_LT(nx::mf_decode(c.mf, code - 1), nx::mf_decode(c.mf, code)) << code;
  if (c.spec.has_sign) {
    const u32 sign = sign_mask(c.spec);
    for (u32 code = 0; code <= max_code; ++code) {
      EXPECT_EQ(nx::mf_decode(c.mf, code | sign), -nx::mf_decode(c.mf, code)) << code;
      EXPECT_TRUE(std::signbit(nx::mf_decode(c.mf, code | sign))) << code;
    }
  }
}

TEST_P(MiniFloatFormat, LargestFiniteValue) {
  const MiniCase& c = GetParam();
  const Grid g = make_grid(c.spec);
  EXPECT_EQ(g.max(), c.max);  // the oracle's table agrees with the published maximum
  EXPECT_EQ(double(nx::mf_max_value(c.mf)), c.max);
  EXPECT_EQ(nx::mf_max_code(c.mf), g.max_code());
  EXPECT_EQ(nx::mf_has_nan(c.mf), c.spec.top != Top::finite);
  if (c.spec.top != Top::finite) {
    EXPECT_TRUE(is_nan_code(c.spec, nx::mf_nan_code(c.mf)));
  }
  if (c.spec.top == Top::ieee) {
    EXPECT_EQ(nx::mf_inf_code(c.mf), g.inf_code);
    EXPECT_TRUE(std::isinf(nx::mf_decode(c.mf, nx::mf_inf_code(c.mf))));
  }
}

TEST_P(MiniFloatFormat, Subnormals) {
  const MiniCase& c = GetParam();
  const u32 subnormals = (1u << c.spec.man_bits) - 1u;
  for (u32 m = 1; m <= subnormals; ++m) {
    EXPECT_EQ(double(nx::mf_decode(c.mf, m)), m * c.min_subnormal) << m;
    EXPECT_EQ(nx::mf_encode(c.mf, float(m * c.min_subnormal), Round::even, true), m);
  }
  // The smallest normal follows the largest subnormal by one subnormal step.
  EXPECT_EQ(double(nx::mf_decode(c.mf, subnormals + 1)), (subnormals + 1) * c.min_subnormal);
  const float half = float(c.min_subnormal / 2);
  EXPECT_EQ(nx::mf_encode(c.mf, half, Round::even, true), 0u);  // tie, 0 is even
  EXPECT_EQ(nx::mf_encode(c.mf, half, Round::zero, true), 0u);
  EXPECT_EQ(nx::mf_encode(c.mf, half, Round::away, true), 1u);
  EXPECT_EQ(nx::mf_encode(c.mf, half, Round::up, true), 1u);
  EXPECT_EQ(nx::mf_encode(c.mf, next_up(half), Round::zero, true), 1u);
  EXPECT_EQ(nx::mf_encode(c.mf, next_down(half), Round::away, true), 0u);
  // Float subnormal inputs are far below every format's range and round to (signed) zero.
  EXPECT_EQ(nx::mf_encode(c.mf, 1e-40f, Round::away, true), 0u);
  EXPECT_EQ(nx::mf_encode(c.mf, std::numeric_limits<float>::denorm_min(), Round::up, true), 0u);
  if (c.spec.has_sign) {
    EXPECT_EQ(nx::mf_encode(c.mf, -1e-40f, Round::away, true), sign_mask(c.spec));
    EXPECT_EQ(nx::mf_encode(c.mf, -half, Round::up, true), sign_mask(c.spec));  // toward +inf
    EXPECT_EQ(nx::mf_encode(c.mf, -half, Round::away, true), sign_mask(c.spec) | 1u);
  }
}

TEST_P(MiniFloatFormat, NanInput) {
  const MiniCase& c = GetParam();
  for (u32 bits : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff812345u}) {
    const float nan = std::bit_cast<float>(bits);
    for (bool saturate : {false, true}) {
      const u32 code = nx::mf_encode(c.mf, nan, Round::even, saturate);
      if (c.spec.top == Top::finite) {
        EXPECT_EQ(code, 0u);  // no NaN to give
      } else {
        EXPECT_TRUE(is_nan_code(c.spec, code)) << std::hex << bits;
      }
    }
  }
}

std::string mini_name(const ::testing::TestParamInfo<MiniCase>& info) {
  return info.param.spec.name;
}
INSTANTIATE_TEST_SUITE_P(Formats, MiniFloatFormat, ::testing::ValuesIn(mini_cases()), mini_name);

TEST(MiniFloatFormat, NegativeInputToUnsignedFormatsIsZero) {
  for (const MiniCase& c : mini_cases()) {
    if (c.spec.has_sign) continue;
    for (float x :
         {-0.0f, -1e-30f, -1.0f, -448.0f, -1e30f, -std::numeric_limits<float>::infinity()})
      for (Round mode : kNearestModes)
        for (bool saturate : {false, true})
          EXPECT_EQ(nx::mf_encode(c.mf, x, mode, saturate), 0u) << c.spec.name << " " << x;
  }
}

TEST(MiniFloatFormat, SaturationAndOverflow) {
  const float inf = std::numeric_limits<float>::infinity();
  // E5M2: overflow is Inf; 61440 is the midpoint of 57344 and 2^16 and ties to even (Inf).
  EXPECT_EQ(nx::mf_encode(nx::kE5M2, 1e6f, Round::even, false), 0x7Cu);
  EXPECT_EQ(nx::mf_encode(nx::kE5M2, -1e6f, Round::even, false), 0xFCu);
  EXPECT_EQ(nx::mf_encode(nx::kE5M2, inf, Round::even, false), 0x7Cu);
  EXPECT_EQ(nx::mf_encode(nx::kE5M2, -inf, Round::even, false), 0xFCu);
  EXPECT_EQ(nx::mf_encode(nx::kE5M2, 1e6f, Round::even, true), 0x7Bu);
  EXPECT_EQ(nx::mf_encode(nx::kE5M2, -inf, Round::even, true), 0xFBu);
  EXPECT_EQ(nx::mf_encode(nx::kE5M2, 61440.0f, Round::even, false), 0x7Cu);
  EXPECT_EQ(nx::mf_encode(nx::kE5M2, 61440.0f, Round::zero, false), 0x7Bu);
  EXPECT_EQ(nx::mf_encode(nx::kE5M2, next_down(61440.0f), Round::away, false), 0x7Bu);
  // E4M3 (FN): overflow is NaN; 464 is the midpoint of 448 (even mantissa) and 480.
  EXPECT_EQ(nx::mf_encode(nx::kE4M3, 1000.0f, Round::even, false) & 0x7Fu, 0x7Fu);
  EXPECT_EQ(nx::mf_encode(nx::kE4M3, inf, Round::even, false) & 0x7Fu, 0x7Fu);
  EXPECT_EQ(nx::mf_encode(nx::kE4M3, 1000.0f, Round::even, true), 0x7Eu);
  EXPECT_EQ(nx::mf_encode(nx::kE4M3, -inf, Round::even, true), 0xFEu);
  EXPECT_EQ(nx::mf_encode(nx::kE4M3, 464.0f, Round::even, false), 0x7Eu);
  EXPECT_EQ(nx::mf_encode(nx::kE4M3, 464.0f, Round::away, false) & 0x7Fu, 0x7Fu);
  EXPECT_EQ(nx::mf_encode(nx::kE4M3, next_up(464.0f), Round::even, false) & 0x7Fu, 0x7Fu);
  EXPECT_EQ(nx::mf_encode(nx::kE4M3, next_up(464.0f), Round::even, true), 0x7Eu);
  // UE5M3 variants.
  EXPECT_EQ(nx::mf_encode(nx::kUE5M3Nan, 1e6f, Round::even, false), 0xFFu);
  EXPECT_EQ(nx::mf_encode(nx::kUE5M3Nan, 1e6f, Round::even, true), 0xFEu);
  EXPECT_EQ(nx::mf_encode(nx::kUE5M3Finite, 1e6f, Round::even, false), 0xFFu);
  EXPECT_EQ(nx::mf_encode(nx::kUE5M3Finite, inf, Round::even, false), 0xFFu);
  EXPECT_EQ(nx::mf_encode(nx::kUE5M3Ieee, 1e6f, Round::even, false), 0xF8u);
  EXPECT_EQ(nx::mf_encode(nx::kUE5M3Ieee, inf, Round::even, false), 0xF8u);
  EXPECT_EQ(nx::mf_encode(nx::kUE5M3Ieee, 1e6f, Round::even, true), 0xF7u);
}

TEST(MiniFloatFormat, PublishedCodes) {
  const double inf = std::numeric_limits<double>::infinity();
  struct Known {
    nx::MiniFloat mf;
    u32 code;
    double value;
  };
  const Known known[] = {
      {nx::kE4M3, 0x01, 0x1p-9},        {nx::kE4M3, 0x08, 0x1p-6},
      {nx::kE4M3, 0x38, 1.0},           {nx::kE4M3, 0x7E, 448.0},
      {nx::kE4M3, 0xFE, -448.0},        {nx::kE4M3, 0xB8, -1.0},
      {nx::kE5M2, 0x01, 0x1p-16},       {nx::kE5M2, 0x04, 0x1p-14},
      {nx::kE5M2, 0x3C, 1.0},           {nx::kE5M2, 0x7B, 57344.0},
      {nx::kE5M2, 0x7C, inf},           {nx::kE5M2, 0xFC, -inf},
      {nx::kUE4M3, 0x38, 1.0},          {nx::kUE4M3, 0x7E, 448.0},
      {nx::kUE5M3Nan, 0x78, 1.0},       {nx::kUE5M3Nan, 0xFE, 114688},
      {nx::kUE5M3Finite, 0xFF, 122880}, {nx::kUE5M3Ieee, 0xF7, 61440},
      {nx::kUE5M3Ieee, 0xF8, inf},      {nx::kUE5M3Nan, 0x01, 0x1p-17},
  };
  for (const Known& k : known) EXPECT_EQ(double(nx::mf_decode(k.mf, k.code)), k.value) << k.code;
  EXPECT_TRUE(std::isnan(nx::mf_decode(nx::kE4M3, 0x7F)));
  EXPECT_TRUE(std::isnan(nx::mf_decode(nx::kE4M3, 0xFF)));
  EXPECT_TRUE(std::isnan(nx::mf_decode(nx::kE5M2, 0x7D)));
  EXPECT_TRUE(std::isnan(nx::mf_decode(nx::kUE5M3Nan, 0xFF)));
  EXPECT_TRUE(std::isnan(nx::mf_decode(nx::kUE5M3Ieee, 0xF9)));
}

// ---------------------------------------------------------------------------------------------
// Midpoints and random sweeps, per (format, tie mode).

using RoundCase = std::tuple<MiniCase, Round>;
class MiniFloatRounding : public ::testing::TestWithParam<RoundCase> {};

// The midpoint of every pair of neighbouring values (both signs; and of the largest value and the
// next step, where overflow starts), and the floats just below and above it.
TEST_P(MiniFloatRounding, MidpointsOfNeighboursInEveryTieMode) {
  const auto& [c, mode] = GetParam();
  const Grid g = make_grid(c.spec);
  Mismatches bad;
  for (std::size_t i = 0; i < g.mag.size(); ++i) {
    const double hi = i + 1 < g.mag.size() ? g.mag[i + 1] : g.virtual_next;
    const double mid = (g.mag[i] + hi) / 2.0;
    ASSERT_EQ(double(float(mid)), mid);  // a midpoint needs one more bit: exact in float
    for (float m : {float(mid), -float(mid)})
      for (float x : {m, next_down(m), next_up(m)})
        for (bool saturate : {false, true})
          if (auto msg = check_encode(g, c.mf, x, mode, saturate); !msg.empty()) bad.add(msg);
  }
}

TEST_P(MiniFloatRounding, RandomFloatsMatchBruteForceNearest) {
  const auto& [c, mode] = GetParam();
  const Grid g = make_grid(c.spec);
  std::mt19937_64 gen(0x5eed0000u + static_cast<unsigned>(mode) * 97u + c.spec.exp_bits);
  Mismatches bad;
  for (int n = 0; n < 120000; ++n) {
    const float x = random_input(gen, g);
    for (bool saturate : {false, true})
      if (auto msg = check_encode(g, c.mf, x, mode, saturate); !msg.empty()) bad.add(msg);
  }
}

std::string round_case_name(const ::testing::TestParamInfo<RoundCase>& info) {
  return std::get<0>(info.param).spec.name + "_" + round_name(std::get<1>(info.param));
}
INSTANTIATE_TEST_SUITE_P(Formats, MiniFloatRounding,
                         ::testing::Combine(::testing::ValuesIn(mini_cases()),
                                            ::testing::ValuesIn(kNearestModes)),
                         round_case_name);

}  // namespace
}  // namespace fp4jit::test
