// The kernel cache across processes: a second process, with FP4JIT_NO_COMPILE=1, gets every host
// kernel of every preset from the cache a first process filled, and computes the same bytes.
// The child is this test binary, re-run on the HostCacheChild tests with FP4JIT_HOST_CACHE_CHILD
// naming the cache.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "fp4jit/engine.hpp"
#include "runtime/host_tensor.hpp"
#include "tests/host/host_test_util.hpp"

namespace fp4jit::host::test {
namespace {

// Runs quantize, dequantize, gemm and dge of every preset and operand; returns a digest of every
// output byte.
HostBackendOptions with_cache(const std::string& path) {
  HostBackendOptions o;
  o.cache_path = path;
  return o;
}

std::string run_everything(HostBackend& b) {
  std::string digest;
  for (const auto& p : presets()) {
    const Recipe recipe = parse_recipe(p.name);
    std::map<Role, std::unique_ptr<Buffers>> q;
    for (Role role : kAllRoles) {
      const auto [sr, sc] = source_shape(role, 64, 96);
      HostTensor t = make_tensor(random_matrix(sr, sc, 3), DType::bf16);
      auto out = std::make_unique<Buffers>(quant_layout(recipe, role, sr, sc));
      b.quantize(recipe, role, t.view(), out->view(), {.seed = 1}, nullptr);
      std::vector<float> deq(static_cast<std::size_t>(out->layout.rows * out->layout.cols));
      b.dequantize(recipe, role, out->view(), sr, sc,
                   {deq.data(), DType::f32, out->layout.rows, out->layout.cols, 0}, nullptr);
      digest.append(reinterpret_cast<const char*>(out->codes.data()), out->codes.size());
      digest.append(reinterpret_cast<const char*>(deq.data()), deq.size() * sizeof(float));
      q[role] = std::move(out);
    }
    for (const auto& [a, bb] : {std::pair{Role::x, Role::w}, std::pair{Role::dy, Role::wt},
                                std::pair{Role::dyt, Role::xt}}) {
      std::vector<float> c(64 * 64);
      b.gemm(recipe, {a, q[a]->layout, q[a]->view()}, {bb, q[bb]->layout, q[bb]->view()}, c.data(),
             64);
      digest.append(reinterpret_cast<const char*>(c.data()), c.size() * sizeof(float));
    }
    if (recipe[Role::w].dge) {
      HostTensor w = make_tensor(random_matrix(64, 96, 4), DType::f32);
      std::vector<float> f(64 * 96);
      b.dge(recipe, w.view(), {f.data(), DType::f32, 64, 96, 0}, nullptr);
      digest.append(reinterpret_cast<const char*>(f.data()), f.size() * sizeof(float));
    }
  }
  return sha256_hex(digest);
}

TEST(HostCache, SecondProcessGetsEveryKernelWithoutCompiling) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("fp4jit_host_cache_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string db = (dir / "cache.db").string();
  std::string digest;
  {
    HostBackend first(with_cache(db));
    digest = run_everything(first);
    EXPECT_GT(first.kernels().stats().compiled, 0);
  }
  std::ofstream((dir / "digest").string()) << digest;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string cmd = "FP4JIT_NO_COMPILE=1 FP4JIT_HOST_CACHE_CHILD='" + dir.string() + "' '" +
                          self + "' --gtest_filter='HostCacheChild.*' > '" +
                          (dir / "child.log").string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream log((dir / "child.log").string());
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("[  PASSED  ] 1 test"), std::string::npos) << text;
  std::filesystem::remove_all(dir);
}

TEST(HostCacheChild, LoadsEverythingFromTheCache) {
  const char* dir = std::getenv("FP4JIT_HOST_CACHE_CHILD");
  if (dir == nullptr)
    GTEST_SKIP() << "run by HostCache.SecondProcessGetsEveryKernelWithoutCompiling";
  HostBackend second(with_cache(std::string(dir) + "/cache.db"));
  const std::string digest = run_everything(second);
  std::ifstream in(std::string(dir) + "/digest");
  std::string expected;
  in >> expected;
  EXPECT_EQ(digest, expected);
  EXPECT_EQ(second.kernels().stats().compiled, 0);
  EXPECT_GT(second.kernels().stats().cache_hits, 0);
}

TEST(HostCache, NoCompileWithAnEmptyCacheIsAnError) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("fp4jit_host_empty_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ::setenv("FP4JIT_NO_COMPILE", "1", 1);
  {
    HostBackend b(with_cache((dir / "cache.db").string()));
    const Recipe recipe = parse_recipe("mxfp4");
    HostTensor t = make_tensor(random_matrix(4, 32, 1), DType::f32);
    Buffers out(quant_layout(recipe, Role::x, 4, 32));
    try {
      b.quantize(recipe, Role::x, t.view(), out.view(), {}, nullptr);
      ADD_FAILURE() << "expected Error(compile)";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::compile);
      EXPECT_NE(std::string(e.what()).find("FP4JIT_NO_COMPILE"), std::string::npos) << e.what();
    }
  }
  ::unsetenv("FP4JIT_NO_COMPILE");
  std::filesystem::remove_all(dir);
}

TEST(HostEngine, EngineRunsTheHostBackend) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("fp4jit_host_engine_" + std::to_string(::getpid()));
  EngineOptions o;
  o.backend = BackendKind::host;
  o.cache_path = (dir / "cache.db").string();
  Engine engine(o);
  EXPECT_EQ(engine.backend(), BackendKind::host);
  EXPECT_NE(engine.description().find("host"), std::string::npos);
  const Recipe recipe = parse_recipe("nvfp4");
  const Matrix<float> x = random_matrix(32, 64, 5);
  HostTensor t = make_tensor(x, DType::f32);
  const QuantizedTensor ref = reference::quantize(recipe, Role::x, x);
  Buffers out(ref.layout);
  engine.quantize(recipe, Role::x, t.view(), out.view());
  EXPECT_EQ(compare(ref, out), "");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fp4jit::host::test

namespace fp4jit::host::test {
namespace {

TEST(HostCache, PrecompileFillsTheCacheForALaterProcess) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("fp4jit_host_pre_" + std::to_string(::getpid()));
  const std::string db = (dir / "cache.db").string();
  const DType dtypes[] = {DType::bf16};
  for (const char* text : {"msfp4", "tetrajet"}) {
    HostBackend first(with_cache(db));
    EXPECT_GT(first.precompile(parse_recipe(text), dtypes), 0) << text;
    HostBackend second(with_cache(db));
    EXPECT_EQ(second.precompile(parse_recipe(text), dtypes), 0) << text;
    // and the ops then find every kernel (NO_COMPILE would fail otherwise)
    ::setenv("FP4JIT_NO_COMPILE", "1", 1);
    HostBackend third(with_cache(db));
    const Recipe recipe = parse_recipe(text);
    for (Role role : kAllRoles) {
      const auto [sr, sc] = source_shape(role, 64, 64);
      HostTensor t = make_tensor(random_matrix(sr, sc, 1), DType::bf16);
      Buffers out(quant_layout(recipe, role, sr, sc));
      EXPECT_NO_THROW(third.quantize(recipe, role, t.view(), out.view(), {}, nullptr))
          << text << " " << name(role);
    }
    ::unsetenv("FP4JIT_NO_COMPILE");
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fp4jit::host::test
