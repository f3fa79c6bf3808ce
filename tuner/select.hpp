// Winner selection: the fastest correct candidate, with ties inside measurement noise broken by a
// fixed order, so every process (and every rank on the same device model) that measures the same
// candidates picks the same kernel even when their timings differ by noise.
#pragma once
#include <span>

#include "cache/tuning.hpp"

namespace fp4jit::tuner {

struct SelectOptions {
  // Candidates whose median is within max(noise_floor, the fastest's own relative spread) of the
  // fastest median are tied.
  double noise_floor = 0.03;
};

// The fixed order among tied candidates: the heuristic's config first (a tuned result never
// replaces it for noise), then the config text in byte order.
bool tie_order_less(const CandidateResult& a, const CandidateResult& b);

// Index of the winner among the candidates with status ok, or -1 when none is ok. Failed
// candidates are never chosen, however fast. Where the heuristic's config was measured, another
// wins only when it is tied with the fastest and faster than the heuristic's by more than the
// noise (so a tuned result is never a config the measurement cannot tell from the heuristic's,
// or slower than it).
int select_winner(std::span<const CandidateResult> candidates, const SelectOptions& options = {});

}  // namespace fp4jit::tuner
