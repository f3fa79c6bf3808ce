// Bundle files: export from the user cache, verification, import, and layering under the cache.
#include "cache/bundle.hpp"

#include <sqlite3.h>

#include <filesystem>
#include <map>
#include <set>

#include "cache/cache_impl.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/sha256.hpp"

namespace fp4jit {

struct CacheAccess {
  static KernelCache::Impl& impl(KernelCache& c) { return *c.impl_; }
};

namespace {

constexpr const char* kMetaSchema =
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);";

// SHA-256 over every row of the bundle's tables in key order (BLOB columns excluded: each binary
// is covered by its binary_sha256 column, checked separately), and the metadata but the digest.
std::string content_digest(SqliteDb& db) {
  Sha256 h;
  h.update("fp4jit bundle content v1\n");
  const auto rows = [&](const char* table, const char* sql) {
    h.update(fmt::format("table {}\n", table));
    SqliteStmt st = db.prepare(sql);
    if (!st) {
      h.update("unreadable\n");
      return;
    }
    while (st.step() == SQLITE_ROW) {
      for (int i = 0; i < st.column_count(); ++i) {
        if (st.column_type(i) == SQLITE_BLOB) continue;
        const std::string v = st.column_text(i);
        h.update(fmt::format("{}:", v.size())).update(v).update("\n");
      }
      h.update("row\n");
    }
  };
  rows("meta", "SELECT key, value FROM meta WHERE key != 'content_sha256' ORDER BY key");
  rows("binaries", "SELECT * FROM binaries ORDER BY key_hash");
  rows("tunings", "SELECT * FROM tunings ORDER BY key_hash");
  rows("tuning_candidates", "SELECT * FROM tuning_candidates ORDER BY key_hash, position");
  return h.hex_digest();
}

bool put_meta(SqliteDb& db, const std::string& key, const std::string& value) {
  SqliteStmt st = db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)");
  if (!st) return false;
  st.bind_text(1, key);
  st.bind_text(2, value);
  return st.step() == SQLITE_DONE;
}

std::map<std::string, std::string> read_meta(SqliteDb& db) {
  std::map<std::string, std::string> out;
  SqliteStmt st = db.prepare("SELECT key, value FROM meta");
  if (!st) return out;
  while (st.step() == SQLITE_ROW) out[st.column_text(0)] = st.column_text(1);
  return out;
}

std::int64_t to_int(const std::string& s) {
  try {
    return std::stoll(s);
  } catch (...) {
    return -1;
  }
}

void remove_db_files(const std::string& path) {
  std::error_code ec;
  for (const char* extra : {"", "-wal", "-shm", "-journal"})
    std::filesystem::remove(path + extra, ec);
}

}  // namespace

BundleInfo export_bundle(KernelCache& cache, const std::string& gpu_model,
                         const std::string& out_path, const std::string& fp4jit_version) {
  std::vector<TuningRecord> tunings = cache.list_tunings(gpu_model);
  if (tunings.empty()) {
    std::set<std::string> models;
    for (const TuningRecord& r : cache.list_tunings()) models.insert(r.key.device.gpu_model);
    std::string have;
    for (const auto& m : models) have += (have.empty() ? "'" : ", '") + m + "'";
    fail(ErrorKind::invalid_argument,
         "export: the cache {} holds no tunings for device model '{}' ({})", cache.path(),
         gpu_model, have.empty() ? "it holds no tunings at all" : "it has " + have);
  }
  // The most recent tuning decides the arch and compiler exported.
  BundleInfo info;
  info.format = kBundleFormatVersion;
  info.device = tunings.back().key.device;
  info.fp4jit_version = fp4jit_version;
  info.created_unix = cache_unix_now();
  std::erase_if(tunings, [&](const TuningRecord& r) {
    return r.key.device.arch != info.device.arch || r.key.device.compiler != info.device.compiler;
  });

  remove_db_files(out_path);
  SqliteDb out = SqliteDb::open(out_path, false);
  if (!out) fail(ErrorKind::io, "export: cannot create {}", out_path);
  if (out.exec(fmt::format("{} {} {} PRAGMA application_id = {}; PRAGMA user_version = {};",
                           kMetaSchema, kBinariesSchema, kTuningsSchema, kBundleApplicationId,
                           kBundleFormatVersion)) != SQLITE_OK)
    fail(ErrorKind::io, "export: cannot write {}: {}", out_path, out.last_message());

  auto& impl = CacheAccess::impl(cache);
  std::lock_guard lock(impl.mutex);
  bool ok = out.exec("BEGIN") == SQLITE_OK;
  for (const TuningRecord& r : tunings) ok = ok && write_tuning_rows(out, r, r.created_unix);
  info.tunings = static_cast<std::int64_t>(tunings.size());
  if (ok && impl.db) {
    SqliteStmt src = impl.db.prepare(
        "SELECT key_hash, key_text, target, compiler, options, templates_hash, source, symbol, "
        "binary, "
        "binary_sha256, compile_ms, created_unix FROM binaries WHERE target = ?1 AND compiler = ?2 "
        "ORDER BY "
        "key_hash");
    SqliteStmt ins = out.prepare(
        "INSERT INTO binaries (key_hash, key_text, target, compiler, options, templates_hash, "
        "source, symbol, "
        "binary, binary_sha256, compile_ms, created_unix) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
        "?9, ?10, ?11, "
        "?12)");
    ok = src && ins;
    if (ok) {
      src.bind_text(1, info.device.arch);
      src.bind_text(2, info.device.compiler);
      while (ok && src.step_retrying() == SQLITE_ROW) {
        const std::vector<std::uint8_t> binary = src.column_blob(8);
        if (sha256_hex(binary) != src.column_text(9)) {
          warn("export: cache entry {} failed its checksum; left out", src.column_text(0));
          continue;
        }
        ins.reset();
        for (int i = 0; i < 8; ++i) ins.bind_text(i + 1, src.column_text(i));
        ins.bind_blob(9, binary);
        ins.bind_text(10, src.column_text(9));
        ins.bind_double(11, src.column_double(10));
        ins.bind_int64(12, src.column_int64(11));
        ok = ins.step() == SQLITE_DONE;
        ++info.binaries;
      }
    }
  }
  const DeviceIdentity& d = info.device;
  const std::pair<const char*, std::string> meta[] = {
      {"format", std::to_string(info.format)},
      {"gpu_model", d.gpu_model},
      {"arch", d.arch},
      {"sm_count", std::to_string(d.sm_count)},
      {"driver", d.driver},
      {"compiler", d.compiler},
      {"fp4jit_version", info.fp4jit_version},
      {"created_unix", std::to_string(info.created_unix)},
      {"binaries", std::to_string(info.binaries)},
      {"tunings", std::to_string(info.tunings)}};
  for (const auto& [k, v] : meta) ok = ok && put_meta(out, k, v);
  if (ok) {
    info.content_sha256 = content_digest(out);
    ok = put_meta(out, "content_sha256", info.content_sha256) && out.exec("COMMIT") == SQLITE_OK;
  }
  if (!ok) {
    const std::string why = out.last_message();
    out = SqliteDb();
    remove_db_files(out_path);
    fail(ErrorKind::io, "export: writing {} failed: {}", out_path, why);
  }
  return info;
}

