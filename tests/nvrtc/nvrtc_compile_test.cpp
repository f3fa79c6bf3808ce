// Compile-only checks of the CUDA path, no GPU needed: every kernel of every preset (every
// template, operand and mode the launch plans use) through the real runtime compiler for sm_90a
// and sm_100a; the compile error path (NVRTC log, options, source hash in the Error); ahead-of-
// time compilation into the SQLite cache and FP4JIT_NO_COMPILE; and the backend's behaviour on a
// machine without a GPU.
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

#include <unistd.h>

#include "cache/cache.hpp"
#include "codegen/kernels.hpp"
#include "core/sha256.hpp"
#include "fp4jit/engine.hpp"
#include "runtime/backend.hpp"
#include "runtime/compile.hpp"
#include "runtime/cuda/kernel_binary.hpp"
#include "runtime/cuda/nvrtc.hpp"
#include "runtime/cuda/plan.hpp"

namespace fp4jit {
namespace {

struct Target {
  std::string preset;
  std::string arch;
};

class PresetCompiles : public testing::TestWithParam<Target> {};

// Every kernel of the preset, BF16 inputs (the other input types differ only in the load; one
// preset covers them below).
TEST_P(PresetCompiles, EveryKernelCompiles) {
  const Recipe recipe = parse_recipe(GetParam().preset);
  const std::array<DType, 1> dtypes{DType::bf16};
  // The PTX of every kernel goes to a scratch folder (FP4JIT_DUMP), to be read below.
  const std::filesystem::path dump =
      std::filesystem::temp_directory_path() / ("fp4jit_ptx_" + GetParam().preset + "_" +
                                                GetParam().arch + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dump);
  ::setenv("FP4JIT_DUMP", dump.c_str(), 1);
  const auto compiled = compile_recipe(recipe, GetParam().arch, nullptr, dtypes, 0);
  ::unsetenv("FP4JIT_DUMP");
  // The quantize kernels keep their per-thread arrays in registers: a local-memory frame
  // (__local_depot in the PTX) means an array indexed by a value known only at run time, which
  // costs a round trip through L1/L2 per element (seen once: Hadamard butterflies in loops
  // bounded by the stage, 30x the output's bytes of L2 writes).
  int ptx_files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dump)) {
    const std::string file = e.path().filename().string();
    if (e.path().extension() != ".ptx" || file.rfind("quantize_", 0) != 0) continue;
    ++ptx_files;
    std::ifstream in(e.path());
    const std::string ptx((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(ptx.find("__local_depot"), std::string::npos)
        << file << " uses local memory (its source: "
        << std::filesystem::path(e.path()).replace_extension(".cu").string() << ")";
  }
  EXPECT_GT(ptx_files, 0);
  if (!HasFailure()) std::filesystem::remove_all(dump);
  std::set<std::string> ops;
  for (const auto& k : compiled) {
    EXPECT_FALSE(k.from_cache);
    ops.insert(k.op);
  }
  // Row-wise, transposed and pair quantization and dequantize are there for every preset, and
  // dY's column sums (a linear layer's bias gradient) beside its pair or in their own pass.
  EXPECT_TRUE(ops.count("quantize_rows") && ops.count("quantize_tile") && ops.count("dequantize"));
  EXPECT_TRUE(ops.count("column_sums_partial") && ops.count("column_sums_reduce"));
  if (recipe[Role::x].occ) {
    EXPECT_TRUE(ops.count("occ_select") && ops.count("occ_scan") && ops.count("occ_chunk_scan") &&
                ops.count("occ_write") && ops.count("occ_rows"));
  }
  if (recipe[Role::w].dge) {
    EXPECT_TRUE(ops.count("dge_apply"));
  }
  RecordProperty("kernels", static_cast<int>(compiled.size()));
}

std::vector<Target> targets() {
  std::vector<Target> out;
  for (const auto& p : presets())
    for (const char* arch : {"sm_90a", "sm_100a"}) out.push_back({std::string(p.name), arch});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Presets, PresetCompiles, testing::ValuesIn(targets()),
                         [](const testing::TestParamInfo<Target>& p) {
                           return p.param.preset + "_" + p.param.arch;
                         });

// The FP32 and FP16 loads: the activation kernels of one preset (row-wise, transposed, pair).
TEST(InputTypes, Fp32AndFp16KernelsCompile) {
  const std::array<DType, 2> dtypes{DType::f32, DType::f16};
  int n = 0;
  for (const auto& k : cuda::recipe_kernels(parse_recipe("nvfp4"), "sm_90a", dtypes)) {
    if (k.key_text.find("role=x;") == std::string::npos &&
        k.key_text.find("role=xt;") == std::string::npos)
      continue;
    if (k.op != "quantize_rows" && k.op != "quantize_tile") continue;
    EXPECT_FALSE(cuda::compile_kernel(k).cubin.empty());
    ++n;
  }
  EXPECT_GE(n, 6);
}

TEST(CompileErrors, BrokenStubCarriesTheLog) {
  const Recipe recipe = parse_recipe("nvfp4");
  codegen::KernelSource k = codegen::quantize_rows_kernel(
      codegen::kernel_operand(recipe, Role::x), DType::bf16, kern::Phase::quantize, {}, "sm_90a");
  // A config without the member the template reads.
  const std::string broken =
      "#include \"quantize/quantize_rows.cuh\"\nstruct Config { using Op = int; };\n"
      "template __global__ void fp4jit::kern::quantize_rows<Config>(fp4jit::kern::QuantizeArgs);\n";
  const auto options = codegen::compile_options("sm_90a");
  try {
    cuda::Nvrtc::get().compile_source(broken, k.name_expression(), options, false);
    FAIL() << "the broken stub compiled";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::compile);
    EXPECT_NE(e.log().find("error"), std::string::npos) << e.log();
    EXPECT_NE(e.log().find("quantize_rows.cuh"), std::string::npos) << e.log();
    EXPECT_NE(std::string(e.what()).find(e.log()), std::string::npos);
    EXPECT_NE(e.options().find("--fmad=false"), std::string::npos);
    EXPECT_EQ(e.source_hash(), sha256_hex(broken));
  }
}

TEST(CompileErrors, UnknownTargetIsRejected) {
  EXPECT_THROW(
      compile_recipe(parse_recipe("mxfp4"), "sm_42", nullptr, std::array<DType, 1>{DType::bf16}, 1),
      Error);
}

TEST(Stubs, AreTinyAndNamed) {
  const Recipe recipe = parse_recipe("nvfp4");
  for (const auto& k : cuda::recipe_kernels(recipe, "sm_90a", std::array<DType, 1>{DType::bf16})) {
    const std::string src = k.source();
    // The stub includes its template's header (quantize/<op>.cuh, or the family's header that
    // holds several ops: quantize/column_sums.cuh's partial and reduce).
    EXPECT_EQ(k.header.rfind("quantize/", 0), 0u) << k.header;
    EXPECT_EQ(k.op.rfind(k.header.substr(9, k.header.size() - 9 - 4), 0), 0u)
        << k.op << " is not in " << k.header;
    EXPECT_NE(src.find("#include \"" + k.header + "\""), std::string::npos) << src;
    EXPECT_NE(src.find("template __global__ void fp4jit::kern::" + k.op + "<Config>"),
              std::string::npos)
        << src;
    EXPECT_EQ(src.find("__device__"), std::string::npos) << "a kernel body leaked into the stub:\n"
                                                         << src;
    EXPECT_LT(src.size(), 4000u) << src;
  }
}

class TempCache : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("fp4jit_nvrtc_test_" + std::to_string(::getpid()) + "_" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    unsetenv("FP4JIT_NO_COMPILE");
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
};

TEST_F(TempCache, AheadOfTimeThenFullyCached) {
  KernelCache cache((dir_ / "cache.db").string());
  ASSERT_TRUE(cache.enabled());
  const Recipe recipe = parse_recipe("mxfp4");
  const std::array<DType, 1> dtypes{DType::bf16};
  const auto first = compile_recipe(recipe, "sm_90a", &cache, dtypes, 0);
  const auto second = compile_recipe(recipe, "sm_90a", &cache, dtypes, 0);
  ASSERT_EQ(first.size(), second.size());
  for (const auto& k : second) EXPECT_TRUE(k.from_cache) << k.key_text;
  // Every row carries the stub and the lowered symbol.
  const auto rows = cache.list();
  EXPECT_EQ(rows.size(), first.size());
  for (const auto& r : rows) {
    const auto e = cache.get(r.key_hash);
    ASSERT_TRUE(e.has_value());
    EXPECT_NE(e->source.find("template __global__"), std::string::npos);
    EXPECT_FALSE(e->symbol.empty());
  }
  // FP4JIT_NO_COMPILE: cached kernels load, anything else is an error that says why.
  setenv("FP4JIT_NO_COMPILE", "1", 1);
  for (const auto& k : cuda::recipe_kernels(recipe, "sm_90a", dtypes)) {
    const auto b = cuda::kernel_binary(k, &cache);
    EXPECT_TRUE(b.from_cache);
    EXPECT_FALSE(b.cubin.empty());
  }
  const auto other = cuda::recipe_kernels(parse_recipe("nvfp4"), "sm_90a", dtypes);
  try {
    cuda::kernel_binary(other.front(), &cache);
    FAIL() << "a missing kernel compiled under FP4JIT_NO_COMPILE";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::cache);
    EXPECT_NE(std::string(e.what()).find("FP4JIT_NO_COMPILE"), std::string::npos);
  }
}

