// Tuning rows: one row per (device, problem, recipe) in `tunings` with its winner, and one row per
// measured candidate in `tuning_candidates`, written together in one transaction so a reader never
// sees a winner without its candidates.
#include <sqlite3.h>

#include <array>
#include <cstdlib>

#include "cache/cache_impl.hpp"
#include "core/log.hpp"
#include "core/sha256.hpp"

namespace fp4jit {

namespace {

constexpr std::array<std::string_view, 5> kStatusNames{"ok", "pruned", "compile_failed",
                                                       "wrong_result", "run_failed"};

constexpr const char* kTuningColumns =
    "gpu_model, arch, sm_count, driver, compiler, kind, problem, recipe, winner, winner_ms, "
    "heuristic, "
    "heuristic_ms, work, unit, created_unix, key_hash";

TuningRecord tuning_from(const SqliteStmt& st) {
  TuningRecord r;
  r.key.device.gpu_model = st.column_text(0);
  r.key.device.arch = st.column_text(1);
  r.key.device.sm_count = static_cast<int>(st.column_int64(2));
  r.key.device.driver = st.column_text(3);
  r.key.device.compiler = st.column_text(4);
  r.key.kind = st.column_text(5);
  r.key.problem = st.column_text(6);
  r.key.recipe = st.column_text(7);
  r.winner = st.column_text(8);
  r.winner_ms = st.column_double(9);
  r.heuristic = st.column_text(10);
  r.heuristic_ms = st.column_double(11);
  r.work = st.column_double(12);
  r.unit = st.column_text(13);
  r.created_unix = st.column_int64(14);
  return r;
}

bool read_candidates(SqliteDb& db, const std::string& key_hash, TuningRecord& r) {
  SqliteStmt st = db.prepare(
      "SELECT config, heuristic, status, reason, median_ms, noise, repeats, compile_ms FROM "
      "tuning_candidates "
      "WHERE key_hash = ?1 ORDER BY position");
  if (!st) return false;
  st.bind_text(1, key_hash);
  int rc;
  while ((rc = st.step_retrying()) == SQLITE_ROW) {
    CandidateResult c;
    c.config = st.column_text(0);
    c.heuristic = st.column_int64(1) != 0;
    c.status = parse_candidate_status(st.column_text(2));
    c.reason = st.column_text(3);
    c.median_ms = st.column_double(4);
    c.noise = st.column_double(5);
    c.repeats = static_cast<int>(st.column_int64(6));
    c.compile_ms = st.column_double(7);
    r.candidates.push_back(std::move(c));
  }
  return rc == SQLITE_DONE;
}

}  // namespace

std::string DeviceIdentity::text() const {
  return fmt::format("model '{}', arch {}, {} SMs, driver '{}', compiler '{}'", gpu_model, arch,
                     sm_count, driver, compiler);
}

std::string TuningKey::hash() const {
  Sha256 h;
  h.update("fp4jit tuning key v1\n");
  const std::string sms = std::to_string(device.sm_count);
  for (const std::string* field : {&device.gpu_model, &device.arch, &sms, &device.driver,
                                   &device.compiler, &kind, &problem, &recipe})
    h.update(fmt::format("{}:", field->size())).update(*field).update("\n");
  return h.hex_digest();
}

std::string_view candidate_status_name(CandidateStatus s) {
  return kStatusNames[static_cast<std::size_t>(s)];
}

CandidateStatus parse_candidate_status(std::string_view s) {
  for (std::size_t i = 0; i < kStatusNames.size(); ++i)
    if (kStatusNames[i] == s) return static_cast<CandidateStatus>(i);
  return CandidateStatus::run_failed;
}

bool write_tuning_rows(SqliteDb& db, const TuningRecord& r, std::int64_t created_unix) {
  const std::string hash = r.key.hash();
  SqliteStmt del = db.prepare("DELETE FROM tuning_candidates WHERE key_hash = ?1");
  if (!del) return false;
  del.bind_text(1, hash);
  if (del.step() != SQLITE_DONE) return false;
  SqliteStmt st = db.prepare(
      "INSERT OR REPLACE INTO tunings (gpu_model, arch, sm_count, driver, compiler, kind, problem, "
      "recipe, "
      "winner, winner_ms, heuristic, heuristic_ms, work, unit, created_unix, key_hash) VALUES (?1, "
      "?2, ?3, ?4, "
      "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
  if (!st) return false;
  st.bind_text(1, r.key.device.gpu_model);
  st.bind_text(2, r.key.device.arch);
  st.bind_int64(3, r.key.device.sm_count);
  st.bind_text(4, r.key.device.driver);
  st.bind_text(5, r.key.device.compiler);
  st.bind_text(6, r.key.kind);
  st.bind_text(7, r.key.problem);
  st.bind_text(8, r.key.recipe);
  st.bind_text(9, r.winner);
  st.bind_double(10, r.winner_ms);
  st.bind_text(11, r.heuristic);
  st.bind_double(12, r.heuristic_ms);
  st.bind_double(13, r.work);
  st.bind_text(14, r.unit);
  st.bind_int64(15, created_unix);
  st.bind_text(16, hash);
  if (st.step() != SQLITE_DONE) return false;
  SqliteStmt ins = db.prepare(
      "INSERT INTO tuning_candidates (key_hash, position, config, heuristic, status, reason, "
      "median_ms, noise, "
      "repeats, compile_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
  if (!ins) return false;
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const CandidateResult& c = r.candidates[i];
    ins.reset();
    ins.bind_text(1, hash);
    ins.bind_int64(2, static_cast<std::int64_t>(i));
    ins.bind_text(3, c.config);
    ins.bind_int64(4, c.heuristic ? 1 : 0);
    ins.bind_text(5, candidate_status_name(c.status));
    ins.bind_text(6, c.reason);
    ins.bind_double(7, c.median_ms);
    ins.bind_double(8, c.noise);
    ins.bind_int64(9, c.repeats);
    ins.bind_double(10, c.compile_ms);
    if (ins.step() != SQLITE_DONE) return false;
  }
  return true;
}

std::optional<TuningRecord> read_tuning_rows(SqliteDb& db, const std::string& key_hash, int* rc) {
  SqliteStmt st =
      db.prepare(fmt::format("SELECT {} FROM tunings WHERE key_hash = ?1", kTuningColumns).c_str());
  if (!st) {
    *rc = db.last_code();
    return std::nullopt;
  }
  st.bind_text(1, key_hash);
  *rc = st.step_retrying();
  if (*rc != SQLITE_ROW) return std::nullopt;
  TuningRecord r = tuning_from(st);
  st = SqliteStmt();
  if (!read_candidates(db, key_hash, r)) {
    *rc = db.last_code();
    return std::nullopt;
  }
  return r;
}

std::vector<TuningRecord> read_all_tunings(SqliteDb& db, const std::string& gpu_model) {
  std::vector<TuningRecord> out;
  SqliteStmt st = db.prepare(
      fmt::format(
          "SELECT {} FROM tunings WHERE ?1 = '' OR gpu_model = ?1 ORDER BY created_unix, key_hash",
          kTuningColumns)
          .c_str());
  if (!st) return out;
  st.bind_text(1, gpu_model);
  std::vector<std::string> hashes;
  while (st.step_retrying() == SQLITE_ROW) {
    out.push_back(tuning_from(st));
    hashes.push_back(st.column_text(15));
  }
  st = SqliteStmt();
  for (std::size_t i = 0; i < out.size(); ++i) read_candidates(db, hashes[i], out[i]);
  return out;
}

bool KernelCache::put_tuning(const TuningRecord& record) {
  std::lock_guard lock(impl_->mutex);
  if (!impl_->db || !impl_->writable) return false;
  const std::int64_t now = cache_unix_now();
  const int rc =
      in_write_transaction(impl_->db, [&] { return write_tuning_rows(impl_->db, record, now); });
  if (rc != SQLITE_OK) {
    impl_->on_error(rc, "storing a tuning");
    return false;
  }
  return true;
}

std::optional<TuningRecord> KernelCache::get_tuning(const TuningKey& key) {
  std::lock_guard lock(impl_->mutex);
  const std::string hash = key.hash();
  int rc = SQLITE_OK;
  if (impl_->db) {
    if (std::optional<TuningRecord> r = read_tuning_rows(impl_->db, hash, &rc)) return r;
    if (rc != SQLITE_DONE)
      debug("kernel cache {}: tuning lookup failed: {}", impl_->path, impl_->db.last_message());
  }
  for (const auto& layer : impl_->bundles)
    if (std::optional<TuningRecord> r = read_tuning_rows(layer->db, hash, &rc)) return r;
  return std::nullopt;
}

std::vector<TuningRecord> KernelCache::list_tunings(const std::string& gpu_model) {
  std::lock_guard lock(impl_->mutex);
  if (!impl_->db) return {};
  return read_all_tunings(impl_->db, gpu_model);
}

std::vector<std::string> KernelCache::bundles_from_env() {
  std::vector<std::string> out;
  const char* env = std::getenv("FP4JIT_BUNDLES");
  if (env == nullptr) return out;
  const std::string_view text(env);
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(':', pos);
    if (end == std::string_view::npos) end = text.size();
    if (end > pos) out.emplace_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

std::vector<std::string> KernelCache::bundle_paths() const {
  std::vector<std::string> out;
  for (const auto& layer : impl_->bundles) out.push_back(layer->path);
  return out;
}

}  // namespace fp4jit
