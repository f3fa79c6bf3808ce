// Timing of one candidate: warm-up runs, then repeats until a time budget (within a minimum and a
// maximum count), reported as the median with the interquartile spread relative to it. The run
// function returns the milliseconds of one call as the backend measures it (host: steady clock
// around the call; CUDA: events around the launch with the host's enqueueing hidden behind a
// lead kernel, cuda::GpuTimer, so small problems are ranked by their GPU time, not by the host's
// launch cost), on its `iteration`-th input set (the caller rotates sets so their bytes exceed
// the last-level cache).
//
// Early stop: given the best median of the candidates measured before, a candidate whose fastest
// run after min_repeats is over early_stop times that median is measured no further. Its median
// is at least its fastest run, so it could neither win nor (tie tolerances under early_stop - 1)
// tie; a true winner is never stopped, since noise on a GPU or CPU only adds time to a run.
#pragma once
#include <functional>

namespace fp4jit::tuner {

struct TimingOptions {
  int warmup = 2;
  int min_repeats = 5;
  int max_repeats = 100;
  double budget_ms = 150.0;  // measuring time per candidate after warm-up
  double early_stop = 1.25;  // 0: every candidate gets the whole budget
};

struct Timing {
  double median_ms = 0.0;
  double noise = 0.0;  // (p75 - p25) / median
  int repeats = 0;
  double fastest_ms = 0.0;
  bool stopped_early = false;
};

// best_ms: the best median so far (0: none, no early stop).
Timing measure(const std::function<double(int iteration)>& run, const TimingOptions& options,
               double best_ms = 0.0);

// Milliseconds of fn() by the steady clock.
double steady_ms(const std::function<void()>& fn);

}  // namespace fp4jit::tuner
