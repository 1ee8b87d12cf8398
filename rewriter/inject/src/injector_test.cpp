// The injector against an in-process fake driver: "device" pointers are host pointers, and the fake runs three
// made-up kernels (and their fusions) on them in C++, so every decision can be checked by its effect.
//   twice(const float* x, float* y, int n):   y = 2x
//   plus1(const float* y, float* z, int n):   z = y + 1
//   other(float* p, int n):                   p = -p
//   fused_ok(x, y, z, n):   y = 2x, z = 2x + 1   (what the plan promises)
//   fused_bad(x, y, z, n):  y = 2x, z = 2x + 2   (a deliberately wrong fused kernel)
//   side_by_side(x, y, u, z, n):  y = 2x, z = u + 1   (twice and plus1 fused horizontally)
#include "kfuse/inject/injector.h"
#include "kfuse/core/trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kfuse::inject {
namespace {

using hooks::DriverTable;

struct Func {
  std::string name;
  CUmodule module;
};

struct Fake {
  std::mutex mu;
  std::vector<std::string> launches;  // kernel names, in the order the driver saw them
  std::vector<std::string> calls;     // other calls that reached the driver
  std::map<CUfunction, Func> functions;
  std::map<uint64_t, size_t> allocations;  // base -> bytes
  bool fail_module_load = false;
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  int fused_module_loads = 0;
  // Parameter queries the driver refused (an index past the last parameter): compute-sanitizer reports each as an
  // API error in the user's program.
  int refused_param_queries = 0;
  // A GPU's clock for the timing runs of --validate: every launch advances it by its kernel's cost (microseconds,
  // by name; 0 when not listed); an event records it.
  std::map<std::string, double> cost_us;
  double clock_us = 0;
  std::vector<double> events;
};
Fake* g = nullptr;

const CUmodule kAppModule = reinterpret_cast<CUmodule>(0x1000);
const CUmodule kOtherModule = reinterpret_cast<CUmodule>(0x1100);
const CUmodule kFusedModule = reinterpret_cast<CUmodule>(0x2000);
CUfunction fn(uintptr_t v) {
  return reinterpret_cast<CUfunction>(v);
}
const CUfunction kTwice = fn(0x1001), kPlus1 = fn(0x1002), kOther = fn(0x1003), kTwiceElsewhere = fn(0x1101);
const CUfunction kFusedOk = fn(0x2001), kFusedBad = fn(0x2002), kSideBySide = fn(0x2003);
const char* kAppImage = "// app module\n.version 9.0\n.target sm_90\n";
const char* kOtherImage = "// another build of the app module\n.version 9.0\n.target sm_90\n";

template <class T>
T arg(void** params, int i) {
  T v;
  std::memcpy(&v, params[i], sizeof v);
  return v;
}

void run(const std::string& name, void** p) {
  if (name == "twice") {
    auto x = arg<float*>(p, 0), y = arg<float*>(p, 1);
    for (int i = 0, n = arg<int>(p, 2); i < n; ++i) y[i] = 2 * x[i];
  } else if (name == "plus1") {
    auto y = arg<float*>(p, 0), z = arg<float*>(p, 1);
    for (int i = 0, n = arg<int>(p, 2); i < n; ++i) z[i] = y[i] + 1;
  } else if (name == "other") {
    auto q = arg<float*>(p, 0);
    for (int i = 0, n = arg<int>(p, 1); i < n; ++i) q[i] = -q[i];
  } else if (name == "side_by_side") {
    auto x = arg<float*>(p, 0), y = arg<float*>(p, 1), u = arg<float*>(p, 2), z = arg<float*>(p, 3);
    for (int i = 0, n = arg<int>(p, 4); i < n; ++i) {
      y[i] = 2 * x[i];
      z[i] = u[i] + 1;
    }
  } else if (name == "fused_ok" || name == "fused_bad") {
    auto x = arg<float*>(p, 0), y = arg<float*>(p, 1), z = arg<float*>(p, 2);
    for (int i = 0, n = arg<int>(p, 3); i < n; ++i) {
      y[i] = 2 * x[i];
      z[i] = y[i] + (name == "fused_ok" ? 1.f : 2.f);
    }
  }
}

CUresult CUDAAPI fLaunchKernel(CUfunction f, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                               CUstream, void** params, void**) {
  std::string name;
  {
    std::lock_guard lock(g->mu);
    name = g->functions.at(f).name;
    g->launches.push_back(name);
    if (auto c = g->cost_us.find(name); c != g->cost_us.end()) g->clock_us += c->second;
  }
  run(name, params);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fEventCreate(CUevent* e, unsigned) {
  std::lock_guard lock(g->mu);
  g->events.push_back(0);
  *e = reinterpret_cast<CUevent>(g->events.size());
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fEventRecord(CUevent e, CUstream) {
  std::lock_guard lock(g->mu);
  g->events.at(reinterpret_cast<size_t>(e) - 1) = g->clock_us;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fEventElapsedTime(float* ms, CUevent a, CUevent b) {
  std::lock_guard lock(g->mu);
  *ms = static_cast<float>(
      (g->events.at(reinterpret_cast<size_t>(b) - 1) - g->events.at(reinterpret_cast<size_t>(a) - 1)) / 1e3);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fEventDestroy(CUevent) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fLaunchKernelEx(const CUlaunchConfig* c, CUfunction f, void** params, void** extra) {
  return fLaunchKernel(f, c->gridDimX, 1, 1, c->blockDimX, 1, 1, 0, c->hStream, params, extra);
}
CUresult CUDAAPI fFuncGetModule(CUmodule* m, CUfunction f) {
  std::lock_guard lock(g->mu);
  auto it = g->functions.find(f);
  if (it == g->functions.end()) return CUDA_ERROR_INVALID_HANDLE;
  *m = it->second.module;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fFuncGetName(const char** name, CUfunction f) {
  std::lock_guard lock(g->mu);
  *name = g->functions.at(f).name.c_str();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fFuncGetParamInfo(CUfunction f, size_t i, size_t* offset, size_t* size) {
  const std::string& name = g->functions.at(f).name;
  const size_t n = name == "other" ? 2 : 3;
  if (i >= n) {
    ++g->refused_param_queries;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *offset = i * 8;
  *size = i + 1 == n ? 4 : 8;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fModuleLoadData(CUmodule* m, const void* image) {
  std::lock_guard lock(g->mu);
  const std::string text(static_cast<const char*>(image));
  g->calls.push_back("cuModuleLoadData");
  if (text == kAppImage) {
    *m = kAppModule;
  } else if (text == kOtherImage) {
    *m = kOtherModule;
  } else {
    if (g->fail_module_load) return CUDA_ERROR_INVALID_PTX;
    ++g->fused_module_loads;
    *m = kFusedModule;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
  if (m != kFusedModule) return CUDA_ERROR_NOT_FOUND;
  const std::string want = name;
  *f = want == "fused_ok" ? kFusedOk : want == "side_by_side" ? kSideBySide : kFusedBad;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fCtxGetCurrent(CUcontext* c) {
  *c = reinterpret_cast<CUcontext>(0x77);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fCtxGetDevice(CUdevice* d) {
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice) {
  *v = a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fMemGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
  std::lock_guard lock(g->mu);
  auto it = g->allocations.upper_bound(p);
  if (it == g->allocations.begin()) return CUDA_ERROR_NOT_FOUND;
  --it;
  if (p >= it->first + it->second) return CUDA_ERROR_NOT_FOUND;
  *base = it->first;
  *size = it->second;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fStreamIsCapturing(CUstream, CUstreamCaptureStatus* s) {
  *s = g->capture;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fNote(const char* what) {
  std::lock_guard lock(g->mu);
  g->calls.push_back(what);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fStreamSynchronize(CUstream) {
  return fNote("cuStreamSynchronize");
}
CUresult CUDAAPI fCtxSynchronize() {
  return fNote("cuCtxSynchronize");
}
// As a GPU driver does, a copy must lie inside one allocation: a range running from one allocation into the next,
// even where the two are adjacent in the address space, is CUDA_ERROR_INVALID_VALUE.
bool insideOneAllocation(CUdeviceptr p, size_t n) {
  std::lock_guard lock(g->mu);
  auto it = g->allocations.upper_bound(p);
  if (it == g->allocations.begin()) return false;
  --it;
  return p >= it->first && p + n <= it->first + it->second;
}
CUresult CUDAAPI fMemcpyHtoD(CUdeviceptr dst, const void* src, size_t n) {
  if (!insideOneAllocation(dst, n)) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(reinterpret_cast<void*>(dst), src, n);
  return fNote("cuMemcpyHtoD");
}
CUresult CUDAAPI fMemcpyDtoH(void* dst, CUdeviceptr src, size_t n) {
  if (!insideOneAllocation(src, n)) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(dst, reinterpret_cast<void*>(src), n);
  return fNote("cuMemcpyDtoH");
}
CUresult CUDAAPI fMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  if (!insideOneAllocation(dst, n) || !insideOneAllocation(src, n)) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), n);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fMemAlloc(CUdeviceptr* p, size_t n) {
  *p = reinterpret_cast<CUdeviceptr>(new uint8_t[n]);
  std::lock_guard lock(g->mu);
  g->allocations[*p] = n;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fMemFree(CUdeviceptr p) {
  {
    std::lock_guard lock(g->mu);
    g->allocations.erase(p);
  }
  delete[] reinterpret_cast<uint8_t*>(p);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fBeginCapture(CUstream, CUstreamCaptureMode) {
  g->capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return fNote("cuStreamBeginCapture");
}
CUresult CUDAAPI fEndCapture(CUstream, CUgraph*) {
  g->capture = CU_STREAM_CAPTURE_STATUS_NONE;
  return fNote("cuStreamEndCapture");
}

// ---- a fake graph API: nodes hold their kernel's arguments; an executable graph is a copy run in dependency order

struct FakeGraph;
struct FakeNode {
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  CUfunction f = nullptr;
  unsigned grid = 1, block = 1;
  uint64_t values[5] = {};
  void* ptrs[5] = {};
  std::unique_ptr<FakeGraph> child;
  FakeGraph* owner = nullptr;
  const FakeNode* original = nullptr;  // in a copy: the node it was copied from
  bool enabled = true;
  bool device_updatable = false;
};
struct FakeGraph {
  std::vector<std::unique_ptr<FakeNode>> nodes;
  std::vector<std::pair<FakeNode*, FakeNode*>> edges;
};
struct FakeGraphs {
  std::vector<std::unique_ptr<FakeGraph>> graphs, execs;  // graphs: created or cloned; execs: instantiated copies
  std::vector<std::vector<std::string>> instantiated;     // kernel node names (children's included) per instantiate
  int clones_alive = 0;
  std::vector<std::pair<CUgraphExec, CUgraphNode>> set_calls;  // per-node exec setters, as the driver saw them
  CUresult refuse_fused = CUDA_SUCCESS;     // what instantiating a graph with a fused kernel node returns
  CUresult refuse_original = CUDA_SUCCESS;  // ... and one without
  std::recursive_mutex mu;                  // every fake graph function holds it (tests with threads)
};
FakeGraphs* gg = nullptr;

size_t paramCount(CUfunction f) {
  const Func& fn = g->functions.at(f);
  return fn.name == "other" ? 2 : fn.name == "side_by_side" ? 5 : fn.module == kFusedModule ? 4 : 3;
}
void setKernel(FakeNode& n, const CUDA_KERNEL_NODE_PARAMS& p) {
  n.type = CU_GRAPH_NODE_TYPE_KERNEL;
  n.f = p.func;
  n.grid = p.gridDimX;
  n.block = p.blockDimX;
  const size_t count = paramCount(p.func);
  for (size_t i = 0; i < count; ++i) {
    n.values[i] = 0;
    std::memcpy(&n.values[i], p.kernelParams[i], i + 1 == count ? 4 : 8);
    n.ptrs[i] = &n.values[i];
  }
}
std::unique_ptr<FakeGraph> copyGraph(const FakeGraph& from) {
  auto to = std::make_unique<FakeGraph>();
  std::map<const FakeNode*, FakeNode*> map;
  for (const auto& n : from.nodes) {
    auto c = std::make_unique<FakeNode>();
    c->type = n->type, c->f = n->f, c->grid = n->grid, c->block = n->block;
    for (int i = 0; i < 5; ++i) c->values[i] = n->values[i], c->ptrs[i] = &c->values[i];
    if (n->child) c->child = copyGraph(*n->child);
    c->owner = to.get();
    c->original = n.get();
    c->enabled = n->enabled;
    c->device_updatable = n->device_updatable;
    map[n.get()] = c.get();
    to->nodes.push_back(std::move(c));
  }
  for (auto [a, b] : from.edges) to->edges.emplace_back(map.at(a), map.at(b));
  return to;
}
void kernelNames(const FakeGraph& graph, std::vector<std::string>& out) {
  for (const auto& n : graph.nodes) {
    if (n->type == CU_GRAPH_NODE_TYPE_KERNEL) out.push_back(g->functions.at(n->f).name);
    if (n->child) kernelNames(*n->child, out);
  }
}
void runGraph(const FakeGraph& graph) {
  std::map<const FakeNode*, int> waiting;
  for (auto [a, b] : graph.edges) ++waiting[b];
  std::vector<const FakeNode*> ready;
  for (const auto& n : graph.nodes)
    if (!waiting[n.get()]) ready.push_back(n.get());
  while (!ready.empty()) {
    const FakeNode* n = ready.front();
    ready.erase(ready.begin());
    if (n->type == CU_GRAPH_NODE_TYPE_KERNEL && n->enabled) {
      fLaunchKernel(n->f, n->grid, 1, 1, n->block, 1, 1, 0, nullptr, const_cast<void**>(n->ptrs), nullptr);
    }
    if (n->child) runGraph(*n->child);
    for (auto [a, b] : graph.edges)
      if (a == n && --waiting[b] == 0) ready.push_back(b);
  }
}
CUresult CUDAAPI fGraphClone(CUgraph* out, CUgraph in) {
  std::lock_guard lock(gg->mu);
  gg->graphs.push_back(copyGraph(*reinterpret_cast<FakeGraph*>(in)));
  ++gg->clones_alive;
  *out = reinterpret_cast<CUgraph>(gg->graphs.back().get());
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fGraphDestroy(CUgraph graph) {
  std::lock_guard lock(gg->mu);
  auto& all = gg->graphs;
  const auto it = std::find_if(all.begin(), all.end(), [&](auto& p) { return p.get() == (FakeGraph*)graph; });
  if (it == all.end()) return CUDA_ERROR_INVALID_VALUE;
  all.erase(it);
  --gg->clones_alive;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fGraphAddKernelNode(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, size_t n,
                                     const CUDA_KERNEL_NODE_PARAMS* p) {
  std::lock_guard lock(gg->mu);
  auto* fg = reinterpret_cast<FakeGraph*>(graph);
  auto node = std::make_unique<FakeNode>();
  setKernel(*node, *p);
  node->owner = fg;
  for (size_t i = 0; i < n; ++i) fg->edges.emplace_back(reinterpret_cast<FakeNode*>(deps[i]), node.get());
  *out = reinterpret_cast<CUgraphNode>(node.get());
  fg->nodes.push_back(std::move(node));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fGraphAddDependencies(CUgraph graph, const CUgraphNode* from, const CUgraphNode* to,
                                       const CUgraphEdgeData*, size_t n) {
  std::lock_guard lock(gg->mu);
  for (size_t i = 0; i < n; ++i) {
    reinterpret_cast<FakeGraph*>(graph)->edges.emplace_back(reinterpret_cast<FakeNode*>(from[i]),
                                                            reinterpret_cast<FakeNode*>(to[i]));
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fGraphDestroyNode(CUgraphNode node) {
  std::lock_guard lock(gg->mu);
  auto* n = reinterpret_cast<FakeNode*>(node);
  FakeGraph& fg = *n->owner;
  std::erase_if(fg.edges, [&](auto& e) { return e.first == n || e.second == n; });
  std::erase_if(fg.nodes, [&](auto& p) { return p.get() == n; });
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fGraphGetNodes(CUgraph graph, CUgraphNode* out, size_t* count) {
  std::lock_guard lock(gg->mu);
  auto& nodes = reinterpret_cast<FakeGraph*>(graph)->nodes;
  if (out) {
    for (size_t i = 0; i < std::min(*count, nodes.size()); ++i) out[i] = reinterpret_cast<CUgraphNode>(nodes[i].get());
  }
  *count = nodes.size();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fGraphGetEdges(CUgraph graph, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* data,
                                size_t* count) {
  std::lock_guard lock(gg->mu);
  auto& edges = reinterpret_cast<FakeGraph*>(graph)->edges;
  for (size_t i = 0; from && i < std::min(*count, edges.size()); ++i) {
    from[i] = reinterpret_cast<CUgraphNode>(edges[i].first);
    to[i] = reinterpret_cast<CUgraphNode>(edges[i].second);
    if (data) data[i] = CUgraphEdgeData{};
  }
  *count = edges.size();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fGraphNodeGetType(CUgraphNode node, CUgraphNodeType* type) {
  std::lock_guard lock(gg->mu);
  *type = reinterpret_cast<FakeNode*>(node)->type;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fGraphKernelNodeGetParams(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS* p) {
  std::lock_guard lock(gg->mu);
  auto* n = reinterpret_cast<FakeNode*>(node);
  *p = CUDA_KERNEL_NODE_PARAMS{};
  p->func = n->f;
  p->gridDimX = n->grid, p->gridDimY = 1, p->gridDimZ = 1;
  p->blockDimX = n->block, p->blockDimY = 1, p->blockDimZ = 1;
  p->kernelParams = n->ptrs;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fGraphKernelNodeGetAttribute(CUgraphNode node, CUkernelNodeAttrID id, CUkernelNodeAttrValue* value) {
  std::lock_guard lock(gg->mu);
  if (id != CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE) return CUDA_ERROR_INVALID_VALUE;
  *value = CUkernelNodeAttrValue{};
  value->deviceUpdatableKernelNode.deviceUpdatable = reinterpret_cast<FakeNode*>(node)->device_updatable ? 1 : 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fGraphChildGraphNodeGetGraph(CUgraphNode node, CUgraph* graph) {
  std::lock_guard lock(gg->mu);
  *graph = reinterpret_cast<CUgraph>(reinterpret_cast<FakeNode*>(node)->child.get());
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fGraphInstantiate(CUgraphExec* exec, CUgraph graph, unsigned long long) {
  std::lock_guard lock(gg->mu);
  std::vector<std::string> names;
  kernelNames(*reinterpret_cast<FakeGraph*>(graph), names);
  const bool fused = std::find(names.begin(), names.end(), "fused_ok") != names.end();
  if (CUresult r = fused ? gg->refuse_fused : gg->refuse_original; r != CUDA_SUCCESS) return r;
  gg->execs.push_back(copyGraph(*reinterpret_cast<FakeGraph*>(graph)));
  gg->instantiated.emplace_back();
  kernelNames(*gg->execs.back(), gg->instantiated.back());
  *exec = reinterpret_cast<CUgraphExec>(gg->execs.back().get());
  return CUDA_SUCCESS;
}
// Accepts a graph of the same node types in the same order (a GPU driver's rule is similar: the same topology).
CUresult CUDAAPI fGraphExecUpdate(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo* info) {
  std::lock_guard lock(gg->mu);
  auto* e = reinterpret_cast<FakeGraph*>(exec);
  auto* from = reinterpret_cast<FakeGraph*>(graph);
  *info = CUgraphExecUpdateResultInfo{};
  bool same = e->nodes.size() == from->nodes.size() && e->edges.size() == from->edges.size();
  for (size_t i = 0; same && i < e->nodes.size(); ++i) same = e->nodes[i]->f == from->nodes[i]->f;
  if (!same) {
    info->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  }
  auto updated = copyGraph(*from);
  *e = std::move(*updated);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fGraphLaunch(CUgraphExec exec, CUstream) {
  std::lock_guard lock(gg->mu);
  runGraph(*reinterpret_cast<FakeGraph*>(exec));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fGraphExecDestroy(CUgraphExec exec) {
  std::lock_guard lock(gg->mu);
  auto& all = gg->execs;
  const auto it = std::find_if(all.begin(), all.end(), [&](auto& p) { return p.get() == (FakeGraph*)exec; });
  if (it == all.end()) return CUDA_ERROR_INVALID_VALUE;
  all.erase(it);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fGraphNodeFindInClone(CUgraphNode* out, CUgraphNode original, CUgraph clone) {
  std::lock_guard lock(gg->mu);
  for (const auto& n : reinterpret_cast<FakeGraph*>(clone)->nodes) {
    if (n->original == reinterpret_cast<FakeNode*>(original)) {
      *out = reinterpret_cast<CUgraphNode>(n.get());
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}
// The executable graph's copy of `node` (a node of the graph it was instantiated from), as a GPU driver finds it.
FakeNode* execNode(CUgraphExec exec, CUgraphNode node, CUgraphNodeType type) {
  std::lock_guard lock(gg->mu);
  gg->set_calls.emplace_back(exec, node);
  const auto& all = gg->execs;
  if (std::none_of(all.begin(), all.end(), [&](auto& p) { return p.get() == (FakeGraph*)exec; })) return nullptr;
  for (const auto& n : reinterpret_cast<FakeGraph*>(exec)->nodes) {
    if (n->original == reinterpret_cast<FakeNode*>(node) && n->type == type) return n.get();
  }
  return nullptr;
}
// Refuses a kernel node update that changes the function, as a GPU driver does (CUDA_ERROR_INVALID_VALUE).
CUresult CUDAAPI fGraphExecKernelNodeSetParams(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p) {
  std::lock_guard lock(gg->mu);
  FakeNode* n = execNode(exec, node, CU_GRAPH_NODE_TYPE_KERNEL);
  if (!n || !p || p->func != n->f) return CUDA_ERROR_INVALID_VALUE;
  setKernel(*n, *p);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fGraphNodeSetEnabled(CUgraphExec exec, CUgraphNode node, unsigned enabled) {
  std::lock_guard lock(gg->mu);
  FakeNode* n = execNode(exec, node, CU_GRAPH_NODE_TYPE_KERNEL);
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  n->enabled = enabled != 0;
  return CUDA_SUCCESS;
}

// A GPU driver's cuFunc* queries refuse the CUkernel handles the CUDA runtime launches; the cuKernel* ones answer.
CUresult CUDAAPI fRefuseModule(CUmodule*, CUfunction) {
  return CUDA_ERROR_INVALID_HANDLE;
}
CUresult CUDAAPI fRefuseName(const char**, CUfunction) {
  return CUDA_ERROR_INVALID_HANDLE;
}
CUresult CUDAAPI fRefuseParamInfo(CUfunction, size_t, size_t*, size_t*) {
  return CUDA_ERROR_INVALID_HANDLE;
}
CUresult CUDAAPI fKernelGetLibrary(CUlibrary* l, CUkernel k) {
  CUmodule m = nullptr;
  if (fFuncGetModule(&m, reinterpret_cast<CUfunction>(k)) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_HANDLE;
  *l = reinterpret_cast<CUlibrary>(m);  // the fake's libraries are named by their modules
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fLibraryGetModule(CUmodule* m, CUlibrary l) {
  *m = reinterpret_cast<CUmodule>(l);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fKernelGetName(const char** name, CUkernel k) {
  return fFuncGetName(name, reinterpret_cast<CUfunction>(k));
}
CUresult CUDAAPI fKernelGetParamInfo(CUkernel k, size_t i, size_t* offset, size_t* size) {
  return fFuncGetParamInfo(reinterpret_cast<CUfunction>(k), i, offset, size);
}

RuntimeKernel kernel(const std::string& name, int params) {
  RuntimeKernel k;
  k.name = name;
  k.module_hash = core::sha256Hex(reinterpret_cast<const uint8_t*>(kAppImage), std::strlen(kAppImage) + 1);
  k.shape.grid = {4, 1, 1};
  k.shape.block = {64, 1, 1};
  for (int i = 0; i < params; ++i) {
    const bool last = i + 1 == params;
    k.params.push_back({static_cast<uint32_t>(i * 8), last ? 4u : 8u, !last});
  }
  k.arg_bytes = static_cast<uint32_t>((params - 1) * 8 + 4);
  return k;
}

// twice(x, t, n) -> plus1(t, z, n)  ==>  fused(x, t, z, n)
RuntimePlan twicePlus1(const std::string& fused_name = "fused_ok") {
  RuntimePlan p;
  p.dir = "plan-" + fused_name;
  p.label = p.dir;
  p.fusion = core::FusionKind::kThreadLocal;
  p.kernels = {kernel("twice", 3), kernel("plus1", 3)};
  rewriter::Predicate same;
  same.kind = rewriter::Predicate::Kind::kSameLaunchConfig;
  rewriter::Predicate eq;
  eq.kind = rewriter::Predicate::Kind::kArgEqual;
  eq.a = {0, 1};
  eq.b = {1, 0};
  rewriter::Predicate n_eq = eq;
  n_eq.a = {0, 2};
  n_eq.b = {1, 2};
  rewriter::Predicate disjoint;
  disjoint.kind = rewriter::Predicate::Kind::kNoOverlap;
  disjoint.buffers = {{0, 0}, {0, 1}, {1, 1}};
  disjoint.bytes = {16, 16, 16};
  p.predicates = {same, eq, n_eq, disjoint};
  p.fused_name = fused_name;
  p.fused_ptx = "// fused\n.entry " + fused_name + "()\n";
  p.fused_shape = p.kernels[0].shape;
  p.fused_args = {{0, 0}, {0, 1}, {1, 1}, {0, 2}};
  p.targets = {"sm_90"};
  return p;
}

// twice and plus1 side by side (a horizontal plan): independent, the same n, no buffer shared.
RuntimePlan twiceBesidePlus1() {
  RuntimePlan p;
  p.dir = "plan-side_by_side";
  p.label = p.dir;
  p.fusion = core::FusionKind::kHorizontal;
  p.kernels = {kernel("twice", 3), kernel("plus1", 3)};
  rewriter::Predicate n_eq;
  n_eq.kind = rewriter::Predicate::Kind::kArgEqual;
  n_eq.a = {0, 2};
  n_eq.b = {1, 2};
  rewriter::Predicate disjoint;
  disjoint.kind = rewriter::Predicate::Kind::kNoOverlap;
  disjoint.buffers = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
  disjoint.bytes = {16, 16, 16, 16};
  p.predicates = {n_eq, disjoint};
  p.fused_name = "side_by_side";
  p.fused_ptx = "// fused\n.entry side_by_side()\n";
  p.fused_shape = p.kernels[0].shape;
  p.fused_args = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {0, 2}};
  p.targets = {"sm_90"};
  return p;
}

class InjectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g = &fake_;
    fake_.functions = {{kTwice, {"twice", kAppModule}},
                       {kPlus1, {"plus1", kAppModule}},
                       {kOther, {"other", kAppModule}},
                       {kTwiceElsewhere, {"twice", kOtherModule}},
                       {kFusedOk, {"fused_ok", kFusedModule}},
                       {kFusedBad, {"fused_bad", kFusedModule}},
                       {kSideBySide, {"side_by_side", kFusedModule}}};
    for (int v = 0; v < 2; ++v) {
      table_.LaunchKernel[v] = &fLaunchKernel;
      table_.LaunchKernelEx[v] = &fLaunchKernelEx;
      table_.StreamSynchronize[v] = &fStreamSynchronize;
      table_.MemcpyHtoD[v] = &fMemcpyHtoD;
      table_.StreamBeginCapture[v] = &fBeginCapture;
      table_.StreamEndCapture[v] = &fEndCapture;
    }
    table_.ModuleLoadData[0] = &fModuleLoadData;
    table_.CtxSynchronize[0] = &fCtxSynchronize;
    table_.FuncGetModule = &fFuncGetModule;
    table_.FuncGetName = &fFuncGetName;
    table_.FuncGetParamInfo = &fFuncGetParamInfo;
    table_.ModuleGetFunction = &fModuleGetFunction;
    table_.CtxGetCurrent = &fCtxGetCurrent;
    table_.CtxGetDevice = &fCtxGetDevice;
    table_.DeviceGetAttribute = &fDeviceGetAttribute;
    table_.MemGetAddressRange = &fMemGetAddressRange;
    table_.StreamIsCapturing = &fStreamIsCapturing;
    table_.CtxSynchronizeDirect = &fCtxSynchronize;
    table_.MemAllocDirect = &fMemAlloc;
    table_.MemFreeDirect = &fMemFree;
    table_.MemcpyDtoDDirect = &fMemcpyDtoD;
    table_.MemcpyDtoHDirect = &fMemcpyDtoH;
    table_.MemcpyHtoDDirect = &fMemcpyHtoD;
    table_.EventCreate = &fEventCreate;
    table_.EventRecordDirect = &fEventRecord;
    table_.EventElapsedTime = &fEventElapsedTime;
    table_.EventDestroy = &fEventDestroy;
  }
  void TearDown() override { g = nullptr; }

  std::unique_ptr<Injector> make(std::vector<RuntimePlan> plans, InjectorOptions o = {}) {
    auto inj = std::make_unique<Injector>(table_, std::move(plans), o);
    CUmodule m = nullptr;
    EXPECT_EQ(inj->ModuleLoadData(0, &m, kAppImage), CUDA_SUCCESS);
    EXPECT_EQ(inj->ModuleLoadData(0, &m, kOtherImage), CUDA_SUCCESS);
    return inj;
  }

  // A buffer of n floats the fake's allocation table knows.
  float* buffer(std::vector<float>& storage, float fill) {
    storage.assign(n_, fill);
    fake_.allocations[reinterpret_cast<uint64_t>(storage.data())] = storage.size() * sizeof(float);
    return storage.data();
  }

  CUresult launch(Injector& inj, CUfunction f, void* a, void* b) { return launch(inj, f, a, b, stream_); }
  CUresult launch(Injector& inj, CUfunction f, void* a, void* b, CUstream s, int variant = 0) {
    int n = n_;
    void* params[] = {&a, &b, &n};
    return inj.LaunchKernel(variant, f, 4, 1, 1, 64, 1, 1, 0, s, params, nullptr);
  }

  Fake fake_;
  DriverTable table_;
  int n_ = 4;
  CUstream stream_ = reinterpret_cast<CUstream>(0x5000);
};

TEST_F(InjectorTest, FusesAPatternWhosePredicatesHold) {
  auto inj = make({twicePlus1()});
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  EXPECT_EQ(launch(*inj, kTwice, x, t), CUDA_SUCCESS);
  EXPECT_TRUE(fake_.launches.empty()) << "the first launch of the pattern waits";
  EXPECT_EQ(launch(*inj, kPlus1, t, z), CUDA_SUCCESS);
  EXPECT_EQ(fake_.launches, std::vector<std::string>{"fused_ok"});
  EXPECT_EQ(zs, std::vector<float>(4, 7.f));
  EXPECT_EQ(ts, std::vector<float>(4, 6.f));
  // The kernels' parameters were checked without asking past the last one (their identity pins how many).
  EXPECT_EQ(fake_.refused_param_queries, 0);
  const InjectorStats s = inj->stats();
  EXPECT_EQ(s.launches_seen, 2u);
  EXPECT_EQ(s.launches_issued, 1u);
  EXPECT_EQ(s.plans[0].occurrences_fused, 1u);
  EXPECT_EQ(fake_.fused_module_loads, 1);
}

TEST_F(InjectorTest, FusesKernelHandlesTheRuntimeLaunches) {
  table_.FuncGetModule = &fRefuseModule;
  table_.FuncGetName = &fRefuseName;
  table_.FuncGetParamInfo = &fRefuseParamInfo;
  table_.KernelGetLibrary = &fKernelGetLibrary;
  table_.LibraryGetModule = &fLibraryGetModule;
  table_.KernelGetName = &fKernelGetName;
  table_.KernelGetParamInfo = &fKernelGetParamInfo;
  auto inj = make({twicePlus1()});
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  EXPECT_EQ(launch(*inj, kTwice, x, t), CUDA_SUCCESS);
  EXPECT_EQ(launch(*inj, kPlus1, t, z), CUDA_SUCCESS);
  EXPECT_EQ(fake_.launches, std::vector<std::string>{"fused_ok"});
  EXPECT_EQ(zs, std::vector<float>(4, 7.f));
  EXPECT_EQ(inj->stats().unknown_functions, 0u);
}

TEST_F(InjectorTest, FlushesDeferredLaunchOnStreamSync) {
  auto inj = make({twicePlus1()});
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  launch(*inj, kTwice, x, t);
  EXPECT_EQ(inj->StreamSynchronize(0, stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.launches, std::vector<std::string>{"twice"});
  EXPECT_EQ(fake_.calls.back(), "cuStreamSynchronize");
  EXPECT_EQ(ts, std::vector<float>(4, 6.f)) << "the launch ran before the sync returned";
  launch(*inj, kPlus1, t, z);
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"twice", "plus1"}));
  EXPECT_EQ(inj->stats().flushes[static_cast<int>(FlushReason::kStreamSync)], 1u);
}

TEST_F(InjectorTest, FlushesDeferredLaunchOnMemcpy) {
  auto inj = make({twicePlus1()});
  std::vector<float> xs, ts, host(4, 9);
  float *x = buffer(xs, 3), *t = buffer(ts, 0);
  launch(*inj, kTwice, x, t);
  EXPECT_EQ(inj->MemcpyHtoD(0, reinterpret_cast<CUdeviceptr>(x), host.data(), 16), CUDA_SUCCESS);
  EXPECT_EQ(ts, std::vector<float>(4, 6.f)) << "twice ran before the copy overwrote x";
  EXPECT_EQ(xs, host);
  EXPECT_EQ(inj->stats().flushes[static_cast<int>(FlushReason::kMemcpy)], 1u);
}

// A synchronous upload into an allocation no deferred launch uses does not flush them (seen on an H100: each buffer's
// upload in many_small_kernels flushed the launch before it, so its pattern was never fused).
TEST_F(InjectorTest, KeepsDeferringAcrossAnUploadIntoAnotherAllocation) {
  auto inj = make({twicePlus1()});
  std::vector<float> xs, ts, zs, other, host(4, 9);
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0), *o = buffer(other, 0);
  launch(*inj, kTwice, x, t);
  EXPECT_EQ(inj->MemcpyHtoD(0, reinterpret_cast<CUdeviceptr>(o), host.data(), 16), CUDA_SUCCESS);
  EXPECT_EQ(other, host);
  EXPECT_TRUE(fake_.launches.empty()) << "the copy touched nothing twice uses";
  launch(*inj, kPlus1, t, z);
  EXPECT_EQ(fake_.launches, std::vector<std::string>{"fused_ok"});
  EXPECT_EQ(zs, std::vector<float>(4, 7.f));
  EXPECT_EQ(inj->stats().flushes[static_cast<int>(FlushReason::kMemcpy)], 0u);
  // An upload into a buffer a deferred launch reads still flushes it first.
  launch(*inj, kTwice, x, t);
  EXPECT_EQ(inj->MemcpyHtoD(0, reinterpret_cast<CUdeviceptr>(t), host.data(), 16), CUDA_SUCCESS);
  EXPECT_EQ(fake_.launches.back(), "twice");
  EXPECT_EQ(ts, host) << "the copy ran after twice wrote t";
}

TEST_F(InjectorTest, FlushesInOrderOnLaunchOfAnotherKernel) {
  auto inj = make({twicePlus1()});
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  launch(*inj, kTwice, x, t);
  int n = n_;
  void* params[] = {&t, &n};
  inj->LaunchKernel(0, kOther, 4, 1, 1, 64, 1, 1, 0, stream_, params, nullptr);
  launch(*inj, kPlus1, t, z);
  inj->StreamSynchronize(0, stream_);
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"twice", "other", "plus1"}));
  EXPECT_EQ(zs, std::vector<float>(4, -5.f));
  EXPECT_EQ(inj->stats().flushes[static_cast<int>(FlushReason::kOtherKernel)], 1u);
}

TEST_F(InjectorTest, IssuesOriginalsWhenAPredicateFails) {
  auto inj = make({twicePlus1()});
  std::vector<float> xs, ts, us, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *u = buffer(us, 5), *z = buffer(zs, 0);
  launch(*inj, kTwice, x, t);
  launch(*inj, kPlus1, u, z);  // reads u, not what twice wrote: arg_equal fails
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"twice", "plus1"}));
  EXPECT_EQ(zs, std::vector<float>(4, 6.f));
  const InjectorStats s = inj->stats();
  EXPECT_EQ(s.plans[0].predicate_failures[static_cast<int>(rewriter::Predicate::Kind::kArgEqual)], 1u);
  EXPECT_EQ(s.flushes[static_cast<int>(FlushReason::kPredicate)], 1u);
}

TEST_F(InjectorTest, RefusesOverlappingBuffers) {
  auto inj = make({twicePlus1()});
  std::vector<float> all;
  float* base = buffer(all, 1);
  n_ = 2;
  launch(*inj, kTwice, base, base + 2);  // x and t in one allocation: the extents overlap
  launch(*inj, kPlus1, base + 2, base + 2);
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"twice", "plus1"}));
  EXPECT_EQ(inj->stats().plans[0].predicate_failures[static_cast<int>(rewriter::Predicate::Kind::kNoOverlap)], 1u);
}

TEST_F(InjectorTest, PointerAtAnOffsetReachesOnlyToTheEndOfItsAllocation) {
  // mlp_block's second layer: its weights sit 64 KiB into the weight allocation, whose end is nearer than the bytes
  // the plan recorded at the first layer. Four adjacent allocations of 16 bytes; x is 8 bytes into the first.
  auto inj = make({twicePlus1()});
  std::vector<float> all(16, 1.f);
  for (int a = 0; a < 4; ++a) fake_.allocations[reinterpret_cast<uint64_t>(all.data() + 4 * a)] = 16;
  n_ = 2;
  launch(*inj, kTwice, all.data() + 2, all.data() + 4);
  launch(*inj, kPlus1, all.data() + 4, all.data() + 8);
  EXPECT_EQ(fake_.launches, std::vector<std::string>{"fused_ok"});
  EXPECT_EQ(inj->stats().plans[0].predicate_failures[static_cast<int>(rewriter::Predicate::Kind::kNoOverlap)], 0u);
}

CUresult CUDAAPI fMemAllocHost(CUdeviceptr* p, size_t n) {
  *p = reinterpret_cast<CUdeviceptr>(new float[n / sizeof(float)]());
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fMemFreeHost(CUdeviceptr p) {
  delete[] reinterpret_cast<float*>(p);
  return CUDA_SUCCESS;
}

TEST_F(InjectorTest, KnowsAllocationsMadeThroughTheHooksWithoutAskingTheDriver) {
  table_.MemGetAddressRange = nullptr;
  table_.MemAlloc[0] = &fMemAllocHost;
  table_.MemFree[0] = &fMemFreeHost;
  auto inj = make({twicePlus1()});
  CUdeviceptr x = 0, t = 0, z = 0, shared = 0;
  for (CUdeviceptr* p : {&x, &t, &z}) ASSERT_EQ(inj->MemAlloc(0, p, 16), CUDA_SUCCESS);
  auto* xs = reinterpret_cast<float*>(x);
  std::fill(xs, xs + 4, 3.f);
  launch(*inj, kTwice, xs, reinterpret_cast<void*>(t));
  launch(*inj, kPlus1, reinterpret_cast<void*>(t), reinterpret_cast<void*>(z));
  EXPECT_EQ(fake_.launches, std::vector<std::string>{"fused_ok"});
  EXPECT_EQ(reinterpret_cast<float*>(z)[3], 7.f);
  // Two tensors inside one allocation: the extent to the allocation's end overlaps the next one.
  ASSERT_EQ(inj->MemAlloc(0, &shared, 32), CUDA_SUCCESS);
  launch(*inj, kTwice, xs, reinterpret_cast<void*>(shared));
  launch(*inj, kPlus1, reinterpret_cast<void*>(shared), reinterpret_cast<void*>(shared + 16));
  EXPECT_EQ(fake_.launches.back(), "plus1");
  EXPECT_EQ(inj->stats().plans[0].predicate_failures[static_cast<int>(rewriter::Predicate::Kind::kNoOverlap)], 1u);
  for (CUdeviceptr p : {x, t, z, shared}) EXPECT_EQ(inj->MemFree(0, p), CUDA_SUCCESS);
}

CUresult CUDAAPI fMemCreate(CUmemGenericAllocationHandle* h, size_t, const CUmemAllocationProp*, unsigned long long) {
  static std::atomic<CUmemGenericAllocationHandle> next{100};
  *h = next++;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fMemMap(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fMemUnmap(CUdeviceptr, size_t) {
  return CUDA_SUCCESS;
}

TEST_F(InjectorTest, RefusesPointersIntoMemoryMappedTwice) {
  // cuMemMap of one physical allocation at two addresses: distinct addresses, the same bytes. The fake driver maps
  // nothing (the ranges are host memory); what matters is what the injector was told.
  table_.MemGetAddressRange = nullptr;
  table_.MemCreate[0] = &fMemCreate;
  table_.MemMap[0] = &fMemMap;
  table_.MemUnmap[0] = &fMemUnmap;
  auto inj = make({twicePlus1()});
  std::vector<float> host(64, 3.f);
  const auto at = [&](int i) { return reinterpret_cast<CUdeviceptr>(host.data() + 16 * i); };
  CUmemGenericAllocationHandle hx = 0, ht = 0, hz = 0;
  for (auto* h : {&hx, &ht, &hz}) ASSERT_EQ(inj->MemCreate(0, h, 64, nullptr, 0), CUDA_SUCCESS);
  ASSERT_EQ(inj->MemMap(0, at(0), 64, 0, hx, 0), CUDA_SUCCESS);
  ASSERT_EQ(inj->MemMap(0, at(1), 64, 0, ht, 0), CUDA_SUCCESS);
  ASSERT_EQ(inj->MemMap(0, at(2), 64, 0, hz, 0), CUDA_SUCCESS);
  const auto occurrence = [&] {
    launch(*inj, kTwice, reinterpret_cast<void*>(at(0)), reinterpret_cast<void*>(at(1)));
    launch(*inj, kPlus1, reinterpret_cast<void*>(at(1)), reinterpret_cast<void*>(at(2)));
    return fake_.launches.back();
  };
  const auto refused = [&] {
    return inj->stats().plans[0].predicate_failures[static_cast<int>(rewriter::Predicate::Kind::kNoOverlap)];
  };
  EXPECT_EQ(occurrence(), "fused_ok");  // three physical allocations, one mapping each
  // The intermediate's bytes also mapped at a fourth address: no pointer into them is trusted.
  ASSERT_EQ(inj->MemMap(0, at(3), 64, 0, ht, 0), CUDA_SUCCESS);
  EXPECT_EQ(occurrence(), "plus1");
  EXPECT_EQ(refused(), 1u);
  ASSERT_EQ(inj->MemUnmap(0, at(3), 64), CUDA_SUCCESS);
  EXPECT_EQ(occurrence(), "fused_ok");
  // A mapping of a handle kfuse did not see made (imported, retained): its bytes may be mapped elsewhere too.
  ASSERT_EQ(inj->MemUnmap(0, at(2), 64), CUDA_SUCCESS);
  ASSERT_EQ(inj->MemMap(0, at(2), 64, 0, /*handle=*/7, 0), CUDA_SUCCESS);
  EXPECT_EQ(occurrence(), "plus1");
  EXPECT_EQ(refused(), 2u);
}

// Allocations at chosen places inside one host buffer: the next one at g_next_at.
uintptr_t g_next_at = 0;
CUresult CUDAAPI fMemAllocAt(CUdeviceptr* p, size_t) {
  *p = g_next_at;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fMemFreeNothing(CUdeviceptr) {
  return CUDA_SUCCESS;
}

TEST_F(InjectorTest, AnIdenticalOccurrenceIsNotRecheckedUntilAnAllocationChanges) {
  table_.MemGetAddressRange = nullptr;
  table_.MemAlloc[0] = &fMemAllocAt;
  table_.MemFree[0] = &fMemFreeNothing;
  auto inj = make({twicePlus1()});
  std::vector<float> host(64, 1.f);
  const auto base = reinterpret_cast<uintptr_t>(host.data());
  CUdeviceptr x = 0, t = 0, z = 0;
  for (auto [p, at] : {std::pair{&x, 0}, std::pair{&t, 64}, std::pair{&z, 128}}) {
    g_next_at = base + at;
    ASSERT_EQ(inj->MemAlloc(0, p, 16), CUDA_SUCCESS);
  }
  auto occurrence = [&] {
    launch(*inj, kTwice, reinterpret_cast<void*>(x), reinterpret_cast<void*>(t));
    launch(*inj, kPlus1, reinterpret_cast<void*>(t), reinterpret_cast<void*>(z));
  };
  occurrence();
  occurrence();
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"fused_ok", "fused_ok"}));
  // t's allocation is freed and a larger one made in its place: it now reaches z. The same arguments must be
  // checked again, and the buffers overlap.
  ASSERT_EQ(inj->MemFree(0, t), CUDA_SUCCESS);
  g_next_at = base + 64;
  ASSERT_EQ(inj->MemAlloc(0, &t, 128), CUDA_SUCCESS);
  occurrence();
  EXPECT_EQ(fake_.launches.back(), "plus1");
  EXPECT_EQ(inj->stats().plans[0].predicate_failures[static_cast<int>(rewriter::Predicate::Kind::kNoOverlap)], 1u);
}

TEST_F(InjectorTest, DestroyedStreamsGiveTheirSlotsBack) {
  table_.StreamDestroy[0] = [](CUstream) { return CUDA_SUCCESS; };
  auto inj = make({twicePlus1()});
  std::vector<float> xs, ts;
  float *x = buffer(xs, 3), *t = buffer(ts, 0);
  for (uintptr_t i = 0; i < 500; ++i) {
    const CUstream s = reinterpret_cast<CUstream>(0x100000 + 0x100 * i);
    launch(*inj, kTwice, x, t, s);
    EXPECT_EQ(inj->StreamDestroy(0, s), CUDA_SUCCESS);
  }
  const InjectorStats st = inj->stats();
  EXPECT_EQ(st.streams_over_capacity, 0u);
  EXPECT_EQ(st.flushes[static_cast<int>(FlushReason::kStreamDestroy)], 500u);
  EXPECT_EQ(fake_.launches.size(), 500u);
}

TEST_F(InjectorTest, TwoThreadsOnTwoStreamsBothFuse) {
  auto inj = make({twicePlus1()});
  constexpr int kRounds = 200;
  auto worker = [&](CUstream s, float fill, std::vector<float>* out) {
    std::vector<float> xs(4, fill), ts(4), zs(4);
    {
      std::lock_guard lock(fake_.mu);
      for (auto* v : {&xs, &ts, &zs}) fake_.allocations[reinterpret_cast<uint64_t>(v->data())] = 16;
    }
    for (int i = 0; i < kRounds; ++i) {
      launch(*inj, kTwice, xs.data(), ts.data(), s);
      launch(*inj, kPlus1, ts.data(), zs.data(), s);
    }
    inj->StreamSynchronize(0, s);
    *out = zs;
  };
  std::vector<float> a, b;
  std::thread t1(worker, reinterpret_cast<CUstream>(0x5000), 1.f, &a);
  std::thread t2(worker, reinterpret_cast<CUstream>(0x6000), 2.f, &b);
  t1.join();
  t2.join();
  EXPECT_EQ(a, std::vector<float>(4, 3.f));
  EXPECT_EQ(b, std::vector<float>(4, 5.f));
  EXPECT_EQ(inj->stats().plans[0].occurrences_fused, 2u * kRounds);
  EXPECT_EQ(fake_.launches.size(), 2u * kRounds);
}

TEST_F(InjectorTest, FourThreadsOnTwoStreamsEachFuseEveryOccurrenceWithUnchangedResults) {
  auto inj = make({twicePlus1()});
  constexpr int kThreads = 4, kStreams = 2, kRounds = 150;
  // Each (thread, stream) pair has its own buffers and fill value, so a launch fused with another stream's or
  // issued twice would show in the results.
  std::vector<std::vector<float>> results(kThreads * kStreams);
  auto worker = [&](int t) {
    std::vector<std::vector<float>> xs, ts, zs;
    for (int s = 0; s < kStreams; ++s) {
      xs.emplace_back(4, static_cast<float>(t * kStreams + s));
      ts.emplace_back(4);
      zs.emplace_back(4);
    }
    {
      std::lock_guard lock(fake_.mu);
      for (auto* group : {&xs, &ts, &zs}) {
        for (auto& v : *group) fake_.allocations[reinterpret_cast<uint64_t>(v.data())] = 16;
      }
    }
    for (int i = 0; i < kRounds; ++i) {
      for (int s = 0; s < kStreams; ++s) {
        const auto stream = reinterpret_cast<CUstream>(static_cast<uintptr_t>(0x7000 + 0x100 * t + s));
        launch(*inj, kTwice, xs[s].data(), ts[s].data(), stream);
        launch(*inj, kPlus1, ts[s].data(), zs[s].data(), stream);
      }
    }
    for (int s = 0; s < kStreams; ++s) {
      inj->StreamSynchronize(0, reinterpret_cast<CUstream>(static_cast<uintptr_t>(0x7000 + 0x100 * t + s)));
      results[static_cast<size_t>(t * kStreams + s)] = zs[s];
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();
  for (int i = 0; i < kThreads * kStreams; ++i) {
    EXPECT_EQ(results[static_cast<size_t>(i)], std::vector<float>(4, 2.f * static_cast<float>(i) + 1.f)) << i;
  }
  EXPECT_EQ(inj->stats().plans[0].occurrences_fused, uint64_t{kThreads * kStreams * kRounds});
  EXPECT_EQ(fake_.launches.size(), size_t{kThreads * kStreams * kRounds});
}

TEST_F(InjectorTest, PerThreadDefaultStreamsAreSeparate) {
  auto inj = make({twicePlus1()});
  std::vector<float> xs, ts, zs, x2, t2, z2;
  float *x = buffer(xs, 1), *t = buffer(ts, 0), *z = buffer(zs, 0);
  float *xb = buffer(x2, 2), *tb = buffer(t2, 0), *zb = buffer(z2, 0);
  // Thread A defers twice on its per-thread default stream; thread B's launches on its own must not break it.
  launch(*inj, kTwice, x, t, nullptr, /*variant=*/1);
  std::thread other([&] {
    launch(*inj, kTwice, xb, tb, nullptr, /*variant=*/1);
    launch(*inj, kPlus1, tb, zb, nullptr, /*variant=*/1);
  });
  other.join();
  launch(*inj, kPlus1, t, z, nullptr, /*variant=*/1);
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"fused_ok", "fused_ok"}));
  EXPECT_EQ(zs, std::vector<float>(4, 3.f));
  EXPECT_EQ(z2, std::vector<float>(4, 5.f));
}

TEST_F(InjectorTest, PerThreadCopiesFlushOnlyTheirOwnThreadsStream) {
  auto inj = make({twicePlus1()});
  std::vector<float> xs, ts, zs, host(4, 9), other(4);
  float *x = buffer(xs, 1), *t = buffer(ts, 0), *z = buffer(zs, 0), *o = buffer(other, 0);
  launch(*inj, kTwice, x, t, nullptr, /*variant=*/1);  // deferred on this thread's per-thread default stream
  std::thread([&] {
    // Another thread's synchronous copy through the _ptds function: ordered on its own per-thread stream only.
    EXPECT_EQ(inj->MemcpyHtoD(1, reinterpret_cast<CUdeviceptr>(o), host.data(), 16), CUDA_SUCCESS);
  }).join();
  EXPECT_TRUE(fake_.launches.empty());
  launch(*inj, kPlus1, t, z, nullptr, /*variant=*/1);
  EXPECT_EQ(fake_.launches, std::vector<std::string>{"fused_ok"});
  // Through the legacy function the copy is ordered after every blocking stream's work: into memory the deferred
  // launch does not use, that order cannot be observed and it stays deferred; into its input, it is flushed first.
  launch(*inj, kTwice, x, t, nullptr, /*variant=*/1);
  std::thread([&] { inj->MemcpyHtoD(0, reinterpret_cast<CUdeviceptr>(o), host.data(), 16); }).join();
  EXPECT_EQ(fake_.launches.back(), "fused_ok");
  std::thread([&] { inj->MemcpyHtoD(0, reinterpret_cast<CUdeviceptr>(x), host.data(), 16); }).join();
  EXPECT_EQ(fake_.launches.back(), "twice");
  EXPECT_EQ(ts, std::vector<float>(4, 2.f)) << "twice read x before the copy replaced it";
}

TEST_F(InjectorTest, LegacyStreamWorkFlushesOtherStreams) {
  auto inj = make({twicePlus1()});
  std::vector<float> xs, ts, ps;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *p = buffer(ps, 1);
  launch(*inj, kTwice, x, t);
  int n = n_;
  void* params[] = {&p, &n};
  inj->LaunchKernel(0, kOther, 4, 1, 1, 64, 1, 1, 0, nullptr, params, nullptr);  // legacy default stream
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"twice", "other"}));
  EXPECT_EQ(inj->stats().flushes[static_cast<int>(FlushReason::kLegacyStream)], 1u);
}

TEST_F(InjectorTest, GraphCaptureInTheMiddleOfAPatternPassesThrough) {
  auto inj = make({twicePlus1()});
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  launch(*inj, kTwice, x, t);
  EXPECT_EQ(inj->StreamBeginCapture(0, stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(fake_.launches, std::vector<std::string>{"twice"}) << "issued before the capture began";
  launch(*inj, kTwice, x, t);
  launch(*inj, kPlus1, t, z);
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"twice", "twice", "plus1"})) << "captured unchanged";
  CUgraph graph = nullptr;
  inj->StreamEndCapture(0, stream_, &graph);
  launch(*inj, kTwice, x, t);
  launch(*inj, kPlus1, t, z);
  EXPECT_EQ(fake_.launches.back(), "fused_ok") << "fusing again after the capture";
}

TEST_F(InjectorTest, PlanForAnotherModuleIsIgnoredAndCounted) {
  auto inj = make({twicePlus1()});
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  launch(*inj, kTwiceElsewhere, x, t);  // a kernel named twice, from another module image
  launch(*inj, kPlus1, t, z);
  inj->StreamSynchronize(0, stream_);
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"twice", "plus1"}));
  EXPECT_EQ(inj->stats().unknown_functions, 1u);
}

TEST_F(InjectorTest, FusedModuleThatFailsToLoadDisablesThePlan) {
  fake_.fail_module_load = true;
  auto inj = make({twicePlus1()});
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  for (int i = 0; i < 3; ++i) {
    launch(*inj, kTwice, x, t);
    launch(*inj, kPlus1, t, z);
  }
  inj->StreamSynchronize(0, stream_);
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"twice", "plus1", "twice", "plus1", "twice", "plus1"}));
  EXPECT_EQ(zs, std::vector<float>(4, 7.f));
  const InjectorStats s = inj->stats();
  EXPECT_NE(s.plans[0].disabled.find("loading the fused kernel failed"), std::string::npos) << s.plans[0].disabled;
  EXPECT_EQ(s.deferred, 2u) << "once disabled, the plan's kernels are not held back any more";
}

TEST_F(InjectorTest, PlanForAnotherArchitectureIsDisabled) {
  RuntimePlan p = twicePlus1();
  p.targets = {"sm_80"};
  auto inj = make({p});
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  launch(*inj, kTwice, x, t);
  launch(*inj, kPlus1, t, z);
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"twice", "plus1"}));
  EXPECT_NE(inj->stats().plans[0].disabled.find("sm_90"), std::string::npos);
}

TEST_F(InjectorTest, ValidateCatchesAWrongFusedKernel) {
  InjectorOptions o;
  o.validate = 2;
  auto inj = make({twicePlus1("fused_bad")}, o);
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  launch(*inj, kTwice, x, t);
  launch(*inj, kPlus1, t, z);
  EXPECT_EQ(zs, std::vector<float>(4, 7.f)) << "the originals' results are what the application sees";
  const InjectorStats s = inj->stats();
  EXPECT_EQ(s.plans[0].validations_failed, 1u);
  EXPECT_NE(s.plans[0].disabled.find("validation failed"), std::string::npos) << s.plans[0].disabled;
  launch(*inj, kTwice, x, t);
  launch(*inj, kPlus1, t, z);
  EXPECT_EQ(fake_.launches.back(), "plus1") << "disabled after the mismatch";
}

TEST_F(InjectorTest, ValidatePassesACorrectFusedKernel) {
  InjectorOptions o;
  o.validate = 1;
  auto inj = make({twicePlus1()}, o);
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  for (int i = 0; i < 2; ++i) {
    launch(*inj, kTwice, x, t);
    launch(*inj, kPlus1, t, z);
  }
  const InjectorStats s = inj->stats();
  EXPECT_EQ(s.plans[0].validations_passed, 1u);
  EXPECT_EQ(s.plans[0].occurrences_fused, 2u);
  EXPECT_TRUE(s.plans[0].disabled.empty());
  EXPECT_EQ(zs, std::vector<float>(4, 7.f));
}

// On a GPU, --validate also times the fused kernel against the originals: a plan measured slower is disabled (the
// held-out prologue that made a program 29 % slower: 42.6 us fused where the two originals took 14 us).
TEST_F(InjectorTest, ValidateDisablesAPlanMeasuredSlower) {
  fake_.cost_us = {{"twice", 7}, {"plus1", 7}, {"fused_ok", 42.6}};
  InjectorOptions o;
  o.validate = 1;
  auto inj = make({twicePlus1()}, o);
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  launch(*inj, kTwice, x, t);
  launch(*inj, kPlus1, t, z);
  EXPECT_EQ(zs, std::vector<float>(4, 7.f)) << "the results are the originals' (equal to the fused kernel's)";
  EXPECT_EQ(ts, std::vector<float>(4, 6.f));
  InjectorStats s = inj->stats();
  EXPECT_EQ(s.plans[0].validations_passed, 1u);
  EXPECT_EQ(s.plans[0].timed_originals_ns, 14000u);
  EXPECT_EQ(s.plans[0].timed_fused_ns, 42600u);
  EXPECT_NE(s.plans[0].disabled.find("measured no faster on this GPU: the fused kernel took 42.6 us, the 2 original "
                                     "launches 14.0 us (medians of 5 runs)"),
            std::string::npos)
      << s.plans[0].disabled;
  EXPECT_EQ(s.plans[0].occurrences_fused, 1u) << "the timing runs are no occurrences";
  const size_t before = fake_.launches.size();
  launch(*inj, kTwice, x, t);
  launch(*inj, kPlus1, t, z);
  EXPECT_EQ(
      std::vector<std::string>(fake_.launches.begin() + static_cast<std::ptrdiff_t>(before), fake_.launches.end()),
      (std::vector<std::string>{"twice", "plus1"}))
      << "disabled: the originals run";
  EXPECT_NE(Injector::statsJson(inj->stats()).find("\"fused_ns\": 42600"), std::string::npos);
}

TEST_F(InjectorTest, ValidateDisablesAPlanMeasuredNoFaster) {
  fake_.cost_us = {{"twice", 7}, {"plus1", 7}, {"fused_ok", 14}};  // a tie is not faster
  InjectorOptions o;
  o.validate = 1;
  auto inj = make({twicePlus1()}, o);
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  launch(*inj, kTwice, x, t);
  launch(*inj, kPlus1, t, z);
  EXPECT_NE(inj->stats().plans[0].disabled.find("measured no faster"), std::string::npos);
  // Without a clock that moves (0 us for the originals) nothing is decided: kept, and said why.
  fake_.cost_us.clear();
  auto untimed = make({twicePlus1()}, o);
  launch(*untimed, kTwice, x, t);
  launch(*untimed, kPlus1, t, z);
  EXPECT_TRUE(untimed->stats().plans[0].disabled.empty());
  EXPECT_NE(untimed->stats().plans[0].not_timed.find("measured no time"), std::string::npos);
}

TEST_F(InjectorTest, ValidateKeepsAPlanMeasuredFaster) {
  fake_.cost_us = {{"twice", 7}, {"plus1", 7}, {"fused_ok", 9}};
  InjectorOptions o;
  o.validate = 1;
  auto inj = make({twicePlus1()}, o);
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  for (int i = 0; i < 2; ++i) {
    launch(*inj, kTwice, x, t);
    launch(*inj, kPlus1, t, z);
  }
  const InjectorStats s = inj->stats();
  EXPECT_TRUE(s.plans[0].disabled.empty()) << s.plans[0].disabled;
  EXPECT_EQ(s.plans[0].timed_fused_ns, 9000u);
  EXPECT_EQ(s.plans[0].occurrences_fused, 2u);
  EXPECT_EQ(zs, std::vector<float>(4, 7.f));
  EXPECT_EQ(fake_.launches.back(), "fused_ok");
}

// A proven_values predicate over n (each kernel's argument 2) with the given rows.
rewriter::Predicate provenN(std::vector<std::vector<int64_t>> rows) {
  rewriter::Predicate p;
  p.kind = rewriter::Predicate::Kind::kProvenValues;
  p.proof_args = {{{0, 2}, false, false}, {{1, 2}, false, false}};
  p.tuples = std::move(rows);
  return p;
}

TEST_F(InjectorTest, ValidateChecksTheFirstOccurrenceOfEveryProvenTuple) {
  InjectorOptions o;
  o.validate = 1;
  RuntimePlan plan = twicePlus1();
  plan.predicates.push_back(provenN({{4, 4}, {2, 2}}));
  auto inj = make({plan}, o);
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  for (int n : {4, 4, 2, 2, 4}) {
    n_ = n;
    launch(*inj, kTwice, x, t);
    launch(*inj, kPlus1, t, z);
  }
  const InjectorStats s = inj->stats();
  EXPECT_EQ(s.plans[0].occurrences_fused, 5u);
  EXPECT_EQ(s.plans[0].validations_passed, 2u) << "the first occurrence with n = 4, then the first with n = 2";
  n_ = 3;  // never proven: refused, not validated
  launch(*inj, kTwice, x, t);
  launch(*inj, kPlus1, t, z);
  EXPECT_EQ(inj->stats().plans[0].validations_passed, 2u);
  EXPECT_EQ(inj->stats().plans[0].predicate_failures[static_cast<int>(rewriter::Predicate::Kind::kProvenValues)], 1u);
}

// twice(x, t) then plus1(t + 1 element, z), proven with plus1's input one element into twice's output's allocation:
// the same offsets in another allocation are refused (the relation, not only the offsets, is pinned).
TEST_F(InjectorTest, RefusesAPointerIntoAnotherAllocationAtTheProvenOffset) {
  RuntimePlan plan = twicePlus1();
  plan.predicates.resize(1);  // same launch config only: the pins below carry the relation
  rewriter::Predicate pins;
  pins.kind = rewriter::Predicate::Kind::kProvenValues;
  pins.proof_args = {{{0, 1}, true, false}, {{0, 1}, false, true}, {{1, 0}, true, false}, {{1, 0}, false, true}};
  pins.tuples = {{0, 0, 4, 0}};  // t at +0, plus1's input at +4 bytes of the same allocation
  plan.predicates.push_back(pins);
  auto inj = make({plan});
  std::vector<float> xs, ts, us, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *u = buffer(us, 0), *z = buffer(zs, 0);
  n_ = 3;  // plus1 reads t[1..3]: inside the 4-float buffers
  launch(*inj, kTwice, x, t);
  launch(*inj, kPlus1, t + 1, z);
  EXPECT_EQ(fake_.launches, std::vector<std::string>{"fused_ok"});
  launch(*inj, kTwice, x, t);
  launch(*inj, kPlus1, u + 1, z);  // +4 bytes too, but into u's allocation
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"fused_ok", "twice", "plus1"}));
  EXPECT_EQ(inj->stats().plans[0].predicate_failures[static_cast<int>(rewriter::Predicate::Kind::kProvenValues)], 1u);
}

// A GPU driver hands out adjacent allocations (three 16-byte buffers back to back here): --validate's shadow copies
// must not run from one allocation into the next (seen on an H100: "could not allocate shadow copies: CUresult 1").
TEST_F(InjectorTest, ValidateCopiesEachAllocationOnItsOwnWhenAllocationsAreAdjacent) {
  InjectorOptions o;
  o.validate = 1;
  auto inj = make({twicePlus1()}, o);
  std::vector<float> arena(3 * n_);
  float* x = arena.data();
  float* t = x + n_;
  float* z = t + n_;
  for (float* b : {x, t, z}) fake_.allocations[reinterpret_cast<uint64_t>(b)] = n_ * sizeof(float);
  std::fill(x, x + n_, 3.f);
  launch(*inj, kTwice, x, t);
  launch(*inj, kPlus1, t, z);
  const InjectorStats s = inj->stats();
  EXPECT_TRUE(s.plans[0].disabled.empty()) << s.plans[0].disabled;
  EXPECT_EQ(s.plans[0].validations_passed, 1u);
  EXPECT_EQ(s.plans[0].occurrences_fused, 1u);
  EXPECT_EQ(std::vector<float>(z, z + n_), std::vector<float>(n_, 7.f));
}

TEST_F(InjectorTest, LaunchExWithAttributesIsNeverFused) {
  auto inj = make({twicePlus1()});
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  launch(*inj, kTwice, x, t);
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  CUlaunchConfig c{};
  c.gridDimX = 4, c.gridDimY = 1, c.gridDimZ = 1, c.blockDimX = 64, c.blockDimY = 1, c.blockDimZ = 1;
  c.hStream = stream_;
  c.attrs = &attr;
  c.numAttrs = 1;
  int n = n_;
  void* params[] = {&t, &z, &n};
  inj->LaunchKernelEx(0, &c, kPlus1, params, nullptr);
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"twice", "plus1"}));
  EXPECT_EQ(inj->stats().flushes[static_cast<int>(FlushReason::kLaunchAttributes)], 1u);
}

TEST_F(InjectorTest, StatisticsJsonNamesFlushReasonsAndPlans) {
  auto inj = make({twicePlus1()});
  std::vector<float> xs, ts;
  float *x = buffer(xs, 3), *t = buffer(ts, 0);
  launch(*inj, kTwice, x, t);
  inj->flushAll(FlushReason::kExit);
  const std::string json = Injector::statsJson(inj->stats());
  EXPECT_NE(json.find("\"process exit\": 1"), std::string::npos) << json;
  EXPECT_NE(json.find("\"dir\": \"plan-fused_ok\""), std::string::npos) << json;
  EXPECT_NE(Injector::statsSummary(inj->stats()).find("flushed 1x: process exit"), std::string::npos);
}

// ---- graphs: rewritten at instantiate ----

class GraphTest : public InjectorTest {
 protected:
  void SetUp() override {
    InjectorTest::SetUp();
    gg = &graphs_;
    table_.GraphClone = &fGraphClone;
    table_.GraphDestroyDirect = &fGraphDestroy;
    table_.GraphAddKernelNode = &fGraphAddKernelNode;
    table_.GraphAddDependencies = &fGraphAddDependencies;
    table_.GraphDestroyNode = &fGraphDestroyNode;
    table_.GraphGetNodes = &fGraphGetNodes;
    table_.GraphGetEdges = &fGraphGetEdges;
    table_.GraphNodeGetType = &fGraphNodeGetType;
    table_.GraphKernelNodeGetParams = &fGraphKernelNodeGetParams;
    table_.GraphChildGraphNodeGetGraph = &fGraphChildGraphNodeGetGraph;
    table_.GraphKernelNodeGetAttribute = &fGraphKernelNodeGetAttribute;
    table_.GraphInstantiateWithFlags[0] = &fGraphInstantiate;
    table_.GraphExecUpdate[0] = &fGraphExecUpdate;
    table_.GraphLaunch[0] = &fGraphLaunch;
    table_.GraphExecDestroy[0] = &fGraphExecDestroy;
    table_.GraphExecDestroyDirect = &fGraphExecDestroy;
    table_.GraphNodeFindInClone = &fGraphNodeFindInClone;
    table_.GraphExecKernelNodeSetParams[0] = &fGraphExecKernelNodeSetParams;
    table_.GraphNodeSetEnabled[0] = &fGraphNodeSetEnabled;
  }
  void TearDown() override {
    gg = nullptr;
    InjectorTest::TearDown();
  }

  // A kernel node f(a, b, n_) in `graph` after `deps`.
  FakeNode* node(FakeGraph& graph, CUfunction f, void* a, void* b, std::vector<FakeNode*> deps = {}) {
    int n = n_;
    void* params[] = {&a, &b, &n};
    if (f == kOther) params[1] = &n;  // other(p, n)
    CUDA_KERNEL_NODE_PARAMS p{};
    p.func = f;
    p.gridDimX = 4, p.gridDimY = 1, p.gridDimZ = 1;
    p.blockDimX = 64, p.blockDimY = 1, p.blockDimZ = 1;
    p.kernelParams = params;
    CUgraphNode out = nullptr;
    fGraphAddKernelNode(&out, handle(graph), reinterpret_cast<CUgraphNode*>(deps.data()), deps.size(), &p);
    return reinterpret_cast<FakeNode*>(out);
  }
  static CUgraph handle(FakeGraph& graph) { return reinterpret_cast<CUgraph>(&graph); }
  static InjectorOptions rewriting() {
    InjectorOptions o;
    o.rewrite_graphs = true;
    return o;
  }
  // The kernel nodes of what launches of `exec` run: the rewritten clone's when one was instantiated beside the
  // application's graph (first), else the application's graph's.
  std::vector<std::string> instantiate(Injector& inj, FakeGraph& graph, CUgraphExec* exec) {
    const size_t before = graphs_.instantiated.size();
    EXPECT_EQ(inj.GraphInstantiateWithFlags(0, exec, handle(graph), 0), CUDA_SUCCESS);
    EXPECT_GT(graphs_.instantiated.size(), before);
    return graphs_.instantiated.at(before);
  }
  // Sets the second parameter of kernel node `n` of `exec` to `b` (its other arguments as they were).
  CUresult setB(Injector& inj, CUgraphExec exec, FakeNode* n, void* b) {
    CUDA_KERNEL_NODE_PARAMS p{};
    fGraphKernelNodeGetParams(reinterpret_cast<CUgraphNode>(n), &p);
    uint64_t values[3] = {n->values[0], reinterpret_cast<uint64_t>(b), n->values[2]};
    void* ptrs[] = {&values[0], &values[1], &values[2]};
    p.kernelParams = ptrs;
    return inj.GraphExecKernelNodeSetParams(0, exec, reinterpret_cast<CUgraphNode>(n), &p);
  }

  FakeGraphs graphs_;
};

TEST_F(GraphTest, InstantiatesAChainMatchingAPlanAsTheFusedKernelNode) {
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  FakeGraph app;
  node(app, kPlus1, t, z, {node(app, kTwice, x, t)});
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, app, &exec), std::vector<std::string>{"fused_ok"});
  EXPECT_EQ(app.nodes.size(), 2u) << "the application's graph is left as it was";
  EXPECT_EQ(app.edges.size(), 1u);
  EXPECT_EQ(graphs_.clones_alive, 1) << "the clone lives as long as the executable graph: setters name its nodes";
  EXPECT_EQ(graphs_.execs.size(), 2u) << "the application's graph and the rewritten clone";
  EXPECT_EQ(inj->GraphLaunch(0, exec, stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.launches, std::vector<std::string>{"fused_ok"});
  EXPECT_EQ(zs, std::vector<float>(4, 7.f));
  EXPECT_EQ(ts, std::vector<float>(4, 6.f));
  EXPECT_EQ(inj->GraphExecDestroy(0, exec), CUDA_SUCCESS);
  EXPECT_EQ(graphs_.clones_alive, 0) << "destroying the executable graph frees the clone";
  EXPECT_TRUE(graphs_.execs.empty()) << "and the rewritten executable graph";
  const InjectorStats s = inj->stats();
  EXPECT_EQ(s.graphs_rewritten, 1u);
  EXPECT_EQ(s.graph_chains_fused, 1u);
  EXPECT_EQ(s.graph_chains_refused, 0u);
  EXPECT_NE(Injector::statsJson(s).find("\"chains_fused\": 1"), std::string::npos);
  EXPECT_EQ(s.graph_execs_unfused, 0u);
  EXPECT_NE(Injector::statsJson(s).find("\"execs_unfused\": 0"), std::string::npos);
}

TEST_F(GraphTest, ARewrittenGraphLaunchedOnSeveralStreamsRunsTheFusedKernelOnEach) {
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  FakeGraph app;
  node(app, kPlus1, t, z, {node(app, kTwice, x, t)});
  CUgraphExec exec = nullptr;
  instantiate(*inj, app, &exec);
  EXPECT_EQ(inj->GraphLaunch(0, exec, stream_), CUDA_SUCCESS);
  EXPECT_EQ(inj->GraphLaunch(0, exec, reinterpret_cast<CUstream>(0x6000)), CUDA_SUCCESS);
  EXPECT_EQ(inj->GraphLaunch(1, exec, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"fused_ok", "fused_ok", "fused_ok"}));
  EXPECT_EQ(zs, std::vector<float>(4, 7.f));
}

