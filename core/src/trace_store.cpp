#include "kfuse/core/trace_store.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <type_traits>
#include <unordered_set>

#include "kfuse/core/sqlite_db.h"
#include "trace_fields.h"
#include "trace_schema.h"

namespace kfuse::core {

using sqlite::Db;
using sqlite::Stmt;

namespace {

// Checks what SQLite itself would only discover deep inside a query (sqlite_db.h).
Status checkSqliteFile(const std::string& path) {
  return sqlite::checkSqliteFile(path, "kfuse trace");
}

// launch.pointer_args: [[param_index,address,allocation_id|null,offset(,field_offset)],...] in decimal, unsigned
// but for param_index (a damaged import may hold -1: kept, and named by the analyzer); field_offset only for a
// pointer inside a struct argument.
void encodePointerArgs(const std::vector<PointerArg>& args, std::string& out) {
  out.clear();
  char buf[24];
  auto put = [&](uint64_t v) {
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
  };
  out.push_back('[');
  for (size_t i = 0; i < args.size(); ++i) {
    const PointerArg& a = args[i];
    out.append(i ? ",[" : "[");
    // Signed: a damaged import can hold -1 or another index the kernel does not have; the analyzer names those.
    {
      auto r = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(a.param_index));
      out.append(buf, r.ptr);
    }
    out.push_back(',');
    put(a.address);
    out.push_back(',');
    if (a.allocation_id == kNoId) {
      out.append("null");
    } else {
      put(static_cast<uint64_t>(a.allocation_id));
    }
    out.push_back(',');
    put(a.offset);
    if (a.field_offset >= 0) {
      out.push_back(',');
      put(static_cast<uint64_t>(a.field_offset));
    }
    out.push_back(']');
  }
  out.push_back(']');
}

// The inverse of encodePointerArgs; strict (no whitespace, no other shapes). False on anything else.
bool decodePointerArgs(std::string_view text, std::vector<PointerArg>& out) {
  size_t pos = 0;
  auto eat = [&](char c) {
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  };
  auto number = [&](uint64_t& v) {
    auto r = std::from_chars(text.data() + pos, text.data() + text.size(), v);
    if (r.ec != std::errc()) return false;
    pos = static_cast<size_t>(r.ptr - text.data());
    return true;
  };
  if (!eat('[')) return false;
  if (eat(']')) return pos == text.size();
  auto signedNumber = [&](int64_t& v) {
    auto r = std::from_chars(text.data() + pos, text.data() + text.size(), v);
    if (r.ec != std::errc()) return false;
    pos = static_cast<size_t>(r.ptr - text.data());
    return true;
  };
  do {
    int64_t index = 0;
    uint64_t address = 0, allocation = 0, offset = 0;
    if (!eat('[') || !signedNumber(index) || !eat(',') || !number(address) || !eat(',')) return false;
    if (text.substr(pos, 4) == "null") {
      pos += 4;
    } else if (!number(allocation)) {
      return false;
    }
    if (!eat(',') || !number(offset)) return false;
    uint64_t field = UINT64_MAX;
    if (eat(',') && (!number(field) || field > 0xffff)) return false;
    if (!eat(']')) return false;
    if (index < INT32_MIN || index > INT32_MAX || allocation > static_cast<uint64_t>(INT64_MAX)) return false;
    out.push_back(PointerArg{static_cast<int>(index), address, static_cast<Id>(allocation), offset,
                             field == UINT64_MAX ? -1 : static_cast<int32_t>(field)});
  } while (eat(','));
  return eat(']') && pos == text.size();
}

using detail::Column;
using detail::ConstTimeRef;
using detail::Field;
using detail::kIsChildTable;
using detail::kRecord;
using detail::TimeRef;

std::string joinColumns(const std::vector<Column>& cols, bool keys_only = false) {
  std::string out;
  for (const Column& c : cols) {
    if (keys_only && !c.key) continue;
    if (!out.empty()) out += ", ";
    out += c.name;
  }
  return out;
}

// INSERT of one row of R's table, with one parameter per column in tableColumns<R>() order.
template <typename R>
std::string insertSql() {
  const std::vector<Column> cols = detail::tableColumns<R>();
  std::string values;
  for (size_t i = 1; i <= cols.size(); ++i) values += (i > 1 ? ", ?" : "?") + std::to_string(i);
  return std::string(kRecord<R>.replace ? "INSERT OR REPLACE INTO " : "INSERT INTO ") + kRecord<R>.table + "(" +
         joinColumns(cols) + ") VALUES (" + values + ")";
}

// Binds a record's fields to consecutive parameters of an INSERT built by insertSql.
class RowBinder {
 public:
  RowBinder(Stmt& stmt, int first, std::string& scratch) : s_(stmt), i_(first), scratch_(scratch) {}

