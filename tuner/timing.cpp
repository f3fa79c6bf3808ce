#include "tuner/timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace fp4jit::tuner {

namespace {

double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

Timing measure(const std::function<double(int)>& run, const TimingOptions& o, double best_ms) {
  int iteration = 0;
  for (int i = 0; i < o.warmup; ++i) run(iteration++);
  std::vector<double> ms;
  double spent = 0.0;
  const int min_repeats = std::max(o.min_repeats, 1);
  const int max_repeats = std::max(o.max_repeats, min_repeats);
  const double stop_above = o.early_stop > 0.0 && best_ms > 0.0 ? o.early_stop * best_ms : 0.0;
  Timing out;
  while (static_cast<int>(ms.size()) < max_repeats &&
         (static_cast<int>(ms.size()) < min_repeats || spent < o.budget_ms)) {
    const double t = run(iteration++);
    ms.push_back(t);
    spent += t;
    out.fastest_ms = ms.size() == 1 ? t : std::min(out.fastest_ms, t);
    if (stop_above > 0.0 && static_cast<int>(ms.size()) >= min_repeats &&
        out.fastest_ms > stop_above) {
      out.stopped_early = static_cast<int>(ms.size()) < max_repeats && spent < o.budget_ms;
      break;
    }
  }
  std::sort(ms.begin(), ms.end());
  out.repeats = static_cast<int>(ms.size());
  out.median_ms = quantile(ms, 0.5);
  out.noise = out.median_ms > 0.0 ? (quantile(ms, 0.75) - quantile(ms, 0.25)) / out.median_ms : 0.0;
  return out;
}

double steady_ms(const std::function<void()>& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace fp4jit::tuner
