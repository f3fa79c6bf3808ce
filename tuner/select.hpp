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
// candidates are never chosen, however fast.
int select_winner(std::span<const CandidateResult> candidates, const SelectOptions& options = {});

}  // namespace fp4jit::tuner