  template <typename M>
  void operator()(const Field& f, const M& m) {
    if constexpr (kIsChildTable<M>) {
      return;  // written as rows of their own table
    } else if constexpr (std::is_same_v<M, ConstTimeRef>) {
      s_.bindNullIf(i_++, m.v, kNoTime);
    } else if constexpr (std::is_same_v<M, Dim3>) {
      for (uint32_t v : {m.x, m.y, m.z}) s_.bind(i_++, int64_t{v});
    } else if constexpr (std::is_same_v<M, std::string>) {
      s_.bind(i_++, std::string_view(m));
    } else if constexpr (std::is_same_v<M, std::vector<uint8_t>>) {
      if (!f.has(detail::kNotInTable)) s_.bindBlob(i_++, m);
    } else if constexpr (std::is_same_v<M, std::vector<PointerArg>>) {
      if (m.empty()) {
        sqlite3_bind_null(s_.get(), i_++);
      } else {
        encodePointerArgs(m, scratch_);
        s_.bind(i_++, std::string_view(scratch_));
      }
    } else if constexpr (std::is_enum_v<M>) {
      s_.bind(i_++, toString(m));
    } else if constexpr (std::is_same_v<M, double>) {
      s_.bind(i_++, m);
    } else if constexpr (std::is_same_v<M, uint64_t>) {
      s_.bindU64(i_++, m);
    } else {
      static_assert(std::is_integral_v<M>, "no SQL binding for this member");
      if (f.references && !f.has(detail::kRequired)) {
        s_.bindNullIf(i_++, m, kNoId);
      } else {
        s_.bind(i_++, static_cast<int64_t>(m));
      }
    }
  }

 private:
  Stmt& s_;
  int i_;
  std::string& scratch_;
};

// Reads a record's fields from consecutive columns of a SELECT built by selectSql. The first problem (an
// unknown enum name, malformed pointer_args) is kept in `error`.
class RowReader {
 public:
  RowReader(const Stmt& stmt, int first, const char* table, Status& error)
      : s_(stmt), c_(first), table_(table), error_(error) {}

  template <typename M>
  void operator()(const Field& f, M&& member) {
    using T = std::remove_cvref_t<M>;
    if constexpr (kIsChildTable<T>) {
      return;
    } else if constexpr (std::is_same_v<T, TimeRef>) {
      member.v = s_.i64Or(c_++, kNoTime);
    } else if constexpr (std::is_same_v<T, Dim3>) {
      member = {u32(c_), u32(c_ + 1), u32(c_ + 2)};
      c_ += 3;
    } else if constexpr (std::is_same_v<T, std::string>) {
      member = s_.text(c_++);
    } else if constexpr (std::is_same_v<T, std::vector<uint8_t>>) {
      if (!f.has(detail::kNotInTable)) member = s_.blob(c_++);
    } else if constexpr (std::is_same_v<T, std::vector<PointerArg>>) {
      member.clear();
      const int c = c_++;
      if (s_.isNull(c)) return;
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s_.get(), c));
      const int size = sqlite3_column_bytes(s_.get(), c);
      if (!decodePointerArgs(std::string_view(text, static_cast<size_t>(size)), member)) {
        fail(std::string("malformed ") + f.name + " '" + std::string(text, static_cast<size_t>(std::min(size, 80))) +
             "'");
      }
    } else if constexpr (std::is_enum_v<T>) {
      const std::string text = s_.text(c_++);
      auto parsed = detail::parseEnum(text, T{});
      if (parsed) {
        member = *parsed;
      } else {
        fail("unknown " + std::string(f.name) + " '" + text + "'");
      }
    } else if constexpr (std::is_same_v<T, double>) {
      member = s_.f64(c_++);
    } else if constexpr (std::is_same_v<T, bool>) {
      member = s_.i64(c_++) != 0;
    } else if constexpr (std::is_same_v<T, uint64_t>) {
      member = s_.u64(c_++);
    } else {
      static_assert(std::is_integral_v<T>, "no SQL reading for this member");
      const int64_t none = f.references && !f.has(detail::kRequired) ? kNoId : 0;
      member = static_cast<T>(s_.i64Or(c_++, none));
    }
  }

  // Names the row in messages ("launch 3") instead of the table.
  void setRow(std::string row) { row_ = std::move(row); }

 private:
  uint32_t u32(int c) const { return static_cast<uint32_t>(s_.i64(c)); }
  void fail(const std::string& what) {
    if (error_.ok()) error_ = badFormat((row_.empty() ? std::string("table ") + table_ : row_) + ": " + what);
  }

  const Stmt& s_;
  int c_;
  const char* table_;
  std::string row_;
  Status& error_;
};

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// Writer