BundleCheck verify_bundle(const std::string& path) {
  BundleCheck c;
  const auto problem = [&](std::string p) { c.problems.push_back(std::move(p)); };
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    problem(fmt::format("{}: no such file", path));
    return c;
  }
  SqliteDb db = SqliteDb::open(path, true);
  int app_id = 0, version = 0;
  if (!db || db.query_int("PRAGMA application_id", &app_id) != SQLITE_OK ||
      db.query_int("PRAGMA user_version", &version) != SQLITE_OK) {
    problem(fmt::format("{}: not an SQLite database ({})", path, db.last_message()));
    return c;
  }
  if (app_id == kCacheApplicationId) {
    problem(fmt::format("{}: a kernel cache database, not a bundle (make one with fp4jit export)",
                        path));
    return c;
  }
  if (app_id != kBundleApplicationId) {
    problem(fmt::format("{}: not an fp4jit bundle (application id {:#x})", path, app_id));
    return c;
  }
  if (version != kBundleFormatVersion) {
    problem(fmt::format("{}: bundle format {} is not supported (this fp4jit reads format {})", path,
                        version, kBundleFormatVersion));
    return c;
  }
  const auto meta = read_meta(db);
  const auto field = [&](const char* key) -> std::string {
    const auto it = meta.find(key);
    if (it != meta.end()) return it->second;
    problem(fmt::format("metadata field '{}' is missing", key));
    return {};
  };
  BundleInfo& info = c.info;
  info.format = version;
  info.device.gpu_model = field("gpu_model");
  info.device.arch = field("arch");
  info.device.sm_count = static_cast<int>(to_int(field("sm_count")));
  info.device.driver = field("driver");
  info.device.compiler = field("compiler");
  info.fp4jit_version = field("fp4jit_version");
  info.created_unix = to_int(field("created_unix"));
  const std::int64_t want_binaries = to_int(field("binaries")),
                     want_tunings = to_int(field("tunings"));
  info.content_sha256 = field("content_sha256");

  SqliteStmt st = db.prepare(
      "SELECT key_hash, key_text, target, compiler, binary, binary_sha256 FROM binaries");
  if (!st) {
    problem(fmt::format("binaries table unreadable: {}", db.last_message()));
    return c;
  }
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) {
    ++info.binaries;
    const std::string key = st.column_text(0);
    if (sha256_hex(st.column_blob(4)) != st.column_text(5))
      problem(fmt::format("binary {} ({}): its bytes do not match their SHA-256", key,
                          st.column_text(1)));
    if (st.column_text(2) != info.device.arch || st.column_text(3) != info.device.compiler)
      problem(fmt::format("binary {}: target {} / compiler '{}' differ from the bundle's {} / '{}'",
                          key, st.column_text(2), st.column_text(3), info.device.arch,
                          info.device.compiler));
  }
  if (rc != SQLITE_DONE) problem(fmt::format("binaries table unreadable: {}", db.last_message()));
  st = SqliteStmt();
  for (const TuningRecord& r : read_all_tunings(db, "")) {
    ++info.tunings;
    if (r.key.device.gpu_model != info.device.gpu_model || r.key.device.arch != info.device.arch ||
        r.key.device.compiler != info.device.compiler)
      problem(fmt::format("tuning '{}' is for {}, not the bundle's device", r.key.problem,
                          r.key.device.text()));
  }
  if (info.binaries != want_binaries)
    problem(fmt::format("holds {} binaries, its metadata says {}", info.binaries, want_binaries));
  if (info.tunings != want_tunings)
    problem(fmt::format("holds {} tunings, its metadata says {}", info.tunings, want_tunings));
  if (const std::string digest = content_digest(db); digest != info.content_sha256)
    problem(fmt::format("content digest {} does not match the recorded {}", digest.substr(0, 16),
                        info.content_sha256.substr(0, 16)));
  c.ok = c.problems.empty();
  return c;
}

