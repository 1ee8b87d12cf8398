// The kfuse trace model: plain structs describing what a CUDA application did.
//
// Everything here is a value type with no CUDA, CUPTI, SQLite or Qt types, so every module (collector,
// importers, analyzer, GUI) can share it. Ids are assigned by whoever builds a Trace (the collector, an
// importer, the store's reader) and are unique per record kind within one trace; 0 means "none".
// Times are nanoseconds on one clock per trace (CUPTI's or the host's); kNoTime marks "not known".
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kfuse/core/enum_names.h"

namespace kfuse::core {

using Id = int64_t;
inline constexpr Id kNoId = 0;
inline constexpr int64_t kNoTime = -1;

// to - from for two timestamps, clamped to int64 instead of overflowing (a damaged trace may hold any values).
inline int64_t spanNs(int64_t from, int64_t to) {
  int64_t d = 0;
  if (__builtin_sub_overflow(to, from, &d)) return to > from ? INT64_MAX : INT64_MIN;
  return d;
}

// The enums with a fixed underlying type are also fields of the collector's fixed-layout events
// (kfuse/collector/events.h), which carry them through its queue as 32-bit values.
enum class ImageKind : uint32_t { kUnknown, kPtx, kCubin, kFatbin };
enum class AccessMode { kUnknown, kNone, kRead, kWrite, kReadWrite };
enum class MetricSource : uint32_t { kMeasured, kEmulated, kEstimated };
enum class AllocationKind : uint32_t { kUnknown, kDevice, kHostPinned, kManaged, kPool, kArray };
enum class MemcpyKind : uint32_t { kUnknown, kHostToDevice, kDeviceToHost, kDeviceToDevice, kHostToHost, kPeer };
enum class SyncKind : uint32_t { kUnknown, kContext, kStream, kEvent, kStreamWaitEvent };
enum class StatSeverity : uint32_t { kInfo, kWarning, kError };
// How a CUDA graph came to be: stream capture, explicit node-by-node construction, the graph of a child-graph node,
// or a copy of an executable graph's graph with one node's parameters changed (cuGraphExecKernelNodeSetParams).
enum class GraphOrigin : uint32_t { kUnknown, kCapture, kExplicit, kChild, kExecNodeUpdate };
// A graph node's CUgraphNodeType; kOther for the kinds the trace does not describe further (semaphores, memory
// operations, conditional nodes, ...).
enum class GraphNodeType : uint32_t {
  kOther,
  kKernel,
  kMemcpy,
  kMemset,
  kHost,
  kEmpty,
  kEventRecord,
  kEventWait,
  kChildGraph,
  kMemAlloc,
  kMemFree,
};

// String forms used by the SQLite store, the JSON interchange format and reports. `parse*` return nullopt for
// a string that is not one of the names.
std::string_view toString(ImageKind v);
std::string_view toString(AccessMode v);
std::string_view toString(MetricSource v);
std::string_view toString(AllocationKind v);
std::string_view toString(MemcpyKind v);
std::string_view toString(SyncKind v);
std::string_view toString(StatSeverity v);
std::string_view toString(GraphOrigin v);
std::string_view toString(GraphNodeType v);
std::optional<ImageKind> parseImageKind(std::string_view s);
std::optional<AccessMode> parseAccessMode(std::string_view s);
std::optional<MetricSource> parseMetricSource(std::string_view s);
std::optional<AllocationKind> parseAllocationKind(std::string_view s);
std::optional<MemcpyKind> parseMemcpyKind(std::string_view s);
std::optional<SyncKind> parseSyncKind(std::string_view s);
std::optional<StatSeverity> parseStatSeverity(std::string_view s);
std::optional<GraphOrigin> parseGraphOrigin(std::string_view s);
std::optional<GraphNodeType> parseGraphNodeType(std::string_view s);
// The tables behind toString/parse*, for code generic over enums (kfuse/core/enum_names.h).
std::span<const EnumName<ImageKind>> nameTable(ImageKind);
std::span<const EnumName<AccessMode>> nameTable(AccessMode);
std::span<const EnumName<MetricSource>> nameTable(MetricSource);
std::span<const EnumName<AllocationKind>> nameTable(AllocationKind);
std::span<const EnumName<MemcpyKind>> nameTable(MemcpyKind);
std::span<const EnumName<SyncKind>> nameTable(SyncKind);
std::span<const EnumName<StatSeverity>> nameTable(StatSeverity);
std::span<const EnumName<GraphOrigin>> nameTable(GraphOrigin);
std::span<const EnumName<GraphNodeType>> nameTable(GraphNodeType);

// A CUDA grid or block size: the one 3-vector of launch dimensions (trace, emulator, rewriter).
struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t{x} * y * z; }
  // By axis: 0, 1, 2 = x, y, z.
  uint32_t operator[](int axis) const { return axis == 0 ? x : axis == 1 ? y : z; }
  uint32_t& operator[](int axis) { return axis == 0 ? x : axis == 1 ? y : z; }
  std::array<uint32_t, 3> axes() const { return {x, y, z}; }  // for driver calls that take unsigned[3]
  friend bool operator==(const Dim3&, const Dim3&) = default;
};

