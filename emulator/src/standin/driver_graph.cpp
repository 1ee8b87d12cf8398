// CUDA graphs: explicit construction (cuGraphCreate, cuGraphAdd*Node, edges), node parameters, clones,
// instantiation, executable-graph updates and launches (driver_graph.h). Stream capture is in driver_capture.cpp.
#include "driver_graph.h"

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "driver_state.h"
#include "kfuse/emulator/emulator.h"
#include "standin_internal.h"

using kfuse::standin::graphMutex;
using kfuse::standin::liveGraph;
using kfuse::standin::liveNode;

namespace kfuse::standin {

std::atomic<uint64_t> g_graph_launches{0};
std::atomic<uint64_t> g_graph_kernel_nodes{0};

namespace {

// Live handles. Its own mutex (taken last, never held while taking another) lets nodes and graphs be destroyed
// anywhere, also when a capture drops a node it had made.
struct Registry {
  std::mutex mu;
  std::unordered_set<const CUgraph_st*> graphs;
  std::unordered_set<const CUgraphNode_st*> nodes;
  std::unordered_set<const CUgraphExec_st*> execs;
};
Registry& registry() {
  static auto* r = new Registry();  // never destroyed, like the driver's State
  return *r;
}

void pointArgs(CUgraphNode_st& n) {
  n.arg_ptrs.clear();
  if (n.type != CU_GRAPH_NODE_TYPE_KERNEL || !n.func) return;
  for (const auto& p : n.func->kernel->info().params)
    n.arg_ptrs.push_back(p.offset + p.size <= n.args.size() ? n.args.data() + p.offset : nullptr);
}

// Copies the parameters of `from` into `to` (same type; child graphs are copied deeply).
void copyParams(const CUgraphNode_st& from, CUgraphNode_st& to) {
  to.type = from.type;
  to.func = from.func;
  to.shape = from.shape;
  to.args = from.args;
  to.copy = from.copy;
  to.set = from.set;
  to.host = from.host;
  to.event = from.event;
  if (from.child) {
    to.child = cloneGraph(*from.child);
    to.child->parent = &to;
  }
  pointArgs(to);
}

// Kahn's algorithm, ties broken by creation order. False when the graph has a cycle.
bool topologicalOrder(const CUgraph_st& g, std::vector<CUgraphNode_st*>* order) {
  std::unordered_map<const CUgraphNode_st*, size_t> pending;
  std::vector<CUgraphNode_st*> ready;
  for (const auto& n : g.nodes) {
    pending[n.get()] = n->deps.size();
    if (n->deps.empty()) ready.push_back(n.get());
  }
  order->clear();
  for (size_t i = 0; i < ready.size(); ++i) {
    CUgraphNode_st* n = ready[i];
    order->push_back(n);
    for (CUgraphNode_st* d : n->dependents)
      if (--pending[d] == 0) ready.push_back(d);
  }
  return order->size() == g.nodes.size();
}

// Orders `g` and its child graphs; false on a cycle (with the offending graph's first unordered node).
bool orderAll(CUgraph_st& g, CUgraphNode_st** bad) {
  if (!topologicalOrder(g, &g.order)) {
    std::unordered_set<const CUgraphNode_st*> done(g.order.begin(), g.order.end());
    for (auto& n : g.nodes)
      if (!done.count(n.get())) *bad = n.get();
    return false;
  }
  for (auto& n : g.nodes)
    if (n->child && !orderAll(*n->child, bad)) return false;
  return true;
}

void mapSources(CUgraph_st& copy, std::unordered_map<const CUgraphNode_st*, CUgraphNode_st*>& by_source) {
  for (auto& n : copy.nodes) {
    if (n->original) by_source[n->original] = n.get();
    if (n->child) mapSources(*n->child, by_source);
  }
}

CUresult runGraph(const CUgraph_st& g);

CUresult runNode(const CUgraphNode_st& n) {
  if (!n.enabled) return CUDA_SUCCESS;
  switch (n.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      CUresult r = runKernel(n.func, n.shape, n.args);
      if (r == CUDA_SUCCESS) ++g_graph_kernel_nodes;
      return r;
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY: return copy3d(n.copy);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      const CUDA_MEMSET_NODE_PARAMS& p = n.set;
      for (size_t y = 0; y < p.height; ++y) {
        kfuse::Status s = dev()->memory().fill(p.dst + y * p.pitch, p.value, p.elementSize, p.width);
        if (!s.ok()) return fromStatus(s);
      }
      return CUDA_SUCCESS;
    }
    case CU_GRAPH_NODE_TYPE_HOST: n.host.fn(n.host.userData); return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_GRAPH: return runGraph(*n.child);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      n.event->recorded = true;
      n.event->when = std::chrono::steady_clock::now();
      return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:  // everything before it has completed: nothing to wait for
    case CU_GRAPH_NODE_TYPE_EMPTY: return CUDA_SUCCESS;
    default: return CUDA_ERROR_NOT_SUPPORTED;
  }
}

CUresult runGraph(const CUgraph_st& g) {
  for (const CUgraphNode_st* n : g.order)
    if (CUresult r = runNode(*n); r != CUDA_SUCCESS) return r;
  return CUDA_SUCCESS;
}

// Nodes of `g` as a dependency list: each must belong to g, none twice.
CUresult checkDeps(const CUgraph_st* g, const CUgraphNode* deps, size_t n, std::vector<CUgraphNode_st*>* out) {
  if (n && !deps) return CUDA_ERROR_INVALID_VALUE;
  out->assign(deps, deps + n);
  for (size_t i = 0; i < n; ++i) {
    if (!liveNode(deps[i]) || deps[i]->graph != g) return CUDA_ERROR_INVALID_VALUE;
    if (std::count(out->begin(), out->end(), deps[i]) > 1) return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

bool defaultEdges(const CUgraphEdgeData* data, size_t n) {
  static const CUgraphEdgeData zero{};
  for (size_t i = 0; data && i < n; ++i)
    if (std::memcmp(&data[i], &zero, sizeof zero) != 0) return false;
  return true;
}

// Adds a node made by the caller to `graph` after `deps` (the body of every cuGraphAdd*Node).
CUresult addChecked(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, size_t n,
                    std::unique_ptr<CUgraphNode_st> node) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graphMutex());
  if (!liveGraph(graph)) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUgraphNode_st*> list;
  if (CUresult r = checkDeps(graph, deps, n, &list); r != CUDA_SUCCESS) return r;
  *out = addNode(graph, std::move(node), list);
  return CUDA_SUCCESS;
}

CUresult checkCopy(const CUDA_MEMCPY3D* c) {
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  if (c->srcMemoryType == CU_MEMORYTYPE_ARRAY || c->dstMemoryType == CU_MEMORYTYPE_ARRAY)
    return notSupported("memcpy nodes with CUDA arrays");
  return CUDA_SUCCESS;
}
CUresult checkSet(const CUDA_MEMSET_NODE_PARAMS* p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  if (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) return CUDA_ERROR_INVALID_VALUE;
  if (p->height > 1 && p->pitch < p->width * p->elementSize) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}
CUfunction kernelOf(const CUDA_KERNEL_NODE_PARAMS* p) {
  return p->func ? p->func : reinterpret_cast<CUfunction>(p->kern);  // a CUkernel is a CUfunction here
}
CUresult kernelNodeFrom(const CUDA_KERNEL_NODE_PARAMS* p, std::unique_ptr<CUgraphNode_st>* out) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  kfuse::core::LaunchShape shape{
      {p->gridDimX, p->gridDimY, p->gridDimZ}, {p->blockDimX, p->blockDimY, p->blockDimZ}, p->sharedMemBytes};
  return makeKernelNode(kernelOf(p), shape, p->kernelParams, p->extra, out);
}

