#include "tuner/select.hpp"

#include <algorithm>
#include <limits>

namespace fp4jit::tuner {

bool tie_order_less(const CandidateResult& a, const CandidateResult& b) {
  if (a.heuristic != b.heuristic) return a.heuristic;
  return a.config < b.config;
}

int select_winner(std::span<const CandidateResult> candidates, const SelectOptions& options) {
  int fastest = -1;
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const CandidateResult& c = candidates[i];
    if (c.status != CandidateStatus::ok || !(c.median_ms > 0.0)) continue;
    if (c.median_ms < best) {
      best = c.median_ms;
      fastest = static_cast<int>(i);
    }
  }
  if (fastest < 0) return -1;
  const double tolerance =
      best *
      (1.0 + std::max(options.noise_floor, candidates[static_cast<std::size_t>(fastest)].noise));
  int winner = fastest;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const CandidateResult& c = candidates[i];
    if (c.status != CandidateStatus::ok || !(c.median_ms > 0.0) || c.median_ms > tolerance)
      continue;
    if (tie_order_less(c, candidates[static_cast<std::size_t>(winner)]))
      winner = static_cast<int>(i);
  }
  return winner;
}

}  // namespace fp4jit::tuner