// What a kernel launch asks for besides its arguments: grid, block and dynamic shared memory. The emulator runs
// launches of this shape, the rewriter's plans record and replace them.
struct LaunchShape {
  Dim3 grid, block;
  uint32_t dynamic_shared_bytes = 0;
  uint64_t blocks() const { return grid.count(); }
  uint64_t threads() const { return block.count(); }  // per block
  friend bool operator==(const LaunchShape&, const LaunchShape&) = default;
};

struct TraceMetadata {
  std::string producer;          // "kfuse-collector", "kfuse-import:kineto", ...
  std::string producer_version;  // version of the producing tool
  std::string command_line;      // the recorded application's command line, if known
  std::string host;
  int64_t start_time_ns = kNoTime;           // wall clock (Unix epoch ns) when recording started
  std::map<std::string, std::string> extra;  // free-form key/value pairs (source file, backend, ...)
  friend bool operator==(const TraceMetadata&, const TraceMetadata&) = default;
};

struct Process {
  Id id = kNoId;
  int64_t pid = 0;
  std::string name;
  friend bool operator==(const Process&, const Process&) = default;
};

struct Device {
  Id id = kNoId;
  int ordinal = 0;
  std::string name;  // as the driver reports it, e.g. "NVIDIA H100 80GB HBM3"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;           // 0 = unknown
  uint64_t memory_bytes = 0;  // 0 = unknown
  int64_t clock_khz = 0;      // 0 = unknown
  std::string uuid;
  friend bool operator==(const Device&, const Device&) = default;
};

// The name kfuse's CPU stand-in driver reports for its device starts with this: a trace whose device has it was
// recorded on the emulator (its GPU times time the emulation, not a GPU). The stand-in builds its name from it.
inline constexpr std::string_view kEmulatorDeviceNamePrefix = "kfuse CPU emulator";
inline bool isEmulatorDevice(const Device& d) {
  return d.name.rfind(kEmulatorDeviceNamePrefix, 0) == 0;
}

struct Context {
  Id id = kNoId;
  Id device_id = kNoId;
  Id process_id = kNoId;
  uint64_t handle = 0;  // CUcontext value as seen in the application (0 = unknown)
  friend bool operator==(const Context&, const Context&) = default;
};

struct Stream {
  Id id = kNoId;
  Id context_id = kNoId;
  uint64_t handle = 0;     // CUstream value (0 = legacy default stream)
  int64_t native_id = -1;  // CUPTI stream id / Kineto "stream" arg, -1 = unknown
  int priority = 0;
  bool is_default = false;
  friend bool operator==(const Stream&, const Stream&) = default;
};

// A loaded module. Images are deduplicated by hash in the store; `image` may be empty when only the hash is
// known (for example in an imported trace).
struct Module {
  Id id = kNoId;
  Id context_id = kNoId;
  ImageKind kind = ImageKind::kUnknown;
  std::string hash;  // hex SHA-256 of `image`, or of the bytes the producer saw
  std::vector<uint8_t> image;
  int64_t load_ns = kNoTime;
  friend bool operator==(const Module&, const Module&) = default;
};

