// cuGetProcAddress: the table of entry points a runtime (cudart) resolves the driver through, the
// per-thread-default-stream variants, older ABI versions of the graph and capture functions, and numbered stubs for the
// names the stand-in does not implement.
#include <cuda.h>
#include <cudaProfiler.h>

#include <array>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "driver_graph.h"
#include "driver_state.h"
#include "standin_internal.h"

using kfuse::standin::notSupported;
using kfuse::standin::st;
using kfuse::standin::State;
using kfuse::standin::tracing;

namespace {

// Unsupported entry points handed out through cuGetProcAddress: each slot remembers its name, logs it once when
// called and returns CUDA_ERROR_NOT_SUPPORTED (callers pass arguments the stub ignores; the C calling convention
// makes that harmless).
constexpr size_t kStubSlots = 1024;
std::array<std::string, kStubSlots>& stubNames() {
  static auto* names = new std::array<std::string, kStubSlots>();
  return *names;
}
template <size_t I>
CUresult CUDAAPI stubFn() {
  return notSupported(stubNames()[I].c_str());
}
template <size_t... I>
constexpr std::array<void*, sizeof...(I)> makeStubs(std::index_sequence<I...>) {
  return {reinterpret_cast<void*>(&stubFn<I>)...};
}
const std::array<void*, kStubSlots>& stubs() {
  static const auto table = makeStubs(std::make_index_sequence<kStubSlots>());
  return table;
}

CUresult CUDAAPI legacyGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags);

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
const std::unordered_map<std::string, void*>& procTable() {
  static const auto* table = new std::unordered_map<std::string, void*>{
#define KF_P(name) {#name, reinterpret_cast<void*>(&name)}
      KF_P(cuInit),
      KF_P(cuDriverGetVersion),
      KF_P(cuGetErrorName),
      KF_P(cuGetErrorString),
      KF_P(cuGetExportTable),
      KF_P(cuDeviceGet),
      KF_P(cuDeviceGetCount),
      KF_P(cuDeviceGetName),
      KF_P(cuDeviceGetAttribute),
      KF_P(cuDeviceTotalMem),
      KF_P(cuDeviceGetUuid),
      KF_P(cuDeviceComputeCapability),
      KF_P(cuDevicePrimaryCtxRetain),
      KF_P(cuDevicePrimaryCtxRelease),
      KF_P(cuDevicePrimaryCtxReset),
      KF_P(cuDevicePrimaryCtxGetState),
      KF_P(cuDevicePrimaryCtxSetFlags),
      KF_P(cuCtxDestroy),
      KF_P(cuCtxSetCurrent),
      KF_P(cuCtxGetCurrent),
      KF_P(cuCtxPushCurrent),
      KF_P(cuCtxPopCurrent),
      KF_P(cuCtxGetDevice),
      KF_P(cuCtxGetFlags),
      KF_P(cuCtxGetId),
      KF_P(cuCtxGetApiVersion),
      KF_P(cuCtxSynchronize),
      KF_P(cuCtxSetLimit),
      KF_P(cuCtxGetLimit),
      KF_P(cuCtxGetStreamPriorityRange),
      KF_P(cuCtxSetCacheConfig),
      KF_P(cuCtxGetCacheConfig),
      KF_P(cuMemAlloc),
      KF_P(cuMemFree),
      KF_P(cuMemAllocAsync),
      KF_P(cuMemFreeAsync),
      KF_P(cuMemGetInfo),
      KF_P(cuMemGetAddressRange),
      KF_P(cuMemAllocHost),
      KF_P(cuMemHostAlloc),
      KF_P(cuMemFreeHost),
      KF_P(cuMemHostRegister),
      KF_P(cuMemGetAllocationGranularity),
      KF_P(cuMemCreate),
      KF_P(cuMemRelease),
      KF_P(cuMemGetAllocationPropertiesFromHandle),
      KF_P(cuMemAddressReserve),
      KF_P(cuMemAddressFree),
      KF_P(cuMemMap),
      KF_P(cuMemUnmap),
      KF_P(cuMemSetAccess),
      KF_P(cuMemGetAccess),
      KF_P(cuMemRetainAllocationHandle),
      KF_P(cuMemHostUnregister),
      KF_P(cuMemcpyHtoD),
      KF_P(cuMemcpyDtoH),
      KF_P(cuMemcpyDtoD),
      KF_P(cuMemcpy),
      KF_P(cuMemcpyHtoDAsync),
      KF_P(cuMemcpyDtoHAsync),
      KF_P(cuMemcpyDtoDAsync),
      KF_P(cuMemcpyAsync),
      KF_P(cuMemsetD8),
      KF_P(cuMemsetD16),
      KF_P(cuMemsetD32),
      KF_P(cuMemsetD8Async),
      KF_P(cuMemsetD16Async),
      KF_P(cuMemsetD32Async),
      KF_P(cuPointerGetAttribute),
      KF_P(cuModuleLoadData),
      KF_P(cuModuleLoadDataEx),
      KF_P(cuModuleLoadFatBinary),
      KF_P(cuModuleLoad),
      KF_P(cuModuleUnload),
      KF_P(cuModuleGetFunction),
      KF_P(cuModuleGetFunctionCount),
      KF_P(cuModuleEnumerateFunctions),
      KF_P(cuModuleGetGlobal),
      KF_P(cuLibraryLoadData),
      KF_P(cuLibraryLoadFromFile),
      KF_P(cuLibraryUnload),
      KF_P(cuLibraryGetModule),
      KF_P(cuLibraryGetKernel),
      KF_P(cuLibraryGetKernelCount),
      KF_P(cuLibraryEnumerateKernels),
      KF_P(cuLibraryGetGlobal),
      KF_P(cuKernelGetFunction),
      KF_P(cuKernelGetLibrary),
      KF_P(cuFuncGetName),
      KF_P(cuKernelGetName),
      KF_P(cuFuncGetParamInfo),
      KF_P(cuKernelGetParamInfo),
      KF_P(cuFuncGetModule),
      KF_P(cuFuncGetAttribute),
      KF_P(cuKernelGetAttribute),
      KF_P(cuFuncSetAttribute),
      KF_P(cuKernelSetAttribute),
      KF_P(cuFuncSetCacheConfig),
      KF_P(cuFuncIsLoaded),
      KF_P(cuFuncLoad),
      KF_P(cuLaunchKernel),
      KF_P(cuLaunchKernelEx),
      KF_P(cuLaunchCooperativeKernel),
      KF_P(cuLaunchHostFunc),
      KF_P(cuStreamCreate),
      KF_P(cuStreamCreateWithPriority),
      KF_P(cuStreamDestroy),
      KF_P(cuStreamSynchronize),
      KF_P(cuStreamQuery),
      KF_P(cuStreamWaitEvent),
      KF_P(cuStreamGetFlags),
      KF_P(cuStreamGetPriority),
      KF_P(cuStreamGetId),
      KF_P(cuStreamGetCtx),
      KF_P(cuStreamIsCapturing),
      KF_P(cuEventCreate),
      KF_P(cuEventDestroy),
      KF_P(cuEventRecord),
      KF_P(cuEventRecordWithFlags),
      KF_P(cuEventQuery),
      KF_P(cuEventSynchronize),
      KF_P(cuEventElapsedTime),
      KF_P(cuModuleGetLoadingMode),
      KF_P(cuOccupancyMaxActiveBlocksPerMultiprocessor),
      KF_P(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags),
      KF_P(cuOccupancyMaxPotentialBlockSize),
      KF_P(cuOccupancyMaxPotentialBlockSizeWithFlags),
      KF_P(cuOccupancyAvailableDynamicSMemPerBlock),
      KF_P(cuMemcpy2D),
      KF_P(cuMemcpy2DUnaligned),
      KF_P(cuMemcpy2DAsync),
      KF_P(cuPointerGetAttributes),
      KF_P(cuMemHostGetDevicePointer),
      KF_P(cuMemHostGetFlags),
      KF_P(cuMemAllocPitch),
      KF_P(cuMemsetD2D8),
      KF_P(cuMemsetD2D16),
      KF_P(cuMemsetD2D32),
      KF_P(cuMemsetD2D8Async),
      KF_P(cuMemsetD2D16Async),
      KF_P(cuMemsetD2D32Async),
      KF_P(cuMemcpyPeer),
      KF_P(cuMemcpyPeerAsync),
      KF_P(cuDeviceCanAccessPeer),
      KF_P(cuDeviceGetPCIBusId),
      KF_P(cuDeviceGetByPCIBusId),
      KF_P(cuStreamAddCallback),
      KF_P(cuStreamGetAttribute),
      KF_P(cuStreamSetAttribute),
      KF_P(cuStreamCopyAttributes),
      KF_P(cuStreamGetDevice),
      KF_P(cuStreamGetCaptureInfo),
      KF_P(cuThreadExchangeStreamCaptureMode),
      KF_P(cuCtxResetPersistingL2Cache),
      KF_P(cuKernelSetCacheConfig),
      KF_P(cuFuncSetSharedMemConfig),
      KF_P(cuCtxSetSharedMemConfig),
      KF_P(cuCtxGetSharedMemConfig),
      KF_P(cuProfilerStart),
      KF_P(cuProfilerStop),
      KF_P(cuMemAllocFromPoolAsync),
      KF_P(cuDeviceGetDefaultMemPool),
      KF_P(cuDeviceGetMemPool),
      KF_P(cuDeviceSetMemPool),
      KF_P(cuMemGetDefaultMemPool),
      KF_P(cuMemGetMemPool),
      KF_P(cuMemSetMemPool),
      KF_P(cuMemPoolCreate),
      KF_P(cuMemPoolDestroy),
      KF_P(cuMemPoolTrimTo),
      KF_P(cuMemPoolSetAttribute),
      KF_P(cuMemPoolGetAttribute),
      KF_P(cuMemPoolSetAccess),
      KF_P(cuMemPoolGetAccess),
      KF_P(cuGraphCreate),
      KF_P(cuGraphDestroy),
      KF_P(cuGraphClone),
      KF_P(cuGraphNodeFindInClone),
      KF_P(cuGraphAddKernelNode),
      KF_P(cuGraphAddMemcpyNode),
      KF_P(cuGraphAddMemsetNode),
      KF_P(cuGraphAddHostNode),
      KF_P(cuGraphAddEmptyNode),
      KF_P(cuGraphAddEventRecordNode),
      KF_P(cuGraphAddEventWaitNode),
      KF_P(cuGraphAddChildGraphNode),
      KF_P(cuGraphChildGraphNodeGetGraph),
      KF_P(cuGraphDestroyNode),
      KF_P(cuGraphNodeGetType),
      KF_P(cuGraphGetNodes),
      KF_P(cuGraphGetRootNodes),
      KF_P(cuGraphGetEdges),
      KF_P(cuGraphNodeGetDependencies),
      KF_P(cuGraphNodeGetDependentNodes),
      KF_P(cuGraphAddDependencies),
      KF_P(cuGraphRemoveDependencies),
      KF_P(cuGraphKernelNodeGetParams),
      KF_P(cuGraphKernelNodeSetParams),
      KF_P(cuGraphMemcpyNodeGetParams),
      KF_P(cuGraphMemcpyNodeSetParams),
      KF_P(cuGraphMemsetNodeGetParams),
      KF_P(cuGraphMemsetNodeSetParams),
      KF_P(cuGraphHostNodeGetParams),
      KF_P(cuGraphHostNodeSetParams),
      KF_P(cuGraphEventRecordNodeGetEvent),
      KF_P(cuGraphEventRecordNodeSetEvent),
      KF_P(cuGraphEventWaitNodeGetEvent),
      KF_P(cuGraphEventWaitNodeSetEvent),
      KF_P(cuGraphInstantiate),
      KF_P(cuGraphInstantiateWithFlags),
      KF_P(cuGraphInstantiateWithParams),
      KF_P(cuGraphExecGetFlags),
      KF_P(cuGraphExecDestroy),
      KF_P(cuGraphUpload),
      KF_P(cuGraphLaunch),
      KF_P(cuGraphExecKernelNodeSetParams),
      KF_P(cuGraphExecMemcpyNodeSetParams),
      KF_P(cuGraphExecMemsetNodeSetParams),
      KF_P(cuGraphExecHostNodeSetParams),
      KF_P(cuGraphExecEventRecordNodeSetEvent),
      KF_P(cuGraphExecEventWaitNodeSetEvent),
      KF_P(cuGraphNodeSetEnabled),
      KF_P(cuGraphNodeGetEnabled),
      KF_P(cuGraphExecUpdate),
      KF_P(cuStreamBeginCapture),
      KF_P(cuStreamBeginCaptureToGraph),
      KF_P(cuStreamEndCapture),
      KF_P(cuStreamUpdateCaptureDependencies),
#undef KF_P
  };
  return *table;
}
#pragma GCC diagnostic pop

