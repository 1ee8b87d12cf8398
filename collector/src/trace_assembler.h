// TraceAssembler: turns raw collector events (events.h), in queue order, into core::Trace records written to a
// RecordOutput. It owns the handle tables (stream, function, module, event), the AddressMap for pointer
// resolution, and the launches waiting for their GPU times (CUPTI). Single-threaded: the sink's consumer.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kfuse/collector/address_map.h"
#include "kfuse/collector/events.h"
#include "kfuse/collector/trace_sink.h"
#include "kfuse/core/stats.h"
#include "kfuse/core/status.h"
#include "kfuse/core/trace.h"
#include "kfuse/core/trace_store.h"
#include "kfuse/hooks/mapping_table.h"

namespace kfuse::collector {

class RecordOutput {
 public:
  virtual ~RecordOutput() = default;
  virtual Status add(const core::Process& v) = 0;
  virtual Status add(const core::Device& v) = 0;
  virtual Status add(const core::Stream& v) = 0;
  virtual Status add(const core::Module& v) = 0;
  virtual Status add(const core::KernelFunction& v) = 0;
  virtual Status add(const core::Launch& v) = 0;
  virtual Status add(const core::Allocation& v) = 0;
  virtual Status add(const core::Memcpy& v) = 0;
  virtual Status add(const core::Memset& v) = 0;
  virtual Status add(const core::Sync& v) = 0;
  virtual Status add(const core::Event& v) = 0;
  virtual Status add(const core::NvtxRange& v) = 0;
  virtual Status add(const core::Metric& v) = 0;
  virtual Status add(const core::Stat& v) = 0;
  virtual Status add(const core::Graph& v) = 0;
  virtual Status add(const core::GraphNode& v) = 0;
  virtual Status add(const core::GraphEdge& v) = 0;
  virtual Status add(const core::GraphExec& v) = 0;
  virtual Status add(const core::GraphLaunch& v) = 0;
  virtual Status setAllocationFreed(core::Id id, int64_t free_ns) = 0;
};

// Writes into a core::TraceWriter (the SQLite sink).
class WriterOutput final : public RecordOutput {
 public:
  explicit WriterOutput(core::TraceWriter& w) : w_(w) {}
  Status add(const core::Process& v) override { return w_.add(v); }
  Status add(const core::Device& v) override { return w_.add(v); }
  Status add(const core::Stream& v) override { return w_.add(v); }
  Status add(const core::Module& v) override { return w_.add(v); }
  Status add(const core::KernelFunction& v) override { return w_.add(v); }
  Status add(const core::Launch& v) override { return w_.add(v); }
  Status add(const core::Allocation& v) override { return w_.add(v); }
  Status add(const core::Memcpy& v) override { return w_.add(v); }
  Status add(const core::Memset& v) override { return w_.add(v); }
  Status add(const core::Sync& v) override { return w_.add(v); }
  Status add(const core::Event& v) override { return w_.add(v); }
  Status add(const core::NvtxRange& v) override { return w_.add(v); }
  Status add(const core::Metric& v) override { return w_.add(v); }
  Status add(const core::Stat& v) override { return w_.add(v); }
  Status add(const core::Graph& v) override { return w_.add(v); }
  Status add(const core::GraphNode& v) override { return w_.add(v); }
  Status add(const core::GraphEdge& v) override { return w_.add(v); }
  Status add(const core::GraphExec& v) override { return w_.add(v); }
  Status add(const core::GraphLaunch& v) override { return w_.add(v); }
  Status setAllocationFreed(core::Id id, int64_t ns) override { return w_.setAllocationFreed(id, ns); }

