// Thin RAII wrappers over the SQLite C API, shared by the trace store and the importers that read SQLite files
// (Nsight Systems exports). Errors come back as Status naming the file. Not thread-safe per object.
// This header includes <sqlite3.h>: it belongs to the header-only target kfuse::sqlite (which links SQLite),
// not to core's public headers; only sources of modules that link that target include it.
#pragma once

#include <sqlite3.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kfuse/core/cancel.h"
#include "kfuse/core/status.h"

namespace kfuse::core::sqlite {

class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(sqlite3_stmt* s) : stmt_(s) {}
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(Stmt&& o) noexcept : stmt_(std::exchange(o.stmt_, nullptr)) {}
  Stmt& operator=(Stmt&& o) noexcept {
    if (this != &o) {
      sqlite3_finalize(stmt_);
      stmt_ = std::exchange(o.stmt_, nullptr);
    }
    return *this;
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  sqlite3_stmt* get() const { return stmt_; }

  // Binding by 1-based index. kNoTime/kNoId-style "absent" values are bound with the *OrNull forms.
  void bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void bindU64(int i, uint64_t v) { sqlite3_bind_int64(stmt_, i, static_cast<int64_t>(v)); }
  void bind(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  void bind(int i, std::string_view v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  void bindBlob(int i, const std::vector<uint8_t>& v) {
    if (v.empty()) {
      sqlite3_bind_zeroblob(stmt_, i, 0);
    } else {
      sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    }
  }
  void bindNullIf(int i, int64_t v, int64_t null_value) {
    if (v == null_value) {
      sqlite3_bind_null(stmt_, i);
    } else {
      sqlite3_bind_int64(stmt_, i, v);
    }
  }

  // Reading by 0-based column.
  int64_t i64(int c) const { return sqlite3_column_int64(stmt_, c); }
  uint64_t u64(int c) const { return static_cast<uint64_t>(sqlite3_column_int64(stmt_, c)); }
  double f64(int c) const { return sqlite3_column_double(stmt_, c); }
  bool isNull(int c) const { return sqlite3_column_type(stmt_, c) == SQLITE_NULL; }
  bool isText(int c) const { return sqlite3_column_type(stmt_, c) == SQLITE_TEXT; }
  int64_t i64Or(int c, int64_t null_value) const { return isNull(c) ? null_value : i64(c); }
  std::string text(int c) const {
    const unsigned char* p = sqlite3_column_text(stmt_, c);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, c)) : std::string();
  }
  std::vector<uint8_t> blob(int c) const {
    const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(stmt_, c));
    const int n = sqlite3_column_bytes(stmt_, c);
    return p && n > 0 ? std::vector<uint8_t>(p, p + n) : std::vector<uint8_t>();
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

class Db {
 public:
  Db() = default;
  ~Db() { close(); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // `shown` names the file in messages when `path` is a URI.
  Status open(const std::string& path, int flags, const std::string& shown = {}) {
    path_ = shown.empty() ? path : shown;
    const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
    if (rc != SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      close();
      return ioError(path_ + ": cannot open: " + msg);
    }
    sqlite3_extended_result_codes(db_, 1);
    return {};
  }
  // Opens a file the user gave us without ever writing to it: read-only and `immutable=1`, so SQLite creates no
  // journal, -wal or -shm file beside it and works in read-only directories.
  Status openReadOnlyImmutable(const std::string& path) {
    std::string uri = "file:";
    for (char c : path) {
      if (c == '%' || c == '?' || c == '#') {  // characters a URI gives a meaning to
        static const char kHex[] = "0123456789ABCDEF";
        uri += '%';
        uri += kHex[(static_cast<unsigned char>(c) >> 4) & 0xf];
        uri += kHex[static_cast<unsigned char>(c) & 0xf];
      } else {
        uri += c;
      }
    }
    uri += "?immutable=1";
    return open(uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, path);
  }

  // Opens a file the user gave us for reading, never writing to it. Without a write-ahead log beside it (a trace
  // closed cleanly, an Nsight Systems export): read-only and immutable, which works on read-only media too. With
  // a non-empty FILE-wal (the recording process was killed, crashed or is still running, so committed
  // transactions are not all in the main file yet): read-only through the WAL; where SQLite cannot do that in
  // place (read-only media without FILE-shm), from a private copy of both files in the temporary directory,
  // removed at close().
  Status openForReading(const std::string& path) {
    if (walBytes(path) == 0) return openReadOnlyImmutable(path);
    if (open(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX).ok() && readable()) return {};
    close();
    namespace fs = std::filesystem;
    std::error_code ec;
    std::string dir = (fs::temp_directory_path(ec) / "kfuse_wal_XXXXXX").string();
    if (ec || !mkdtemp(dir.data())) return ioError(path + ": cannot read its write-ahead log in place, nor copy it");
    copy_dir_ = dir;
    const fs::path copy = fs::path(dir) / fs::path(path).filename();
    fs::copy_file(path, copy, ec);
    if (!ec) fs::copy_file(path + "-wal", copy.string() + "-wal", ec);
    if (ec) {
      close();
      return ioError(path + ": cannot copy the trace and its write-ahead log to read them: " + ec.message());
    }
    KFUSE_RETURN_IF_ERROR(open(copy.string(), SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, path));
    return {};
  }

  // Bytes in FILE-wal beside `path`: 0 when there is none.
  static uintmax_t walBytes(const std::string& path) {
    std::error_code ec;
    const uintmax_t n = std::filesystem::file_size(path + "-wal", ec);
    return ec ? 0 : n;
  }

  void close() {
    if (db_) sqlite3_close_v2(db_);
    db_ = nullptr;
    if (!copy_dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(copy_dir_, ec);
      copy_dir_.clear();
    }
  }
  sqlite3* get() const { return db_; }
  const std::string& path() const { return path_; }

  // A Status for the last failed call, phrased for a user: corruption is called out as such.
  Status error(std::string_view what) const {
    const int code = db_ ? sqlite3_errcode(db_) & 0xff : SQLITE_ERROR;
    std::string msg = path_ + ": " + std::string(what) + ": " + (db_ ? sqlite3_errmsg(db_) : "no database");
    if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) {
      return badFormat(msg + " (the file is corrupt or truncated)");
    }
    return ioError(msg);
  }

  Status exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      Status s = error("executing SQL");
      sqlite3_free(err);
      return s;
    }
    return {};
  }

