// The tuner's host-side logic (winner selection: tuner_select_test.cpp): timing statistics, the
// driver (failures recorded and never chosen, overlap of compile and measure), M buckets and keys,
// workloads (model presets, shapes files), and the CUDA candidate spaces (pruning, choice texts)
// without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <tuple>

#include "core/error.hpp"
#include "runtime/tuning_keys.hpp"
#include "tuner/tuner.hpp"
#include "tuner/workload.hpp"

#if defined(FP4JIT_HAVE_CUDA)
#include "runtime/cuda/gemm_plan.hpp"
#include "tuner/cuda_space.hpp"
#endif

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

#if defined(FP4JIT_HAVE_CUDA)
TEST(CudaSpace, Sm90GemmCandidatesArePrunedBeforeCompiling) {
  for (const char* preset : {"nvfp4", "mxfp4"}) {
    const Recipe recipe = parse_recipe(preset);
    const codegen::GemmSpec spec =
        codegen::gemm_spec(recipe, GemmOp::fprop, 4096, 4096, DType::bf16, "sm_90a");
    std::vector<CandidateResult> pruned;
    const auto space = cuda_gemm_space(spec, 8192, 132, "sm_90a", &pruned);
    ASSERT_GT(space.size(), 5u) << preset;
    EXPECT_TRUE(space.front().candidate.heuristic);
    const codegen::GemmChoice h = codegen::choose_gemm(spec, 8192, 132, "sm_90a");
    EXPECT_EQ(space.front().candidate.config, cuda::gemm_choice_text(h, "sm_90a"));
    for (const auto& c : space) {
      EXPECT_NO_THROW(c.choice.sm90.validate(spec)) << c.candidate.config;
      EXPECT_EQ(c.choice.splits, 1) << "tiles fill the SMs: no split-K";
      EXPECT_LE(c.choice.grid, 132);
      if (spec.path == codegen::GemmPath::mx) {  // two accumulator sets
        EXPECT_LE(c.choice.sm90.block_n, c.choice.sm90.staged ? 192 : 128) << c.candidate.config;
      }
    }
    // The promoting paths' widest staged tile is searched.
    if (spec.path == codegen::GemmPath::mx) {
      EXPECT_TRUE(std::any_of(space.begin(), space.end(), [](const auto& c) {
        return c.choice.sm90.staged && c.choice.sm90.block_n == 192;
      })) << preset;
    }
    // Clusters of two (staged, one split, an even grid) are searched.
    EXPECT_TRUE(std::any_of(space.begin(), space.end(), [](const auto& c) {
      return c.choice.sm90.staged && c.choice.sm90.cluster_m == 2 && c.choice.splits == 1 &&
             c.choice.grid % 2 == 0;
    })) << preset;
    // Both sm90 kernels are searched.
    const auto staged = std::count_if(space.begin(), space.end(),
                                      [](const auto& c) { return c.choice.sm90.staged; });
    EXPECT_GT(staged, 0) << preset;
    EXPECT_LT(staged, static_cast<std::ptrdiff_t>(space.size())) << preset;
    bool smem = false, split = false;
    for (const auto& p : pruned) {
      EXPECT_EQ(p.status, CandidateStatus::pruned);
      smem = smem || p.reason.find("shared memory") != std::string::npos;
      split = split || p.reason.find("split-K") != std::string::npos;
    }
    EXPECT_TRUE(smem) << preset << ": deeper rings exceed shared memory";
    EXPECT_TRUE(split) << preset;
  }
}

