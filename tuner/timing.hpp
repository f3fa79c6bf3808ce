// Timing of one candidate: warm-up runs, then repeats until a time budget (within a minimum and a
// maximum count), reported as the median with the interquartile spread relative to it. The run
// function returns the milliseconds of one call as the backend measures it (host: steady clock
// around the call; CUDA: events around the launch), on its `iteration`-th input set (the caller
// rotates sets so their bytes exceed the last-level cache).
#pragma once
#include <functional>

namespace fp4jit::tuner {

struct TimingOptions {
  int warmup = 2;
  int min_repeats = 5;
  int max_repeats = 100;
  double budget_ms = 150.0;  // measuring time per candidate after warm-up
};

struct Timing {
  double median_ms = 0.0;
  double noise = 0.0;  // (p75 - p25) / median
  int repeats = 0;
};

Timing measure(const std::function<double(int iteration)>& run, const TimingOptions& options);

// Milliseconds of fn() by the steady clock.
double steady_ms(const std::function<void()>& fn);

}  // namespace fp4jit::tuner