  Expected<Stmt> prepare(const std::string& sql) const { return prepare(sql.c_str()); }
  Expected<Stmt> prepare(const char* sql) const {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK) {
      return error(std::string("preparing \"") + sql + "\"");
    }
    return Stmt(s);
  }

  // Steps a statement to completion (for INSERT/UPDATE) and resets it for reuse.
  Status run(Stmt& stmt) const {
    const int rc = sqlite3_step(stmt.get());
    sqlite3_reset(stmt.get());
    if (rc != SQLITE_DONE) return error("writing");
    return {};
  }

  // One step of a SELECT: true with a row, false at the end; error Status otherwise.
  Expected<bool> step(Stmt& stmt) const {
    const int rc = sqlite3_step(stmt.get());
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return error("reading");
  }

  // Runs `sql` and calls `row(stmt)` per row; a `row` returning bool stops the query by returning false. Returns
  // the cancelled status (core/cancel.h) when cancellation is requested, checked every 4,096 rows: the readers of
  // kfuse and Nsight Systems traces stop there.
  template <typename RowFn>
  Status query(const std::string& sql, RowFn&& row) const {
    KFUSE_ASSIGN_OR_RETURN(Stmt s, prepare(sql));
    for (uint64_t rows = 0;; ++rows) {
      if ((rows & 4095) == 0) KFUSE_RETURN_IF_CANCELLED();
      KFUSE_ASSIGN_OR_RETURN(bool has_row, step(s));
      if (!has_row) return {};
      if constexpr (std::is_same_v<decltype(row(s)), bool>) {
        if (!row(s)) return {};
      } else {
        row(s);
      }
    }
  }

  // Whether the schema can be read: false where opening succeeded but reading cannot (a WAL SQLite may not
  // recover here).
  bool readable() const {
    return sqlite3_exec(db_, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr) == SQLITE_OK;
  }

  Expected<std::vector<std::string>> tables() const {
    std::vector<std::string> out;
    KFUSE_RETURN_IF_ERROR(query("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name",
                                [&](Stmt& st) { out.push_back(st.text(0)); }));
    return out;
  }

  Expected<std::unordered_set<std::string>> columns(const std::string& table) const {
    std::unordered_set<std::string> out;
    KFUSE_RETURN_IF_ERROR(
        query("SELECT name FROM pragma_table_info('" + table + "')", [&](Stmt& st) { out.insert(st.text(0)); }));
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
  std::string copy_dir_;  // a private copy of a file and its WAL, read where the original could not be
};

// Checks what SQLite itself would only discover deep inside a query: that the file is a SQLite database at all,
// and that it is as long as its header says. `kind` names what the file should be ("kfuse trace"). A file left
// empty by a process killed before its first checkpoint is fine when its write-ahead log holds the data.
inline Status checkSqliteFile(const std::string& path, const std::string& kind) {
  const auto bigEndian = [](const unsigned char* p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
    return v;
  };
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return notFound(path + ": no such file");
  if (std::filesystem::is_directory(path, ec)) return invalidArgument(path + ": is a directory, not a trace file");
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) return ioError(path + ": cannot read size: " + ec.message());
  if (file_size == 0) {
    if (Db::walBytes(path) > 0) return {};
    return badFormat(path + ": empty file, not a " + kind);
  }
  unsigned char header[100] = {};
  std::ifstream in(path, std::ios::binary);
  if (!in) return ioError(path + ": cannot open for reading");
  in.read(reinterpret_cast<char*>(header), sizeof header);
  const auto got = static_cast<size_t>(in.gcount());
  static constexpr char kMagic[] = "SQLite format 3";  // 16 bytes with its NUL
  if (got < 16 || std::memcmp(header, kMagic, 16) != 0) {
    return badFormat(path + ": not a SQLite database, so not a " + kind);
  }
  if (got < sizeof header) return badFormat(path + ": truncated SQLite header (" + std::to_string(got) + " bytes)");
  uint64_t page_size = bigEndian(header + 16, 2);
  if (page_size == 1) page_size = 65536;
  const uint64_t page_count = bigEndian(header + 28, 4);
  const uint64_t change_counter = bigEndian(header + 24, 4);
  const uint64_t valid_for = bigEndian(header + 92, 4);
  // The in-header size is authoritative only when valid_for matches the change counter (SQLite file format §1.3),
  // and only without a write-ahead log: a checkpoint cut short (a full disk) leaves pages the header counts in the
  // WAL alone, which SQLite reads.
  if (page_count > 0 && valid_for == change_counter && page_size >= 512 && Db::walBytes(path) == 0) {
    const uint64_t expected = page_count * page_size;
    if (file_size < expected) {
      return badFormat(path + ": truncated " + (kind == "kfuse trace" ? "trace" : "file") + ": the header promises " +
                       std::to_string(expected) + " bytes but the file has " + std::to_string(file_size));
    }
  }
  return {};
}

}  // namespace kfuse::core::sqlite
