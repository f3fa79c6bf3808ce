// Compile-only checks of the swapped small-M sm90 GEMM (templates/gemm/sm90/swap.cuh), no GPU
// needed: the heuristic's choice for few rows of the mx and nv paths, its text, kernels, plan and
// the fields it rejects by name. (Its kernels compile in gemm_compile_test.cpp's spread.)
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <initializer_list>
#include <tuple>
#include <utility>
#include <vector>

#include "codegen/gemm.hpp"
#include "runtime/cuda/gemm_plan.hpp"

namespace fp4jit {
namespace {

using codegen::KernelSource;

// For every op of the presets and each (rows, tile of A's rows): the heuristic takes the swapped
// kernel with that tile, its text round-trips through the tuner's parser with the same grid, the
// kernel stub is swap.cuh's and A's expansion writes the fragment order; `check` sees the kernels
// (path-specific checks). One row past swap_max_rows goes elsewhere.
template <class Check>
void swapped_choices(std::initializer_list<const char*> presets,
                     std::initializer_list<std::pair<int, int>> rows_and_tiles,
                     const Check& check) {
  for (const char* preset : presets) {
    const Recipe r = parse_recipe(preset);
    for (const auto& op : gemm_op_names()) {
      const codegen::GemmSpec spec =
          codegen::gemm_spec(r, op.value, 4096, 4096, DType::bf16, "sm_90a");
      for (const auto& [m, bt] : rows_and_tiles) {
        const codegen::GemmChoice c = codegen::choose_gemm(spec, m, 132, "sm_90a");
        ASSERT_TRUE(c.sm90.swap) << preset << " " << m;
        EXPECT_EQ(c.sm90.block_n, bt) << preset << " " << m;
        EXPECT_NO_THROW(c.sm90.validate(spec));
        const std::string text = cuda::gemm_choice_text(c, "sm_90a");
        EXPECT_EQ(text.rfind("sw=1,", 0), 0u) << text;
        const codegen::GemmChoice back = cuda::parse_gemm_choice(text, spec, m, 132, "sm_90a");
        EXPECT_EQ(cuda::gemm_choice_text(back, "sm_90a"), text);
        EXPECT_EQ(back.grid, c.grid) << text;
        const std::vector<KernelSource> ks = codegen::gemm_kernels(spec, c, m, 132, "sm_90a");
        ASSERT_GE(ks.size(), 2u);
        EXPECT_NE(ks[0].source().find("#include \"gemm/sm90/swap.cuh\""), std::string::npos);
        EXPECT_NE(ks[1].source().find("kFragOrder = true;"), std::string::npos) << ks[1].source();
        check(spec, ks);
      }
      const std::int64_t last = codegen::swap_max_rows(spec.path);
      EXPECT_TRUE(codegen::choose_gemm(spec, last, 132, "sm_90a").sm90.swap) << preset;
      EXPECT_FALSE(codegen::choose_gemm(spec, last + 1, 132, "sm_90a").sm90.swap) << preset;
    }
  }
}

// The tuner's parser refuses `text` for 128 rows of `spec` with an error naming `what`.
void rejects(const std::string& text, const codegen::GemmSpec& spec, const std::string& what) {
  try {
    cuda::parse_gemm_choice(text, spec, 128, 132, "sm_90a");
    ADD_FAILURE() << text << " accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(GemmStubs, SwappedKernelForFewRowsOfMx) {
  // Below kStagedMinRows: 64-row tiles of A up to 64 rows, else 128, except where 128-row tiles
  // would fill less than half of the SMs (N = 4096: 32 tiles) up to 128 rows. A's expansion in
  // fragment order and the fused fallback come with it.
  swapped_choices({"mxfp4", "tetrajet"},
                  {{1, 64}, {64, 64}, {65, 64}, {128, 64}, {129, 128}, {256, 128}, {511, 128}},
                  [](const codegen::GemmSpec&, const std::vector<KernelSource>& ks) {
                    ASSERT_EQ(ks.size(), 3u);
                    EXPECT_NE(ks[1].key_text.find("operand=a;"), std::string::npos)
                        << ks[1].key_text;
                    EXPECT_EQ(ks[2].source().find("swap"), std::string::npos) << ks[2].source();
                  });
  // 128 rows x 4096 columns: 64 tiles of 64 x 128, split-K 2 fills the SMs (128 CTAs); 11008
  // columns: 86 tiles of 128 x 128 fill over half of them, no split.
  const codegen::GemmSpec mx =
      codegen::gemm_spec(parse_recipe("mxfp4"), GemmOp::fprop, 4096, 4096, DType::bf16, "sm_90a");
  const codegen::GemmChoice c = codegen::choose_gemm(mx, 128, 132, "sm_90a");
  EXPECT_EQ(c.sm90.block_n, 64);
  EXPECT_EQ(c.splits, 2);
  EXPECT_EQ(c.grid, 128);
  const codegen::GemmChoice wide = codegen::choose_gemm(
      codegen::gemm_spec(parse_recipe("mxfp4"), GemmOp::fprop, 11008, 4096, DType::bf16, "sm_90a"),
      128, 132, "sm_90a");
  EXPECT_EQ(wide.sm90.block_n, 128);
  EXPECT_EQ(wide.splits, 1);
  EXPECT_EQ(wide.grid, 86);
  // Other paths cannot take it; its fields are checked by name.
  const codegen::GemmSpec ms =
      codegen::gemm_spec(parse_recipe("msfp4"), GemmOp::fprop, 4096, 4096, DType::bf16, "sm_90a");
  rejects("sw=1,bn=128,ps=7,rg=8m,pp=1,sk=1", ms, "mx and nv operands only");
  rejects("sw=1,bn=192,ps=4,rg=8m,pp=4,sk=1", mx, "bn (rows of A per tile) must be 64 or 128");
  rejects("sw=1,bn=128,ps=4,rg=8m,pp=8,sk=1", mx, "must be 1, 2 or 4");
  rejects("sw=1,bn=128,ps=16,rg=8m,pp=4,sk=1", mx, "exceed 227 KB");
  rejects("sw=1,sg=1,bn=128,ps=4,rg=8m,pp=4,sk=1", mx, "takes no sg or cm");
  rejects("sw=1,bn=128,ps=4,rg=8m,pp=4,sk=9", mx, "split-K 9 must lie in 1..8");
  // The plan: A expanded (128-byte rows, 128-byte swizzle, a tile of A's rows per box), B packed
  // (64-byte rows, 64-byte swizzle, 128 rows), A's factors only, no expansion of B.
  const cuda::GemmPlan plan = cuda::plan_gemm(parse_recipe("mxfp4"), GemmOp::fprop,
                                              {100, 4096, 4096}, DType::bf16, {"sm_90a", 132});
  EXPECT_TRUE(plan.swap && plan.staged);
  EXPECT_EQ(plan.block_m, 64);  // 100 rows, 32 tiles of 128: tiles of 64 rows of A
  EXPECT_EQ(plan.block_n, 128);
  EXPECT_EQ(plan.a_box_bytes, 128);
  EXPECT_EQ(plan.a_box_rows, 64);
  EXPECT_EQ(plan.a_swizzle, 128);
  EXPECT_EQ(plan.b_box_bytes, 64);
  EXPECT_EQ(plan.b_box_rows, 128);
  EXPECT_EQ(plan.b_swizzle, 64);
  EXPECT_EQ(plan.a_row_bytes, 4096);
  EXPECT_EQ(plan.b_row_bytes, 2048);
  EXPECT_GT(plan.a_factor_ld, 0);
  EXPECT_EQ(plan.b_factor_ld, 0);
  EXPECT_EQ(plan.tiles, 64);
  EXPECT_EQ(plan.choice.splits, 2);
  EXPECT_TRUE(plan.choice.sm90.cluster_split);
  EXPECT_EQ(plan.workspace_floats, 0);  // the splits sum in their cluster's shared memory
  EXPECT_EQ(plan.kernels().size(), 3u);
  ASSERT_EQ(plan.fallback.size(), 1u);
  EXPECT_FALSE(plan.fallback.front().swap);
  // The fallback runs unsplit (no tile counters to clear per call), one CTA per 128 x 128 tile.
  EXPECT_EQ(plan.fallback.front().choice.splits, 1);
  EXPECT_EQ(plan.fallback.front().workspace_floats, 0);
  EXPECT_EQ(plan.fallback.front().choice.grid, 32);
}

TEST(GemmStubs, StagedMxTakesBsFactorsPerRowOverAllOfK) {
  // The staged mx kernel applies B's factors in the epilogue: its expansion (both operands in one
  // launch) takes B's reference over whole rows (one warp each, one factor per row), A's per
  // segment, both with the range check; the plan's B factors are one segment of N.
  for (const char* preset : {"mxfp4", "tetrajet"}) {
    const cuda::GemmPlan plan = cuda::plan_gemm(parse_recipe(preset), GemmOp::fprop,
                                                {8192, 4096, 4096}, DType::bf16, {"sm_90a", 132});
    ASSERT_TRUE(plan.staged && !plan.swap) << preset;
    EXPECT_TRUE(plan.b_whole_row);
    EXPECT_EQ(plan.factor_rows, 8);  // 4096 / (4 K tiles of 128)
    EXPECT_EQ(plan.b_factor_rows(), 1);
    EXPECT_GT(plan.a_factor_ld, 0);
    EXPECT_GT(plan.b_factor_ld, 0);
    ASSERT_EQ(plan.expand.size(), 1u);
    const std::string src = plan.expand[0].source();
    const std::string split = "kSplitFactors = true;";
    const auto first = src.find(split);
    ASSERT_NE(first, std::string::npos) << src;
    EXPECT_NE(src.find(split, first + 1), std::string::npos) << "A's and B's configs: " << src;
    EXPECT_NE(plan.expand[0].key_text.find("split_factors"), std::string::npos);
  }
  // Other staged paths keep their factors per segment (ms_grad) or have none (nv).
  const cuda::GemmPlan nv = cuda::plan_gemm(parse_recipe("nvfp4"), GemmOp::fprop,
                                            {8192, 4096, 4096}, DType::bf16, {"sm_90a", 132});
  ASSERT_TRUE(nv.staged && !nv.swap);
  EXPECT_FALSE(nv.b_whole_row);
  EXPECT_EQ(nv.b_factor_ld, 0);
  const cuda::GemmPlan ms = cuda::plan_gemm(parse_recipe("msfp4"), GemmOp::wgrad,
                                            {4096, 4096, 8192}, DType::bf16, {"sm_90a", 132});
  ASSERT_TRUE(ms.staged && !ms.swap);  // msfp4's gradients: the ms_grad path
  EXPECT_GT(ms.b_factor_ld, 0);
  EXPECT_FALSE(ms.b_whole_row);
  EXPECT_EQ(ms.b_factor_rows(), ms.factor_rows);
  // The swapped kernel's expansion of A keeps the product of both factors at promotion.
  const cuda::GemmPlan sw = cuda::plan_gemm(parse_recipe("mxfp4"), GemmOp::fprop, {100, 4096, 4096},
                                            DType::bf16, {"sm_90a", 132});
  ASSERT_TRUE(sw.swap);
  EXPECT_FALSE(sw.b_whole_row);
  EXPECT_NE(sw.expand.at(0).source().find("kSplitFactors = false;"), std::string::npos);
}

TEST(GemmStubs, SwappedKernelForFewRowsOfNv) {
  // As mx: tiles of 64 rows of A up to 64 rows, and up to 128 where 128-row tiles would fill
  // less than half of the SMs, else 128, up to 1024 rows; the kernel with the scale code and B's
  // block rows, A's expansion with period 1 (its segments matter to mx only), no fallback.
  swapped_choices(
      {"nvfp4", "ue5m3"},
      {{1, 64}, {64, 64}, {65, 64}, {128, 64}, {129, 128}, {256, 128}, {511, 128}, {1024, 128}},
      [](const codegen::GemmSpec& spec, const std::vector<KernelSource>& ks) {
        ASSERT_EQ(ks.size(), 2u);
        EXPECT_NE(ks[0].source().find("kKind = g::ScaleKind::nv;"), std::string::npos);
        EXPECT_NE(ks[0].source().find(fmt::format("kBBlockRows = {};", spec.b_block_rows)),
                  std::string::npos);
        EXPECT_NE(ks[1].source().find("kPeriod = 1;"), std::string::npos) << ks[1].source();
      });
  const Recipe nvfp4 = parse_recipe("nvfp4");
  const codegen::GemmSpec nv =
      codegen::gemm_spec(nvfp4, GemmOp::fprop, 4096, 4096, DType::bf16, "sm_90a");
  // 128 x 4096: 64 tiles of 64 x 128, K split in 2 (128 CTAs); split units are segments of 4 K
  // tiles of 128 elements (8 at K = 4096), not of the other nv kernels' 64. 64 rows: 32 tiles,
  // split in 4.
  const codegen::GemmChoice c = codegen::choose_gemm(nv, 128, 132, "sm_90a");
  EXPECT_EQ(c.sm90.block_n, 64);
  EXPECT_EQ(c.splits, 2);
  EXPECT_EQ(c.grid, 128);
  EXPECT_EQ(cuda::sm90_split_units(nv, c.sm90), 8);
  const codegen::GemmChoice c64 = codegen::choose_gemm(nv, 64, 132, "sm_90a");
  EXPECT_EQ(c64.sm90.block_n, 64);
  EXPECT_EQ(c64.splits, 4);
  EXPECT_EQ(c64.grid, 128);
  EXPECT_NO_THROW(
      cuda::parse_gemm_choice("sw=1,bn=128,ps=4,rg=8m,pp=4,sk=8", nv, 128, 132, "sm_90a"));
  EXPECT_THROW(cuda::parse_gemm_choice("sw=1,bn=128,ps=4,rg=8m,pp=4,sk=9", nv, 128, 132, "sm_90a"),
               Error);
  // 16-bit elements of A: at most 4 stages of 128-row tiles fit, 6 of 64-row ones.
  EXPECT_EQ(codegen::default_sm90_swap_config(nv, 128).packed_stages, 4);
  EXPECT_EQ(codegen::default_sm90_swap_config(nv, 64).packed_stages, 6);
  EXPECT_THROW(cuda::parse_gemm_choice("sw=1,bn=128,ps=5,rg=8m,pp=4,sk=1", nv, 128, 132, "sm_90a"),
               Error);
  // The plan: A expanded to 16 bits (8192-byte rows, two 128-byte boxes per K tile), B packed
  // (64-byte rows, 64-byte swizzle), no factors, no fallback, no flag.
  const cuda::GemmPlan plan =
      cuda::plan_gemm(nvfp4, GemmOp::fprop, {200, 4096, 4096}, DType::bf16, {"sm_90a", 132});
  EXPECT_TRUE(plan.swap && plan.staged);
  EXPECT_EQ(plan.block_m, 128);
  EXPECT_EQ(plan.a_box_bytes, 128);
  EXPECT_EQ(plan.a_box_rows, 128);
  EXPECT_EQ(plan.a_swizzle, 128);
  EXPECT_EQ(plan.b_box_bytes, 64);
  EXPECT_EQ(plan.b_swizzle, 64);
  EXPECT_EQ(plan.a_row_bytes, 8192);
  EXPECT_EQ(plan.a_code_row_bytes, 2048);
  EXPECT_EQ(plan.a_factor_ld, 0);
  EXPECT_EQ(plan.b_factor_ld, 0);
  EXPECT_TRUE(plan.fallback.empty());
  EXPECT_EQ(plan.kernels().size(), 2u);
}

TEST(GemmStubs, SwappedKernelSplitsKInClusters) {
  const Recipe nvfp4 = parse_recipe("nvfp4");
  const codegen::GemmSpec nv =
      codegen::gemm_spec(nvfp4, GemmOp::fprop, 4096, 4096, DType::bf16, "sm_90a");
  // The heuristic's two splits run as clusters of two, one CTA per split: 64 tiles x 2 splits at
  // 128 x 4096; its four at 64 rows (32 tiles) stay global (clusters of 4 may not all fit).
  const codegen::GemmChoice c = codegen::choose_gemm(nv, 128, 132, "sm_90a");
  ASSERT_TRUE(c.sm90.swap);
  EXPECT_TRUE(c.sm90.cluster_split);
  EXPECT_EQ(c.splits, 2);
  EXPECT_EQ(c.grid, 128);
  EXPECT_FALSE(codegen::choose_gemm(nv, 64, 132, "sm_90a").sm90.cluster_split);
  const std::string text = cuda::gemm_choice_text(c, "sm_90a");
  EXPECT_EQ(text, "sw=1,bn=64,ps=6,rg=8m,pp=4,cs=1,sk=2");
  EXPECT_EQ(cuda::gemm_choice_text(cuda::parse_gemm_choice(text, nv, 128, 132, "sm_90a"), "sm_90a"),
            text);
  const std::vector<KernelSource> ks = codegen::gemm_kernels(nv, c, 128, 132, "sm_90a");
  EXPECT_NE(ks[0].source().find("kSplitCluster = true;"), std::string::npos) << ks[0].source();
  EXPECT_EQ(
      codegen::gemm_kernels(
          nv, cuda::parse_gemm_choice("sw=1,bn=128,ps=4,rg=8m,pp=4,sk=4", nv, 128, 132, "sm_90a"),
          128, 132, "sm_90a")[0]
          .source()
          .find("kSplitCluster = true;"),
      std::string::npos);
  // Its plan: no workspace of partial sums (so no counters to clear).
  const cuda::GemmPlan plan =
      cuda::plan_gemm(nvfp4, GemmOp::fprop, {128, 4096, 4096}, DType::bf16, {"sm_90a", 132});
  EXPECT_TRUE(plan.choice.sm90.cluster_split);
  EXPECT_EQ(plan.workspace_floats, 0);
  const cuda::GemmPlan global = [&] {
    const codegen::GemmChoice g =
        cuda::parse_gemm_choice("sw=1,bn=128,ps=4,rg=8m,pp=4,sk=4", nv, 128, 132, "sm_90a");
    return cuda::plan_gemm(nvfp4, GemmOp::fprop, {128, 4096, 4096}, DType::bf16, {"sm_90a", 132},
                           &g);
  }();
  EXPECT_EQ(global.workspace_floats, 32 * 4 * 128 * 128);
  // Up to 8 splits as a choice (the tuner's): clusters of 8 on 8 tiles.
  const codegen::GemmChoice eight = cuda::parse_gemm_choice(
      "sw=1,bn=128,ps=4,rg=8m,pp=4,cs=1,sk=8",
      codegen::gemm_spec(nvfp4, GemmOp::fprop, 1024, 8192, DType::bf16, "sm_90a"), 128, 132,
      "sm_90a");
  EXPECT_EQ(eight.grid, 64);
  // Whole clusters, at most one per tile: 256 tiles of 64 rows of A x 2 splits on 132 SMs.
  const codegen::GemmChoice many = cuda::parse_gemm_choice(
      "sw=1,bn=64,ps=6,rg=8n,pp=1,cs=1,sk=2",
      codegen::gemm_spec(nvfp4, GemmOp::fprop, 8192, 1024, DType::bf16, "sm_90a"), 256, 132,
      "sm_90a");
  EXPECT_EQ(many.grid, 132);
  EXPECT_EQ(codegen::sm90_swap_grid(3, 8, true, 132), 24);
  EXPECT_EQ(codegen::sm90_swap_grid(40, 4, true, 130), 128);
  EXPECT_EQ(codegen::sm90_swap_grid(40, 4, false, 130), 130);
  // Many splits (8 tiles at 64 x 1024) stay on the global hand-off.
  const codegen::GemmChoice narrow = codegen::choose_gemm(
      codegen::gemm_spec(nvfp4, GemmOp::fprop, 1024, 8192, DType::bf16, "sm_90a"), 64, 132,
      "sm_90a");
  EXPECT_EQ(narrow.splits, 16);
  EXPECT_FALSE(narrow.sm90.cluster_split);
  // Rejected by name: one split, more than a cluster's 8, outside the swapped kernel.
  const codegen::GemmSpec deep =
      codegen::gemm_spec(nvfp4, GemmOp::fprop, 4096, 16384, DType::bf16, "sm_90a");
  rejects("sw=1,bn=128,ps=4,rg=8m,pp=4,cs=1,sk=1", nv, "takes 2..8 splits");
  rejects("sw=1,bn=128,ps=4,rg=8m,pp=1,cs=1,sk=12", deep, "takes 2..8 splits");
  rejects("sg=1,bn=256,ps=4,rg=8m,cs=1,sk=1", nv,
          "applies to the swapped (sw=1) and direct (dk=1) kernels only");
}

TEST(GemmStubs, SwappedKernelStreamK) {
  const Recipe mxfp4 = parse_recipe("mxfp4");
  const codegen::GemmSpec mx =
      codegen::gemm_spec(mxfp4, GemmOp::fprop, 13824, 5120, DType::bf16, "sm_90a");
  // 128 x 13824 x 5120: 108 tiles of 20 segments (2 K tiles each) on 132 SMs, runs of 16-17
  // segments: a CTA per SM, a tile cut into at most 3 pieces (the workspace's slots per tile);
  // any sk given is replaced by that.
  const codegen::GemmChoice c =
      cuda::parse_gemm_choice("sw=1,bn=128,ps=6,rg=8m,pp=2,ks=1,sk=5", mx, 128, 132, "sm_90a");
  EXPECT_TRUE(c.sm90.stream_k);
  EXPECT_EQ(c.grid, 132);
  EXPECT_EQ(c.splits, 3);
  EXPECT_EQ(c.splits, codegen::sm90_stream_k(108, 20, 132).splits);
  const std::string text = cuda::gemm_choice_text(c, "sm_90a");
  EXPECT_EQ(text, "sw=1,bn=128,ps=6,rg=8m,pp=2,ks=1,sk=3");
  EXPECT_EQ(cuda::gemm_choice_text(cuda::parse_gemm_choice(text, mx, 128, 132, "sm_90a"), "sm_90a"),
            text);
  const std::vector<KernelSource> ks = codegen::gemm_kernels(mx, c, 128, 132, "sm_90a");
  EXPECT_NE(ks[0].source().find("kStreamK = true;"), std::string::npos) << ks[0].source();
  EXPECT_EQ(
      codegen::gemm_kernels(mx, codegen::choose_gemm(mx, 128, 132, "sm_90a"), 128, 132, "sm_90a")[0]
          .source()
          .find("kStreamK = true;"),
      std::string::npos);
  // The plan: a workspace slot per piece of every tile, and its tile counters.
  const cuda::GemmPlan plan =
      cuda::plan_gemm(mxfp4, GemmOp::fprop, {128, 13824, 5120}, DType::bf16, {"sm_90a", 132}, &c);
  EXPECT_EQ(plan.tiles, 108);
  EXPECT_EQ(plan.workspace_floats, 108 * 3 * 128 * 128);
  // Fewer segments than SMs: one CTA per segment (128 x 256 x 512, 2 tiles of 2 segments).
  const codegen::GemmSpec small =
      codegen::gemm_spec(mxfp4, GemmOp::fprop, 256, 512, DType::bf16, "sm_90a");
  const codegen::GemmChoice few =
      cuda::parse_gemm_choice("sw=1,bn=128,ps=6,rg=8m,pp=2,ks=1", small, 128, 132, "sm_90a");
  EXPECT_EQ(few.grid, 4);
  EXPECT_EQ(few.splits, 2);
  rejects("sw=1,bn=128,ps=6,rg=8m,pp=2,cs=1,ks=1,sk=2", mx,
          "ks (stream-K) applies to the swapped kernel (sw=1) without split-K in clusters");
  rejects("sg=1,bn=192,ps=4,rg=8m,pp=4,ks=1,sk=1", mx, "ks (stream-K) applies to the swapped");
}

TEST(GemmStubs, DirectKernelForFewRowsOfMx) {
  // Its choice: tiles of 64 rows of A up to 128 rows where 128-row tiles would fill less than
  // half of the SMs (N = 4096: 32 tiles), else 128; split-K over segments to fill the SMs once
  // (64 tiles x 2 splits in clusters; 32 tiles x 4 splits through the workspace), unsplit where
  // the tiles fill half of them; the text round-trips with the same grid; one kernel, no
  // expansion, no fallback.
  const Recipe mxfp4 = parse_recipe("mxfp4");
  const codegen::GemmSpec mx =
      codegen::gemm_spec(mxfp4, GemmOp::fprop, 4096, 4096, DType::bf16, "sm_90a");
  for (const auto& [m, bt, splits, cluster, grid] :
       {std::tuple{128, 64, 2, true, 128}, std::tuple{1, 64, 4, false, 128},
        std::tuple{129, 128, 2, true, 128}, std::tuple{256, 128, 2, true, 128},
        std::tuple{512, 128, 1, false, 128}}) {
    const codegen::GemmChoice c = codegen::choose_sm90_direct(mx, m, 132);
    EXPECT_TRUE(c.sm90.direct);
    EXPECT_EQ(c.sm90.block_n, bt) << m;
    EXPECT_EQ(c.splits, splits) << m;
    EXPECT_EQ(c.sm90.cluster_split, cluster) << m;
    EXPECT_EQ(c.grid, grid) << m;
    const std::string text = cuda::gemm_choice_text(c, "sm_90a");
    EXPECT_EQ(text.rfind("dk=1,", 0), 0u) << text;
    const codegen::GemmChoice back = cuda::parse_gemm_choice(text, mx, m, 132, "sm_90a");
    EXPECT_EQ(cuda::gemm_choice_text(back, "sm_90a"), text);
    EXPECT_EQ(back.grid, c.grid) << text;
    const std::vector<KernelSource> ks = codegen::gemm_kernels(mx, c, m, 132, "sm_90a");
    ASSERT_EQ(ks.size(), 1u) << text;
    EXPECT_NE(ks[0].source().find("#include \"gemm/sm90/direct.cuh\""), std::string::npos);
    EXPECT_NE(ks[0].source().find("gemm_direct_kernel<"), std::string::npos) << ks[0].source();
  }
  // The plan: no tensor maps' boxes, no expansion or fallback, the workspace of 4 splits of 32
  // tiles of 64 x 128 (the clusters' none).
  const codegen::GemmChoice c = codegen::choose_sm90_direct(mx, 64, 132);
  const cuda::GemmPlan plan =
      cuda::plan_gemm(mxfp4, GemmOp::fprop, {64, 4096, 4096}, DType::bf16, {"sm_90a", 132}, &c);
  EXPECT_TRUE(plan.direct);
  EXPECT_FALSE(plan.staged || plan.swap);
  EXPECT_TRUE(plan.expand.empty());
  EXPECT_TRUE(plan.fallback.empty());
  EXPECT_EQ(plan.threads, 384);
  EXPECT_EQ(plan.block_m, 64);
  EXPECT_EQ(plan.tiles, 32);
  EXPECT_EQ(plan.workspace_floats, 32 * 4 * 64 * 128);
  EXPECT_EQ(plan.launch_cluster(), 1);
  const codegen::GemmChoice c2 = codegen::choose_sm90_direct(mx, 256, 132);
  const cuda::GemmPlan plan2 =
      cuda::plan_gemm(mxfp4, GemmOp::fprop, {256, 4096, 4096}, DType::bf16, {"sm_90a", 132}, &c2);
  EXPECT_EQ(plan2.block_m, 128);
  EXPECT_EQ(plan2.workspace_floats, 0);
  EXPECT_EQ(plan2.launch_cluster(), 2);
  // Other paths, tiles and out-of-range fields are refused by name.
  const codegen::GemmSpec nv =
      codegen::gemm_spec(parse_recipe("nvfp4"), GemmOp::fprop, 4096, 4096, DType::bf16, "sm_90a");
  rejects("dk=1,ps=4,es=8,rg=8m,pp=2,sk=1", nv, "mx operands only");
  rejects("dk=1,bn=192,ps=4,es=8,rg=8m,pp=2,sk=1", mx,
          "bn (rows of A per tile) must be 64 or 128 for the direct kernel");
  rejects("dk=1,ps=9,es=8,rg=8m,pp=2,sk=1", mx, "ps (stages of A) in 2..8");
  rejects("dk=1,ps=4,es=1,rg=8m,pp=2,sk=1", mx, "es (stages of B) in 2..16");
  rejects("dk=1,ps=4,es=8,rg=8m,pp=8,sk=1", mx, "must be 1, 2 or 4 for the direct kernel");
  rejects("dk=1,ps=8,es=16,rg=8m,pp=2,sk=1", mx, "exceed 227 KB");
  rejects("dk=1,sw=1,ps=4,es=8,rg=8m,pp=2,sk=1", mx, "takes no sg, sw or cm");
  rejects("dk=1,ps=4,es=8,rg=8m,pp=2,cs=1,sk=1", mx, "takes 2..8 splits");
}

}  // namespace
}  // namespace fp4jit
