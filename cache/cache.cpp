// SQLite kernel cache. Failure policy: the cache may miss, but it never fails a caller.
//   * not a database / corrupt page          -> file moved aside ("<path>.corrupt-<time>-<pid>"),
//   rebuilt
//   * a database of another application      -> moved aside (".foreign-..."), rebuilt
//   * written by a newer fp4jit (higher schema) -> left untouched, cache disabled (nothing is lost)
//   * cannot be opened or written at all     -> read-only or disabled, one warning
//   * a row whose binary fails its SHA-256   -> deleted, reported as a miss
#include "cache/cache.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "cache/cache_impl.hpp"
#include "core/log.hpp"
#include "core/sha256.hpp"

namespace fp4jit {

namespace {

bool is_corruption(int code) {
  return code == SQLITE_CORRUPT || code == SQLITE_NOTADB;
}

}  // namespace

std::int64_t cache_unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int in_write_transaction(SqliteDb& db, const std::function<bool()>& body) {
  int rc = SQLITE_BUSY;
  for (int waited = 0, pause = 1; waited < 60000;
       waited += pause, pause = pause < 64 ? pause * 2 : pause) {
    rc = db.exec("BEGIN IMMEDIATE");
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
      sqlite3_sleep(pause);
      continue;
    }
    if (rc != SQLITE_OK) return rc;
    if (!body()) {
      rc = db.last_code();
      db.exec("ROLLBACK");
      if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
        sqlite3_sleep(pause);
        continue;
      }
      return rc == SQLITE_OK ? SQLITE_ERROR : rc;
    }
    rc = db.exec("COMMIT");
    if (rc == SQLITE_OK) return rc;
    db.exec("ROLLBACK");
    if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED) return rc;
    sqlite3_sleep(pause);
  }
  return rc;
}

std::string make_key_hash(const std::string& key_text, const std::string& target,
                          const std::string& compiler, const std::string& options,
                          const std::string& templates_hash) {
  // Length-prefixed fields: no two different field lists hash the same text.
  Sha256 h;
  h.update("fp4jit kernel key v1\n");
  for (const std::string* field : {&key_text, &target, &compiler, &options, &templates_hash})
    h.update(fmt::format("{}:", field->size())).update(*field).update("\n");
  return h.hex_digest();
}

std::string KernelCache::default_path() {
  if (const char* p = std::getenv("FP4JIT_CACHE"); p != nullptr && *p != '\0') return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0')
    return std::string(x) + "/fp4jit/cache.db";
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return std::string(home) + "/.cache/fp4jit/cache.db";
  return fmt::format("/tmp/fp4jit-{}/cache.db", getuid());
}

bool KernelCache::Impl::try_open(bool read_only) {
  db = SqliteDb::open(path, read_only);
  if (!db) return false;
  sqlite3_busy_timeout(db.get(), 30000);
  writable = !read_only;
  return true;
}

void KernelCache::Impl::move_aside(std::string_view why, std::string_view suffix) {
  db = SqliteDb();
  const std::string aside = fmt::format("{}.{}-{}-{}", path, suffix, cache_unix_now(), getpid());
  std::error_code ec;
  std::filesystem::rename(path, aside, ec);
  for (const char* extra : {"-wal", "-shm"}) std::filesystem::remove(path + extra, ec);
  warn("kernel cache {}: {}; moved aside to {} and rebuilt", path, why, aside);
}