// One prepared INSERT per record kind (bases of Inserts, so insert<R>() finds it by type).
template <typename R>
struct InsertStmt {
  Stmt stmt;
};
struct Inserts : InsertStmt<Process>,
                 InsertStmt<Device>,
                 InsertStmt<Context>,
                 InsertStmt<Stream>,
                 InsertStmt<Module>,
                 InsertStmt<KernelFunction>,
                 InsertStmt<KernelParam>,
                 InsertStmt<Launch>,
                 InsertStmt<Allocation>,
                 InsertStmt<Memcpy>,
                 InsertStmt<Memset>,
                 InsertStmt<Sync>,
                 InsertStmt<Event>,
                 InsertStmt<NvtxRange>,
                 InsertStmt<Metric>,
                 InsertStmt<Stat>,
                 InsertStmt<Graph>,
                 InsertStmt<GraphNode>,
                 InsertStmt<GraphEdge>,
                 InsertStmt<GraphExec>,
                 InsertStmt<GraphLaunch> {};

struct TraceWriter::Impl {
  Db db;
  TraceWriterOptions options;
  size_t rows_in_txn = 0;
  bool in_txn = false;
  bool closed = false;
  std::unordered_set<std::string> stored_images;
  std::string pointer_args_text;  // reused buffer for launch.pointer_args

  Stmt meta, module_image, allocation_freed;
  Inserts inserts;

  template <typename R>
  Stmt& insert() {
    return static_cast<InsertStmt<R>&>(inserts).stmt;
  }

  template <typename R>
  Status prepareInsert() {
    KFUSE_ASSIGN_OR_RETURN(insert<R>(), db.prepare(insertSql<R>()));
    // And the tables of its children.
    Status s;
    const R defaults{};
    detail::forEachField(defaults, [&](const Field&, const auto& member) {
      using M = std::remove_cvref_t<decltype(member)>;
      if constexpr (kIsChildTable<M>) {
        if (s.ok()) s = prepareInsert<typename M::value_type>();
      }
    });
    return s;
  }

  Status prepareAll() {
    KFUSE_ASSIGN_OR_RETURN(meta, db.prepare("INSERT OR REPLACE INTO kfuse_meta(key, value) VALUES (?1, ?2)"));
    KFUSE_ASSIGN_OR_RETURN(
        module_image,
        db.prepare("INSERT OR IGNORE INTO module_image(hash, kind, size, bytes) VALUES (?1, ?2, ?3, ?4)"));
    KFUSE_ASSIGN_OR_RETURN(allocation_freed, db.prepare("UPDATE allocation SET free_ns = ?2 WHERE id = ?1"));
    Status s;
    Trace none;
    detail::forEachTable(none, [&](const char*, const auto& records) {
      if (s.ok()) s = prepareInsert<typename std::remove_cvref_t<decltype(records)>::value_type>();
    });
    return s;
  }

  // Writes one record: its row, then the rows of its children.
  template <typename R>
  Status addRecord(const R& v, int64_t parent_id = kNoId) {
    Stmt& stmt = insert<R>();
    int first = 1;
    if constexpr (kRecord<R>.parent != nullptr) stmt.bind(first++, parent_id);
    detail::forEachField(v, RowBinder(stmt, first, pointer_args_text));
    KFUSE_RETURN_IF_ERROR(runRow(stmt));
    Status s;
    // Only records with an id have child tables; clang instantiates the lambda for every record kind.
    int64_t id = kNoId;
    if constexpr (requires { v.id; }) id = v.id;
    detail::forEachField(v, [&](const Field&, const auto& member) {
      using M = std::remove_cvref_t<decltype(member)>;
      if constexpr (kIsChildTable<M>) {
        for (const auto& child : member) {
          if (s.ok()) s = addRecord(child, id);
        }
      }
    });
    return s;
  }

  Status begin() {
    if (in_txn) return {};
    KFUSE_RETURN_IF_ERROR(db.exec("BEGIN"));
    in_txn = true;
    return {};
  }

  Status commit() {
    if (!in_txn) return {};
    in_txn = false;
    rows_in_txn = 0;
    return db.exec("COMMIT");
  }

  // Every write goes through here: opens a transaction if needed and commits every `batch_rows` rows.
  Status runRow(Stmt& stmt) {
    if (closed) return invalidArgument(db.path() + ": trace writer already closed");
    KFUSE_RETURN_IF_ERROR(begin());
    KFUSE_RETURN_IF_ERROR(db.run(stmt));
    if (++rows_in_txn >= options.batch_rows) return commit();
    return {};
  }

  Status putMeta(std::string_view key, std::string_view value) {
    meta.bind(1, key);
    meta.bind(2, value);
    return runRow(meta);
  }
};

