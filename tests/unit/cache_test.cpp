// Kernel cache behaviour: hit, miss, persistence, corrupt / foreign / newer databases, tampered
// rows, an unusable location, and several processes writing at once. A cache problem must never
// throw.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cache/cache.hpp"
#include "core/log.hpp"
#include "tests/temp_dir_test.hpp"

namespace fp4jit {
namespace {

namespace fs = std::filesystem;

class CacheTest : public test_util::WarningsTest {
 protected:
  CacheTest() : WarningsTest("fp4jit-cache-test") {}
  std::string db_path() const { return (dir_ / "cache.db").string(); }
  std::vector<std::string> files_starting(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_))
      if (e.path().filename().string().rfind(prefix, 0) == 0)
        out.push_back(e.path().filename().string());
    return out;
  }
  static CacheEntry entry(const std::string& key, std::uint8_t fill = 7) {
    CacheEntry e;
    e.key_text = "op=quantize;key=" + key;
    e.target = "sm_90a";
    e.compiler = "nvrtc 13.0";
    e.options = "-arch=sm_90a";
    e.templates_hash = "t";
    e.key_hash = make_key_hash(e.key_text, e.target, e.compiler, e.options, e.templates_hash);
    e.source = "#include <x>";
    e.symbol = "_Z6kernelv";
    e.binary.assign(1000, fill);
    e.compile_ms = 12.5;
    return e;
  }
};

using test_util::sql;

TEST_F(CacheTest, MissThenHitThenPersistsAcrossOpens) {
  const CacheEntry e = entry("a");
  {
    KernelCache cache(db_path());
    ASSERT_TRUE(cache.enabled());
    EXPECT_FALSE(cache.get(e.key_hash).has_value());
    ASSERT_TRUE(cache.put(e));
    const auto got = cache.get(e.key_hash);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->binary, e.binary);
    EXPECT_EQ(got->symbol, e.symbol);
    EXPECT_EQ(got->source, e.source);
    EXPECT_EQ(got->binary_size, 1000);
  }
  KernelCache reopened(db_path());
  const auto got = reopened.get(e.key_hash);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->key_text, e.key_text);
  EXPECT_DOUBLE_EQ(got->compile_ms, 12.5);
  const auto listed = reopened.list();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_TRUE(listed[0].binary.empty());
  EXPECT_EQ(listed[0].binary_size, 1000);
  EXPECT_EQ(reopened.clear(), 1);
  EXPECT_FALSE(reopened.get(e.key_hash).has_value());
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(CacheTest, KeyHashDependsOnEveryField) {
  const std::string base = make_key_hash("k", "sm_90a", "nvrtc 13.0", "-O3", "t");
  EXPECT_EQ(base.size(), 64u);
  EXPECT_EQ(base, make_key_hash("k", "sm_90a", "nvrtc 13.0", "-O3", "t"));
  EXPECT_NE(base, make_key_hash("k2", "sm_90a", "nvrtc 13.0", "-O3", "t"));
  EXPECT_NE(base, make_key_hash("k", "sm_100a", "nvrtc 13.0", "-O3", "t"));
  EXPECT_NE(base, make_key_hash("k", "sm_90a", "nvrtc 13.1", "-O3", "t"));
  EXPECT_NE(base, make_key_hash("k", "sm_90a", "nvrtc 13.0", "-O2", "t"));
  EXPECT_NE(base, make_key_hash("k", "sm_90a", "nvrtc 13.0", "-O3", "u"));
  // Field boundaries matter: moving text from one field to the next changes the hash.
  EXPECT_NE(make_key_hash("ab", "c", "", "", ""), make_key_hash("a", "bc", "", "", ""));
}

TEST_F(CacheTest, GarbageFileIsMovedAsideAndRebuilt) {
  {
    std::ofstream(db_path()) << "this is not a database, just some text that is long enough......";
  }
  KernelCache cache(db_path());
  ASSERT_TRUE(cache.enabled());
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("moved aside"), std::string::npos) << warnings_[0];
  EXPECT_EQ(files_starting("cache.db.corrupt-").size(), 1u);
  EXPECT_TRUE(cache.put(entry("a")));
  EXPECT_TRUE(cache.get(entry("a").key_hash).has_value());
}

