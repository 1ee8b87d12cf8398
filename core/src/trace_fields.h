// The one list of every trace record kind's fields. It drives the SQLite binding (trace_store.cpp), the JSON
// form (trace_json.cpp) and both schemas (trace_schema.cpp, which generates schemas/trace.sql and
// schemas/trace.schema.json; a test fails when the committed files differ from what it generates).
//
// Adding a field to a record kind: add the member to its struct in trace.h, add one line here, and regenerate
// the schema files (`kfuse_schema_gen --write <source dir>`). The column is added to new traces only, so give it
// a default that old traces (which lack the column) read as: SQL columns missing from a file read as the
// struct's default value.
//
// Per field: its name (JSON property and SQL column), flags, what it references (an id field), and a one-line
// description shared by the SQL comment and the JSON schema. The member's C++ type says the rest: integers,
// bools and doubles are SQL INTEGER/REAL; strings and enums TEXT; byte vectors BLOB (base64 in JSON); a time
// (timeRef) is a nullable INTEGER, null meaning kNoTime; a reference is a nullable INTEGER, null meaning kNoId;
// Dim3 is three columns <name>_x/_y/_z. A NOT NULL column's DEFAULT is the member's default in the struct.
#pragma once

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kfuse/core/trace.h"

namespace kfuse::core::detail {

// A nullable time: kNoTime <-> null. Wraps the member so the visitors can tell it from a plain integer.
struct TimeRef {
  int64_t& v;
};
struct ConstTimeRef {
  const int64_t& v;
};
inline TimeRef timeRef(int64_t& v) {
  return {v};
}
inline ConstTimeRef timeRef(const int64_t& v) {
  return {v};
}

enum FieldFlag : unsigned {
  kKey = 1u << 0,           // part of the SQL primary key
  kRequired = 1u << 1,      // JSON documents must carry it; a reference that is never "none"
  kNoSqlDefault = 1u << 2,  // NOT NULL without a DEFAULT: every row must give it
  kNotInTable = 1u << 3,    // stored outside the record's table (Module::image lives in module_image)
};

struct Field {
  const char* name = nullptr;  // JSON property, and SQL column unless `column` is set
  unsigned flags = 0;
  const char* references = nullptr;  // an id field: the table whose id it holds (0 = none unless kRequired)
  const char* doc = nullptr;         // one line, for the SQL comment and the JSON schema description
  const char* column = nullptr;      // the SQL column where it differs from `name`
  const char* pattern = nullptr;     // JSON schema pattern for a string

