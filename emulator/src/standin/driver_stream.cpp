// Streams and events: creation, queries and synchronisation (the work is done by the time it is issued),
// callbacks, attributes, with the per-thread-default-stream ABI names. Stream capture is in driver_capture.cpp:
// while a capture is in progress, the entry points here ask it whether their stream takes part.
#include <cuda.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <utility>

#include "driver_graph.h"
#include "driver_state.h"

using kfuse::standin::capturesActive;
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
  kfuse::standin::forgetStream(s);
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
  if (CUresult r = kfuse::standin::refuseOnCapturingStream(s); r != CUDA_SUCCESS) return r;
  return sticky();
}
CUresult CUDAAPI cuStreamQuery(CUstream s) {
  KF_REQUIRE_CTX();
  if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = kfuse::standin::refuseOnCapturingStream(s); r != CUDA_SUCCESS) return r;
  return sticky();
}
static bool validEvent(CUevent e);
CUresult CUDAAPI cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
  KF_REQUIRE_CTX();
  if (!validStream(s) || !validEvent(e)) return CUDA_ERROR_INVALID_HANDLE;
  if (flags & ~unsigned(CU_EVENT_WAIT_EXTERNAL)) return CUDA_ERROR_INVALID_VALUE;
  if (capturesActive()) {
    bool taken = false;
    CUresult r = kfuse::standin::captureStreamWaitEvent(s, e, flags, &taken);
    if (taken || r != CUDA_SUCCESS) return r;
  }
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
  kfuse::standin::forgetEvent(e);
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
  if (capturesActive()) {  // in a capture: remembers what the stream's next node would depend on
    bool taken = false;
    CUresult r = kfuse::standin::captureEventRecord(e, s, &taken);
    if (taken || r != CUDA_SUCCESS) return r;
  }
  e->recorded = true;
  e->when = std::chrono::steady_clock::now();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventRecordWithFlags(CUevent e, CUstream s, unsigned int flags) {
  if (flags & ~unsigned(CU_EVENT_RECORD_EXTERNAL)) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & CU_EVENT_RECORD_EXTERNAL) && capturesActive()) {  // in a capture: an event record node
    KF_REQUIRE_CTX();
    if (!validEvent(e) || !validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
    bool taken = false;
    CUresult r =
        kfuse::standin::captureNode(s, kfuse::standin::makeEventNode(CU_GRAPH_NODE_TYPE_EVENT_RECORD, e), &taken);
    if (taken || r != CUDA_SUCCESS) return r;
  }
  return cuEventRecord(e, s);
}
CUresult CUDAAPI cuEventQuery(CUevent e) {
  if (!validEvent(e)) return CUDA_ERROR_INVALID_HANDLE;
  return kfuse::standin::checkCapturedEvent(e);
}
CUresult CUDAAPI cuEventSynchronize(CUevent e) {
  if (!validEvent(e)) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = kfuse::standin::checkCapturedEvent(e); r != CUDA_SUCCESS) return r;
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
// back as zero. Callbacks cannot be captured (cuLaunchHostFunc can).
CUresult CUDAAPI cuStreamAddCallback(CUstream s, CUstreamCallback fn, void* user, unsigned int flags) {
  KF_REQUIRE_CTX();
  if (!fn || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = kfuse::standin::refuseOnCapturingStream(s); r != CUDA_SUCCESS) return r;
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