 private:
  core::TraceWriter& w_;
};

// Appends to an in-memory core::Trace (the memory sink).
class TraceOutput final : public RecordOutput {
 public:
  explicit TraceOutput(core::Trace& t) : t_(t) {}
  Status add(const core::Process& v) override { return put(t_.processes, v); }
  Status add(const core::Device& v) override { return put(t_.devices, v); }
  Status add(const core::Stream& v) override { return put(t_.streams, v); }
  Status add(const core::Module& v) override { return put(t_.modules, v); }
  Status add(const core::KernelFunction& v) override { return put(t_.functions, v); }
  Status add(const core::Launch& v) override { return put(t_.launches, v); }
  Status add(const core::Allocation& v) override { return put(t_.allocations, v); }
  Status add(const core::Memcpy& v) override { return put(t_.memcpys, v); }
  Status add(const core::Memset& v) override { return put(t_.memsets, v); }
  Status add(const core::Sync& v) override { return put(t_.syncs, v); }
  Status add(const core::Event& v) override { return put(t_.events, v); }
  Status add(const core::NvtxRange& v) override { return put(t_.nvtx_ranges, v); }
  Status add(const core::Metric& v) override { return put(t_.metrics, v); }
  Status add(const core::Stat& v) override;
  Status add(const core::Graph& v) override { return put(t_.graphs, v); }
  Status add(const core::GraphNode& v) override { return put(t_.graph_nodes, v); }
  Status add(const core::GraphEdge& v) override { return put(t_.graph_edges, v); }
  Status add(const core::GraphExec& v) override { return put(t_.graph_execs, v); }
  Status add(const core::GraphLaunch& v) override { return put(t_.graph_launches, v); }
  Status setAllocationFreed(core::Id id, int64_t ns) override;

 private:
  template <class T>
  static Status put(std::vector<T>& out, const T& v) {
    out.push_back(v);
    return {};
  }
  core::Trace& t_;
};

struct AssemblerOptions {
  int64_t pid = 0;
  std::string process_name;
  size_t max_pending_launches = 1u << 16;  // launches held for GPU times before being written without them
};

class TraceAssembler {
 public:
  TraceAssembler(RecordOutput& out, AssemblerOptions options);

  // Consumes one event. An error is a write failure of the output (the assembler stays consistent).
  Status consume(EventKind kind, const uint8_t* payload, size_t size);
  // Writes launches still waiting for GPU times, allocation end states and the statistics.
  Status finish(const SinkStats& sink_stats);

  uint64_t consumed() const { return consumed_; }

 private:
  struct FunctionInfo {
    core::Id id = core::kNoId;
    std::vector<ParamLayout> params;
    bool layout_known = false;
    uint32_t static_shared = 0, registers = 0;
  };

  Status onLaunch(const LaunchEvent& e, const uint8_t* args);
  Status onFunction(const FunctionEvent& e, const ParamLayout* params, const char* name);
  Status onModule(const ModuleEvent& e);
  Status onAlloc(const AllocEvent& e);
  Status onFree(const FreeEvent& e);
  Status onMemcpy(const MemcpyEvent& e);
  Status onMemset(const MemsetEvent& e);
  Status onSync(const SyncEvent& e);
  Status onEventRecord(const EventRecordEvent& e);
  Status onDevice(const DeviceEvent& e);
  Status onGpuTime(const GpuTimeEvent& e, const char* name);
  Status onMetric(const MetricEvent& e);
  Status onNvtx(const NvtxEvent& e, std::string name, std::string domain);
  Status onStat(const StatEvent& e);
  Status onGraph(const GraphEvent& e);
  Status onGraphNode(const GraphNodeEvent& e, const uint8_t* args);
  Status onGraphEdge(const GraphEdgeEvent& e);
  Status onGraphExec(const GraphExecEvent& e);
  Status onGraphExecKernelNode(const GraphNodeEvent& e, const uint8_t* args);
  Status onGraphLaunch(const GraphLaunchEvent& e);

