// How fp4jit tune works through its problems on one backend instance (a device, or the host):
// problems taken from a queue that the devices share, each measured while the next ones are made
// ready (tuner::TuneSession), results stored in the kernel cache, progress on stderr.
#pragma once
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache.hpp"
#include "tuner/tuner.hpp"
#include "tuner/workload.hpp"

namespace fp4jit::cli {

// One problem of the workload.
struct JobSpec {
  bool gemm = true;
  tuner::GemmProblem g;
  tuner::QuantizeProblem q;
};

struct Outcome {
  TuningRecord record;
  bool cached = false;
  std::string error;     // tuning failed: no record
  bool skipped = false;  // the backend has no kernel for the problem (error says why)
  bool done = false;     // taken by a device
  std::string label;
  tuner::TuneTimes times;  // measured problems
};

// Progress on stderr: a bar redrawn in place on a terminal, one line per finished problem
// otherwise. Thread-safe.
class ProgressView {
 public:
  explicit ProgressView(std::size_t total);
  void candidate(const tuner::Progress& p);
  void finished(const Outcome& o);

 private:
  std::mutex mutex_;
  std::size_t total_, done_ = 0;
  bool tty_;
};

// The problems not taken yet (indices into the specs), shared by the devices' threads. A device
// that becomes unusable gives back the problems it had taken ahead.
class JobQueue {
 public:
  explicit JobQueue(std::size_t count);
  std::optional<std::size_t> take();
  void give_back(std::size_t index);

 private:
  std::mutex mutex_;
  std::deque<std::size_t> left_;
};

using MakeJob = std::function<std::unique_ptr<tuner::TuneJob>(const JobSpec&)>;

// Tunes problems from `queue` until it is empty, into outcomes[index]: one is measured while up to
// `lookahead` more are staged (inputs, references and compiles under way). Problems already in
// `store` are reported as such unless `retune`. Returns early, giving back the problems staged,
// when a candidate left the device unusable (Error(driver)).
void run_jobs(const std::vector<JobSpec>& specs, JobQueue& queue, std::vector<Outcome>& outcomes,
              KernelCache& store, const tuner::TuneOptions& options, int lookahead, bool retune,
              ProgressView& view, const MakeJob& make_job);

}  // namespace fp4jit::cli
