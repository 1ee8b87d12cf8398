// The SQLite trace store: writes a Trace (or a stream of records) to a file laid out by schemas/trace.sql,
// and reads it back whole or launch by launch.
//
// TraceWriter: one writer per file, used from one thread at a time (the collector's sink owns it on its
// background thread). Rows are written in batched transactions of `batch_rows` rows; everything added before a
// completed flush()/batch commit survives a crash of the writing process (WAL mode, synchronous=NORMAL).
// TraceReader: read-only; several readers may share a file with one writer. Neither type throws.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "kfuse/core/status.h"
#include "kfuse/core/trace.h"

namespace kfuse::core {

// The schema version this build writes and the newest it reads (PRAGMA user_version).
// 1: the first release. 2: adds the `analysis` table (version-1 traces are upgraded in place when a report is
// stored in them; readers accept both). 3: adds the `review` table (trace_review.h); storing a report or a review
// decision upgrades an older trace in place (the migration only creates tables; readers accept 1 to 3). 4: adds the
// CUDA graph tables (graph, graph_node, graph_edge, graph_exec, graph_launch) and the graph_launch_kernel view; an
// older trace reads as one without graphs, and storing a report or a review decision in it creates them.
inline constexpr int kTraceSchemaVersion = 4;
inline constexpr const char* kTraceFormatName = "kfuse-trace";

struct TraceCounts {
  int64_t processes = 0, devices = 0, contexts = 0, streams = 0, modules = 0, module_images = 0, functions = 0,
          launches = 0, pointer_args = 0, allocations = 0, memcpys = 0, memsets = 0, syncs = 0, events = 0,
          nvtx_ranges = 0, metrics = 0, stats = 0;
  // CUDA graphs (0 in traces older than schema version 4). graph_launch_kernels: kernel nodes run by all replays
  // (rows of the graph_launch_kernel view).
  int64_t graphs = 0, graph_nodes = 0, graph_edges = 0, graph_execs = 0, graph_launches = 0, graph_launch_kernels = 0;
};

struct TraceWriterOptions {
  size_t batch_rows = 8192;  // rows per transaction
  bool overwrite = false;    // replace an existing file instead of failing
};

// Whether `path`, which exists, may be replaced by a new trace (`--force`): only a regular file that is empty or a
// SQLite database (what a trace is), never a directory, a device node or a file of another kind. The error names
// the path and says what to do.
Status checkTraceReplaceable(const std::string& path);

class TraceWriter {
 public:
  // Creates `path` (fails if it exists unless options.overwrite) with the current schema.
  static Expected<std::unique_ptr<TraceWriter>> create(const std::string& path, TraceWriterOptions options = {});
  ~TraceWriter();  // commits what is pending; call close() to learn whether that worked
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  Status setMetadata(const TraceMetadata& metadata);
  Status add(const Process& v);
  Status add(const Device& v);
  Status add(const Context& v);
  Status add(const Stream& v);
  Status add(const Module& v);  // stores the image once per hash; computes the hash if empty
  Status add(const KernelFunction& v);
  Status add(const Launch& v);
  Status add(const Allocation& v);
  Status add(const Memcpy& v);
  Status add(const Memset& v);
  Status add(const Sync& v);
  Status add(const Event& v);
  Status add(const NvtxRange& v);
  Status add(const Metric& v);
  Status add(const Stat& v);  // replaces a stat of the same name
  Status add(const Graph& v);
  Status add(const GraphNode& v);
  Status add(const GraphEdge& v);  // replaces an edge between the same two nodes
  Status add(const GraphExec& v);
  Status add(const GraphLaunch& v);
  // An allocation's free time, learnt after it was added.
  Status setAllocationFreed(Id allocation_id, int64_t free_ns);

  Status write(const Trace& trace);  // metadata and every record of `trace`
  Status flush();                    // commits the open transaction
  Status close();                    // flush, checkpoint, close; the writer is unusable afterwards

  const std::string& path() const { return path_; }

 private:
  struct Impl;
  TraceWriter(std::string path, std::unique_ptr<Impl> impl);
  std::string path_;
  std::unique_ptr<Impl> impl_;
};

// schemas/trace.sql: the SQLite schema new traces are created with, generated from the field list of
// core/src/trace_fields.h (kfuse_schema_gen writes it).
std::string traceSqlSchema();

// Stores an analysis report (JSON text of schemas/report.schema.json) in an existing kfuse trace, so the GUI
// can show it; upgrades a version-1 trace to version 2 on the way. Returns the new row's id.
Expected<int64_t> storeAnalysisReport(const std::string& trace_path, const std::string& gpu_short_name,
                                      const std::string& report_json);

class TraceReader {
 public:
  // Opens and validates `path`. Errors (kBadFormat / kUnsupportedVersion / kNotFound / kIoError) carry one
  // line naming the file: not SQLite, not a kfuse trace, newer schema, truncated, unreadable.
  static Expected<std::unique_ptr<TraceReader>> open(const std::string& path);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  int schemaVersion() const { return schema_version_; }
  const std::string& path() const { return path_; }

  Expected<TraceMetadata> metadata();
  Expected<TraceCounts> counts();
  Expected<Trace> readAll();  // the whole trace; use forEachLaunch for traces that do not fit in memory
  // Everything but launches and metrics (the small tables), for use together with forEachLaunch.
  Expected<Trace> readAllButLaunches();
  // The most recently stored analysis report (JSON text), or nullopt when none was stored.
  Expected<std::optional<std::string>> latestAnalysisReport();
  // Calls `fn` for every launch in id order with its pointer args; `fn` returns false to stop early.
  Status forEachLaunch(const std::function<bool(const Launch&)>& fn);

 private:
  struct Impl;
  TraceReader(std::string path, std::unique_ptr<Impl> impl, int schema_version);
  std::string path_;
  std::unique_ptr<Impl> impl_;
  int schema_version_ = 0;
};

}  // namespace kfuse::core