struct KernelParam {
  int index = 0;
  int offset = 0;    // bytes into the argument buffer
  int size = 0;      // bytes
  std::string type;  // "ptr", "u32", "f32", "struct", or a C++ type from the mangled name
  AccessMode access = AccessMode::kUnknown;
  friend bool operator==(const KernelParam&, const KernelParam&) = default;
};

// Kernel identity = mangled name + module image hash (the module's).
struct KernelFunction {
  Id id = kNoId;
  Id module_id = kNoId;
  std::string mangled_name;
  std::string demangled_name;
  std::vector<KernelParam> params;
  friend bool operator==(const KernelFunction&, const KernelFunction&) = default;
};

// A pointer-sized kernel argument that fell inside a live allocation (or not: allocation_id = kNoId).
struct PointerArg {
  int param_index = 0;
  uint64_t address = 0;
  Id allocation_id = kNoId;
  uint64_t offset = 0;  // address - allocation base
  // -1: the argument itself is the pointer. Else the byte offset, inside an argument passed by value as a struct
  // (PyTorch's std::array<char*, N>, a params struct), of the 8 bytes holding this pointer: the kernel's accesses
  // through it are not known from its parameter list.
  int32_t field_offset = -1;
  friend bool operator==(const PointerArg&, const PointerArg&) = default;
};

struct Launch {
  Id id = kNoId;  // sequence number in API call order, starting at 1
  int64_t correlation_id = 0;
  int64_t thread_id = 0;
  Id stream_id = kNoId;
  Id function_id = kNoId;
  Dim3 grid, block;
  Dim3 cluster;  // thread block cluster (sm_90+, cuLaunchKernelEx / CUPTI clusterX..Z); 1,1,1: no clusters
  uint32_t dynamic_shared_bytes = 0;
  uint32_t static_shared_bytes = 0;
  uint32_t registers_per_thread = 0;
  int64_t api_start_ns = kNoTime, api_end_ns = kNoTime;
  int64_t gpu_start_ns = kNoTime, gpu_end_ns = kNoTime;
  std::vector<uint8_t> arg_bytes;  // the raw argument buffer, laid out per the function's params
  std::vector<PointerArg> pointer_args;
  int64_t gpuDurationNs() const {
    return gpu_start_ns == kNoTime || gpu_end_ns == kNoTime ? kNoTime : spanNs(gpu_start_ns, gpu_end_ns);
  }
  LaunchShape shape() const { return {grid, block, dynamic_shared_bytes}; }
  friend bool operator==(const Launch&, const Launch&) = default;
};

struct Allocation {
  Id id = kNoId;
  Id context_id = kNoId;
  uint64_t address = 0;
  uint64_t size = 0;
  AllocationKind kind = AllocationKind::kUnknown;
  int64_t alloc_ns = kNoTime;  // kNoTime: it existed before recording started (origin unknown)
  int64_t free_ns = kNoTime;   // kNoTime: still live when recording ended
  friend bool operator==(const Allocation&, const Allocation&) = default;
};

struct Memcpy {
  Id id = kNoId;
  int64_t correlation_id = 0;
  int64_t thread_id = 0;
  Id stream_id = kNoId;
  MemcpyKind kind = MemcpyKind::kUnknown;
  uint64_t src_address = 0, dst_address = 0;
  Id src_allocation_id = kNoId, dst_allocation_id = kNoId;
  uint64_t bytes = 0;
  bool async = false;
  int64_t api_start_ns = kNoTime, api_end_ns = kNoTime;
  int64_t gpu_start_ns = kNoTime, gpu_end_ns = kNoTime;
  friend bool operator==(const Memcpy&, const Memcpy&) = default;
};

