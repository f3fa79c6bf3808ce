#include "cli/tune_run.hpp"

#include <unistd.h>

#include <cstdio>

#include "core/error.hpp"
#include "core/log.hpp"

namespace fp4jit::cli {

ProgressView::ProgressView(std::size_t total) : total_(total), tty_(isatty(fileno(stderr)) != 0) {}

void ProgressView::candidate(const tuner::Progress& p) {
  if (!tty_) return;
  std::lock_guard lock(mutex_);
  const int width = 24, filled = p.total > 0 ? width * p.done / p.total : width;
  fmt::print(stderr, "\r[{}/{}] {:<32} [{}{}] {}/{}   ", done_ + 1, total_, p.job.substr(0, 32),
             std::string(static_cast<std::size_t>(filled), '#'),
             std::string(static_cast<std::size_t>(width - filled), '.'), p.done, p.total);
  std::fflush(stderr);
}

void ProgressView::finished(const Outcome& o) {
  std::lock_guard lock(mutex_);
  ++done_;
  if (tty_) fmt::print(stderr, "\r\033[K");
  if (!o.error.empty()) {
    fmt::print(stderr, "[{}/{}] {}: {}: {}\n", done_, total_, o.label,
               o.skipped ? "skipped" : "FAILED", o.error);
  } else {
    const TuningRecord& r = o.record;
    int ok = 0, pruned = 0;
    for (const auto& c : r.candidates) {
      ok += c.status == CandidateStatus::ok ? 1 : 0;
      pruned += c.status == CandidateStatus::pruned ? 1 : 0;
    }
    fmt::print(stderr,
               "[{}/{}] {}: {} ({} of {} measured candidates correct, {} pruned), winner {} "
               "{:.4f} ms{}\n",
               done_, total_, o.label, o.cached ? "already tuned" : "tuned", ok,
               static_cast<int>(r.candidates.size()) - pruned, pruned, r.winner, r.winner_ms,
               r.heuristic_ms > 0
                   ? fmt::format(", {:.2f}x the heuristic", r.heuristic_ms / r.winner_ms)
                   : "");
  }
  std::fflush(stderr);
}

JobQueue::JobQueue(std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) left_.push_back(i);
}

std::optional<std::size_t> JobQueue::take() {
  std::lock_guard lock(mutex_);
  if (left_.empty()) return std::nullopt;
  const std::size_t i = left_.front();
  left_.pop_front();
  return i;
}

void JobQueue::give_back(std::size_t index) {
  std::lock_guard lock(mutex_);
  left_.push_front(index);
}

void run_jobs(const std::vector<JobSpec>& specs, JobQueue& queue, std::vector<Outcome>& outcomes,
              KernelCache& store, const tuner::TuneOptions& options, int lookahead, bool retune,
              ProgressView& view, const MakeJob& make_job) {
  struct Taken {
    std::size_t index;
    std::unique_ptr<tuner::TuneJob> job;
  };
  std::deque<Taken> taken;  // outlives the session, which refers to the staged jobs
  tuner::TuneSession session(options);
  // Takes the next problem that needs tuning and stages it (problems already tuned, or that fail
  // before any measuring, are reported on the way); false when none is left.
  const auto take_next = [&] {
    for (std::optional<std::size_t> i = queue.take(); i; i = queue.take()) {
      Outcome& o = outcomes[*i];
      o.done = true;
      try {
        std::unique_ptr<tuner::TuneJob> job = make_job(specs[*i]);
        o.label = job->label();
        if (!retune)
          if (std::optional<TuningRecord> have = store.get_tuning(job->key())) {
            o.record = *have;
            o.cached = true;
            view.finished(o);
            continue;
          }
        session.stage(*job);
        taken.push_back({*i, std::move(job)});
        return true;
      } catch (const Error& e) {
        o.error = e.what();
        o.skipped = e.kind() == ErrorKind::unsupported;
      } catch (const std::exception& e) {
        o.error = e.what();
      }
      view.finished(o);
    }
    return false;
  };
  for (;;) {
    while (static_cast<int>(taken.size()) <= lookahead && take_next()) {
    }
    if (taken.empty()) return;
    const std::size_t i = taken.front().index;
    const std::unique_ptr<tuner::TuneJob> job = std::move(taken.front().job);
    taken.pop_front();
    Outcome& o = outcomes[i];
    try {
      try {
        o.record = session.tune(*job, [&](const tuner::Progress& p) { view.candidate(p); });
      } catch (...) {
        o.times = session.last_times();
        throw;
      }
      o.times = session.last_times();
      if (!store.put_tuning(o.record))
        warn("tune: the result for {} could not be stored in {}", o.label, store.path());
    } catch (const Error& e) {
      o.error = e.what();
      o.skipped = e.kind() == ErrorKind::unsupported;
      if (e.kind() == ErrorKind::driver) {  // this device is unusable: it takes no more problems
        view.finished(o);
        for (auto it = taken.rbegin(); it != taken.rend(); ++it) {
          outcomes[it->index].done = false;
          queue.give_back(it->index);
        }
        return;
      }
    } catch (const std::exception& e) {
      o.error = e.what();
    }
    view.finished(o);
  }
}

}  // namespace fp4jit::cli
