// E2M1, E8M0, the shared numerics helpers and core/format.hpp: every code decoded against the
// textbook definition, rounding of every midpoint in every tie mode, overflow and NaN policy, and
// a randomized sweep against a brute-force nearest-value oracle (tests/unit/format_oracle.hpp).
// The generic minifloats: minifloat_test.cpp.
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
// E2M1.

TEST(E2M1, DecodeEveryCode) {
  const double table[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  for (u32 code = 0; code < 16; ++code) {
    const double want = (code & 8u) ? -table[code & 7u] : table[code & 7u];
    EXPECT_EQ(double(nx::e2m1_decode(code)), want) << code;
    EXPECT_EQ(std::signbit(nx::e2m1_decode(code)), code >= 8u) << code;  // code 8 is -0
    EXPECT_EQ(double(nx::e2m1_decode(code)), oracle_decode(spec_e2m1(), code)) << code;
  }
  EXPECT_EQ(nx::kE2M1Max, 6.0f);
}

TEST(E2M1, EncodeOfDecodeRoundTripsEveryCode) {
  for (u32 code = 0; code < 16; ++code) {
    const float v = nx::e2m1_decode(code);
    for (Round mode : kNearestModes) EXPECT_EQ(nx::e2m1_encode(v, mode), code) << code;
    for (u32 r = 0; r < 256; ++r) EXPECT_EQ(nx::e2m1_encode(v, Round::stochastic, r, 8), code);
  }
}

TEST(E2M1, ValuesIncreaseWithTheCode) {
  for (u32 code = 1; code < 8; ++code) EXPECT_LT(nx::e2m1_decode(code - 1), nx::e2m1_decode(code));
  for (u32 code = 9; code < 16; ++code) EXPECT_GT(nx::e2m1_decode(code - 1), nx::e2m1_decode(code));
}

std::string check_e2m1(const Grid& g, float x, Round mode) {
  const u32 want = oracle_encode(g, x, mode, /*saturate=*/true);
  const u32 got = nx::e2m1_encode(x, mode);
  if (got == want) return "";
  char buf[160];
  std::snprintf(buf, sizeof buf, "E2M1 x=%.9g (%a) round=%s: got %u want %u", double(x), double(x),
                round_name(mode).c_str(), got, want);
  return buf;
}

class E2M1Rounding : public ::testing::TestWithParam<Round> {};

TEST_P(E2M1Rounding, MidpointsOfNeighboursInEveryTieMode) {
  const Round mode = GetParam();
  const Grid g = make_grid(spec_e2m1());
  ASSERT_EQ(g.mag.size(), 8u);
  ASSERT_EQ(g.virtual_next, 8.0);
  Mismatches bad;
  for (std::size_t i = 0; i < g.mag.size(); ++i) {
    const double hi = i + 1 < g.mag.size() ? g.mag[i + 1] : g.virtual_next;
    const float mid = float((g.mag[i] + hi) / 2.0);
    for (float m : {mid, -mid})
      for (float x : {m, next_down(m), next_up(m)})
        if (auto msg = check_e2m1(g, x, mode); !msg.empty()) bad.add(msg);
  }
}

TEST_P(E2M1Rounding, RandomFloatsMatchBruteForceNearest) {
  const Round mode = GetParam();
  const Grid g = make_grid(spec_e2m1());
  std::mt19937_64 gen(0xe2a1u + static_cast<unsigned>(mode));
  Mismatches bad;
  for (int n = 0; n < 300000; ++n)
    if (auto msg = check_e2m1(g, random_input(gen, g), mode); !msg.empty()) bad.add(msg);
}

std::string mode_name(const ::testing::TestParamInfo<Round>& info) {
  return round_name(info.param);
}
INSTANTIATE_TEST_SUITE_P(TieModes, E2M1Rounding, ::testing::ValuesIn(kNearestModes), mode_name);

TEST(E2M1, TieExamplesOfEachMode) {
  struct Tie {
    float x;
    float even, away, up, zero;
  };
  const Tie ties[] = {
      {0.25f, 0.0f, 0.5f, 0.5f, 0.0f},      {0.75f, 1.0f, 1.0f, 1.0f, 0.5f},
      {1.25f, 1.0f, 1.5f, 1.5f, 1.0f},      {1.75f, 2.0f, 2.0f, 2.0f, 1.5f},
      {2.5f, 2.0f, 3.0f, 3.0f, 2.0f},       {3.5f, 4.0f, 4.0f, 4.0f, 3.0f},
      {5.0f, 4.0f, 6.0f, 6.0f, 4.0f},       {-5.0f, -4.0f, -6.0f, -4.0f, -4.0f},
      {-0.25f, -0.0f, -0.5f, -0.0f, -0.0f}, {-2.5f, -2.0f, -3.0f, -2.0f, -2.0f},
  };
  for (const Tie& t : ties) {
    EXPECT_EQ(nx::e2m1_decode(nx::e2m1_encode(t.x, Round::even)), t.even) << t.x;
    EXPECT_EQ(nx::e2m1_decode(nx::e2m1_encode(t.x, Round::away)), t.away) << t.x;
    EXPECT_EQ(nx::e2m1_decode(nx::e2m1_encode(t.x, Round::up)), t.up) << t.x;
    EXPECT_EQ(nx::e2m1_decode(nx::e2m1_encode(t.x, Round::zero)), t.zero) << t.x;
  }
}

TEST(E2M1, SaturatesAndMapsNanToZero) {
  const float inf = std::numeric_limits<float>::infinity();
  for (Round mode : kNearestModes) {
    for (float x : {6.0f, 6.5f, 7.0f, 7.999f, 8.0f, 1e30f, inf}) {
      EXPECT_EQ(nx::e2m1_encode(x, mode), 7u) << x;
      EXPECT_EQ(nx::e2m1_encode(-x, mode), 15u) << -x;
    }
    EXPECT_EQ(nx::e2m1_encode(std::bit_cast<float>(0x7fc00000u), mode), 0u);
    EXPECT_EQ(nx::e2m1_encode(std::bit_cast<float>(0xffc00001u), mode), 0u);
  }
  EXPECT_EQ(nx::e2m1_encode(1e30f, Round::stochastic, 0xffu, 8), 7u);
  EXPECT_EQ(nx::e2m1_encode(std::bit_cast<float>(0x7fc00000u), Round::stochastic, 0u, 8), 0u);
  // The sign is kept for zero and for values that round to zero.
  EXPECT_EQ(nx::e2m1_encode(-0.0f, Round::even), 8u);
  EXPECT_EQ(nx::e2m1_encode(-1e-30f, Round::away), 8u);
  EXPECT_EQ(nx::e2m1_encode(-std::numeric_limits<float>::denorm_min(), Round::up), 8u);
}

TEST(E2M1, NeighboursBracketTheValue) {
  const Grid g = make_grid(spec_e2m1());
  std::mt19937_64 gen(11);
  for (int n = 0; n < 20000; ++n) {
    const float x = random_input(gen, g);
    u32 lo = 99, hi = 99;
    nx::e2m1_neighbours(x, &lo, &hi);
    const double a = std::fabs(double(x));
    if (a >= 6.0) {
      EXPECT_EQ(lo, 7u);
      EXPECT_EQ(hi, 7u);
      continue;
    }
    // lo: the largest grid value <= |x|; hi: the smallest >= |x|.
    const auto it = std::upper_bound(g.mag.begin(), g.mag.end(), a) - 1;
    EXPECT_EQ(lo, g.code[it - g.mag.begin()]) << x;
    EXPECT_EQ(hi, *it == a ? lo : lo + 1u) << x;
  }
  u32 lo = 99, hi = 99;
  nx::e2m1_neighbours(std::bit_cast<float>(0x7fc00000u), &lo, &hi);
  EXPECT_EQ(lo, 0u);
  EXPECT_EQ(hi, 0u);
}

TEST(E2M1, PacksTwoCodesPerByteFirstInTheLowNibble) {
  for (u32 a = 0; a < 16; ++a)
    for (u32 b = 0; b < 16; ++b) EXPECT_EQ(nx::pack_e2m1(a, b), a + 16u * b);
  EXPECT_EQ(nx::pack_e2m1(0x13u, 0x25u), 0x53u);  // only the low 4 bits of each code count
}

// ---------------------------------------------------------------------------------------------
// E8M0.

TEST(E8M0, DecodeEveryCode) {
  for (u32 code = 0; code < 255; ++code)
    EXPECT_EQ(double(nx::e8m0_decode(code)), std::ldexp(1.0, int(code) - 127)) << code;
  EXPECT_TRUE(std::isnan(nx::e8m0_decode(0xFF)));
  EXPECT_EQ(nx::kE8M0Nan, 0xFFu);
  for (u32 code = 1; code < 255; ++code)
    EXPECT_LT(nx::e8m0_decode(code - 1), nx::e8m0_decode(code));
}

TEST(E8M0, FromExponentClampsBelowAndIsNanAbove) {
  for (int e = -300; e <= 300; ++e) {
    const u32 want = e < -127 ? 0u : (e > 127 ? 0xFFu : static_cast<u32>(e + 127));
    EXPECT_EQ(nx::e8m0_from_exponent(e), want) << e;
  }
  // Every finite code round-trips through its exponent.
  for (u32 code = 0; code < 255; ++code)
    EXPECT_EQ(nx::e8m0_from_exponent(std::ilogb(nx::e8m0_decode(code))), code) << code;
}

// ---------------------------------------------------------------------------------------------
// common.cuh: float bit helpers and the 16-bit float conversions.

TEST(Common, FloorLog2SignificandAndPow2OverAllBinades) {
  std::mt19937_64 gen(3);
  for (int n = 0; n < 200000; ++n) {
    // Every binade equally often, subnormals included.
    const u32 bits = static_cast<u32>(gen()) & 0x7fffffffu;
    const float a = std::bit_cast<float>(bits);
    if (a == 0.0f || !std::isfinite(a)) continue;
    EXPECT_EQ(nx::floor_log2(a), std::ilogb(a)) << a;
    EXPECT_EQ(nx::floor_log2(-a), std::ilogb(a)) << a;  // the sign is ignored
    const float sig = nx::significand(a);
    EXPECT_EQ(double(sig), std::ldexp(double(a), -std::ilogb(a))) << a;
    EXPECT_TRUE(sig >= 1.0f && sig < 2.0f) << a;
  }
  for (int e = -149; e <= 127; ++e) EXPECT_EQ(double(nx::pow2f(e)), std::ldexp(1.0, e)) << e;
  EXPECT_EQ(nx::floor_log2(std::numeric_limits<float>::denorm_min()), -149);
  EXPECT_EQ(nx::floor_log2(std::numeric_limits<float>::max()), 127);
}

TEST(Common, ClassifiesFloats) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(nx::is_nan(nan));
  EXPECT_TRUE(nx::is_nan(-nan));
  EXPECT_FALSE(nx::is_nan(inf));
  EXPECT_FALSE(nx::is_finite(inf));
  EXPECT_FALSE(nx::is_finite(-inf));
  EXPECT_FALSE(nx::is_finite(nan));
  EXPECT_TRUE(nx::is_finite(std::numeric_limits<float>::max()));
  EXPECT_TRUE(nx::sign_bit(-0.0f));
  EXPECT_FALSE(nx::sign_bit(0.0f));
  EXPECT_EQ(std::bit_cast<u32>(nx::abs_f(-0.0f)), 0u);
  EXPECT_EQ(nx::abs_f(-inf), inf);
  EXPECT_EQ(nx::kFloatMax, std::numeric_limits<float>::max());
}

