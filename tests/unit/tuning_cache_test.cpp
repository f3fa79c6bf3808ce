// Tuning rows in the kernel cache (with every candidate kept), the schema 1 -> 2 migration,
// processes storing tunings at once, and bundles: export, verify, import, layering, and the
// refusal of tampered, foreign and mismatched bundles.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <set>

#include "cache/bundle.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "tests/temp_dir_test.hpp"

namespace fp4jit {
namespace {

namespace fs = std::filesystem;

DeviceIdentity device(const std::string& model = "NVIDIA H100 80GB HBM3") {
  return DeviceIdentity{model, "sm_90a", 132, "13.0", "nvrtc 13.0"};
}

TuningRecord record(const std::string& problem, const DeviceIdentity& d = device()) {
  TuningRecord r;
  r.key = TuningKey{d, "gemm", problem, "nvfp4 canonical"};
  r.winner = "bn=256,ps=7,es=4,rg=8m,il=0,sk=1";
  r.winner_ms = 1.25;
  r.heuristic = "bn=128,ps=7,es=4,rg=8m,il=0,sk=1";
  r.heuristic_ms = 1.5;
  r.work = 2.0 * 8192 * 4096 * 4096;
  r.unit = "TFLOP/s";
  r.candidates = {{r.heuristic, true, CandidateStatus::ok, "", 1.5, 0.01, 20, 100.0},
                  {r.winner, false, CandidateStatus::ok, "", 1.25, 0.02, 20, 120.0},
                  {"bn=256,ps=9,es=4,rg=8m,il=0,sk=1", false, CandidateStatus::compile_failed,
                   "shared memory 240 KiB > 227 KiB", 0.0, 0.0, 0, 0.0}};
  return r;
}

CacheEntry binary(const std::string& key, const std::string& target = "sm_90a",
                  const std::string& compiler = "nvrtc 13.0") {
  CacheEntry e;
  e.key_text = "op=gemm;key=" + key;
  e.target = target;
  e.compiler = compiler;
  e.options = "-arch=" + target;
  e.templates_hash = "t";
  e.key_hash = make_key_hash(e.key_text, e.target, e.compiler, e.options, e.templates_hash);
  e.source = "stub";
  e.symbol = "_Z1kv";
  e.binary.assign(512, static_cast<std::uint8_t>(key.size()));
  return e;
}

using test_util::sql;

class TuningCacheTest : public test_util::WarningsTest {
 protected:
  TuningCacheTest() : WarningsTest("fp4jit-tuning-cache") {}
  // A cache with two tunings of one model, one of another, and binaries of two compilers.
  void fill(KernelCache& cache) {
    ASSERT_TRUE(cache.put_tuning(record("gemm fprop m<=8192 n=4096 k=4096 out=bf16")));
    ASSERT_TRUE(cache.put_tuning(record("gemm dgrad m<=8192 n=4096 k=4096 out=bf16")));
    ASSERT_TRUE(cache.put_tuning(
        record("gemm fprop m<=8192 n=4096 k=4096 out=bf16", device("NVIDIA A100"))));
    ASSERT_TRUE(cache.put(binary("a")));
    ASSERT_TRUE(cache.put(binary("bb")));
    ASSERT_TRUE(cache.put(binary("old", "sm_90a", "nvrtc 12.8")));
  }
};

TEST_F(TuningCacheTest, StoresEveryCandidateAndReplacesByKey) {
  KernelCache cache(path("c.db"));
  TuningRecord r = record("p");
  ASSERT_TRUE(cache.put_tuning(r));
  auto got = cache.get_tuning(r.key);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->winner, r.winner);
  EXPECT_EQ(got->heuristic_ms, 1.5);
  ASSERT_EQ(got->candidates.size(), 3u);
  EXPECT_TRUE(got->candidates[0].heuristic);
  EXPECT_EQ(got->candidates[2].status, CandidateStatus::compile_failed);
  EXPECT_EQ(got->candidates[2].reason, "shared memory 240 KiB > 227 KiB");
  r.candidates.resize(1);
  r.winner = r.heuristic;
  ASSERT_TRUE(cache.put_tuning(r));
  got = cache.get_tuning(r.key);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->winner, r.heuristic);
  EXPECT_EQ(got->candidates.size(), 1u);
  EXPECT_EQ(cache.list_tunings().size(), 1u);
}

