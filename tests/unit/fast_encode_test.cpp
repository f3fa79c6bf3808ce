// The kernels' exact shortcuts (numerics/fast_encode.cuh) against the reference encoders:
// the FMA E2M1 encoder in every rounding mode over every float up to 6 (stochastic rounding at
// the random values where the decision flips), and the UE4M3 / UE5M3 block-scale encoder and
// decoder over every float of their range.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "numerics/e2m1.cuh"
#include "numerics/fast_encode.cuh"

namespace fp4jit::nx {
namespace {

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Runs check(u) for u in [begin, end) stepping by `step`, on every core; counts mismatches.
template <class Check>
std::uint64_t parallel_count(std::uint32_t begin, std::uint32_t end, std::uint32_t step,
                             Check check) {
  std::atomic<std::uint64_t> bad{0};
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  const std::uint64_t n = (std::uint64_t{end} - begin + step - 1) / step;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::uint64_t local = 0;
      for (std::uint64_t i = n * t / threads; i < n * (t + 1) / threads; ++i)
        local += check(static_cast<std::uint32_t>(begin + i * step)) ? 0 : 1;
      bad += local;
    });
  for (auto& p : pool) p.join();
  return bad;
}

constexpr std::uint32_t kSix = 0x40c00000u;

TEST(FastEncode, E2m1FmaEveryFloatUpToSixNearestModes) {
  // |v| <= 6 exhaustively; the sign only enters through `up` (both signs) and the sign bit.
  const auto bad = parallel_count(0u, kSix + 1, 1u, [](std::uint32_t u) {
    const float p = from_bits(u), n = from_bits(u | 0x80000000u);
    for (Round m : {Round::even, Round::away, Round::zero, Round::up})
      if (e2m1_encode_fma(p, m) != e2m1_encode(p, m)) return false;
    return e2m1_encode_fma(n, Round::up) == e2m1_encode(n, Round::up) &&
           e2m1_encode_fma(n, Round::even) == e2m1_encode(n, Round::even);
  });
  EXPECT_EQ(bad, 0u);
}

// The random values r around the one where the step-up decision flips for v, and the extremes.
std::vector<std::uint32_t> edge_bits(float v, int bits) {
  const float a = abs_f(v) < 6.0f ? abs_f(v) : 6.0f;
  u32 lo;
  float frac;
  e2m1_locate(a, &lo, &frac);
  const double f = static_cast<double>(frac) * static_cast<double>(1u << bits) - 0.5;
  const std::int64_t edge = static_cast<std::int64_t>(f < 0 ? -1.0 : f);
  std::vector<std::uint32_t> out{0u, (1u << bits) - 1u};
  for (std::int64_t r = edge - 1; r <= edge + 1; ++r)
    if (r >= 0 && r < (std::int64_t{1} << bits)) out.push_back(static_cast<std::uint32_t>(r));
  return out;
}

TEST(FastEncode, E2m1FmaStochasticAtTheFlippingBits) {
  for (int bits : {8, 16}) {
    const auto bad = parallel_count(0u, kSix + 1, bits == 8 ? 3u : 5u, [bits](std::uint32_t u) {
      const float v = from_bits(u ^ ((u & 1u) << 31));  // both signs
      for (std::uint32_t r : edge_bits(v, bits)) {
        const std::uint32_t noisy = r | (0xdead0000u << (bits == 16 ? 0 : 8)) << bits;
        if (e2m1_encode_fma(v, Round::stochastic, noisy, bits) !=
            e2m1_encode(v, Round::stochastic, noisy, bits))
          return false;
      }
      return true;
    });
    EXPECT_EQ(bad, 0u) << bits << " bits";
  }
}

// The lane-group encoder leaves the clamp to 6 out for blocks whose scaled magnitudes stay below 7
// (quantize/groups.cuh, unclamped_ok): there the pieces' minimum must give code 7 for every
// magnitude in [6, 7), in each rounding without random bits, as the clamped value 6 does.
TEST(FastEncode, E2m1PiecesSaturateBelowSevenWithoutTheClamp) {
  const std::uint32_t seven = 0x40e00000u;
  const auto bad = parallel_count(kSix, seven, 1u, [](std::uint32_t u) {
    const float a = from_bits(u);
    for (Round m : {Round::even, Round::away, Round::zero, Round::up})
      for (bool negative : {false, true}) {
        const std::uint32_t q = e2m1_fma_q(a, m, negative, 0u, 8);
        if (((q - e2m1_qbase(m, 8)) >> e2m1_qshift(m, 8)) != 7u) return false;
      }
    return true;
  });
  EXPECT_EQ(bad, 0u);
  // At 7 itself, ties away from zero reach the next code: the bound is strict.
  const std::uint32_t q = e2m1_fma_q(7.0f, Round::away, false, 0u, 8);
  EXPECT_EQ((q - e2m1_qbase(Round::away, 8)) >> e2m1_qshift(Round::away, 8), 8u);
}

TEST(FastEncode, E2m1FmaBeyondSixNanAndInf) {
  const auto bad = parallel_count(kSix, 0xffffffffu, 97u, [](std::uint32_t u) {
    const float v = from_bits(u);
    for (Round m : {Round::even, Round::away, Round::zero, Round::up})
      if (e2m1_encode_fma(v, m) != e2m1_encode(v, m)) return false;
    return e2m1_encode_fma(v, Round::stochastic, u, 8) == e2m1_encode(v, Round::stochastic, u, 8);
  });
  EXPECT_EQ(bad, 0u);
  for (float v : {from_bits(0x7f800000u), from_bits(0xff800000u), from_bits(0x7fc00000u)})
    EXPECT_EQ(e2m1_encode_fma(v, Round::even), e2m1_encode(v, Round::even));
}

