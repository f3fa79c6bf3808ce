// Small text helpers shared by the parsers of recipes, configs, shapes and lists.
#pragma once
#include <charconv>
#include <string_view>
#include <system_error>
#include <vector>

namespace fp4jit {

// The items of `text` between separators, empty ones included: "a,,b" -> {"a", "", "b"};
// "" -> {""}. The views point into `text`.
inline std::vector<std::string_view> split(std::string_view text, char sep = ',') {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t end = text.find(sep, pos);
    out.push_back(
        text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
    if (end == std::string_view::npos) return out;
    pos = end + 1;
  }
}

// Parses the whole of `text` as a number (no sign for unsigned types, no spaces); false if
// anything is left over or out of range.
template <typename T>
bool parse_number(std::string_view text, T* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

}  // namespace fp4jit