// A node of `g` checked for its type (graph mutex held by the caller).
CUgraphNode_st* nodeOfType(CUgraphNode n, CUgraphNodeType type) {
  return liveNode(n) && n->type == type ? n : nullptr;
}

// The executable graph's copy of `source` (a node of the graph it was instantiated or updated from).
CUgraphNode_st* execNode(CUgraphExec exec, CUgraphNode source, CUgraphNodeType type) {
  if (!liveExec(exec)) return nullptr;
  auto it = exec->by_source.find(source);
  return it != exec->by_source.end() && it->second->type == type ? it->second : nullptr;
}

// Whether `from` can replace the parameters of `to` in an executable graph; the reason when not.
CUgraphExecUpdateResult updatable(const CUgraph_st& to, const CUgraph_st& from, CUgraphNode* err) {
  if (to.nodes.size() != from.nodes.size()) return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
  std::unordered_map<const CUgraphNode_st*, size_t> to_index, from_index;
  for (size_t i = 0; i < to.nodes.size(); ++i) to_index[to.nodes[i].get()] = i, from_index[from.nodes[i].get()] = i;
  for (size_t i = 0; i < from.nodes.size(); ++i) {
    const CUgraphNode_st& a = *to.nodes[i];
    const CUgraphNode_st& b = *from.nodes[i];
    *err = const_cast<CUgraphNode_st*>(&b);
    if (a.type != b.type) return CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
    if (a.deps.size() != b.deps.size()) return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    std::vector<size_t> da, db;
    for (auto* d : a.deps) da.push_back(to_index[d]);
    for (auto* d : b.deps) db.push_back(from_index[d]);
    std::sort(da.begin(), da.end());
    std::sort(db.begin(), db.end());
    if (da != db) return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    if (a.type == CU_GRAPH_NODE_TYPE_MEMSET && a.set.elementSize != b.set.elementSize)
      return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
    if (a.type == CU_GRAPH_NODE_TYPE_GRAPH) {
      CUgraphExecUpdateResult r = updatable(*a.child, *b.child, err);
      if (r != CU_GRAPH_EXEC_UPDATE_SUCCESS) return r;
    }
  }
  *err = nullptr;
  return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

// Copies the parameters of `from` (checked with updatable()) into `to`, keeping `to`'s nodes and order.
void applyUpdate(CUgraph_st& to, const CUgraph_st& from,
                 std::unordered_map<const CUgraphNode_st*, CUgraphNode_st*>& by_source) {
  for (size_t i = 0; i < to.nodes.size(); ++i) {
    CUgraphNode_st& a = *to.nodes[i];
    const CUgraphNode_st& b = *from.nodes[i];
    by_source[&b] = &a;
    if (a.type == CU_GRAPH_NODE_TYPE_GRAPH) {
      applyUpdate(*a.child, *b.child, by_source);
      continue;
    }
    copyParams(b, a);
  }
}

template <class T>
void fillList(T* out, size_t* count, const std::vector<T>& all) {
  if (!out) {
    *count = all.size();
    return;
  }
  size_t n = std::min(*count, all.size());
  std::copy(all.begin(), all.begin() + n, out);
  for (size_t i = n; i < *count; ++i) out[i] = T{};
  *count = n;
}

// Edge lists with optional edge data (always the default edge here).
CUresult edgeList(const std::vector<CUgraphNode>& nodes, CUgraphNode* out, CUgraphEdgeData* data, size_t* count) {
  if (!count || (data && !out)) return CUDA_ERROR_INVALID_VALUE;
  size_t n = *count;
  fillList(out, count, nodes);
  if (data)
    for (size_t i = 0; i < n; ++i) data[i] = CUgraphEdgeData{};
  return CUDA_SUCCESS;
}

CUresult instantiate(CUgraphExec* out, CUgraph graph, cuuint64_t flags, CUgraphNode* err_node,
                     CUgraphInstantiateResult* result) {
  if (result) *result = CUDA_GRAPH_INSTANTIATE_ERROR;
  if (err_node) *err_node = nullptr;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  constexpr cuuint64_t kKnown = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
                                CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
                                CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
  if (flags & ~kKnown) return CUDA_ERROR_INVALID_VALUE;
  if (flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) {
    if (result) *result = CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED;
    return notSupported("cuGraphInstantiate with CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH");
  }
  std::lock_guard lock(graphMutex());
  if (!liveGraph(graph)) return CUDA_ERROR_INVALID_VALUE;
  auto exec = std::make_unique<CUgraphExec_st>();
  exec->graph = cloneGraph(*graph);
  CUgraphNode_st* bad = nullptr;
  if (!orderAll(*exec->graph, &bad)) {
    if (err_node && bad) *err_node = const_cast<CUgraphNode_st*>(bad->original);
    if (result) *result = CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE;
    return CUDA_ERROR_INVALID_VALUE;
  }
  mapSources(*exec->graph, exec->by_source);
  exec->flags = flags;
  exec->id = st().next_id++;
  {
    std::lock_guard reg(registry().mu);
    registry().execs.insert(exec.get());
  }
  *out = exec.release();
  if (result) *result = CUDA_GRAPH_INSTANTIATE_SUCCESS;
  return CUDA_SUCCESS;
}

}  // namespace

