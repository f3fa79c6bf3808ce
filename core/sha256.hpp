// SHA-256 (FIPS 180-4): names cache entries and recipes, and checks bundle contents.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace fp4jit {

class Sha256 {
 public:
  Sha256();
  Sha256& update(std::span<const std::uint8_t> data);
  Sha256& update(std::string_view text);
  std::array<std::uint8_t, 32> digest();  // finishes; the object is then reset
  std::string hex_digest();

 private:
  void compress(const std::uint8_t* block);
  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> buffer_;
  std::size_t buffered_ = 0;
  std::uint64_t total_bytes_ = 0;
};

std::string sha256_hex(std::string_view text);
std::string sha256_hex(std::span<const std::uint8_t> data);

}  // namespace fp4jit
