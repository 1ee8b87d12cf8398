// CUDA graphs in the stand-in: graphs built node by node or captured from streams, instantiated into executable
// graphs and launched. A launch runs the nodes to completion, one after another in a topological order, when it
// is called (the stand-in's streams are synchronous), so a graph launch is ordered with other work on any stream.
//
// driver_graph.cpp holds construction, instantiation, update and launch; driver_capture.cpp holds stream capture
// and the checks other entry points make while a capture is in progress. This private header is what they share
// with the rest of the stand-in.
//
// Thread-safety: the registries of handles and all capture state are guarded by one mutex (graphMutex()). As on a
// real driver, one graph must not be changed from two threads at once; an executable graph may be launched from
// several threads (launches of one executable graph are serialised).
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kfuse/core/trace.h"

struct CUgraph_st;

// One node. Only the parameters of its type are meaningful.
struct CUgraphNode_st {
  uint32_t magic = 0x6b676e64;
  CUgraph_st* graph = nullptr;  // the graph that owns the node
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  std::vector<CUgraphNode_st*> deps;         // incoming edges, in the order they were added
  std::vector<CUgraphNode_st*> dependents;   // outgoing edges
  const CUgraphNode_st* original = nullptr;  // in a clone (or an executable graph): the node it was copied from

  // CU_GRAPH_NODE_TYPE_KERNEL: the argument values are copied when the node is made or its parameters are set,
  // as the driver does; arg_ptrs point into args for the getters.
  CUfunction func = nullptr;
  kfuse::core::LaunchShape shape;
  std::vector<uint8_t> args;
  std::vector<void*> arg_ptrs;
  CUDA_MEMCPY3D copy{};               // CU_GRAPH_NODE_TYPE_MEMCPY
  CUDA_MEMSET_NODE_PARAMS set{};      // CU_GRAPH_NODE_TYPE_MEMSET
  CUDA_HOST_NODE_PARAMS host{};       // CU_GRAPH_NODE_TYPE_HOST
  CUevent event = nullptr;            // CU_GRAPH_NODE_TYPE_EVENT_RECORD, CU_GRAPH_NODE_TYPE_WAIT_EVENT
  std::unique_ptr<CUgraph_st> child;  // CU_GRAPH_NODE_TYPE_GRAPH: the node's own copy of the graph
  bool enabled = true;                // in an executable graph: cuGraphNodeSetEnabled (disabled: an empty node)

  CUgraphNode_st() = default;
  CUgraphNode_st(const CUgraphNode_st&) = delete;
  CUgraphNode_st& operator=(const CUgraphNode_st&) = delete;
  ~CUgraphNode_st();
};

struct CUgraph_st {
  uint32_t magic = 0x6b677270;
  unsigned long long id = 0;
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;  // in creation order
  std::vector<CUgraphNode_st*> order;  // a topological order; set for the graphs of an executable graph only
  CUgraphNode_st* parent = nullptr;    // the child-graph node that owns this graph, if any

  CUgraph_st();
  CUgraph_st(const CUgraph_st&) = delete;
  CUgraph_st& operator=(const CUgraph_st&) = delete;
  ~CUgraph_st();
};

struct CUgraphExec_st {
  uint32_t magic = 0x6b676578;
  unsigned long long id = 0;
  cuuint64_t flags = 0;
  std::unique_ptr<CUgraph_st> graph;  // a copy of the graph it was instantiated from
  // Node of the source graph (or of a graph it was updated from) -> the executable graph's copy, for
  // cuGraphExec*SetParams.
  std::unordered_map<const CUgraphNode_st*, CUgraphNode_st*> by_source;
  std::mutex run;  // launches of one executable graph run one at a time
};

