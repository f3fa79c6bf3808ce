// The tuner's host-side logic (winner selection: tuner_select_test.cpp; the CUDA candidate
// spaces: tuner_space_test.cpp): timing statistics, the driver (failures recorded and never
// chosen, overlap of compile and measure), M buckets and keys, workloads (model presets, shapes
// files).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/error.hpp"
#include "runtime/tuning_keys.hpp"
#include "tuner/tuner.hpp"
#include "tuner/workload.hpp"

namespace fp4jit::tuner {
namespace {

TEST(TunerTiming, MedianAndSpreadOfRepeats) {
  const std::vector<double> samples{9.0, 1.0, 2.0, 3.0, 4.0, 5.0, 100.0};
  int calls = 0;
  TimingOptions o;
  o.warmup = 2;
  o.min_repeats = 5;
  o.max_repeats = 5;
  const Timing t = measure(
      [&](int i) {
        ++calls;
        return samples[static_cast<std::size_t>(i)];
      },
      o);
  EXPECT_EQ(calls, 7);
  EXPECT_EQ(t.repeats, 5);
  EXPECT_DOUBLE_EQ(t.median_ms, 4.0);  // of {2, 3, 4, 5, 100}: the outlier does not move it
  EXPECT_DOUBLE_EQ(t.noise, (5.0 - 3.0) / 4.0);
}

// A job with scripted outcomes: compile failures, wrong results, faults, and times.
class ScriptedJob final : public TuneJob {
 public:
  TuningKey key() const override {
    return TuningKey{{"model", "arch", 1, "", "cc"}, "gemm", "p", "r"};
  }
  std::string label() const override { return "scripted"; }
  double work() const override { return 1e9; }
  std::string unit() const override { return "TFLOP/s"; }
  std::vector<Candidate> candidates(std::vector<CandidateResult>* pruned) override {
    pruned->push_back(pruned_candidate("too-big", false, "shared memory"));
    return {{"h", true},      {"nocompile", false}, {"wrong", false},
            {"fault", false}, {"fast", false},      {"slow", false}};
  }
  void prepare() override { prepared = true; }
  void compile(const Candidate& c) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ++compiled;
    if (c.config == "nocompile") fail(ErrorKind::compile, "ptxas: too many registers");
  }
  std::optional<std::string> verify(const Candidate& c) override {
    if (c.config == "wrong") return std::string("row 3 differs");
    if (c.config == "fault") fail(ErrorKind::driver, "illegal address");
    return std::nullopt;
  }
  double run_ms(const Candidate& c, int) override {
    ++runs;
    return c.config == "fast" ? 1.0 : (c.config == "slow" ? 3.0 : 2.0);
  }
  bool prepared = false;
  std::atomic<int> compiled{0};
  int runs = 0;
};

TEST(TunerDriver, RecordsEveryCandidateAndChoosesOnlyCorrectOnes) {
  for (bool overlap : {false, true}) {
    ScriptedJob job;
    TuneOptions o;
    o.overlap = overlap;
    o.compile_threads = 3;
    o.timing.warmup = 1;
    o.timing.min_repeats = 3;
    o.timing.max_repeats = 3;
    int progress_calls = 0;
    const TuningRecord r = tune(job, o, [&](const Progress& p) {
      ++progress_calls;
      EXPECT_EQ(p.total, 6);
      EXPECT_EQ(p.job, "scripted");
    });
    EXPECT_TRUE(job.prepared);
    EXPECT_EQ(job.compiled.load(), 6);
    EXPECT_EQ(progress_calls, 6);
    EXPECT_EQ(r.winner, "fast");
    EXPECT_EQ(r.winner_ms, 1.0);
    EXPECT_EQ(r.heuristic, "h");
    EXPECT_EQ(r.heuristic_ms, 2.0);
    ASSERT_EQ(r.candidates.size(), 7u);
    const auto status = [&](const std::string& config) {
      for (const auto& c : r.candidates)
        if (c.config == config) return c.status;
      return CandidateStatus::ok;
    };
    EXPECT_EQ(status("nocompile"), CandidateStatus::compile_failed);
    EXPECT_EQ(status("wrong"), CandidateStatus::wrong_result);
    EXPECT_EQ(status("fault"), CandidateStatus::run_failed);
    EXPECT_EQ(status("too-big"), CandidateStatus::pruned);
    EXPECT_NE(r.candidates[1].reason.find("ptxas"), std::string::npos);
  }
}

// A fault that leaves the device unusable stops the tuning instead of failing every later
// candidate (and no partial result is returned).
class PoisonedJob final : public TuneJob {
 public:
  TuningKey key() const override { return TuningKey{{"m", "a", 1, "", "c"}, "gemm", "p", "r"}; }
  std::string label() const override { return "poisoned"; }
  double work() const override { return 1.0; }
  std::string unit() const override { return "TFLOP/s"; }
  std::vector<Candidate> candidates(std::vector<CandidateResult>*) override {
    return {{"h", true}, {"fault", false}, {"after", false}};
  }
  void prepare() override {}
  void compile(const Candidate&) override {}
  std::optional<std::string> verify(const Candidate& c) override {
    if (c.config == "fault") {
      poisoned = true;
      fail(ErrorKind::driver, "an illegal memory access was encountered");
    }
    return std::nullopt;
  }
  double run_ms(const Candidate&, int) override { return 1.0; }
  bool healthy() override { return !poisoned; }
  bool poisoned = false;
};

TEST(TunerDriver, AFaultThatPoisonsTheDeviceStopsTuning) {
  PoisonedJob job;
  TuneOptions o;
  o.timing.min_repeats = 1;
  o.timing.max_repeats = 1;
  try {
    tune(job, o);
    FAIL() << "tuning went on after the device became unusable";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::driver);
    EXPECT_NE(std::string(e.what()).find("candidate fault left the device unusable"),
              std::string::npos)
        << e.what();
  }
}