  constexpr Field withDoc(const char* d) const {
    Field f = *this;
    f.doc = d;
    return f;
  }
  constexpr Field inColumn(const char* c) const {
    Field f = *this;
    f.column = c;
    return f;
  }
  constexpr Field withPattern(const char* p) const {
    Field f = *this;
    f.pattern = p;
    return f;
  }
  constexpr const char* sqlName() const { return column ? column : name; }
  constexpr bool has(FieldFlag flag) const { return (flags & flag) != 0; }
};

constexpr Field col(const char* name, unsigned flags = 0) {
  return Field{name, flags};
}
constexpr Field key(const char* name) {
  return Field{name, kKey | kRequired};
}
constexpr Field ref(const char* name, const char* table, unsigned flags = 0) {
  return Field{name, flags, table};
}

// What a record kind is stored as. `table` null: not a table of its own (metadata is key/value rows in
// kfuse_meta; PointerArg is kept inline in launch.pointer_args).
struct RecordInfo {
  const char* table = nullptr;         // SQL table
  const char* json_def = nullptr;      // its name under $defs in the JSON schema
  const char* doc = nullptr;           // SQL comment above the table, JSON schema description
  bool replace = false;                // rows with the same key replace each other (INSERT OR REPLACE)
  const char* parent = nullptr;        // a child table: the column holding the parent record's id ...
  const char* parent_table = nullptr;  // ... and the parent's table
  int since_version = 1;               // the schema version that added the table: older traces may lack it
};

template <typename T>
inline constexpr RecordInfo kRecord{};
template <>
inline constexpr RecordInfo kRecord<TraceMetadata>{nullptr, "metadata"};
template <>
inline constexpr RecordInfo kRecord<Process>{"process", "process"};
template <>
inline constexpr RecordInfo kRecord<Device>{"device", "device"};
template <>
inline constexpr RecordInfo kRecord<Context>{"context", "context"};
template <>
inline constexpr RecordInfo kRecord<Stream>{"stream", "stream"};
template <>
inline constexpr RecordInfo kRecord<Module>{
    "module", "module", "A loaded module; its image (base64) may be empty when only the hash is known"};
template <>
inline constexpr RecordInfo kRecord<KernelParam>{"function_param", "kernel_param", nullptr, false,
                                                 "function_id",    "function"};
template <>
inline constexpr RecordInfo kRecord<KernelFunction>{"function", "function"};
template <>
inline constexpr RecordInfo kRecord<PointerArg>{nullptr, "pointer_arg"};
template <>
inline constexpr RecordInfo kRecord<Launch>{"launch", "launch",
                                            "One kernel launch; id is the sequence number in API call order"};
template <>
inline constexpr RecordInfo kRecord<Allocation>{"allocation", "allocation"};
template <>
inline constexpr RecordInfo kRecord<Memcpy>{"memcpy", "memcpy"};
template <>
inline constexpr RecordInfo kRecord<Memset>{"memset", "memset"};
template <>
inline constexpr RecordInfo kRecord<Sync>{"sync", "sync"};
template <>
inline constexpr RecordInfo kRecord<Event>{"event", "event"};
template <>
inline constexpr RecordInfo kRecord<NvtxRange>{"nvtx_range", "nvtx_range"};
template <>
inline constexpr RecordInfo kRecord<Metric>{"metric", "metric", nullptr, /*replace=*/true};
template <>
inline constexpr RecordInfo kRecord<Stat>{
    "stat", "stat", "Counts of bad or missing input data met while producing the trace (tier-1 errors)",
    /*replace=*/true};
template <>
inline constexpr RecordInfo kRecord<Graph>{
    "graph",
    "graph",
    "A CUDA graph as read when it was instantiated or an executable graph was updated from it",
    false,
    nullptr,
    nullptr,
    /*since_version=*/4};
template <>
inline constexpr RecordInfo kRecord<GraphNode>{"graph_node", "graph_node", "A node of a recorded graph", false,
                                               nullptr,      nullptr,      /*since_version=*/4};
template <>
inline constexpr RecordInfo kRecord<GraphEdge>{
    "graph_edge", "graph_edge",       "A dependency between two nodes of a recorded graph", /*replace=*/true, nullptr,
    nullptr,      /*since_version=*/4};
template <>
inline constexpr RecordInfo kRecord<GraphExec>{
    "graph_exec",
    "graph_exec",
    "An executable graph: instantiated, or updated (update_of the row it replaces)",
    false,
    nullptr,
    nullptr,
    /*since_version=*/4};
template <>
inline constexpr RecordInfo kRecord<GraphLaunch>{
    "graph_launch",
    "graph_launch",
    "One cuGraphLaunch (a replay); its kernels are the kernel nodes of its exec's graph (view graph_launch_kernel)",
    false,
    nullptr,
    nullptr,
    /*since_version=*/4};

// Calls `f(const Field&, member)` for each field of `s` in order; S may be const. A time is passed as
// timeRef(member).
template <typename S, typename F>
void forEachField(S& s, F&& f) {
  using T = std::remove_const_t<S>;
  constexpr unsigned kND = kNoSqlDefault;
  if constexpr (std::is_same_v<T, TraceMetadata>) {
    f(col("producer").withDoc("\"kfuse-collector\", \"kfuse-import:kineto\", ..."), s.producer);
    f(col("producer_version"), s.producer_version);
    f(col("command_line").withDoc("the recorded application's command line, if known"), s.command_line);
    f(col("host"), s.host);
    f(col("start_time_ns").withDoc("wall clock (Unix epoch ns) when recording started; null = not known"),
      timeRef(s.start_time_ns));
    f(col("extra").withDoc("free-form key/value pairs (source file, backend, ...)"), s.extra);
  } else if constexpr (std::is_same_v<T, Process>) {
    f(key("id"), s.id);
    f(col("pid", kND), s.pid);
    f(col("name"), s.name);
  } else if constexpr (std::is_same_v<T, Device>) {
    f(key("id"), s.id);
    f(col("ordinal", kND), s.ordinal);
    f(col("name", kND), s.name);
    f(col("cc_major"), s.cc_major);
    f(col("cc_minor"), s.cc_minor);
    f(col("sm_count").withDoc("0 = unknown"), s.sm_count);
    f(col("memory_bytes").withDoc("0 = unknown"), s.memory_bytes);
    f(col("clock_khz").withDoc("0 = unknown"), s.clock_khz);
    f(col("uuid"), s.uuid);
  } else if constexpr (std::is_same_v<T, Context>) {
    f(key("id"), s.id);
    f(ref("device_id", "device"), s.device_id);
    f(ref("process_id", "process"), s.process_id);
    f(col("handle").withDoc("CUcontext value (0 = unknown)"), s.handle);
  } else if constexpr (std::is_same_v<T, Stream>) {
    f(key("id"), s.id);
    f(ref("context_id", "context"), s.context_id);
    f(col("handle").withDoc("CUstream value (0 = legacy default stream)"), s.handle);
    f(col("native_id").withDoc("CUPTI stream id, -1 = unknown"), s.native_id);
    f(col("priority"), s.priority);
    f(col("is_default"), s.is_default);
  } else if constexpr (std::is_same_v<T, Module>) {
    f(key("id"), s.id);
    f(ref("context_id", "context"), s.context_id);
    f(col("kind", kND), s.kind);
    f(col("hash")
          .inColumn("image_hash")
          .withPattern("^([0-9a-f]{64})?$")
          .withDoc("hex SHA-256 of the image (module_image.hash), or of bytes whose image was not captured"),
      s.hash);
    f(col("image", kNotInTable), s.image);
    f(col("load_ns"), timeRef(s.load_ns));
  } else if constexpr (std::is_same_v<T, KernelParam>) {
    f(col("index", kKey | kND).inColumn("idx"), s.index);
    f(col("offset", kND).withDoc("bytes into the argument buffer"), s.offset);
    f(col("size", kND).withDoc("bytes"), s.size);
    f(col("type").withDoc("\"ptr\", \"u32\", \"f32\", \"struct\", or a C++ type from the mangled name"), s.type);
    f(col("access"), s.access);
  } else if constexpr (std::is_same_v<T, KernelFunction>) {
    f(key("id"), s.id);
    f(ref("module_id", "module"), s.module_id);
    f(col("mangled_name", kND), s.mangled_name);
    f(col("demangled_name"), s.demangled_name);
    f(col("params"), s.params);
  } else if constexpr (std::is_same_v<T, PointerArg>) {
    f(col("param_index"), s.param_index);
    f(col("address"), s.address);
    f(ref("allocation_id", "allocation"), s.allocation_id);
    f(col("offset").withDoc("address - allocation base"), s.offset);
    f(col("field_offset")
          .withDoc("-1: the argument is the pointer; else the byte offset of the pointer inside an argument passed "
                   "by value as a struct (recorded when its 8 aligned bytes hold an address inside a live "
                   "allocation)"),
      s.field_offset);
  } else if constexpr (std::is_same_v<T, Launch>) {
    f(key("id"), s.id);
    f(col("correlation_id"), s.correlation_id);
    f(col("thread_id"), s.thread_id);
    f(ref("stream_id", "stream"), s.stream_id);
    f(ref("function_id", "function"), s.function_id);
    f(col("grid", kND), s.grid);
    f(col("block", kND), s.block);
    f(col("cluster").withDoc("thread block cluster dimensions (sm_90+); 1,1,1: no clusters"), s.cluster);
    f(col("dynamic_shared_bytes"), s.dynamic_shared_bytes);
    f(col("static_shared_bytes"), s.static_shared_bytes);
    f(col("registers_per_thread"), s.registers_per_thread);
    f(col("api_start_ns"), timeRef(s.api_start_ns));
    f(col("api_end_ns"), timeRef(s.api_end_ns));
    f(col("gpu_start_ns"), timeRef(s.gpu_start_ns));
    f(col("gpu_end_ns"), timeRef(s.gpu_end_ns));
    f(col("arg_bytes").withDoc("raw argument buffer laid out per the function's params"), s.arg_bytes);
    f(col("pointer_args")
          .withDoc("pointer arguments resolved to allocations; in SQLite a JSON array of [param_index, address, "
                   "allocation_id, offset] or, for a pointer inside a struct argument, [param_index, address, "
                   "allocation_id, offset, field_offset] (allocation_id null: no known allocation), NULL when there "
                   "are none, "
                   "kept inline because a row per pointer would more than double the cost of recording a "
                   "launch; the view launch_pointer_arg gives them one row each"),
      s.pointer_args);
  } else if constexpr (std::is_same_v<T, Allocation>) {
    f(key("id"), s.id);
    f(ref("context_id", "context"), s.context_id);
    f(col("address", kND), s.address);
    f(col("size", kND), s.size);
    f(col("kind", kND), s.kind);
    f(col("alloc_ns").withDoc("null: existed before recording started"), timeRef(s.alloc_ns));
    f(col("free_ns").withDoc("null: still live when recording ended"), timeRef(s.free_ns));
  } else if constexpr (std::is_same_v<T, Memcpy>) {
    f(key("id"), s.id);
    f(col("correlation_id"), s.correlation_id);
    f(col("thread_id"), s.thread_id);
    f(ref("stream_id", "stream"), s.stream_id);
    f(col("kind", kND), s.kind);
    f(col("src_address"), s.src_address);
    f(col("dst_address"), s.dst_address);
    f(ref("src_allocation_id", "allocation"), s.src_allocation_id);
    f(ref("dst_allocation_id", "allocation"), s.dst_allocation_id);
    f(col("bytes", kND), s.bytes);
    f(col("async"), s.async);
    f(col("api_start_ns"), timeRef(s.api_start_ns));
    f(col("api_end_ns"), timeRef(s.api_end_ns));
    f(col("gpu_start_ns"), timeRef(s.gpu_start_ns));
    f(col("gpu_end_ns"), timeRef(s.gpu_end_ns));
  } else if constexpr (std::is_same_v<T, Memset>) {
    f(key("id"), s.id);
    f(col("correlation_id"), s.correlation_id);
    f(col("thread_id"), s.thread_id);
    f(ref("stream_id", "stream"), s.stream_id);
    f(col("dst_address"), s.dst_address);
    f(ref("dst_allocation_id", "allocation"), s.dst_allocation_id);
    f(col("bytes", kND), s.bytes);
    f(col("value"), s.value);
    f(col("element_size"), s.element_size);
    f(col("async"), s.async);
    f(col("api_start_ns"), timeRef(s.api_start_ns));
    f(col("api_end_ns"), timeRef(s.api_end_ns));
    f(col("gpu_start_ns"), timeRef(s.gpu_start_ns));
    f(col("gpu_end_ns"), timeRef(s.gpu_end_ns));
  } else if constexpr (std::is_same_v<T, Sync>) {
    f(key("id"), s.id);
    f(col("correlation_id"), s.correlation_id);
    f(col("thread_id"), s.thread_id);
    f(col("kind", kND), s.kind);
    f(ref("stream_id", "stream").withDoc("the stream waited on, or that waits (stream_wait_event)"), s.stream_id);
    f(ref("event_id", "event").withDoc("the event awaited, if any"), s.event_id);
    f(col("start_ns"), timeRef(s.start_ns));
    f(col("end_ns"), timeRef(s.end_ns));
  } else if constexpr (std::is_same_v<T, Event>) {
    f(key("id"), s.id);
    f(col("correlation_id"), s.correlation_id);
    f(col("handle").withDoc("CUevent value; the same handle may be recorded many times"), s.handle);
    f(ref("stream_id", "stream"), s.stream_id);
    f(col("record_ns"), timeRef(s.record_ns));
  } else if constexpr (std::is_same_v<T, NvtxRange>) {
    f(key("id"), s.id);
    f(col("name", kND), s.name);
    f(col("domain"), s.domain);
    f(col("thread_id"), s.thread_id);
    f(col("start_ns"), timeRef(s.start_ns));
    f(col("end_ns"), timeRef(s.end_ns));
  } else if constexpr (std::is_same_v<T, Metric>) {
    f(ref("launch_id", "launch", kKey | kRequired), s.launch_id);
    f(col("name", kKey | kRequired).withDoc("\"dram_bytes_read\", \"flops_fp32\", ..."), s.name);
    f(col("value", kND), s.value);
    f(col("unit").withDoc("\"bytes\", \"flop\", \"ns\", \"inst\""), s.unit);
    f(col("source", kKey), s.source);
  } else if constexpr (std::is_same_v<T, Stat>) {
    f(key("name").withDoc("\"dropped_records\", \"unmatched_correlation\", ..."), s.name);
    f(col("value", kND), s.value);
    f(col("severity", kND), s.severity);
    f(col("description"), s.description);
  } else if constexpr (std::is_same_v<T, Graph>) {
    f(key("id"), s.id);
    f(col("handle").withDoc("CUgraph value; snapshots of the same graph share it"), s.handle);
    f(col("origin"), s.origin);
    f(ref("stream_id", "stream").withDoc("capture: the stream whose capture made the graph"), s.stream_id);
    f(ref("parent_graph_id", "graph")
          .withDoc("child: the graph holding the child-graph node; exec_node_update: the graph it copies"),
      s.parent_graph_id);
    f(col("snapshot_ns").withDoc("when the collector read the graph"), timeRef(s.snapshot_ns));
  } else if constexpr (std::is_same_v<T, GraphNode>) {
    f(key("id").withDoc("unique in the trace, not only in its graph"), s.id);
    f(ref("graph_id", "graph", kRequired | kND), s.graph_id);
    f(col("index").inColumn("idx").withDoc("position in the driver's node list (cuGraphGetNodes)"), s.index);
    f(col("handle").withDoc("CUgraphNode value"), s.handle);
    f(col("type"), s.type);
    f(ref("function_id", "function").withDoc("kernel: the function it runs"), s.function_id);
    f(col("grid").withDoc("kernel"), s.grid);
    f(col("block"), s.block);
    f(col("dynamic_shared_bytes"), s.dynamic_shared_bytes);
    f(col("arg_bytes").withDoc("kernel: raw argument buffer laid out per the function's params, as launch.arg_bytes"),
      s.arg_bytes);
    f(col("pointer_args")
          .withDoc("kernel: pointer arguments resolved to allocations when the graph was read, in the form of "
                   "launch.pointer_args"),
      s.pointer_args);
    f(col("memcpy_kind").withDoc("memcpy"), s.memcpy_kind);
    f(col("src_address").withDoc("memcpy"), s.src_address);
    f(col("dst_address").withDoc("memcpy, memset"), s.dst_address);
    f(ref("src_allocation_id", "allocation"), s.src_allocation_id);
    f(ref("dst_allocation_id", "allocation"), s.dst_allocation_id);
    f(col("bytes").withDoc("memcpy, memset"), s.bytes);
    f(col("value").withDoc("memset"), s.value);
    f(col("element_size").withDoc("memset: bytes per element"), s.element_size);
    f(ref("child_graph_id", "graph").withDoc("child graph: the graph it runs"), s.child_graph_id);
    f(col("event_handle").withDoc("event record / wait: the CUevent"), s.event_handle);
  } else if constexpr (std::is_same_v<T, GraphEdge>) {
    f(ref("graph_id", "graph", kKey | kRequired), s.graph_id);
    f(ref("from_node_id", "graph_node", kKey | kRequired), s.from_node_id);
    f(ref("to_node_id", "graph_node", kKey | kRequired).withDoc("runs after from_node_id"), s.to_node_id);
    f(col("type").withDoc("CUgraphDependencyType: 0 default, 1 programmatic"), s.type);
  } else if constexpr (std::is_same_v<T, GraphExec>) {
    f(key("id"), s.id);
    f(col("handle").withDoc("CUgraphExec value"), s.handle);
    f(ref("graph_id", "graph", kRequired | kND).withDoc("the graph it runs"), s.graph_id);
    f(ref("update_of", "graph_exec").withDoc("the exec row of the same handle this update replaces"), s.update_of);
    f(col("thread_id"), s.thread_id);
    f(col("api_start_ns").withDoc("the instantiate or update call"), timeRef(s.api_start_ns));
    f(col("api_end_ns"), timeRef(s.api_end_ns));
  } else if constexpr (std::is_same_v<T, GraphLaunch>) {
    f(key("id").withDoc("sequence number in API call order"), s.id);
    f(col("correlation_id"), s.correlation_id);
    f(col("thread_id"), s.thread_id);
    f(ref("graph_exec_id", "graph_exec", kRequired | kND), s.graph_exec_id);
    f(ref("stream_id", "stream"), s.stream_id);
    f(col("api_start_ns"), timeRef(s.api_start_ns));
    f(col("api_end_ns"), timeRef(s.api_end_ns));
  } else {
    static_assert(!sizeof(T), "no field list for this type");
  }
}

// The record arrays of a Trace, in document order (JSON) and table order (SQL). `f(name, vector)`.
template <typename TraceT, typename F>
void forEachTable(TraceT& t, F&& f) {
  f("processes", t.processes);
  f("devices", t.devices);
  f("contexts", t.contexts);
  f("streams", t.streams);
  f("modules", t.modules);
  f("functions", t.functions);
  f("launches", t.launches);
  f("allocations", t.allocations);
  f("memcpys", t.memcpys);
  f("memsets", t.memsets);
  f("syncs", t.syncs);
  f("events", t.events);
  f("nvtx_ranges", t.nvtx_ranges);
  f("metrics", t.metrics);
  f("stats", t.stats);
  f("graphs", t.graphs);
  f("graph_nodes", t.graph_nodes);
  f("graph_edges", t.graph_edges);
  f("graph_execs", t.graph_execs);
  f("graph_launches", t.graph_launches);
}

template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};

