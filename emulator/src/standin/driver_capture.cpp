// Stream capture: cuStreamBeginCapture[ToGraph] ... cuStreamEndCapture turn the work issued to a stream (and to
// the streams that join it through events) into graph nodes instead of running it, with the capture rules a
// driver enforces (driver_graph.h).
#include <cuda.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "driver_graph.h"
#include "driver_state.h"

using kfuse::standin::graphMutex;

namespace kfuse::standin {

std::atomic<int> g_active_captures{0};

namespace {

struct Capture {
  unsigned long long id = 0;
  std::unique_ptr<CUgraph_st> owned;  // the graph captured into, unless the caller gave one (...ToGraph)
  CUgraph_st* graph = nullptr;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::thread::id thread;  // the thread that began it
  CUstream origin = nullptr;
  bool invalidated = false;
  std::vector<CUstream> streams;  // the origin and the streams that joined
};
struct StreamCapture {
  Capture* capture = nullptr;
  std::vector<CUgraphNode_st*> deps;       // what the next node captured on the stream depends on
  std::vector<CUgraphEdgeData> edge_data;  // handed out by cuStreamGetCaptureInfo (default edges)
};
struct EventCapture {
  Capture* capture = nullptr;
  std::vector<CUgraphNode_st*> deps;  // the recording stream's dependencies when it was recorded
};
struct CaptureState {
  std::vector<std::unique_ptr<Capture>> captures;
  std::unordered_map<CUstream, StreamCapture> streams;
  std::unordered_map<CUevent, EventCapture> events;
};
CaptureState& state() {  // guarded by graphMutex()
  static auto* s = new CaptureState();
  return *s;
}

thread_local CUstreamCaptureMode tl_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

bool isLegacy(CUstream s) {
  return s == nullptr || s == CU_STREAM_LEGACY;
}
bool validStream(CUstream s) {
  if (isLegacy(s) || s == CU_STREAM_PER_THREAD) return true;
  std::lock_guard lock(st().mu);
  return st().streams.count(s) != 0;
}

// The legacy stream synchronises with blocking streams: while one of them captures, using it is an error that
// invalidates those captures (`invalidate` false: a query, which leaves them alone).
bool blockedByCapture(bool invalidate) {
  bool blocked = false;
  for (auto& [s, sc] : state().streams)
    if (!(s->flags & CU_STREAM_NON_BLOCKING)) {
      blocked = true;
      if (invalidate) sc.capture->invalidated = true;
    }
  return blocked;
}

void endCapture(Capture* c) {
  auto& cs = state();
  for (CUstream s : c->streams) cs.streams.erase(s);
  std::erase_if(cs.events, [&](const auto& e) { return e.second.capture == c; });
  std::erase_if(cs.captures, [&](const auto& p) { return p.get() == c; });
  --g_active_captures;
}

// Every node that `roots` depend on, directly or not, and the roots themselves.
std::unordered_set<const CUgraphNode_st*> ancestors(const std::vector<CUgraphNode_st*>& roots) {
  std::unordered_set<const CUgraphNode_st*> seen;
  std::vector<const CUgraphNode_st*> todo(roots.begin(), roots.end());
  while (!todo.empty()) {
    const CUgraphNode_st* n = todo.back();
    todo.pop_back();
    if (!seen.insert(n).second) continue;
    for (const CUgraphNode_st* d : n->deps) todo.push_back(d);
  }
  return seen;
}

void addDeps(std::vector<CUgraphNode_st*>& to, const std::vector<CUgraphNode_st*>& from) {
  for (CUgraphNode_st* n : from)
    if (std::find(to.begin(), to.end(), n) == to.end()) to.push_back(n);
}

CUresult beginCapture(CUstream s, CUgraph graph, const CUgraphNode* deps, const CUgraphEdgeData* data, size_t n,
                      CUstreamCaptureMode mode) {
  KF_REQUIRE_CTX();
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  if (isLegacy(s)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // the legacy stream cannot capture
  if (s == CU_STREAM_PER_THREAD) return notSupported("stream capture on the per-thread default stream");
  if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
  if (n && !deps) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; data && i < n; ++i)
    if (data[i].from_port || data[i].to_port || data[i].type)
      return notSupported("capture dependencies with edge data");
  std::lock_guard lock(graphMutex());
  auto& cs = state();
  if (cs.streams.count(s)) return CUDA_ERROR_ILLEGAL_STATE;
  auto c = std::make_unique<Capture>();
  if (graph) {
    if (!liveGraph(graph)) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n; ++i)
      if (!liveNode(deps[i]) || deps[i]->graph != graph) return CUDA_ERROR_INVALID_VALUE;
    c->graph = graph;
  } else {
    c->owned = newGraph();
    c->graph = c->owned.get();
  }
  c->id = st().next_id++;
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  c->origin = s;
  c->streams.push_back(s);
  cs.streams[s] = StreamCapture{c.get(), std::vector<CUgraphNode_st*>(deps, deps + n), {}};
  cs.captures.push_back(std::move(c));
  ++g_active_captures;
  return CUDA_SUCCESS;
}

}  // namespace