TEST(TunerDriver, CapKeepsTheFirstCandidatesAndRecordsTheRest) {
  ScriptedJob job;
  TuneOptions o;
  o.max_candidates = 2;
  o.timing.min_repeats = 1;
  o.timing.max_repeats = 1;
  const TuningRecord r = tune(job, o);
  EXPECT_EQ(r.winner, "h");
  EXPECT_EQ(job.compiled.load(), 2);
  EXPECT_EQ(r.candidates.size(), 7u);
}

TEST(TuningKeys, BucketsMapEveryMToOnePowerOfTwo) {
  EXPECT_EQ(m_bucket(1), 64);
  EXPECT_EQ(m_bucket(64), 64);
  EXPECT_EQ(m_bucket(65), 128);
  EXPECT_EQ(m_bucket(8192), 8192);
  EXPECT_EQ(m_bucket(8193), 16384);
  EXPECT_EQ(gemm_problem(GemmOp::fprop, {8000, 4096, 4096}, "bf16"),
            gemm_problem(GemmOp::fprop, {5000, 4096, 4096}, "bf16"));
  EXPECT_NE(gemm_problem(GemmOp::fprop, {8000, 4096, 4096}, "bf16"),
            gemm_problem(GemmOp::dgrad, {8000, 4096, 4096}, "bf16"));
  EXPECT_EQ(gemm_problem(GemmOp::wgrad, {4096, 4096, 8192}, "bf16"),
            "gemm wgrad m<=4096 n=4096 k=8192 out=bf16");
  EXPECT_EQ(quantize_problem(Role::x, 3000, 4096, DType::bf16),
            "quantize x rows<=4096 cols=4096 in=bfloat16");
  EXPECT_EQ(quantize_problem(Role::dy, 3000, 4096, DType::bf16, true),
            "quantize dy+dyt rows<=4096 cols=4096 in=bfloat16");
  EXPECT_NE(quantize_problem(Role::w, 4096, 4096, DType::bf16, true),
            quantize_problem(Role::w, 4096, 4096, DType::bf16));
}

TEST(TunerWorkload, Llama7bHasEveryLinearLayersGemmsAndQuantizations) {
  Workload w;
  for (const LinearLayer& l : model_layers("llama-7b")) w.add_layer(8192, l.in, l.out);
  EXPECT_EQ(w.gemms.size(), 9u);  // 3 distinct layer shapes x fprop, dgrad, wgrad
  const auto has = [&](GemmOp op, GemmShape s) {
    return std::any_of(w.gemms.begin(), w.gemms.end(),
                       [&](const GemmProblem& g) { return g.op == op && g.shape == s; });
  };
  EXPECT_TRUE(has(GemmOp::fprop, {8192, 11008, 4096}));  // gate / up
  EXPECT_TRUE(has(GemmOp::dgrad, {8192, 11008, 4096}));  // down: dX [tokens, 11008], K = 4096
  EXPECT_TRUE(has(GemmOp::wgrad, {4096, 11008, 8192}));  // down: dW [4096, 11008], K = tokens
  EXPECT_GE(w.quantizes.size(), 12u);
  // The pairs a training step runs, once per distinct source shape: x and dy of the three layer
  // shapes' activations and gradients, w of each weight shape.
  const auto pairs = [&](Role r) {
    return std::count_if(w.quantizes.begin(), w.quantizes.end(),
                         [&](const QuantizeProblem& q) { return q.pair && q.role == r; });
  };
  EXPECT_EQ(pairs(Role::x), 2);   // [8192, 4096] and [8192, 11008]
  EXPECT_EQ(pairs(Role::w), 3);   // [4096, 4096], [11008, 4096], [4096, 11008]
  EXPECT_EQ(pairs(Role::dy), 2);  // [8192, 4096] and [8192, 11008]
  EXPECT_EQ(pairs(Role::xt), 0);
  try {
    model_layers("gpt-9");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown model 'gpt-9'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("llama-7b"), std::string::npos);
  }
}

TEST(TunerWorkload, ShapesFileLinesAndErrors) {
  const auto dir =
      std::filesystem::temp_directory_path() / fmt::format("fp4jit-shapes-{}", getpid());
  std::filesystem::create_directories(dir);
  const std::string good = (dir / "good.txt").string(), bad = (dir / "bad.txt").string();
  std::ofstream(good) << "# shapes\n8192x4096x4096\n\n  fprop:128x256x512  # one GEMM\n";
  std::ofstream(bad) << "8192x4096x4096\nfprop:12x4096\n";
  const std::vector<GemmRequest> r = read_shapes_file(good);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].layer);
  EXPECT_FALSE(r[1].layer);
  EXPECT_EQ(r[1].shape, (GemmShape{128, 256, 512}));
  try {
    read_shapes_file(bad);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_shapes_file((dir / "missing.txt").string()), Error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fp4jit::tuner
