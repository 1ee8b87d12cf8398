// Streams and events: creation, queries and synchronisation (the work is done by the time it is issued),
// callbacks, attributes, stream capture (never active), with the per-thread-default-stream ABI names.
#include <cuda.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <utility>

#include "driver_state.h"

using kfuse::standin::current;
using kfuse::standin::st;
using kfuse::standin::sticky;

extern "C" {

// ---- streams and events --------------------------------------------------------------------------------------
CUresult CUDAAPI cuStreamCreate(CUstream* ps, unsigned int flags) {
  KF_REQUIRE_CTX();
  if (!ps) return CUDA_ERROR_INVALID_VALUE;
  auto* s = new CUstream_st();
  s->flags = flags;
  s->id = st().next_id++;
  std::lock_guard lock(st().mu);
  st().streams.insert(s);
  *ps = s;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamCreateWithPriority(CUstream* ps, unsigned int flags, int priority) {
  CUresult r = cuStreamCreate(ps, flags);
  if (r == CUDA_SUCCESS) (*ps)->priority = priority;
  return r;
}
CUresult CUDAAPI cuStreamDestroy(CUstream s) {
  KF_REQUIRE_INIT();
  {
    std::lock_guard lock(st().mu);
    if (!st().streams.erase(s)) return CUDA_ERROR_INVALID_HANDLE;
  }
  delete s;
  return CUDA_SUCCESS;
}
static bool validStream(CUstream s) {
  if (s == nullptr || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) return true;
  std::lock_guard lock(st().mu);
  return st().streams.count(s) != 0;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream s) {
  KF_REQUIRE_CTX();
  if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
  return sticky();
}
CUresult CUDAAPI cuStreamQuery(CUstream s) {
  KF_REQUIRE_CTX();
  if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
  return sticky();
}
CUresult CUDAAPI cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
  (void)flags;
  KF_REQUIRE_CTX();
  if (!validStream(s) || !e) return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamGetFlags(CUstream s, unsigned int* flags) {
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
  *flags = (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD) ? s->flags : 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamGetPriority(CUstream s, int* priority) {
  if (!priority) return CUDA_ERROR_INVALID_VALUE;
  if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
  *priority = (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD) ? s->priority : 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamGetId(CUstream s, unsigned long long* id) {
  if (!id) return CUDA_ERROR_INVALID_VALUE;
  if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
  *id = (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD) ? s->id : 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamGetCtx(CUstream s, CUcontext* ctx) {
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
  *ctx = current();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus* status) {
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
  *status = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent* pe, unsigned int flags) {
  KF_REQUIRE_CTX();
  if (!pe) return CUDA_ERROR_INVALID_VALUE;
  auto* e = new CUevent_st();
  e->flags = flags;
  std::lock_guard lock(st().mu);
  st().events.insert(e);
  *pe = e;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventDestroy(CUevent e) {
  KF_REQUIRE_INIT();
  {
    std::lock_guard lock(st().mu);
    if (!st().events.erase(e)) return CUDA_ERROR_INVALID_HANDLE;
  }
  delete e;
  return CUDA_SUCCESS;
}
static bool validEvent(CUevent e) {
  std::lock_guard lock(st().mu);
  return e && st().events.count(e);
}
CUresult CUDAAPI cuEventRecord(CUevent e, CUstream s) {
  KF_REQUIRE_CTX();
  if (!validEvent(e) || !validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
  e->recorded = true;
  e->when = std::chrono::steady_clock::now();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventRecordWithFlags(CUevent e, CUstream s, unsigned int flags) {
  (void)flags;
  return cuEventRecord(e, s);
}
CUresult CUDAAPI cuEventQuery(CUevent e) {
  if (!validEvent(e)) return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventSynchronize(CUevent e) {
  if (!validEvent(e)) return CUDA_ERROR_INVALID_HANDLE;
  return sticky();
}
CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent a, CUevent b) {
  if (!ms) return CUDA_ERROR_INVALID_VALUE;
  if (!validEvent(a) || !validEvent(b)) return CUDA_ERROR_INVALID_HANDLE;
  if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  if (!a->recorded || !b->recorded) return CUDA_ERROR_INVALID_HANDLE;
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return CUDA_SUCCESS;
}

// Streams: callbacks run at once (the stream's earlier work is already done); attributes are accepted and read
// back as zero; nothing is ever captured.
CUresult CUDAAPI cuStreamAddCallback(CUstream s, CUstreamCallback fn, void* user, unsigned int flags) {
  KF_REQUIRE_CTX();
  if (!fn || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  fn(s, sticky(), user);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamGetAttribute(CUstream s, CUstreamAttrID attr, CUstreamAttrValue* value) {
  (void)s;
  (void)attr;
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  std::memset(value, 0, sizeof *value);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamSetAttribute(CUstream s, CUstreamAttrID attr, const CUstreamAttrValue* value) {
  (void)s;
  (void)attr;
  return value ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult CUDAAPI cuStreamCopyAttributes(CUstream dst, CUstream src) {
  (void)dst;
  (void)src;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamGetDevice(CUstream s, CUdevice* d) {
  (void)s;
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                                        const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* n) {
  (void)s;
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  *status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (id) *id = 0;
  if (graph) *graph = nullptr;
  if (deps) *deps = nullptr;
  if (edges) *edges = nullptr;
  if (n) *n = 0;
  return CUDA_SUCCESS;
}
thread_local CUstreamCaptureMode tl_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (!mode) return CUDA_ERROR_INVALID_VALUE;
  std::swap(*mode, tl_capture_mode);
  return CUDA_SUCCESS;
}

// Per-thread-default-stream entry points (programs built with CUDA_API_PER_THREAD_DEFAULT_STREAM): the same
// operations, since everything here is synchronous.
CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream s) {
  return cuStreamSynchronize(s);
}
CUresult CUDAAPI cuStreamQuery_ptsz(CUstream s) {
  return cuStreamQuery(s);
}
CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned int f) {
  return cuStreamWaitEvent(s, e, f);
}
CUresult CUDAAPI cuEventRecord_ptsz(CUevent e, CUstream s) {
  return cuEventRecord(e, s);
}
CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned int f) {
  return cuEventRecordWithFlags(e, s, f);
}

}  // extern "C"