// f16: sign, 5 exponent bits (bias 15), 10 mantissa bits, IEEE Inf/NaN.
TEST(Common, F16ToFloatEveryCode) {
  for (u32 h = 0; h < 65536; ++h) {
    const bool neg = h & 0x8000u;
    const u32 e = (h >> 10) & 31u, m = h & 1023u;
    const float got = nx::f16_to_float(static_cast<nx::u16>(h));
    EXPECT_EQ(std::signbit(got), neg) << h;
    if (e == 31 && m != 0) {
      EXPECT_TRUE(std::isnan(got)) << h;
      continue;
    }
    double want = e == 31
                      ? std::numeric_limits<double>::infinity()
                      : (e == 0 ? std::ldexp(double(m), -24) : std::ldexp(1024.0 + m, int(e) - 25));
    if (neg) want = -want;
    EXPECT_EQ(double(got), want) << h;
  }
}

// bf16: the top 16 bits of a float.
double bf16_oracle(u32 h) {
  const bool neg = h & 0x8000u;
  const u32 e = (h >> 7) & 255u, m = h & 127u;
  double v = e == 255
                 ? (m == 0 ? std::numeric_limits<double>::infinity() : std::nan(""))
                 : (e == 0 ? std::ldexp(double(m), -133) : std::ldexp(128.0 + m, int(e) - 134));
  return neg ? -v : v;
}

