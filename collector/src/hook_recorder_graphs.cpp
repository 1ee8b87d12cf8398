// The hook recorder's CUDA graph support: reading a graph's nodes and edges when it is instantiated (or an exec is
// updated from it), kernel node updates of an exec, and graph launches. Kernels inside a graph never pass a launch
// hook (cuda-notes.md §6.4), so the graph read at instantiate is what says which kernels a replay runs.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kfuse/collector/hook_recorder.h"

namespace kfuse::collector {
namespace {

core::GraphNodeType nodeType(CUgraphNodeType t) {
  switch (t) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return core::GraphNodeType::kKernel;
    case CU_GRAPH_NODE_TYPE_MEMCPY: return core::GraphNodeType::kMemcpy;
    case CU_GRAPH_NODE_TYPE_MEMSET: return core::GraphNodeType::kMemset;
    case CU_GRAPH_NODE_TYPE_HOST: return core::GraphNodeType::kHost;
    case CU_GRAPH_NODE_TYPE_GRAPH: return core::GraphNodeType::kChildGraph;
    case CU_GRAPH_NODE_TYPE_EMPTY: return core::GraphNodeType::kEmpty;
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: return core::GraphNodeType::kEventWait;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD: return core::GraphNodeType::kEventRecord;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: return core::GraphNodeType::kMemAlloc;
    case CU_GRAPH_NODE_TYPE_MEM_FREE: return core::GraphNodeType::kMemFree;
    default: return core::GraphNodeType::kOther;
  }
}

// The address a 3D copy starts at on one side: a host or device pointer plus the offsets; 0 for a CUDA array.
uint64_t copyAddress(CUmemorytype type, const void* host, CUdeviceptr device, size_t x, size_t y, size_t z,
                     size_t pitch, size_t height) {
  uint64_t base = 0;
  if (type == CU_MEMORYTYPE_HOST) {
    base = reinterpret_cast<uint64_t>(host);
  } else if (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED) {
    base = device;
  }
  return base == 0 ? 0 : base + x + (y + z * height) * pitch;
}

core::MemcpyKind copyKind(CUmemorytype src, CUmemorytype dst) {
  const bool src_host = src == CU_MEMORYTYPE_HOST, dst_host = dst == CU_MEMORYTYPE_HOST;
  const bool src_dev = src == CU_MEMORYTYPE_DEVICE || src == CU_MEMORYTYPE_ARRAY;
  const bool dst_dev = dst == CU_MEMORYTYPE_DEVICE || dst == CU_MEMORYTYPE_ARRAY;
  if (src_host && dst_dev) return core::MemcpyKind::kHostToDevice;
  if (src_dev && dst_host) return core::MemcpyKind::kDeviceToHost;
  if (src_dev && dst_dev) return core::MemcpyKind::kDeviceToDevice;
  if (src_host && dst_host) return core::MemcpyKind::kHostToHost;
  return core::MemcpyKind::kUnknown;  // unified memory on either side
}

struct NodeFill {
  const GraphNodeEvent* event;
  const HookRecorder::ArgSource* args;
};

void fillNode(uint8_t* dst, const void* c) {
  const auto* x = static_cast<const NodeFill*>(c);
  std::memcpy(dst, x->event, sizeof(GraphNodeEvent));
  if (x->args) HookRecorder::copyArgs(dst + sizeof(GraphNodeEvent), *x->args);
}

// Fills `out` through a driver query of the "call with nullptr for the count, then again" form.
// At most `cap` entries; `total` is how many there are.
template <class Query>
bool listAll(Query query, std::vector<CUgraphNode>& out, size_t cap, size_t& total) {
  size_t n = 0;
  if (query(nullptr, &n) != CUDA_SUCCESS) return false;
  total = n;
  out.resize(std::min(n, cap));
  if (out.empty()) return true;
  size_t got = out.size();
  if (query(out.data(), &got) != CUDA_SUCCESS) return false;
  out.resize(std::min(got, out.size()));
  return true;
}

}  // namespace

void HookRecorder::noteCapturedGraph(CUgraph graph, CUstream stream, int variant) {
  std::lock_guard lock(capture_mu_);
  if (captured_graphs_.size() > (1u << 16)) captured_graphs_.clear();  // bounded; origins then read as explicit
  captured_graphs_[reinterpret_cast<Handle>(graph)] = streamHandle(stream, variant);
}

void HookRecorder::noteGraphDestroyed(CUgraph graph) {
  std::lock_guard lock(capture_mu_);
  captured_graphs_.erase(reinterpret_cast<Handle>(graph));
}