TraceWriter::TraceWriter(std::string path, std::unique_ptr<Impl> impl)
    : path_(std::move(path)), impl_(std::move(impl)) {}

TraceWriter::~TraceWriter() {
  if (impl_ && !impl_->closed) (void)close();
}

Status checkTraceReplaceable(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return invalidArgument(path + ": exists and is not a regular file; only a trace file is replaced");
  }
  char head[16] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(head, sizeof head);
  const std::streamsize n = in.gcount();
  if (n == 0) return {};  // an empty file
  if (n < static_cast<std::streamsize>(sizeof head) || std::memcmp(head, "SQLite format 3", 16) != 0) {
    return invalidArgument(path +
                           ": exists and is not a trace (not an SQLite file); only a trace file is replaced: "
                           "choose another name, or remove the file yourself");
  }
  return {};
}

Expected<std::unique_ptr<TraceWriter>> TraceWriter::create(const std::string& path, TraceWriterOptions options) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    if (!options.overwrite) return invalidArgument(path + ": already exists (choose another name or overwrite)");
    // Overwriting replaces a trace file, never a directory, a device node or a file of another kind.
    KFUSE_RETURN_IF_ERROR(checkTraceReplaceable(path));
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix, ec);
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (impl->options.batch_rows == 0) impl->options.batch_rows = 1;
  // The schema and the file's identity are committed under a temporary name in the same directory (rollback
  // journal) and renamed into place, then the trace switches to WAL: a process killed during start-up leaves
  // either no file at `path` or a trace that opens, never a database without the trace's tables.
  namespace fs = std::filesystem;
  const fs::path target(path);
  const std::string fresh =
      (target.parent_path() / ("." + target.filename().string() + ".kfuse-new-" + std::to_string(::getpid()))).string();
  auto removeWithJournals = [&](const std::string& p) {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(p + suffix, ec);
  };
  removeWithJournals(fresh);
  bool renamed = false;
  Status s = [&]() -> Status {
    KFUSE_RETURN_IF_ERROR(impl->db.open(fresh, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, path));
    KFUSE_RETURN_IF_ERROR(impl->db.exec("PRAGMA page_size=16384; PRAGMA journal_mode=DELETE; BEGIN"));
    KFUSE_RETURN_IF_ERROR(impl->db.exec(detail::traceSql().c_str()));
    KFUSE_RETURN_IF_ERROR(impl->db.exec(("PRAGMA user_version=" + std::to_string(kTraceSchemaVersion)).c_str()));
    KFUSE_RETURN_IF_ERROR(
        impl->db.exec(("INSERT INTO kfuse_meta(key, value) VALUES ('format', '" + std::string(kTraceFormatName) +
                       "'), ('schema_version', '" + std::to_string(kTraceSchemaVersion) + "'); COMMIT")
                          .c_str()));
    impl->db.close();
    std::error_code rename_ec;
    fs::rename(fresh, target, rename_ec);
    if (rename_ec) return ioError(path + ": cannot move the new trace into place: " + rename_ec.message());
    renamed = true;
    KFUSE_RETURN_IF_ERROR(impl->db.open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX));
    // WAL + synchronous=NORMAL: a committed batch survives the writer being killed; only the last open
    // transaction can be lost.
    KFUSE_RETURN_IF_ERROR(
        impl->db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-65536; PRAGMA "
                      "wal_autocheckpoint=8192;"));
    return impl->prepareAll();
  }();
  if (!s.ok()) {
    // Not even the schema was committed (a full disk, a file size limit): leave no file behind.
    impl.reset();
    removeWithJournals(fresh);
    if (renamed) removeWithJournals(path);
    return s;
  }
  return std::unique_ptr<TraceWriter>(new TraceWriter(path, std::move(impl)));
}

Status TraceWriter::setMetadata(const TraceMetadata& m) {
  Status s;
  detail::forEachField(m, [&](const Field& f, const auto& member) {
    using M = std::remove_cvref_t<decltype(member)>;
    if (!s.ok()) return;
    if constexpr (std::is_same_v<M, std::string>) {
      s = impl_->putMeta(f.name, member);
    } else if constexpr (std::is_same_v<M, ConstTimeRef>) {
      s = impl_->putMeta(f.name, std::to_string(member.v));
    } else {
      static_assert(std::is_same_v<M, std::map<std::string, std::string>>, "no kfuse_meta form for this member");
      for (const auto& [k, v] : member) {
        if (s.ok()) s = impl_->putMeta(std::string(f.name) + "." + k, v);
      }
    }
  });
  return s;
}

