#include "kfuse/core/trace_store.h"

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
#include "trace_sql.h"

namespace kfuse::core {

using sqlite::Db;
using sqlite::Stmt;

namespace {

constexpr int64_t kNullId = kNoId;

// Reads a big-endian integer of `n` bytes.
uint64_t readBigEndian(const unsigned char* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

// Checks what SQLite itself would only discover deep inside a query: that the file is a SQLite database at
// all, and that it is as long as its header says. Returns ok for a plausible file.
Status checkSqliteFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return notFound(path + ": no such file");
  if (std::filesystem::is_directory(path, ec)) return invalidArgument(path + ": is a directory, not a trace file");
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) return ioError(path + ": cannot read size: " + ec.message());
  if (file_size == 0) return badFormat(path + ": empty file, not a kfuse trace");
  unsigned char header[100] = {};
  std::ifstream in(path, std::ios::binary);
  if (!in) return ioError(path + ": cannot open for reading");
  in.read(reinterpret_cast<char*>(header), sizeof header);
  const auto got = static_cast<size_t>(in.gcount());
  static constexpr char kMagic[] = "SQLite format 3";  // 16 bytes with its NUL
  if (got < 16 || std::memcmp(header, kMagic, 16) != 0) {
    return badFormat(path + ": not a SQLite database, so not a kfuse trace");
  }
  if (got < sizeof header) return badFormat(path + ": truncated SQLite header (" + std::to_string(got) + " bytes)");
  uint64_t page_size = readBigEndian(header + 16, 2);
  if (page_size == 1) page_size = 65536;
  const uint64_t page_count = readBigEndian(header + 28, 4);
  const uint64_t change_counter = readBigEndian(header + 24, 4);
  const uint64_t valid_for = readBigEndian(header + 92, 4);
  // The in-header size is authoritative only when valid_for matches the change counter (SQLite file format §1.3).
  if (page_count > 0 && valid_for == change_counter && page_size >= 512) {
    const uint64_t expected = page_count * page_size;
    if (file_size < expected) {
      return badFormat(path + ": truncated trace: the header promises " + std::to_string(expected) +
                       " bytes but the file has " + std::to_string(file_size));
    }
  }
  return {};
}

// launch.pointer_args: [[param_index,address,allocation_id|null,offset],...] with unsigned decimal numbers.
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
    put(static_cast<uint64_t>(a.param_index));
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
  do {
    uint64_t index = 0, address = 0, allocation = 0, offset = 0;
    if (!eat('[') || !number(index) || !eat(',') || !number(address) || !eat(',')) return false;
    if (text.substr(pos, 4) == "null") {
      pos += 4;
    } else if (!number(allocation)) {
      return false;
    }
    if (!eat(',') || !number(offset) || !eat(']')) return false;
    if (index > 0xffff || allocation > static_cast<uint64_t>(INT64_MAX)) return false;
    out.push_back(PointerArg{static_cast<int>(index), address, static_cast<Id>(allocation), offset});
  } while (eat(','));
  return eat(']') && pos == text.size();
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// Writer

struct TraceWriter::Impl {
  Db db;
  TraceWriterOptions options;
  size_t rows_in_txn = 0;
  bool in_txn = false;
  bool closed = false;
  std::unordered_set<std::string> stored_images;
  std::string pointer_args_text;  // reused buffer for launch.pointer_args

  Stmt meta, process, device, context, stream, module_image, module, function, param, launch, allocation, allocation_freed, memcpy, memset, sync, event, nvtx, metric, stat;