// What CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM asks for: the _ptsz/_ptds function of a base name, where
// the stand-in has one. They behave as the legacy ones here (every launch runs to completion), but a tool between
// the program and the driver (kfuse's hooks) must see which stream the program meant, as with a real driver.
void* perThreadFunction(const std::string& name) {
  static const std::unordered_map<std::string, void*> table = {
      {"cuLaunchKernel", reinterpret_cast<void*>(&cuLaunchKernel_ptsz)},
      {"cuLaunchKernelEx", reinterpret_cast<void*>(&cuLaunchKernelEx_ptsz)},
      {"cuMemcpyHtoD", reinterpret_cast<void*>(&cuMemcpyHtoD_v2_ptds)},
      {"cuMemcpyDtoH", reinterpret_cast<void*>(&cuMemcpyDtoH_v2_ptds)},
      {"cuMemcpyDtoD", reinterpret_cast<void*>(&cuMemcpyDtoD_v2_ptds)},
      {"cuMemcpy", reinterpret_cast<void*>(&cuMemcpy_ptds)},
      {"cuMemcpyHtoDAsync", reinterpret_cast<void*>(&cuMemcpyHtoDAsync_v2_ptsz)},
      {"cuMemcpyDtoHAsync", reinterpret_cast<void*>(&cuMemcpyDtoHAsync_v2_ptsz)},
      {"cuMemcpyAsync", reinterpret_cast<void*>(&cuMemcpyAsync_ptsz)},
      {"cuStreamSynchronize", reinterpret_cast<void*>(&cuStreamSynchronize_ptsz)},
      {"cuStreamQuery", reinterpret_cast<void*>(&cuStreamQuery_ptsz)},
      {"cuStreamWaitEvent", reinterpret_cast<void*>(&cuStreamWaitEvent_ptsz)},
      {"cuEventRecord", reinterpret_cast<void*>(&cuEventRecord_ptsz)},
      {"cuEventRecordWithFlags", reinterpret_cast<void*>(&cuEventRecordWithFlags_ptsz)},
      {"cuMemsetD8", reinterpret_cast<void*>(&cuMemsetD8_v2_ptds)},
      {"cuMemsetD32", reinterpret_cast<void*>(&cuMemsetD32_v2_ptds)},
      {"cuMemsetD8Async", reinterpret_cast<void*>(&cuMemsetD8Async_ptsz)},
      {"cuMemsetD32Async", reinterpret_cast<void*>(&cuMemsetD32Async_ptsz)},
      {"cuLaunchHostFunc", reinterpret_cast<void*>(&cuLaunchHostFunc_ptsz)},
      {"cuMemAllocAsync", reinterpret_cast<void*>(&cuMemAllocAsync_ptsz)},
      {"cuMemFreeAsync", reinterpret_cast<void*>(&cuMemFreeAsync_ptsz)},
  };
  auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

CUresult lookup(const char* symbol, void** pfn, int version, cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  if (tracing())
    std::fprintf(stderr, "kfuse stand-in trace: cuGetProcAddress %s %d %llu\n", symbol ? symbol : "(null)", version,
                 (unsigned long long)flags);
  if (!pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (!symbol) return CUDA_ERROR_INVALID_VALUE;
  std::string name = symbol;
  if (name.empty()) return CUDA_ERROR_NOT_FOUND;
  void* fn = nullptr;
  if (name == "cuGetProcAddress") {
    fn = version >= 12000 ? reinterpret_cast<void*>(&cuGetProcAddress) : reinterpret_cast<void*>(&legacyGetProcAddress);
  } else if (name == "cuCtxCreate") {
    fn = version >= 12050   ? reinterpret_cast<void*>(&cuCtxCreate)
         : version >= 11040 ? reinterpret_cast<void*>(&cuCtxCreate_v3)
                            : reinterpret_cast<void*>(&cuCtxCreate_v2);
  } else if (void* old = kfuse::standin::legacyGraphFunction(name, version)) {
    fn = old;  // an older ABI version of a graph function
  } else if (void* old_capture = kfuse::standin::legacyCaptureFunction(name, version)) {
    fn = old_capture;
  } else if (void* ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ? perThreadFunction(name) : nullptr) {
    fn = ptsz;  // "If a per-thread version is not found, the API will return the legacy version" (cuda.h)
  } else if (auto it = procTable().find(name); it != procTable().end()) {
    fn = it->second;
  } else {
    State& s = st();
    std::lock_guard lock(s.mu);
    auto& names = stubNames();
    size_t slot = kStubSlots;
    for (size_t i = 0; i < kStubSlots; ++i) {
      if (names[i] == name) {
        slot = i;
        break;
      }
      if (names[i].empty()) {
        names[i] = name;
        slot = i;
        break;
      }
    }
    if (slot == kStubSlots) return CUDA_ERROR_NOT_FOUND;
    fn = stubs()[slot];
  }
  *pfn = fn;
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI legacyGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return lookup(symbol, pfn, version, flags, nullptr);
}

}  // namespace

extern "C" {
CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                  CUdriverProcAddressQueryResult* status) {
  return lookup(symbol, pfn, version, flags, status);
}
// The 4-argument entry point of CUDA 11.3-11.8 headers.
#undef cuGetProcAddress
CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return lookup(symbol, pfn, version, flags, nullptr);
}
}  // extern "C"