Status TraceWriter::add(const Process& v) {
  return impl_->addRecord(v);
}
Status TraceWriter::add(const Device& v) {
  return impl_->addRecord(v);
}
Status TraceWriter::add(const Context& v) {
  return impl_->addRecord(v);
}
Status TraceWriter::add(const Stream& v) {
  return impl_->addRecord(v);
}

Status TraceWriter::add(const Module& v) {
  if (v.hash.empty() && !v.image.empty()) {
    Module with_hash = v;
    with_hash.hash = sha256Hex(v.image);
    return add(with_hash);
  }
  if (!v.image.empty() && impl_->stored_images.insert(v.hash).second) {
    Stmt& img = impl_->module_image;
    img.bind(1, v.hash);
    img.bind(2, toString(v.kind));
    img.bind(3, static_cast<int64_t>(v.image.size()));
    img.bindBlob(4, v.image);
    KFUSE_RETURN_IF_ERROR(impl_->runRow(img));
  }
  return impl_->addRecord(v);
}

Status TraceWriter::add(const KernelFunction& v) {
  return impl_->addRecord(v);
}
Status TraceWriter::add(const Launch& v) {
  return impl_->addRecord(v);
}
Status TraceWriter::add(const Allocation& v) {
  return impl_->addRecord(v);
}

Status TraceWriter::setAllocationFreed(Id allocation_id, int64_t free_ns) {
  Stmt& s = impl_->allocation_freed;
  s.bind(1, allocation_id);
  s.bindNullIf(2, free_ns, kNoTime);
  return impl_->runRow(s);
}

Status TraceWriter::add(const Memcpy& v) {
  return impl_->addRecord(v);
}
Status TraceWriter::add(const Memset& v) {
  return impl_->addRecord(v);
}
Status TraceWriter::add(const Sync& v) {
  return impl_->addRecord(v);
}
Status TraceWriter::add(const Event& v) {
  return impl_->addRecord(v);
}
Status TraceWriter::add(const NvtxRange& v) {
  return impl_->addRecord(v);
}
Status TraceWriter::add(const Metric& v) {
  return impl_->addRecord(v);
}
Status TraceWriter::add(const Stat& v) {
  return impl_->addRecord(v);
}
Status TraceWriter::add(const Graph& v) {
  return impl_->addRecord(v);
}
Status TraceWriter::add(const GraphNode& v) {
  return impl_->addRecord(v);
}
Status TraceWriter::add(const GraphEdge& v) {
  return impl_->addRecord(v);
}
Status TraceWriter::add(const GraphExec& v) {
  return impl_->addRecord(v);
}
Status TraceWriter::add(const GraphLaunch& v) {
  return impl_->addRecord(v);
}

Status TraceWriter::write(const Trace& t) {
  KFUSE_RETURN_IF_ERROR(setMetadata(t.metadata));
  auto addAll = [this](const auto& records) -> Status {
    for (const auto& r : records) KFUSE_RETURN_IF_ERROR(add(r));
    return {};
  };
  KFUSE_RETURN_IF_ERROR(addAll(t.processes));
  KFUSE_RETURN_IF_ERROR(addAll(t.devices));
  KFUSE_RETURN_IF_ERROR(addAll(t.contexts));
  KFUSE_RETURN_IF_ERROR(addAll(t.streams));
  KFUSE_RETURN_IF_ERROR(addAll(t.modules));
  KFUSE_RETURN_IF_ERROR(addAll(t.functions));
  KFUSE_RETURN_IF_ERROR(addAll(t.allocations));
  KFUSE_RETURN_IF_ERROR(addAll(t.launches));
  KFUSE_RETURN_IF_ERROR(addAll(t.memcpys));
  KFUSE_RETURN_IF_ERROR(addAll(t.memsets));
  KFUSE_RETURN_IF_ERROR(addAll(t.events));
  KFUSE_RETURN_IF_ERROR(addAll(t.syncs));
  KFUSE_RETURN_IF_ERROR(addAll(t.nvtx_ranges));
  KFUSE_RETURN_IF_ERROR(addAll(t.metrics));
  KFUSE_RETURN_IF_ERROR(addAll(t.graphs));
  KFUSE_RETURN_IF_ERROR(addAll(t.graph_nodes));
  KFUSE_RETURN_IF_ERROR(addAll(t.graph_edges));
  KFUSE_RETURN_IF_ERROR(addAll(t.graph_execs));
  KFUSE_RETURN_IF_ERROR(addAll(t.graph_launches));
  KFUSE_RETURN_IF_ERROR(addAll(t.stats));
  return flush();
}

Status TraceWriter::flush() {
  return impl_->commit();
}

Status TraceWriter::close() {
  if (impl_->closed) return {};
  Status s = impl_->commit();
  impl_->closed = true;
  // Finalize statements before closing so SQLite can checkpoint the WAL into the main file.
  for (Stmt* st : {&impl_->meta, &impl_->module_image, &impl_->allocation_freed}) *st = Stmt();
  impl_->inserts = Inserts();
  impl_->db.close();
  return s;
}