TEST_F(GraphTest, APredicateFailingForOneChainLeavesThatChainUnchanged) {
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts, zs, x2s, t2s, u2s, z2s;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  float *x2 = buffer(x2s, 1), *t2 = buffer(t2s, 0), *u2 = buffer(u2s, 5), *z2 = buffer(z2s, 0);
  FakeGraph app;
  node(app, kPlus1, t, z, {node(app, kTwice, x, t)});
  node(app, kPlus1, u2, z2, {node(app, kTwice, x2, t2)});  // plus1 reads another buffer than twice wrote
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, app, &exec), (std::vector<std::string>{"twice", "plus1", "fused_ok"}));
  inj->GraphLaunch(0, exec, stream_);
  EXPECT_EQ(zs, std::vector<float>(4, 7.f));
  EXPECT_EQ(t2s, std::vector<float>(4, 2.f));
  EXPECT_EQ(z2s, std::vector<float>(4, 6.f));
  const InjectorStats s = inj->stats();
  EXPECT_EQ(s.graph_chains_fused, 1u);
  EXPECT_EQ(s.graph_chains_refused, 1u);
  EXPECT_EQ(s.plans[0].predicate_failures[static_cast<int>(rewriter::Predicate::Kind::kArgEqual)], 1u);
}

TEST_F(GraphTest, ADependentOfAnEarlierKernelOfTheChainRunsAfterTheFusedNode) {
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  FakeGraph app;
  FakeNode* first = node(app, kTwice, x, t);
  node(app, kPlus1, t, z, {first});
  node(app, kOther, t, nullptr, {first});  // reads what twice wrote: t = -(2 * 3)
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, app, &exec), (std::vector<std::string>{"other", "fused_ok"}));
  inj->GraphLaunch(0, exec, stream_);
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"fused_ok", "other"}));
  EXPECT_EQ(zs, std::vector<float>(4, 7.f));
  EXPECT_EQ(ts, std::vector<float>(4, -6.f));
}