TEST(CudaSpace, SmallMGetsSplitKCandidatesAndChoicesRoundTrip) {
  const Recipe recipe = parse_recipe("nvfp4");
  const codegen::GemmSpec spec =
      codegen::gemm_spec(recipe, GemmOp::wgrad, 4096, 8192, DType::bf16, "sm_90a");
  const auto space = cuda_gemm_space(spec, 256, 132, "sm_90a", nullptr);
  bool any_split = false;
  for (const auto& c : space) {
    any_split = any_split || c.choice.splits > 1;
    const codegen::GemmChoice back =
        cuda::parse_gemm_choice(c.candidate.config, spec, 256, 132, "sm_90a");
    EXPECT_EQ(cuda::gemm_choice_text(back, "sm_90a"), c.candidate.config);
    EXPECT_EQ(back.grid, c.choice.grid);
  }
  EXPECT_TRUE(any_split);
  // Few rows of an mx GEMM: the swapped kernel is the heuristic's and is searched with its tiles
  // and split-K, next to the fused and staged kernels.
  const codegen::GemmSpec mx =
      codegen::gemm_spec(parse_recipe("mxfp4"), GemmOp::fprop, 4096, 4096, DType::bf16, "sm_90a");
  const auto small = cuda_gemm_space(mx, 64, 132, "sm_90a", nullptr);
  EXPECT_TRUE(small.front().choice.sm90.swap);
  std::set<std::pair<int, int>> swaps, clusters;  // (rows of A per tile, splits)
  for (const auto& c : small) {
    EXPECT_NO_THROW(c.choice.sm90.validate(mx)) << c.candidate.config;
    if (c.choice.sm90.swap) swaps.insert({c.choice.sm90.block_n, c.choice.splits});
    if (c.choice.sm90.cluster_split) {
      clusters.insert({c.choice.sm90.block_n, c.choice.splits});
      EXPECT_TRUE(c.choice.splits >= 2 && c.choice.splits <= codegen::kMaxClusterSplits)
          << c.candidate.config;
      EXPECT_EQ(c.choice.grid % c.choice.splits, 0) << c.candidate.config;  // whole clusters
    }
  }
  EXPECT_GE(swaps.size(), 6u);
  EXPECT_TRUE(swaps.count({128, 1}) == 1 && swaps.count({64, 4}) == 1);
  // Stream-K for each tile of A's rows (its splits from the grid's runs).
  std::set<int> streams;
  for (const auto& c : small)
    if (c.choice.sm90.stream_k) {
      streams.insert(c.choice.sm90.block_n);
      EXPECT_EQ(c.choice.grid, 132) << c.candidate.config;
    }
  EXPECT_EQ(streams, (std::set<int>{64, 128}));
  // Split-K in clusters next to the global hand-off: 2, 3, 4, 6 and 8 splits of 64-row tiles.
  for (int splits : {2, 3, 4, 6, 8}) EXPECT_EQ(clusters.count({64, splits}), 1u) << splits;
  EXPECT_TRUE(
      std::any_of(small.begin(), small.end(), [](const auto& c) { return !c.choice.sm90.swap; }));
  // The direct kernel too (mx): unsplit, split-K through the workspace or in clusters, periods 1-2.
  std::set<std::tuple<int, bool, int>> directs;  // (splits, in clusters, period)
  for (const auto& c : small)
    if (c.choice.sm90.direct && c.choice.sm90.period <= 2)
      directs.insert({c.choice.splits, c.choice.sm90.cluster_split, c.choice.sm90.period});
    else
      EXPECT_FALSE(c.choice.sm90.direct) << c.candidate.config;  // a longer period than 2
  for (const auto& d : decltype(directs){{1, false, 2}, {4, false, 2}, {2, true, 2}, {8, true, 1}})
    EXPECT_EQ(directs.count(d), 1u) << std::get<0>(d) << " " << std::get<1>(d);
  EXPECT_TRUE(std::none_of(space.begin(), space.end(),
                           [](const auto& c) { return c.choice.sm90.direct; }));  // nvfp4
  EXPECT_THROW(
      cuda::parse_gemm_choice("bn=128,ps=7,es=4,rg=8m,il=0,sk=999", spec, 256, 132, "sm_90a"),
      Error);
  EXPECT_THROW(cuda::parse_gemm_choice("bn=96,ps=7", spec, 256, 132, "sm_90a"), Error);
  EXPECT_THROW(cuda::parse_gemm_choice("bn=128,zz=1", spec, 256, 132, "sm_90a"), Error);
  const auto b200 =
      cuda_gemm_space(codegen::gemm_spec(recipe, GemmOp::fprop, 4096, 4096, DType::bf16, "sm_100a"),
                      8192, 148, "sm_100a", nullptr);
  EXPECT_GE(b200.size(), 2u);
}