TEST(Common, Bf16ToFloatEveryCode) {
  for (u32 h = 0; h < 65536; ++h) {
    const float got = nx::bf16_to_float(static_cast<nx::u16>(h));
    const double want = bf16_oracle(h);
    EXPECT_EQ(std::signbit(got), (h & 0x8000u) != 0) << h;
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << h;
    } else {
      EXPECT_EQ(double(got), want) << h;
    }
  }
}

// Round to nearest even from the definition: of the two bf16 values around x (the larger may be
// the "2^128" just past the largest finite, i.e. Inf), the nearer; a tie goes to the even code.
u32 float_to_bf16_oracle(float x) {
  const u32 u = std::bit_cast<u32>(x);
  const u32 sign = u & 0x80000000u;
  const double a = std::fabs(double(x));
  const u32 lo = (u & 0x7fffffffu) >> 16;  // truncation: the bf16 at or below |x|
  const double lo_v = std::fabs(bf16_oracle(lo));
  const double hi_v = lo == 0x7f7fu ? 0x1p128 : std::fabs(bf16_oracle(lo + 1));
  const double mid = (lo_v + hi_v) / 2.0;
  const bool up = a > mid || (a == mid && (lo & 1u));
  return (sign >> 16) | (up ? lo + 1 : lo);
}

