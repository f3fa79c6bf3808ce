// Compile-only checks of the GEMM kernels, no GPU needed: for every preset and target, each of its
// three GEMMs through the real runtime compiler over a spread of configs (tile widths, ring depths,
// raster order, output types; sm_100a: pipeline depths), the OCC compensation kernels, the stubs'
// shape and keys, and the combinations the CUDA backend refuses with Error(unsupported).
// Where a cuobjdump is found (scripts/setup.sh installs NVIDIA's from PyPI), the SASS of one kernel
// per family (op, path, target, which sm90 kernel) is read back: sm_90a GEMMs on FP8 operands issue
// QGMMA and no other matrix instruction, those on 16-bit operands HGMMA, sm_100a's the
// block-scaled UTCOMMA, expansions none.
// sm_100a kernels are compiled and their SASS read here; they have NOT been run on hardware.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

#include "cache/cache.hpp"
#include "codegen/gemm.hpp"
#include "gemm/sm90/staged_geometry.cuh"
#include "runtime/compile.hpp"
#include "runtime/cuda/gemm_plan.hpp"
#include "runtime/cuda/kernel_binary.hpp"
#include "runtime/cuda/nvrtc.hpp"
#include "tests/nvrtc/gemm_spread.hpp"
#include "tests/nvrtc/sass.hpp"
#include "tests/temp_dir_test.hpp"

