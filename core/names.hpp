// Name tables for enums: one place that spells every value, parses it back, and lists the valid
// spellings in errors.
#pragma once
#include <fmt/format.h>

#include <span>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace fp4jit {

template <typename E>
struct Named {
  E value;
  std::string_view name;
};

template <typename E>
std::string_view name_of(std::span<const Named<E>> table, E value) {
  for (const auto& entry : table)
    if (entry.value == value) return entry.name;
  return "?";
}

template <typename E>
std::string valid_names(std::span<const Named<E>> table) {
  std::string out;
  for (const auto& entry : table) {
    if (!out.empty()) out += ", ";
    out += entry.name;
  }
  return out;
}

// Parses `text` as one of the table's names; otherwise throws `kind` naming `what` and the
// valid values.
template <typename E>
E parse_named(std::span<const Named<E>> table, std::string_view text, std::string_view what,
              ErrorKind kind = ErrorKind::invalid_argument) {
  for (const auto& entry : table)
    if (entry.name == text) return entry.value;
  fail(kind, "unknown {} '{}' (valid: {})", what, text, valid_names(table));
}

}  // namespace fp4jit