  Status ensureProcess();
  Expected<core::Id> streamId(Handle stream, int64_t native_id = -1);
  Expected<core::Id> functionForName(const std::string& name);
  core::Id resolveAllocation(uint64_t address);
  // The pointer-sized arguments (and 8-byte fields of struct arguments) of a kernel's argument buffer that fall
  // inside a live allocation. Empty when the layout is not known.
  std::vector<core::PointerArg> pointerArgs(const FunctionInfo& fi, const uint8_t* args, uint32_t arg_size);
  // The allocation and offset of a pointer into a live allocation; false if none, or if the pointer is into a mapping
  // (cuMemMap) of bytes another live mapping also shows, or may show (a handle not made by cuMemCreate while
  // recording).
  bool resolvePointer(uint64_t value, core::Id& allocation, uint64_t& offset);
  // Whether a CUPTI record with this correlation id is work of a recorded graph launch (counted when it is).
  bool ofGraphLaunch(int64_t correlation_id);
  // A kernel node's function, shape, arguments and their pointers, from its event.
  void fillKernelNode(core::GraphNode& n, const GraphNodeEvent& e, const uint8_t* args);
  // Records waiting for the activity record with their GPU times, by correlation id: `holdPending` keeps one
  // (writing the oldest half without GPU times when the map is full), `takePending` removes the one waiting under
  // `correlation_id` or under the driver call it aliases, `flushPending` writes all but `keep`. `counter` counts
  // records written without GPU times.
  template <class T>
  Status holdPending(std::map<int64_t, T>& pending, int64_t correlation_id, T record, core::StatId counter);
  template <class T>
  std::optional<T> takePending(std::map<int64_t, T>& pending, int64_t correlation_id);
  template <class T>
  Status flushPending(std::map<int64_t, T>& pending, size_t keep, core::StatId counter);
  void count(core::StatId id, int64_t n = 1) { counters_[id] += n; }

  RecordOutput& out_;
  AssemblerOptions options_;
  bool process_written_ = false;
  uint64_t consumed_ = 0;
  core::Id next_stream_ = 0, next_function_ = 0, next_module_ = 0, next_launch_ = 0, next_alloc_ = 0, next_memcpy_ = 0,
           next_memset_ = 0, next_sync_ = 0, next_event_ = 0, next_device_ = 0, next_nvtx_ = 0;
  std::unordered_map<Handle, core::Id> streams_;
  std::unordered_map<int64_t, core::Id> native_streams_;
  std::unordered_map<Handle, FunctionInfo> functions_;
  std::unordered_map<std::string, core::Id> functions_by_name_;
  std::unordered_map<Handle, core::Id> modules_;
  std::unordered_map<Handle, core::Id> events_;  // CUevent -> latest Event id
  AddressMap allocations_;
  // Virtual memory management: the handles cuMemCreate made while recording and each live mapping; pointers into a
  // mapping whose bytes another may show are left unresolved.
  hooks::MappingTable mappings_;
  std::map<int64_t, core::Launch> pending_;         // correlation id -> launch waiting for GPU time
  std::map<int64_t, core::Memcpy> pending_copies_;  // CUPTI callback copies waiting for their record
  std::map<int64_t, core::Memset> pending_sets_;
  std::unordered_map<int64_t, int64_t> driver_correlation_;  // runtime correlation id -> driver correlation id
  int64_t driverCorrelation(int64_t id) const;  // `id`, or the driver call's id if `id` is a runtime call's
  std::unordered_map<int64_t, core::Id> launch_by_correlation_;  // for metrics
  std::unordered_set<int64_t> graph_launch_correlations_;        // recorded graph launches (CUPTI's kernel records)
  std::map<core::StatId, int64_t> counters_;                     // in registry order
  std::map<std::string, core::Stat> producer_stats_;

  // CUDA graphs: every snapshot read, by id (kept to copy for exec kernel-node updates), the latest snapshot of each
  // CUgraph, and the exec row each CUgraphExec runs now.
  struct GraphSnapshot {
    core::Graph graph;
    std::vector<core::GraphNode> nodes;
    std::vector<core::GraphEdge> edges;
    std::unordered_map<Handle, size_t> node_by_handle;  // index into nodes
  };
  std::unordered_map<core::Id, GraphSnapshot> graphs_;
  std::unordered_map<Handle, core::Id> latest_graph_;  // CUgraph -> snapshot id
  struct ExecInfo {
    core::Id id = core::kNoId;
    core::Id graph_id = core::kNoId;
  };
  std::unordered_map<Handle, ExecInfo> execs_;  // CUgraphExec -> its current row
  core::Id next_graph_ = 0, next_graph_node_ = 0, next_graph_exec_ = 0, next_graph_launch_ = 0;
};

}  // namespace kfuse::collector