// ---------------------------------------------------------------------------------------------------------------
// Reader

struct TraceReader::Impl {
  Db db;

  template <typename RowFn>
  Status query(const char* sql, RowFn&& row) {
    return db.query(sql, std::forward<RowFn>(row));
  }

  // Whether the file has a table or view of that name (tables added by later schema versions may be absent).
  Expected<bool> has(const char* name) {
    bool found = false;
    KFUSE_ASSIGN_OR_RETURN(Stmt st, db.prepare("SELECT 1 FROM sqlite_master WHERE name = ?1"));
    st.bind(1, std::string_view(name));
    KFUSE_ASSIGN_OR_RETURN(found, db.step(st));
    return found;
  }

  // Rows of a table that a trace of an older schema version may lack: 0 then.
  Expected<int64_t> countIfPresent(const char* table) {
    KFUSE_ASSIGN_OR_RETURN(const bool present, has(table));
    if (!present) return int64_t{0};
    return count(table);
  }

  Expected<int64_t> count(const char* table) {
    int64_t n = 0;
    const std::string sql = std::string("SELECT count(*) FROM ") + table;
    KFUSE_RETURN_IF_ERROR(query(sql.c_str(), [&](Stmt& s) { n = s.i64(0); }));
    return n;
  }

  // SELECT of R's table in tableColumns<R>() order, by primary key. A column the file lacks (it was written
  // before the field existed) reads as the field's default.
  template <typename R>
  Expected<std::string> selectSql() {
    std::unordered_set<std::string> present;
    const std::string info = std::string("PRAGMA table_info(") + kRecord<R>.table + ")";
    KFUSE_RETURN_IF_ERROR(query(info.c_str(), [&](Stmt& s) { present.insert(s.text(1)); }));
    const std::vector<Column> cols = detail::tableColumns<R>();
    std::string list;
    for (const Column& c : cols) {
      if (!list.empty()) list += ", ";
      list += present.count(c.name) ? c.name : c.value_sql + " AS " + c.name;
    }
    return "SELECT " + list + " FROM " + kRecord<R>.table + " ORDER BY " + joinColumns(cols, /*keys_only=*/true);
  }

  // Reads every row of R's table (and of its child tables) into `out`, in key order.
  template <typename R>
  Status readTable(std::vector<R>& out, const std::string& path) {
    if constexpr (kRecord<R>.since_version > 1) {
      KFUSE_ASSIGN_OR_RETURN(const bool present, has(kRecord<R>.table));
      if (!present) return {};  // written before the table existed: none
    }
    KFUSE_ASSIGN_OR_RETURN(const std::string sql, selectSql<R>());
    Status bad;
    KFUSE_RETURN_IF_ERROR(query(sql.c_str(), [&](Stmt& s) {
      R r{};
      detail::forEachField(r, RowReader(s, 0, kRecord<R>.table, bad));
      out.push_back(std::move(r));
    }));
    if (!bad.ok()) return badFormat(path + ": " + bad.message());
    Status s;
    const R defaults{};
    detail::forEachField(defaults, [&](const Field&, const auto& member) {
      using M = std::remove_cvref_t<decltype(member)>;
      if constexpr (kIsChildTable<M>) {
        if (s.ok()) s = readChildren<R, typename M::value_type>(out, path);
      }
    });
    return s;
  }

  // Reads child table C (its first column the parent's id) into the matching vector of each parent in
  // `parents` (sorted by id). Rows whose parent is missing are ignored.
  template <typename R, typename C>
  Status readChildren(std::vector<R>& parents, const std::string& path) {
    KFUSE_ASSIGN_OR_RETURN(const std::string sql, selectSql<C>());
    Status bad;
    size_t pi = 0;
    KFUSE_RETURN_IF_ERROR(query(sql.c_str(), [&](Stmt& s) {
      const Id parent_id = s.i64(0);
      while (pi < parents.size() && parents[pi].id < parent_id) ++pi;
      if (pi == parents.size() || parents[pi].id != parent_id) return;  // orphan row
      C c{};
      detail::forEachField(c, RowReader(s, 1, kRecord<C>.table, bad));
      detail::forEachField(parents[pi], [&](const Field&, auto&& member) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(member)>, std::vector<C>>) member.push_back(c);
      });
    }));
    if (!bad.ok()) return badFormat(path + ": " + bad.message());
    return {};
  }
};

TraceReader::TraceReader(std::string path, std::unique_ptr<Impl> impl, int schema_version)
    : path_(std::move(path)), impl_(std::move(impl)), schema_version_(schema_version) {}