TEST_F(TuningCacheTest, KeyDependsOnEveryField) {
  const TuningKey base = record("p").key;
  std::vector<TuningKey> keys(9, base);
  keys[1].device.gpu_model = "x";
  keys[2].device.arch = "sm_100a";
  keys[3].device.sm_count = 114;
  keys[4].device.driver = "12.9";
  keys[5].device.compiler = "nvrtc 12.9";
  keys[6].kind = "quantize";
  keys[7].problem = "q";
  keys[8].recipe = "mxfp4";
  std::set<std::string> hashes;
  for (const auto& k : keys) hashes.insert(k.hash());
  EXPECT_EQ(hashes.size(), keys.size());
  KernelCache cache(path("c.db"));
  ASSERT_TRUE(cache.put_tuning(record("p")));
  for (std::size_t i = 1; i < keys.size(); ++i) EXPECT_FALSE(cache.get_tuning(keys[i])) << i;
}

TEST_F(TuningCacheTest, SchemaOneIsMigratedKeepingItsBinaries) {
  const CacheEntry e = binary("a");
  {
    KernelCache c(path("c.db"));
    ASSERT_TRUE(c.put(e));
  }
  // Make it a schema 1 file: no tuning tables.
  sql(path("c.db"), "DROP TABLE tuning_candidates; DROP TABLE tunings; PRAGMA user_version = 1;");
  KernelCache cache(path("c.db"));
  ASSERT_TRUE(cache.enabled());
  EXPECT_TRUE(cache.get(e.key_hash));
  EXPECT_TRUE(cache.put_tuning(record("p")));
  EXPECT_TRUE(cache.get_tuning(record("p").key));
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(TuningCacheTest, ProcessesStoringTuningsAtOnceLoseNothing) {
  constexpr int kProcesses = 4, kEach = 40;
  test_util::in_processes(kProcesses, [&](int p) {
    KernelCache cache(path("c.db"));
    int failures = 0;
    for (int i = 0; i < kEach; ++i) {
      if (!cache.put_tuning(record(fmt::format("p{}-{}", p, i)))) ++failures;
      if (!cache.put_tuning(record("shared"))) ++failures;
    }
    return failures;
  });
  KernelCache cache(path("c.db"));
  for (int p = 0; p < kProcesses; ++p)
    for (int i = 0; i < kEach; ++i) {
      const auto r = cache.get_tuning(record(fmt::format("p{}-{}", p, i)).key);
      ASSERT_TRUE(r) << p << "/" << i;
      EXPECT_EQ(r->candidates.size(), 3u);
    }
  const auto shared = cache.get_tuning(record("shared").key);
  ASSERT_TRUE(shared);
  EXPECT_EQ(shared->candidates.size(), 3u);  // one writer's rows, never a mix
  EXPECT_EQ(cache.list_tunings().size(), static_cast<std::size_t>(kProcesses * kEach + 1));
}

TEST_F(TuningCacheTest, ProcessesCreatingOneCacheAtOnceNeverMoveItAside) {
  // Each round: four processes open a cache that does not exist yet; none may take another's
  // half-seen schema for a foreign database.
  for (int round = 0; round < 6; ++round) {
    SCOPED_TRACE(fmt::format("round {}", round));
    const std::string db = path(fmt::format("fresh{}.db", round));
    test_util::in_processes(4, [&](int p) {
      std::atomic<int> warnings{0};
      set_log_sink([&](LogLevel level, std::string_view m) {
        if (level == LogLevel::warning) {
          ++warnings;
          fmt::print(stderr, "opener: {}\n", m);
        }
      });
      KernelCache cache(db);
      const bool ok = cache.enabled() && cache.put_tuning(record(fmt::format("p{}", p)));
      return ok && warnings == 0 ? 0 : 1;
    });
    KernelCache cache(db);
    EXPECT_EQ(cache.list_tunings().size(), 4u) << "round " << round;
  }
}

TEST_F(TuningCacheTest, BundleExportsOneModelAndImportsIntoAFreshCache) {
  KernelCache cache(path("c.db"));
  fill(cache);
  const BundleInfo info = export_bundle(cache, device().gpu_model, path("h100.bundle"), "0.1.0");
  EXPECT_EQ(info.tunings, 2);
  EXPECT_EQ(info.binaries, 2);  // the nvrtc 12.8 binary stays out
  const BundleCheck check = verify_bundle(path("h100.bundle"));
  ASSERT_TRUE(check.ok) << (check.problems.empty() ? "" : check.problems[0]);
  EXPECT_EQ(check.info.device.gpu_model, device().gpu_model);
  EXPECT_EQ(check.info.content_sha256, info.content_sha256);

  KernelCache fresh(path("fresh.db"));
  const DeviceIdentity here = device();
  const ImportCounts n = import_bundle(fresh, path("h100.bundle"), &here);
  EXPECT_EQ(n.tunings, 2);
  EXPECT_EQ(n.binaries, 2);
  EXPECT_TRUE(fresh.get(binary("a").key_hash));
  EXPECT_TRUE(fresh.get_tuning(record("gemm dgrad m<=8192 n=4096 k=4096 out=bf16").key));
  EXPECT_FALSE(fresh.get_tuning(
      record("gemm fprop m<=8192 n=4096 k=4096 out=bf16", device("NVIDIA A100")).key));

  EXPECT_THROW(export_bundle(cache, "NVIDIA B200", path("x.bundle"), "0.1.0"), Error);
}

TEST_F(TuningCacheTest, TamperedBundlesAreRefusedAndNeverLoaded) {
  KernelCache cache(path("c.db"));
  fill(cache);
  export_bundle(cache, device().gpu_model, path("good.bundle"), "0.1.0");
  const auto tampered = [&](const std::string& name, const std::string& statement) {
    fs::copy_file(path("good.bundle"), path(name));
    sql(path(name), statement);
    return path(name);
  };
  const std::string bad_binary =
      tampered("binary.bundle", "UPDATE binaries SET binary = zeroblob(512) WHERE rowid = 1;");
  const std::string bad_tuning =
      tampered("tuning.bundle", "UPDATE tunings SET winner = 'bn=64' WHERE rowid = 1;");
  const std::string bad_meta =
      tampered("meta.bundle", "UPDATE meta SET value = 'NVIDIA H200' WHERE key = 'gpu_model';");
  for (const std::string& p : {bad_binary, bad_tuning, bad_meta}) {
    const BundleCheck c = verify_bundle(p);
    EXPECT_FALSE(c.ok) << p;
    EXPECT_FALSE(c.problems.empty());
  }
  EXPECT_NE(verify_bundle(bad_binary).problems[0].find("SHA-256"), std::string::npos);
  EXPECT_FALSE(verify_bundle(path("c.db")).ok);  // a cache is not a bundle
  EXPECT_FALSE(verify_bundle(path("missing.bundle")).ok);

  KernelCache fresh(path("fresh.db"));
  const DeviceIdentity here = device();
  try {
    import_bundle(fresh, bad_binary, &here);
    FAIL() << "a tampered bundle was imported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("refused"), std::string::npos);
  }
  EXPECT_TRUE(fresh.list().empty());
  EXPECT_TRUE(fresh.list_tunings().empty());

  // Layered: the tampered one and the one for another device are refused, the good one serves.
  const DeviceIdentity a100 = device("NVIDIA A100");
  EXPECT_EQ(fresh.use_bundles(here, {bad_binary, bad_tuning}), 0);
  EXPECT_FALSE(fresh.get(binary("a").key_hash));
  EXPECT_EQ(fresh.use_bundles(a100, {path("good.bundle")}), 0);
  EXPECT_GE(warnings_.size(), 3u);
  EXPECT_NE(warnings_.back().find("another device"), std::string::npos);
  EXPECT_THROW(import_bundle(fresh, path("good.bundle"), &a100), Error);
  EXPECT_EQ(fresh.use_bundles(here, {path("good.bundle")}), 1);
  EXPECT_TRUE(fresh.get(binary("a").key_hash));
  EXPECT_TRUE(fresh.get_tuning(record("gemm fprop m<=8192 n=4096 k=4096 out=bf16").key));
  EXPECT_TRUE(fresh.list().empty());  // layered, not copied
}

}  // namespace
}  // namespace fp4jit
