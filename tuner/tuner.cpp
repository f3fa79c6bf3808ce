#include "tuner/tuner.hpp"

#include <chrono>
#include <exception>
#include <map>
#include <thread>

#include "core/error.hpp"
#include "tuner/task_pool.hpp"

namespace fp4jit::tuner {

namespace {

struct Compiled {
  std::string error = "not compiled (tuning stopped)";  // empty: compiled
  double ms = 0.0;
};

// A job between stage() and the end of its tune(): its candidates and its background work.
struct Staged {
  std::vector<Candidate> candidates;  // the cap applied
  std::vector<CandidateResult> pruned;
  std::string heuristic;
  bool queued = false;  // the tasks below were pushed to the pool
  std::shared_ptr<Task> host;
  std::exception_ptr host_error;
  std::vector<std::shared_ptr<Task>> compiles;
  std::vector<Compiled> compiled;  // written by compiles[i], read after it is done
};

std::unique_ptr<Staged> list_candidates(TuneJob& job, const TuneOptions& options) {
  auto st = std::make_unique<Staged>();
  st->candidates = job.candidates(&st->pruned);
  const int cap = options.max_candidates;
  if (cap > 0 && static_cast<int>(st->candidates.size()) > cap) {
    for (std::size_t i = static_cast<std::size_t>(cap); i < st->candidates.size(); ++i)
      st->pruned.push_back(pruned_candidate(st->candidates[i].config, st->candidates[i].heuristic,
                                            fmt::format("beyond the first {} candidates", cap)));
    st->candidates.resize(static_cast<std::size_t>(cap));
  }
  for (const Candidate& c : st->candidates)
    if (c.heuristic) st->heuristic = c.config;
  for (const CandidateResult& p : st->pruned)
    if (p.heuristic) st->heuristic = p.config;
  st->compiled.resize(st->candidates.size());
  Staged* s = st.get();
  st->host = std::make_shared<Task>([&job, s] {
    try {
      job.prepare_host();
    } catch (...) {
      s->host_error = std::current_exception();
    }
  });
  for (std::size_t i = 0; i < st->candidates.size(); ++i)
    st->compiles.push_back(std::make_shared<Task>([&job, s, i] {
      Compiled& c = s->compiled[i];
      c.error.clear();
      const auto start = std::chrono::steady_clock::now();
      try {
        job.compile(s->candidates[i]);
      } catch (const std::exception& e) {
        c.error = e.what();
      } catch (...) {
        c.error = "compile failed (an exception of unknown type)";
      }
      c.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                 .count();
    }));
  return st;
}

// How a candidate's measurement went, beyond its CandidateResult.
struct Measured {
  double fastest_ms = 0.0;
  bool stopped_early = false;
};

// Verifies and times one compiled candidate into r (status, reason, median, ...); `best_ms` is the
// best median so far (0: none) for the early stop.
Measured measure_candidate(TuneJob& job, const Candidate& c, const TuneOptions& options,
                           double best_ms, CandidateResult& r) {
  try {
    if (std::optional<std::string> wrong = job.verify(c)) {
      r.status = CandidateStatus::wrong_result;
      r.reason = *wrong;
      return {};
    }
    const Timing t = measure([&](int it) { return job.run_ms(c, it); }, options.timing,
                             c.heuristic ? 0.0 : best_ms);
    r.median_ms = t.median_ms;
    r.noise = t.noise;
    r.repeats = t.repeats;
    r.reason.clear();
    if (t.stopped_early)
      r.reason = fmt::format(
          "stopped early after {} runs: fastest {:.4g} ms > {:.2f} x the best median so far "
          "({:.4g} ms)",
          t.repeats, t.fastest_ms, options.timing.early_stop, best_ms);
    return {t.fastest_ms, t.stopped_early};
  } catch (const std::exception& e) {
    r.status = CandidateStatus::run_failed;
    r.reason = e.what();
    if (!job.healthy())
      fail(ErrorKind::driver,
           "tuning {}: candidate {} left the device unusable ({}); restart the process (fp4jit "
           "tune resumes where it stopped)",
           job.label(), c.config, r.reason);
  }
  return {};
}

// Candidates stopped early whose fastest run lies within the tie tolerance of the fastest median
// (tuner/select.hpp) could have tied, or won, when measured in full: they are, and the selection
// is made again, so that an early stop never decides the winner. Returns its index (-1: none).
int select_with_full_ties(TuneJob& job, const std::vector<Candidate>& candidates,
                          const TuneOptions& options, std::vector<CandidateResult>& results,
                          std::vector<Measured>& measured) {
  for (;;) {
    const int w = select_winner(results, options.select);
    if (w < 0) return w;
    double best = 0.0, spread = 0.0;  // the fastest median and its spread
    for (const CandidateResult& r : results)
      if (r.status == CandidateStatus::ok && r.median_ms > 0.0 &&
          (best == 0.0 || r.median_ms < best))
        best = r.median_ms, spread = r.noise;
    const double reach = best * (1.0 + std::max(options.select.noise_floor, spread));
    bool again = false;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      if (!measured[i].stopped_early || measured[i].fastest_ms > reach) continue;
      measured[i] = measure_candidate(job, candidates[i], options, 0.0, results[i]);
      again = true;
    }
    if (!again) return w;
  }
}

}  // namespace