  Status prepareAll() {
    struct Entry {
      Stmt* stmt;
      const char* sql;
    };
    const Entry entries[] = {
        {&meta, "INSERT OR REPLACE INTO kfuse_meta(key, value) VALUES (?1, ?2)"},
        {&process, "INSERT INTO process(id, pid, name) VALUES (?1, ?2, ?3)"},
        {&device,
         "INSERT INTO device(id, ordinal, name, cc_major, cc_minor, sm_count, memory_bytes, clock_khz, uuid) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"},
        {&context, "INSERT INTO context(id, device_id, process_id, handle) VALUES (?1, ?2, ?3, ?4)"},
        {&stream,
         "INSERT INTO stream(id, context_id, handle, native_id, priority, is_default) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"},
        {&module_image, "INSERT OR IGNORE INTO module_image(hash, kind, size, bytes) VALUES (?1, ?2, ?3, ?4)"},
        {&module, "INSERT INTO module(id, context_id, kind, image_hash, load_ns) VALUES (?1, ?2, ?3, ?4, ?5)"},
        {&function,
         "INSERT INTO function(id, module_id, mangled_name, demangled_name) VALUES (?1, ?2, ?3, ?4)"},
        {&param,
         "INSERT INTO function_param(function_id, idx, offset, size, type, access) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"},
        {&launch,
         "INSERT INTO launch(id, correlation_id, thread_id, stream_id, function_id, grid_x, grid_y, grid_z, "
         "block_x, block_y, block_z, dynamic_shared_bytes, static_shared_bytes, registers_per_thread, "
         "api_start_ns, api_end_ns, gpu_start_ns, gpu_end_ns, arg_bytes, pointer_args) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)"},
        {&allocation,
         "INSERT INTO allocation(id, context_id, address, size, kind, alloc_ns, free_ns) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"},
        {&allocation_freed, "UPDATE allocation SET free_ns = ?2 WHERE id = ?1"},
        {&memcpy,
         "INSERT INTO memcpy(id, correlation_id, thread_id, stream_id, kind, src_address, dst_address, "
         "src_allocation_id, dst_allocation_id, bytes, async, api_start_ns, api_end_ns, gpu_start_ns, "
         "gpu_end_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"},
        {&memset,
         "INSERT INTO memset(id, correlation_id, thread_id, stream_id, dst_address, dst_allocation_id, bytes, "
         "value, element_size, async, api_start_ns, api_end_ns, gpu_start_ns, gpu_end_ns) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"},
        {&sync,
         "INSERT INTO sync(id, correlation_id, thread_id, kind, stream_id, event_id, start_ns, end_ns) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"},
        {&event,
         "INSERT INTO event(id, correlation_id, handle, stream_id, record_ns) VALUES (?1, ?2, ?3, ?4, ?5)"},
        {&nvtx,
         "INSERT INTO nvtx_range(id, name, domain, thread_id, start_ns, end_ns) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"},
        {&metric,
         "INSERT OR REPLACE INTO metric(launch_id, name, value, unit, source) VALUES (?1, ?2, ?3, ?4, ?5)"},
        {&stat,
         "INSERT OR REPLACE INTO stat(name, value, severity, description) VALUES (?1, ?2, ?3, ?4)"},
    };
    for (const Entry& e : entries) {
      KFUSE_ASSIGN_OR_RETURN(*e.stmt, db.prepare(e.sql));
    }
    return {};
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

Expected<std::unique_ptr<TraceWriter>> TraceWriter::create(const std::string& path, TraceWriterOptions options) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    if (!options.overwrite) return invalidArgument(path + ": already exists (choose another name or overwrite)");
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix, ec);
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (impl->options.batch_rows == 0) impl->options.batch_rows = 1;
  KFUSE_RETURN_IF_ERROR(impl->db.open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX));
  // WAL + synchronous=NORMAL: a committed batch survives the writer being killed; only the last open
  // transaction can be lost.
  KFUSE_RETURN_IF_ERROR(impl->db.exec("PRAGMA page_size=16384; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-65536; PRAGMA wal_autocheckpoint=8192;"));
  KFUSE_RETURN_IF_ERROR(impl->db.exec("BEGIN"));
  KFUSE_RETURN_IF_ERROR(impl->db.exec(detail::kTraceSql));
  KFUSE_RETURN_IF_ERROR(
      impl->db.exec(("PRAGMA user_version=" + std::to_string(kTraceSchemaVersion)).c_str()));
  KFUSE_RETURN_IF_ERROR(impl->prepareAll());
  impl->in_txn = true;
  KFUSE_RETURN_IF_ERROR(impl->putMeta("format", kTraceFormatName));
  KFUSE_RETURN_IF_ERROR(impl->putMeta("schema_version", std::to_string(kTraceSchemaVersion)));
  KFUSE_RETURN_IF_ERROR(impl->commit());
  return std::unique_ptr<TraceWriter>(new TraceWriter(path, std::move(impl)));
}

