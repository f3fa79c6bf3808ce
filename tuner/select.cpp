#include "tuner/select.hpp"

#include <algorithm>
#include <limits>

namespace fp4jit::tuner {

bool tie_order_less(const CandidateResult& a, const CandidateResult& b) {
  if (a.heuristic != b.heuristic) return a.heuristic;
  return a.config < b.config;
}

int select_winner(std::span<const CandidateResult> candidates, const SelectOptions& options) {
  const auto usable = [](const CandidateResult& c) {
    return c.status == CandidateStatus::ok && c.median_ms > 0.0;
  };
  int fastest = -1, heuristic = -1;
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const CandidateResult& c = candidates[i];
    if (!usable(c)) continue;
    if (c.heuristic && heuristic < 0) heuristic = static_cast<int>(i);
    if (c.median_ms < best) {
      best = c.median_ms;
      fastest = static_cast<int>(i);
    }
  }
  if (fastest < 0) return -1;
  const double noise =
      std::max(options.noise_floor, candidates[static_cast<std::size_t>(fastest)].noise);
  const double tolerance = best * (1.0 + noise);
  // A config replaces the heuristic's only when it is faster by more than the noise (the larger
  // of the fastest's and the heuristic's own): one inside the fastest's tie window but within
  // noise of the heuristic is no evidence of a gain.
  double beat = std::numeric_limits<double>::infinity();
  if (heuristic >= 0) {
    const CandidateResult& h = candidates[static_cast<std::size_t>(heuristic)];
    beat = h.median_ms / (1.0 + std::max(noise, h.noise));
  }
  int winner = -1;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const CandidateResult& c = candidates[i];
    if (!usable(c) || c.median_ms > tolerance) continue;
    if (!c.heuristic && !(c.median_ms < beat)) continue;
    if (winner < 0 || tie_order_less(c, candidates[static_cast<std::size_t>(winner)]))
      winner = static_cast<int>(i);
  }
  return winner >= 0 ? winner : heuristic;
}

}  // namespace fp4jit::tuner