std::mutex& graphMutex() {
  static auto* mu = new std::mutex();
  return *mu;
}
bool liveGraph(const CUgraph_st* g) {
  std::lock_guard lock(registry().mu);
  return g && registry().graphs.count(g);
}
bool liveNode(const CUgraphNode_st* n) {
  std::lock_guard lock(registry().mu);
  return n && registry().nodes.count(n);
}
bool liveExec(const CUgraphExec_st* e) {
  std::lock_guard lock(registry().mu);
  return e && registry().execs.count(e);
}

std::unique_ptr<CUgraph_st> newGraph() {
  return std::make_unique<CUgraph_st>();
}

CUgraphNode_st* addNode(CUgraph_st* g, std::unique_ptr<CUgraphNode_st> node, std::span<CUgraphNode_st* const> deps) {
  CUgraphNode_st* n = node.get();
  n->graph = g;
  if (n->child) n->child->parent = n;
  for (CUgraphNode_st* d : deps) {
    n->deps.push_back(d);
    d->dependents.push_back(n);
  }
  {
    std::lock_guard lock(registry().mu);
    registry().nodes.insert(n);
  }
  g->nodes.push_back(std::move(node));
  return n;
}

std::unique_ptr<CUgraph_st> cloneGraph(const CUgraph_st& g) {
  auto copy = newGraph();
  std::unordered_map<const CUgraphNode_st*, CUgraphNode_st*> map;
  for (const auto& n : g.nodes) {  // the nodes first: an edge may point to a node made later
    auto c = std::make_unique<CUgraphNode_st>();
    copyParams(*n, *c);
    c->original = n.get();
    map[n.get()] = addNode(copy.get(), std::move(c), {});
  }
  for (const auto& n : g.nodes) {
    CUgraphNode_st* c = map[n.get()];
    for (const CUgraphNode_st* d : n->deps) {
      c->deps.push_back(map[d]);
      map[d]->dependents.push_back(c);
    }
  }
  return copy;
}

