// log2 / exp2 from basic operations (numerics/mathfn.cuh) against the C library in double.
//
// The header promises "a few ulp". Worst cases over every float of [0.25, 4) and of exp2's whole
// domain: log2_portable 3.93 ulp (its five roundings pile up where the result sits at the top of
// a binade, as at x = 0x1.1712dep+0), exp2_portable 1.18 ulp. The bounds below leave no room for
// a further lost bit.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "numerics/mathfn.cuh"
#include "tests/unit/format_oracle.hpp"

namespace fp4jit::nx {
namespace {

using test::ulp_error;

constexpr double kLog2MaxUlp = 4.0;
constexpr double kExp2MaxUlp = 2.0;

TEST(Log2Portable, EveryFloatOfFourBinadesAroundOne) {
  double worst = 0.0;
  float worst_x = 0.0f;
  for (u32 b = std::bit_cast<u32>(0.25f); b < std::bit_cast<u32>(4.0f); ++b) {
    const float x = std::bit_cast<float>(b);
    const double err = ulp_error(log2_portable(x), std::log2(double(x)));
    if (err > worst) worst = err, worst_x = x;
  }
  EXPECT_LE(worst, kLog2MaxUlp) << "at x = " << std::hexfloat << worst_x;
}

TEST(Log2Portable, RandomFloatsOfEveryBinadeIncludingSubnormals) {
  std::mt19937_64 gen(41);
  double worst = 0.0;
  float worst_x = 0.0f;
  for (int n = 0; n < 3000000; ++n) {
    const float x = std::bit_cast<float>(static_cast<u32>(gen()) & 0x7fffffffu);
    if (!(x > 0.0f) || std::isinf(x)) continue;
    const double err = ulp_error(log2_portable(x), std::log2(double(x)));
    if (err > worst) worst = err, worst_x = x;
  }
  EXPECT_LE(worst, kLog2MaxUlp) << "at x = " << std::hexfloat << worst_x;
}

TEST(Log2Portable, PowersOfTwoAreExact) {
  for (int k = -149; k <= 127; ++k) EXPECT_EQ(log2_portable(std::ldexp(1.0f, k)), float(k)) << k;
}

TEST(Exp2Portable, EveryFloatOfOneBinadeAndRandomOverTheDomain) {
  double worst = 0.0;
  float worst_y = 0.0f;
  const auto check = [&](float y) {
    const double err = ulp_error(exp2_portable(y), std::exp2(double(y)));
    if (err > worst) worst = err, worst_y = y;
  };
  for (u32 b = std::bit_cast<u32>(0.5f); b < std::bit_cast<u32>(1.0f); ++b) {
    check(std::bit_cast<float>(b));
    check(-std::bit_cast<float>(b));
  }
  std::mt19937_64 gen(43);
  std::uniform_real_distribution<float> domain(-126.0f, 127.0f);
  for (int n = 0; n < 3000000; ++n) check(domain(gen));
  // Small |y| (where 2^y is near 1) from every binade.
  for (int n = 0; n < 1000000; ++n) {
    const float y = std::bit_cast<float>(static_cast<u32>(gen()) & 0xbfffffffu);  // |y| < 2
    if (std::isfinite(y)) check(y);
  }
  EXPECT_LE(worst, kExp2MaxUlp) << "at y = " << std::hexfloat << worst_y;
}

TEST(Exp2Portable, IntegersAreExactAndTheDomainEdgesAsDocumented) {
  for (int k = -126; k <= 127; ++k) EXPECT_EQ(exp2_portable(float(k)), std::ldexp(1.0f, k)) << k;
  EXPECT_EQ(exp2_portable(0.0f), 1.0f);
  EXPECT_EQ(exp2_portable(-0.0f), 1.0f);
  // Below -126 results flush to zero, above 127 they are +inf.
  EXPECT_EQ(exp2_portable(std::nextafter(-126.0f, -200.0f)), 0.0f);
  EXPECT_EQ(exp2_portable(-1000.0f), 0.0f);
  EXPECT_EQ(exp2_portable(std::nextafter(127.0f, 200.0f)), std::numeric_limits<float>::infinity());
  EXPECT_EQ(exp2_portable(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
}

TEST(Log2Exp2, ComposeToTheIdentityWithinTheirErrors) {
  std::mt19937 gen(47);
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  for (int n = 0; n < 100000; ++n) {
    const float x = std::exp2(dist(gen));
    // |d 2^y / dy| = ln2 * 2^y: a 4-ulp error in y near 100 is 2^-17 relative in the result.
    EXPECT_NEAR(exp2_portable(log2_portable(x)) / x, 1.0f, 2e-5f) << x;
  }
}

}  // namespace
}  // namespace fp4jit::nx