void HookRecorder::pushKernelNode(GraphNodeEvent& e, const CUDA_KERNEL_NODE_PARAMS& p) {
  // A kernel node names a CUfunction, or a CUkernel when func is null (what the CUDA runtime adds).
  const auto f = p.func ? p.func : reinterpret_cast<CUfunction>(p.kern);
  e.type = core::GraphNodeType::kKernel;
  e.function = reinterpret_cast<Handle>(f);
  e.grid = {p.gridDimX, p.gridDimY, p.gridDimZ};
  e.block = {p.blockDimX, p.blockDimY, p.blockDimZ};
  e.dynamic_shared_bytes = p.sharedMemBytes;
  ArgSource args;
  if (f) {
    const FunctionSlot* fs = lookup(e.function);
    if (!fs) fs = describe(f);
    args = argSource(*fs, p.kernelParams, p.extra);
  }
  e.arg_size = args.size;
  e.flags = args.flags;
  NodeFill fill{&e, &args};
  sink_.push(e.exec ? EventKind::kGraphExecKernelNode : EventKind::kGraphNode, sizeof e + e.arg_size, &fillNode, &fill);
}

bool HookRecorder::readGraph(CUgraph graph, Handle parent, core::GraphOrigin origin, Handle stream, int depth,
                             size_t& budget) {
  hooks::DriverTable& t = table();
  const auto get_nodes = t.GraphGetNodes.load();
  const auto get_edges = t.GraphGetEdges.load();
  const auto get_type = t.GraphNodeGetType.load();
  GraphEvent ge;
  ge.graph = reinterpret_cast<Handle>(graph);
  ge.parent = parent;
  ge.stream = stream;
  ge.origin = origin;
  ge.ns = collectorNowNs();
  std::vector<CUgraphNode> nodes;
  size_t total = 0;
  bool ok = get_nodes && get_edges && get_type &&
            listAll([&](CUgraphNode* out, size_t* n) { return get_nodes(graph, out, n); }, nodes, budget, total);
  if (ok && total > nodes.size()) {
    sink_.pushStat(core::StatId::kGraphNodesLeftOut, static_cast<int64_t>(total - nodes.size()));
  }
  budget -= nodes.size();
  ge.read_failed = ok ? 0 : 1;
  sink_.pushStruct(EventKind::kGraph, ge);
  if (!ok) return false;

  for (size_t i = 0; i < nodes.size(); ++i) {
    CUgraphNode node = nodes[i];
    GraphNodeEvent e;
    e.graph = ge.graph;
    e.node = reinterpret_cast<Handle>(node);
    e.index = static_cast<uint32_t>(i);
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
    if (get_type(node, &type) != CUDA_SUCCESS) {
      ok = false;
      type = static_cast<CUgraphNodeType>(-1);
    }
    e.type = nodeType(type);
    switch (e.type) {
      case core::GraphNodeType::kKernel: {
        CUDA_KERNEL_NODE_PARAMS p{};
        auto get = t.GraphKernelNodeGetParams.load();
        if (get && get(node, &p) == CUDA_SUCCESS) {
          pushKernelNode(e, p);
          continue;
        }
        ok = false;  // recorded as a kernel node without parameters
        break;
      }
      case core::GraphNodeType::kMemcpy: {
        CUDA_MEMCPY3D c{};
        auto get = t.GraphMemcpyNodeGetParams.load();
        if (!get || get(node, &c) != CUDA_SUCCESS) {
          ok = false;
          break;
        }
        e.memcpy_kind = copyKind(c.srcMemoryType, c.dstMemoryType);
        e.src = copyAddress(c.srcMemoryType, c.srcHost, c.srcDevice, c.srcXInBytes, c.srcY, c.srcZ, c.srcPitch,
                            c.srcHeight);
        e.dst = copyAddress(c.dstMemoryType, c.dstHost, c.dstDevice, c.dstXInBytes, c.dstY, c.dstZ, c.dstPitch,
                            c.dstHeight);
        e.bytes = uint64_t{c.WidthInBytes} * std::max<size_t>(c.Height, 1) * std::max<size_t>(c.Depth, 1);
        break;
      }
      case core::GraphNodeType::kMemset: {
        CUDA_MEMSET_NODE_PARAMS m{};
        auto get = t.GraphMemsetNodeGetParams.load();
        if (!get || get(node, &m) != CUDA_SUCCESS) {
          ok = false;
          break;
        }
        e.dst = m.dst;
        e.value = m.value;
        e.element_size = m.elementSize;
        e.bytes = uint64_t{m.width} * m.elementSize * std::max<size_t>(m.height, 1);
        break;
      }
      case core::GraphNodeType::kChildGraph: {
        CUgraph child = nullptr;
        auto get = t.GraphChildGraphNodeGetGraph.load();
        if (!get || get(node, &child) != CUDA_SUCCESS || !child) {
          ok = false;
          break;
        }
        if (depth + 1 >= kMaxChildGraphDepth) {
          sink_.pushStat(core::StatId::kGraphNodesLeftOut, 1);  // the child graph's nodes, counted as one
          break;
        }
        // The child graph's events come first, so the node can name its snapshot.
        if (!readGraph(child, ge.graph, core::GraphOrigin::kChild, 0, depth + 1, budget)) ok = false;
        e.child_graph = reinterpret_cast<Handle>(child);
        break;
      }
      case core::GraphNodeType::kEventRecord:
      case core::GraphNodeType::kEventWait: {
        CUevent event = nullptr;
        auto get = e.type == core::GraphNodeType::kEventRecord ? t.GraphEventRecordNodeGetEvent.load()
                                                               : t.GraphEventWaitNodeGetEvent.load();
        if (get && get(node, &event) == CUDA_SUCCESS) e.event = reinterpret_cast<Handle>(event);
        break;
      }
      default: break;
    }
    NodeFill fill{&e, nullptr};
    sink_.push(EventKind::kGraphNode, sizeof e, &fillNode, &fill);
  }

  // Edges with their dependency type; a driver without edge data (before 12.3) is asked without it.
  size_t n = 0;
  if (get_edges(graph, nullptr, nullptr, nullptr, &n) != CUDA_SUCCESS) return false;
  std::vector<CUgraphNode> from(n), to(n);
  std::vector<CUgraphEdgeData> data(n);
  if (n > 0 && get_edges(graph, from.data(), to.data(), data.data(), &n) != CUDA_SUCCESS) {
    data.assign(n, CUgraphEdgeData{});
    if (get_edges(graph, from.data(), to.data(), nullptr, &n) != CUDA_SUCCESS) return false;
  }
  n = std::min(n, from.size());
  for (size_t i = 0; i < n; ++i) {
    GraphEdgeEvent edge;
    edge.graph = ge.graph;
    edge.from = reinterpret_cast<Handle>(from[i]);
    edge.to = reinterpret_cast<Handle>(to[i]);
    edge.type = data[i].type;
    sink_.pushStruct(EventKind::kGraphEdge, edge);
  }
  return ok;
}