TraceReader::~TraceReader() = default;

Expected<std::unique_ptr<TraceReader>> TraceReader::open(const std::string& path) {
  KFUSE_RETURN_IF_ERROR(checkSqliteFile(path));
  auto impl = std::make_unique<Impl>();
  KFUSE_RETURN_IF_ERROR(impl->db.openForReading(path));

  bool has_meta = false;
  Status s = impl->query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'kfuse_meta'",
                         [&](Stmt&) { has_meta = true; });
  if (!s.ok()) return s;
  if (!has_meta) {
    return badFormat(path +
                     ": a SQLite database but not a kfuse trace (no kfuse_meta table); "
                     "Nsight Systems exports are read by `kfuse analyze`, not as kfuse traces");
  }
  std::string format;
  KFUSE_RETURN_IF_ERROR(
      impl->query("SELECT value FROM kfuse_meta WHERE key = 'format'", [&](Stmt& st) { format = st.text(0); }));
  if (format != kTraceFormatName) {
    return badFormat(path + ": a SQLite database but not a kfuse trace (kfuse_meta.format is '" + format + "')");
  }
  int version = 0;
  KFUSE_RETURN_IF_ERROR(impl->query("PRAGMA user_version", [&](Stmt& st) { version = static_cast<int>(st.i64(0)); }));
  if (version > kTraceSchemaVersion) {
    return unsupportedVersion(path + ": trace schema version " + std::to_string(version) +
                              " is newer than this kfuse reads (up to " + std::to_string(kTraceSchemaVersion) +
                              "); upgrade kfuse");
  }
  if (version < 1) return badFormat(path + ": kfuse trace without a schema version (PRAGMA user_version is 0)");
  // Touch every table once so that a file truncated or damaged inside its schema fails here, at open.
  KFUSE_RETURN_IF_ERROR(impl->count("launch").status());
  return std::unique_ptr<TraceReader>(new TraceReader(path, std::move(impl), version));
}

Expected<std::optional<std::string>> TraceReader::latestAnalysisReport() {
  bool has_table = false;
  KFUSE_RETURN_IF_ERROR(impl_->query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'analysis'",
                                     [&](Stmt&) { has_table = true; }));
  std::optional<std::string> report;
  if (!has_table) return report;
  KFUSE_RETURN_IF_ERROR(
      impl_->query("SELECT report FROM analysis ORDER BY id DESC LIMIT 1", [&](Stmt& s) { report = s.text(0); }));
  return report;
}

Expected<int64_t> storeAnalysisReport(const std::string& trace_path, const std::string& gpu_short_name,
                                      const std::string& report_json) {
  // Validate first, with the reader's clear errors, so nothing is written into a file that is not ours.
  KFUSE_ASSIGN_OR_RETURN(auto reader, TraceReader::open(trace_path));
  reader.reset();
  Db db;
  KFUSE_RETURN_IF_ERROR(db.open(trace_path, SQLITE_OPEN_READWRITE));
  KFUSE_RETURN_IF_ERROR(db.exec("PRAGMA busy_timeout=5000; BEGIN IMMEDIATE"));
  KFUSE_RETURN_IF_ERROR(db.exec(detail::kAnalysisTableSql));
  KFUSE_RETURN_IF_ERROR(db.exec(detail::kReviewTableSql));           // the migration to version 3 creates both
  KFUSE_RETURN_IF_ERROR(db.exec(detail::graphTablesSql().c_str()));  // and to version 4 the graph tables
  KFUSE_RETURN_IF_ERROR(db.exec(("PRAGMA user_version=" + std::to_string(kTraceSchemaVersion)).c_str()));
  KFUSE_ASSIGN_OR_RETURN(Stmt st, db.prepare("INSERT INTO analysis(created_ns, kfuse_version, gpu, report) "
                                             "VALUES (?1, ?2, ?3, ?4)"));
  const auto now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  st.bind(1, static_cast<int64_t>(now));
  st.bind(2, std::string_view(KFUSE_VERSION_STRING));
  st.bind(3, gpu_short_name);
  st.bind(4, report_json);
  KFUSE_RETURN_IF_ERROR(db.run(st));
  const int64_t id = sqlite3_last_insert_rowid(db.get());
  st = Stmt();
  KFUSE_RETURN_IF_ERROR(db.exec("COMMIT"));
  return id;
}

