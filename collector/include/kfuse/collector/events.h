// Raw collector events: what a backend (hook or CUPTI) observes, in plain fixed-layout structs that can be
// copied into a preallocated ring buffer without allocating.
//
// Events carry the application's handles (CUfunction, CUstream, CUmodule values as integers) and addresses; the
// TraceAssembler turns them into core::Trace records on the consumer side (ids, stream/function tables, pointer
// resolution). Every event is a header plus a fixed struct plus optional trailing bytes (argument buffer, a
// name, a module image), 8-byte aligned in the queue. Kinds and grid/block sizes are the trace model's types
// (kfuse/core/trace.h): enums with a fixed 32-bit underlying type, and core::Dim3.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kfuse/core/trace.h"

namespace kfuse::collector {

enum class EventKind : uint16_t {
  kPadding = 0,  // queue-internal: skip to the start of the ring
  kLaunch,
  kFunction,
  kModule,
  kModuleUnload,
  kAlloc,
  kFree,
  kMemcpy,
  kMemset,
  kSync,
  kEventRecord,
  kDevice,
  kGpuTime,
  kMetric,
  kNvtx,
  kStat,
  kStreamDestroy,
  kCorrelationAlias,
  kGraph,
  kGraphNode,
  kGraphEdge,
  kGraphExec,
  kGraphExecKernelNode,
  kGraphLaunch,
  kCount,  // number of kinds, not an event
};

// Where a handle/pointer value came from; values are the application's.
using Handle = uint64_t;

// CU_STREAM_PER_THREAD: what a null stream means in a _ptsz/_ptds call.
inline constexpr Handle kPerThreadStream = 0x2;

// The stream a call enqueued on: `variant` 1 is a _ptsz/_ptds call, whose null stream is the per-thread one.
inline Handle streamHandle(const void* stream, int variant) {
  const auto h = reinterpret_cast<Handle>(stream);
  return h == 0 && variant == 1 ? kPerThreadStream : h;
}

struct LaunchEvent {  // + arg_size bytes of the argument buffer (device-side layout)
  int64_t correlation_id = 0;
  int64_t thread_id = 0;
  Handle function = 0;
  Handle stream = 0;
  core::Dim3 grid, block;
  uint32_t dynamic_shared_bytes = 0;
  uint32_t arg_size = 0;
  int64_t api_start_ns = -1, api_end_ns = -1;
  uint32_t flags = 0;  // LaunchFlags
  uint32_t reserved = 0;
};
enum LaunchFlags : uint32_t {
  kLaunchLayoutKnown = 1u << 0,    // arg bytes follow the function's parameter layout
  kLaunchArgsTruncated = 1u << 1,  // the argument buffer was larger than kMaxArgBytes
  kLaunchCooperative = 1u << 2,
  kLaunchHasAttributes = 1u << 3,    // cuLaunchKernelEx with attributes (clusters, priorities...)
  kLaunchWaitsForGpuTime = 1u << 4,  // a kGpuTime event with the same correlation id will follow (CUPTI)
};

// Kernel parameters are at most 32764 bytes (CUDA 12.1+); more is truncated and flagged.
inline constexpr uint32_t kMaxArgBytes = 32768;
inline constexpr uint32_t kMaxParams = 1024;

struct ParamLayout {
  uint32_t offset = 0;
  uint32_t size = 0;
};

struct FunctionEvent {  // + param_count ParamLayout + name_size bytes of the (mangled) name
  Handle function = 0;
  Handle module = 0;  // CUmodule or CUlibrary it came from, 0 = unknown
  uint32_t param_count = 0;
  uint32_t name_size = 0;
  uint32_t static_shared_bytes = 0;
  uint32_t registers_per_thread = 0;
  uint32_t layout_known = 0;
  uint32_t reserved = 0;
};

// Module images are too large for the ring: the event carries a heap copy (`image`, owned by the event once
// queued; the consumer frees it with delete[]). Module loads are rare and not on the launch path.
struct ModuleEvent {
  Handle module = 0;
  Handle context = 0;
  int64_t load_ns = -1;
  core::ImageKind kind = core::ImageKind::kUnknown;
  uint32_t reserved = 0;
  uint8_t* image = nullptr;
  uint64_t image_size = 0;
};

// A destroyed stream: its handle may come back for a new stream.
struct StreamDestroyEvent {
  Handle stream = 0;
  int64_t ns = -1;
};

struct ModuleUnloadEvent {
  Handle module = 0;
  int64_t ns = -1;
};

// Virtual memory management: cuMemCreate reports a physical allocation (kAllocPhysical: `handle` and `size`, no
// address, no allocation row); cuMemMap a mapping of one (kAllocMapping: the range, `handle` and its `handle_offset`).
// The assembler tells two mappings of the same bytes apart from two allocations by these.
inline constexpr uint32_t kAllocMapping = 1;
inline constexpr uint32_t kAllocPhysical = 2;

struct AllocEvent {
  uint64_t address = 0;
  uint64_t size = 0;
  Handle context = 0;
  int64_t ns = -1;
  core::AllocationKind kind = core::AllocationKind::kDevice;
  uint32_t flags = 0;  // kAllocMapping, kAllocPhysical
  uint64_t handle = 0;
  uint64_t handle_offset = 0;