TEST_F(GraphTest, AnEdgeBetweenTheChainsKernelsBesidesItsLinkIsKeptInsideTheFusedNode) {
  // What stream capture makes when a kernel forks a second stream and is the stream order's predecessor of the
  // join too: an extra edge from an earlier kernel of the chain to a later one, and a node before both.
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  FakeGraph app;
  FakeNode* before = node(app, kOther, x, nullptr);  // x = -3
  FakeNode* first = node(app, kTwice, x, t, {before});
  node(app, kPlus1, t, z, {first, first, before});
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, app, &exec), (std::vector<std::string>{"other", "fused_ok"}));
  EXPECT_EQ(graphs_.execs.front()->edges.size(), 1u) << "the fused node depends on `before` once";
  inj->GraphLaunch(0, exec, stream_);
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"other", "fused_ok"}));
  EXPECT_EQ(zs, std::vector<float>(4, -5.f));
}

TEST_F(GraphTest, APathLeavingTheChainAndComingBackIntoItIsNotFused) {
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  FakeGraph app;
  FakeNode* first = node(app, kTwice, x, t);
  FakeNode* between = node(app, kOther, t, nullptr, {first});  // runs between twice and plus1: t = -6
  node(app, kPlus1, t, z, {first, between});
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, app, &exec), (std::vector<std::string>{"twice", "other", "plus1"}));
  inj->GraphLaunch(0, exec, stream_);
  EXPECT_EQ(zs, std::vector<float>(4, -5.f));
  EXPECT_EQ(inj->stats().graphs_rewritten, 0u);
  EXPECT_EQ(graphs_.clones_alive, 0);
}