// Expects the space's first candidate (the heuristic's config) under each register cap the SM
// allows among the candidates, and within the 24 a CUDA tune measures by default; returns how
// many caps that is.
template <class Space>
int expect_register_caps(const Space& space) {
  const auto h = space.front().config;
  int caps = 0;
  for (int minb = 1; minb <= 4 && h.threads * minb <= 2048; ++minb, ++caps) {
    auto c = h;
    c.min_blocks = minb;
    const auto it = std::find_if(space.begin(), space.end(),
                                 [&](const auto& s) { return s.candidate.config == c.text(); });
    EXPECT_NE(it, space.end()) << c.text();
    if (it == space.end()) continue;
    EXPECT_EQ(it->config.min_blocks, minb);
    EXPECT_LT(it - space.begin(), 24) << c.text() << " falls past the default candidate count";
  }
  return caps;
}

TEST(CudaSpace, QuantizeCandidatesValidate) {
  const Recipe recipe = parse_recipe("nvfp4");
  std::vector<CandidateResult> pruned;
  const auto rows = cuda_rows_space(recipe[Role::x], DType::bf16, &pruned);
  EXPECT_TRUE(rows.front().candidate.heuristic);
  EXPECT_GE(rows.size(), 12u);
  // The rows kernels' heuristic config under each register cap the SM allows, likewise measured
  // by a default CUDA tune (dy: stochastic rounding, 256 threads by the heuristic: caps 1 to 4).
  for (const Role role : {Role::x, Role::dy}) {
    const auto space = cuda_rows_space(recipe[role], DType::bf16, nullptr);
    ASSERT_EQ(space.front().config.min_blocks, 0) << name(role);
    EXPECT_GE(expect_register_caps(space), 2) << name(role);
  }
  pruned.clear();
  const auto tiles = cuda_tile_space(&recipe[Role::x], &recipe[Role::xt], DType::bf16, &pruned);
  EXPECT_TRUE(tiles.front().candidate.heuristic);
  EXPECT_GE(tiles.size(), 3u);
  EXPECT_FALSE(pruned.empty());  // e.g. 128 x 128 tiles exceed 48 KiB of shared memory
  for (const auto& t : tiles)
    EXPECT_NO_THROW(t.config.validate(&recipe[Role::x], &recipe[Role::xt], DType::bf16));
  // The heuristic's CTA and tile under each register cap the SM allows, among the candidates a
  // CUDA tune measures by default (24, nearest the heuristic first).
  ASSERT_EQ(tiles.front().config.min_blocks, 0);
  EXPECT_GE(expect_register_caps(tiles), 2);
}
TEST(CudaSpace, QuantizeConfigsRoundTripAndReachThePlan) {
  const cuda::QuantizeTuning rows = cuda::parse_quantize_tuning("rows:threads=128,unroll=2");
  ASSERT_TRUE(rows.rows);
  EXPECT_EQ(rows.text(), "rows:threads=128,unroll=2");
  const cuda::QuantizeTuning rows_capped =
      cuda::parse_quantize_tuning("rows:threads=256,unroll=2,minb=3");
  ASSERT_TRUE(rows_capped.rows);
  EXPECT_EQ(rows_capped.rows->min_blocks, 3);
  EXPECT_EQ(rows_capped.text(), "rows:threads=256,unroll=2,minb=3");
  EXPECT_EQ(cuda::parse_quantize_tuning("tile:threads=256,tile=32x64").text(),
            "tile:threads=256,tile=32x64");
  // A register cap the tuner chose comes back with its tuning.
  const cuda::QuantizeTuning capped =
      cuda::parse_quantize_tuning("tile:threads=256,tile=64x128,minb=1");
  ASSERT_TRUE(capped.tile);
  EXPECT_EQ(capped.tile->min_blocks, 1);
  EXPECT_EQ(capped.text(), "tile:threads=256,tile=64x128,minb=1");
  EXPECT_THROW(cuda::parse_quantize_tuning("rows:threads=100,unroll=2"),
               Error);  // not a warp multiple
  EXPECT_THROW(cuda::parse_quantize_tuning("grid:threads=128"), Error);
  EXPECT_THROW(cuda::parse_quantize_tuning("rows:threads=128"), Error);

  const Recipe recipe = parse_recipe("nvfp4");
  cuda::DeviceInfo d;
  d.rows_config = &*rows.rows;
  bool applied = false;
  for (const auto& [op, config] : cuda_quantize_kernels(recipe, Role::x, 256, 512, DType::bf16, d))
    applied = applied || (op == "quantize_rows" && config == "threads=128,unroll=2");
  EXPECT_TRUE(applied) << "a tuned rows config reaches the plan";
  // So does a tile config with a register cap (the transposed operand's kernel).
  cuda::DeviceInfo dc;
  dc.tile_config = &*capped.tile;
  applied = false;
  for (const auto& [op, config] :
       cuda_quantize_kernels(recipe, Role::xt, 256, 512, DType::bf16, dc))
    applied = applied || (op == "quantize_tile" && config == "threads=256,tile=64x128,minb=1");
  EXPECT_TRUE(applied) << "a tuned tile config with minb= reaches the plan";
  // A tile config the operand's kernel cannot take is set aside for the heuristic's.
  const codegen::TileConfig bad{1024, 8, 8};
  cuda::DeviceInfo e;
  e.tile_config = &bad;
  for (const auto& [op, config] : cuda_quantize_kernels(recipe, Role::xt, 256, 512, DType::bf16, e))
    EXPECT_NE(config, bad.text());
}