struct Memset {
  Id id = kNoId;
  int64_t correlation_id = 0;
  int64_t thread_id = 0;
  Id stream_id = kNoId;
  uint64_t dst_address = 0;
  Id dst_allocation_id = kNoId;
  uint64_t bytes = 0;
  uint32_t value = 0;
  int element_size = 1;
  bool async = false;
  int64_t api_start_ns = kNoTime, api_end_ns = kNoTime;
  int64_t gpu_start_ns = kNoTime, gpu_end_ns = kNoTime;
  friend bool operator==(const Memset&, const Memset&) = default;
};

// A host-side wait: cuCtxSynchronize, cuStreamSynchronize, cuEventSynchronize, cuStreamWaitEvent.
struct Sync {
  Id id = kNoId;
  int64_t correlation_id = 0;
  int64_t thread_id = 0;
  SyncKind kind = SyncKind::kUnknown;
  Id stream_id = kNoId;  // the stream waited on, or that waits (StreamWaitEvent)
  Id event_id = kNoId;   // the Event awaited, if any
  int64_t start_ns = kNoTime, end_ns = kNoTime;
  friend bool operator==(const Sync&, const Sync&) = default;
};

// One cuEventRecord: marks a point in a stream that a Sync may wait for.
struct Event {
  Id id = kNoId;
  int64_t correlation_id = 0;
  uint64_t handle = 0;  // CUevent value; the same handle may be recorded many times
  Id stream_id = kNoId;
  int64_t record_ns = kNoTime;
  friend bool operator==(const Event&, const Event&) = default;
};

struct NvtxRange {
  Id id = kNoId;
  std::string name;
  std::string domain;
  int64_t thread_id = 0;
  int64_t start_ns = kNoTime, end_ns = kNoTime;
  friend bool operator==(const NvtxRange&, const NvtxRange&) = default;
};

struct Metric {
  Id launch_id = kNoId;
  std::string name;  // "dram_bytes_read", "flops_fp32", ...
  double value = 0;
  std::string unit;  // "bytes", "flop", "ns", "inst"
  MetricSource source = MetricSource::kMeasured;
  friend bool operator==(const Metric&, const Metric&) = default;
};

// Bad data met while producing or reading a trace (tier 1 errors): counted, never fatal.
struct Stat {
  std::string name;  // "dropped_records", "unmatched_correlation", ...
  int64_t value = 0;
  StatSeverity severity = StatSeverity::kInfo;
  std::string description;
  friend bool operator==(const Stat&, const Stat&) = default;
};

// CUDA graphs (schema version 4). A graph is recorded as the collector saw it when it was instantiated (or when an
// executable graph was updated from it): one Graph row per such snapshot, with its nodes and edges. Replays are
// GraphLaunch rows; the kernels a replay ran are the kernel nodes of its exec's graph (and of its child graphs),
// not Launch rows: the launch table holds the kernels launched one by one.
struct Graph {
  Id id = kNoId;
  uint64_t handle = 0;  // CUgraph value; snapshots of the same graph share it
  GraphOrigin origin = GraphOrigin::kUnknown;
  Id stream_id = kNoId;        // capture: the stream whose capture made it
  Id parent_graph_id = kNoId;  // child: the graph holding the child-graph node; exec_node_update: the graph copied
  int64_t snapshot_ns = kNoTime;
  friend bool operator==(const Graph&, const Graph&) = default;
};