// The string forms of every enum the records use, looked up by type.
inline std::optional<ImageKind> parseEnum(std::string_view s, ImageKind) {
  return parseImageKind(s);
}
inline std::optional<AccessMode> parseEnum(std::string_view s, AccessMode) {
  return parseAccessMode(s);
}
inline std::optional<MetricSource> parseEnum(std::string_view s, MetricSource) {
  return parseMetricSource(s);
}
inline std::optional<AllocationKind> parseEnum(std::string_view s, AllocationKind) {
  return parseAllocationKind(s);
}
inline std::optional<MemcpyKind> parseEnum(std::string_view s, MemcpyKind) {
  return parseMemcpyKind(s);
}
inline std::optional<SyncKind> parseEnum(std::string_view s, SyncKind) {
  return parseSyncKind(s);
}
inline std::optional<StatSeverity> parseEnum(std::string_view s, StatSeverity) {
  return parseStatSeverity(s);
}
inline std::optional<GraphOrigin> parseEnum(std::string_view s, GraphOrigin) {
  return parseGraphOrigin(s);
}
inline std::optional<GraphNodeType> parseEnum(std::string_view s, GraphNodeType) {
  return parseGraphNodeType(s);
}

// Every name of enum E in declaration order (the enums are dense from 0).
template <typename E>
std::vector<std::string_view> enumNames() {
  std::vector<std::string_view> names;
  for (int i = 0;; ++i) {
    const E e = static_cast<E>(i);
    const std::string_view name = toString(e);
    const auto back = parseEnum(name, E{});
    if (!back || *back != e) return names;
    names.push_back(name);
  }
}