TEST_F(GraphTest, AChainFusedBeforeIsOneNodeForThePathsOfTheNextChain) {
  // first = twice(x, t) -> plus1(t, z); second = twice(x2, t2) -> plus1(t2, z2); second's twice precedes first's
  // plus1 and first's twice precedes second's plus1. Once first is one node, second would have a path through it
  // back into itself (second.twice -> fused -> second.plus1): fusing it too would make a cycle.
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts, zs, x2s, t2s, z2s;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  float *x2 = buffer(x2s, 1), *t2 = buffer(t2s, 0), *z2 = buffer(z2s, 0);
  FakeGraph app;
  FakeNode* first = node(app, kTwice, x, t);
  FakeNode* second = node(app, kTwice, x2, t2);
  node(app, kPlus1, t, z, {first, second});
  node(app, kPlus1, t2, z2, {second, first});
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, app, &exec), (std::vector<std::string>{"twice", "plus1", "fused_ok"}));
  inj->GraphLaunch(0, exec, stream_);
  EXPECT_EQ(fake_.launches.size(), 3u);
  EXPECT_EQ(zs, std::vector<float>(4, 7.f));
  EXPECT_EQ(z2s, std::vector<float>(4, 3.f));
  EXPECT_EQ(inj->stats().graph_chains_fused, 1u);
}

