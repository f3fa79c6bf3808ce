// The tuner end to end on the host backend: candidates pruned and compiled, each verified against
// the reference and timed, the winner chosen and stored with every candidate in the cache, and
// Engine then running the tuned config (a GEMM and a quantize); resumable lookups by M bucket.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "cache/cache.hpp"
#include "runtime/tuning_keys.hpp"
#include "tests/temp_dir_test.hpp"
#include "tuner/gemm_check.hpp"
#include "tuner/host_jobs.hpp"
#include "tuner/host_space.hpp"
#include "tuner/operand_buffers.hpp"

namespace fp4jit::tuner {
namespace {

namespace fs = std::filesystem;

class TunerHost : public test_util::TempDirTest {
 protected:
  TunerHost() : TempDirTest("fp4jit-tuner-host") {}
  std::string db() const { return (dir_ / "cache.db").string(); }
  static TuneOptions quick() {
    TuneOptions o;
    o.max_candidates = 4;
    o.compile_threads = 2;
    o.timing.warmup = 1;
    o.timing.min_repeats = 3;
    o.timing.max_repeats = 3;
    return o;
  }
};

bool cache_has_kernel_with(KernelCache& cache, const std::string& text) {
  for (const CacheEntry& e : cache.list())
    if (e.key_text.find(text) != std::string::npos) return true;
  return false;
}

TEST_F(TunerHost, GemmTunedVerifiedStoredAndUsedByEngine) {
  const Recipe recipe = parse_recipe("nvfp4");
  const GemmShape shape{40, 64, 128};
  TuningRecord record;
  {
    host::HostBackendOptions ho;
    ho.cache_path = db();
    host::HostBackend backend(ho);
    auto job = host_gemm_job(backend, recipe, GemmOp::dgrad, shape);
    TuneOptions o = quick();
    o.overlap = true;  // compile on the pool while measuring
    record = tune(*job, o);
    EXPECT_EQ(record.key.problem, "gemm dgrad m<=64 n=64 k=128");
    EXPECT_EQ(record.key.device.arch, backend.kernels().target().name);
    int ok = 0, pruned = 0;
    for (const CandidateResult& c : record.candidates) {
      ok += c.status == CandidateStatus::ok;
      pruned += c.status == CandidateStatus::pruned;
      if (c.status == CandidateStatus::ok) {
        EXPECT_GT(c.median_ms, 0.0);
      }
    }
    EXPECT_EQ(ok, 4) << "every real kernel matches the reference";
    EXPECT_GT(pruned, 0);
    EXPECT_EQ(record.candidates.front().config, backend.config().gemm_tuned_text());
    EXPECT_TRUE(record.candidates.front().heuristic);
    EXPECT_GT(record.heuristic_ms, 0.0);
    KernelCache cache(db());
    ASSERT_TRUE(cache.put_tuning(record));
  }
  // A fresh Engine on that cache runs a config nobody measured when the cache says so, for any M
  // of the bucket, and its result is still right.
  TuningRecord forced = record;
  forced.winner = "vw=4,mr=2,nr=8,kc=64,mc=6";
  {
    KernelCache cache(db());
    ASSERT_TRUE(cache.put_tuning(forced));
    EXPECT_FALSE(cache_has_kernel_with(cache, "config=" + forced.winner));
  }
  EngineOptions eo;
  eo.backend = BackendKind::host;
  eo.cache_path = db();
  Engine engine(eo);
  const GemmShape other_m{57, 64, 128};  // same bucket (m <= 64)
  const GemmLayouts l = gemm_layouts(recipe, GemmOp::dgrad, other_m);
  OperandBuffers a(l.a, false), b(l.b, false);
  const OperandShape sa = gemm_source_shape(Role::dy, other_m.m, other_m.k);
  const OperandShape sb = gemm_source_shape(Role::wt, other_m.n, other_m.k);
  std::vector<std::uint8_t> xa = random_source(sa.rows, sa.cols, DType::bf16, 1);
  std::vector<std::uint8_t> xb = random_source(sb.rows, sb.cols, DType::bf16, 2);
  engine.quantize(recipe, Role::dy, TensorView{xa.data(), DType::bf16, sa.rows, sa.cols, 0},
                  a.view());
  engine.quantize(recipe, Role::wt, TensorView{xb.data(), DType::bf16, sb.rows, sb.cols, 0},
                  b.view());
  std::vector<float> c(static_cast<std::size_t>(other_m.m * other_m.n));
  engine.gemm(recipe, GemmOp::dgrad, a.view(), b.view(), other_m,
              TensorView{c.data(), DType::f32, other_m.m, other_m.n, 0});
  KernelCache cache(db());
  EXPECT_TRUE(cache_has_kernel_with(cache, "config=" + forced.winner));
  const GemmReference ref(recipe, GemmOp::dgrad, other_m, a.view(), b.view());
  EXPECT_EQ(ref.check(c.data(), other_m.n, 1e-5), std::nullopt);
}

TEST_F(TunerHost, QuantizeTunedByteExactAndUsedByEngine) {
  const Recipe recipe = parse_recipe("mxfp4");
  host::HostBackendOptions ho;
  ho.cache_path = db();
  auto backend = std::make_unique<host::HostBackend>(ho);
  auto job = host_quantize_job(*backend, recipe, Role::xt, 96, 128, DType::bf16);
  TuneOptions o = quick();
  o.overlap = false;
  TuningRecord r = tune(*job, o);
  EXPECT_EQ(r.unit, "GB/s");
  for (const CandidateResult& c : r.candidates)
    EXPECT_TRUE(c.status == CandidateStatus::ok || c.status == CandidateStatus::pruned)
        << c.config << ": " << c.reason;
  r.winner = "vw=4,band=8,unroll=2";  // force a distinctive config to see it used
  {
    KernelCache cache(db());
    ASSERT_TRUE(cache.put_tuning(r));
  }
  backend = std::make_unique<host::HostBackend>(ho);
  const TensorView in{nullptr, DType::bf16, 100, 128, 0};  // rows 100: same bucket as 96
  const host::HostConfig cfg = backend->quantize_config_for(recipe, Role::xt, in);
  EXPECT_EQ(cfg.text(), r.winner);
  // Engine's quantize takes it: the kernel of that config is built, and the bytes still match the
  // reference backend's.
  {
    KernelCache cache(db());
    EXPECT_FALSE(cache_has_kernel_with(cache, "config=" + r.winner));
  }
  const std::vector<std::uint8_t> x = random_source(128, 128, DType::bf16, 3);  // bucket of 96
  const TensorView xv{const_cast<std::uint8_t*>(x.data()), DType::bf16, 128, 128, 0};
  const QuantLayout l = quant_layout(recipe, Role::xt, 128, 128);
  OperandBuffers got(l, false), want(l, false);
  EngineOptions eo;
  eo.backend = BackendKind::host;
  eo.cache_path = db();
  Engine(eo).quantize(recipe, Role::xt, xv, got.view());
  eo.backend = BackendKind::reference;
  Engine(eo).quantize(recipe, Role::xt, xv, want.view());
  EXPECT_TRUE(got.same_as(want));
  {
    KernelCache cache(db());
    EXPECT_TRUE(cache_has_kernel_with(cache, "config=" + r.winner));
  }
  const host::HostConfig untuned =
      backend->quantize_config_for(recipe, Role::xt, TensorView{nullptr, DType::bf16, 200, 128, 0});
  EXPECT_EQ(untuned.text(), backend->config().text());
}

TEST_F(TunerHost, SpacePrunesAndHoldsTaskGranularity) {
  host::HostConfig base;
  base.vector_width = 8;
  base.gemm_mr = 4;
  base.gemm_nr = 16;
  base.gemm_mc = 64;
  std::vector<CandidateResult> pruned;
  const auto space = host_gemm_space(base, 256, 4096, 4096, 4096, &pruned);
  EXPECT_EQ(space.front().candidate.config, base.gemm_tuned_text());
  bool np = false;
  for (const auto& c : space) {
    EXPECT_NO_THROW(c.config.validate());
    const int nv = c.config.gemm_nr / c.config.vector_width;
    EXPECT_LE(c.config.gemm_mr * nv + nv + 1, 16) << c.candidate.config;
    np = np || c.config.gemm_np > 0;
  }
  EXPECT_TRUE(np);
  bool registers = false;
  for (const auto& p : pruned)
    registers = registers || p.reason.find("registers") != std::string::npos;
  EXPECT_TRUE(registers);
  // A small problem keeps one of each block size that covers it.
  std::vector<CandidateResult> small_pruned;
  const auto small = host_gemm_space(base, 256, 8, 16, 32, &small_pruned);
  EXPECT_LT(small.size(), space.size());
}

TEST_F(TunerHost, EngineFallsBackWhenTheStoredConfigIsUnusable) {
  const Recipe recipe = parse_recipe("nvfp4");
  host::HostBackendOptions ho;
  ho.cache_path = db();
  host::HostBackend backend(ho);
  TuningRecord r;
  r.key = gemm_tuning_key(backend.identity(), recipe, GemmOp::fprop, {64, 64, 64}, "");
  r.winner = "mr=99";
  {
    KernelCache cache(db());
    ASSERT_TRUE(cache.put_tuning(r));
  }
  host::HostBackend fresh(ho);
  EXPECT_EQ(fresh.gemm_config_for(recipe, GemmOp::fprop, {64, 64, 64}).gemm_text(),
            fresh.config().gemm_text());
}

}  // namespace
}  // namespace fp4jit::tuner