  // cuMemMap of `handle` at `offset` onto [address, address + size), and cuMemCreate of `handle`: both backends
  // record them alike.
  static AllocEvent mapping(uint64_t address, uint64_t size, uint64_t handle, uint64_t offset, int64_t ns) {
    AllocEvent e;
    e.address = address;
    e.size = size;
    e.ns = ns;
    e.flags = kAllocMapping;
    e.handle = handle;
    e.handle_offset = offset;
    return e;
  }
  static AllocEvent physical(uint64_t handle, uint64_t size, int64_t ns) {
    AllocEvent e;
    e.size = size;
    e.ns = ns;
    e.flags = kAllocPhysical;
    e.handle = handle;
    return e;
  }
};

struct FreeEvent {
  uint64_t address = 0;
  int64_t ns = -1;
  uint32_t host = 0;  // cuMemFreeHost
  uint32_t reserved = 0;
};

struct MemcpyEvent {
  int64_t correlation_id = 0;
  int64_t thread_id = 0;
  Handle stream = 0;
  uint64_t src = 0, dst = 0, bytes = 0;
  core::MemcpyKind kind = core::MemcpyKind::kUnknown;
  uint32_t async = 0;
  uint32_t waits_for_gpu_time = 0;  // from a CUPTI callback: GPU times come with the record of the same correlation
  uint32_t reserved = 0;
  int64_t api_start_ns = -1, api_end_ns = -1;
  int64_t gpu_start_ns = -1, gpu_end_ns = -1;
  int64_t stream_native_id = -1;  // CUPTI stream id when the handle is not known
};

struct MemsetEvent {
  int64_t correlation_id = 0;
  int64_t thread_id = 0;
  Handle stream = 0;
  uint64_t dst = 0, bytes = 0;
  uint32_t value = 0;
  uint32_t element_size = 1;
  uint32_t async = 0;
  uint32_t waits_for_gpu_time = 0;  // as MemcpyEvent's
  int64_t api_start_ns = -1, api_end_ns = -1;
  int64_t gpu_start_ns = -1, gpu_end_ns = -1;
  int64_t stream_native_id = -1;
};

struct SyncEvent {
  int64_t correlation_id = 0;
  int64_t thread_id = 0;
  core::SyncKind kind = core::SyncKind::kUnknown;
  uint32_t reserved = 0;
  Handle stream = 0;
  Handle event = 0;  // CUevent awaited, 0 = none
  int64_t start_ns = -1, end_ns = -1;
  int64_t stream_native_id = -1;
};

struct EventRecordEvent {
  int64_t correlation_id = 0;
  Handle event = 0;
  Handle stream = 0;
  int64_t ns = -1;
};

struct DeviceEvent {
  int32_t ordinal = 0;
  int32_t cc_major = 0, cc_minor = 0;
  int32_t sm_count = 0;
  uint64_t memory_bytes = 0;
  int64_t clock_khz = 0;
  char name[256] = {};
};

// GPU start/end for an earlier event with the same correlation id (CUPTI activity records, event timing).
enum class GpuTimeTarget : uint32_t { kLaunch = 0, kMemcpy, kMemset };
struct GpuTimeEvent {  // + name_size bytes: the kernel name from the activity record (for unmatched records)
  int64_t correlation_id = 0;
  int64_t start_ns = -1, end_ns = -1;
  GpuTimeTarget target = GpuTimeTarget::kLaunch;
  uint32_t name_size = 0;
  uint32_t static_shared_bytes = 0;
  uint32_t registers_per_thread = 0;
  core::Dim3 grid, block;
  uint32_t dynamic_shared_bytes = 0;
  uint32_t reserved = 0;
  int64_t stream_native_id = -1;
};

struct MetricEvent {
  int64_t correlation_id = 0;  // of the launch
  double value = 0;
  core::MetricSource source = core::MetricSource::kMeasured;
  uint32_t reserved = 0;
  char name[48] = {};
  char unit[16] = {};
};

struct NvtxEvent {  // + name_size bytes of name, then domain_size bytes of domain ("" = NVTX's default domain)
  int64_t thread_id = 0;
  int64_t start_ns = -1, end_ns = -1;
  uint32_t name_size = 0;
  uint32_t domain_size = 0;
};

// CUPTI: a driver call made inside a runtime API call. Activity records of the work it enqueued may carry either
// correlation id; the assembler accepts both.
struct CorrelationAliasEvent {
  int64_t driver_correlation_id = 0;
  int64_t runtime_correlation_id = 0;
};

// A producer-side statistic (tier-1 error count) to be stored in the trace's stat table.
struct StatEvent {
  int64_t value = 0;
  core::StatSeverity severity = core::StatSeverity::kInfo;
  uint32_t reserved = 0;
  char name[64] = {};
  char description[192] = {};
};

// CUDA graphs. A graph read when it is instantiated or an exec is updated from it: kGraph opens a snapshot of it,
// then its nodes (kGraphNode) and edges (kGraphEdge) follow, all naming the graph by handle; a child graph's events
// come before the child-graph node that holds it. kGraphExec then says which exec now runs the latest snapshot.
struct GraphEvent {
  Handle graph = 0;
  Handle parent = 0;  // a child graph: the graph holding its node
  Handle stream = 0;  // a captured graph: the stream whose capture made it
  core::GraphOrigin origin = core::GraphOrigin::kUnknown;
  uint32_t read_failed = 0;  // its nodes or edges could not be read (counted)
  int64_t ns = -1;
};

// One node (kGraphNode), or the new parameters of one kernel node of an exec (kGraphExecKernelNode:
// cuGraphExecKernelNodeSetParams; `exec` and the call's times set). + arg_size bytes of the argument buffer.
struct GraphNodeEvent {
  Handle graph = 0;
  Handle node = 0;
  Handle exec = 0;
  core::GraphNodeType type = core::GraphNodeType::kOther;
  uint32_t index = 0;
  Handle function = 0;  // kernel
  core::Dim3 grid, block;
  uint32_t dynamic_shared_bytes = 0;
  uint32_t arg_size = 0;
  uint32_t flags = 0;  // LaunchFlags (layout known, truncated)
  core::MemcpyKind memcpy_kind = core::MemcpyKind::kUnknown;
  uint64_t src = 0, dst = 0, bytes = 0;  // memcpy; memset: dst, bytes
  uint32_t value = 0, element_size = 0;  // memset
  Handle child_graph = 0;
  Handle event = 0;
  int64_t thread_id = 0;  // kGraphExecKernelNode: the call
  int64_t api_start_ns = -1, api_end_ns = -1;
};

struct GraphEdgeEvent {
  Handle graph = 0;
  Handle from = 0, to = 0;
  uint32_t type = 0;  // CUgraphDependencyType
  uint32_t reserved = 0;
};

enum class GraphExecChange : uint32_t { kInstantiate, kUpdate };
struct GraphExecEvent {
  Handle exec = 0;
  Handle graph = 0;
  GraphExecChange change = GraphExecChange::kInstantiate;
  uint32_t reserved = 0;
  int64_t thread_id = 0;
  int64_t api_start_ns = -1, api_end_ns = -1;
};

struct GraphLaunchEvent {
  int64_t correlation_id = 0;
  int64_t thread_id = 0;
  Handle exec = 0;
  Handle stream = 0;
  int64_t api_start_ns = -1, api_end_ns = -1;
};

static_assert(std::is_trivially_copyable_v<LaunchEvent> && std::is_trivially_copyable_v<ModuleEvent> &&
              std::is_trivially_copyable_v<DeviceEvent> && std::is_trivially_copyable_v<StatEvent>);
// The trace model's types in these layouts: 32-bit kinds, and Dim3 as three packed 32-bit values.
static_assert(sizeof(core::ImageKind) == 4 && sizeof(core::AllocationKind) == 4 && sizeof(core::MemcpyKind) == 4 &&
              sizeof(core::SyncKind) == 4 && sizeof(core::MetricSource) == 4 && sizeof(core::StatSeverity) == 4 &&
              sizeof(core::GraphOrigin) == 4 && sizeof(core::GraphNodeType) == 4);
static_assert(sizeof(core::Dim3) == 12 && alignof(core::Dim3) == 4 && std::is_trivially_copyable_v<core::Dim3>);

}  // namespace kfuse::collector