Status TraceWriter::setMetadata(const TraceMetadata& m) {
  KFUSE_RETURN_IF_ERROR(impl_->putMeta("producer", m.producer));
  KFUSE_RETURN_IF_ERROR(impl_->putMeta("producer_version", m.producer_version));
  KFUSE_RETURN_IF_ERROR(impl_->putMeta("command_line", m.command_line));
  KFUSE_RETURN_IF_ERROR(impl_->putMeta("host", m.host));
  KFUSE_RETURN_IF_ERROR(impl_->putMeta("start_time_ns", std::to_string(m.start_time_ns)));
  for (const auto& [k, v] : m.extra) KFUSE_RETURN_IF_ERROR(impl_->putMeta("extra." + k, v));
  return {};
}

Status TraceWriter::add(const Process& v) {
  Stmt& s = impl_->process;
  s.bind(1, v.id);
  s.bind(2, v.pid);
  s.bind(3, v.name);
  return impl_->runRow(s);
}

Status TraceWriter::add(const Device& v) {
  Stmt& s = impl_->device;
  s.bind(1, v.id);
  s.bind(2, int64_t{v.ordinal});
  s.bind(3, v.name);
  s.bind(4, int64_t{v.cc_major});
  s.bind(5, int64_t{v.cc_minor});
  s.bind(6, int64_t{v.sm_count});
  s.bindU64(7, v.memory_bytes);
  s.bind(8, v.clock_khz);
  s.bind(9, v.uuid);
  return impl_->runRow(s);
}

Status TraceWriter::add(const Context& v) {
  Stmt& s = impl_->context;
  s.bind(1, v.id);
  s.bindNullIf(2, v.device_id, kNullId);
  s.bindNullIf(3, v.process_id, kNullId);
  s.bindU64(4, v.handle);
  return impl_->runRow(s);
}

Status TraceWriter::add(const Stream& v) {
  Stmt& s = impl_->stream;
  s.bind(1, v.id);
  s.bindNullIf(2, v.context_id, kNullId);
  s.bindU64(3, v.handle);
  s.bind(4, v.native_id);
  s.bind(5, int64_t{v.priority});
  s.bind(6, int64_t{v.is_default});
  return impl_->runRow(s);
}

Status TraceWriter::add(const Module& v) {
  std::string hash = v.hash;
  if (hash.empty() && !v.image.empty()) hash = sha256Hex(v.image);
  if (!v.image.empty() && impl_->stored_images.insert(hash).second) {
    Stmt& img = impl_->module_image;
    img.bind(1, hash);
    img.bind(2, toString(v.kind));
    img.bind(3, static_cast<int64_t>(v.image.size()));
    img.bindBlob(4, v.image);
    KFUSE_RETURN_IF_ERROR(impl_->runRow(img));
  }
  Stmt& s = impl_->module;
  s.bind(1, v.id);
  s.bindNullIf(2, v.context_id, kNullId);
  s.bind(3, toString(v.kind));
  s.bind(4, hash);
  s.bindNullIf(5, v.load_ns, kNoTime);
  return impl_->runRow(s);
}

Status TraceWriter::add(const KernelFunction& v) {
  Stmt& s = impl_->function;
  s.bind(1, v.id);
  s.bindNullIf(2, v.module_id, kNullId);
  s.bind(3, v.mangled_name);
  s.bind(4, v.demangled_name);
  KFUSE_RETURN_IF_ERROR(impl_->runRow(s));
  for (const KernelParam& p : v.params) {
    Stmt& ps = impl_->param;
    ps.bind(1, v.id);
    ps.bind(2, int64_t{p.index});
    ps.bind(3, int64_t{p.offset});
    ps.bind(4, int64_t{p.size});
    ps.bind(5, p.type);
    ps.bind(6, toString(p.access));
    KFUSE_RETURN_IF_ERROR(impl_->runRow(ps));
  }
  return {};
}

