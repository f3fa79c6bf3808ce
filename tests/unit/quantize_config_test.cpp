// The quantize kernels' configs without a GPU: CTAs per SM (minb=) in the config texts, stubs
// and tunings; the heuristic's CTA size for quantize_tile pairs by recipe and source size, and
// the kernels planned and compiled ahead of time for it; FP4JIT_QUANTIZE_TILE and
// FP4JIT_QUANTIZE_ROWS over the heuristic, and their errors.
#include <gtest/gtest.h>

#if defined(FP4JIT_HAVE_CUDA)
#include <stdlib.h>

#include <algorithm>
#include <array>
#include <functional>
#include <initializer_list>
#include <set>
#include <string>
#include <utility>
#include <variant>

#include "codegen/kernels.hpp"
#include "core/error.hpp"
#include "runtime/cuda/plan.hpp"

namespace fp4jit::cuda {
namespace {

// An environment variable set for a scope.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  const char* name_;
};

// Each text of `variable` makes `call` throw an Error that names the variable.
void expect_rejected(const char* variable, std::initializer_list<const char*> texts,
                     const std::function<void()>& call) {
  for (const char* text : texts) {
    ScopedEnv e(variable, text);
    try {
      call();
      ADD_FAILURE() << variable << "=" << text << " was taken";
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find(variable), std::string::npos) << err.what();
    }
  }
}

TEST(QuantizeConfig, TileConfigsAskForCtasPerSm) {
  const auto t = parse_quantize_tuning("tile:threads=512,tile=64x128,minb=2");
  ASSERT_TRUE(t.tile);
  EXPECT_EQ(t.tile->min_blocks, 2);
  EXPECT_EQ(t.text(), "tile:threads=512,tile=64x128,minb=2");
  EXPECT_THROW(parse_quantize_tuning("tile:threads=256,tile=64x128,minb=0"),
               Error);  // not canonical: minb=0 is written as nothing
  EXPECT_THROW(parse_quantize_tuning("tile:threads=256,tile=64x128,minb=2x"), Error);
  const Recipe recipe = parse_recipe("mxfp4");
  const OperandSpec* x = &recipe[Role::x];
  const OperandSpec* xt = &recipe[Role::xt];
  EXPECT_NO_THROW((codegen::TileConfig{512, 64, 128, 4}.validate(x, xt, DType::bf16)));
  EXPECT_THROW((codegen::TileConfig{512, 64, 128, 5}.validate(x, xt, DType::bf16)),
               Error);  // 2560 threads per SM
  EXPECT_THROW((codegen::TileConfig{256, 64, 128, -1}.validate(x, xt, DType::bf16)), Error);
  // The stub hands the ask to __launch_bounds__.
  const auto kx = codegen::kernel_operand(recipe, Role::x);
  const auto kxt = codegen::kernel_operand(recipe, Role::xt);
  const auto k = codegen::quantize_tile_kernel(&kx, &kxt, DType::bf16, kern::Phase::quantize, false,
                                               codegen::TileConfig{512, 64, 128, 2}, "sm_90a");
  EXPECT_NE(k.declarations.find("min_blocks = 2;"), std::string::npos) << k.declarations;
  EXPECT_NE(k.key_text.find("config=threads=512,tile=64x128,minb=2;"), std::string::npos);
}

// quantize_rows takes the same ask and its own variable.
TEST(QuantizeConfig, RowsConfigsAskForCtasPerSmAndTakeTheEnvironment) {
  const auto t = parse_quantize_tuning("rows:threads=256,unroll=2,minb=3");
  ASSERT_TRUE(t.rows);
  EXPECT_EQ(t.rows->min_blocks, 3);
  EXPECT_EQ(t.text(), "rows:threads=256,unroll=2,minb=3");
  EXPECT_THROW(parse_quantize_tuning("rows:threads=256,unroll=2,minb=0"), Error);
  EXPECT_THROW((codegen::RowsConfig{512, 2, 5}.validate()), Error);  // 2560 threads per SM
  const Recipe r = parse_recipe("nvfp4");
  const auto k = codegen::quantize_rows_kernel(codegen::kernel_operand(r, Role::dy), DType::bf16,
                                               kern::Phase::quantize,
                                               codegen::RowsConfig{256, 2, 3}, "sm_90a");
  EXPECT_NE(k.declarations.find("min_blocks = 3;"), std::string::npos) << k.declarations;
  EXPECT_NE(k.key_text.find("config=threads=256,unroll=2,minb=3;"), std::string::npos);
  const std::string plain = codegen::default_rows_config(r[Role::dy], DType::bf16).text();
  {
    ScopedEnv e("FP4JIT_QUANTIZE_ROWS", "threads=128,unroll=4,minb=6");
    EXPECT_EQ(codegen::default_rows_config(r[Role::dy], DType::bf16).text(),
              "threads=128,unroll=4,minb=6");
  }
  expect_rejected("FP4JIT_QUANTIZE_ROWS",
                  {"threads=100", "unroll=9", "tile=64x64", "minb=x", "unroll"},
                  [&] { codegen::default_rows_config(r[Role::dy], DType::bf16); });
  EXPECT_EQ(codegen::default_rows_config(r[Role::dy], DType::bf16).text(), plain);
}

