// The tuner's host-side work split over threads: inputs and reference results of large problems
// (tens of millions of elements) that would otherwise keep one core busy for seconds while the
// GPU waits. Each index is computed by the same code whatever the thread count, so results do
// not depend on it.
#pragma once
#include <cstdint>
#include <functional>

namespace fp4jit::tuner {

// Threads parallel_for uses by default: the hardware threads (at least 1).
int host_threads();

// Calls fn(begin, end) on contiguous chunks covering [0, n), each at least `grain` long, on up to
// `threads` threads (0: host_threads()), the calling thread among them; returns when all are
// done and rethrows the first exception one of them threw.
void parallel_for(std::int64_t n, std::int64_t grain,
                  const std::function<void(std::int64_t begin, std::int64_t end)>& fn,
                  int threads = 0);

}  // namespace fp4jit::tuner