// Threads asking at once for a kernel that is not cached compile it once; the others take that
// binary (shared) or, arriving after it was stored, the cached one.
TEST_F(TempCache, ConcurrentRequestsForOneKernelCompileItOnce) {
  KernelCache cache((dir_ / "cache.db").string());
  ASSERT_TRUE(cache.enabled());
  const std::array<DType, 1> dtypes{DType::bf16};
  const codegen::KernelSource k =
      cuda::recipe_kernels(parse_recipe("nvfp4"), "sm_90a", dtypes).front();
  std::vector<cuda::KernelBinary> got(3);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] { got[t] = cuda::kernel_binary(k, &cache); });
  for (auto& t : threads) t.join();
  int compiled = 0;
  for (const auto& b : got) {
    compiled += !b.from_cache && !b.shared ? 1 : 0;
    EXPECT_EQ(b.cubin, got.front().cubin);
    EXPECT_EQ(b.symbol, got.front().symbol);
  }
  EXPECT_EQ(compiled, 1);
  EXPECT_EQ(cache.list().size(), 1u);
}

TEST(NoGpu, EngineFallsBackAndCudaSaysWhy) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is present";
  try {
    EngineOptions options;
    options.backend = BackendKind::cuda;
    Engine engine(options);
    FAIL() << "Engine(cuda) worked without a GPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::no_gpu);
    EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos) << e.what();
  }
  Engine fallback{EngineOptions{}};
  EXPECT_NE(fallback.backend(), BackendKind::cuda);
}

}  // namespace
}  // namespace fp4jit