// The heuristic's rows config: lane-owned groups of BF16 on two ring slots a warp, 16 warps for
// two-level scales and 12 for the others; FP16 on 8 warps of three, FP32 on 4.
TEST(QuantizeConfig, RowsHeuristicGivesBf16RingsOfTwoSlots) {
  for (const char* preset : {"nvfp4", "ue5m3", "mxfp4", "tetrajet"}) {
    SCOPED_TRACE(preset);
    const Recipe r = parse_recipe(preset);
    const bool two_level = r[Role::x].rule == ScaleRule::two_level;
    const std::string bf16 = two_level ? "threads=512,unroll=1" : "threads=384,unroll=1";
    EXPECT_EQ(codegen::default_rows_config(r[Role::x], DType::bf16).text(), bf16);
    EXPECT_EQ(codegen::default_rows_config(r[Role::dy], DType::bf16).text(), bf16);
    EXPECT_EQ(kern::rows_ring_bytes(two_level ? 512 : 384, 1, kern::InType::bf16),
              (two_level ? 64 : 48) * 1024);
    EXPECT_EQ(codegen::default_rows_config(r[Role::x], DType::f16).text(), "threads=256,unroll=2");
    EXPECT_EQ(codegen::default_rows_config(r[Role::x], DType::f32).text(), "threads=128,unroll=2");
  }
  // msfp4's per-row scales take the segment path.
  EXPECT_EQ(codegen::default_rows_config(parse_recipe("msfp4")[Role::x], DType::bf16).text(),
            "threads=256,unroll=4");
}

// A lane-group rows launch carries its rings as dynamic shared memory (more than the 48 KB of
// static shared memory for 16 warps of two slots), the stats pass's too; the segment path's none.
TEST(QuantizeConfig, RowsLaunchesPassTheirRingsAsDynamicSharedMemory) {
  const auto fake = [](int i) {
    return reinterpret_cast<void*>(Arena::kCountingBase * 2 + std::uintptr_t(i) * 4096);
  };
  const auto rows_smem = [&](const char* preset, DType dt) {
    const Recipe r = parse_recipe(preset);
    Arena arena;
    const TensorView src{fake(0), dt, 1024, 4096, 0};
    QuantizedView out;
    out.codes = static_cast<std::uint8_t*>(fake(1));
    out.scales = fake(2);
    out.tensor_scale = static_cast<float*>(fake(3));
    out.amax = static_cast<float*>(fake(4));
    std::vector<int> smem;
    for (const auto& step :
         plan_quantize(r, Role::x, src, out, nullptr, QuantizeArgs{}, DeviceInfo{}, arena))
      if (const auto* l = std::get_if<Launch>(&step); l && l->kernel.op == "quantize_rows")
        smem.push_back(l->smem);
    return smem;
  };
  // nvfp4: the stats pass and the quantize pass, 16 warps x 2 slots x 2 KiB.
  EXPECT_EQ(rows_smem("nvfp4", DType::bf16), (std::vector<int>{64 * 1024, 64 * 1024}));
  EXPECT_EQ(rows_smem("mxfp4", DType::bf16), (std::vector<int>{48 * 1024}));  // 12 x 2 x 2 KiB
  EXPECT_EQ(rows_smem("mxfp4", DType::f32), (std::vector<int>{48 * 1024}));   // 4 x 3 x 4 KiB
  EXPECT_EQ(rows_smem("msfp4", DType::bf16).back(), 0);                       // segment path
}