TEST_F(GraphTest, AnEdgeAgainstThePlansOrderIsNotAChain) {
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  FakeGraph app;
  FakeNode* later = node(app, kPlus1, t, z);
  node(app, kTwice, x, t, {later});  // plus1 runs first here
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, app, &exec), (std::vector<std::string>{"plus1", "twice"}));
  EXPECT_EQ(inj->stats().graphs_rewritten, 0u);
}

TEST_F(GraphTest, APlanThatDropsStoresLeavesGraphsUntouched) {
  RuntimePlan plan = twicePlus1();
  plan.drops_stores = true;
  auto inj = make({plan}, rewriting());
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  FakeGraph app;
  node(app, kPlus1, t, z, {node(app, kTwice, x, t)});
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, app, &exec), (std::vector<std::string>{"twice", "plus1"}));
  EXPECT_EQ(inj->stats().graphs_rewritten, 0u);
  EXPECT_EQ(graphs_.clones_alive, 0);
}

TEST_F(GraphTest, TheFusedNodeTakesTheChainsIncomingAndOutgoingEdges) {
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts, zs, qs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0), *q = buffer(qs, 1);
  FakeGraph app;
  FakeNode* before = node(app, kOther, x, nullptr);  // x = -3
  FakeNode* last = node(app, kPlus1, t, z, {node(app, kTwice, x, t, {before})});
  node(app, kOther, z, nullptr, {last});  // z = -(2 * -3 + 1)
  node(app, kOther, q, nullptr, {last});
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, app, &exec), (std::vector<std::string>{"other", "other", "other", "fused_ok"}));
  inj->GraphLaunch(0, exec, stream_);
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"other", "fused_ok", "other", "other"}));
  EXPECT_EQ(zs, std::vector<float>(4, 5.f));
  EXPECT_EQ(qs, std::vector<float>(4, -1.f));
}