Expected<TraceMetadata> TraceReader::metadata() {
  std::map<std::string, std::string> rows;
  KFUSE_RETURN_IF_ERROR(
      impl_->query("SELECT key, value FROM kfuse_meta", [&](Stmt& st) { rows[st.text(0)] = st.text(1); }));
  TraceMetadata m;
  detail::forEachField(m, [&](const Field& f, auto&& member) {
    using M = std::remove_cvref_t<decltype(member)>;
    if constexpr (std::is_same_v<M, std::map<std::string, std::string>>) {
      const std::string prefix = std::string(f.name) + ".";
      for (auto it = rows.lower_bound(prefix); it != rows.end() && it->first.rfind(prefix, 0) == 0; ++it) {
        member[it->first.substr(prefix.size())] = it->second;
      }
      return;
    } else {
      auto it = rows.find(f.name);
      if (it == rows.end()) return;
      if constexpr (std::is_same_v<M, std::string>) {
        member = it->second;
      } else {
        static_assert(std::is_same_v<M, TimeRef>, "no kfuse_meta form for this member");
        member.v = std::strtoll(it->second.c_str(), nullptr, 10);
      }
    }
  });
  return m;
}

Expected<TraceCounts> TraceReader::counts() {
  TraceCounts c;
  struct Entry {
    int64_t* field;
    const char* table;
  };
  const Entry entries[] = {
      {&c.processes, "process"},
      {&c.devices, "device"},
      {&c.contexts, "context"},
      {&c.streams, "stream"},
      {&c.modules, "module"},
      {&c.module_images, "module_image"},
      {&c.functions, "function"},
      {&c.launches, "launch"},
      {&c.pointer_args, "launch_pointer_arg"},
      {&c.allocations, "allocation"},
      {&c.memcpys, "memcpy"},
      {&c.memsets, "memset"},
      {&c.syncs, "sync"},
      {&c.events, "event"},
      {&c.nvtx_ranges, "nvtx_range"},
      {&c.metrics, "metric"},
      {&c.stats, "stat"},
  };
  for (const Entry& e : entries) {
    KFUSE_ASSIGN_OR_RETURN(*e.field, impl_->count(e.table));
  }
  // Schema version 4.
  const Entry graph_entries[] = {
      {&c.graphs, "graph"},
      {&c.graph_nodes, "graph_node"},
      {&c.graph_edges, "graph_edge"},
      {&c.graph_execs, "graph_exec"},
      {&c.graph_launches, "graph_launch"},
      {&c.graph_launch_kernels, "graph_launch_kernel"},
  };
  for (const Entry& e : graph_entries) {
    KFUSE_ASSIGN_OR_RETURN(*e.field, impl_->countIfPresent(e.table));
  }
  return c;
}

Status TraceReader::forEachLaunch(const std::function<bool(const Launch&)>& fn) {
  KFUSE_ASSIGN_OR_RETURN(const std::string sql, impl_->selectSql<Launch>());
  KFUSE_ASSIGN_OR_RETURN(Stmt launches, impl_->db.prepare(sql));
  Launch l;
  Status bad;
  for (uint64_t rows = 0;; ++rows) {
    if ((rows & 4095) == 0) KFUSE_RETURN_IF_CANCELLED();
    KFUSE_ASSIGN_OR_RETURN(bool have_launch, impl_->db.step(launches));
    if (!have_launch) return {};
    RowReader reader(launches, 0, "launch", bad);
    reader.setRow("launch " + std::to_string(launches.i64(0)));
    detail::forEachField(l, reader);
    if (!bad.ok()) return badFormat(path_ + ": " + bad.message());
    if (!fn(l)) return {};
  }
}

Expected<Trace> TraceReader::readAllButLaunches() {
  Trace t;
  KFUSE_ASSIGN_OR_RETURN(t.metadata, metadata());
  Status s;
  detail::forEachTable(t, [&](const char*, auto& records) {
    using R = typename std::remove_cvref_t<decltype(records)>::value_type;
    if constexpr (!std::is_same_v<R, Launch> && !std::is_same_v<R, Metric>) {
      if (s.ok()) s = impl_->readTable(records, path_);
    }
  });
  KFUSE_RETURN_IF_ERROR(s);
  // Module images are stored once per hash in module_image.
  KFUSE_ASSIGN_OR_RETURN(Stmt image, impl_->db.prepare("SELECT bytes FROM module_image WHERE hash = ?1"));
  for (Module& m : t.modules) {
    image.bind(1, std::string_view(m.hash));
    KFUSE_ASSIGN_OR_RETURN(bool found, impl_->db.step(image));
    if (found) m.image = image.blob(0);
    sqlite3_reset(image.get());
  }
  return t;
}

Expected<Trace> TraceReader::readAll() {
  KFUSE_ASSIGN_OR_RETURN(Trace t, readAllButLaunches());
  KFUSE_RETURN_IF_ERROR(forEachLaunch([&](const Launch& l) {
    t.launches.push_back(l);
    return true;
  }));
  KFUSE_RETURN_IF_ERROR(impl_->readTable(t.metrics, path_));
  return t;
}

}  // namespace kfuse::core