// A pair's space: configs of the quantize_tile kernel that reads the source once for both copies,
// the heuristic's first; each reaches the pair's plan.
TEST(CudaSpace, PairSpacesTuneTheFusedTileKernel) {
  for (const char* preset : {"mxfp4", "nvfp4", "tetrajet"}) {
    const Recipe recipe = parse_recipe(preset);
    for (Role role : {Role::x, Role::w, Role::dy}) {
      std::vector<CandidateResult> pruned;
      const auto space = cuda_quantize_space(recipe, role, 1024, 2048, DType::bf16,
                                             cuda::DeviceInfo{}, &pruned, true);
      ASSERT_GE(space.size(), 3u) << preset << " " << name(role);
      EXPECT_TRUE(space.front().candidate.heuristic);
      for (const auto& c : space) {
        ASSERT_TRUE(c.config.tile) << c.candidate.config;
        c.config.tile->validate(&recipe[role], &recipe[transposed_copy(role)], DType::bf16);
        cuda::DeviceInfo d;
        d.tile_config = &*c.config.tile;
        int both = 0;
        for (const auto& k : cuda_quantize_plan(recipe, role, 1024, 2048, DType::bf16, d, true))
          if (k.op == "quantize_tile" && k.key_text.find("mode=both") != std::string::npos) {
            ++both;
            EXPECT_NE(k.key_text.find("config=" + c.config.tile->text() + ";"), std::string::npos)
                << k.key_text;
          }
        EXPECT_GE(both, 1) << preset << " " << name(role) << " " << c.candidate.config;
      }
    }
  }
  // The heuristic's pair kernel is the plan's for the size (mxfp4: 512 threads from 2^27
  // elements).
  const Recipe mx = parse_recipe("mxfp4");
  const auto first = [&](std::int64_t rows) {
    return cuda_quantize_space(mx, Role::x, rows, 8192, DType::bf16, cuda::DeviceInfo{}, nullptr,
                               true)
        .front()
        .candidate.config;
  };
  EXPECT_EQ(first(16384), "tile:threads=512,tile=64x128");
  EXPECT_EQ(first(8192), "tile:threads=256,tile=64x128");
}

TEST(CudaSpace, QuantizeSpacesFollowTheKernelThePlanLaunches) {
  for (const char* preset : {"nvfp4", "mxfp4"}) {
    const Recipe recipe = parse_recipe(preset);
    for (Role role : {Role::x, Role::xt, Role::w, Role::wt}) {
      std::vector<CandidateResult> pruned;
      const auto space =
          cuda_quantize_space(recipe, role, 512, 1024, DType::bf16, cuda::DeviceInfo{}, &pruned);
      ASSERT_GE(space.size(), 3u) << preset << " " << name(role);
      EXPECT_TRUE(space.front().candidate.heuristic);
      const std::string kind = space.front().candidate.config.substr(0, 5);
      for (const auto& c : space)
        EXPECT_EQ(c.candidate.config.substr(0, 5), kind) << "one kernel kind per operand";
      if (role_info(role).transposed) {
        EXPECT_EQ(kind, "tile:");
      }
    }
  }
}
#endif

}  // namespace
}  // namespace fp4jit::tuner