TEST_F(CacheTest, ForeignDatabaseIsMovedAside) {
  sql(db_path(),
      "CREATE TABLE photos (id INTEGER, name TEXT); INSERT INTO photos VALUES (1, 'x');");
  KernelCache cache(db_path());
  ASSERT_TRUE(cache.enabled());
  EXPECT_EQ(files_starting("cache.db.foreign-").size(), 1u);
  ASSERT_FALSE(warnings_.empty());
  EXPECT_NE(warnings_[0].find("another application"), std::string::npos);
  EXPECT_TRUE(cache.put(entry("a")));
}

TEST_F(CacheTest, NewerSchemaIsLeftUntouchedAndDisabled) {
  {
    KernelCache init(db_path());
    ASSERT_TRUE(init.put(entry("a")));
  }
  sql(db_path(), "PRAGMA user_version = 99;");
  KernelCache cache(db_path());
  EXPECT_FALSE(cache.enabled());
  EXPECT_FALSE(cache.get(entry("a").key_hash).has_value());
  EXPECT_FALSE(cache.put(entry("b")));
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("newer"), std::string::npos);
  EXPECT_TRUE(files_starting("cache.db.").empty());  // nothing moved aside
  sql(db_path(), "PRAGMA user_version = 1;");        // the data is still there
  KernelCache again(db_path());
  EXPECT_TRUE(again.get(entry("a").key_hash).has_value());
}

TEST_F(CacheTest, TamperedBinaryIsAMissAndIsRemoved) {
  const CacheEntry e = entry("a");
  {
    KernelCache cache(db_path());
    ASSERT_TRUE(cache.put(e));
  }
  sql(db_path(), "UPDATE binaries SET binary = zeroblob(1000);");
  KernelCache cache(db_path());
  EXPECT_FALSE(cache.get(e.key_hash).has_value());
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("checksum"), std::string::npos);
  EXPECT_TRUE(cache.list().empty());
}

TEST_F(CacheTest, CorruptPagesFoundLaterAreRecoveredWithoutThrowing) {
  {
    KernelCache cache(db_path());
    for (int i = 0; i < 50; ++i)
      ASSERT_TRUE(cache.put(entry(std::to_string(i), static_cast<std::uint8_t>(i))));
  }
  {  // Checkpoint the WAL so the data is in the main file, then scribble over its interior pages.
    sql(db_path(), "PRAGMA wal_checkpoint(TRUNCATE);");
    std::fstream f(db_path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8192);
    const std::string junk(20000, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  KernelCache cache(db_path());
  for (int i = 0; i < 50; ++i)
    (void)cache.get(entry(std::to_string(i)).key_hash);  // misses, never throws
  (void)cache.list();
  EXPECT_TRUE(cache.put(entry("new")));
  EXPECT_TRUE(cache.get(entry("new").key_hash).has_value());
  EXPECT_FALSE(warnings_.empty());
}

TEST_F(CacheTest, UnusableLocationDisablesTheCache) {
  KernelCache cache("/proc/fp4jit-no-such-place/cache.db");
  EXPECT_FALSE(cache.enabled());
  EXPECT_FALSE(cache.get(entry("a").key_hash).has_value());
  EXPECT_FALSE(cache.put(entry("a")));
  EXPECT_FALSE(warnings_.empty());
}

TEST_F(CacheTest, ProcessesWritingAtOnceLoseNothing) {
  constexpr int kProcesses = 4, kEach = 150;
  // A failure is reported on stderr with the warning that explains it.
  test_util::in_processes(kProcesses, [&](int p) {
    int failures = 0;
    KernelCache cache(db_path());
    for (int i = 0; i < kEach; ++i) {
      if (!cache.put(entry(fmt::format("p{}-{}", p, i), static_cast<std::uint8_t>(p)))) ++failures;
      if (!cache.put(entry("shared", static_cast<std::uint8_t>(p)))) ++failures;  // same key
      if (!cache.get(entry(fmt::format("p{}-{}", p, i)).key_hash)) ++failures;
    }
    return failures;
  });
  KernelCache cache(db_path());
  for (int p = 0; p < kProcesses; ++p)
    for (int i = 0; i < kEach; ++i)
      ASSERT_TRUE(cache.get(entry(fmt::format("p{}-{}", p, i)).key_hash).has_value())
          << p << "/" << i;
  EXPECT_EQ(cache.list().size(), static_cast<std::size_t>(kProcesses * kEach + 1));
  EXPECT_TRUE(warnings_.empty());
}

}  // namespace
}  // namespace fp4jit
