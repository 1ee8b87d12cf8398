// Devices and contexts: the one emulated device (its attributes, UUID, PCI bus id and peers) and contexts
// (primary and created ones, each thread's current-context stack, limits, configuration hints), with the legacy
// cuCtxCreate ABI names.
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "driver_graph.h"
#include "driver_state.h"
#include "kfuse/core/trace.h"
#include "standin_internal.h"

using kfuse::standin::attribute;
using kfuse::standin::current;
using kfuse::standin::st;
using kfuse::standin::sticky;

namespace {

const std::string kDeviceName = std::string(kfuse::core::kEmulatorDeviceNamePrefix) + " (not a GPU, sm_90 PTX)";

thread_local std::vector<CUctx_st*> tl_ctx_stack;

void fillUuid(CUuuid* u) {
  const char id[16] = {'k', 'f', 'u', 's', 'e', '-', 'e', 'm', 'u', 'l', 'a', 't', 'o', 'r', '0', '1'};
  std::memcpy(u->bytes, id, 16);
}

}  // namespace

namespace kfuse::standin {

CUctx_st* current() {
  return tl_ctx_stack.empty() ? nullptr : tl_ctx_stack.back();
}

int attribute(CUdevice_attribute a) {
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 48 * 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return 227 * 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 228 * 1024;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 64 * 1024;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1000000;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 1000000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 64;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return int(dev() ? dev()->workerThreads() : 1);
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return 32;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 0;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: return CU_COMPUTEMODE_DEFAULT;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: return 0;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 0;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 0;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 0;
    default: return 0;
  }
}

}  // namespace kfuse::standin