TEST(Common, FloatToBf16RoundsToNearestEven) {
  Mismatches bad;
  const auto check = [&](float x) {
    const u32 got = nx::float_to_bf16(x), want = float_to_bf16_oracle(x);
    if (got != want) {
      char buf[120];
      std::snprintf(buf, sizeof buf, "float_to_bf16(%a): got 0x%04x want 0x%04x", double(x), got,
                    want);
      bad.add(buf);
    }
  };
  // Every tie between neighbouring bf16 values and the floats on either side of it.
  for (u32 h = 0; h < 0x7f80u; ++h) {
    const float mid = std::bit_cast<float>((h << 16) | 0x8000u);
    for (float m : {mid, -mid}) {
      check(m);
      check(next_up(m));
      check(next_down(m));
    }
  }
  std::mt19937_64 gen(5);
  for (int n = 0; n < 1000000; ++n) {
    const float x = std::bit_cast<float>(static_cast<u32>(gen()));
    if (!std::isnan(x)) check(x);
  }
  EXPECT_EQ(nx::float_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80u);
  EXPECT_EQ(nx::float_to_bf16(-std::numeric_limits<float>::infinity()), 0xff80u);
  EXPECT_EQ(nx::float_to_bf16(std::numeric_limits<float>::max()), 0x7f80u);  // rounds to Inf
  EXPECT_EQ(nx::float_to_bf16(1.0f), 0x3f80u);
  // NaN stays a quiet NaN of the same sign, also when its payload lies only in the low 16 bits.
  for (u32 bits : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fbfffffu}) {
    const nx::u16 h = nx::float_to_bf16(std::bit_cast<float>(bits));
    EXPECT_TRUE(std::isnan(nx::bf16_to_float(h))) << std::hex << bits;
    EXPECT_EQ(h & 0x8000u, (bits >> 16) & 0x8000u) << std::hex << bits;
    EXPECT_TRUE(h & 0x0040u) << std::hex << bits;
  }
}

// ---------------------------------------------------------------------------------------------
// core/format: names, maxima and the MiniFloat descriptions behind each format.

TEST(CoreFormat, NamesParseBackAndErrorsListTheValidNames) {
  for (const auto& entry : elem_format_names())
    EXPECT_EQ(parse_named(elem_format_names(), entry.name, "element format"), entry.value);
  EXPECT_EQ(name(ElemFormat::e2m1), "e2m1");
  EXPECT_EQ(name(ElemFormat::e4m3), "e4m3");
  EXPECT_EQ(name(ElemFormat::e5m2), "e5m2");
  EXPECT_EQ(name(ScaleFormat::e8m0), "e8m0");
  EXPECT_EQ(name(ScaleFormat::ue4m3), "ue4m3");
  EXPECT_EQ(name(ScaleFormat::ue5m3), "ue5m3");
  EXPECT_EQ(name(ScaleFormat::fp32), "fp32");
  EXPECT_EQ(name(DType::bf16), "bfloat16");
  EXPECT_EQ(name_of(ue5m3_variant_names(), Ue5m3Variant::nan_ff), "114688");
  EXPECT_EQ(name_of(ue5m3_variant_names(), Ue5m3Variant::all_finite), "122880");
  EXPECT_EQ(name_of(ue5m3_variant_names(), Ue5m3Variant::ieee), "61440");
  try {
    parse_named(elem_format_names(), "fp4", "element format");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("unknown element format 'fp4'"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("valid: e2m1, e4m3, e5m2"), std::string::npos) << e.what();
  }
}