void HookRecorder::recordGraphExec(CUgraphExec exec, CUgraph graph, GraphExecChange change, int64_t t0, int64_t t1) {
  if (!table().GraphGetNodes.load()) {
    if (auto resolve = query_resolver_.load()) resolve();
  }
  Handle stream = 0;
  core::GraphOrigin origin = core::GraphOrigin::kExplicit;
  {
    std::lock_guard lock(capture_mu_);
    auto it = captured_graphs_.find(reinterpret_cast<Handle>(graph));
    if (it != captured_graphs_.end()) {
      origin = core::GraphOrigin::kCapture;
      stream = it->second;
    }
  }
  size_t budget = kMaxGraphNodes;
  if (!readGraph(graph, 0, origin, stream, 0, budget)) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      std::fprintf(stderr,
                   "kfuse: collector: could not read the nodes of an instantiated CUDA graph (driver graph queries "
                   "missing or failing); its launches are recorded without them\n");
    }
    sink_.pushStat(core::StatId::kGraphsNotRead, 1);
  }
  GraphExecEvent x;
  x.exec = reinterpret_cast<Handle>(exec);
  x.graph = reinterpret_cast<Handle>(graph);
  x.change = change;
  x.thread_id = collectorThreadId();
  x.api_start_ns = t0;
  x.api_end_ns = t1;
  sink_.pushStruct(EventKind::kGraphExec, x);
}

void HookRecorder::recordExecKernelNode(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* params,
                                        int64_t t0, int64_t t1) {
  if (!params) return;
  GraphNodeEvent e;
  e.exec = reinterpret_cast<Handle>(exec);
  e.node = reinterpret_cast<Handle>(node);
  e.thread_id = collectorThreadId();
  e.api_start_ns = t0;
  e.api_end_ns = t1;
  pushKernelNode(e, *params);
}

void HookRecorder::recordGraphLaunch(CUgraphExec exec, CUstream stream, int variant, int64_t t0, int64_t t1,
                                     int64_t correlation_id) {
  // Launched into a capture (the captured graph gets it as a child graph node): nothing runs now.
  if (capturing(stream, variant)) {
    noteCapturedWork();
    return;
  }
  GraphLaunchEvent e;
  e.correlation_id = correlation_id >= 0 ? correlation_id : sink_.nextCorrelationId();
  e.thread_id = collectorThreadId();
  e.exec = reinterpret_cast<Handle>(exec);
  e.stream = streamHandle(stream, variant);
  e.api_start_ns = t0;
  e.api_end_ns = t1;
  sink_.pushStruct(EventKind::kGraphLaunch, e);
  // The analyzer orders launches, not graph nodes: for it this is work it cannot place between two launches.
  sink_.pushStat(core::StatId::kGraphLaunchesNotRecorded, 1);
}

}  // namespace kfuse::collector
