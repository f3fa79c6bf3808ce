// Helpers shared by the format tests (formats_test.cpp, minifloat_test.cpp): the nearest
// rounding modes, their names (core/recipe.hpp), float neighbours, a mismatch collector for long
// sweeps and the random inputs of the sweeps.
#pragma once
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include "core/format.hpp"
#include "core/recipe.hpp"
#include "tests/unit/format_oracle.hpp"

namespace fp4jit::test {

inline constexpr Round kNearestModes[] = {Round::even, Round::away, Round::up, Round::zero};

// The recipe text's name of the mode (core/recipe.hpp): even, away, up, zero.
inline std::string round_name(Round r) {
  return std::string(name(r));
}

inline float next_up(float x) {
  return std::nextafter(x, std::numeric_limits<float>::infinity());
}
inline float next_down(float x) {
  return std::nextafter(x, -std::numeric_limits<float>::infinity());
}

// Collects mismatches of a long sweep and reports the first few, so a broken rule fails with a
// handful of readable lines rather than millions.
class Mismatches {
 public:
  void add(const std::string& what) {
    if (count_++ < 8) ADD_FAILURE() << what;
  }
  ~Mismatches() {
    if (count_ > 8) ADD_FAILURE() << count_ << " mismatches in total";
  }

 private:
  long count_ = 0;
};

// A uniformly random float bit pattern (NaN excluded), a log-uniform magnitude spanning the
// format's range and beyond, or a float within a few ulps of a value or a midpoint of the grid.
inline float random_input(std::mt19937_64& gen, const Grid& g) {
  const bool neg = gen() & 1u;
  float x = 0.0f;
  switch (gen() % 4) {
    case 0: {
      do x = std::bit_cast<float>(static_cast<std::uint32_t>(gen()));
      while (std::isnan(x));
      return x;
    }
    case 1: {
      const double lo = std::log2(g.mag[1]) - 4.0, hi = std::log2(g.virtual_next) + 3.0;
      const double t = std::uniform_real_distribution<double>(lo, hi)(gen);
      x = float(std::exp2(t));
      break;
    }
    default: {
      const std::size_t i = gen() % g.mag.size();
      const double hi = i + 1 < g.mag.size() ? g.mag[i + 1] : g.virtual_next;
      x = float(gen() & 1u ? g.mag[i] : (g.mag[i] + hi) / 2.0);
      for (int k = static_cast<int>(gen() % 7) - 3; k != 0; k += k < 0 ? 1 : -1)
        x = k < 0 ? next_down(x) : next_up(x);
      break;
    }
  }
  return neg ? -x : x;
}

}  // namespace fp4jit::test
