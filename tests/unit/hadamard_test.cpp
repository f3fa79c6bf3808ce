// Randomized Hadamard transform (numerics/hadamard.cuh) against the explicit Sylvester matrix in
// double, its inverse, and the sign vectors (NVFP4's fixed one, seeded random ones).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/recipe.hpp"
#include "numerics/hadamard.cuh"

namespace fp4jit::nx {
namespace {

// H_N[i][j] of the Sylvester construction H_2n = [[H_n, H_n], [H_n, -H_n]]: (-1)^popcount(i & j).
int sylvester(int i, int j) {
  return (std::popcount(static_cast<unsigned>(i & j)) & 1) ? -1 : 1;
}

// (1/sqrt(N)) H_N diag(s) x in double.
std::vector<double> transform_oracle(const std::vector<float>& x, const SignMask& s) {
  const int n = static_cast<int>(x.size());
  std::vector<double> y(n, 0.0);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j)
      y[i] += sylvester(i, j) * (sign_negative(s, j) ? -1.0 : 1.0) * double(x[j]);
    y[i] /= std::sqrt(double(n));
  }
  return y;
}

SignMask mask_from(std::uint64_t a, std::uint64_t b) {
  return SignMask{{u32(a), u32(a >> 32), u32(b), u32(b >> 32)}};
}

class Hadamard : public ::testing::TestWithParam<int> {};

TEST_P(Hadamard, MatchesTheSylvesterMatrixInDouble) {
  const int n = GetParam();
  const int stages = std::countr_zero(static_cast<unsigned>(n));
  std::mt19937_64 gen(n);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> x(n);
    double l1 = 0.0;
    for (float& v : x) {
      v = normal(gen) * std::ldexp(1.0f, static_cast<int>(gen() % 21) - 10);
      l1 += std::fabs(v);
    }
    const SignMask s = mask_from(gen(), gen());
    const std::vector<double> want = transform_oracle(x, s);
    std::vector<float> y = x;
    hadamard_transform(y.data(), n, s);
    // One rounding per butterfly stage on partial sums bounded by |x|_1, one for the norm.
    const double tol = (stages + 2) * std::ldexp(1.0, -24) * l1 / std::sqrt(double(n));
    for (int i = 0; i < n; ++i) EXPECT_NEAR(y[i], want[i], tol) << "n=" << n << " i=" << i;
  }
}

// y = (1/sqrt N) H S x; H is symmetric with H H = N I, so x = S (1/sqrt N) H y: the transform
// without signs, then the signs.
TEST_P(Hadamard, InverseRecoversTheInput) {
  const int n = GetParam();
  const int stages = std::countr_zero(static_cast<unsigned>(n));
  std::mt19937_64 gen(100 + n);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<float> x(n);
    double l1 = 0.0;
    for (float& v : x) l1 += std::fabs(v = dist(gen));
    const SignMask s = random_signs(gen());
    std::vector<float> y = x;
    hadamard_transform(y.data(), n, s);
    hadamard_transform(y.data(), n, SignMask{});
    for (int i = 0; i < n; ++i)
      if (sign_negative(s, i)) y[i] = -y[i];
    const double tol = 2 * (stages + 2) * std::ldexp(1.0, -24) * l1;
    for (int i = 0; i < n; ++i) EXPECT_NEAR(y[i], x[i], tol) << "n=" << n << " i=" << i;
  }
}

TEST_P(Hadamard, NormIsOneOverSqrtN) {
  const int n = GetParam();
  EXPECT_EQ(hadamard_norm(n), float(1.0 / std::sqrt(double(n))));
}

std::string size_name(const ::testing::TestParamInfo<int>& info) {
  return fmt::format("N{}", info.param);
}
INSTANTIATE_TEST_SUITE_P(Sizes, Hadamard, ::testing::Values(16, 32, 64, 128), size_name);

// For N = 16 and 64 the normalisation is a power of two: small integers transform exactly.
TEST(HadamardExact, SmallIntegersForPowerOfTwoNorms) {
  for (int n : {16, 64}) {
    std::mt19937 gen(n);
    std::vector<float> x(n);
    for (float& v : x) v = float(static_cast<int>(gen() % 201) - 100);
    const SignMask s = mask_from(0x0123456789abcdefull, 0xfedcba9876543210ull);
    const std::vector<double> want = transform_oracle(x, s);
    hadamard_transform(x.data(), n, s);
    for (int i = 0; i < n; ++i) EXPECT_EQ(double(x[i]), want[i]) << "n=" << n << " i=" << i;
  }
}

TEST(HadamardSigns, Nvfp4SignVector) {
  const Recipe r = parse_recipe("nvfp4");
  const int published[16] = {1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1};
  for (Role role : {Role::dyt, Role::xt}) {
    const HadamardSpec& h = r[role].had;
    ASSERT_EQ(h.size, 16);
    EXPECT_EQ(hadamard_signs_text(h), "+++-+------+-+--");
    const SignMask m = h.effective_mask();
    for (int i = 0; i < 16; ++i) EXPECT_EQ(sign_negative(m, i), published[i] < 0) << i;
    for (int i = 16; i < 128; ++i) EXPECT_FALSE(sign_negative(m, i)) << i;
  }
}

TEST(HadamardSigns, RandomSignsAreDeterministicPerSeedAndDifferAcrossSeeds) {
  std::set<std::pair<std::uint64_t, std::uint64_t>> seen;
  for (std::uint64_t seed = 0; seed < 1000; ++seed) {
    const SignMask a = random_signs(seed), b = random_signs(seed);
    for (int w = 0; w < 4; ++w) EXPECT_EQ(a.w[w], b.w[w]);
    seen.insert({(std::uint64_t(a.w[0]) << 32) | a.w[1], (std::uint64_t(a.w[2]) << 32) | a.w[3]});
  }
  EXPECT_EQ(seen.size(), 1000u);
  // High seed bits matter too.
  const SignMask lo = random_signs(5), hi = random_signs(5 | (1ull << 40));
  EXPECT_FALSE(lo.w[0] == hi.w[0] && lo.w[1] == hi.w[1] && lo.w[2] == hi.w[2] &&
               lo.w[3] == hi.w[3]);
  // As documented: one Philox call, counter {0, 0, 0, "HADA"}, key = the seed.
  const std::uint64_t seed = 0x0123456789abcdefull;
  const U32x4 r = philox4x32_10(U32x4{{0u, 0u, 0u, 0x48414441u}}, u32(seed), u32(seed >> 32));
  const SignMask m = random_signs(seed);
  for (int w = 0; w < 4; ++w) EXPECT_EQ(m.w[w], r.v[w]);
}

TEST(HadamardSigns, RandomSpecKeepsOnlyItsSizeEntries) {
  HadamardSpec h;
  h.size = 32;
  h.signs = HadamardSpec::Signs::random;
  h.seed = 99;
  const SignMask full = random_signs(99), m = h.effective_mask();
  EXPECT_EQ(m.w[0], full.w[0]);
  EXPECT_EQ(m.w[1], 0u);
  EXPECT_EQ(m.w[2], 0u);
  EXPECT_EQ(m.w[3], 0u);
}

}  // namespace
}  // namespace fp4jit::nx