TEST(FastEncode, BlockScaleFormatsEveryFloatOfTheirRange) {
  struct Case {
    MiniFloat f;
    std::uint32_t dense_end;  // every float below; a sample above (all saturate there)
  };
  for (const Case& c : {Case{kUE4M3, 0x44800000u}, Case{kUE5M3Nan, 0x48800000u}}) {
    const auto bad = parallel_count(0u, c.dense_end, 1u, [&c](std::uint32_t u) {
      const float x = from_bits(u);
      return umf3_encode_even_sat(c.f, x) == mf_encode(c.f, x, Round::even, true);
    });
    EXPECT_EQ(bad, 0u) << c.f.bias;
  }
  for (const MiniFloat& f : {kUE4M3, kUE5M3Nan, kUE5M3Finite, kUE5M3Ieee}) {
    const auto bad = parallel_count(0u, 0x7f800001u, 13u, [&f](std::uint32_t u) {
      const float x = from_bits(u);
      return umf3_encode_even_sat(f, x) == mf_encode(f, x, Round::even, true);
    });
    EXPECT_EQ(bad, 0u) << f.bias << " " << static_cast<int>(f.special);
    // Around the largest code, every float.
    const std::uint32_t top = float_bits(mf_max_value(f));
    for (std::uint32_t u = top - (1u << 21); u < top + (1u << 21); ++u)
      ASSERT_EQ(umf3_encode_even_sat(f, from_bits(u)),
                mf_encode(f, from_bits(u), Round::even, true));
    for (u32 code = 0; code <= mf_max_code(f); ++code)
      ASSERT_EQ(float_bits(umf3_decode(f, code)), float_bits(mf_decode(f, code))) << code;
  }
}

// The packed BF16 encoder for power-of-two scales against e2m1_encode of x * 2^s in FP32: every
// BF16 value whose scaled magnitude is below 8, for every exponent s it accepts, ties away and
// to even, eight values per word in a rotating order (so each value meets each nibble).
TEST(FastEncode, E2m1Pow2PackedEveryBf16UnderEveryExponent) {
  std::atomic<std::uint64_t> bad{0}, checked{0};
  const auto run = [&](int s_lo, int s_hi) {
    std::uint64_t local_bad = 0, local_checked = 0;
    std::vector<std::uint16_t> vals;
    for (int s = s_lo; s < s_hi; ++s) {
      const float scale = pow2f(s);
      vals.clear();
      for (std::uint32_t u = 0; u < 0x10000u; ++u) {
        const float x = bf16_to_float(static_cast<u16>(u));
        if (!is_finite(x)) continue;
        if (abs_f(mul_rn(x, scale)) >= 8.0f) continue;  // past any block's amax
        vals.push_back(static_cast<std::uint16_t>(u));
      }
      for (const Round mode : {Round::away, Round::even}) {
        const E2m1Pow2Pack k = e2m1_pow2_pack_consts(s, mode == Round::away);
        for (std::size_t i = 0; i < vals.size(); i += 8) {
          std::uint16_t e[8];
          for (int j = 0; j < 8; ++j) e[j] = vals[(i + j * 977 + (i / 8) % 8) % vals.size()];
          u32 p[4];
          for (int j = 0; j < 4; ++j) p[j] = e[j] | (static_cast<u32>(e[j + 4]) << 16);
          const u32 word = e2m1_pack8_pow2<true>(p, k);
          for (int j = 0; j < 8; ++j) {
            const u32 want = e2m1_encode(mul_rn(bf16_to_float(e[j]), scale), mode);
            local_bad += ((word >> (4 * j)) & 15u) != want ? 1 : 0;
            ++local_checked;
          }
        }
      }
    }
    bad += local_bad;
    checked += local_checked;
  };
  const int lo = -126, hi = 113;
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back(run, lo + (hi - lo) * static_cast<int>(t) / static_cast<int>(threads),
                      lo + (hi - lo) * static_cast<int>(t + 1) / static_cast<int>(threads));
  for (auto& p : pool) p.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(checked.load(), 239u * 2u * 30000u);
}

// Without saturation a scaled value at or past 7 would carry into the sign bit: the packed
// encoder's kSaturate step is what keeps it 7, and values exactly at the midpoints keep their
// tie rules.
TEST(FastEncode, E2m1Pow2PackedSaturatesAndBreaksTies) {
  const E2m1Pow2Pack away = e2m1_pow2_pack_consts(0, true);
  const E2m1Pow2Pack even = e2m1_pow2_pack_consts(0, false);
  // 7.5, -7, 0.25, -2.5, 5, 0.75, -0.0, 1e-30
  const float xs[8] = {7.5f, -7.0f, 0.25f, -2.5f, 5.0f, 0.75f, -0.0f, 1e-30f};
  u32 p[4];
  for (int j = 0; j < 4; ++j)
    p[j] = float_to_bf16(xs[j]) | (static_cast<u32>(float_to_bf16(xs[j + 4])) << 16);
  // codes: 6 -> 7, 8 + 7, 0.25 -> 1 (away) / 0 (even), 2.5 -> 5 / 4, 5 -> 7 / 6, 0.75 -> 2 / 2
  EXPECT_EQ(e2m1_pack8_pow2<true>(p, away), 0x0827d1f7u);
  EXPECT_EQ(e2m1_pack8_pow2<true>(p, even), 0x0826c0f7u);
  EXPECT_NE(e2m1_pack8_pow2<false>(p, away), 0x0827d1f7u);
}

}  // namespace
}  // namespace fp4jit::nx