TEST_F(GraphTest, AChainInsideAChildGraphIsFused) {
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts, zs, qs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0), *q = buffer(qs, 1);
  FakeGraph app;
  FakeNode* first = node(app, kOther, q, nullptr);
  auto child = std::make_unique<FakeNode>();
  child->type = CU_GRAPH_NODE_TYPE_GRAPH;
  child->child = std::make_unique<FakeGraph>();
  child->owner = &app;
  node(*child->child, kPlus1, t, z, {node(*child->child, kTwice, x, t)});
  app.edges.emplace_back(first, child.get());
  FakeGraph* inner = child->child.get();
  app.nodes.push_back(std::move(child));
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, app, &exec), (std::vector<std::string>{"other", "fused_ok"}));
  EXPECT_EQ(inner->nodes.size(), 2u) << "the application's child graph is left as it was";
  inj->GraphLaunch(0, exec, stream_);
  EXPECT_EQ(zs, std::vector<float>(4, 7.f));
  EXPECT_EQ(inj->stats().graph_chains_fused, 1u);
}

TEST_F(GraphTest, ExecUpdateOfARewrittenGraphTakesTheNewGraphRewritten) {
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts, zs, x2s, t2s, z2s;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  float *x2 = buffer(x2s, 1), *t2 = buffer(t2s, 0), *z2 = buffer(z2s, 0);
  FakeGraph first, second;
  node(first, kPlus1, t, z, {node(first, kTwice, x, t)});
  node(second, kPlus1, t2, z2, {node(second, kTwice, x2, t2)});
  CUgraphExec exec = nullptr;
  instantiate(*inj, first, &exec);
  CUgraphExecUpdateResultInfo info{};
  EXPECT_EQ(inj->GraphExecUpdate(0, exec, handle(second), &info), CUDA_SUCCESS);
  inj->GraphLaunch(0, exec, stream_);
  EXPECT_EQ(fake_.launches, std::vector<std::string>{"fused_ok"});
  EXPECT_EQ(z2s, std::vector<float>(4, 3.f));
  EXPECT_EQ(zs, std::vector<float>(4, 0.f));
  EXPECT_EQ(inj->stats().graphs_rewritten, 2u);
  EXPECT_EQ(graphs_.clones_alive, 1) << "the first graph's clone is gone, the second's kept";
  EXPECT_EQ(inj->GraphExecDestroy(0, exec), CUDA_SUCCESS);
  EXPECT_EQ(graphs_.clones_alive, 0);
}

