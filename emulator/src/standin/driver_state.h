// The CPU stand-in libcuda.so.1: the CUDA driver API subset that driver-API programs use, implemented over the
// PTX emulator. Every operation runs to completion when it is called (streams and events are ordered by
// construction); events record host time, so elapsed times measure emulation time.
//
// The entry points live in one file per API area: driver_state.cpp (cuInit, versions, errors, the state below),
// driver_context.cpp (devices, contexts), driver_memory.cpp (allocations, pools, host memory, pointer
// attributes), driver_memcpy.cpp (copies, sets), driver_module.cpp (modules, libraries, functions),
// driver_launch.cpp (launches, occupancy, tool counters), driver_stream.cpp (streams, events) and
// driver_proc_address.cpp (cuGetProcAddress). This private header holds what they share: the handle types, the
// process-wide state and the helpers every area uses. Nothing declared here is exported from libcuda.so.1
// except the cu* entry points at the end.
//
// Names: cuda.h maps base names to ABI names with macros (cuMemAlloc -> cuMemAlloc_v2, cuCtxCreate ->
// cuCtxCreate_v4); the definitions use the base names so they get the names the header maps to. The legacy ABI
// names cudart or old binaries may still ask for are defined explicitly, beside the entry point of their area.
#pragma once

#include <cuda.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "kfuse/core/status.h"
#include "kfuse/emulator/emulator.h"

// Handle types (opaque in cuda.h).
struct CUctx_st {
  uint32_t magic = 0x6b637478;
  CUdevice dev = 0;
  unsigned flags = 0;
  bool primary = false;
  CUresult sticky = CUDA_SUCCESS;
  unsigned long long id = 0;
};
struct CUfunc_st;
struct CUmod_st {
  uint32_t magic = 0x6b6d6f64;
  std::shared_ptr<kfuse::emulator::Program> program;
  std::vector<std::unique_ptr<CUfunc_st>> functions;
  CUlibrary library = nullptr;
};
struct CUfunc_st {
  uint32_t magic = 0x6b666e63;
  const kfuse::emulator::Kernel* kernel = nullptr;
  CUmod_st* module = nullptr;
  int max_dynamic_shared = 48 * 1024;
};
struct CUlib_st {
  uint32_t magic = 0x6b6c6962;
  CUmod_st* module = nullptr;
};
struct CUstream_st {
  uint32_t magic = 0x6b737472;
  unsigned flags = 0;
  int priority = 0;
  unsigned long long id = 0;
};
struct CUmemPoolHandle_st {
  uint32_t magic = 0x6b706f6c;
  bool is_default = false;
  uint64_t release_threshold = 0;
  int reuse[3] = {1, 1, 1};  // follow event dependencies, opportunistic, internal dependencies
  uint64_t used = 0, used_high = 0;
};
struct CUevent_st {
  uint32_t magic = 0x6b65766e;
  unsigned flags = 0;
  bool recorded = false;
  std::chrono::steady_clock::time_point when;
};

namespace kfuse::standin {

// The driver's process-wide state. `mu` guards the handle registries, the pinned host allocations and the
// messages already logged; `next_id` numbers contexts and streams.
struct State {
  std::mutex mu;
  std::unique_ptr<kfuse::emulator::Device> device;
  bool initialized = false;
  CUctx_st primary;
  int primary_refs = 0;
  unsigned primary_flags = 0;
  std::set<CUctx_st*> contexts;
  std::set<CUmod_st*> modules;
  std::set<CUlib_st*> libraries;
  std::set<CUstream_st*> streams;
  std::set<CUevent_st*> events;
  std::unordered_map<uintptr_t, size_t> host_allocs;
  std::atomic<unsigned long long> next_id{1};
  std::set<std::string> logged;
};

// The one State, created on first use and never destroyed: programs may call the driver from atexit handlers.
State& st();

// The emulated device; null before cuInit.
kfuse::emulator::Device* dev();

// The calling thread's current context (the top of its context stack), or null.
CUctx_st* current();

// Logs once that `name` is not supported and returns CUDA_ERROR_NOT_SUPPORTED.
CUresult notSupported(const char* name);

// The driver error for an emulator status. Prints the message: once for a kernel that fails to decode, every
// time for a fault.
CUresult fromStatus(const kfuse::Status& s);

// The current context's sticky error (a fault in a launch poisons the context, as on a GPU), or CUDA_SUCCESS.
CUresult sticky();

// True for a function handle the stand-in handed out (a CUkernel is the same object).
bool validFunction(CUfunction f);

// The value of a device attribute of the one emulated device (sm_90).
int attribute(CUdevice_attribute a);

}  // namespace kfuse::standin

#define KF_REQUIRE_INIT()                                                     \
  do {                                                                        \
    if (!kfuse::standin::st().initialized) return CUDA_ERROR_NOT_INITIALIZED; \
  } while (false)
#define KF_REQUIRE_CTX()                                               \
  do {                                                                 \
    KF_REQUIRE_INIT();                                                 \
    if (!kfuse::standin::current()) return CUDA_ERROR_INVALID_CONTEXT; \
  } while (false)

// Legacy and per-thread-default-stream ABI names (cuda.h declares them only for the driver's own build), defined
// beside the entry points they forward to and handed out by cuGetProcAddress.
extern "C" {
CUresult CUDAAPI cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice d);
CUresult CUDAAPI cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* p, int n, unsigned int flags, CUdevice d);
CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                     unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void** params,
                                     void** extra);
CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig* c, CUfunction f, void** params, void** extra);
CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void* user);
CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr d, const void* s, size_t n);
CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void* d, CUdeviceptr s, size_t n);
CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr d, CUdeviceptr s, size_t n);
CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr d, CUdeviceptr s, size_t n);
CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr d, const void* s, size_t n, CUstream st_);
CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void* d, CUdeviceptr s, size_t n, CUstream st_);
CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st_);
CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n);
CUresult CUDAAPI cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int v, size_t n);
CUresult CUDAAPI cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream s);
CUresult CUDAAPI cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n, CUstream s);
CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr* d, size_t n, CUstream s);
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr d, CUstream s);
CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream s);
CUresult CUDAAPI cuStreamQuery_ptsz(CUstream s);
CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned int f);
CUresult CUDAAPI cuEventRecord_ptsz(CUevent e, CUstream s);
CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned int f);
}  // extern "C"
