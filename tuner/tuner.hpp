// The tuning driver: one job is one problem (a GEMM or a quantize of one shape, recipe and
// device). Its candidates (pruned by validity before anything compiles, the heuristic's config
// first) compile on a pool of threads while the ones already compiled are verified against the
// reference and timed; a candidate that fails to compile, gives a wrong result or faults is
// recorded with its reason and never chosen. The winner (tuner/select.hpp) and every candidate's
// measurement form the TuningRecord the cache stores.
//
// A TuneSession tunes jobs one after another and gets the next ones ready meanwhile: their host
// preparation and compiles run while the current job is measured.
#pragma once
#include <functional>
#include <memory>
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
  // The host part of the preparation: what needs neither the device nor a compiled kernel
  // (inputs made on the host, a reference computed from them alone). Called once, before
  // prepare(), possibly on another thread while other jobs are measured and while this job's
  // candidates compile.
  virtual void prepare_host() {}
  // The rest, on the measuring thread: inputs (enough sets to rotate over more than the
  // last-level cache) and the reference result.
  virtual void prepare() = 0;
  // Builds the candidate's kernels (or finds them in the cache). Called from pool threads, several
  // at once, and while prepare_host() and prepare() run (it must not need their results); throws
  // Error on failure.
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
  int compile_threads = 0;  // threads compiling and preparing in the background; 0: hardware
  // Measure while later candidates compile (and, in a session, while later jobs compile and
  // prepare). Off for the host backend, whose kernels run on the cores the compiler would take.
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
//
// Every candidate is verified before it is timed. With timing.early_stop set, a candidate that is
// clearly slower than the best so far stops after min_repeats (tuner/timing.hpp; the heuristic's
// never does): it stays ok, with fewer repeats and its reason saying so. Should the fastest's
// tie tolerance reach a stopped candidate's fastest run, that candidate is measured in full, so
// the winner and the tie-break are those of a full measurement.
TuningRecord tune(TuneJob& job, const TuneOptions& options, const ProgressFn& progress = {});

// Where the calling thread's time went in a tune() (seconds).
struct TuneTimes {
  double prepare = 0.0;       // waiting for prepare_host() (or running it), then prepare()
  double compile_wait = 0.0;  // waiting for compiles (or running them)
  double measure = 0.0;       // verifying and timing
};

// Jobs tuned one after another on the calling thread (one device), the next ones made ready in
// the background: stage() lists a job's candidates and queues its prepare_host() and the compiles
// of its candidates (the heuristic's first) on the session's threads, behind the jobs staged
// before it, so that they run while earlier jobs are measured. Measurement (prepare, verify,
// timing) stays on the calling thread; when it needs a compile or preparation that no thread has
// started, it runs it itself. Kernels that several jobs share compile once
// (cuda::kernel_binary). With options.overlap off nothing runs in the background while a job is
// measured: stage() only lists the candidates, and tune() compiles them all before measuring.
// One thread calls stage() and tune().
class TuneSession {
 public:
  explicit TuneSession(const TuneOptions& options);
  // Drops the work not started and waits for the rest: staged jobs must outlive the session.
  ~TuneSession();
  TuneSession(const TuneSession&) = delete;
  TuneSession& operator=(const TuneSession&) = delete;

  // Once per job; throws what job.candidates() throws (the job is then not staged).
  void stage(TuneJob& job);
  // tune() of the job, staged now if it was not. When it returns or throws, nothing in the session
  // refers to the job any more.
  TuningRecord tune(TuneJob& job, const ProgressFn& progress = {});
  const TuneTimes& last_times() const;  // of the last tune(), also when it threw

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace fp4jit::tuner
