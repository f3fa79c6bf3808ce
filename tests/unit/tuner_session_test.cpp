// The tuner across jobs and the early stop: a session prepares and compiles staged jobs while an
// earlier one is measured (and nothing in the background with overlap off), a job's work is over
// when its tune() ends, clearly slower candidates stop after min_repeats without changing the
// winner, and a stopped candidate that could tie is measured in full.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "core/error.hpp"
#include "tests/unit/eventually.hpp"
#include "tuner/tuner.hpp"

namespace fp4jit::tuner {
namespace {

int thread_nice() {
  return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
}

using fp4jit::test_util::eventually;

// A job of fixed candidates and times (ms per config), counting what the session does with it.
class CountingJob : public TuneJob {
 public:
  CountingJob(std::string name, std::vector<std::pair<std::string, double>> times)
      : name_(std::move(name)), times_(std::move(times)) {}
  TuningKey key() const override { return TuningKey{{"m", "a", 1, "", "c"}, "gemm", name_, "r"}; }
  std::string label() const override { return name_; }
  double work() const override { return 1.0; }
  std::string unit() const override { return "TFLOP/s"; }
  std::vector<Candidate> candidates(std::vector<CandidateResult>*) override {
    std::vector<Candidate> out;
    for (const auto& [config, ms] : times_) out.push_back({config, out.empty()});
    return out;
  }
  void prepare_host() override {
    host_thread = std::this_thread::get_id();
    host_nice = thread_nice();
    ++host_prepared;
  }
  void prepare() override {
    EXPECT_EQ(host_prepared.load(), 1) << name_ << ": prepare() before prepare_host()";
    ++prepared;
  }
  void compile(const Candidate& c) override {
    ++compiling;
    std::this_thread::sleep_for(std::chrono::milliseconds(compile_ms));
    {
      std::lock_guard lock(mutex);
      ++compiles[c.config];
    }
    ++compiled;
    --compiling;
  }
  std::optional<std::string> verify(const Candidate&) override { return std::nullopt; }
  double run_ms(const Candidate& c, int) override {
    ++runs[c.config];
    if (during_run) during_run();
    for (const auto& [config, ms] : times_)
      if (config == c.config) return ms;
    return 1.0;
  }

