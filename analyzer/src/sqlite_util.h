// Read-only access to SQLite files the user gave us (Nsight Systems exports, kfuse traces being sniffed).
// Files are opened with SQLITE_OPEN_READONLY and `immutable=1`, so SQLite neither writes nor creates a journal,
// -wal or -shm file beside them, and works in read-only directories. Private to the analyzer; not thread-safe.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kfuse/core/status.h"

namespace kfuse::analyzer::detail {

class SqliteStmt {
 public:
  SqliteStmt() = default;
  explicit SqliteStmt(sqlite3_stmt* s) : stmt_(s) {}
  ~SqliteStmt() { sqlite3_finalize(stmt_); }
  SqliteStmt(SqliteStmt&& o) noexcept : stmt_(std::exchange(o.stmt_, nullptr)) {}
  SqliteStmt& operator=(SqliteStmt&& o) noexcept {
    if (this != &o) {
      sqlite3_finalize(stmt_);
      stmt_ = std::exchange(o.stmt_, nullptr);
    }
    return *this;
  }
  sqlite3_stmt* get() const { return stmt_; }
  bool isNull(int c) const { return sqlite3_column_type(stmt_, c) == SQLITE_NULL; }
  bool isText(int c) const { return sqlite3_column_type(stmt_, c) == SQLITE_TEXT; }
  int64_t i64(int c) const { return sqlite3_column_int64(stmt_, c); }
  int64_t i64Or(int c, int64_t null_value) const { return isNull(c) ? null_value : i64(c); }
  std::string text(int c) const {
    const unsigned char* p = sqlite3_column_text(stmt_, c);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, c)))
             : std::string();
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

class SqliteDb {
 public:
  SqliteDb() = default;
  ~SqliteDb() {
    if (db_) sqlite3_close_v2(db_);
  }
  SqliteDb(SqliteDb&& o) noexcept : db_(std::exchange(o.db_, nullptr)), path_(std::move(o.path_)) {}
  SqliteDb& operator=(SqliteDb&&) = delete;
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  Status openReadOnly(const std::string& path) {
    path_ = path;
    // A file: URI so that immutable=1 applies; characters URIs give a meaning to are percent-encoded.
    std::string uri = "file:";
    for (char c : path) {
      if (c == '%' || c == '?' || c == '#') {
        static const char kHex[] = "0123456789ABCDEF";
        uri += '%';
        uri += kHex[(static_cast<unsigned char>(c) >> 4) & 0xf];
        uri += kHex[static_cast<unsigned char>(c) & 0xf];
      } else {
        uri += c;
      }
    }
    uri += "?immutable=1";
    const int rc = sqlite3_open_v2(uri.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
    if (rc != SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      if (db_) sqlite3_close_v2(db_);
      db_ = nullptr;
      return ioError(path + ": cannot open: " + msg);
    }
    return {};
  }

  Status error(std::string_view what) const {
    const int code = db_ ? sqlite3_errcode(db_) & 0xff : SQLITE_ERROR;
    std::string msg = path_ + ": " + std::string(what) + ": " + (db_ ? sqlite3_errmsg(db_) : "no database");
    if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) {
      return badFormat(msg + " (the file is corrupt or truncated)");
    }
    return ioError(msg);
  }

  Expected<SqliteStmt> prepare(const std::string& sql) const {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      return error("preparing \"" + sql + "\"");
    }
    return SqliteStmt(s);
  }

  // Runs `sql`, calling fn(stmt) for each row.
  template <typename Fn>
  Status query(const std::string& sql, Fn&& fn) const {
    KFUSE_ASSIGN_OR_RETURN(SqliteStmt s, prepare(sql));
    while (true) {
      const int rc = sqlite3_step(s.get());
      if (rc == SQLITE_DONE) return {};
      if (rc != SQLITE_ROW) return error("reading");
      fn(s);
    }
  }

  Expected<std::vector<std::string>> tables() const {
    std::vector<std::string> out;
    Status s = query("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name",
                     [&](SqliteStmt& st) { out.push_back(st.text(0)); });
    if (!s.ok()) return s;
    return out;
  }

  Expected<std::unordered_set<std::string>> columns(const std::string& table) const {
    std::unordered_set<std::string> out;
    Status s = query("SELECT name FROM pragma_table_info('" + table + "')",
                     [&](SqliteStmt& st) { out.insert(st.text(0)); });
    if (!s.ok()) return s;
    return out;
  }

  const std::string& path() const { return path_; }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace kfuse::analyzer::detail
