// Independent oracles for the numerics tests: every format described by its bit fields and decoded
// with std::ldexp in double, and rounding done by brute force over the sorted list of its finite
// values. Nothing here calls templates/numerics, so the code under test is never its own oracle.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "numerics/rounding.cuh"

namespace fp4jit::test {

using nx::Round;

// What the top codes of a format mean (written out again here, independently of minifloat.cuh).
enum class Top { finite, nan_all_ones, ieee };

struct FormatSpec {
  std::string name;
  int exp_bits, man_bits, bias;
  bool has_sign;
  Top top;
};

inline std::uint32_t code_count(const FormatSpec& f) {
  return 1u << (f.exp_bits + f.man_bits + (f.has_sign ? 1 : 0));
}
inline std::uint32_t sign_mask(const FormatSpec& f) {
  return f.has_sign ? 1u << (f.exp_bits + f.man_bits) : 0u;
}

// Decodes by the textbook definition: (-1)^s * (e == 0 ? (m / 2^M) 2^(1-bias) : (1 + m / 2^M)
// 2^(e-bias)).
inline double oracle_decode(const FormatSpec& f, std::uint32_t code) {
  const std::uint32_t all_e = (1u << f.exp_bits) - 1u, all_m = (1u << f.man_bits) - 1u;
  const bool neg = (code & sign_mask(f)) != 0u;
  const std::uint32_t e = (code >> f.man_bits) & all_e, m = code & all_m;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  if (f.top == Top::nan_all_ones && e == all_e && m == all_m) return nan;
  if (f.top == Top::ieee && e == all_e) return m == 0 ? (neg ? -inf : inf) : nan;
  const double frac = static_cast<double>(m) / static_cast<double>(1u << f.man_bits);
  const double mag =
      e == 0 ? std::ldexp(frac, 1 - f.bias) : std::ldexp(1.0 + frac, int(e) - f.bias);
  return neg ? -mag : mag;
}

// The finite non-negative values of a format in increasing order with their codes, plus the
// "virtual" value one step above the largest (where the next code would lie with one more
// exponent value): magnitudes at or past its midpoint with the largest value overflow.
struct Grid {
  FormatSpec spec;
  std::vector<double> mag;          // mag[0] = 0, strictly increasing
  std::vector<std::uint32_t> code;  // magnitude code of mag[i]
  double virtual_next = 0.0;
  std::uint32_t inf_code = 0;  // Top::ieee: +Inf
  std::uint32_t nan_code = 0;  // Top::nan_all_ones / ieee: the all-ones magnitude

  double max() const { return mag.back(); }
  std::uint32_t max_code() const { return code.back(); }
};

inline Grid make_grid(const FormatSpec& f) {
  Grid g;
  g.spec = f;
  const std::uint32_t mag_codes = 1u << (f.exp_bits + f.man_bits);
  for (std::uint32_t c = 0; c < mag_codes; ++c) {
    const double v = oracle_decode(f, c);
    if (!std::isfinite(v)) continue;
    g.mag.push_back(v);
    g.code.push_back(c);
  }
  // Codes are monotonic in value for every format here, so code order is value order. The value
  // past the largest is one step of the largest value's binade further.
  g.virtual_next = g.mag.back() + std::ldexp(1.0, std::ilogb(g.mag.back()) - f.man_bits);
  g.inf_code = ((1u << f.exp_bits) - 1u) << f.man_bits;
  g.nan_code = mag_codes - 1u;
  return g;
}

// The textbook rounding of x's magnitude a to the grid: the chosen index into g.mag, or
// g.mag.size() for the virtual value past the maximum.
inline std::size_t round_index(const Grid& g, double a, bool negative, Round mode) {
  const std::size_t n = g.mag.size();
  // lo = the largest grid value <= a (the virtual value counts as index n).
  std::size_t lo =
      static_cast<std::size_t>(std::upper_bound(g.mag.begin(), g.mag.end(), a) - g.mag.begin()) - 1;
  if (g.mag[lo] == a) return lo;
  if (lo == n - 1 && a >= g.virtual_next) return n;
  const double lo_v = g.mag[lo], hi_v = lo + 1 < n ? g.mag[lo + 1] : g.virtual_next;
  const std::uint32_t lo_code = g.code[lo];
  const double mid = (lo_v + hi_v) / 2.0;  // exact: one more bit than either neighbour
  if (a < mid) return lo;
  if (a > mid) return lo + 1;
  switch (mode) {
    case Round::even:
      return (lo_code & 1u) == 0u ? lo : lo + 1;
    case Round::away:
      return lo + 1;
    case Round::up:
      return negative ? lo : lo + 1;  // toward +inf
    case Round::zero:
      return lo;
    case Round::stochastic:
      break;
  }
  return lo;
}

// The expected code of float x under `mode`, or ~0u meaning "a NaN code".
inline constexpr std::uint32_t kAnyNan = ~0u;
inline std::uint32_t oracle_encode(const Grid& g, float x, Round mode, bool saturate) {
  const FormatSpec& f = g.spec;
  if (std::isnan(x)) return f.top == Top::finite ? 0u : kAnyNan;
  const bool neg = std::signbit(x);
  if (neg && !f.has_sign) return 0u;
  const std::uint32_t sign = neg ? sign_mask(f) : 0u;
  const double a = std::fabs(static_cast<double>(x));
  const std::size_t i = std::isinf(a) ? g.mag.size() : round_index(g, a, neg, mode);
  if (i < g.mag.size()) return g.code[i] | sign;
  if (saturate || f.top == Top::finite) return g.max_code() | sign;
  return f.top == Top::ieee ? (g.inf_code | sign) : kAnyNan;
}

inline FormatSpec spec_e2m1() {
  return {"E2M1", 2, 1, 1, true, Top::finite};
}
inline FormatSpec spec_e4m3() {
  return {"E4M3", 4, 3, 7, true, Top::nan_all_ones};
}
inline FormatSpec spec_e5m2() {
  return {"E5M2", 5, 2, 15, true, Top::ieee};
}
inline FormatSpec spec_ue4m3() {
  return {"UE4M3", 4, 3, 7, false, Top::nan_all_ones};
}
inline FormatSpec spec_ue5m3_nan() {
  return {"UE5M3Nan", 5, 3, 15, false, Top::nan_all_ones};
}
inline FormatSpec spec_ue5m3_finite() {
  return {"UE5M3Finite", 5, 3, 15, false, Top::finite};
}
inline FormatSpec spec_ue5m3_ieee() {
  return {"UE5M3Ieee", 5, 3, 15, false, Top::ieee};
}

// Distance in float ulps between a float result and an exact reference, the ulp taken at the
// reference's magnitude (the subnormal ulp below the normal range).
inline double ulp_error(float got, double ref) {
  const double a = std::fabs(ref);
  const int e = a < 0x1p-126 ? -126 : std::ilogb(a);
  return std::fabs(static_cast<double>(got) - ref) / std::ldexp(1.0, e - 23);
}

}  // namespace fp4jit::test