TEST_F(GraphTest, ExecUpdateThatFailsOnTheRewrittenGraphIsRetriedWithTheOriginal) {
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts, zs, us;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0), *u = buffer(us, 0);
  FakeGraph first, second;
  node(first, kPlus1, u, z, {node(first, kTwice, x, t)});  // not fused: plus1 reads u
  node(second, kPlus1, t, z, {node(second, kTwice, x, t)});
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, first, &exec), (std::vector<std::string>{"twice", "plus1"}));
  CUgraphExecUpdateResultInfo info{};
  EXPECT_EQ(inj->GraphExecUpdate(0, exec, handle(second), &info), CUDA_SUCCESS)
      << "the executable graph has the original topology: the second graph goes in unchanged";
  inj->GraphLaunch(0, exec, stream_);
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"twice", "plus1"}));
  EXPECT_EQ(zs, std::vector<float>(4, 7.f));
  EXPECT_EQ(graphs_.clones_alive, 0);
}

// ---- graphs: per-node exec setters on a rewritten graph ----

TEST_F(GraphTest, ASetterOnANodeNoChainReplacedGoesToTheRewrittenGraphWithTheClonesNode) {
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts, zs, x2s, t2s, t3s;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  float *x2 = buffer(x2s, 1), *t2 = buffer(t2s, 0), *t3 = buffer(t3s, 0);
  FakeGraph app;
  node(app, kPlus1, t, z, {node(app, kTwice, x, t)});
  FakeNode* alone = node(app, kTwice, x2, t2);  // no plus1 after it: left as it is
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, app, &exec), (std::vector<std::string>{"twice", "fused_ok"}));
  ASSERT_EQ(graphs_.execs.size(), 2u);
  const auto rewritten = reinterpret_cast<CUgraphExec>(graphs_.execs[0].get());
  ASSERT_EQ(graphs_.graphs.size(), 1u);
  CUgraphNode in_clone = nullptr;
  ASSERT_EQ(fGraphNodeFindInClone(&in_clone, reinterpret_cast<CUgraphNode>(alone), handle(*graphs_.graphs[0])),
            CUDA_SUCCESS);

  EXPECT_EQ(setB(*inj, exec, alone, t3), CUDA_SUCCESS);
  EXPECT_EQ(graphs_.set_calls, (std::vector<std::pair<CUgraphExec, CUgraphNode>>{
                                   {exec, reinterpret_cast<CUgraphNode>(alone)}, {rewritten, in_clone}}));
  inj->GraphLaunch(0, exec, stream_);
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"twice", "fused_ok"})) << "still the rewritten graph";
  EXPECT_EQ(zs, std::vector<float>(4, 7.f));
  EXPECT_EQ(t3s, std::vector<float>(4, 2.f)) << "the node writes where the setter said";
  EXPECT_EQ(t2s, std::vector<float>(4, 0.f));
}

TEST_F(GraphTest, ASetterOnAReplacedNodeMakesTheApplicationsGraphRunWithEverySetterSoFar) {
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts, zs, z2s, x2s, t2s, t3s;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0), *z2 = buffer(z2s, 0);
  float *x2 = buffer(x2s, 1), *t2 = buffer(t2s, 0), *t3 = buffer(t3s, 0);
  FakeGraph app;
  FakeNode* last = node(app, kPlus1, t, z, {node(app, kTwice, x, t)});
  FakeNode* alone = node(app, kTwice, x2, t2);
  CUgraphExec exec = nullptr;
  instantiate(*inj, app, &exec);
  EXPECT_EQ(setB(*inj, exec, alone, t3), CUDA_SUCCESS);
  inj->GraphLaunch(0, exec, stream_);
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"twice", "fused_ok"}));

  fake_.launches.clear();
  std::fill(t3s.begin(), t3s.end(), 0.f);
  EXPECT_EQ(setB(*inj, exec, last, z2), CUDA_SUCCESS) << "the driver's answer for the application's graph";
  inj->GraphLaunch(0, exec, stream_);
  inj->GraphLaunch(0, exec, stream_);
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"twice", "twice", "plus1", "twice", "twice", "plus1"}))
      << "the application's graph runs from now on";
  EXPECT_EQ(z2s, std::vector<float>(4, 7.f)) << "the replaced node's new parameters";
  EXPECT_EQ(t3s, std::vector<float>(4, 2.f)) << "the earlier setter holds in the application's graph too";
  EXPECT_EQ(graphs_.set_calls.size(), 3u) << "the replaced node has nothing to update in the rewritten graph";
  EXPECT_EQ(inj->stats().graph_execs_unfused, 1u);
  EXPECT_NE(Injector::statsSummary(inj->stats()).find("1 rewritten executable graphs back to the application's"),
            std::string::npos)
      << Injector::statsSummary(inj->stats());

  // Later setters reach the application's graph alone.
  EXPECT_EQ(setB(*inj, exec, alone, t2), CUDA_SUCCESS);
  EXPECT_EQ(graphs_.set_calls.size(), 4u);
  EXPECT_EQ(inj->GraphExecDestroy(0, exec), CUDA_SUCCESS);
  EXPECT_EQ(graphs_.clones_alive, 0);
  EXPECT_TRUE(graphs_.execs.empty());
}

TEST_F(GraphTest, AnIllegalSetterReturnsTheDriversErrorAndKeepsTheRewrittenGraph) {
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts, zs, x2s, t2s;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  float *x2 = buffer(x2s, 1), *t2 = buffer(t2s, 0);
  FakeGraph app, other;
  FakeNode* last = node(app, kPlus1, t, z, {node(app, kTwice, x, t)});
  FakeNode* elsewhere = node(other, kTwice, x2, t2);
  CUgraphExec exec = nullptr;
  instantiate(*inj, app, &exec);
  CUDA_KERNEL_NODE_PARAMS p{};
  fGraphKernelNodeGetParams(reinterpret_cast<CUgraphNode>(last), &p);
  p.func = kTwice;  // a kernel node's function cannot change
  EXPECT_EQ(inj->GraphExecKernelNodeSetParams(0, exec, reinterpret_cast<CUgraphNode>(last), &p),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(setB(*inj, exec, elsewhere, t), CUDA_ERROR_INVALID_VALUE) << "a node of another graph";
  EXPECT_EQ(inj->GraphExecKernelNodeSetParams(0, exec, reinterpret_cast<CUgraphNode>(last), nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(graphs_.set_calls.size(), 3u) << "refused setters go no further";
  inj->GraphLaunch(0, exec, stream_);
  EXPECT_EQ(fake_.launches, std::vector<std::string>{"fused_ok"}) << "nothing changed: the rewritten graph runs";
  EXPECT_EQ(zs, std::vector<float>(4, 7.f));
}

TEST_F(GraphTest, DisablingANodeNoChainReplacedDisablesItInTheRewrittenGraph) {
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts, zs, x2s, t2s;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  float *x2 = buffer(x2s, 1), *t2 = buffer(t2s, 0);
  FakeGraph app;
  FakeNode* last = node(app, kPlus1, t, z, {node(app, kTwice, x, t)});
  FakeNode* alone = node(app, kTwice, x2, t2);
  CUgraphExec exec = nullptr;
  instantiate(*inj, app, &exec);
  EXPECT_EQ(inj->GraphNodeSetEnabled(0, exec, reinterpret_cast<CUgraphNode>(alone), 0), CUDA_SUCCESS);
  inj->GraphLaunch(0, exec, stream_);
  EXPECT_EQ(fake_.launches, std::vector<std::string>{"fused_ok"});
  EXPECT_EQ(t2s, std::vector<float>(4, 0.f));
  fake_.launches.clear();
  EXPECT_EQ(inj->GraphNodeSetEnabled(0, exec, reinterpret_cast<CUgraphNode>(last), 0), CUDA_SUCCESS);
  inj->GraphLaunch(0, exec, stream_);
  EXPECT_EQ(fake_.launches, std::vector<std::string>{"twice"}) << "a chain's node disabled: the application's graph";
}

TEST_F(GraphTest, AnExecUpdateAfterASetterOnAReplacedNodeFusesTheNewGraphAgain) {
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts, zs, z2s;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0), *z2 = buffer(z2s, 0);
  FakeGraph first, second;
  FakeNode* last = node(first, kPlus1, t, z, {node(first, kTwice, x, t)});
  node(second, kPlus1, t, z2, {node(second, kTwice, x, t)});
  CUgraphExec exec = nullptr;
  instantiate(*inj, first, &exec);
  EXPECT_EQ(setB(*inj, exec, last, z2), CUDA_SUCCESS);
  inj->GraphLaunch(0, exec, stream_);
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"twice", "plus1"}));
  fake_.launches.clear();
  CUgraphExecUpdateResultInfo info{};
  EXPECT_EQ(inj->GraphExecUpdate(0, exec, handle(second), &info), CUDA_SUCCESS);
  inj->GraphLaunch(0, exec, stream_);
  EXPECT_EQ(fake_.launches, std::vector<std::string>{"fused_ok"}) << "the updated graph is fused again";
  EXPECT_EQ(z2s, std::vector<float>(4, 7.f));
  EXPECT_EQ(inj->GraphExecDestroy(0, exec), CUDA_SUCCESS);
  EXPECT_EQ(graphs_.clones_alive, 0);
}

TEST_F(GraphTest, ARewrittenCloneTheDriverRefusesLeavesTheApplicationsGraphAlone) {
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  FakeGraph app;
  node(app, kPlus1, t, z, {node(app, kTwice, x, t)});
  CUgraphExec exec = nullptr;
  graphs_.refuse_fused = CUDA_ERROR_NOT_SUPPORTED;
  EXPECT_EQ(instantiate(*inj, app, &exec), (std::vector<std::string>{"twice", "plus1"}));
  EXPECT_EQ(graphs_.execs.size(), 1u);
  EXPECT_EQ(graphs_.clones_alive, 0);
  EXPECT_EQ(inj->stats().graphs_rewritten, 0u);

  // The application's own instantiation failing: its error, and nothing of kfuse's left behind.
  graphs_.refuse_fused = CUDA_SUCCESS;
  graphs_.refuse_original = CUDA_ERROR_OUT_OF_MEMORY;
  CUgraphExec second = nullptr;
  EXPECT_EQ(inj->GraphInstantiateWithFlags(0, &second, handle(app), 0), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(graphs_.execs.size(), 1u) << "the rewritten exec made first is destroyed";
  EXPECT_EQ(graphs_.clones_alive, 0);
  EXPECT_EQ(inj->stats().graphs_rewritten, 0u);
}

TEST_F(GraphTest, FourThreadsSetAndLaunchTheirOwnRewrittenGraphs) {
  auto inj = make({twicePlus1()}, rewriting());
  constexpr int kThreads = 4;
  struct Work {
    std::vector<float> xs, ts, zs, z2s, x2s, t2s, t3s;
    float *x, *t, *z, *z2, *x2, *t2, *t3;
    FakeGraph app;
    FakeNode *last, *alone;
    bool ok = true;
  };
  std::vector<Work> work(kThreads);
  for (Work& w : work) {
    w.x = buffer(w.xs, 3), w.t = buffer(w.ts, 0), w.z = buffer(w.zs, 0), w.z2 = buffer(w.z2s, 0);
    w.x2 = buffer(w.x2s, 1), w.t2 = buffer(w.t2s, 0), w.t3 = buffer(w.t3s, 0);
    w.last = node(w.app, kPlus1, w.t, w.z, {node(w.app, kTwice, w.x, w.t)});
    w.alone = node(w.app, kTwice, w.x2, w.t2);
  }
  std::vector<std::thread> threads;
  for (Work& w : work) {
    threads.emplace_back([&] {
      for (int round = 0; round < 20; ++round) {
        CUgraphExec exec = nullptr;
        w.ok = w.ok && inj->GraphInstantiateWithFlags(0, &exec, handle(w.app), 0) == CUDA_SUCCESS;
        w.ok = w.ok && setB(*inj, exec, w.alone, w.t3) == CUDA_SUCCESS;  // mirrored
        w.ok = w.ok && inj->GraphLaunch(0, exec, stream_) == CUDA_SUCCESS;
        w.ok = w.ok && setB(*inj, exec, w.last, w.z2) == CUDA_SUCCESS;  // the application's exec from now on
        w.ok = w.ok && inj->GraphLaunch(0, exec, stream_) == CUDA_SUCCESS;
        w.ok = w.ok && inj->GraphExecDestroy(0, exec) == CUDA_SUCCESS;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (const Work& w : work) {
    EXPECT_TRUE(w.ok);
    EXPECT_EQ(w.zs, std::vector<float>(4, 7.f)) << "the fused node's launches";
    EXPECT_EQ(w.z2s, std::vector<float>(4, 7.f)) << "the application's exec's, with the new parameter";
    EXPECT_EQ(w.t3s, std::vector<float>(4, 2.f));
    EXPECT_EQ(w.t2s, std::vector<float>(4, 0.f));
  }
  EXPECT_EQ(graphs_.clones_alive, 0);
  EXPECT_TRUE(graphs_.execs.empty());
  EXPECT_EQ(inj->stats().graphs_rewritten, uint64_t{kThreads} * 20);
}

TEST_F(GraphTest, AnExecWhoseGraphHasNothingToFuseIsTheDriversAlone) {
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts;
  float *x = buffer(xs, 3), *t = buffer(ts, 0);
  FakeGraph app;
  FakeNode* alone = node(app, kTwice, x, t);
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, app, &exec), std::vector<std::string>{"twice"});
  EXPECT_EQ(graphs_.execs.size(), 1u);
  EXPECT_EQ(setB(*inj, exec, alone, x), CUDA_SUCCESS);
  EXPECT_EQ(graphs_.set_calls.size(), 1u);
  EXPECT_EQ(inj->GraphExecDestroy(0, exec), CUDA_SUCCESS);
  EXPECT_EQ(inj->GraphExecDestroy(0, exec), CUDA_ERROR_INVALID_VALUE) << "the driver's answer";
}

TEST_F(GraphTest, GraphsWhoseNodesTheDeviceOrTheirAllocationsTieToOneExecAreLeftUntouched) {
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  FakeGraph with_alloc, updatable;
  node(with_alloc, kPlus1, t, z, {node(with_alloc, kTwice, x, t)});
  auto alloc = std::make_unique<FakeNode>();
  alloc->type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  alloc->owner = &with_alloc;
  with_alloc.nodes.push_back(std::move(alloc));
  node(updatable, kPlus1, t, z, {node(updatable, kTwice, x, t)});
  node(updatable, kTwice, x, t)->device_updatable = true;
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, with_alloc, &exec), (std::vector<std::string>{"twice", "plus1"}));
  EXPECT_EQ(instantiate(*inj, updatable, &exec), (std::vector<std::string>{"twice", "plus1", "twice"}));
  EXPECT_EQ(graphs_.execs.size(), 2u) << "the applications' execs alone";
  EXPECT_EQ(graphs_.clones_alive, 0);
  EXPECT_EQ(inj->stats().graphs_rewritten, 0u);
}

TEST_F(GraphTest, ADisabledPlanLeavesGraphsUntouched) {
  fake_.fail_module_load = true;
  auto inj = make({twicePlus1()}, rewriting());
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  FakeGraph app;
  node(app, kPlus1, t, z, {node(app, kTwice, x, t)});
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, app, &exec), (std::vector<std::string>{"twice", "plus1"}));
  EXPECT_EQ(instantiate(*inj, app, &exec), (std::vector<std::string>{"twice", "plus1"}));
  const InjectorStats s = inj->stats();
  EXPECT_EQ(s.graph_chains_refused, 1u) << "the second instantiate finds the plan disabled";
  EXPECT_FALSE(s.plans[0].disabled.empty());
  EXPECT_EQ(graphs_.clones_alive, 0);
}