extern "C" {

// ---- devices -------------------------------------------------------------------------------------------------
CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  KF_REQUIRE_INIT();
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetCount(int* count) {
  KF_REQUIRE_INIT();
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice d) {
  KF_REQUIRE_INIT();
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, size_t(len), "%s", kDeviceName.c_str());
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice d) {
  KF_REQUIRE_INIT();
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  *pi = attribute(attrib);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice d) {
  KF_REQUIRE_INIT();
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = size_t(16) << 30;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetUuid(CUuuid* uuid, CUdevice d) {
  KF_REQUIRE_INIT();
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  fillUuid(uuid);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceComputeCapability(int* major, int* minor, CUdevice d) {
  KF_REQUIRE_INIT();
  if (!major || !minor) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  *major = 9;
  *minor = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceCanAccessPeer(int* can, CUdevice d, CUdevice peer) {
  KF_REQUIRE_INIT();
  if (!can) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0 || peer != 0) return CUDA_ERROR_INVALID_DEVICE;
  *can = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetPCIBusId(char* id, int len, CUdevice d) {
  KF_REQUIRE_INIT();
  if (!id || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(id, size_t(len), "0000:00:00.0");
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetByPCIBusId(CUdevice* d, const char* id) {
  KF_REQUIRE_INIT();
  if (!d || !id) return CUDA_ERROR_INVALID_VALUE;
  if (std::strcmp(id, "0000:00:00.0") != 0 && std::strcmp(id, "00:00.0") != 0) return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}

// ---- contexts ------------------------------------------------------------------------------------------------
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice d) {
  KF_REQUIRE_INIT();
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(st().mu);
  ++st().primary_refs;
  *pctx = &st().primary;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice d) {
  KF_REQUIRE_INIT();
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(st().mu);
  if (st().primary_refs > 0) --st().primary_refs;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice d) {
  KF_REQUIRE_INIT();
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  kfuse::standin::destroyContextLocalStorage(&st().primary);
  st().primary.sticky = CUDA_SUCCESS;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice d, unsigned int* flags, int* active) {
  KF_REQUIRE_INIT();
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(st().mu);
  *flags = st().primary_flags;
  *active = st().primary_refs > 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice d, unsigned int flags) {
  KF_REQUIRE_INIT();
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  st().primary_flags = flags;
  return CUDA_SUCCESS;
}

static CUresult createContext(CUcontext* pctx, unsigned flags, CUdevice d) {
  KF_REQUIRE_INIT();
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  auto* c = new CUctx_st();
  c->flags = flags;
  c->id = st().next_id++;
  {
    std::lock_guard lock(st().mu);
    st().contexts.insert(c);
  }
  tl_ctx_stack.push_back(c);
  *pctx = c;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxCreate(CUcontext* pctx, CUctxCreateParams* params, unsigned int flags, CUdevice d) {
  (void)params;  // execution affinity and CIG parameters do not apply to the emulator
  return createContext(pctx, flags, d);
}
CUresult CUDAAPI cuCtxDestroy(CUcontext ctx) {
  KF_REQUIRE_INIT();
  {
    std::lock_guard lock(st().mu);
    if (!st().contexts.erase(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  }
  tl_ctx_stack.erase(std::remove(tl_ctx_stack.begin(), tl_ctx_stack.end(), ctx), tl_ctx_stack.end());
  kfuse::standin::destroyContextLocalStorage(ctx);
  delete ctx;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  KF_REQUIRE_INIT();
  if (!ctx) {
    if (!tl_ctx_stack.empty()) tl_ctx_stack.pop_back();
    return CUDA_SUCCESS;
  }
  if (tl_ctx_stack.empty())
    tl_ctx_stack.push_back(ctx);
  else
    tl_ctx_stack.back() = ctx;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetCurrent(CUcontext* pctx) {
  KF_REQUIRE_INIT();
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  *pctx = current();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) {
  KF_REQUIRE_INIT();
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  tl_ctx_stack.push_back(ctx);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxPopCurrent(CUcontext* pctx) {
  KF_REQUIRE_INIT();
  if (tl_ctx_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx) *pctx = tl_ctx_stack.back();
  tl_ctx_stack.pop_back();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetDevice(CUdevice* d) {
  KF_REQUIRE_CTX();
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetFlags(unsigned int* flags) {
  KF_REQUIRE_CTX();
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  *flags = current()->flags;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long* id) {
  KF_REQUIRE_INIT();
  if (!id) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* c = ctx ? ctx : current();
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  *id = c->id;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  KF_REQUIRE_INIT();
  (void)ctx;
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = 3020;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSynchronize(void) {
  KF_REQUIRE_CTX();
  if (CUresult r = kfuse::standin::checkUnsafeCall(); r != CUDA_SUCCESS) return r;
  return sticky();
}
CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value) {
  KF_REQUIRE_CTX();
  (void)limit;
  (void)value;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetLimit(size_t* pvalue, CUlimit limit) {
  KF_REQUIRE_CTX();
  if (!pvalue) return CUDA_ERROR_INVALID_VALUE;
  switch (limit) {
    case CU_LIMIT_STACK_SIZE: *pvalue = 16384; break;
    case CU_LIMIT_PRINTF_FIFO_SIZE: *pvalue = 1 << 20; break;
    case CU_LIMIT_MALLOC_HEAP_SIZE: *pvalue = 0; break;
    default: *pvalue = 0;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  KF_REQUIRE_INIT();
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSetCacheConfig(CUfunc_cache config) {
  (void)config;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetCacheConfig(CUfunc_cache* config) {
  if (config) *config = CU_FUNC_CACHE_PREFER_NONE;
  return CUDA_SUCCESS;
}
// Hints without effect on the emulator.
CUresult CUDAAPI cuCtxResetPersistingL2Cache(void) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSetSharedMemConfig(CUsharedconfig config) {
  (void)config;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetSharedMemConfig(CUsharedconfig* config) {
  if (!config) return CUDA_ERROR_INVALID_VALUE;
  *config = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
  return CUDA_SUCCESS;
}

// ---- legacy ABI names ----------------------------------------------------------------------------------------
CUresult CUDAAPI cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice d) {
  return createContext(pctx, flags, d);
}
CUresult CUDAAPI cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* p, int n, unsigned int flags, CUdevice d) {
  (void)p;
  (void)n;
  return createContext(pctx, flags, d);
}

}  // extern "C"