// The heuristic's CTA size for quantize_tile pairs of 16-bit input on the raw path: 512 threads
// for 8-bit stochastic rounding and for E8M0-scaled pairs from 2^27 elements (or of unknown size),
// 256 for the other E8M0 and two-level pairs rounded to nearest and for 16-bit stochastic
// rounding, 128 for double quantization; 256 elsewhere.
TEST(QuantizeConfig, TileHeuristicSizesCtasByPairCost) {
  constexpr std::int64_t kSmall = 8192 * 4096, k8192 = std::int64_t{1} << 26,
                         kLarge = std::int64_t{1} << 28;
  const auto threads = [](const char* preset, Role a, Role b, DType in, std::int64_t n) {
    const Recipe r = parse_recipe(preset);
    return codegen::default_tile_config(&r[a], &r[b], in, n).threads;
  };
  EXPECT_EQ(threads("mxfp4", Role::x, Role::xt, DType::bf16, kLarge), 512);
  EXPECT_EQ(threads("mxfp4", Role::x, Role::xt, DType::bf16, 0), 512);  // size unknown
  EXPECT_EQ(threads("mxfp4", Role::x, Role::xt, DType::bf16, kSmall), 256);
  EXPECT_EQ(threads("mxfp4", Role::x, Role::xt, DType::bf16, k8192), 256);
  EXPECT_EQ(threads("mxfp4", Role::dy, Role::dyt, DType::f16, kLarge), 512);
  EXPECT_EQ(threads("nvfp4", Role::x, Role::xt, DType::bf16, kSmall), 256);
  EXPECT_EQ(threads("nvfp4", Role::x, Role::xt, DType::bf16, kLarge), 256);
  EXPECT_EQ(threads("ue5m3", Role::x, Role::xt, DType::bf16, kLarge), 256);
  EXPECT_EQ(threads("nvfp4", Role::w, Role::wt, DType::bf16, kLarge), 256);  // 16 x 16 blocks
  EXPECT_EQ(threads("nvfp4", Role::dy, Role::dyt, DType::bf16, 4096), 512);  // 8-bit SR, Hadamard
  EXPECT_EQ(threads("ue5m3", Role::dy, Role::dyt, DType::bf16, kLarge), 512);
  EXPECT_EQ(threads("mxfp4", Role::x, Role::xt, DType::f32, kLarge), 256);        // 64 x 64 tiles
  EXPECT_EQ(threads("tetrajet", Role::x, Role::xt, DType::bf16, kLarge), 128);    // xt requantized
  EXPECT_EQ(threads("tetrajet", Role::w, Role::wt, DType::bf16, kLarge), 128);    // wt requantized
  EXPECT_EQ(threads("tetrajet", Role::dy, Role::dyt, DType::bf16, kLarge), 256);  // 16-bit SR
  // A transposed operand alone: 256 threads; from the packed BF16 encoder with the register cap
  // of one CTA per SM asked (two fit), where the kernel's own rule would ask for three.
  const Recipe mx = parse_recipe("mxfp4");
  EXPECT_EQ(codegen::default_tile_config(nullptr, &mx[Role::xt], DType::bf16).text(),
            "threads=256,tile=64x128,minb=1");
  EXPECT_EQ(codegen::default_tile_config(nullptr, &mx[Role::dyt], DType::f16).text(),
            "threads=256,tile=64x128");
  const Recipe nv = parse_recipe("nvfp4"), tj = parse_recipe("tetrajet");
  EXPECT_EQ(codegen::default_tile_config(nullptr, &nv[Role::xt], DType::bf16).text(),
            "threads=256,tile=64x128");  // two-level, Hadamard
  EXPECT_EQ(codegen::default_tile_config(nullptr, &tj[Role::wt], DType::bf16).min_blocks,
            0);  // stochastic rounding
  // A two-level operand alone rounded to nearest below 2^27 elements: 128 threads; larger, of
  // unknown size, with FP32 input or stochastic rounding: 256.
  const Recipe ue = parse_recipe("ue5m3");
  EXPECT_EQ(codegen::default_tile_config(nullptr, &nv[Role::xt], DType::bf16, kSmall).text(),
            "threads=128,tile=64x128");
  EXPECT_EQ(codegen::default_tile_config(&nv[Role::w], nullptr, DType::bf16, 4096 * 4096).text(),
            "threads=128,tile=64x64");
  EXPECT_EQ(codegen::default_tile_config(nullptr, &ue[Role::wt], DType::f16, kSmall).threads, 128);
  EXPECT_EQ(codegen::default_tile_config(nullptr, &nv[Role::xt], DType::bf16, k8192).threads, 128);
  EXPECT_EQ(codegen::default_tile_config(nullptr, &nv[Role::xt], DType::bf16, kLarge).threads, 256);
  EXPECT_EQ(codegen::default_tile_config(nullptr, &nv[Role::xt], DType::bf16).threads, 256);
  EXPECT_EQ(codegen::default_tile_config(&nv[Role::w], nullptr, DType::f32, kSmall).threads, 256);
  EXPECT_EQ(codegen::default_tile_config(nullptr, &nv[Role::dyt], DType::bf16, kSmall).threads,
            256);
  EXPECT_EQ(codegen::default_tile_config(nullptr, &mx[Role::xt], DType::bf16, kSmall).threads, 256);
  // A pair's plan launches what the heuristic says for its source's size.
  const auto fake = [](int i) {
    return reinterpret_cast<void*>(Arena::kCountingBase * 2 + std::uintptr_t(i) * 4096);
  };
  for (const auto& [rows, block] : {std::pair{16384, 512u}, std::pair{8192, 256u}}) {
    Arena arena;
    const TensorView src{fake(0), DType::bf16, rows, 8192, 0};
    QuantizedView out, out_t;
    out.codes = static_cast<std::uint8_t*>(fake(1));
    out.scales = fake(2);
    out_t.codes = static_cast<std::uint8_t*>(fake(3));
    out_t.scales = fake(4);
    const Plan plan =
        plan_quantize(mx, Role::x, src, out, &out_t, QuantizeArgs{}, DeviceInfo{}, arena);
    int tiles = 0;
    for (const auto& step : plan)
      if (const auto* l = std::get_if<Launch>(&step); l && l->kernel.op == "quantize_tile") {
        ++tiles;
        EXPECT_EQ(l->block, block) << rows << " x 8192";
      }
    EXPECT_EQ(tiles, 1);
  }
  // Both sizes' kernels are among those compiled ahead of time.
  std::set<std::string> configs;
  for (const auto& k : recipe_kernels(mx, "sm_90a", std::array<DType, 1>{DType::bf16}))
    if (k.op == "quantize_tile" && k.key_text.find("mode=both") != std::string::npos)
      configs.insert(k.key_text.substr(k.key_text.find(";config=")));
  EXPECT_TRUE(std::any_of(configs.begin(), configs.end(), [](const std::string& c) {
    return c.find("threads=512,") != std::string::npos;
  }));
  EXPECT_TRUE(std::any_of(configs.begin(), configs.end(), [](const std::string& c) {
    return c.find("threads=256,") != std::string::npos;
  }));
}