struct TuneSession::State {
  explicit State(const TuneOptions& o)
      : options(o),
        pool(o.compile_threads > 0
                 ? o.compile_threads
                 : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) {}
  // Queues the job's preparation and compiles (the preparation first: the inputs take longest).
  void queue(Staged& st) {
    if (st.queued) return;
    st.queued = true;
    pool.push(st.host);
    for (const auto& c : st.compiles) pool.push(c);
  }
  // Nothing of the job's runs any more: what had not started is cancelled, the rest waited for.
  static void release(Staged& st) {
    st.host->cancel();
    for (const auto& c : st.compiles) c->cancel();
    st.host->wait();
    for (const auto& c : st.compiles) c->wait();
  }

  TuneOptions options;
  TuneTimes last;
  std::map<TuneJob*, std::unique_ptr<Staged>> staged;
  TaskPool pool;  // last: its threads stop before the staged jobs' state goes
};

TuneSession::TuneSession(const TuneOptions& options) : state_(std::make_unique<State>(options)) {}

TuneSession::~TuneSession() {
  for (auto& [job, st] : state_->staged) State::release(*st);
}

void TuneSession::stage(TuneJob& job) {
  if (state_->staged.count(&job) != 0) return;
  std::unique_ptr<Staged> st = list_candidates(job, state_->options);
  if (state_->options.overlap) state_->queue(*st);
  state_->staged.emplace(&job, std::move(st));
}

TuningRecord TuneSession::tune(TuneJob& job, const ProgressFn& progress) {
  stage(job);
  Staged& st = *state_->staged.at(&job);
  struct Release {  // on every way out: the job is no longer the session's
    State& state;
    TuneJob* job;
    ~Release() {
      State::release(*state.staged.at(job));
      state.staged.erase(job);
    }
  } release{*state_, &job};

  const TuneOptions& options = state_->options;
  TuningRecord record;
  record.key = job.key();
  record.work = job.work();
  record.unit = job.unit();
  record.heuristic = st.heuristic;
  // Compiles start first (staged ones may be done already): the inputs and the reference are made
  // while they run.
  TuneTimes& times = state_->last;
  times = {};
  auto mark = std::chrono::steady_clock::now();
  const auto lap = [&](double& into) {
    const auto now = std::chrono::steady_clock::now();
    into += std::chrono::duration<double>(now - mark).count();
    mark = now;
  };
  state_->queue(st);
  st.host->wait();
  if (st.host_error) std::rethrow_exception(st.host_error);
  job.prepare();
  lap(times.prepare);
  if (!options.overlap)
    for (const auto& c : st.compiles) c->wait();
  lap(times.compile_wait);
  Progress p{job.label(), 0, static_cast<int>(st.candidates.size()), nullptr};
  double best_ms = 0.0;  // the best median so far
  std::vector<Measured> measured(st.candidates.size());
  for (std::size_t i = 0; i < st.candidates.size(); ++i) {
    const Candidate& c = st.candidates[i];
    CandidateResult r;
    r.config = c.config;
    r.heuristic = c.heuristic;
    st.compiles[i]->wait();
    lap(times.compile_wait);
    const Compiled& compiled = st.compiled[i];
    r.compile_ms = compiled.ms;
    if (!compiled.error.empty()) {
      r.status = CandidateStatus::compile_failed;
      r.reason = compiled.error;
    } else {
      measured[i] = measure_candidate(job, c, options, best_ms, r);
      if (r.status == CandidateStatus::ok && r.median_ms > 0.0 &&
          (best_ms == 0.0 || r.median_ms < best_ms))
        best_ms = r.median_ms;
    }
    lap(times.measure);
    record.candidates.push_back(std::move(r));
    ++p.done;
    p.last = &record.candidates.back();
    if (progress) progress(p);
  }
  const int w = select_with_full_ties(job, st.candidates, options, record.candidates, measured);
  lap(times.measure);
  for (const CandidateResult& r : record.candidates)
    if (r.heuristic && r.status == CandidateStatus::ok) record.heuristic_ms = r.median_ms;
  for (CandidateResult& r : st.pruned) record.candidates.push_back(std::move(r));
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

const TuneTimes& TuneSession::last_times() const {
  return state_->last;
}

TuningRecord tune(TuneJob& job, const TuneOptions& options, const ProgressFn& progress) {
  TuneSession session(options);
  return session.tune(job, progress);
}

}  // namespace fp4jit::tuner
