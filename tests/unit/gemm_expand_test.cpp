// The sm90 GEMM's on-chip E2M1 expansion (templates/gemm/sm90/expand.cuh), checked on the host:
// every code at every element position, with random neighbours, for the fixed E4M3 placement,
// every table shift (and the zero and NaN tables), and the FP16 / BF16 tables followed by an
// exact multiply by every UE4M3 / UE5M3 block scale.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>

#include "gemm/sm90/expand.cuh"
#include "numerics/common.cuh"
#include "numerics/e2m1.cuh"
#include "numerics/minifloat.cuh"

namespace fp4jit::test {
namespace {

using nx::u32;
using sm90::prmt;

double e4m3(u32 byte) {
  return nx::mf_decode(nx::kE4M3, byte & 0xFFu);
}

// Words with code `c` at element j and random codes elsewhere.
template <class F>
void for_each_placement(F&& check) {
  std::mt19937 rng(7);
  for (int j = 0; j < 8; ++j)
    for (u32 c = 0; c < 16; ++c)
      for (int trial = 0; trial < 64; ++trial) {
        u32 w = rng();
        w = (w & ~(15u << (4 * j))) | (c << (4 * j));
        check(w, j, c);
      }
}

TEST(GemmExpand, PrmtEmulationMatchesPtxSemantics) {
  EXPECT_EQ(prmt(0x33221100u, 0x77665544u, 0x3210u), 0x33221100u);
  EXPECT_EQ(prmt(0x33221100u, 0x77665544u, 0x7654u), 0x77665544u);
  EXPECT_EQ(prmt(0x33221100u, 0x77665544u, 0x0123u), 0x00112233u);
  EXPECT_EQ(prmt(0x00800001u, 0u, 0x8A89u), 0x00FF0000u);  // sign replicate of bytes 1 and 2
}

TEST(GemmExpand, FixedPlacementIsE2M1TimesTwoToMinus6) {
  for_each_placement([](u32 w, int j, u32 c) {
    u32 even, odd;
    sm90::e2m1x8_to_e4m3_eo(w, even, odd);
    const u32 word = (j % 2 == 0) ? even : odd;
    const u32 byte = (word >> (8 * (j / 2))) & 0xFFu;
    const double want = nx::e2m1_decode(c) * std::ldexp(1.0, -6);
    ASSERT_EQ(e4m3(byte), want) << "code " << c << " at element " << j;
    ASSERT_EQ(byte >> 7, c >> 3) << "sign of code " << c;  // -0 keeps its sign
  });
}

TEST(GemmExpand, TableShiftsAreExactOverTheWindow) {
  for (int t = 0; t < sm90::kLutEntries; ++t) {
    u32 lut_lo, lut_hi;
    sm90::e4m3_lut(t, lut_lo, lut_hi);
    for_each_placement([&](u32 w, int j, u32 c) {
      u32 lo, hi;
      sm90::e2m1x8_to_e4m3_lut(w, lut_lo, lut_hi, lo, hi);
      const u32 word = j < 4 ? lo : hi;
      const u32 byte = (word >> (8 * (j % 4))) & 0xFFu;
      if (t == sm90::kLutNan) {
        ASSERT_TRUE(std::isnan(e4m3(byte))) << "NaN table, code " << c;
        return;
      }
      const double scale = t == sm90::kLutZero ? 0.0 : std::ldexp(1.0, t - sm90::kLutBias);
      const double want = nx::e2m1_decode(c) * scale;
      ASSERT_EQ(e4m3(byte), want) << "shift " << t << " code " << c << " element " << j;
      if (want != 0.0) {
        ASSERT_EQ(byte >> 7, c >> 3);
      }
    });
  }
}

TEST(GemmExpand, TableWindowEdgesAreNormalOrExactSubnormal) {
  u32 lo, hi;
  sm90::e4m3_lut(0, lo, hi);
  EXPECT_EQ(lo & 0xFFFFu, 0x0100u);  // 0.5 * 2^-8 = 2^-9, the smallest subnormal
  sm90::e4m3_lut(sm90::kLutMaxShift, lo, hi);
  EXPECT_EQ(hi >> 24, 0x7Cu);  // 6 * 2^6 = 384, below the NaN code 0x7F
}

double half_value(nx::u32 bits16, bool bf16) {
  return bf16 ? nx::bf16_to_float(static_cast<nx::u16>(bits16))
              : nx::f16_to_float(static_cast<nx::u16>(bits16));
}

template <bool kBF16>
void check_16bit() {
  for_each_placement([&](u32 w, int j, u32 c) {
    if (j >= 4) return;  // the 16-bit expansion takes 4 codes; the upper half is w >> 16
    u32 w0, w1;
    sm90::e2m1x4_to_16bit<kBF16>(w & 0xFFFFu, w0, w1);
    const u32 word = j < 2 ? w0 : w1;
    const u32 bits = (word >> (16 * (j % 2))) & 0xFFFFu;
    ASSERT_EQ(half_value(bits, kBF16), static_cast<double>(nx::e2m1_decode(c))) << "code " << c;
    ASSERT_EQ(bits >> 15, c >> 3);
  });
}

TEST(GemmExpand, F16TableDecodesEveryCode) {
  check_16bit<false>();
}

// The 8-code form equals the 4-code form on each half, for random words.
template <bool kBF16>
void check_16bit_x8() {
  std::mt19937 rng(3);
  for (int i = 0; i < 200000; ++i) {
    const u32 w = rng();
    u32 a0, a1, b0, b1, r0, r1, r2, r3;
    sm90::e2m1x8_to_16bit<kBF16>(w, r0, r1, r2, r3);
    sm90::e2m1x4_to_16bit<kBF16>(w & 0xFFFFu, a0, a1);
    sm90::e2m1x4_to_16bit<kBF16>(w >> 16, b0, b1);
    ASSERT_EQ(r0, a0);
    ASSERT_EQ(r1, a1);
    ASSERT_EQ(r2, b0);
    ASSERT_EQ(r3, b1);
  }
}
TEST(GemmExpand, F16EightCodesMatchFourCodeForm) {
  check_16bit_x8<false>();
}
TEST(GemmExpand, BF16EightCodesMatchFourCodeForm) {
  check_16bit_x8<true>();
}
TEST(GemmExpand, BF16TableDecodesEveryCode) {
  check_16bit<true>();
}

// E2M1 x block scale is exact in the 16-bit type the kernel uses: FP16 for UE4M3 (at most
// 6 * 448 = 2688, at least 0.5 * 2^-9), BF16 for every UE5M3 variant.
TEST(GemmExpand, BlockScaleProductsAreExact) {
  struct Case {
    nx::MiniFloat fmt;
    bool bf16;
  };
  for (const Case& k : {Case{nx::kUE4M3, false}, Case{nx::kUE5M3Nan, true},
                        Case{nx::kUE5M3Finite, true}, Case{nx::kUE5M3Ieee, true}}) {
    for (u32 code = 0; code < 256; ++code) {
      if (code > nx::mf_mag_mask(k.fmt)) continue;
      const float s = nx::mf_decode(k.fmt, code);
      if (!nx::is_finite(s)) continue;
      for (u32 c = 0; c < 16; ++c) {
        const double exact = static_cast<double>(nx::e2m1_decode(c)) * s;
        const float f = static_cast<float>(exact);
        ASSERT_EQ(static_cast<double>(f), exact);
        if (k.bf16) {
          ASSERT_EQ(static_cast<double>(nx::bf16_to_float(nx::float_to_bf16(f))), exact)
              << "ue5m3 code " << code << " x e2m1 " << c;
        } else {
          // FP16: normal range up to 65504, 11 significant bits
          ASSERT_LE(std::fabs(exact), 65504.0);
          if (exact != 0.0) {
            ASSERT_GE(std::fabs(exact), std::ldexp(1.0, -14));
          }
          const double ulp = std::ldexp(1.0, std::ilogb(exact == 0.0 ? 1.0 : exact) - 10);
          ASSERT_EQ(std::fmod(exact, ulp), 0.0) << "ue4m3 code " << code << " x e2m1 " << c;
        }
      }
    }
  }
}

}  // namespace
}  // namespace fp4jit::test
