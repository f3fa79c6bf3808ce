// Rounding modes and the one decision every quantizer makes: keep the lower grid point or step up.
#pragma once
#include "numerics/common.cuh"

namespace fp4jit::nx {

// How a value between two neighbouring grid points is resolved (magnitudes; the sign is kept).
enum class Round : u8 {
  even = 0,        // to nearest, ties to the even code (IEEE round-to-nearest-even)
  away = 1,        // to nearest, ties away from zero (OCP MX, TetraJet)
  up = 2,          // to nearest, ties toward +inf (Microsoft FP4 LUT: 5 -> 6, -5 -> -4)
  zero = 3,        // to nearest, ties toward zero
  stochastic = 4,  // up with probability frac, from counter-based random bits (see below)
};

// Decide whether |v| = lo + frac * step rounds up to the next grid point.
//   frac       exact fraction in [0, 1) of the way from the lower to the upper point
//   lo_odd     the lower point's code is odd (its last mantissa bit is 1)
//   negative   the value is negative (for ties toward +inf, "up" in magnitude means toward -inf)
//   rbits      random bits for stochastic rounding, only the low `sr_bits` are used
// Stochastic rounding steps up iff r + 1/2 < frac * 2^R for the R-bit integer r: exact values never
// move, and the step probability equals frac exactly whenever frac has at most R bits.
FP4JIT_HD bool round_up(float frac, bool lo_odd, bool negative, Round mode, u32 rbits, int sr_bits) {
  switch (mode) {
    case Round::even: return frac > 0.5f || (frac == 0.5f && lo_odd);
    case Round::away: return frac >= 0.5f;
    case Round::up: return frac > 0.5f || (frac == 0.5f && !negative);
    case Round::zero: return frac > 0.5f;
    case Round::stochastic: {
      const u32 r = rbits & ((1u << sr_bits) - 1u);
      return static_cast<float>(r) + 0.5f < mul_rn(frac, pow2f(sr_bits));
    }
  }
  return false;
}

}  // namespace fp4jit::nx
