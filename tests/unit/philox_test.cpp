// Philox4x32-10 (numerics/philox.cuh) against the Random123 known-answer vectors, and the layout
// of the stochastic-rounding bits drawn from it.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <set>
#include <utility>

#include "numerics/philox.cuh"

namespace fp4jit::nx {
namespace {

struct Kat {
  std::array<u32, 4> ctr;
  std::array<u32, 2> key;
  std::array<u32, 4> out;
};

// Random123 kat_vectors, "philox4x32 10" lines.
constexpr Kat kKat[] = {
    {{0u, 0u, 0u, 0u}, {0u, 0u}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
    {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
     {0xffffffffu, 0xffffffffu},
     {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
    {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
     {0xa4093822u, 0x299f31d0u},
     {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
};

TEST(Philox, KnownAnswerVectors) {
  for (const Kat& k : kKat) {
    const U32x4 r =
        philox4x32_10(U32x4{{k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3]}}, k.key[0], k.key[1]);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(r.v[i], k.out[i]) << std::hex << "ctr " << k.ctr[0] << " word " << i;
  }
}

TEST(Philox, MulHiLo) {
  u32 hi = 0, lo = 0;
  mul_hi_lo(0xffffffffu, 0xffffffffu, &hi, &lo);
  EXPECT_EQ(hi, 0xfffffffeu);
  EXPECT_EQ(lo, 0x00000001u);
  mul_hi_lo(0xD2511F53u, 0x243f6a88u, &hi, &lo);
  const std::uint64_t p = 0xD2511F53ull * 0x243f6a88ull;
  EXPECT_EQ(hi, u32(p >> 32));
  EXPECT_EQ(lo, u32(p));
}

// The documented layout: counter {lo32(block), hi32(block), 0, 0}, key {lo32(seed), hi32(seed)},
// block = index / (128 / bits), element j = index % (128 / bits) takes bits [j*bits, (j+1)*bits)
// of the output, word 0 first, least significant bits first.
TEST(SrBits, LayoutAsDocumented) {
  const std::uint64_t seeds[] = {0ull, 1ull, 0x0123456789abcdefull, ~0ull};
  const std::uint64_t blocks[] = {0ull,         1ull,           77ull,
                                  0xfffffffful, 0x100000000ull, 0xdeadbeef12345ull};
  for (std::uint64_t seed : seeds) {
    for (std::uint64_t block : blocks) {
      const U32x4 r =
          philox4x32_10(U32x4{{u32(block), u32(block >> 32), 0u, 0u}}, u32(seed), u32(seed >> 32));
      for (u32 j = 0; j < 16; ++j) {
        const u32 want8 = (r.v[j / 4] >> (8 * (j % 4))) & 0xffu;
        EXPECT_EQ(sr_bits(seed, block * 16 + j, 8), want8) << seed << " " << block << " " << j;
      }
      for (u32 j = 0; j < 8; ++j) {
        const u32 want16 = (r.v[j / 2] >> (16 * (j % 2))) & 0xffffu;
        EXPECT_EQ(sr_bits(seed, block * 8 + j, 16), want16) << seed << " " << block << " " << j;
      }
      const U32x4 b = sr_block(seed, block);
      for (int w = 0; w < 4; ++w) EXPECT_EQ(b.v[w], r.v[w]);
    }
  }
}

TEST(SrBits, SameSeedAndIndexSameBits) {
  for (std::uint64_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(sr_bits(42, i, 8), sr_bits(42, i, 8));
    EXPECT_EQ(sr_bits(42, i, 16), sr_bits(42, i, 16));
  }
  // Drawing in another order changes nothing (counter-based: no state).
  const u32 late = sr_bits(7, 123456, 8);
  for (std::uint64_t i = 0; i < 100; ++i) (void)sr_bits(7, i, 8);
  EXPECT_EQ(sr_bits(7, 123456, 8), late);
}

TEST(SrBits, DifferentIndicesAndSeedsDrawDifferentBits) {
  // Every 128-bit block of a long run is distinct, across several seeds too.
  std::set<std::pair<std::uint64_t, std::uint64_t>> seen;
  for (std::uint64_t seed : {0ull, 1ull, 2ull, 1ull << 32})
    for (std::uint64_t block = 0; block < 4096; ++block) {
      const U32x4 r = sr_block(seed, block);
      seen.insert({(std::uint64_t(r.v[0]) << 32) | r.v[1], (std::uint64_t(r.v[2]) << 32) | r.v[3]});
    }
  EXPECT_EQ(seen.size(), 4u * 4096u);
  // 16-bit draws of consecutive indices: a repeat of the previous value has probability 2^-16.
  int repeats = 0;
  for (std::uint64_t i = 1; i < 65536; ++i) repeats += sr_bits(3, i, 16) == sr_bits(3, i - 1, 16);
  EXPECT_LE(repeats, 8);
  // 8-bit draws are uniform: a chi-square test over 256 bins (255 degrees of freedom; the bound
  // is far in the tail, about 6 sigma).
  long counts[256] = {};
  const long n = 256 * 1024;
  for (long i = 0; i < n; ++i) ++counts[sr_bits(11, u64(i), 8)];
  double chi2 = 0.0;
  for (long c : counts) chi2 += double(c - 1024) * double(c - 1024) / 1024.0;
  EXPECT_LT(chi2, 255.0 + 6.0 * std::sqrt(2.0 * 255.0)) << chi2;
  // A different seed gives a different stream at the same indices.
  int same = 0;
  for (std::uint64_t i = 0; i < 4096; ++i) same += sr_bits(11, i, 16) == sr_bits(12, i, 16);
  EXPECT_LE(same, 4);
}

}  // namespace
}  // namespace fp4jit::nx