Status TraceWriter::add(const Launch& v) {
  Stmt& s = impl_->launch;
  s.bind(1, v.id);
  s.bind(2, v.correlation_id);
  s.bind(3, v.thread_id);
  s.bindNullIf(4, v.stream_id, kNullId);
  s.bindNullIf(5, v.function_id, kNullId);
  s.bind(6, int64_t{v.grid.x});
  s.bind(7, int64_t{v.grid.y});
  s.bind(8, int64_t{v.grid.z});
  s.bind(9, int64_t{v.block.x});
  s.bind(10, int64_t{v.block.y});
  s.bind(11, int64_t{v.block.z});
  s.bind(12, int64_t{v.dynamic_shared_bytes});
  s.bind(13, int64_t{v.static_shared_bytes});
  s.bind(14, int64_t{v.registers_per_thread});
  s.bindNullIf(15, v.api_start_ns, kNoTime);
  s.bindNullIf(16, v.api_end_ns, kNoTime);
  s.bindNullIf(17, v.gpu_start_ns, kNoTime);
  s.bindNullIf(18, v.gpu_end_ns, kNoTime);
  s.bindBlob(19, v.arg_bytes);
  if (v.pointer_args.empty()) {
    sqlite3_bind_null(s.get(), 20);
  } else {
    encodePointerArgs(v.pointer_args, impl_->pointer_args_text);
    s.bind(20, std::string_view(impl_->pointer_args_text));
  }
  return impl_->runRow(s);
}

Status TraceWriter::add(const Allocation& v) {
  Stmt& s = impl_->allocation;
  s.bind(1, v.id);
  s.bindNullIf(2, v.context_id, kNullId);
  s.bindU64(3, v.address);
  s.bindU64(4, v.size);
  s.bind(5, toString(v.kind));
  s.bindNullIf(6, v.alloc_ns, kNoTime);
  s.bindNullIf(7, v.free_ns, kNoTime);
  return impl_->runRow(s);
}

Status TraceWriter::setAllocationFreed(Id allocation_id, int64_t free_ns) {
  Stmt& s = impl_->allocation_freed;
  s.bind(1, allocation_id);
  s.bindNullIf(2, free_ns, kNoTime);
  return impl_->runRow(s);
}

Status TraceWriter::add(const Memcpy& v) {
  Stmt& s = impl_->memcpy;
  s.bind(1, v.id);
  s.bind(2, v.correlation_id);
  s.bind(3, v.thread_id);
  s.bindNullIf(4, v.stream_id, kNullId);
  s.bind(5, toString(v.kind));
  s.bindU64(6, v.src_address);
  s.bindU64(7, v.dst_address);
  s.bindNullIf(8, v.src_allocation_id, kNullId);
  s.bindNullIf(9, v.dst_allocation_id, kNullId);
  s.bindU64(10, v.bytes);
  s.bind(11, int64_t{v.async});
  s.bindNullIf(12, v.api_start_ns, kNoTime);
  s.bindNullIf(13, v.api_end_ns, kNoTime);
  s.bindNullIf(14, v.gpu_start_ns, kNoTime);
  s.bindNullIf(15, v.gpu_end_ns, kNoTime);
  return impl_->runRow(s);
}

Status TraceWriter::add(const Memset& v) {
  Stmt& s = impl_->memset;
  s.bind(1, v.id);
  s.bind(2, v.correlation_id);
  s.bind(3, v.thread_id);
  s.bindNullIf(4, v.stream_id, kNullId);
  s.bindU64(5, v.dst_address);
  s.bindNullIf(6, v.dst_allocation_id, kNullId);
  s.bindU64(7, v.bytes);
  s.bind(8, int64_t{v.value});
  s.bind(9, int64_t{v.element_size});
  s.bind(10, int64_t{v.async});
  s.bindNullIf(11, v.api_start_ns, kNoTime);
  s.bindNullIf(12, v.api_end_ns, kNoTime);
  s.bindNullIf(13, v.gpu_start_ns, kNoTime);
  s.bindNullIf(14, v.gpu_end_ns, kNoTime);
  return impl_->runRow(s);
}

Status TraceWriter::add(const Sync& v) {
  Stmt& s = impl_->sync;
  s.bind(1, v.id);
  s.bind(2, v.correlation_id);
  s.bind(3, v.thread_id);
  s.bind(4, toString(v.kind));
  s.bindNullIf(5, v.stream_id, kNullId);
  s.bindNullIf(6, v.event_id, kNullId);
  s.bindNullIf(7, v.start_ns, kNoTime);
  s.bindNullIf(8, v.end_ns, kNoTime);
  return impl_->runRow(s);
}

Status TraceWriter::add(const Event& v) {
  Stmt& s = impl_->event;
  s.bind(1, v.id);
  s.bind(2, v.correlation_id);
  s.bindU64(3, v.handle);
  s.bindNullIf(4, v.stream_id, kNullId);
  s.bindNullIf(5, v.record_ns, kNoTime);
  return impl_->runRow(s);
}

