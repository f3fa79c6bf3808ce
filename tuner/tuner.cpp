#include "tuner/tuner.hpp"

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "core/error.hpp"

namespace fp4jit::tuner {

namespace {

struct Compiled {
  std::string error;  // empty: compiled
  double ms = 0.0;
};

// Compiles candidates in index order on `threads` threads; result i becomes ready when
// candidate i is done, so the caller can measure i while later ones still compile.
class CompilePool {
 public:
  CompilePool(TuneJob& job, const std::vector<Candidate>& candidates, int threads)
      : job_(job), candidates_(candidates), promises_(candidates.size()) {
    for (auto& p : promises_) futures_.push_back(p.get_future());
    const int n = std::max(1, std::min<int>(threads, static_cast<int>(candidates.size())));
    for (int t = 0; t < n; ++t) workers_.emplace_back([this] { work(); });
  }
  ~CompilePool() {
    stop_ = true;
    for (auto& w : workers_) w.join();
  }
  Compiled get(std::size_t i) { return futures_[i].get(); }
  void wait_all() {
    for (auto& f : futures_) f.wait();
  }

 private:
  void work() {
    for (std::size_t i = next_++; i < candidates_.size(); i = next_++) {
      Compiled c;
      if (stop_) {
        c.error = "not compiled (tuning stopped)";
      } else {
        const auto start = std::chrono::steady_clock::now();
        try {
          job_.compile(candidates_[i]);
        } catch (const std::exception& e) {
          c.error = e.what();
        }
        c.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                   .count();
      }
      promises_[i].set_value(std::move(c));
    }
  }

  TuneJob& job_;
  const std::vector<Candidate>& candidates_;
  std::vector<std::promise<Compiled>> promises_;
  std::vector<std::future<Compiled>> futures_;
  std::vector<std::thread> workers_;
  std::atomic<std::size_t> next_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace

TuningRecord tune(TuneJob& job, const TuneOptions& options, const ProgressFn& progress) {
  TuningRecord record;
  record.key = job.key();
  record.work = job.work();
  record.unit = job.unit();
  std::vector<CandidateResult> pruned;
  std::vector<Candidate> candidates = job.candidates(&pruned);
  if (options.max_candidates > 0 && static_cast<int>(candidates.size()) > options.max_candidates) {
    for (std::size_t i = static_cast<std::size_t>(options.max_candidates); i < candidates.size();
         ++i)
      pruned.push_back(
          pruned_candidate(candidates[i].config, candidates[i].heuristic,
                           fmt::format("beyond the first {} candidates", options.max_candidates)));
    candidates.resize(static_cast<std::size_t>(options.max_candidates));
  }
  for (const Candidate& c : candidates)
    if (c.heuristic) record.heuristic = c.config;
  for (const CandidateResult& p : pruned)
    if (p.heuristic) record.heuristic = p.config;
  const int threads = options.compile_threads > 0
                          ? options.compile_threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Compiles start first: the inputs and the reference result are made while they run.
  CompilePool pool(job, candidates, threads);
  job.prepare();
  if (!options.overlap) pool.wait_all();
  Progress p{job.label(), 0, static_cast<int>(candidates.size()), nullptr};
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    CandidateResult r;
    r.config = c.config;
    r.heuristic = c.heuristic;
    const Compiled compiled = pool.get(i);
    r.compile_ms = compiled.ms;
    if (!compiled.error.empty()) {
      r.status = CandidateStatus::compile_failed;
      r.reason = compiled.error;
    } else {
      try {
        if (std::optional<std::string> wrong = job.verify(c)) {
          r.status = CandidateStatus::wrong_result;
          r.reason = *wrong;
        } else {
          const Timing t = measure([&](int it) { return job.run_ms(c, it); }, options.timing);
          r.median_ms = t.median_ms;
          r.noise = t.noise;
          r.repeats = t.repeats;
        }
      } catch (const std::exception& e) {
        r.status = CandidateStatus::run_failed;
        r.reason = e.what();
        if (!job.healthy())
          fail(ErrorKind::driver,
               "tuning {}: candidate {} left the device unusable ({}); restart the process (fp4jit "
               "tune resumes where it stopped)",
               job.label(), c.config, r.reason);
      }
    }
    if (c.heuristic && r.status == CandidateStatus::ok) record.heuristic_ms = r.median_ms;
    record.candidates.push_back(std::move(r));
    ++p.done;
    p.last = &record.candidates.back();
    if (progress) progress(p);
  }
  for (CandidateResult& r : pruned) record.candidates.push_back(std::move(r));
  const int w = select_winner(record.candidates, options.select);
  if (w < 0) {
    std::string why;
    for (const CandidateResult& r : record.candidates)
      if (r.status != CandidateStatus::pruned && why.size() < 600)
        why += fmt::format("\n  {}: {} ({})", r.config, candidate_status_name(r.status), r.reason);
    fail(ErrorKind::internal, "tuning {} ({}): no candidate gave a correct result{}", job.label(),
         record.key.problem, why);
  }
  record.winner = record.candidates[static_cast<std::size_t>(w)].config;
  record.winner_ms = record.candidates[static_cast<std::size_t>(w)].median_ms;
  return record;
}

}  // namespace fp4jit::tuner