CUresult makeKernelNode(CUfunction f, const kfuse::core::LaunchShape& shape, void** params, void** extra,
                        std::unique_ptr<CUgraphNode_st>* out) {
  if (!validFunction(f)) return CUDA_ERROR_INVALID_VALUE;
  if (shape.grid.count() == 0 || shape.block.count() == 0 || shape.block.count() > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = CU_GRAPH_NODE_TYPE_KERNEL;
  n->func = f;
  n->shape = shape;
  if (CUresult r = packArgs(f, params, extra, &n->args); r != CUDA_SUCCESS) return r;
  pointArgs(*n);
  *out = std::move(n);
  return CUDA_SUCCESS;
}
std::unique_ptr<CUgraphNode_st> makeCopyNode(const CUDA_MEMCPY3D& copy) {
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = CU_GRAPH_NODE_TYPE_MEMCPY;
  n->copy = copy;
  return n;
}
std::unique_ptr<CUgraphNode_st> makeCopyNode(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  CUDA_MEMCPY3D c{};
  c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  c.srcDevice = src;
  c.dstDevice = dst;
  c.WidthInBytes = bytes;
  c.Height = c.Depth = 1;
  return makeCopyNode(c);
}
std::unique_ptr<CUgraphNode_st> makeSetNode(CUdeviceptr dst, size_t pitch, unsigned value, unsigned element_size,
                                            size_t width, size_t height) {
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = CU_GRAPH_NODE_TYPE_MEMSET;
  n->set = CUDA_MEMSET_NODE_PARAMS{dst, pitch, value, element_size, width, height};
  return n;
}
std::unique_ptr<CUgraphNode_st> makeHostNode(CUhostFn fn, void* user) {
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = CU_GRAPH_NODE_TYPE_HOST;
  n->host = CUDA_HOST_NODE_PARAMS{fn, user};
  return n;
}
std::unique_ptr<CUgraphNode_st> makeEventNode(CUgraphNodeType type, CUevent e) {
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = type;
  n->event = e;
  return n;
}
std::unique_ptr<CUgraphNode_st> makeGraphLaunchNode(CUgraphExec_st* exec) {
  auto n = std::make_unique<CUgraphNode_st>();
  n->type = CU_GRAPH_NODE_TYPE_GRAPH;
  std::lock_guard lock(graphMutex());
  n->child = cloneGraph(*exec->graph);
  return n;
}

}  // namespace kfuse::standin

CUgraphNode_st::~CUgraphNode_st() {
  std::lock_guard lock(kfuse::standin::registry().mu);
  kfuse::standin::registry().nodes.erase(this);
}
CUgraph_st::CUgraph_st() {
  id = kfuse::standin::st().next_id++;
  std::lock_guard lock(kfuse::standin::registry().mu);
  kfuse::standin::registry().graphs.insert(this);
}
CUgraph_st::~CUgraph_st() {
  nodes.clear();  // the nodes first: they unregister themselves
  std::lock_guard lock(kfuse::standin::registry().mu);
  kfuse::standin::registry().graphs.erase(this);
}

using namespace kfuse::standin;  // NOLINT(google-build-using-namespace): the entry points below use most of it

namespace {

// Entry points of older ABI versions, handed out by cuGetProcAddress for the versions that ask for them.
CUresult CUDAAPI graphGetEdgesV1(CUgraph g, CUgraphNode* from, CUgraphNode* to, size_t* n) {
  return cuGraphGetEdges_v2(g, from, to, nullptr, n);
}
CUresult CUDAAPI nodeGetDependenciesV1(CUgraphNode node, CUgraphNode* deps, size_t* n) {
  return cuGraphNodeGetDependencies_v2(node, deps, nullptr, n);
}
CUresult CUDAAPI nodeGetDependentNodesV1(CUgraphNode node, CUgraphNode* deps, size_t* n) {
  return cuGraphNodeGetDependentNodes_v2(node, deps, nullptr, n);
}
CUresult CUDAAPI graphAddDependenciesV1(CUgraph g, const CUgraphNode* from, const CUgraphNode* to, size_t n) {
  return cuGraphAddDependencies_v2(g, from, to, nullptr, n);
}
CUresult CUDAAPI graphRemoveDependenciesV1(CUgraph g, const CUgraphNode* from, const CUgraphNode* to, size_t n) {
  return cuGraphRemoveDependencies_v2(g, from, to, nullptr, n);
}
CUresult CUDAAPI graphInstantiateV1(CUgraphExec* exec, CUgraph g, CUgraphNode* err, char* log, size_t log_size) {
  if (log && log_size) log[0] = '\0';
  return instantiate(exec, g, 0, err, nullptr);
}

}  // namespace

namespace kfuse::standin {

void* legacyGraphFunction(const std::string& name, int version) {
  if (version >= 12030) return nullptr;  // the current ABI
  if (name == "cuGraphGetEdges") return reinterpret_cast<void*>(&graphGetEdgesV1);
  if (name == "cuGraphNodeGetDependencies") return reinterpret_cast<void*>(&nodeGetDependenciesV1);
  if (name == "cuGraphNodeGetDependentNodes") return reinterpret_cast<void*>(&nodeGetDependentNodesV1);
  if (name == "cuGraphAddDependencies") return reinterpret_cast<void*>(&graphAddDependenciesV1);
  if (name == "cuGraphRemoveDependencies") return reinterpret_cast<void*>(&graphRemoveDependenciesV1);
  if (version >= 12000) return nullptr;
  if (name == "cuGraphInstantiate") return reinterpret_cast<void*>(&graphInstantiateV1);
  return nullptr;
}

}  // namespace kfuse::standin