Status TraceWriter::add(const NvtxRange& v) {
  Stmt& s = impl_->nvtx;
  s.bind(1, v.id);
  s.bind(2, v.name);
  s.bind(3, v.domain);
  s.bind(4, v.thread_id);
  s.bindNullIf(5, v.start_ns, kNoTime);
  s.bindNullIf(6, v.end_ns, kNoTime);
  return impl_->runRow(s);
}

Status TraceWriter::add(const Metric& v) {
  Stmt& s = impl_->metric;
  s.bind(1, v.launch_id);
  s.bind(2, v.name);
  s.bind(3, v.value);
  s.bind(4, v.unit);
  s.bind(5, toString(v.source));
  return impl_->runRow(s);
}

Status TraceWriter::add(const Stat& v) {
  Stmt& s = impl_->stat;
  s.bind(1, v.name);
  s.bind(2, v.value);
  s.bind(3, toString(v.severity));
  s.bind(4, v.description);
  return impl_->runRow(s);
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
  KFUSE_RETURN_IF_ERROR(addAll(t.stats));
  return flush();
}

Status TraceWriter::flush() { return impl_->commit(); }

Status TraceWriter::close() {
  if (impl_->closed) return {};
  Status s = impl_->commit();
  impl_->closed = true;
  // Finalize statements before closing so SQLite can checkpoint the WAL into the main file.
  for (Stmt* st : {&impl_->meta, &impl_->process, &impl_->device, &impl_->context, &impl_->stream,
                   &impl_->module_image, &impl_->module, &impl_->function, &impl_->param, &impl_->launch,
                   &impl_->allocation, &impl_->allocation_freed, &impl_->memcpy,
                   &impl_->memset, &impl_->sync, &impl_->event, &impl_->nvtx, &impl_->metric, &impl_->stat}) {
    *st = Stmt();
  }
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

  Expected<int64_t> count(const char* table) {
    int64_t n = 0;
    const std::string sql = std::string("SELECT count(*) FROM ") + table;
    KFUSE_RETURN_IF_ERROR(query(sql.c_str(), [&](Stmt& s) { n = s.i64(0); }));
    return n;
  }
};

TraceReader::TraceReader(std::string path, std::unique_ptr<Impl> impl, int schema_version)
    : path_(std::move(path)), impl_(std::move(impl)), schema_version_(schema_version) {}

TraceReader::~TraceReader() = default;

Expected<std::unique_ptr<TraceReader>> TraceReader::open(const std::string& path) {
  KFUSE_RETURN_IF_ERROR(checkSqliteFile(path));
  auto impl = std::make_unique<Impl>();
  KFUSE_RETURN_IF_ERROR(impl->db.open(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX));

  bool has_meta = false;
  Status s = impl->query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'kfuse_meta'",
                         [&](Stmt&) { has_meta = true; });
  if (!s.ok()) return s;
  if (!has_meta) {
    return badFormat(path + ": a SQLite database but not a kfuse trace (no kfuse_meta table); "
                            "Nsight Systems exports are read by `kfuse analyze`, not as kfuse traces");
  }
  std::string format;
  KFUSE_RETURN_IF_ERROR(impl->query("SELECT value FROM kfuse_meta WHERE key = 'format'",
                                    [&](Stmt& st) { format = st.text(0); }));
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
  KFUSE_RETURN_IF_ERROR(impl_->query("SELECT report FROM analysis ORDER BY id DESC LIMIT 1",
                                     [&](Stmt& s) { report = s.text(0); }));
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
  const char* kCreate =
      "CREATE TABLE IF NOT EXISTS analysis (id INTEGER PRIMARY KEY, created_ns INTEGER NOT NULL, "
      "kfuse_version TEXT NOT NULL, gpu TEXT NOT NULL, report TEXT NOT NULL)";
  KFUSE_RETURN_IF_ERROR(db.exec(kCreate));
  KFUSE_RETURN_IF_ERROR(db.exec(("PRAGMA user_version=" + std::to_string(kTraceSchemaVersion)).c_str()));
  KFUSE_ASSIGN_OR_RETURN(Stmt st, db.prepare("INSERT INTO analysis(created_ns, kfuse_version, gpu, report) "
                                             "VALUES (?1, ?2, ?3, ?4)"));
  const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
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
  TraceMetadata m;
  Status s = impl_->query("SELECT key, value FROM kfuse_meta", [&](Stmt& st) {
    const std::string key = st.text(0);
    std::string value = st.text(1);
    if (key == "producer") {
      m.producer = std::move(value);
    } else if (key == "producer_version") {
      m.producer_version = std::move(value);
    } else if (key == "command_line") {
      m.command_line = std::move(value);
    } else if (key == "host") {
      m.host = std::move(value);
    } else if (key == "start_time_ns") {
      m.start_time_ns = std::strtoll(value.c_str(), nullptr, 10);
    } else if (key.rfind("extra.", 0) == 0) {
      m.extra[key.substr(6)] = std::move(value);
    }
  });
  if (!s.ok()) return s;
  return m;
}

