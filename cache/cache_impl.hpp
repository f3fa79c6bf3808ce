// Internals shared by the cache's translation units (cache.cpp: binaries and opening;
// tunings.cpp: tuning rows; bundle.cpp: bundles). Not installed.
#pragma once
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/cache.hpp"
#include "cache/sqlite_handle.hpp"

namespace fp4jit {

// Schema 1: binaries. Schema 2 adds the tuning tables (a v1 file is migrated in place).
constexpr int kCacheSchemaVersion = 2;
constexpr int kCacheApplicationId = 0x46503449;   // "FP4I"
constexpr int kBundleApplicationId = 0x46503442;  // "FP4B"
constexpr int kBundleFormatVersion = 1;

constexpr const char* kBinariesSchema = R"sql(
CREATE TABLE IF NOT EXISTS binaries (
  key_hash       TEXT PRIMARY KEY,
  key_text       TEXT NOT NULL,
  target         TEXT NOT NULL,
  compiler       TEXT NOT NULL,
  options        TEXT NOT NULL,
  templates_hash TEXT NOT NULL,
  source         TEXT NOT NULL,
  symbol         TEXT NOT NULL,
  binary         BLOB NOT NULL,
  binary_sha256  TEXT NOT NULL,
  compile_ms     REAL NOT NULL,
  created_unix   INTEGER NOT NULL
);
)sql";

constexpr const char* kTuningsSchema = R"sql(
CREATE TABLE IF NOT EXISTS tunings (
  key_hash     TEXT PRIMARY KEY,
  gpu_model    TEXT NOT NULL,
  arch         TEXT NOT NULL,
  sm_count     INTEGER NOT NULL,
  driver       TEXT NOT NULL,
  compiler     TEXT NOT NULL,
  kind         TEXT NOT NULL,
  problem      TEXT NOT NULL,
  recipe       TEXT NOT NULL,
  winner       TEXT NOT NULL,
  winner_ms    REAL NOT NULL,
  heuristic    TEXT NOT NULL,
  heuristic_ms REAL NOT NULL,
  work         REAL NOT NULL,
  unit         TEXT NOT NULL,
  created_unix INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tuning_candidates (
  key_hash   TEXT NOT NULL,
  position   INTEGER NOT NULL,
  config     TEXT NOT NULL,
  heuristic  INTEGER NOT NULL,
  status     TEXT NOT NULL,
  reason     TEXT NOT NULL,
  median_ms  REAL NOT NULL,
  noise      REAL NOT NULL,
  repeats    INTEGER NOT NULL,
  compile_ms REAL NOT NULL,
  PRIMARY KEY (key_hash, position)
);
CREATE INDEX IF NOT EXISTS tunings_by_model ON tunings (gpu_model);
)sql";

std::int64_t cache_unix_now();

// Rows of the tuning tables, in any database holding them (the user cache or a bundle). write
// runs inside the caller's transaction; read returns nullopt on a miss and sets *rc to the last
// SQLite code.
bool write_tuning_rows(SqliteDb& db, const TuningRecord& r, std::int64_t created_unix);
std::optional<TuningRecord> read_tuning_rows(SqliteDb& db, const std::string& key_hash, int* rc);
std::vector<TuningRecord> read_all_tunings(SqliteDb& db, const std::string& gpu_model);
std::optional<CacheEntry> read_binary_row(SqliteDb& db, const std::string& key_hash, int* rc,
                                          bool* checksum_failed);

// Runs `body` inside BEGIN IMMEDIATE ... COMMIT, retrying the whole transaction while another
// connection holds the write lock. Returns the SQLite code (SQLITE_OK on commit).
int in_write_transaction(SqliteDb& db, const std::function<bool()>& body);

// A read-only bundle layered under the user database.
struct BundleLayer {
  std::string path;
  SqliteDb db;
};

struct KernelCache::Impl {
  std::string path;
  SqliteDb db;
  bool writable = false;
  std::mutex mutex;
  std::vector<std::unique_ptr<BundleLayer>> bundles;

  void open();
  bool try_open(bool read_only);
  bool check_or_init();
  bool migrate(int from_version);
  void move_aside(std::string_view why, std::string_view suffix);
  void on_error(int code, std::string_view during);
};

}  // namespace fp4jit