namespace {

// A node's parameters of one kind, read or replaced under the graph lock (callers check what they store first).
template <typename T>
CUresult nodeField(CUgraphNode node, CUgraphNodeType type, T CUgraphNode_st::*field, T* out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graphMutex());
  CUgraphNode_st* n = nodeOfType(node, type);
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  *out = n->*field;
  return CUDA_SUCCESS;
}
template <typename T>
CUresult setNodeField(CUgraphNode node, CUgraphNodeType type, T CUgraphNode_st::*field, const T& value) {
  std::lock_guard lock(graphMutex());
  CUgraphNode_st* n = nodeOfType(node, type);
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  n->*field = value;
  return CUDA_SUCCESS;
}
// Replaces a node's parameters in an executable graph, under the graph lock and after any launch of it running in
// another thread (callers check what they store first).
template <typename T>
CUresult setExecNodeField(CUgraphExec exec, CUgraphNode node, CUgraphNodeType type, T CUgraphNode_st::*field,
                          const T& value) {
  std::lock_guard lock(graphMutex());
  CUgraphNode_st* n = execNode(exec, node, type);
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard run(exec->run);
  n->*field = value;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

// ---- graphs and nodes ----------------------------------------------------------------------------------------
CUresult CUDAAPI cuGraphCreate(CUgraph* graph, unsigned int flags) {
  KF_REQUIRE_INIT();
  if (!graph || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graphMutex());
  *graph = newGraph().release();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphDestroy(CUgraph graph) {
  std::lock_guard lock(graphMutex());
  if (!liveGraph(graph) || graph->parent) return CUDA_ERROR_INVALID_VALUE;
  delete graph;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphClone(CUgraph* clone, CUgraph original) {
  if (!clone) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graphMutex());
  if (!liveGraph(original)) return CUDA_ERROR_INVALID_VALUE;
  *clone = cloneGraph(*original).release();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphNodeFindInClone(CUgraphNode* node, CUgraphNode original, CUgraph clone) {
  if (!node) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graphMutex());
  if (!liveGraph(clone) || !liveNode(original)) return CUDA_ERROR_INVALID_VALUE;
  for (auto& n : clone->nodes)
    if (n->original == original) {
      *node = n.get();
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, size_t n,
                                      const CUDA_KERNEL_NODE_PARAMS* params) {
  KF_REQUIRE_CTX();
  std::unique_ptr<CUgraphNode_st> made;
  if (CUresult r = kernelNodeFrom(params, &made); r != CUDA_SUCCESS) return r;
  return addChecked(node, graph, deps, n, std::move(made));
}
CUresult CUDAAPI cuGraphAddMemcpyNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, size_t n,
                                      const CUDA_MEMCPY3D* copy, CUcontext ctx) {
  (void)ctx;
  KF_REQUIRE_CTX();
  if (CUresult r = checkCopy(copy); r != CUDA_SUCCESS) return r;
  return addChecked(node, graph, deps, n, makeCopyNode(*copy));
}
CUresult CUDAAPI cuGraphAddMemsetNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, size_t n,
                                      const CUDA_MEMSET_NODE_PARAMS* p, CUcontext ctx) {
  (void)ctx;
  KF_REQUIRE_CTX();
  if (CUresult r = checkSet(p); r != CUDA_SUCCESS) return r;
  return addChecked(node, graph, deps, n, makeSetNode(p->dst, p->pitch, p->value, p->elementSize, p->width, p->height));
}
CUresult CUDAAPI cuGraphAddHostNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, size_t n,
                                    const CUDA_HOST_NODE_PARAMS* p) {
  if (!p || !p->fn) return CUDA_ERROR_INVALID_VALUE;
  return addChecked(node, graph, deps, n, makeHostNode(p->fn, p->userData));
}
CUresult CUDAAPI cuGraphAddEmptyNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, size_t n) {
  return addChecked(node, graph, deps, n, std::make_unique<CUgraphNode_st>());
}
CUresult CUDAAPI cuGraphAddEventRecordNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, size_t n,
                                           CUevent e) {
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  return addChecked(node, graph, deps, n, makeEventNode(CU_GRAPH_NODE_TYPE_EVENT_RECORD, e));
}
CUresult CUDAAPI cuGraphAddEventWaitNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, size_t n,
                                         CUevent e) {
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  return addChecked(node, graph, deps, n, makeEventNode(CU_GRAPH_NODE_TYPE_WAIT_EVENT, e));
}
CUresult CUDAAPI cuGraphAddChildGraphNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, size_t n,
                                          CUgraph child) {
  auto made = std::make_unique<CUgraphNode_st>();
  made->type = CU_GRAPH_NODE_TYPE_GRAPH;
  {
    std::lock_guard lock(graphMutex());
    if (!liveGraph(child) || child == graph) return CUDA_ERROR_INVALID_VALUE;
    made->child = cloneGraph(*child);
  }
  return addChecked(node, graph, deps, n, std::move(made));
}
CUresult CUDAAPI cuGraphChildGraphNodeGetGraph(CUgraphNode node, CUgraph* graph) {
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graphMutex());
  CUgraphNode_st* n = nodeOfType(node, CU_GRAPH_NODE_TYPE_GRAPH);
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  *graph = n->child.get();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphDestroyNode(CUgraphNode node) {
  std::lock_guard lock(graphMutex());
  if (!liveNode(node)) return CUDA_ERROR_INVALID_VALUE;
  for (CUgraphNode_st* d : node->deps) std::erase(d->dependents, node);
  for (CUgraphNode_st* d : node->dependents) std::erase(d->deps, node);
  auto& nodes = node->graph->nodes;
  nodes.erase(std::find_if(nodes.begin(), nodes.end(), [&](auto& p) { return p.get() == node; }));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType* type) {
  if (!type) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graphMutex());
  if (!liveNode(node)) return CUDA_ERROR_INVALID_VALUE;
  *type = node->type;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphGetNodes(CUgraph graph, CUgraphNode* nodes, size_t* count) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graphMutex());
  if (!liveGraph(graph)) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUgraphNode> all;
  for (auto& n : graph->nodes) all.push_back(n.get());
  fillList(nodes, count, all);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphGetRootNodes(CUgraph graph, CUgraphNode* nodes, size_t* count) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graphMutex());
  if (!liveGraph(graph)) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUgraphNode> roots;
  for (auto& n : graph->nodes)
    if (n->deps.empty()) roots.push_back(n.get());
  fillList(nodes, count, roots);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphGetEdges(CUgraph graph, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* data,
                                 size_t* count) {
  if (!count || (from == nullptr) != (to == nullptr) || (data && !from)) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graphMutex());
  if (!liveGraph(graph)) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUgraphNode> froms, tos;
  for (auto& n : graph->nodes)
    for (CUgraphNode_st* d : n->deps) froms.push_back(d), tos.push_back(n.get());
  size_t n = *count;
  fillList(from, count, froms);
  if (to) fillList(to, &n, tos);
  for (size_t i = 0; data && i < n; ++i) data[i] = CUgraphEdgeData{};
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphNodeGetDependencies(CUgraphNode node, CUgraphNode* deps, CUgraphEdgeData* data, size_t* count) {
  std::lock_guard lock(graphMutex());
  if (!liveNode(node)) return CUDA_ERROR_INVALID_VALUE;
  return edgeList(node->deps, deps, data, count);
}
CUresult CUDAAPI cuGraphNodeGetDependentNodes(CUgraphNode node, CUgraphNode* deps, CUgraphEdgeData* data,
                                              size_t* count) {
  std::lock_guard lock(graphMutex());
  if (!liveNode(node)) return CUDA_ERROR_INVALID_VALUE;
  return edgeList(node->dependents, deps, data, count);
}
CUresult CUDAAPI cuGraphAddDependencies(CUgraph graph, const CUgraphNode* from, const CUgraphNode* to,
                                        const CUgraphEdgeData* data, size_t n) {
  if (n && (!from || !to)) return CUDA_ERROR_INVALID_VALUE;
  if (!defaultEdges(data, n)) return notSupported("graph edges with edge data (programmatic dependencies)");
  std::lock_guard lock(graphMutex());
  if (!liveGraph(graph)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < n; ++i) {
    if (!liveNode(from[i]) || !liveNode(to[i]) || from[i]->graph != graph || to[i]->graph != graph || from[i] == to[i])
      return CUDA_ERROR_INVALID_VALUE;
    if (std::count(to[i]->deps.begin(), to[i]->deps.end(), from[i])) return CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t i = 0; i < n; ++i) {
    to[i]->deps.push_back(from[i]);
    from[i]->dependents.push_back(to[i]);
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphRemoveDependencies(CUgraph graph, const CUgraphNode* from, const CUgraphNode* to,
                                           const CUgraphEdgeData* data, size_t n) {
  if (n && (!from || !to)) return CUDA_ERROR_INVALID_VALUE;
  if (!defaultEdges(data, n)) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graphMutex());
  if (!liveGraph(graph)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < n; ++i)
    if (!liveNode(from[i]) || !liveNode(to[i]) || from[i]->graph != graph || to[i]->graph != graph ||
        !std::count(to[i]->deps.begin(), to[i]->deps.end(), from[i]))
      return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < n; ++i) {
    std::erase(to[i]->deps, from[i]);
    std::erase(from[i]->dependents, to[i]);
  }
  return CUDA_SUCCESS;
}

