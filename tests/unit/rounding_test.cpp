// Rounding decisions (numerics/rounding.cuh) as the quantizers use them: the Microsoft FP4 LUT
// (ties toward +inf) with its published test vector, and stochastic rounding, which must be
// exactly unbiased whenever the fraction fits in the random bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "numerics/e2m1.cuh"
#include "numerics/minifloat.cuh"
#include "numerics/philox.cuh"
#include "numerics/rounding.cuh"

namespace fp4jit::nx {
namespace {

float next_up(float x) {
  return std::nextafter(x, std::numeric_limits<float>::infinity());
}
float next_down(float x) {
  return std::nextafter(x, -std::numeric_limits<float>::infinity());
}

// The Microsoft FP4 reference LUT: v is compared strictly (<) against the thresholds in order;
// the first threshold above v picks the value. Ties therefore go toward +inf.
float ms_lut(float v) {
  const float thresholds[] = {-5.0f, -3.5f, -2.5f, -1.75f, -1.25f, -0.75f, -0.25f,
                              0.25f, 0.75f, 1.25f, 1.75f,  2.5f,   3.5f,   5.0f};
  const float values[] = {-6.0f, -4.0f, -3.0f, -2.0f, -1.5f, -1.0f, -0.5f, 0.0f,
                          0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f};
  for (int i = 0; i < 14; ++i)
    if (v < thresholds[i]) return values[i];
  return values[14];
}

TEST(MicrosoftLut, PublishedTestVector) {
  // q = LUT(x * sf) / sf with sf = 8.
  const float x[] = {0.048f, 0.0997f, 0.2002f};
  const float want[] = {0.0625f, 0.125f, 0.1875f};
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(e2m1_decode(e2m1_encode(x[i] * 8.0f, Round::up)) / 8.0f, want[i]) << x[i];
}

TEST(MicrosoftLut, TiesGoTowardPlusInfinity) {
  EXPECT_EQ(e2m1_decode(e2m1_encode(5.0f, Round::up)), 6.0f);
  EXPECT_EQ(e2m1_decode(e2m1_encode(-5.0f, Round::up)), -4.0f);
  EXPECT_EQ(e2m1_decode(e2m1_encode(0.25f, Round::up)), 0.5f);
  EXPECT_EQ(e2m1_decode(e2m1_encode(-0.25f, Round::up)), 0.0f);
}

TEST(MicrosoftLut, RoundUpEqualsTheLutEverywhere) {
  std::vector<float> xs;
  for (float t : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f, 0.0f})
    for (float s : {t, -t}) xs.insert(xs.end(), {s, next_up(s), next_down(s)});
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  for (int i = 0; i < 200000; ++i) xs.push_back(dist(gen));
  for (float x : xs) EXPECT_EQ(e2m1_decode(e2m1_encode(x, Round::up)), ms_lut(x)) << x;
}

// ---------------------------------------------------------------------------------------------
// Stochastic rounding.

// Steps up over all 2^R values of the random bits.
long count_step_ups(float frac, int r_bits) {
  long ups = 0;
  for (u32 r = 0; r < (1u << r_bits); ++r)
    ups += round_up(frac, false, false, Round::stochastic, r, r_bits);
  return ups;
}

TEST(Stochastic, ExactlyUnbiasedWhenTheFractionFitsInTheRandomBits) {
  for (u32 k = 0; k < 256; ++k) EXPECT_EQ(count_step_ups(float(k) / 256.0f, 8), long(k)) << k;
  for (u32 k : {0u, 1u, 2u, 255u, 256u, 12345u, 32767u, 32768u, 32769u, 65534u, 65535u})
    EXPECT_EQ(count_step_ups(float(k) / 65536.0f, 16), long(k)) << k;
  // The decision ignores the parity of the lower point and the sign.
  for (u32 r = 0; r < 256; ++r) {
    const bool base = round_up(0.375f, false, false, Round::stochastic, r, 8);
    EXPECT_EQ(round_up(0.375f, true, false, Round::stochastic, r, 8), base);
    EXPECT_EQ(round_up(0.375f, false, true, Round::stochastic, r, 8), base);
  }
}

// Any fraction: the documented rule, step up iff r + 1/2 < frac * 2^R, evaluated in double; the
// step probability is then within 2^-(R+1) of frac.
TEST(Stochastic, FinerFractionsFollowTheDocumentedRule) {
  std::mt19937 gen(9);
  std::uniform_real_distribution<float> dist(0.0f, 1.0f);
  for (int n = 0; n < 200; ++n) {
    const float frac = dist(gen);
    for (int r_bits : {8, 16}) {
      const double scaled = double(frac) * std::ldexp(1.0, r_bits);
      long want = 0;
      for (u32 r = 0; r < (1u << r_bits); ++r) want += double(r) + 0.5 < scaled;
      const long got = count_step_ups(frac, r_bits);
      EXPECT_EQ(got, want) << frac << " R=" << r_bits;
      const double p = double(got) / std::ldexp(1.0, r_bits);
      EXPECT_LE(std::fabs(p - frac), std::ldexp(1.0, -r_bits - 1)) << frac << " R=" << r_bits;
    }
  }
}

TEST(Stochastic, OnlyTheLowRandomBitsCount) {
  for (u32 r = 0; r < 256; ++r)
    for (u32 high : {0x100u, 0xabcd00u, 0xffffff00u})
      EXPECT_EQ(round_up(0.6f, false, false, Round::stochastic, r | high, 8),
                round_up(0.6f, false, false, Round::stochastic, r, 8));
  for (u32 r : {0u, 100u, 40000u, 65535u})
    EXPECT_EQ(round_up(0.3f, false, false, Round::stochastic, r | 0xffff0000u, 16),
              round_up(0.3f, false, false, Round::stochastic, r, 16));
}

// Every E2M1 interval: lo + (k / 2^R) * step steps up for exactly k of the 2^R random values,
// for both signs.
TEST(Stochastic, E2M1StepsUpExactlyFracTimesTwoToTheR) {
  const float grid[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (int r_bits : {8, 16}) {
    const u32 n = 1u << r_bits;
    for (u32 lo = 0; lo < 7; ++lo) {
      const float step = grid[lo + 1] - grid[lo];
      for (u32 k : {0u, 1u, n / 4, n / 2 - 1, n / 2, n / 2 + 1, 3 * n / 4 + 3, n - 1}) {
        const float a = grid[lo] + step * (float(k) / float(n));  // exact: few bits
        for (float v : {a, -a}) {
          long ups = 0;
          for (u32 r = 0; r < n; ++r) {
            const u32 code = e2m1_encode(v, Round::stochastic, r, r_bits);
            ASSERT_TRUE((code & 7u) == lo || (code & 7u) == lo + 1) << v;
            ASSERT_EQ(code >> 3, std::signbit(v) ? 1u : 0u) << v;
            ups += (code & 7u) == lo + 1;
          }
          EXPECT_EQ(ups, long(k)) << "v=" << v << " R=" << r_bits;
        }
      }
    }
  }
}

TEST(Stochastic, MiniFloatStepsUpExactlyFracTimesTwoToTheR) {
  // E4M3 neighbours 1.125 and 1.25 (step 1/8), a subnormal pair and the top binade.
  struct Pair {
    float lo, step;
  };
  for (const Pair& p : {Pair{1.125f, 0.125f}, Pair{0x1p-9f, 0x1p-9f}, Pair{384.0f, 32.0f}}) {
    for (u32 k = 0; k < 256; k += 5) {
      const float v = p.lo + p.step * (float(k) / 256.0f);
      const u32 lo_code = mf_encode(kE4M3, p.lo, Round::even, true);
      long ups = 0;
      for (u32 r = 0; r < 256; ++r)
        ups += mf_encode(kE4M3, v, Round::stochastic, true, r, 8) == lo_code + 1;
      EXPECT_EQ(ups, long(k)) << v;
    }
  }
}

TEST(Stochastic, GridValuesNeverMove) {
  for (u32 code = 0; code < 16; ++code) {
    const float v = e2m1_decode(code);
    for (u32 r = 0; r < 65536; r += 7) EXPECT_EQ(e2m1_encode(v, Round::stochastic, r, 16), code);
    for (u32 r = 0; r < 256; ++r) EXPECT_EQ(e2m1_encode(v, Round::stochastic, r, 8), code);
  }
  for (u32 code = 0; code < 256; ++code) {
    if (mf_is_nan_code(kE4M3, code)) continue;
    const float v = mf_decode(kE4M3, code);
    for (u32 r = 0; r < 256; ++r)
      EXPECT_EQ(mf_encode(kE4M3, v, Round::stochastic, true, r, 8), code);
  }
}

// With Philox bits from sr_bits over many (seed, index) pairs, the mean of the decoded results
// converges to the exact expectation: within 5 standard deviations.
void expect_unbiased(float v, int r_bits, double lo, double step, double p_up) {
  const int kSeeds = 64, kPerSeed = 4096;
  double sum = 0.0;
  for (int seed = 0; seed < kSeeds; ++seed)
    for (int i = 0; i < kPerSeed; ++i)
      sum += e2m1_decode(e2m1_encode(v, Round::stochastic,
                                     sr_bits(0x1234567800000000ull + seed, i, r_bits), r_bits));
  const double n = double(kSeeds) * kPerSeed;
  const double mean = sum / n;
  const double expected = lo + step * p_up;
  const double sigma = std::fabs(step) * std::sqrt(p_up * (1.0 - p_up) / n);
  EXPECT_LE(std::fabs(mean - expected), 5.0 * sigma)
      << "v=" << v << " R=" << r_bits << " mean=" << mean;
}

TEST(Stochastic, UnbiasedWithPhiloxBits) {
  for (int r_bits : {8, 16}) {
    const double n = std::ldexp(1.0, r_bits);
    // Fractions that fit in R bits: the expectation is v itself.
    expect_unbiased(0.5f + 0.5f * float(77 / n), r_bits, 0.5, 0.5, 77 / n);
    expect_unbiased(-(2.0f + float(201 / n)), r_bits, -2.0, -1.0, 201 / n);
    expect_unbiased(4.0f + 2.0f * float(0.5), r_bits, 4.0, 2.0, 0.5);
    // 0.3 has more bits than R: the step probability is round(frac * 2^R) / 2^R, with the
    // rounding of r + 1/2 < frac * 2^R.
    const double frac = (double(0.3f) - 0.0) / 0.5;
    const double p = std::ceil(frac * n - 0.5) / n;
    expect_unbiased(0.3f, r_bits, 0.0, 0.5, p);
  }
}

}  // namespace
}  // namespace fp4jit::nx
