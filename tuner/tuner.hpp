// The tuning driver: one job is one problem (a GEMM or a quantize of one shape, recipe and
// device). Its candidates (pruned by validity before anything compiles, the heuristic's config
// first) compile on a pool of threads while the ones already compiled are verified against the
// reference and timed; a candidate that fails to compile, gives a wrong result or faults is
// recorded with its reason and never chosen. The winner (tuner/select.hpp) and every candidate's
// measurement form the TuningRecord the cache stores.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cache/tuning.hpp"
#include "tuner/select.hpp"
#include "tuner/timing.hpp"

namespace fp4jit::tuner {

struct Candidate {
  std::string config;  // canonical text, as stored
  bool heuristic = false;
};

class TuneJob {
 public:
  virtual ~TuneJob() = default;
  virtual TuningKey key() const = 0;
  virtual std::string label() const = 0;  // "fprop 8192x4096x4096", for progress lines
  virtual double work() const = 0;        // FLOPs (GEMM) or bytes moved (quantize) per call
  virtual std::string unit() const = 0;   // "TFLOP/s" or "GB/s"
  // The valid candidates, the heuristic's first; those pruned go to *pruned with the reason.
  virtual std::vector<Candidate> candidates(std::vector<CandidateResult>* pruned) = 0;
  // Inputs (enough sets to rotate over more than the last-level cache) and the reference result.
  virtual void prepare() = 0;
  // Builds the candidate's kernels (or finds them in the cache). Called from pool threads, several
  // at once, and while prepare() runs (it must not need its inputs); throws Error on failure.
  virtual void compile(const Candidate& c) = 0;
  // Runs the candidate once on the first input set and compares with the reference: nullopt when
  // it matches, else what differs. Throws Error when the run itself fails.
  virtual std::optional<std::string> verify(const Candidate& c) = 0;
  // Milliseconds of one call on input set `iteration` modulo the set count.
  virtual double run_ms(const Candidate& c, int iteration) = 0;
  // False when a failed candidate left the device unusable (a CUDA fault poisons the context for
  // the rest of the process): tuning then stops with Error(driver) instead of recording the
  // remaining candidates as failures.
  virtual bool healthy() { return true; }
};

struct TuneOptions {
  TimingOptions timing;
  SelectOptions select;
  int compile_threads = 0;  // 0: hardware threads
  // Measure while later candidates compile. Off for the host backend, whose kernels run on the
  // cores the compiler would take.
  bool overlap = true;
  int max_candidates = 0;  // 0: all valid; else the first N (the heuristic's always among them)
};

struct Progress {
  std::string job;          // the job's label
  int done = 0, total = 0;  // candidates finished / to measure
  const CandidateResult* last = nullptr;
};
using ProgressFn = std::function<void(const Progress&)>;

// Tunes one job. Throws Error(internal) naming the job when no candidate is correct, and
// Error(driver) when a candidate left the device unusable (nothing is recorded then).
TuningRecord tune(TuneJob& job, const TuneOptions& options, const ProgressFn& progress = {});

}  // namespace fp4jit::tuner
