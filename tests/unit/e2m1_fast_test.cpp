// e2m1_encode_fast (the kernels' E2M1 encoder) gives e2m1_encode's code for every float below
// 6 in magnitude (every bit pattern, both signs), every rounding mode, and random SR bits;
// above 6, NaN and Inf on a sample.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "numerics/e2m1.cuh"

namespace fp4jit::nx {
namespace {

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Runs check(bits) over [begin, end) on every core; returns the number of mismatches.
template <class Check>
std::uint64_t parallel_count(std::uint32_t begin, std::uint32_t end, Check check) {
  std::atomic<std::uint64_t> bad{0};
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::uint64_t local = 0;
      const std::uint32_t n = end - begin;
      for (std::uint32_t u = begin + static_cast<std::uint32_t>(std::uint64_t{n} * t / threads);
           u < begin + static_cast<std::uint32_t>(std::uint64_t{n} * (t + 1) / threads); ++u)
        local += check(u) ? 0 : 1;
      bad += local;
    });
  for (auto& p : pool) p.join();
  return bad;
}

TEST(E2m1Fast, EveryFloatBelowSixEveryMode) {
  // 0 .. 6.0 (0x40c00000) exhaustively, each magnitude with both signs (nearest-even positive,
  // ties-up negative: the sign reaches the rounding decision); the decision then gets the same
  // (frac, lo_odd, negative) as e2m1_encode's, so only the modes' own code differs, which the
  // sample below covers with random SR bits.
  const auto bad = parallel_count(0u, 0x40c00001u, [](std::uint32_t u) {
    const float p = from_bits(u), n = from_bits(u | 0x80000000u);
    return e2m1_encode_fast(p, Round::even) == e2m1_encode(p, Round::even) &&
           e2m1_encode_fast(n, Round::up) == e2m1_encode(n, Round::up);
  });
  EXPECT_EQ(bad, 0u);
}

TEST(E2m1Fast, SampledModesAndStochasticBits) {
  const auto bad = parallel_count(0u, 0xffffffffu / 61u, [](std::uint32_t i) {
    const std::uint32_t u = i * 61u;
    const float v = from_bits(u);
    const std::uint32_t r = (u * 2654435761u) >> 8;
    for (Round m : {Round::away, Round::zero, Round::even, Round::up})
      if (e2m1_encode_fast(v, m) != e2m1_encode(v, m)) return false;
    return e2m1_encode_fast(v, Round::stochastic, r, 8) ==
               e2m1_encode(v, Round::stochastic, r, 8) &&
           e2m1_encode_fast(v, Round::stochastic, r, 16) ==
               e2m1_encode(v, Round::stochastic, r, 16);
  });
  EXPECT_EQ(bad, 0u);
}

}  // namespace
}  // namespace fp4jit::nx