// One node of a recorded graph. Kernel nodes carry what a Launch carries (function, shape, the raw argument
// buffer and the pointer arguments resolved to allocations when the graph was read); memcpy and memset nodes their
// addresses, resolved the same way.
struct GraphNode {
  Id id = kNoId;  // unique in the trace, not only in its graph
  Id graph_id = kNoId;
  int index = 0;        // position in the driver's node list (cuGraphGetNodes)
  uint64_t handle = 0;  // CUgraphNode value
  GraphNodeType type = GraphNodeType::kOther;
  Id function_id = kNoId;  // kernel
  Dim3 grid, block;
  uint32_t dynamic_shared_bytes = 0;
  std::vector<uint8_t> arg_bytes;
  std::vector<PointerArg> pointer_args;
  MemcpyKind memcpy_kind = MemcpyKind::kUnknown;  // memcpy
  uint64_t src_address = 0, dst_address = 0;      // memcpy; memset: dst
  Id src_allocation_id = kNoId, dst_allocation_id = kNoId;
  uint64_t bytes = 0;  // memcpy, memset
  uint32_t value = 0;  // memset
  int element_size = 0;
  Id child_graph_id = kNoId;  // child graph
  uint64_t event_handle = 0;  // event record / wait: the CUevent
  LaunchShape shape() const { return {grid, block, dynamic_shared_bytes}; }
  // A kernel node as the launch it makes at every replay, under `launch_id`: its function, shape, argument bytes and
  // pointer arguments (resolved when the collector read the graph); no API or GPU times.
  Launch launch(Id launch_id) const {
    Launch l;
    l.id = launch_id;
    l.function_id = function_id;
    l.grid = grid;
    l.block = block;
    l.dynamic_shared_bytes = dynamic_shared_bytes;
    l.arg_bytes = arg_bytes;
    l.pointer_args = pointer_args;
    return l;
  }
  friend bool operator==(const GraphNode&, const GraphNode&) = default;
};

// A dependency: `to_node_id` runs after `from_node_id` (same graph).
struct GraphEdge {
  Id graph_id = kNoId;
  Id from_node_id = kNoId;
  Id to_node_id = kNoId;
  int type = 0;  // CUgraphDependencyType: 0 default, 1 programmatic
  friend bool operator==(const GraphEdge&, const GraphEdge&) = default;
};

// An executable graph: instantiated from a graph, or the same CUgraphExec after an update (update_of: the row it
// replaces; later launches of the handle run this one).
struct GraphExec {
  Id id = kNoId;
  uint64_t handle = 0;  // CUgraphExec value
  Id graph_id = kNoId;
  Id update_of = kNoId;
  int64_t thread_id = 0;
  int64_t api_start_ns = kNoTime, api_end_ns = kNoTime;
  friend bool operator==(const GraphExec&, const GraphExec&) = default;
};

// One cuGraphLaunch: a replay of an executable graph on a stream.
struct GraphLaunch {
  Id id = kNoId;  // sequence number in API call order
  int64_t correlation_id = 0;
  int64_t thread_id = 0;
  Id graph_exec_id = kNoId;
  Id stream_id = kNoId;
  int64_t api_start_ns = kNoTime, api_end_ns = kNoTime;
  friend bool operator==(const GraphLaunch&, const GraphLaunch&) = default;
};

struct Trace {
  TraceMetadata metadata;
  std::vector<Process> processes;
  std::vector<Device> devices;
  std::vector<Context> contexts;
  std::vector<Stream> streams;
  std::vector<Module> modules;
  std::vector<KernelFunction> functions;
  std::vector<Launch> launches;
  std::vector<Allocation> allocations;
  std::vector<Memcpy> memcpys;
  std::vector<Memset> memsets;
  std::vector<Sync> syncs;
  std::vector<Event> events;
  std::vector<NvtxRange> nvtx_ranges;
  std::vector<Metric> metrics;
  std::vector<Stat> stats;
  std::vector<Graph> graphs;
  std::vector<GraphNode> graph_nodes;
  std::vector<GraphEdge> graph_edges;
  std::vector<GraphExec> graph_execs;
  std::vector<GraphLaunch> graph_launches;
  friend bool operator==(const Trace&, const Trace&) = default;
};

// Returns the allocation containing [address, address + 1) among `allocations` that were live at `time_ns`
// (kNoTime = ignore time), or nullptr. Linear; use an interval map for bulk resolution.
const Allocation* findAllocation(const std::vector<Allocation>& allocations, uint64_t address,
                                 int64_t time_ns = kNoTime);

// Hex SHA-256 of `bytes` (module image identity).
std::string sha256Hex(const uint8_t* bytes, size_t size);
inline std::string sha256Hex(const std::vector<uint8_t>& bytes) {
  return sha256Hex(bytes.data(), bytes.size());
}

}  // namespace kfuse::core
