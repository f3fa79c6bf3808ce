// RAII over the SQLite C API: a connection and a prepared statement. Destructors never throw.
#pragma once
#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fp4jit {

class SqliteStmt {
 public:
  SqliteStmt() = default;
  explicit SqliteStmt(sqlite3_stmt* s) : stmt_(s) {}
  ~SqliteStmt() { sqlite3_finalize(stmt_); }
  SqliteStmt(SqliteStmt&& o) noexcept : stmt_(std::exchange(o.stmt_, nullptr)) {}
  SqliteStmt& operator=(SqliteStmt&& o) noexcept {
    std::swap(stmt_, o.stmt_);
    return *this;
  }
  explicit operator bool() const { return stmt_ != nullptr; }

  void bind_text(int i, std::string_view v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void bind_blob(int i, const std::vector<std::uint8_t>& v) {
    sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void bind_double(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  void bind_int64(int i, std::int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  int step() { return sqlite3_step(stmt_); }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  // Steps, retrying while another connection holds a lock SQLite would not wait for itself
  // (the busy timeout covers most cases, not every WAL transition), for up to `max_wait_ms`.
  int step_retrying(int max_wait_ms = 60000) {
    int rc = sqlite3_step(stmt_);
    for (int waited = 0, pause = 1;
         (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) && waited < max_wait_ms;
         waited += pause, pause = pause < 64 ? pause * 2 : pause) {
      sqlite3_reset(stmt_);
      sqlite3_sleep(pause);
      rc = sqlite3_step(stmt_);
    }
    return rc;
  }

  std::string column_text(int i) const {
    const auto* p = sqlite3_column_text(stmt_, i);
    return p == nullptr
               ? std::string()
               : std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, i));
  }
  std::vector<std::uint8_t> column_blob(int i) const {
    const auto* p = static_cast<const std::uint8_t*>(sqlite3_column_blob(stmt_, i));
    return p == nullptr ? std::vector<std::uint8_t>()
                        : std::vector<std::uint8_t>(p, p + sqlite3_column_bytes(stmt_, i));
  }
  int column_count() const { return sqlite3_column_count(stmt_); }
  int column_type(int i) const { return sqlite3_column_type(stmt_, i); }
  double column_double(int i) const { return sqlite3_column_double(stmt_, i); }
  std::int64_t column_int64(int i) const { return sqlite3_column_int64(stmt_, i); }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

class SqliteDb {
 public:
  SqliteDb() = default;
  ~SqliteDb() { sqlite3_close_v2(db_); }
  SqliteDb(SqliteDb&& o) noexcept : db_(std::exchange(o.db_, nullptr)) {}
  SqliteDb& operator=(SqliteDb&& o) noexcept {
    std::swap(db_, o.db_);
    return *this;
  }
  explicit operator bool() const { return db_ != nullptr; }
  sqlite3* get() const { return db_; }

  // An open connection, or an empty handle if the file cannot be opened.
  static SqliteDb open(const std::string& path, bool read_only) {
    SqliteDb out;
    const int flags =
        (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
        SQLITE_OPEN_FULLMUTEX;
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
      sqlite3_close_v2(db);
      return out;
    }
    sqlite3_extended_result_codes(db, 0);
    out.db_ = db;
    return out;
  }

  int exec(const std::string& sql) {
    return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  }
  SqliteStmt prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) return SqliteStmt();
    return SqliteStmt(s);
  }
  // Runs a query returning one integer.
  int query_int(const char* sql, int* out) {
    SqliteStmt st = prepare(sql);
    if (!st) return last_code();
    const int rc = st.step();
    if (rc != SQLITE_ROW) return rc == SQLITE_DONE ? SQLITE_ERROR : rc;
    *out = static_cast<int>(st.column_int64(0));
    return SQLITE_OK;
  }
  int last_code() const { return db_ == nullptr ? SQLITE_CANTOPEN : sqlite3_errcode(db_); }
  std::string last_message() const { return db_ == nullptr ? "not open" : sqlite3_errmsg(db_); }

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace fp4jit