namespace fp4jit {
namespace {

using codegen::GemmPath;
using codegen::KernelSource;
using test_util::preset_kernels;
using test_util::PresetKernels;

struct Target {
  std::string preset;
  std::string arch;
};

// A folder of its own per test: the kernel cache whose binaries the SASS checks read back.
class GemmCompiles : public test_util::TempDirTest, public testing::WithParamInterface<Target> {
 protected:
  GemmCompiles() : TempDirTest("fp4jit-gemm") {}
};

// Presets whose GEMM operands read alike (mxfp4 and tetrajet: E2M1 with E8M0 1 x 32 scales) share
// their kernels; each kernel is compiled by the first preset (in presets() order) whose spread
// holds it, and a later preset's test compiles only the kernels that no earlier preset's holds.
TEST_P(GemmCompiles, EveryGemmOverASpreadOfConfigs) {
  const std::string& preset = GetParam().preset;
  const std::string& arch = GetParam().arch;
  PresetKernels mine = preset_kernels(preset, arch);
  std::set<std::string> earlier;
  for (const auto& p : presets()) {
    if (p.name == preset) break;
    for (const auto& k : preset_kernels(std::string(p.name), arch).kernels)
      earlier.insert(k.key_text);
  }
  std::vector<KernelSource> kernels;
  for (auto& k : mine.kernels)
    if (!earlier.contains(k.key_text)) kernels.push_back(std::move(k));
  RecordProperty("kernels", static_cast<int>(mine.kernels.size()));
  RecordProperty("compiled_by_an_earlier_preset",
                 static_cast<int>(mine.kernels.size() - kernels.size()));
  RecordProperty("unsupported_gemms", mine.unsupported);
  if (mine.kernels.empty()) GTEST_SKIP() << preset << " has no " << arch << " GEMM kernel";
  // Every kernel of the preset compiled by an earlier preset's test (tetrajet after mxfp4).
  if (kernels.empty()) return;
  // Into a cache of the test's own, whose binaries the SASS checks read back.
  KernelCache cache(path("cache.db"));
  const auto compiled = compile_sources(kernels, &cache, 0);
  ASSERT_EQ(compiled.size(), kernels.size());
  for (const auto& k : compiled) EXPECT_FALSE(k.from_cache);
  const std::string cuobjdump = test_util::find_cuobjdump();
  RecordProperty("sass", cuobjdump.empty() ? "not read: no cuobjdump" : cuobjdump);
  if (!cuobjdump.empty()) {
    // One kernel's SASS per family (test_util::sass_family): the first of each in the spread.
    std::set<std::string> families;
    for (const auto& k : kernels) {
      if (!families.insert(test_util::sass_family(k.key_text)).second) continue;
      SCOPED_TRACE(k.key_text);
      const cuda::KernelBinary bin = cuda::kernel_binary(k, &cache);
      EXPECT_TRUE(bin.from_cache);
      const std::set<std::string> got = test_util::mma_mnemonics(cuobjdump, bin.cubin, dir_);
      const test_util::MmaExpectation want = test_util::expected_mma(k.key_text);
      for (const auto& m : want.must) EXPECT_TRUE(got.contains(m)) << "no " << m << " in the SASS";
      for (const auto& m : got) EXPECT_FALSE(want.must_not.contains(m)) << m << " in the SASS";
    }
    RecordProperty("sass_families", static_cast<int>(families.size()));
  }
}

std::vector<Target> targets() {
  std::vector<Target> out;
  for (const auto& p : presets())
    for (const char* arch : {"sm_90a", "sm_100a"}) out.push_back({std::string(p.name), arch});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Presets, GemmCompiles, testing::ValuesIn(targets()),
                         [](const testing::TestParamInfo<Target>& p) {
                           return p.param.preset + "_" + p.param.arch;
                         });

TEST(GemmStubs, StagedChoiceBringsItsExpansionsAndFallback) {
  for (const char* preset : {"nvfp4", "mxfp4", "msfp4"}) {
    const Recipe r = parse_recipe(preset);
    for (const auto& op : gemm_op_names()) {
      const codegen::GemmSpec spec =
          codegen::gemm_spec(r, op.value, 4096, 4096, DType::bf16, "sm_90a");
      const codegen::GemmChoice big = codegen::choose_gemm(spec, 8192, 132, "sm_90a");
      const codegen::GemmChoice small = codegen::choose_gemm(spec, 128, 132, "sm_90a");
      EXPECT_TRUE(big.sm90.staged) << preset;
      EXPECT_FALSE(small.sm90.staged) << preset;
      // 128 rows: the swapped kernel for mx (with A's expansion and the fused fallback) and nv
      // (with A's expansion), else the fused kernel alone.
      const bool swap = spec.path == GemmPath::mx || spec.path == GemmPath::nv;
      EXPECT_EQ(small.sm90.swap, swap) << preset;
      EXPECT_EQ(codegen::gemm_kernels(spec, small, 128, 132, "sm_90a").size(),
                spec.path == GemmPath::mx ? 3u
                : swap                    ? 2u
                                          : 1u);
      const auto ks = codegen::gemm_kernels(spec, big, 8192, 132, "sm_90a");
      const bool window = spec.path == GemmPath::mx || spec.path == GemmPath::ms_grad;
      // The staged kernel, both operands' expansions in one kernel (ms_grad: A's and B's apart),
      // the fallback.
      const bool apart = spec.path == GemmPath::ms_grad;
      EXPECT_EQ(codegen::sm90_expand_apart(spec), apart);
      const std::size_t expansions = apart ? 2 : 1;
      ASSERT_EQ(ks.size(), 1 + expansions + (window ? 1 : 0)) << preset << " " << op.name;
      EXPECT_NE(ks[0].source().find("#include \"gemm/sm90/staged.cuh\""), std::string::npos);
      EXPECT_NE(ks[0].key_text.find("config=sg=1,"), std::string::npos) << ks[0].key_text;
      if (apart) {
        EXPECT_NE(ks[1].key_text.find("operand=a;"), std::string::npos) << ks[1].key_text;
        EXPECT_NE(ks[2].key_text.find("operand=b;"), std::string::npos) << ks[2].key_text;
      } else {
        EXPECT_EQ(ks[1].op, "gemm_sm90_expand_pair") << ks[1].key_text;
        EXPECT_NE(ks[1].source().find("static constexpr bool kOperandB = false;"),
                  std::string::npos)
            << ks[1].source();
        EXPECT_NE(ks[1].source().find("static constexpr bool kOperandB = true;"), std::string::npos)
            << ks[1].source();
      }
      if (window) {
        EXPECT_EQ(ks.back().source().find("staged"), std::string::npos) << ks.back().source();
      }
      // The choice's text round-trips through the tuner's parser.
      const std::string text = cuda::gemm_choice_text(big, "sm_90a");
      const codegen::GemmChoice back = cuda::parse_gemm_choice(text, spec, 8192, 132, "sm_90a");
      EXPECT_EQ(cuda::gemm_choice_text(back, "sm_90a"), text);
      EXPECT_TRUE(back.sm90.staged);
      // Promoting paths take the default period, the others none; the expansions carry it.
      EXPECT_EQ(back.sm90.period, window ? sm90::kStagedPeriod : 1) << text;
      EXPECT_EQ(text.find(",pp=") != std::string::npos, window) << text;
      EXPECT_NE(ks[1].source().find(fmt::format("kPeriod = {};", back.sm90.period)),
                std::string::npos)
          << ks[1].source();
    }
  }
}

TEST(GemmStubs, PromotionPeriodIsValidatedWithItsSplits) {
  const Recipe r = parse_recipe("mxfp4");
  const codegen::GemmSpec mx =
      codegen::gemm_spec(r, GemmOp::fprop, 4096, 4096, DType::bf16, "sm_90a");
  const codegen::GemmSpec nv =
      codegen::gemm_spec(parse_recipe("nvfp4"), GemmOp::fprop, 4096, 4096, DType::bf16, "sm_90a");
  const auto parse = [](const std::string& text, const codegen::GemmSpec& spec) {
    return cuda::parse_gemm_choice(text, spec, 8192, 132, "sm_90a");
  };
  const auto rejects = [&](const std::string& text, const codegen::GemmSpec& spec,
                           const std::string& why) {
    try {
      parse(text, spec);
      ADD_FAILURE() << "accepted " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << text;
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  // No pp: a period of 1 (choices stored before the period existed keep their meaning).
  EXPECT_EQ(parse("sg=1,bn=128,ps=6,rg=8m,sk=1", mx).sm90.period, 1);
  for (int period : {1, 2, 4, 8}) {
    const std::string text = fmt::format("sg=1,bn=128,ps=6,rg=8m,pp={},sk=1", period);
    const codegen::GemmChoice c = parse(text, mx);
    EXPECT_EQ(c.sm90.period, period);
    EXPECT_EQ(cuda::gemm_choice_text(c, "sm_90a"),
              period == 1 ? "sg=1,bn=128,ps=6,rg=8m,sk=1" : text);
  }
  rejects("sg=1,bn=128,ps=6,rg=8m,pp=3,sk=1", mx,
          "pp (K tiles per promotion) must be 1, 2, 4 or 8");
  rejects("sg=1,bn=128,ps=6,rg=8m,pp=16,sk=1", mx, "pp (K tiles per promotion)");
  rejects("sg=1,bn=256,ps=4,rg=8m,pp=4,sk=1", nv, "must be 1 for path nv");
  rejects("bn=128,ps=7,es=4,rg=8m,il=0,pp=4,sk=1", mx, "pp applies to the staged kernel only");
  // K = 4096: 32 K tiles of 128, 8 segments of 4: split-K counts segments.
  EXPECT_EQ(parse("sg=1,bn=128,ps=6,rg=8m,pp=4,sk=8", mx).splits, 8);
  rejects("sg=1,bn=128,ps=6,rg=8m,pp=4,sk=9", mx, "1..8 (K tiles, in segments)");
  EXPECT_EQ(parse("sg=1,bn=128,ps=6,rg=8m,pp=1,sk=32", mx).splits, 32);
  // Clusters: staged only, 1 or 2 CTAs, no split-K; the grid is whole clusters.
  {
    const codegen::GemmChoice c = parse("sg=1,bn=192,ps=5,rg=8m,pp=4,cm=2,sk=1", mx);
    EXPECT_EQ(c.sm90.cluster_m, 2);
    EXPECT_EQ(cuda::gemm_choice_text(c, "sm_90a"), "sg=1,bn=192,ps=5,rg=8m,pp=4,cm=2,sk=1");
    EXPECT_EQ(c.grid % 2, 0);
    EXPECT_LE(c.grid, 132);
  }
  rejects("sg=1,bn=192,ps=5,rg=8m,pp=4,cm=3,sk=1", mx, "cm (CTAs per cluster) must be 1 or 2");
  rejects("sg=1,bn=192,ps=5,rg=8m,pp=4,cm=2,sk=2", mx, "clusters (cm=2) take no split-K");
  rejects("bn=128,ps=7,es=4,rg=8m,il=0,cm=2,sk=1", mx, "cm applies to the staged kernel only");
  // TMA stores of D: staged only; their tile of D counts against shared memory (BF16 at 192
  // columns: 48 KB, so 5 stages no longer fit).
  {
    const codegen::GemmChoice c = parse("sg=1,bn=192,ps=4,rg=8m,pp=4,ts=1,sk=1", mx);
    EXPECT_TRUE(c.sm90.tma_store);
    EXPECT_EQ(cuda::gemm_choice_text(c, "sm_90a"), "sg=1,bn=192,ps=4,rg=8m,pp=4,ts=1,sk=1");
    EXPECT_FALSE(parse("sg=1,bn=192,ps=5,rg=8m,pp=4,ts=0,sk=1", mx).sm90.tma_store);
  }
  rejects("sg=1,bn=192,ps=5,rg=8m,pp=4,ts=1,sk=1", mx, "the epilogue's tile of D");
  rejects("bn=128,ps=7,es=4,rg=8m,il=0,ts=1,sk=1", mx,
          "ts (TMA stores of D) applies to the staged");
  // The default: TMA stores for 16-bit outputs (as many stages as fit beside the tile), register
  // stores for FP32 (full 8-byte pairs; the tile would leave too few stages).
  const codegen::GemmSpec mx32 =
      codegen::gemm_spec(r, GemmOp::fprop, 4096, 4096, DType::f32, "sm_90a");
  EXPECT_TRUE(codegen::default_sm90_staged_config(mx, 192).tma_store);
  EXPECT_EQ(codegen::default_sm90_staged_config(mx, 192).packed_stages, 4);
  EXPECT_EQ(codegen::default_sm90_staged_config(nv, 256).packed_stages, 3);
  EXPECT_FALSE(codegen::default_sm90_staged_config(mx32, 192).tma_store);
  EXPECT_EQ(codegen::default_sm90_staged_config(mx32, 192).packed_stages, 5);
}

TEST(GemmStubs, AreTinyNamedAndKeyedByNAndK) {
  const Recipe r = parse_recipe("nvfp4");
  for (const char* arch : {"sm_90a", "sm_100a"}) {
    const codegen::GemmSpec spec =
        codegen::gemm_spec(r, GemmOp::dgrad, 3072, 4096, DType::bf16, arch);
    // The fused kernel at 300 rows (sm_90a; the heuristic's is the swapped one there).
    const KernelSource k = codegen::gemm_kernel(
        spec,
        arch == std::string("sm_90a") ? codegen::choose_sm90_gemm(spec, 300, 132, false)
                                      : codegen::choose_gemm(spec, 300, 132, arch),
        arch);
    const std::string src = k.source();
    EXPECT_NE(src.find("#include \"gemm/sm" +
                       std::string(arch == std::string("sm_90a") ? "90" : "100") + "/kernel.cuh\""),
              std::string::npos)
        << src;
    EXPECT_NE(src.find("template __global__ void " + k.name_expression() + "("), std::string::npos)
        << src;
    EXPECT_EQ(src.find("__device__"), std::string::npos) << src;
    EXPECT_LT(src.size(), 4000u) << src;
    EXPECT_NE(k.key_text.find("n=3072;k=4096;"), std::string::npos) << k.key_text;
    EXPECT_NE(src.find("kN = 3072, kK = 4096"), std::string::npos) << src;
    EXPECT_NE(k.key_text.find("target=" + std::string(arch)), std::string::npos);
  }
  // The wt operand's 16x16 blocks reach the stub; the same pair for another N is another kernel.
  const codegen::GemmSpec a =
      codegen::gemm_spec(r, GemmOp::dgrad, 3072, 4096, DType::bf16, "sm_90a");
  const codegen::GemmSpec b =
      codegen::gemm_spec(r, GemmOp::dgrad, 3104, 4096, DType::bf16, "sm_90a");
  EXPECT_EQ(a.b_block_rows, 16);
  EXPECT_NE(codegen::gemm_sm90_kernel(a, {}, "sm_90a").key_text,
            codegen::gemm_sm90_kernel(b, {}, "sm_90a").key_text);
}

TEST(GemmPaths, EveryPresetPairMapsToAKernelPath) {
  const auto path = [](const char* recipe, GemmOp op, const char* arch = "sm_90a") {
    return codegen::gemm_spec(parse_recipe(recipe), op, 256, 256, DType::bf16, arch).path;
  };
  EXPECT_EQ(path("mxfp4", GemmOp::wgrad), GemmPath::mx);
  EXPECT_EQ(path("tetrajet", GemmOp::dgrad), GemmPath::mx);
  EXPECT_EQ(path("nvfp4", GemmOp::fprop), GemmPath::nv);
  EXPECT_EQ(path("ue5m3", GemmOp::wgrad), GemmPath::nv);
  EXPECT_EQ(path("msfp4", GemmOp::fprop), GemmPath::ms);
  EXPECT_EQ(path("msfp4", GemmOp::dgrad), GemmPath::ms_grad);
  EXPECT_EQ(path("msfp4", GemmOp::wgrad), GemmPath::ms_grad);
  EXPECT_EQ(path("nvfp4", GemmOp::wgrad, "sm_100a"), GemmPath::nv);
  EXPECT_EQ(path("tetrajet", GemmOp::fprop, "sm_100a"), GemmPath::mx);
}

TEST(GemmPaths, UnsupportedCombinationsSayWhy) {
  const auto error_of = [](const char* recipe, GemmOp op, std::int64_t k, const char* arch) {
    try {
      codegen::gemm_spec(parse_recipe(recipe), op, 256, k, DType::bf16, arch);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::unsupported) << e.what();
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("msfp4", GemmOp::fprop, 256, "sm_100a").find("no kernel multiplies fprop"),
            std::string::npos);
  EXPECT_NE(error_of("ue5m3", GemmOp::fprop, 256, "sm_100a").find("ue5m3"), std::string::npos);
  EXPECT_NE(error_of("nvfp4", GemmOp::fprop, 48, "sm_90a").find("multiple of 32"),
            std::string::npos);
  EXPECT_NE(error_of("mxfp4:elem=e4m3", GemmOp::fprop, 256, "sm_90a").find("elem=e4m3"),
            std::string::npos);
  EXPECT_NE(error_of("mxfp4", GemmOp::fprop, 256, "sm_80").find("no kernels for sm_80"),
            std::string::npos);
}

TEST(GemmConfigs, InvalidConfigsAreRejected) {
  const codegen::GemmSpec mx =
      codegen::gemm_spec(parse_recipe("mxfp4"), GemmOp::fprop, 256, 256, DType::bf16, "sm_90a");
  codegen::GemmSm90Config c;
  c.block_n = 256;  // mx keeps two accumulator sets
  EXPECT_THROW(c.validate(mx), Error);
  c.block_n = 128;
  c.packed_stages = 16;
  c.exp_stages = 8;  // shared memory
  EXPECT_THROW(c.validate(mx), Error);
  EXPECT_THROW(codegen::gemm_sm100_kernel(mx, {256, 4}, "sm_100a"), Error);
}

// What `fp4jit compile --gemm` builds: the three GEMMs of a layer, skipping what sm_100a lacks.
TEST(LayerKernels, ThreeGemmsAndOccKernels) {
  const std::array<DType, 1> outs{DType::bf16};
  std::vector<std::string> skipped;
  const auto ms =
      cuda::request_gemm_kernels(parse_recipe("msfp4"), {true, GemmOp::fprop, {1024, 3072, 4096}},
                                 "sm_90a", 132, outs, &skipped);
  std::multiset<std::string> ops;
  for (const auto& k : ms) ops.insert(k.op);
  // 1024 rows: the staged kernels, plus the fused fallbacks of dgrad and wgrad (ms_grad, whose
  // expansion has a window), and the expansions: ms's A and B in one kernel, ms_grad's A and B
  // apart (dgrad and wgrad share them: dy / dyt and wt / xt have the same formats).
  EXPECT_EQ(ops.count("gemm_sm90"), 5u);
  EXPECT_EQ(ops.count("gemm_sm90_expand_pair"), 1u);
  EXPECT_EQ(ops.count("gemm_sm90_expand"), 2u);
  EXPECT_EQ(ops.count("occ_transpose"), 1u);
  EXPECT_EQ(ops.count("occ_rows"), 1u);
  EXPECT_EQ(ops.count("occ_compensate"), 1u);
  EXPECT_TRUE(skipped.empty());
  const auto ms100 =
      cuda::request_gemm_kernels(parse_recipe("msfp4"), {true, GemmOp::fprop, {1024, 3072, 4096}},
                                 "sm_100a", 148, outs, &skipped);
  EXPECT_TRUE(ms100.empty());
  EXPECT_EQ(skipped.size(), 3u);
}

}  // namespace
}  // namespace fp4jit