namespace kfuse::standin {

// Guards the graph, node and executable-graph registries and all stream-capture state.
std::mutex& graphMutex();

// True for handles the stand-in handed out and that are still alive (a registry with its own lock: graphs and
// nodes register themselves when made and unregister when destroyed).
bool liveGraph(const CUgraph_st* g);
bool liveNode(const CUgraphNode_st* n);
bool liveExec(const CUgraphExec_st* e);

// A new, empty graph.
std::unique_ptr<CUgraph_st> newGraph();

// Adds `node` to `g` after `deps` (which must be nodes of g). Call with graphMutex() held.
CUgraphNode_st* addNode(CUgraph_st* g, std::unique_ptr<CUgraphNode_st> node, std::span<CUgraphNode_st* const> deps);

// A deep copy of `g` (child graphs included), each copied node's `original` set. Call with graphMutex() held.
std::unique_ptr<CUgraph_st> cloneGraph(const CUgraph_st& g);

// Node constructors from the parameters of stream operations (also used by the cuGraphAdd*Node entry points).
// The kernel node copies the argument values now. Errors: CUDA_ERROR_INVALID_VALUE / _INVALID_HANDLE.
CUresult makeKernelNode(CUfunction f, const kfuse::core::LaunchShape& shape, void** params, void** extra,
                        std::unique_ptr<CUgraphNode_st>* out);
std::unique_ptr<CUgraphNode_st> makeCopyNode(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
std::unique_ptr<CUgraphNode_st> makeCopyNode(const CUDA_MEMCPY3D& copy);
std::unique_ptr<CUgraphNode_st> makeSetNode(CUdeviceptr dst, size_t pitch, unsigned value, unsigned element_size,
                                            size_t width, size_t height);
std::unique_ptr<CUgraphNode_st> makeHostNode(CUhostFn fn, void* user);
std::unique_ptr<CUgraphNode_st> makeEventNode(CUgraphNodeType type, CUevent e);
// A child-graph node holding a copy of the graph of `exec` (cuGraphLaunch while capturing).
std::unique_ptr<CUgraphNode_st> makeGraphLaunchNode(CUgraphExec_st* exec);

// cuGetProcAddress: the entry point of an older ABI version of a graph function (cuGraphGetEdges before 12.3,
// cuGraphInstantiate before 12.0, ...), or null when the current one applies.
void* legacyGraphFunction(const std::string& name, int version);

// ---- Stream capture (driver_capture.cpp) ---------------------------------------------------------------------

// Number of capture sequences in progress: every check below returns at once when it is zero.
extern std::atomic<int> g_active_captures;
inline bool capturesActive() {
  return g_active_captures.load(std::memory_order_acquire) > 0;
}

// For a stream-ordered operation on `s` while captures are active: adds `node` to the capture graph when `s`
// is capturing (*taken = true, returns CUDA_SUCCESS, or CUDA_ERROR_STREAM_CAPTURE_INVALIDATED when the capture
// was invalidated), refuses the legacy stream while a blocking stream captures (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
// the capture invalidated), and otherwise leaves the operation to run (*taken = false, CUDA_SUCCESS).
CUresult captureNode(CUstream s, std::unique_ptr<CUgraphNode_st> node, bool* taken);

// An operation that cannot be captured (synchronising or querying a capturing stream, a callback the stand-in does
// not capture): CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED with the capture invalidated when `s` captures,
// CUDA_ERROR_STREAM_CAPTURE_IMPLICIT for the legacy stream while a blocking stream captures, else CUDA_SUCCESS.
CUresult refuseOnCapturingStream(CUstream s);

// A "potentially unsafe" call (synchronous allocation, copy, set or synchronisation): prohibited by the calling
// thread's capture interaction mode (cuThreadExchangeStreamCaptureMode) while captures are in progress; then the
// captures that prohibit it are invalidated and it returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.
CUresult checkUnsafeCall();

// Event operations during capture: cuEventRecord on a capturing stream records the stream's capture
// dependencies instead of a time (*taken = true); cuStreamWaitEvent on an event recorded in a capture joins the
// waiting stream to that capture. Both return the errors of the capture rules.
CUresult captureEventRecord(CUevent e, CUstream s, bool* taken);
CUresult captureStreamWaitEvent(CUstream s, CUevent e, unsigned flags, bool* taken);
// CUDA_ERROR_CAPTURED_EVENT for an event last recorded in a capture that is still in progress.
CUresult checkCapturedEvent(CUevent e);

// cuGetProcAddress: the entry point of an older ABI version of a capture function, or null.
void* legacyCaptureFunction(const std::string& name, int version);

// Forget a destroyed stream or event (a capture whose origin stream is destroyed is dropped).
void forgetStream(CUstream s);
void forgetEvent(CUevent e);

// ---- Launch helpers (driver_launch.cpp) ----------------------------------------------------------------------

// The parameter buffer of a launch of `f` from kernelParams or extra (CU_LAUNCH_PARAM_BUFFER_*).
CUresult packArgs(CUfunction f, void** params, void** extra, std::vector<uint8_t>* buf);
// Runs `f` with a packed parameter buffer in the current context (a fault poisons it, as on a GPU).
CUresult runKernel(CUfunction f, const kfuse::core::LaunchShape& shape, std::span<const uint8_t> args);

// ---- Copies (driver_memcpy.cpp) ------------------------------------------------------------------------------

// A 3D copy between host and device memory (arrays are not supported: CUDA_ERROR_NOT_SUPPORTED).
CUresult copy3d(const CUDA_MEMCPY3D& c);

// ---- Counters for tools (kfuse/emulator/standin.h) -----------------------------------------------------------
extern std::atomic<uint64_t> g_graph_launches;
extern std::atomic<uint64_t> g_graph_kernel_nodes;

}  // namespace kfuse::standin
