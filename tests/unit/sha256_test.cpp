// SHA-256 (core/sha256.hpp) against the FIPS 180-4 / NIST example messages.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/sha256.hpp"

namespace fp4jit {
namespace {

TEST(Sha256, NistVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 448 bits: the padding no longer fits the first block.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // 896 bits.
  EXPECT_EQ(
      sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
                 "klmnopqrlmnopqrsmnopqrstnopqrstu"),
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, OneMillionAInOddSizedChunks) {
  const std::string want = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
  const std::string million(1000000, 'a');
  EXPECT_EQ(sha256_hex(million), want);
  for (std::size_t step : {1u, 7u, 55u, 63u, 64u, 65u, 127u, 4099u}) {
    Sha256 h;
    for (std::size_t fed = 0; fed < million.size(); fed += step)
      h.update(std::string_view(million).substr(fed, step));
    EXPECT_EQ(h.hex_digest(), want) << "chunks of " << step;
  }
}

TEST(Sha256, DigestResetsTheObjectAndOverloadsAgree) {
  Sha256 h;
  h.update("abc");
  const auto first = h.digest();
  EXPECT_EQ(h.update("abc").hex_digest(), sha256_hex("abc"));  // reusable after digest()
  EXPECT_EQ(Sha256().hex_digest(), sha256_hex(""));
  const std::string text = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  const std::vector<std::uint8_t> bytes(text.begin(), text.end());
  EXPECT_EQ(sha256_hex(std::span<const std::uint8_t>(bytes)), sha256_hex(text));
  EXPECT_EQ(first[0], 0xbau);
  EXPECT_EQ(first[31], 0xadu);
}

// Every split of a 200-byte message into two updates hashes like one update (the buffered path
// meets the block boundary at every offset).
TEST(Sha256, SplitPointsDoNotMatter) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += char('a' + (i * 7) % 26);
  const std::string whole = sha256_hex(text);
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    Sha256 h;
    h.update(std::string_view(text).substr(0, cut)).update(std::string_view(text).substr(cut));
    EXPECT_EQ(h.hex_digest(), whole) << cut;
  }
}

}  // namespace
}  // namespace fp4jit