std::string bundle_mismatch(const BundleInfo& info, const DeviceIdentity& device) {
  std::string out;
  const auto differ = [&](const char* what, const std::string& bundle, const std::string& here) {
    if (bundle != here)
      out += fmt::format("{}{} '{}' != this device's '{}'", out.empty() ? "" : "; ", what, bundle,
                         here);
  };
  differ("model", info.device.gpu_model, device.gpu_model);
  differ("arch", info.device.arch, device.arch);
  differ("compiler", info.device.compiler, device.compiler);
  return out;
}

ImportCounts import_bundle(KernelCache& cache, const std::string& path,
                           const DeviceIdentity* device) {
  const BundleCheck check = verify_bundle(path);
  if (!check.ok) {
    std::string all;
    for (const auto& p : check.problems) all += "\n  " + p;
    fail(ErrorKind::corrupt, "bundle {} refused: it failed verification ({} problem(s)):{}", path,
         check.problems.size(), all);
  }
  if (device != nullptr)
    if (const std::string why = bundle_mismatch(check.info, *device); !why.empty())
      fail(ErrorKind::invalid_argument, "bundle {} refused: made for another device ({})", path,
           why);
  if (!cache.enabled())
    fail(ErrorKind::cache, "import: the kernel cache {} is not usable", cache.path());
  SqliteDb db = SqliteDb::open(path, true);
  ImportCounts n;
  SqliteStmt st = db.prepare(
      "SELECT key_hash, key_text, target, compiler, options, templates_hash, source, symbol, "
      "binary, compile_ms "
      "FROM binaries ORDER BY key_hash");
  while (st && st.step() == SQLITE_ROW) {
    CacheEntry e;
    e.key_hash = st.column_text(0);
    e.key_text = st.column_text(1);
    e.target = st.column_text(2);
    e.compiler = st.column_text(3);
    e.options = st.column_text(4);
    e.templates_hash = st.column_text(5);
    e.source = st.column_text(6);
    e.symbol = st.column_text(7);
    e.binary = st.column_blob(8);
    e.compile_ms = st.column_double(9);
    if (!cache.put(e))
      fail(ErrorKind::cache, "import: storing binary {} into {} failed", e.key_hash, cache.path());
    ++n.binaries;
  }
  st = SqliteStmt();
  for (const TuningRecord& r : read_all_tunings(db, "")) {
    if (!cache.put_tuning(r))
      fail(ErrorKind::cache, "import: storing tuning '{}' into {} failed", r.key.problem,
           cache.path());
    ++n.tunings;
  }
  return n;
}

int KernelCache::use_bundles(const DeviceIdentity& device) {
  return use_bundles(device, bundles_from_env());
}

int KernelCache::use_bundles(const DeviceIdentity& device, const std::vector<std::string>& paths) {
  int layered = 0;
  for (const std::string& path : paths) {
    {
      std::lock_guard lock(impl_->mutex);
      bool seen = false;
      for (const auto& layer : impl_->bundles) seen = seen || layer->path == path;
      if (seen) continue;
    }
    const BundleCheck check = verify_bundle(path);
    if (!check.ok) {
      warn("bundle {} refused: {}{}", path, check.problems.front(),
           check.problems.size() > 1
               ? fmt::format(" (and {} more problems)", check.problems.size() - 1)
               : "");
      continue;
    }
    if (const std::string why = bundle_mismatch(check.info, device); !why.empty()) {
      warn("bundle {} refused: made for another device ({})", path, why);
      continue;
    }
    auto layer = std::make_unique<BundleLayer>();
    layer->path = path;
    layer->db = SqliteDb::open(path, true);
    if (!layer->db) {
      warn("bundle {} refused: cannot be opened", path);
      continue;
    }
    sqlite3_busy_timeout(layer->db.get(), 30000);
    std::lock_guard lock(impl_->mutex);
    impl_->bundles.push_back(std::move(layer));
    ++layered;
  }
  return layered;
}

}  // namespace fp4jit