// ---- node parameters -----------------------------------------------------------------------------------------
CUresult CUDAAPI cuGraphKernelNodeGetParams(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS* p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graphMutex());
  CUgraphNode_st* n = nodeOfType(node, CU_GRAPH_NODE_TYPE_KERNEL);
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  *p = CUDA_KERNEL_NODE_PARAMS{};
  p->func = n->func;
  p->gridDimX = n->shape.grid.x, p->gridDimY = n->shape.grid.y, p->gridDimZ = n->shape.grid.z;
  p->blockDimX = n->shape.block.x, p->blockDimY = n->shape.block.y, p->blockDimZ = n->shape.block.z;
  p->sharedMemBytes = n->shape.dynamic_shared_bytes;
  p->kernelParams = n->arg_ptrs.data();
  p->ctx = current();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphKernelNodeSetParams(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p) {
  std::unique_ptr<CUgraphNode_st> made;
  if (CUresult r = kernelNodeFrom(p, &made); r != CUDA_SUCCESS) return r;
  std::lock_guard lock(graphMutex());
  CUgraphNode_st* n = nodeOfType(node, CU_GRAPH_NODE_TYPE_KERNEL);
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  copyParams(*made, *n);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphMemcpyNodeGetParams(CUgraphNode node, CUDA_MEMCPY3D* copy) {
  return nodeField(node, CU_GRAPH_NODE_TYPE_MEMCPY, &CUgraphNode_st::copy, copy);
}
CUresult CUDAAPI cuGraphMemcpyNodeSetParams(CUgraphNode node, const CUDA_MEMCPY3D* copy) {
  if (CUresult r = checkCopy(copy); r != CUDA_SUCCESS) return r;
  return setNodeField(node, CU_GRAPH_NODE_TYPE_MEMCPY, &CUgraphNode_st::copy, *copy);
}
CUresult CUDAAPI cuGraphMemsetNodeGetParams(CUgraphNode node, CUDA_MEMSET_NODE_PARAMS* p) {
  return nodeField(node, CU_GRAPH_NODE_TYPE_MEMSET, &CUgraphNode_st::set, p);
}
CUresult CUDAAPI cuGraphMemsetNodeSetParams(CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS* p) {
  if (CUresult r = checkSet(p); r != CUDA_SUCCESS) return r;
  return setNodeField(node, CU_GRAPH_NODE_TYPE_MEMSET, &CUgraphNode_st::set, *p);
}
CUresult CUDAAPI cuGraphHostNodeGetParams(CUgraphNode node, CUDA_HOST_NODE_PARAMS* p) {
  return nodeField(node, CU_GRAPH_NODE_TYPE_HOST, &CUgraphNode_st::host, p);
}
CUresult CUDAAPI cuGraphHostNodeSetParams(CUgraphNode node, const CUDA_HOST_NODE_PARAMS* p) {
  if (!p || !p->fn) return CUDA_ERROR_INVALID_VALUE;
  return setNodeField(node, CU_GRAPH_NODE_TYPE_HOST, &CUgraphNode_st::host, *p);
}
static CUresult eventOf(CUgraphNode node, CUgraphNodeType type, CUevent* e) {
  return nodeField(node, type, &CUgraphNode_st::event, e);
}
static CUresult setEventOf(CUgraphNode node, CUgraphNodeType type, CUevent e) {
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  return setNodeField(node, type, &CUgraphNode_st::event, e);
}
CUresult CUDAAPI cuGraphEventRecordNodeGetEvent(CUgraphNode node, CUevent* e) {
  return eventOf(node, CU_GRAPH_NODE_TYPE_EVENT_RECORD, e);
}
CUresult CUDAAPI cuGraphEventRecordNodeSetEvent(CUgraphNode node, CUevent e) {
  return setEventOf(node, CU_GRAPH_NODE_TYPE_EVENT_RECORD, e);
}
CUresult CUDAAPI cuGraphEventWaitNodeGetEvent(CUgraphNode node, CUevent* e) {
  return eventOf(node, CU_GRAPH_NODE_TYPE_WAIT_EVENT, e);
}
CUresult CUDAAPI cuGraphEventWaitNodeSetEvent(CUgraphNode node, CUevent e) {
  return setEventOf(node, CU_GRAPH_NODE_TYPE_WAIT_EVENT, e);
}

// ---- executable graphs ---------------------------------------------------------------------------------------
CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
  KF_REQUIRE_CTX();
  return instantiate(exec, graph, flags, nullptr, nullptr);
}
CUresult CUDAAPI cuGraphInstantiateWithParams(CUgraphExec* exec, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS* p) {
  KF_REQUIRE_CTX();
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  return instantiate(exec, graph, p->flags, &p->hErrNode_out, &p->result_out);
}
CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec* exec, CUgraph graph, CUgraphNode* err, char* log, size_t size) {
  KF_REQUIRE_CTX();
  return graphInstantiateV1(exec, graph, err, log, size);
}
CUresult CUDAAPI cuGraphExecGetFlags(CUgraphExec exec, cuuint64_t* flags) {
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graphMutex());
  if (!liveExec(exec)) return CUDA_ERROR_INVALID_VALUE;
  *flags = exec->flags;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec exec) {
  std::unique_ptr<CUgraphExec_st> owned;
  {
    std::lock_guard lock(graphMutex());
    std::lock_guard reg(registry().mu);
    if (!registry().execs.erase(exec)) return CUDA_ERROR_INVALID_VALUE;
    owned.reset(exec);
  }
  std::lock_guard wait(owned->run);  // a launch in another thread finishes first
  std::lock_guard lock(graphMutex());
  owned.reset();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphUpload(CUgraphExec exec, CUstream s) {
  (void)s;
  KF_REQUIRE_CTX();
  std::lock_guard lock(graphMutex());
  return liveExec(exec) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult CUDAAPI cuGraphLaunch(CUgraphExec exec, CUstream s) {
  KF_REQUIRE_CTX();
  {
    std::lock_guard lock(graphMutex());
    if (!liveExec(exec)) return CUDA_ERROR_INVALID_VALUE;
  }
  if (capturesActive()) {  // launched into a capture: a child-graph node
    bool taken = false;
    CUresult r = captureNode(s, makeGraphLaunchNode(exec), &taken);
    if (taken || r != CUDA_SUCCESS) return r;
  }
  if (CUresult r = sticky(); r != CUDA_SUCCESS) return r;
  std::lock_guard run(exec->run);
  ++g_graph_launches;
  uint64_t before = g_graph_kernel_nodes.load();
  CUresult r = runGraph(*exec->graph);
  if (tracing())
    std::fprintf(stderr, "kfuse stand-in trace: cuGraphLaunch graph exec %llu: %zu nodes, %llu kernel nodes run\n",
                 exec->id, exec->graph->order.size(), (unsigned long long)(g_graph_kernel_nodes.load() - before));
  return r;
}

CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p) {
  std::unique_ptr<CUgraphNode_st> made;
  if (CUresult r = kernelNodeFrom(p, &made); r != CUDA_SUCCESS) return r;
  std::lock_guard lock(graphMutex());
  CUgraphNode_st* n = execNode(exec, node, CU_GRAPH_NODE_TYPE_KERNEL);
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard run(exec->run);
  copyParams(*made, *n);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphExecMemcpyNodeSetParams(CUgraphExec exec, CUgraphNode node, const CUDA_MEMCPY3D* copy,
                                                CUcontext ctx) {
  (void)ctx;
  if (CUresult r = checkCopy(copy); r != CUDA_SUCCESS) return r;
  return setExecNodeField(exec, node, CU_GRAPH_NODE_TYPE_MEMCPY, &CUgraphNode_st::copy, *copy);
}
CUresult CUDAAPI cuGraphExecMemsetNodeSetParams(CUgraphExec exec, CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS* p,
                                                CUcontext ctx) {
  (void)ctx;
  if (CUresult r = checkSet(p); r != CUDA_SUCCESS) return r;
  std::lock_guard lock(graphMutex());
  CUgraphNode_st* n = execNode(exec, node, CU_GRAPH_NODE_TYPE_MEMSET);
  if (!n || n->set.elementSize != p->elementSize) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard run(exec->run);
  n->set = *p;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphExecHostNodeSetParams(CUgraphExec exec, CUgraphNode node, const CUDA_HOST_NODE_PARAMS* p) {
  if (!p || !p->fn) return CUDA_ERROR_INVALID_VALUE;
  return setExecNodeField(exec, node, CU_GRAPH_NODE_TYPE_HOST, &CUgraphNode_st::host, *p);
}
static CUresult setExecEvent(CUgraphExec exec, CUgraphNode node, CUgraphNodeType type, CUevent e) {
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  return setExecNodeField(exec, node, type, &CUgraphNode_st::event, e);
}
CUresult CUDAAPI cuGraphExecEventRecordNodeSetEvent(CUgraphExec exec, CUgraphNode node, CUevent e) {
  return setExecEvent(exec, node, CU_GRAPH_NODE_TYPE_EVENT_RECORD, e);
}
CUresult CUDAAPI cuGraphExecEventWaitNodeSetEvent(CUgraphExec exec, CUgraphNode node, CUevent e) {
  return setExecEvent(exec, node, CU_GRAPH_NODE_TYPE_WAIT_EVENT, e);
}

// Only kernel, memset and memcpy nodes can be disabled (cuda.h); a disabled node runs as an empty node. An exec
// update keeps the state.
static CUgraphNode_st* enableableNode(CUgraphExec exec, CUgraphNode node) {
  for (CUgraphNodeType type : {CU_GRAPH_NODE_TYPE_KERNEL, CU_GRAPH_NODE_TYPE_MEMSET, CU_GRAPH_NODE_TYPE_MEMCPY})
    if (CUgraphNode_st* n = execNode(exec, node, type)) return n;
  return nullptr;
}
CUresult CUDAAPI cuGraphNodeSetEnabled(CUgraphExec exec, CUgraphNode node, unsigned int enabled) {
  std::lock_guard lock(graphMutex());
  CUgraphNode_st* n = enableableNode(exec, node);
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard run(exec->run);
  n->enabled = enabled != 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphNodeGetEnabled(CUgraphExec exec, CUgraphNode node, unsigned int* enabled) {
  if (!enabled) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graphMutex());
  const CUgraphNode_st* n = enableableNode(exec, node);
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  *enabled = n->enabled ? 1 : 0;
  return CUDA_SUCCESS;
}

// Nodes are matched by creation order; the topology (edges by position) and node types must be the same.
CUresult CUDAAPI cuGraphExecUpdate(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo* info) {
  if (!info) return CUDA_ERROR_INVALID_VALUE;
  *info = CUgraphExecUpdateResultInfo{};
  std::lock_guard lock(graphMutex());
  if (!liveExec(exec) || !liveGraph(graph)) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNode err = nullptr;
  info->result = updatable(*exec->graph, *graph, &err);
  if (info->result != CU_GRAPH_EXEC_UPDATE_SUCCESS) {
    info->errorNode = err;
    return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  }
  std::lock_guard run(exec->run);
  applyUpdate(*exec->graph, *graph, exec->by_source);
  return CUDA_SUCCESS;
}

}  // extern "C"