  std::string name_;
  std::vector<std::pair<std::string, double>> times_;
  int compile_ms = 1;
  std::function<void()> during_run;
  std::atomic<int> host_prepared{0}, prepared{0}, compiled{0}, compiling{0};
  std::thread::id host_thread;
  int host_nice = 0;
  std::mutex mutex;
  std::map<std::string, int> compiles;
  std::map<std::string, int> runs;  // measuring thread only
};

TuneOptions quick(bool overlap) {
  TuneOptions o;
  o.overlap = overlap;
  o.compile_threads = 2;
  o.timing.warmup = 0;
  o.timing.min_repeats = 3;
  o.timing.max_repeats = 3;
  return o;
}

TEST(TunerSession, StagedJobsPrepareAndCompileWhileAnEarlierOneIsMeasured) {
  CountingJob a("a", {{"h", 1.0}, {"x", 1.1}});
  CountingJob b("b", {{"h", 1.0}, {"x", 1.1}, {"y", 1.2}, {"z", 1.3}});
  bool waited = false, b_ready_during_a = false;
  a.during_run = [&] {
    if (waited) return;
    waited = true;
    b_ready_during_a = eventually([&] { return b.compiled == 4 && b.host_prepared == 1; });
  };
  TuneSession session(quick(true));
  session.stage(a);
  session.stage(b);
  EXPECT_EQ(session.tune(a).winner, "h");
  EXPECT_TRUE(b_ready_during_a) << "b was not prepared and compiled while a was measured";
  EXPECT_NE(b.host_thread, std::this_thread::get_id());      // on the session's threads,
  EXPECT_GE(b.host_nice, std::min(thread_nice() + 10, 19));  // below the measuring thread
  EXPECT_EQ(session.tune(b).winner, "h");
  EXPECT_EQ(b.prepared.load(), 1);
  EXPECT_EQ(b.host_prepared.load(), 1);
  for (const auto& [config, n] : b.compiles) EXPECT_EQ(n, 1) << config;
  EXPECT_EQ(b.compiles.size(), 4u);
}

TEST(TunerSession, OverlapOffRunsNothingInTheBackgroundWhileMeasuring) {
  CountingJob a("a", {{"h", 1.0}, {"x", 1.1}});
  CountingJob b("b", {{"h", 1.0}, {"x", 1.1}});
  int busy = 0;
  a.during_run = [&] { busy += b.compiled + b.compiling + b.host_prepared; };
  TuneSession session(quick(false));
  session.stage(a);
  session.stage(b);
  session.tune(a);
  EXPECT_EQ(busy, 0) << "b compiled or prepared while a was measured";
  EXPECT_EQ(a.compiled.load(), 2);
  session.tune(b);
  EXPECT_EQ(b.compiled.load(), 2);
}

// A job that faults on its first candidate: the tuning throws, and by then none of its compiles
// runs or will run (the caller may destroy it at once).
TEST(TunerSession, AFailedJobLeavesNothingRunning) {
  class Faulting final : public CountingJob {
   public:
    using CountingJob::CountingJob;
    std::optional<std::string> verify(const Candidate&) override {
      fail(ErrorKind::driver, "an illegal memory access was encountered");
    }
    bool healthy() override { return false; }
  };
  std::vector<std::pair<std::string, double>> many;
  for (int i = 0; i < 40; ++i) many.push_back({"c" + std::to_string(i), 1.0});
  auto job = std::make_unique<Faulting>("f", many);
  job->compile_ms = 20;
  TuneSession session(quick(true));
  EXPECT_THROW(session.tune(*job), Error);
  const int compiled = job->compiled;
  EXPECT_EQ(job->compiling.load(), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(job->compiled.load(), compiled);
  EXPECT_LT(compiled, 40);  // the rest was dropped
  job.reset();
  CountingJob next("n", {{"h", 1.0}});
  EXPECT_EQ(session.tune(next).winner, "h");  // the session goes on
}

TEST(TunerTiming, EarlyStopAfterMinRepeatsOnlyWhenTheFastestRunIsFarOff) {
  TimingOptions o;
  o.warmup = 1;
  o.min_repeats = 5;
  o.max_repeats = 100;
  o.budget_ms = 1e9;
  o.early_stop = 1.25;
  int calls = 0;
  const auto constant = [&](double ms) {
    return [&calls, ms](int) {
      ++calls;
      return ms;
    };
  };
  Timing t = measure(constant(2.0), o, 1.0);
  EXPECT_TRUE(t.stopped_early);
  EXPECT_EQ(t.repeats, 5);
  EXPECT_EQ(calls, 6);
  EXPECT_DOUBLE_EQ(t.median_ms, 2.0);
  EXPECT_DOUBLE_EQ(t.fastest_ms, 2.0);
  // Within 1.25x: measured in full.
  t = measure(constant(1.2), o, 1.0);
  EXPECT_FALSE(t.stopped_early);
  EXPECT_EQ(t.repeats, 100);
  // No best yet, or early stop off: measured in full.
  EXPECT_EQ(measure(constant(2.0), o, 0.0).repeats, 100);
  o.early_stop = 0.0;
  EXPECT_EQ(measure(constant(2.0), o, 1.0).repeats, 100);
  o.early_stop = 1.25;
  // One fast run among slow ones keeps it in (the fastest run decides, not the median).
  const std::vector<double> mixed{9.0, 3.0, 3.0, 1.1, 3.0, 3.0};
  t = measure([&](int i) { return mixed[static_cast<std::size_t>(i) % mixed.size()]; }, o, 1.0);
  EXPECT_FALSE(t.stopped_early);
  EXPECT_EQ(t.repeats, 100);
}

TEST(TunerDriver, EarlyStopKeepsTheWinnerOfAFullMeasurement) {
  const std::vector<std::pair<std::string, double>> times{
      {"h", 1.0}, {"slow", 3.0}, {"close", 1.2}, {"best", 0.9}, {"slower", 2.0}};
  TuneOptions o = quick(true);
  o.timing.min_repeats = 5;
  o.timing.max_repeats = 40;
  o.timing.budget_ms = 1e9;
  CountingJob full("full", times);
  TuneOptions off = o;
  off.timing.early_stop = 0.0;
  const TuningRecord reference = tune(full, off);
  CountingJob job("job", times);
  const TuningRecord r = tune(job, o);
  EXPECT_EQ(r.winner, reference.winner);
  EXPECT_EQ(r.winner, "best");
  EXPECT_EQ(r.heuristic_ms, 1.0);
  for (const CandidateResult& c : r.candidates) {
    EXPECT_EQ(c.status, CandidateStatus::ok) << c.config;
    const bool stopped = c.config == "slow" || c.config == "slower";
    EXPECT_EQ(c.repeats, stopped ? 5 : 40) << c.config;
    EXPECT_EQ(c.reason.find("stopped early after 5 runs") != std::string::npos, stopped)
        << c.config << ": " << c.reason;
  }
  EXPECT_EQ(job.runs["slow"], 5);
  EXPECT_EQ(job.runs["close"], 40);
}

// The fastest's spread is so wide that a stopped candidate's fastest run lies in its tie
// tolerance: that candidate is measured in full before the winner is chosen.
TEST(TunerDriver, AStoppedCandidateThatCouldTieIsMeasuredInFull) {
  class Noisy final : public CountingJob {
   public:
    using CountingJob::CountingJob;
    double run_ms(const Candidate& c, int it) override {
      ++runs[c.config];
      if (c.config == "h") return it % 2 == 0 ? 0.5 : 1.0;  // median 0.75, spread about 0.67
      return 1.0;                                           // over 1.25 x 0.75 when stopped
    }
  };
  Noisy job("noisy", {{"h", 0.0}, {"a", 0.0}});
  TuneOptions o = quick(true);
  o.timing.min_repeats = 5;
  o.timing.max_repeats = 20;
  o.timing.budget_ms = 1e9;
  const TuningRecord r = tune(job, o);
  ASSERT_EQ(r.candidates.size(), 2u);
  EXPECT_EQ(r.candidates[1].config, "a");
  EXPECT_EQ(r.candidates[1].repeats, 20);
  EXPECT_TRUE(r.candidates[1].reason.empty()) << r.candidates[1].reason;
  EXPECT_EQ(job.runs["a"], 5 + 20);
  EXPECT_EQ(r.winner, "h");  // tied within the spread: the heuristic
}

}  // namespace
}  // namespace fp4jit::tuner