// FP4JIT_QUANTIZE_TILE replaces fields of the heuristic's config, and says what is wrong.
TEST(QuantizeConfig, TileOverrideFromTheEnvironment) {
  const Recipe r = parse_recipe("nvfp4");
  const OperandSpec* x = &r[Role::x];
  const OperandSpec* xt = &r[Role::xt];
  {
    ScopedEnv e("FP4JIT_QUANTIZE_TILE", "threads=128,minb=4");
    EXPECT_EQ(codegen::default_tile_config(x, xt, DType::bf16).text(),
              "threads=128,tile=64x128,minb=4");
  }
  {
    ScopedEnv e("FP4JIT_QUANTIZE_TILE", "tile=64x64");
    EXPECT_EQ(codegen::default_tile_config(x, xt, DType::bf16).text(), "threads=256,tile=64x64");
  }
  expect_rejected("FP4JIT_QUANTIZE_TILE",
                  {"threads=1000", "warps=4", "tile=64", "minb=9", "threads="},
                  [&] { codegen::default_tile_config(x, xt, DType::bf16); });
  EXPECT_EQ(codegen::default_tile_config(x, xt, DType::bf16).text(), "threads=256,tile=64x128");
}

}  // namespace
}  // namespace fp4jit::cuda

#endif  // FP4JIT_HAVE_CUDA
