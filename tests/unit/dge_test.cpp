// Differentiable gradient estimator (numerics/dge.cuh): the published BF16 test vector, the
// clip at interval midpoints, k = 1, and the formula evaluated in double over a sweep.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "numerics/common.cuh"
#include "numerics/dge.cuh"

namespace fp4jit::nx {
namespace {

float to_bf16(float x) {
  return bf16_to_float(float_to_bf16(x));
}

// f'(v) = (1/k) |2x'/d - 1|^(1/k - 1), clipped; x' the offset of |v| into its interval of width d
// (0.5 on [0, 2), 1 on [2, 4), 2 on [4, 6]); |v| past 6 counts as 6.
double dge_oracle(double v, double k, double clip) {
  const double a = std::min(std::fabs(v), 6.0);
  double start, d;
  if (a < 2.0)
    d = 0.5, start = std::floor(a / 0.5) * 0.5;
  else if (a < 4.0)
    d = 1.0, start = std::floor(a);
  else
    d = 2.0, start = 4.0;
  const double t = std::fabs(2.0 * (a - start) / d - 1.0);
  return std::min(std::pow(t, 1.0 / k - 1.0) / k, clip);
}

TEST(Dge, PublishedBf16TestVector) {
  // linspace(-6, 6, 20) in BF16; f = dge(x, k = 5, clip = 3) in BF16. The list is symmetric.
  const float first_ten[10] = {0.2002f, 0.4375f, 0.6055f, 0.2168f, 1.8359f,
                               0.2695f, 0.3027f, 0.2695f, 0.2402f, 0.5781f};
  for (int i = 0; i < 20; ++i) {
    const float x = to_bf16(float(-6.0 + 12.0 * i / 19.0));
    const float f = to_bf16(dge_factor(x, 5.0f, 3.0f));
    const float want = to_bf16(first_ten[i < 10 ? i : 19 - i]);
    EXPECT_EQ(f, want) << "i=" << i << " x=" << x;
  }
}

TEST(Dge, ClipsAtIntervalMidpoints) {
  for (float mid : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f}) {
    for (float v : {mid, -mid}) {
      EXPECT_EQ(dge_factor(v, 5.0f, 3.0f), 3.0f) << v;
      EXPECT_EQ(dge_factor(v, 5.0f, 10.0f), 10.0f) << v;
      EXPECT_EQ(dge_factor(v, 3.0f, 3.0f), 3.0f) << v;
    }
  }
}

TEST(Dge, KEqualOneIsTheStraightThroughEstimator) {
  std::mt19937 gen(53);
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  for (int n = 0; n < 20000; ++n) EXPECT_EQ(dge_factor(dist(gen), 1.0f, 3.0f), 1.0f);
  for (float mid : {0.25f, 2.5f, 5.0f, -0.75f}) {
    EXPECT_EQ(dge_factor(mid, 1.0f, 3.0f), 1.0f) << mid;
    EXPECT_EQ(dge_factor(mid, 1.0f, 0.5f), 0.5f) << mid;  // the clip still applies
  }
}

TEST(Dge, GridPointsGiveOneOverKAndLargeValuesCountAsSix) {
  for (float g : {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f}) {
    EXPECT_EQ(dge_factor(g, 5.0f, 3.0f), 1.0f / 5.0f) << g;
    EXPECT_EQ(dge_factor(-g, 4.0f, 3.0f), 0.25f) << g;
  }
  const float at6 = dge_factor(6.0f, 5.0f, 3.0f);
  for (float v : {6.5f, 100.0f, 1e30f, std::numeric_limits<float>::infinity()}) {
    EXPECT_EQ(dge_factor(v, 5.0f, 3.0f), at6) << v;
    EXPECT_EQ(dge_factor(-v, 5.0f, 3.0f), at6) << v;
  }
  EXPECT_TRUE(std::isnan(dge_factor(std::numeric_limits<float>::quiet_NaN(), 5.0f, 3.0f)));
}

TEST(Dge, MatchesTheFormulaInDoubleAndIsSymmetric) {
  std::mt19937 gen(59);
  std::uniform_real_distribution<float> dist(-7.0f, 7.0f);
  for (float k : {5.0f, 3.0f, 2.0f, 0.5f}) {
    for (int n = 0; n < 100000; ++n) {
      const float v = dist(gen);
      const float got = dge_factor(v, k, 3.0f);
      const double want = dge_oracle(v, k, 3.0);
      // log2 and exp2 are accurate to a few ulp; through the power that is ~1e-6 relative.
      EXPECT_NEAR(got, want, 1e-5 * want) << "v=" << v << " k=" << k;
      EXPECT_EQ(dge_factor(-v, k, 3.0f), got) << v;
    }
  }
}

}  // namespace
}  // namespace fp4jit::nx