// Checks the application id and schema version; creates the schema in a fresh file. Returns
// false when the cache must not be used (newer schema).
bool KernelCache::Impl::check_or_init() {
  for (int attempt = 0; attempt < 2; ++attempt) {
    // One read snapshot: another process may be creating the schema at this moment, and the id,
    // version and tables must be seen from the same side of its commit.
    int app_id = 0, version = 0, tables = 0, ours = 0;
    db.exec("BEGIN");
    int rc = db.query_int("PRAGMA application_id", &app_id);
    if (rc == SQLITE_OK) rc = db.query_int("PRAGMA user_version", &version);
    if (rc == SQLITE_OK)
      rc = db.query_int("SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'",
                        &tables);
    if (rc == SQLITE_OK)
      rc = db.query_int(
          "SELECT count(*) FROM sqlite_master WHERE name IN ('binaries', 'tunings', "
          "'tuning_candidates', 'tunings_by_model')",
          &ours);
    const int code = rc == SQLITE_OK ? SQLITE_OK : db.last_code();
    db.exec("COMMIT");
    if (rc != SQLITE_OK) {
      if (!is_corruption(code) && !is_corruption(rc)) return false;
      move_aside("not a valid SQLite database", "corrupt");
      if (!try_open(false)) return false;
      continue;
    }
    if (app_id == kCacheApplicationId && version == kCacheSchemaVersion) return true;
    if (app_id == kCacheApplicationId && version >= 1 && version < kCacheSchemaVersion)
      return migrate(version);
    if (app_id == kCacheApplicationId && version > kCacheSchemaVersion) {
      warn(
          "kernel cache {} was written by a newer fp4jit (schema {} > {}); caching disabled, file "
          "left as is",
          path, version, kCacheSchemaVersion);
      return false;
    }
    if (tables > 0 && app_id != kCacheApplicationId && app_id != 0) {
      move_aside("a database of another application", "foreign");
      if (!try_open(false)) return false;
      continue;
    }
    if (tables > 0 && app_id == 0) {
      // Tables but no id: another program's database (our own schema is created atomically
      // with its id).
      if (ours == 0 || tables != ours) {
        move_aside("a database of another application", "foreign");
        if (!try_open(false)) return false;
        continue;
      }
    }
    if (!writable) return false;
    // Fresh (or half-initialised) database: create the schema once, whoever comes first.
    const std::string init = fmt::format(
        "BEGIN IMMEDIATE; {} {} PRAGMA application_id = {}; PRAGMA user_version = {}; COMMIT;",
        kBinariesSchema, kTuningsSchema, kCacheApplicationId, kCacheSchemaVersion);
    if (db.exec(init) != SQLITE_OK) {
      db.exec("ROLLBACK");
      warn("kernel cache {}: cannot create its schema ({}); caching disabled", path,
           db.last_message());
      return false;
    }
    return true;
  }
  return false;
}

// Schema 1 -> 2: the tuning tables are added; binaries stay as they are. Whoever takes the write
// lock first migrates; the others find the new version inside their transaction.
bool KernelCache::Impl::migrate(int from_version) {
  if (!writable) {
    debug("kernel cache {}: schema {} opened read-only; tunings unavailable", path, from_version);
    return true;
  }
  const int rc = in_write_transaction(db, [&] {
    int now = 0;
    if (db.query_int("PRAGMA user_version", &now) != SQLITE_OK) return false;
    if (now >= kCacheSchemaVersion) return true;
    return db.exec(kTuningsSchema) == SQLITE_OK &&
           db.exec(fmt::format("PRAGMA user_version = {}", kCacheSchemaVersion)) == SQLITE_OK;
  });
  if (rc != SQLITE_OK) {
    warn("kernel cache {}: cannot migrate schema {} to {} ({}); caching disabled", path,
         from_version, kCacheSchemaVersion, db.last_message());
    return false;
  }
  debug("kernel cache {}: migrated schema {} to {}", path, from_version, kCacheSchemaVersion);
  return true;
}

void KernelCache::Impl::open() {
  std::error_code ec;
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (!try_open(false) && !try_open(true)) {
    warn("kernel cache {}: cannot be opened; caching disabled", path);
    return;
  }
  if (!check_or_init()) {
    db = SqliteDb();
    return;
  }
  if (writable && db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;") != SQLITE_OK) {
    // WAL needs a writable folder; the cache still works in rollback-journal mode.
    debug("kernel cache {}: WAL unavailable ({})", path, db.last_message());
  }
}

void KernelCache::Impl::on_error(int code, std::string_view during) {
  if (is_corruption(code)) {
    move_aside(fmt::format("corrupt ({} failed: {})", during, db.last_message()), "corrupt");
    if (try_open(false) && check_or_init()) return;
    db = SqliteDb();
    return;
  }
  warn("kernel cache {}: {} failed: {}", path, during, db.last_message());
}

KernelCache::KernelCache(std::string path) : impl_(std::make_unique<Impl>()) {
  impl_->path = std::move(path);
  impl_->open();
}

KernelCache::~KernelCache() = default;

bool KernelCache::enabled() const {
  return static_cast<bool>(impl_->db);
}
const std::string& KernelCache::path() const {
  return impl_->path;
}

std::optional<CacheEntry> read_binary_row(SqliteDb& db, const std::string& key_hash, int* rc,
                                          bool* checksum_failed) {
  *checksum_failed = false;
  SqliteStmt st = db.prepare(
      "SELECT key_text, target, compiler, options, templates_hash, source, symbol, binary, "
      "binary_sha256, "
      "compile_ms, created_unix FROM binaries WHERE key_hash = ?1");
  if (!st) {
    *rc = db.last_code();
    return std::nullopt;
  }
  st.bind_text(1, key_hash);
  *rc = st.step_retrying();
  if (*rc != SQLITE_ROW) return std::nullopt;
  CacheEntry e;
  e.key_hash = key_hash;
  e.key_text = st.column_text(0);
  e.target = st.column_text(1);
  e.compiler = st.column_text(2);
  e.options = st.column_text(3);
  e.templates_hash = st.column_text(4);
  e.source = st.column_text(5);
  e.symbol = st.column_text(6);
  e.binary = st.column_blob(7);
  e.binary_size = static_cast<std::int64_t>(e.binary.size());
  const std::string stored_sha = st.column_text(8);
  e.compile_ms = st.column_double(9);
  e.created_unix = st.column_int64(10);
  if (sha256_hex(e.binary) != stored_sha) {
    *checksum_failed = true;
    return std::nullopt;
  }
  return e;
}