// A vector of child records stored in a table of their own (KernelFunction::params -> function_param).
template <typename M>
inline constexpr bool kIsChildTable = false;
template <typename C>
inline constexpr bool kIsChildTable<std::vector<C>> = kRecord<C>.parent != nullptr;

// One SQL column of a record's table, as the field list defines it.
struct Column {
  std::string name;
  const char* type = "INTEGER";      // INTEGER | REAL | TEXT | BLOB
  bool not_null = true;              // false: NULL stands for kNoTime / kNoId / empty
  bool has_default = true;           // a NOT NULL column with a DEFAULT (the struct's default value)
  std::string value_sql;             // the struct's default as an SQL literal (NULL for nullable columns)
  const char* references = nullptr;  // table whose id it holds
  bool key = false;                  // part of the primary key
  std::string doc;
};

inline std::string sqlQuote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    out += c;
    if (c == '\'') out += c;
  }
  return out + "'";
}

template <typename M>
void appendColumns(const Field& f, const M& m, std::vector<Column>& out) {
  if constexpr (kIsChildTable<M>) {
    return;  // rows of the child table
  } else {
    if (f.has(kNotInTable)) return;
    Column c;
    c.name = f.sqlName();
    c.key = f.has(kKey);
    c.has_default = !f.has(kNoSqlDefault) && !c.key;
    c.references = f.references;
    if (f.doc) c.doc = f.doc;
    if constexpr (std::is_same_v<M, Dim3>) {
      const uint32_t xyz[3] = {m.x, m.y, m.z};
      for (int i = 0; i < 3; ++i) {
        Column d = c;
        d.name += "_";
        d.name += "xyz"[i];
        d.value_sql = std::to_string(xyz[i]);
        if (i > 0) d.doc.clear();  // said once, on _x
        out.push_back(d);
      }
      return;
    } else if constexpr (std::is_same_v<M, ConstTimeRef> || std::is_same_v<M, std::vector<uint8_t>> ||
                         std::is_same_v<M, std::vector<PointerArg>>) {
      c.not_null = false;
      if constexpr (std::is_same_v<M, std::vector<uint8_t>>) c.type = "BLOB";
      if constexpr (std::is_same_v<M, std::vector<PointerArg>>) c.type = "TEXT";
    } else if constexpr (std::is_same_v<M, std::string>) {
      c.type = "TEXT";
      c.value_sql = sqlQuote(m);
    } else if constexpr (std::is_enum_v<M>) {
      c.type = "TEXT";
      c.value_sql = sqlQuote(toString(m));
      std::string names;
      for (std::string_view n : enumNames<M>()) names += (names.empty() ? "" : " | ") + std::string(n);
      c.doc = c.doc.empty() ? names : c.doc + "; " + names;
    } else if constexpr (std::is_same_v<M, double>) {
      c.type = "REAL";
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", m);
      c.value_sql = buf;
    } else {
      static_assert(std::is_integral_v<M>, "no SQL column type for this member");
      c.value_sql = std::to_string(m);
      if (f.references && !f.has(kRequired)) c.not_null = false;
    }
    if (!c.not_null) {
      c.has_default = false;
      c.value_sql = "NULL";
    }
    out.push_back(std::move(c));
  }
}

// The columns of R's table in order: the parent's id first for a child table, then one or more per field.
template <typename R>
std::vector<Column> tableColumns() {
  std::vector<Column> cols;
  if constexpr (kRecord<R>.parent != nullptr) {
    Column p;
    p.name = kRecord<R>.parent;
    p.has_default = false;
    p.references = kRecord<R>.parent_table;
    p.key = true;
    cols.push_back(p);
  }
  const R defaults{};
  forEachField(defaults, [&](const Field& f, const auto& m) { appendColumns(f, m, cols); });
  return cols;
}

}  // namespace kfuse::core::detail