TEST(CoreFormat, SizesAndMaxima) {
  EXPECT_EQ(bits(ElemFormat::e2m1), 4);
  EXPECT_EQ(bits(ElemFormat::e4m3), 8);
  EXPECT_EQ(bits(ElemFormat::e5m2), 8);
  EXPECT_EQ(elem_max(ElemFormat::e2m1), 6.0f);
  EXPECT_EQ(elem_max(ElemFormat::e4m3), 448.0f);
  EXPECT_EQ(elem_max(ElemFormat::e5m2), 57344.0f);
  for (ElemFormat f : {ElemFormat::e2m1, ElemFormat::e4m3, ElemFormat::e5m2})
    EXPECT_EQ(elem_emax(f), std::ilogb(elem_max(f))) << name(f);
  EXPECT_EQ(dtype_size(DType::f32), 4);
  EXPECT_EQ(dtype_size(DType::f16), 2);
  EXPECT_EQ(dtype_size(DType::bf16), 2);
  EXPECT_EQ(scale_format_max(ScaleFormat::e8m0, Ue5m3Variant::nan_ff), 0x1p127f);
  EXPECT_EQ(scale_format_max(ScaleFormat::ue4m3, Ue5m3Variant::nan_ff), 448.0f);
  EXPECT_EQ(scale_format_max(ScaleFormat::fp32, Ue5m3Variant::nan_ff),
            std::numeric_limits<float>::max());
  EXPECT_EQ(scale_format_max(ScaleFormat::ue5m3, Ue5m3Variant::nan_ff), 114688.0f);
  EXPECT_EQ(scale_format_max(ScaleFormat::ue5m3, Ue5m3Variant::all_finite), 122880.0f);
  EXPECT_EQ(scale_format_max(ScaleFormat::ue5m3, Ue5m3Variant::ieee), 61440.0f);
  EXPECT_EQ(ue5m3_variant_max(Ue5m3Variant::nan_ff), 114688.0f);
  EXPECT_EQ(ue5m3_variant_max(Ue5m3Variant::all_finite), 122880.0f);
  EXPECT_EQ(ue5m3_variant_max(Ue5m3Variant::ieee), 61440.0f);
}

// The MiniFloat behind each format name decodes every code like the textbook format it names.
void expect_same_format(const nx::MiniFloat& mf, const FormatSpec& spec) {
  for (u32 code = 0; code < code_count(spec); ++code) {
    const double want = oracle_decode(spec, code);
    const float got = nx::mf_decode(mf, code);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << spec.name << " " << code;
    } else {
      EXPECT_EQ(double(got), want) << spec.name << " " << code;
    }
  }
  EXPECT_EQ(mf.has_sign, spec.has_sign) << spec.name;
}

TEST(CoreFormat, MiniFloatOfEachFormat) {
  expect_same_format(minifloat(ElemFormat::e4m3), spec_e4m3());
  expect_same_format(minifloat(ElemFormat::e5m2), spec_e5m2());
  expect_same_format(minifloat(ScaleFormat::ue4m3, Ue5m3Variant::nan_ff), spec_ue4m3());
  expect_same_format(minifloat(ScaleFormat::ue5m3, Ue5m3Variant::nan_ff), spec_ue5m3_nan());
  expect_same_format(minifloat(ScaleFormat::ue5m3, Ue5m3Variant::all_finite), spec_ue5m3_finite());
  expect_same_format(minifloat(ScaleFormat::ue5m3, Ue5m3Variant::ieee), spec_ue5m3_ieee());
  const auto expect_internal = [](auto&& call) {
    try {
      call();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::internal);
    }
  };
  expect_internal([] { minifloat(ElemFormat::e2m1); });
  expect_internal([] { minifloat(ScaleFormat::e8m0, Ue5m3Variant::nan_ff); });
  expect_internal([] { minifloat(ScaleFormat::fp32, Ue5m3Variant::nan_ff); });
}

}  // namespace
}  // namespace fp4jit::test