CUresult captureNode(CUstream s, std::unique_ptr<CUgraphNode_st> node, bool* taken) {
  *taken = false;
  std::lock_guard lock(graphMutex());
  auto& cs = state();
  if (isLegacy(s)) return blockedByCapture(/*invalidate=*/true) ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT : CUDA_SUCCESS;
  auto it = cs.streams.find(s);
  if (it == cs.streams.end()) return CUDA_SUCCESS;
  *taken = true;
  StreamCapture& sc = it->second;
  if (sc.capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  CUgraphNode_st* n = addNode(sc.capture->graph, std::move(node), sc.deps);
  sc.deps.assign(1, n);
  return CUDA_SUCCESS;
}

CUresult refuseOnCapturingStream(CUstream s) {
  if (!capturesActive()) return CUDA_SUCCESS;
  std::lock_guard lock(graphMutex());
  if (isLegacy(s)) return blockedByCapture(/*invalidate=*/true) ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT : CUDA_SUCCESS;
  auto it = state().streams.find(s);
  if (it == state().streams.end()) return CUDA_SUCCESS;
  it->second.capture->invalidated = true;
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

CUresult checkUnsafeCall() {
  if (!capturesActive() || tl_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
  std::lock_guard lock(graphMutex());
  const auto me = std::this_thread::get_id();
  bool prohibited = false;
  for (auto& c : state().captures) {
    bool mine = c->thread == me && c->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
    bool global =
        tl_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && c->thread != me && c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
    if (mine || global) c->invalidated = prohibited = true;
  }
  return prohibited ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult captureEventRecord(CUevent e, CUstream s, bool* taken) {
  *taken = false;
  std::lock_guard lock(graphMutex());
  auto& cs = state();
  if (isLegacy(s) && blockedByCapture(/*invalidate=*/true)) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  auto it = cs.streams.find(s);
  if (it == cs.streams.end()) {
    cs.events.erase(e);  // recorded outside any capture from now on
    return CUDA_SUCCESS;
  }
  *taken = true;
  if (it->second.capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  cs.events[e] = EventCapture{it->second.capture, it->second.deps};
  return CUDA_SUCCESS;
}

CUresult captureStreamWaitEvent(CUstream s, CUevent e, unsigned flags, bool* taken) {
  *taken = false;
  std::lock_guard lock(graphMutex());
  auto& cs = state();
  if (isLegacy(s) && blockedByCapture(/*invalidate=*/true)) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  auto ev = cs.events.find(e);
  auto it = cs.streams.find(s);
  if (it == cs.streams.end()) {
    if (ev == cs.events.end()) return CUDA_SUCCESS;  // an ordinary wait
    // Waiting on an event recorded in a capture: the stream joins that capture.
    if (s == CU_STREAM_PER_THREAD) return notSupported("stream capture on the per-thread default stream");
    *taken = true;
    Capture* c = ev->second.capture;
    if (c->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    c->streams.push_back(s);
    cs.streams[s] = StreamCapture{c, ev->second.deps, {}};
    return CUDA_SUCCESS;
  }
  *taken = true;
  StreamCapture& sc = it->second;
  if (sc.capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (flags & CU_EVENT_WAIT_EXTERNAL) {
    CUgraphNode_st* n = addNode(sc.capture->graph, makeEventNode(CU_GRAPH_NODE_TYPE_WAIT_EVENT, e), sc.deps);
    sc.deps.assign(1, n);
    return CUDA_SUCCESS;
  }
  if (ev == cs.events.end()) {
    if (!e->recorded) return CUDA_SUCCESS;  // never recorded: nothing to wait for
    sc.capture->invalidated = true;         // a dependency on work outside the capture
    return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
  }
  if (ev->second.capture != sc.capture) {
    sc.capture->invalidated = ev->second.capture->invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_MERGE;
  }
  addDeps(sc.deps, ev->second.deps);
  return CUDA_SUCCESS;
}

CUresult checkCapturedEvent(CUevent e) {
  if (!capturesActive()) return CUDA_SUCCESS;
  std::lock_guard lock(graphMutex());
  return state().events.count(e) ? CUDA_ERROR_CAPTURED_EVENT : CUDA_SUCCESS;
}

void forgetStream(CUstream s) {
  if (!capturesActive()) return;
  std::lock_guard lock(graphMutex());
  auto& cs = state();
  auto it = cs.streams.find(s);
  if (it == cs.streams.end()) return;
  Capture* c = it->second.capture;
  if (c->origin == s) {
    endCapture(c);  // nothing can end it any more
    return;
  }
  std::erase(c->streams, s);
  cs.streams.erase(it);
}

void forgetEvent(CUevent e) {
  if (!capturesActive()) return;
  std::lock_guard lock(graphMutex());
  state().events.erase(e);
}

}  // namespace kfuse::standin

using namespace kfuse::standin;  // NOLINT(google-build-using-namespace): the entry points below use most of it

namespace {

// Entry points of older ABI versions, handed out by cuGetProcAddress to the versions that ask for them.
CUresult CUDAAPI beginCaptureV1(CUstream s) {
  return beginCapture(s, nullptr, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL);
}
CUresult CUDAAPI captureInfoV1(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id) {
  return cuStreamGetCaptureInfo_v3(s, status, id, nullptr, nullptr, nullptr, nullptr);
}
CUresult CUDAAPI captureInfoV2(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                               const CUgraphNode** deps, size_t* n) {
  return cuStreamGetCaptureInfo_v3(s, status, id, graph, deps, nullptr, n);
}
CUresult CUDAAPI updateCaptureDependenciesV1(CUstream s, CUgraphNode* deps, size_t n, unsigned flags) {
  return cuStreamUpdateCaptureDependencies_v2(s, deps, nullptr, n, flags);
}

}  // namespace

namespace kfuse::standin {

void* legacyCaptureFunction(const std::string& name, int version) {
  if (name == "cuStreamBeginCapture" && version < 10010) return reinterpret_cast<void*>(&beginCaptureV1);
  if (name == "cuStreamGetCaptureInfo" && version < 11030) return reinterpret_cast<void*>(&captureInfoV1);
  if (name == "cuStreamGetCaptureInfo" && version < 12030) return reinterpret_cast<void*>(&captureInfoV2);
  if (name == "cuStreamUpdateCaptureDependencies" && version < 12030)
    return reinterpret_cast<void*>(&updateCaptureDependenciesV1);
  return nullptr;
}

}  // namespace kfuse::standin

extern "C" {

CUresult CUDAAPI cuStreamBeginCapture(CUstream s, CUstreamCaptureMode mode) {
  return beginCapture(s, nullptr, nullptr, nullptr, 0, mode);
}
CUresult CUDAAPI cuStreamBeginCaptureToGraph(CUstream s, CUgraph graph, const CUgraphNode* deps,
                                             const CUgraphEdgeData* data, size_t n, CUstreamCaptureMode mode) {
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  return beginCapture(s, graph, deps, data, n, mode);
}

CUresult CUDAAPI cuStreamEndCapture(CUstream s, CUgraph* graph) {
  KF_REQUIRE_CTX();
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard lock(graphMutex());
  auto& cs = state();
  auto it = cs.streams.find(s);
  if (it == cs.streams.end()) return CUDA_ERROR_ILLEGAL_STATE;  // not capturing
  Capture* c = it->second.capture;
  if (c->origin != s) {  // a stream that joined the capture cannot end it
    c->invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  }
  if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && c->thread != std::this_thread::get_id())
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  // Every stream that joined must have been joined back into the origin stream.
  CUresult result = c->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS;
  if (result == CUDA_SUCCESS) {
    auto joined = ancestors(it->second.deps);
    for (CUstream other : c->streams) {
      if (other == s) continue;
      for (const CUgraphNode_st* n : cs.streams[other].deps)
        if (!joined.count(n)) result = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
    }
  }
  std::unique_ptr<CUgraph_st> owned = std::move(c->owned);
  *graph = result == CUDA_SUCCESS ? c->graph : nullptr;
  endCapture(c);
  if (result == CUDA_SUCCESS) owned.release();  // now the caller's (or it was the caller's all along)
  return result;
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus* status) {
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
  *status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (!capturesActive()) return CUDA_SUCCESS;
  std::lock_guard lock(graphMutex());
  if (isLegacy(s)) return blockedByCapture(/*invalidate=*/false) ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT : CUDA_SUCCESS;
  auto it = state().streams.find(s);
  if (it != state().streams.end())
    *status = it->second.capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                                        const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* n) {
  if (!status || (edges && !deps)) return CUDA_ERROR_INVALID_VALUE;
  if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
  *status = CU_STREAM_CAPTURE_STATUS_NONE;
  std::lock_guard lock(graphMutex());
  if (isLegacy(s) && blockedByCapture(/*invalidate=*/false)) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  auto it = state().streams.find(s);
  if (it == state().streams.end()) return CUDA_SUCCESS;
  StreamCapture& sc = it->second;
  *status = sc.capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  if (id) *id = sc.capture->id;
  if (graph) *graph = sc.capture->graph;
  if (deps) *deps = sc.deps.data();
  sc.edge_data.assign(sc.deps.size(), CUgraphEdgeData{});
  if (edges) *edges = sc.edge_data.data();
  if (n) *n = sc.deps.size();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamUpdateCaptureDependencies(CUstream s, CUgraphNode* deps, const CUgraphEdgeData* data, size_t n,
                                                   unsigned int flags) {
  if ((n && !deps) || (flags != CU_STREAM_ADD_CAPTURE_DEPENDENCIES && flags != CU_STREAM_SET_CAPTURE_DEPENDENCIES))
    return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; data && i < n; ++i)
    if (data[i].from_port || data[i].to_port || data[i].type)
      return notSupported("capture dependencies with edge data");
  std::lock_guard lock(graphMutex());
  auto it = state().streams.find(s);
  if (it == state().streams.end()) return CUDA_ERROR_ILLEGAL_STATE;
  StreamCapture& sc = it->second;
  for (size_t i = 0; i < n; ++i)
    if (!liveNode(deps[i]) || deps[i]->graph != sc.capture->graph) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUgraphNode_st*> given(deps, deps + n);
  if (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES) sc.deps.clear();
  addDeps(sc.deps, given);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (!mode) return CUDA_ERROR_INVALID_VALUE;
  if (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      *mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  std::swap(*mode, tl_mode);
  return CUDA_SUCCESS;
}

}  // extern "C"