std::optional<CacheEntry> KernelCache::get(const std::string& key_hash) {
  std::lock_guard lock(impl_->mutex);
  if (impl_->db) {
    int rc = SQLITE_OK;
    bool bad = false;
    std::optional<CacheEntry> e = read_binary_row(impl_->db, key_hash, &rc, &bad);
    if (e) return e;
    if (bad) {
      warn("kernel cache {}: entry {} failed its checksum; removed (it will be recompiled)",
           impl_->path, key_hash);
      if (impl_->writable) {
        SqliteStmt del = impl_->db.prepare("DELETE FROM binaries WHERE key_hash = ?1");
        if (del) {
          del.bind_text(1, key_hash);
          del.step();
        }
      }
    } else if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
      impl_->on_error(rc, "lookup");
    }
  }
  for (const auto& layer : impl_->bundles) {
    int rc = SQLITE_OK;
    bool bad = false;
    if (std::optional<CacheEntry> e = read_binary_row(layer->db, key_hash, &rc, &bad)) return e;
    if (bad) warn("bundle {}: entry {} failed its checksum; not used", layer->path, key_hash);
  }
  return std::nullopt;
}

bool KernelCache::put(const CacheEntry& entry) {
  std::lock_guard lock(impl_->mutex);
  if (!impl_->db || !impl_->writable) return false;
  SqliteStmt st = impl_->db.prepare(
      "INSERT OR REPLACE INTO binaries (key_hash, key_text, target, compiler, options, "
      "templates_hash, source, "
      "symbol, binary, binary_sha256, compile_ms, created_unix) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
      "?7, ?8, ?9, ?10, "
      "?11, ?12)");
  if (!st) {
    impl_->on_error(impl_->db.last_code(), "store");
    return false;
  }
  st.bind_text(1, entry.key_hash);
  st.bind_text(2, entry.key_text);
  st.bind_text(3, entry.target);
  st.bind_text(4, entry.compiler);
  st.bind_text(5, entry.options);
  st.bind_text(6, entry.templates_hash);
  st.bind_text(7, entry.source);
  st.bind_text(8, entry.symbol);
  st.bind_blob(9, entry.binary);
  st.bind_text(10, sha256_hex(entry.binary));
  st.bind_double(11, entry.compile_ms);
  st.bind_int64(12, cache_unix_now());
  const int rc = st.step_retrying();
  if (rc != SQLITE_DONE) {
    impl_->on_error(rc, "store");
    return false;
  }
  return true;
}

std::vector<CacheEntry> KernelCache::list() {
  std::lock_guard lock(impl_->mutex);
  std::vector<CacheEntry> out;
  if (!impl_->db) return out;
  SqliteStmt st = impl_->db.prepare(
      "SELECT key_hash, key_text, target, compiler, options, templates_hash, symbol, "
      "length(binary), compile_ms, "
      "created_unix FROM binaries ORDER BY created_unix DESC, key_hash");
  if (!st) {
    impl_->on_error(impl_->db.last_code(), "listing");
    return out;
  }
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) {
    CacheEntry e;
    e.key_hash = st.column_text(0);
    e.key_text = st.column_text(1);
    e.target = st.column_text(2);
    e.compiler = st.column_text(3);
    e.options = st.column_text(4);
    e.templates_hash = st.column_text(5);
    e.symbol = st.column_text(6);
    e.binary_size = st.column_int64(7);
    e.compile_ms = st.column_double(8);
    e.created_unix = st.column_int64(9);
    out.push_back(std::move(e));
  }
  if (rc != SQLITE_DONE) impl_->on_error(rc, "listing");
  return out;
}

std::int64_t KernelCache::clear() {
  std::lock_guard lock(impl_->mutex);
  if (!impl_->db || !impl_->writable) return 0;
  if (impl_->db.exec("DELETE FROM binaries") != SQLITE_OK) {
    impl_->on_error(impl_->db.last_code(), "clear");
    return 0;
  }
  const std::int64_t removed = sqlite3_changes(impl_->db.get());
  impl_->db.exec("DELETE FROM tunings; DELETE FROM tuning_candidates;");
  return removed;
}

}  // namespace fp4jit