Expected<TraceCounts> TraceReader::counts() {
  TraceCounts c;
  struct Entry {
    int64_t* field;
    const char* table;
  };
  const Entry entries[] = {
      {&c.processes, "process"},     {&c.devices, "device"},         {&c.contexts, "context"},
      {&c.streams, "stream"},        {&c.modules, "module"},         {&c.module_images, "module_image"},
      {&c.functions, "function"},    {&c.launches, "launch"},        {&c.pointer_args, "launch_pointer_arg"},
      {&c.allocations, "allocation"}, {&c.memcpys, "memcpy"},        {&c.memsets, "memset"},
      {&c.syncs, "sync"},            {&c.events, "event"},           {&c.nvtx_ranges, "nvtx_range"},
      {&c.metrics, "metric"},        {&c.stats, "stat"},
  };
  for (const Entry& e : entries) {
    KFUSE_ASSIGN_OR_RETURN(*e.field, impl_->count(e.table));
  }
  return c;
}

Status TraceReader::forEachLaunch(const std::function<bool(const Launch&)>& fn) {
  // Two cursors walked in step: launches by id, pointer args by (launch_id, param_index).
  KFUSE_ASSIGN_OR_RETURN(
      Stmt launches,
      impl_->db.prepare("SELECT id, correlation_id, thread_id, stream_id, function_id, grid_x, grid_y, grid_z, "
                        "block_x, block_y, block_z, dynamic_shared_bytes, static_shared_bytes, "
                        "registers_per_thread, api_start_ns, api_end_ns, gpu_start_ns, gpu_end_ns, arg_bytes, "
                        "pointer_args FROM launch ORDER BY id"));
  Launch l;
  while (true) {
    KFUSE_ASSIGN_OR_RETURN(bool have_launch, impl_->db.step(launches));
    if (!have_launch) return {};
    const Stmt& s = launches;
    l.id = s.i64(0);
    l.correlation_id = s.i64(1);
    l.thread_id = s.i64(2);
    l.stream_id = s.i64Or(3, kNoId);
    l.function_id = s.i64Or(4, kNoId);
    l.grid = {static_cast<uint32_t>(s.i64(5)), static_cast<uint32_t>(s.i64(6)), static_cast<uint32_t>(s.i64(7))};
    l.block = {static_cast<uint32_t>(s.i64(8)), static_cast<uint32_t>(s.i64(9)), static_cast<uint32_t>(s.i64(10))};
    l.dynamic_shared_bytes = static_cast<uint32_t>(s.i64(11));
    l.static_shared_bytes = static_cast<uint32_t>(s.i64(12));
    l.registers_per_thread = static_cast<uint32_t>(s.i64(13));
    l.api_start_ns = s.i64Or(14, kNoTime);
    l.api_end_ns = s.i64Or(15, kNoTime);
    l.gpu_start_ns = s.i64Or(16, kNoTime);
    l.gpu_end_ns = s.i64Or(17, kNoTime);
    l.arg_bytes = s.blob(18);
    l.pointer_args.clear();
    if (!s.isNull(19)) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 19));
      const int size = sqlite3_column_bytes(s.get(), 19);
      if (!decodePointerArgs(std::string_view(text, static_cast<size_t>(size)), l.pointer_args)) {
        return badFormat(path_ + ": launch " + std::to_string(l.id) + ": malformed pointer_args '" +
                         std::string(text, static_cast<size_t>(std::min(size, 80))) + "'");
      }
    }
    if (!fn(l)) return {};
  }
}