TEST_F(GraphTest, GraphsAreRewrittenByDefaultAndLeftUntouchedWhenTurnedOff) {
  {
    auto inj = make({twicePlus1()});
    std::vector<float> xs, ts, zs;
    float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
    FakeGraph app;
    node(app, kPlus1, t, z, {node(app, kTwice, x, t)});
    CUgraphExec exec = nullptr;
    EXPECT_EQ(instantiate(*inj, app, &exec), std::vector<std::string>{"fused_ok"});
    EXPECT_EQ(inj->GraphExecDestroy(0, exec), CUDA_SUCCESS);
  }
  InjectorOptions off;
  off.rewrite_graphs = false;  // --no-graphs
  auto inj = make({twicePlus1()}, off);
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  FakeGraph app;
  node(app, kPlus1, t, z, {node(app, kTwice, x, t)});
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, app, &exec), (std::vector<std::string>{"twice", "plus1"}));
  EXPECT_EQ(inj->stats().graph_chains_fused, 0u);
  EXPECT_EQ(graphs_.clones_alive, 0);
}

// A horizontal plan: its kernels on separate branches of a graph (no path between them) become one node, after
// every predecessor of either and before every dependent of either.
TEST_F(GraphTest, AHorizontalPlansKernelsOnSeparateBranchesBecomeOneNode) {
  auto inj = make({twiceBesidePlus1()}, rewriting());
  std::vector<float> xs, ys, us, zs, qs;
  float *x = buffer(xs, 3), *y = buffer(ys, 0), *u = buffer(us, 5), *z = buffer(zs, 0), *q = buffer(qs, 1);
  FakeGraph app;
  FakeNode* fork = node(app, kOther, x, nullptr);  // x = -3
  FakeNode* a = node(app, kTwice, x, y, {fork});
  FakeNode* b = node(app, kPlus1, u, z, {fork});
  node(app, kOther, q, nullptr, {a, b});  // the join
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, app, &exec), (std::vector<std::string>{"other", "other", "side_by_side"}));
  EXPECT_EQ(inj->GraphLaunch(0, exec, stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"other", "side_by_side", "other"}))
      << "after the fork, before the join";
  EXPECT_EQ(ys, std::vector<float>(4, -6.f)) << "twice ran after the fork";
  EXPECT_EQ(zs, std::vector<float>(4, 6.f));
  EXPECT_EQ(inj->stats().graph_chains_fused, 1u);
}

TEST_F(GraphTest, AHorizontalPlanLeavesKernelsAPathLinksUnchanged) {
  auto inj = make({twiceBesidePlus1()}, rewriting());
  std::vector<float> xs, ys, us, zs;
  float *x = buffer(xs, 3), *y = buffer(ys, 0), *u = buffer(us, 5), *z = buffer(zs, 0);
  // Directly, and through a node between them.
  FakeGraph direct;
  node(direct, kPlus1, u, z, {node(direct, kTwice, x, y)});
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, direct, &exec), (std::vector<std::string>{"twice", "plus1"}));
  FakeGraph through;
  node(through, kPlus1, u, z, {node(through, kOther, y, nullptr, {node(through, kTwice, x, y)})});
  EXPECT_EQ(instantiate(*inj, through, &exec), (std::vector<std::string>{"twice", "other", "plus1"}));
  // The other way round (plus1 first): the path runs from the plan's second kernel to its first.
  FakeGraph back;
  node(back, kTwice, x, y, {node(back, kPlus1, u, z)});
  EXPECT_EQ(instantiate(*inj, back, &exec), (std::vector<std::string>{"plus1", "twice"}));
  EXPECT_EQ(inj->stats().graph_chains_fused, 0u);
}

TEST_F(GraphTest, AHorizontalPlanOnBranchesWhosePredicateFailsIsLeftUnchanged) {
  auto inj = make({twiceBesidePlus1()}, rewriting());
  std::vector<float> xs, ys, zs;
  float *x = buffer(xs, 3), *y = buffer(ys, 0), *z = buffer(zs, 0);
  FakeGraph app;
  node(app, kTwice, x, y);
  node(app, kPlus1, y, z);  // reads what twice writes: independent in the graph, but not in memory
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, app, &exec), (std::vector<std::string>{"twice", "plus1"}));
  EXPECT_EQ(inj->stats().graph_chains_refused, 1u);
}

// --validate on graphs: before each of the first N launches of a rewritten exec, every fused chain is checked
// against its nodes' kernels on the launch stream, on the buffers as they are then, and the buffers are put back.
TEST_F(GraphTest, ValidateChecksEachFusedChainBeforeTheFirstLaunchesAndLeavesTheBuffersAsTheyWere) {
  InjectorOptions o = rewriting();
  o.validate = 1;
  o.time_runs = 0;  // no timing runs (ValidateTimesTheFusedNodeAndRunsTheApplicationsGraphWhenItIsSlower)
  auto inj = make({twicePlus1()}, o);
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  FakeGraph app;
  node(app, kPlus1, t, z, {node(app, kTwice, x, t)});
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, app, &exec), std::vector<std::string>{"fused_ok"});
  EXPECT_EQ(inj->GraphLaunch(0, exec, stream_), CUDA_SUCCESS);
  // The check (originals, then the fused kernel, each from the same inputs), then the rewritten graph.
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"twice", "plus1", "fused_ok", "fused_ok"}));
  EXPECT_EQ(zs, std::vector<float>(4, 7.f));
  EXPECT_EQ(ts, std::vector<float>(4, 6.f));
  InjectorStats s = inj->stats();
  EXPECT_EQ(s.plans[0].validations_passed, 1u);
  EXPECT_EQ(s.plans[0].occurrences_fused, 0u) << "the check's fused launch is no occurrence";
  EXPECT_TRUE(s.plans[0].disabled.empty()) << s.plans[0].disabled;
  // Checked once (--validate=1): the next launch runs the rewritten graph alone.
  EXPECT_EQ(inj->GraphLaunch(0, exec, stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.launches.size(), 5u);
  EXPECT_EQ(fake_.launches.back(), "fused_ok");
  EXPECT_EQ(inj->stats().plans[0].validations_passed, 1u);
}

// On a GPU the check also times the fused kernel against the chain's kernels: measured slower, the plan is disabled
// and the application's graph runs.
TEST_F(GraphTest, ValidateTimesTheFusedNodeAndRunsTheApplicationsGraphWhenItIsSlower) {
  fake_.cost_us = {{"twice", 7}, {"plus1", 7}, {"fused_ok", 42.6}};
  InjectorOptions o = rewriting();
  o.validate = 1;
  auto inj = make({twicePlus1()}, o);
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  FakeGraph app;
  node(app, kPlus1, t, z, {node(app, kTwice, x, t)});
  CUgraphExec exec = nullptr;
  instantiate(*inj, app, &exec);
  EXPECT_EQ(inj->GraphLaunch(0, exec, stream_), CUDA_SUCCESS);
  const InjectorStats s = inj->stats();
  EXPECT_EQ(s.plans[0].validations_passed, 1u);
  EXPECT_EQ(s.plans[0].timed_originals_ns, 14000u);
  EXPECT_EQ(s.plans[0].timed_fused_ns, 42600u);
  EXPECT_NE(s.plans[0].disabled.find("measured no faster"), std::string::npos) << s.plans[0].disabled;
  EXPECT_EQ(fake_.launches.back(), "plus1") << "the application's graph ran";
  EXPECT_EQ(zs, std::vector<float>(4, 7.f));
  EXPECT_EQ(ts, std::vector<float>(4, 6.f));
}

TEST_F(GraphTest, ValidateCheckRestoresInputsTheChainOverwrites) {
  // In place: twice(x -> x), plus1(x -> z). The check must leave x as the graph expects to find it.
  InjectorOptions o = rewriting();
  o.validate = 1;
  auto inj = make({twicePlus1()}, o);
  std::vector<float> xs, zs;
  float *x = buffer(xs, 3), *z = buffer(zs, 0);
  FakeGraph app;
  node(app, kPlus1, x, z, {node(app, kTwice, x, x)});
  CUgraphExec exec = nullptr;
  instantiate(*inj, app, &exec);
  EXPECT_EQ(inj->GraphLaunch(0, exec, stream_), CUDA_SUCCESS);
  EXPECT_EQ(xs, std::vector<float>(4, 6.f)) << "doubled once, by the graph: the check put x back";
  EXPECT_EQ(zs, std::vector<float>(4, 7.f));
}

TEST_F(GraphTest, AValidationFailureMakesTheApplicationsGraphRunUnchanged) {
  InjectorOptions o = rewriting();
  o.validate = 2;
  auto inj = make({twicePlus1("fused_bad")}, o);
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  FakeGraph app;
  node(app, kPlus1, t, z, {node(app, kTwice, x, t)});
  CUgraphExec exec = nullptr;
  EXPECT_EQ(instantiate(*inj, app, &exec), std::vector<std::string>{"fused_bad"});
  EXPECT_EQ(inj->GraphLaunch(0, exec, stream_), CUDA_SUCCESS);
  // The check's runs, then the application's own graph.
  EXPECT_EQ(fake_.launches, (std::vector<std::string>{"twice", "plus1", "fused_bad", "twice", "plus1"}));
  EXPECT_EQ(zs, std::vector<float>(4, 7.f)) << "the application's graph computed these";
  EXPECT_EQ(ts, std::vector<float>(4, 6.f));
  const InjectorStats s = inj->stats();
  EXPECT_EQ(s.plans[0].validations_failed, 1u);
  EXPECT_NE(s.plans[0].disabled.find("validation failed"), std::string::npos) << s.plans[0].disabled;
  EXPECT_EQ(s.graph_execs_unfused, 1u);
  // From then on, with no more checks, the application's graph.
  EXPECT_EQ(inj->GraphLaunch(0, exec, stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.launches.size(), 7u);
  EXPECT_EQ(fake_.launches.back(), "plus1");
}

TEST_F(GraphTest, ValidateChecksAChainInsideAChildGraph) {
  InjectorOptions o = rewriting();
  o.validate = 1;
  auto inj = make({twicePlus1("fused_bad")}, o);
  std::vector<float> xs, ts, zs;
  float *x = buffer(xs, 3), *t = buffer(ts, 0), *z = buffer(zs, 0);
  FakeGraph app;
  auto child = std::make_unique<FakeNode>();
  child->type = CU_GRAPH_NODE_TYPE_GRAPH;
  child->child = std::make_unique<FakeGraph>();
  child->owner = &app;
  node(*child->child, kPlus1, t, z, {node(*child->child, kTwice, x, t)});
  app.nodes.push_back(std::move(child));
  CUgraphExec exec = nullptr;
  instantiate(*inj, app, &exec);
  EXPECT_EQ(inj->GraphLaunch(0, exec, stream_), CUDA_SUCCESS);
  EXPECT_EQ(inj->stats().plans[0].validations_failed, 1u);
  EXPECT_EQ(zs, std::vector<float>(4, 7.f));
  EXPECT_EQ(fake_.launches.back(), "plus1") << "the application's graph ran";
}

}  // namespace
}  // namespace kfuse::inject
