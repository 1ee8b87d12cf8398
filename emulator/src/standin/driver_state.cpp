// The driver's process-wide state and the helpers every area shares (driver_state.h), and the entry points about
// the driver itself: cuInit, cuDriverGetVersion, error names and strings, cuGetExportTable, the profiler switches.
#include <cuda.h>
#include <cudaProfiler.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "driver_state.h"
#include "standin_internal.h"

using kfuse::emulator::Device;
using kfuse::standin::notSupported;
using kfuse::standin::st;
using kfuse::standin::State;

namespace {

constexpr int kDriverVersion = 13000;

}  // namespace

namespace kfuse::standin {

State& st() {
  static State* s = new State();  // never destroyed: programs may call the driver from atexit handlers
  return *s;
}

void logOnce(const std::string& what) {
  State& s = st();
  std::lock_guard lock(s.mu);
  if (s.logged.insert(what).second) std::fprintf(stderr, "kfuse stand-in libcuda: %s\n", what.c_str());
}

// KFUSE_STANDIN_TRACE=1: every cuGetProcAddress lookup and cuGetExportTable request goes to stderr (to see what a
// runtime library asks of the driver).
bool tracing() {
  static const bool on = [] {
    const char* v = std::getenv("KFUSE_STANDIN_TRACE");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

CUresult notSupported(const char* name) {
  logOnce(std::string(name) + " is not supported by the emulator (returns CUDA_ERROR_NOT_SUPPORTED)");
  return CUDA_ERROR_NOT_SUPPORTED;
}

Device* dev() {
  return st().device.get();
}

CUresult fromStatus(const kfuse::Status& s) {
  if (s.ok()) return CUDA_SUCCESS;
  const std::string& m = s.message();
  // A kernel that failed to decode fails every launch the same way: say so once. Faults are printed each time.
  if (s.code() == kfuse::ErrorCode::kUnsupported || s.code() == kfuse::ErrorCode::kBadFormat)
    logOnce(m);
  else
    std::fprintf(stderr, "kfuse stand-in libcuda: %s\n", m.c_str());
  if (m.find("misaligned") != std::string::npos) return CUDA_ERROR_MISALIGNED_ADDRESS;
  if (m.find("out-of-bounds") != std::string::npos) return CUDA_ERROR_ILLEGAL_ADDRESS;
  if (m.find("assertion") != std::string::npos) return CUDA_ERROR_ASSERT;
  if (m.find("trap") != std::string::npos || m.find("deadlock") != std::string::npos) return CUDA_ERROR_LAUNCH_FAILED;
  switch (s.code()) {
    case kfuse::ErrorCode::kUnsupported: return CUDA_ERROR_NOT_SUPPORTED;
    case kfuse::ErrorCode::kBadFormat: return CUDA_ERROR_INVALID_PTX;
    case kfuse::ErrorCode::kNotFound: return CUDA_ERROR_NOT_FOUND;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult sticky() {
  CUctx_st* c = current();
  return c ? c->sticky : CUDA_SUCCESS;
}

}  // namespace kfuse::standin

extern "C" {

// ---- init / version ------------------------------------------------------------------------------------------
CUresult CUDAAPI cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  State& s = st();
  std::lock_guard lock(s.mu);
  if (!s.initialized) {
    s.device = std::make_unique<Device>();
    s.primary.primary = true;
    s.primary.id = s.next_id++;
    s.initialized = true;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int* v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = kDriverVersion;
  return CUDA_SUCCESS;
}

// Hints without effect on the emulator.
CUresult CUDAAPI cuProfilerStart(void) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuProfilerStop(void) {
  return CUDA_SUCCESS;
}

// ---- errors --------------------------------------------------------------------------------------------------
#define KF_ERRORS(X)                                                                                         \
  X(CUDA_SUCCESS, "no error")                                                                                \
  X(CUDA_ERROR_INVALID_VALUE, "invalid argument")                                                            \
  X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                                                               \
  X(CUDA_ERROR_NOT_INITIALIZED, "initialization error")                                                      \
  X(CUDA_ERROR_DEINITIALIZED, "driver shutting down")                                                        \
  X(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")                                              \
  X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                                                     \
  X(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid")                                              \
  X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                                                    \
  X(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed")                                                  \
  X(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device")                \
  X(CUDA_ERROR_FILE_NOT_FOUND, "file not found")                                                             \
  X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                                                    \
  X(CUDA_ERROR_NOT_FOUND, "named symbol not found")                                                          \
  X(CUDA_ERROR_NOT_READY, "device not ready")                                                                \
  X(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered")                                  \
  X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch")                           \
  X(CUDA_ERROR_ASSERT, "device-side assert triggered")                                                       \
  X(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address")                                                     \
  X(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure")                                                  \
  X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                                                     \
  X(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state")                      \
  X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing")               \
  X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture")        \
  X(CUDA_ERROR_STREAM_CAPTURE_MERGE, "operation would result in a merge of separate capture sequences")      \
  X(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "capture was not ended in the same stream as it began")             \
  X(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "capturing stream has unjoined work")                                \
  X(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "dependency created on uncaptured work in another stream")          \
  X(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,                                                                      \
    "operation would make the legacy stream depend on a capturing blocking stream")                          \
  X(CUDA_ERROR_CAPTURED_EVENT, "operation not permitted on an event last recorded in a capturing stream")    \
  X(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,                                                                  \
    "attempt to terminate a thread-local capture sequence from another thread")                              \
  X(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,                                                                    \
    "the graph update was not performed because it included changes which violated constraints specific to " \
    "instantiated graph update")                                                                             \
  X(CUDA_ERROR_UNKNOWN, "unknown error")

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** str) {
  if (!str) return CUDA_ERROR_INVALID_VALUE;
  switch (error) {
#define KF_NAME(code, text) \
  case code: *str = #code; return CUDA_SUCCESS;
    KF_ERRORS(KF_NAME)
#undef KF_NAME
    default: *str = nullptr; return CUDA_ERROR_INVALID_VALUE;
  }
}
CUresult CUDAAPI cuGetErrorString(CUresult error, const char** str) {
  if (!str) return CUDA_ERROR_INVALID_VALUE;
  switch (error) {
#define KF_TEXT(code, text) \
  case code: *str = text; return CUDA_SUCCESS;
    KF_ERRORS(KF_TEXT)
#undef KF_TEXT
    default: *str = nullptr; return CUDA_ERROR_INVALID_VALUE;
  }
}
// The runtime's private interface: see export_tables.cpp.
CUresult CUDAAPI cuGetExportTable(const void** table, const CUuuid* id) {
  return kfuse::standin::exportTable(table, id);
}

// Used by the exported stubs of unsupported_stubs.cpp (not exported itself).
int kfuseStandinUnsupported(const char* name) {
  return notSupported(name);
}

}  // extern "C"