Expected<Trace> TraceReader::readAllButLaunches() {
  Trace t;
  KFUSE_ASSIGN_OR_RETURN(t.metadata, metadata());
  Impl& im = *impl_;
  KFUSE_RETURN_IF_ERROR(im.query("SELECT id, pid, name FROM process ORDER BY id", [&](Stmt& s) {
    t.processes.push_back(Process{s.i64(0), s.i64(1), s.text(2)});
  }));
  KFUSE_RETURN_IF_ERROR(im.query(
      "SELECT id, ordinal, name, cc_major, cc_minor, sm_count, memory_bytes, clock_khz, uuid FROM device "
      "ORDER BY id",
      [&](Stmt& s) {
        t.devices.push_back(Device{s.i64(0), static_cast<int>(s.i64(1)), s.text(2), static_cast<int>(s.i64(3)),
                                   static_cast<int>(s.i64(4)), static_cast<int>(s.i64(5)), s.u64(6), s.i64(7),
                                   s.text(8)});
      }));
  KFUSE_RETURN_IF_ERROR(
      im.query("SELECT id, device_id, process_id, handle FROM context ORDER BY id", [&](Stmt& s) {
        t.contexts.push_back(Context{s.i64(0), s.i64Or(1, kNoId), s.i64Or(2, kNoId), s.u64(3)});
      }));
  KFUSE_RETURN_IF_ERROR(im.query(
      "SELECT id, context_id, handle, native_id, priority, is_default FROM stream ORDER BY id", [&](Stmt& s) {
        t.streams.push_back(Stream{s.i64(0), s.i64Or(1, kNoId), s.u64(2), s.i64(3), static_cast<int>(s.i64(4)),
                                   s.i64(5) != 0});
      }));
  Status bad_enum;
  auto enumOr = [&](auto parsed, std::string_view table, const std::string& text) {
    if (!parsed && bad_enum.ok()) {
      bad_enum = badFormat(path_ + ": table " + std::string(table) + " holds unknown value '" + text + "'");
    }
    return parsed.value_or(std::remove_cvref_t<decltype(*parsed)>{});
  };
  KFUSE_RETURN_IF_ERROR(im.query(
      "SELECT m.id, m.context_id, m.kind, m.image_hash, m.load_ns, i.bytes FROM module m "
      "LEFT JOIN module_image i ON i.hash = m.image_hash ORDER BY m.id",
      [&](Stmt& s) {
        const std::string kind = s.text(2);
        t.modules.push_back(Module{s.i64(0), s.i64Or(1, kNoId), enumOr(parseImageKind(kind), "module", kind),
                                   s.text(3), s.blob(5), s.i64Or(4, kNoTime)});
      }));
  KFUSE_RETURN_IF_ERROR(
      im.query("SELECT id, module_id, mangled_name, demangled_name FROM function ORDER BY id", [&](Stmt& s) {
        t.functions.push_back(KernelFunction{s.i64(0), s.i64Or(1, kNoId), s.text(2), s.text(3), {}});
      }));
  {
    size_t fi = 0;
    KFUSE_RETURN_IF_ERROR(im.query(
        "SELECT function_id, idx, offset, size, type, access FROM function_param ORDER BY function_id, idx",
        [&](Stmt& s) {
          const Id fid = s.i64(0);
          while (fi < t.functions.size() && t.functions[fi].id < fid) ++fi;
          if (fi == t.functions.size() || t.functions[fi].id != fid) return;  // orphan row: ignored
          const std::string access = s.text(5);
          t.functions[fi].params.push_back(KernelParam{static_cast<int>(s.i64(1)), static_cast<int>(s.i64(2)),
                                                       static_cast<int>(s.i64(3)), s.text(4),
                                                       enumOr(parseAccessMode(access), "function_param", access)});
        }));
  }
  KFUSE_RETURN_IF_ERROR(im.query(
      "SELECT id, context_id, address, size, kind, alloc_ns, free_ns FROM allocation ORDER BY id", [&](Stmt& s) {
        const std::string kind = s.text(4);
        t.allocations.push_back(Allocation{s.i64(0), s.i64Or(1, kNoId), s.u64(2), s.u64(3),
                                           enumOr(parseAllocationKind(kind), "allocation", kind),
                                           s.i64Or(5, kNoTime), s.i64Or(6, kNoTime)});
      }));
  KFUSE_RETURN_IF_ERROR(im.query(
      "SELECT id, correlation_id, thread_id, stream_id, kind, src_address, dst_address, src_allocation_id, "
      "dst_allocation_id, bytes, async, api_start_ns, api_end_ns, gpu_start_ns, gpu_end_ns FROM memcpy ORDER BY id",
      [&](Stmt& s) {
        const std::string kind = s.text(4);
        t.memcpys.push_back(Memcpy{s.i64(0), s.i64(1), s.i64(2), s.i64Or(3, kNoId),
                                   enumOr(parseMemcpyKind(kind), "memcpy", kind), s.u64(5), s.u64(6),
                                   s.i64Or(7, kNoId), s.i64Or(8, kNoId), s.u64(9), s.i64(10) != 0,
                                   s.i64Or(11, kNoTime), s.i64Or(12, kNoTime), s.i64Or(13, kNoTime),
                                   s.i64Or(14, kNoTime)});
      }));
  KFUSE_RETURN_IF_ERROR(im.query(
      "SELECT id, correlation_id, thread_id, stream_id, dst_address, dst_allocation_id, bytes, value, "
      "element_size, async, api_start_ns, api_end_ns, gpu_start_ns, gpu_end_ns FROM memset ORDER BY id",
      [&](Stmt& s) {
        t.memsets.push_back(Memset{s.i64(0), s.i64(1), s.i64(2), s.i64Or(3, kNoId), s.u64(4), s.i64Or(5, kNoId),
                                   s.u64(6), static_cast<uint32_t>(s.i64(7)), static_cast<int>(s.i64(8)),
                                   s.i64(9) != 0, s.i64Or(10, kNoTime), s.i64Or(11, kNoTime),
                                   s.i64Or(12, kNoTime), s.i64Or(13, kNoTime)});
      }));
  KFUSE_RETURN_IF_ERROR(im.query(
      "SELECT id, correlation_id, thread_id, kind, stream_id, event_id, start_ns, end_ns FROM sync ORDER BY id",
      [&](Stmt& s) {
        const std::string kind = s.text(3);
        t.syncs.push_back(Sync{s.i64(0), s.i64(1), s.i64(2), enumOr(parseSyncKind(kind), "sync", kind),
                               s.i64Or(4, kNoId), s.i64Or(5, kNoId), s.i64Or(6, kNoTime), s.i64Or(7, kNoTime)});
      }));
  KFUSE_RETURN_IF_ERROR(im.query(
      "SELECT id, correlation_id, handle, stream_id, record_ns FROM event ORDER BY id", [&](Stmt& s) {
        t.events.push_back(Event{s.i64(0), s.i64(1), s.u64(2), s.i64Or(3, kNoId), s.i64Or(4, kNoTime)});
      }));
  KFUSE_RETURN_IF_ERROR(im.query(
      "SELECT id, name, domain, thread_id, start_ns, end_ns FROM nvtx_range ORDER BY id", [&](Stmt& s) {
        t.nvtx_ranges.push_back(
            NvtxRange{s.i64(0), s.text(1), s.text(2), s.i64(3), s.i64Or(4, kNoTime), s.i64Or(5, kNoTime)});
      }));
  KFUSE_RETURN_IF_ERROR(
      im.query("SELECT name, value, severity, description FROM stat ORDER BY name", [&](Stmt& s) {
        const std::string sev = s.text(2);
        t.stats.push_back(Stat{s.text(0), s.i64(1), enumOr(parseStatSeverity(sev), "stat", sev), s.text(3)});
      }));
  KFUSE_RETURN_IF_ERROR(bad_enum);
  return t;
}

Expected<Trace> TraceReader::readAll() {
  KFUSE_ASSIGN_OR_RETURN(Trace t, readAllButLaunches());
  KFUSE_RETURN_IF_ERROR(forEachLaunch([&](const Launch& l) {
    t.launches.push_back(l);
    return true;
  }));
  Status bad_enum;
  KFUSE_RETURN_IF_ERROR(impl_->query(
      "SELECT launch_id, name, value, unit, source FROM metric ORDER BY launch_id, name, source", [&](Stmt& s) {
        const std::string source = s.text(4);
        auto parsed = parseMetricSource(source);
        if (!parsed && bad_enum.ok()) bad_enum = badFormat(path_ + ": table metric holds unknown source '" + source + "'");
        t.metrics.push_back(Metric{s.i64(0), s.text(1), s.f64(2), s.text(3), parsed.value_or(MetricSource::kMeasured)});
      }));
  KFUSE_RETURN_IF_ERROR(bad_enum);
  return t;
}

}  // namespace kfuse::core
