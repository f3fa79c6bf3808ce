// The tuner's CUDA candidate spaces without a GPU: GEMM candidates pruned before compiling, the
// small-M kernels' split-K and stream-K candidates, quantize configs that validate, round-trip
// and reach the plan the runtime launches.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.hpp"

#if defined(FP4JIT_HAVE_CUDA)
#include "runtime/cuda/gemm_plan.hpp"
#include "tuner/cuda_space.hpp"

namespace fp4jit::tuner {
namespace {

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

}  // namespace
}  // namespace fp4jit::tuner
#endif
