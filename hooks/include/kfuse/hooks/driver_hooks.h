// The hooking layer: interposition of the CUDA driver API (shared by the collector and the injector).
//
// How an application reaches the driver, and how each path lands here (docs/collector.md has the details):
//   - static or shared cudart: dlopen("libcuda.so.1") + dlsym("cuGetProcAddress_v2"), then everything through
//     cuGetProcAddress (flags 2 = the _ptsz/_ptds variant). The preload library's dlsym() hands out our
//     cuGetProcAddress wrappers, which call Interposer::resolve() on every result.
//   - apps linked against libcuda.so.1: the preload library exports the hooked symbols themselves.
// resolve() remembers the driver's function in a DriverTable slot (hooked API x variant) and returns the
// wrapper for that slot. A wrapper calls the installed HookClient's method for its API, passing the variant; the
// default HookClient methods just forward to the DriverTable. Clients (the hook recorder, the injector) override
// what they need.
//
// Thread-safety: every function here may be called from any thread at any time; table slots are atomics,
// written once (first resolution wins). Nothing on the call path allocates or throws.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>

namespace kfuse::hooks {

// Helpers for the X-macro below: "(a, b)" -> "(int variant, a, b)" and "(x, y)" -> "(variant, x, y)".
#define KFUSE_WITH_VARIANT_PARAM(...) (int variant __VA_OPT__(, ) __VA_ARGS__)
#define KFUSE_WITH_VARIANT_ARG(...) (variant __VA_OPT__(, ) __VA_ARGS__)

// X(Id, base name for cuGetProcAddress, min version, max version (exclusive, 0 = none), exported symbol,
//   exported per-thread-stream symbol or nullptr, 1 if there is one, (parameters), (arguments))
// Version ranges select the ABI cuGetProcAddress hands out for a base name: e.g. "cuMemAlloc" below 3020 is the
// 32-bit v1 function, which is passed through unhooked.
#define KFUSE_DRIVER_HOOKS(X)                                                                                          \
  X(LaunchKernel, "cuLaunchKernel", 4000, 0, "cuLaunchKernel", "cuLaunchKernel_ptsz", 1,                               \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem,       \
     CUstream stream, void** params, void** extra),                                                                    \
    (f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra))                                                         \
  X(LaunchKernelEx, "cuLaunchKernelEx", 11060, 0, "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz", 1,                      \
    (const CUlaunchConfig* config, CUfunction f, void** params, void** extra), (config, f, params, extra))             \
  X(LaunchCooperativeKernel, "cuLaunchCooperativeKernel", 9000, 0, "cuLaunchCooperativeKernel",                        \
    "cuLaunchCooperativeKernel_ptsz", 1,                                                                               \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem,       \
     CUstream stream, void** params),                                                                                  \
    (f, gx, gy, gz, bx, by, bz, shmem, stream, params))                                                                \
  X(MemAlloc, "cuMemAlloc", 3020, 0, "cuMemAlloc_v2", nullptr, 0, (CUdeviceptr * dptr, size_t bytes), (dptr, bytes))   \
  X(MemAllocPitch, "cuMemAllocPitch", 3020, 0, "cuMemAllocPitch_v2", nullptr, 0,                                       \
    (CUdeviceptr * dptr, size_t * pitch, size_t width, size_t height, unsigned elem),                                  \
    (dptr, pitch, width, height, elem))                                                                                \
  X(MemAllocManaged, "cuMemAllocManaged", 6000, 0, "cuMemAllocManaged", nullptr, 0,                                    \
    (CUdeviceptr * dptr, size_t bytes, unsigned flags), (dptr, bytes, flags))                                          \
  X(MemAllocAsync, "cuMemAllocAsync", 11020, 0, "cuMemAllocAsync", "cuMemAllocAsync_ptsz", 1,                          \
    (CUdeviceptr * dptr, size_t bytes, CUstream stream), (dptr, bytes, stream))                                        \
  X(MemAllocHost, "cuMemAllocHost", 3020, 0, "cuMemAllocHost_v2", nullptr, 0, (void** pp, size_t bytes), (pp, bytes))  \
  X(MemHostAlloc, "cuMemHostAlloc", 2020, 0, "cuMemHostAlloc", nullptr, 0, (void** pp, size_t bytes, unsigned flags),  \
    (pp, bytes, flags))                                                                                                \
  X(MemFree, "cuMemFree", 3020, 0, "cuMemFree_v2", nullptr, 0, (CUdeviceptr dptr), (dptr))                             \
  X(MemFreeAsync, "cuMemFreeAsync", 11020, 0, "cuMemFreeAsync", "cuMemFreeAsync_ptsz", 1,                              \
    (CUdeviceptr dptr, CUstream stream), (dptr, stream))                                                               \
  X(MemFreeHost, "cuMemFreeHost", 2000, 0, "cuMemFreeHost", nullptr, 0, (void* p), (p))                                \
  X(MemMap, "cuMemMap", 10020, 0, "cuMemMap", nullptr, 0,                                                              \
    (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags),      \
    (ptr, size, offset, handle, flags))                                                                                \
  X(MemUnmap, "cuMemUnmap", 10020, 0, "cuMemUnmap", nullptr, 0, (CUdeviceptr ptr, size_t size), (ptr, size))           \
  X(MemCreate, "cuMemCreate", 10020, 0, "cuMemCreate", nullptr, 0,                                                     \
    (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp* prop, unsigned long long flags),   \
    (handle, size, prop, flags))                                                                                       \
  X(Memcpy, "cuMemcpy", 4000, 0, "cuMemcpy", "cuMemcpy_ptds", 1, (CUdeviceptr dst, CUdeviceptr src, size_t bytes),     \
    (dst, src, bytes))                                                                                                 \
  X(MemcpyAsync, "cuMemcpyAsync", 4000, 0, "cuMemcpyAsync", "cuMemcpyAsync_ptsz", 1,                                   \
    (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream), (dst, src, bytes, stream))                      \
  X(MemcpyHtoD, "cuMemcpyHtoD", 3020, 0, "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds", 1,                                 \
    (CUdeviceptr dst, const void* src, size_t bytes), (dst, src, bytes))                                               \
  X(MemcpyDtoH, "cuMemcpyDtoH", 3020, 0, "cuMemcpyDtoH_v2", "cuMemcpyDtoH_v2_ptds", 1,                                 \
    (void* dst, CUdeviceptr src, size_t bytes), (dst, src, bytes))                                                     \
  X(MemcpyDtoD, "cuMemcpyDtoD", 3020, 0, "cuMemcpyDtoD_v2", "cuMemcpyDtoD_v2_ptds", 1,                                 \
    (CUdeviceptr dst, CUdeviceptr src, size_t bytes), (dst, src, bytes))                                               \
  X(MemcpyHtoDAsync, "cuMemcpyHtoDAsync", 3020, 0, "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync_v2_ptsz", 1,             \
    (CUdeviceptr dst, const void* src, size_t bytes, CUstream stream), (dst, src, bytes, stream))                      \
  X(MemcpyDtoHAsync, "cuMemcpyDtoHAsync", 3020, 0, "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync_v2_ptsz", 1,             \
    (void* dst, CUdeviceptr src, size_t bytes, CUstream stream), (dst, src, bytes, stream))                            \
  X(MemcpyDtoDAsync, "cuMemcpyDtoDAsync", 3020, 0, "cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync_v2_ptsz", 1,             \
    (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream), (dst, src, bytes, stream))                      \
  X(MemsetD8, "cuMemsetD8", 3020, 0, "cuMemsetD8_v2", "cuMemsetD8_v2_ptds", 1,                                         \
    (CUdeviceptr dst, unsigned char value, size_t n), (dst, value, n))                                                 \
  X(MemsetD16, "cuMemsetD16", 3020, 0, "cuMemsetD16_v2", "cuMemsetD16_v2_ptds", 1,                                     \
    (CUdeviceptr dst, unsigned short value, size_t n), (dst, value, n))                                                \
  X(MemsetD32, "cuMemsetD32", 3020, 0, "cuMemsetD32_v2", "cuMemsetD32_v2_ptds", 1,                                     \
    (CUdeviceptr dst, unsigned int value, size_t n), (dst, value, n))                                                  \
  X(MemsetD8Async, "cuMemsetD8Async", 3020, 0, "cuMemsetD8Async", "cuMemsetD8Async_ptsz", 1,                           \
    (CUdeviceptr dst, unsigned char value, size_t n, CUstream stream), (dst, value, n, stream))                        \
  X(MemsetD16Async, "cuMemsetD16Async", 3020, 0, "cuMemsetD16Async", "cuMemsetD16Async_ptsz", 1,                       \
    (CUdeviceptr dst, unsigned short value, size_t n, CUstream stream), (dst, value, n, stream))                       \
  X(MemsetD32Async, "cuMemsetD32Async", 3020, 0, "cuMemsetD32Async", "cuMemsetD32Async_ptsz", 1,                       \
    (CUdeviceptr dst, unsigned int value, size_t n, CUstream stream), (dst, value, n, stream))                         \
  X(ModuleLoadData, "cuModuleLoadData", 2000, 0, "cuModuleLoadData", nullptr, 0,                                       \
    (CUmodule * module, const void* image), (module, image))                                                           \
  X(ModuleLoadDataEx, "cuModuleLoadDataEx", 2010, 0, "cuModuleLoadDataEx", nullptr, 0,                                 \
    (CUmodule * module, const void* image, unsigned n, CUjit_option* options, void** values),                          \
    (module, image, n, options, values))                                                                               \
  X(ModuleLoadFatBinary, "cuModuleLoadFatBinary", 2000, 0, "cuModuleLoadFatBinary", nullptr, 0,                        \
    (CUmodule * module, const void* image), (module, image))                                                           \
  X(ModuleLoad, "cuModuleLoad", 2000, 0, "cuModuleLoad", nullptr, 0, (CUmodule * module, const char* fname),           \
    (module, fname))                                                                                                   \
  X(ModuleUnload, "cuModuleUnload", 2000, 0, "cuModuleUnload", nullptr, 0, (CUmodule module), (module))                \
  X(LibraryLoadData, "cuLibraryLoadData", 12000, 0, "cuLibraryLoadData", nullptr, 0,                                   \
    (CUlibrary * library, const void* code, CUjit_option* jit_options, void** jit_values, unsigned n_jit,              \
     CUlibraryOption* library_options, void** library_values, unsigned n_library),                                     \
    (library, code, jit_options, jit_values, n_jit, library_options, library_values, n_library))                       \
  X(CtxSynchronize, "cuCtxSynchronize", 2000, 13000, "cuCtxSynchronize", nullptr, 0, (), ())                           \
  X(CtxSynchronizeV2, "cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2", nullptr, 0, (CUcontext ctx), (ctx))         \
  X(StreamSynchronize, "cuStreamSynchronize", 2000, 0, "cuStreamSynchronize", "cuStreamSynchronize_ptsz", 1,           \
    (CUstream stream), (stream))                                                                                       \
  X(StreamDestroy, "cuStreamDestroy", 4000, 0, "cuStreamDestroy_v2", nullptr, 0, (CUstream stream), (stream))          \
  X(EventSynchronize, "cuEventSynchronize", 2000, 0, "cuEventSynchronize", nullptr, 0, (CUevent event), (event))       \
  X(EventRecord, "cuEventRecord", 2000, 0, "cuEventRecord", "cuEventRecord_ptsz", 1, (CUevent event, CUstream stream), \
    (event, stream))                                                                                                   \
  X(EventRecordWithFlags, "cuEventRecordWithFlags", 11010, 0, "cuEventRecordWithFlags", "cuEventRecordWithFlags_ptsz", \
    1, (CUevent event, CUstream stream, unsigned flags), (event, stream, flags))                                       \
  X(StreamWaitEvent, "cuStreamWaitEvent", 3020, 0, "cuStreamWaitEvent", "cuStreamWaitEvent_ptsz", 1,                   \
    (CUstream stream, CUevent event, unsigned flags), (stream, event, flags))                                          \
  X(GraphLaunch, "cuGraphLaunch", 10000, 0, "cuGraphLaunch", "cuGraphLaunch_ptsz", 1,                                  \
    (CUgraphExec graph, CUstream stream), (graph, stream))                                                             \
  X(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", 11040, 0, "cuGraphInstantiateWithFlags", nullptr, 0,     \
    (CUgraphExec * exec, CUgraph graph, unsigned long long flags), (exec, graph, flags))                               \
  X(GraphInstantiateWithParams, "cuGraphInstantiateWithParams", 12000, 0, "cuGraphInstantiateWithParams",              \
    "cuGraphInstantiateWithParams_ptsz", 1,                                                                            \
    (CUgraphExec * exec, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS * params), (exec, graph, params))                \
  X(GraphDestroy, "cuGraphDestroy", 10000, 0, "cuGraphDestroy", nullptr, 0, (CUgraph graph), (graph))                  \
  X(GraphExecUpdate, "cuGraphExecUpdate", 12000, 0, "cuGraphExecUpdate_v2", nullptr, 0,                                \
    (CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo * info), (exec, graph, info))                        \
  X(GraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams", 12000, 0, "cuGraphExecKernelNodeSetParams_v2",     \
    nullptr, 0, (CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* params), (exec, node, params))     \
  X(GraphExecKernelNodeSetParamsV1, "cuGraphExecKernelNodeSetParams", 10010, 12000, "cuGraphExecKernelNodeSetParams",  \
    nullptr, 0, (CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v1* params), (exec, node, params))  \
  X(GraphExecMemcpyNodeSetParams, "cuGraphExecMemcpyNodeSetParams", 10020, 0, "cuGraphExecMemcpyNodeSetParams",        \
    nullptr, 0, (CUgraphExec exec, CUgraphNode node, const CUDA_MEMCPY3D* copy, CUcontext ctx),                        \
    (exec, node, copy, ctx))                                                                                           \
  X(GraphExecMemsetNodeSetParams, "cuGraphExecMemsetNodeSetParams", 10020, 0, "cuGraphExecMemsetNodeSetParams",        \
    nullptr, 0, (CUgraphExec exec, CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS* params, CUcontext ctx),            \
    (exec, node, params, ctx))                                                                                         \
  X(GraphExecHostNodeSetParams, "cuGraphExecHostNodeSetParams", 10020, 0, "cuGraphExecHostNodeSetParams", nullptr, 0,  \
    (CUgraphExec exec, CUgraphNode node, const CUDA_HOST_NODE_PARAMS* params), (exec, node, params))                   \
  X(GraphExecChildGraphNodeSetParams, "cuGraphExecChildGraphNodeSetParams", 11010, 0,                                  \
    "cuGraphExecChildGraphNodeSetParams", nullptr, 0, (CUgraphExec exec, CUgraphNode node, CUgraph child),             \
    (exec, node, child))                                                                                               \
  X(GraphExecEventRecordNodeSetEvent, "cuGraphExecEventRecordNodeSetEvent", 11010, 0,                                  \
    "cuGraphExecEventRecordNodeSetEvent", nullptr, 0, (CUgraphExec exec, CUgraphNode node, CUevent event),             \
    (exec, node, event))                                                                                               \
  X(GraphExecEventWaitNodeSetEvent, "cuGraphExecEventWaitNodeSetEvent", 11010, 0, "cuGraphExecEventWaitNodeSetEvent",  \
    nullptr, 0, (CUgraphExec exec, CUgraphNode node, CUevent event), (exec, node, event))                              \
  X(GraphExecExternalSemaphoresSignalNodeSetParams, "cuGraphExecExternalSemaphoresSignalNodeSetParams", 11020, 0,      \
    "cuGraphExecExternalSemaphoresSignalNodeSetParams", nullptr, 0,                                                    \
    (CUgraphExec exec, CUgraphNode node, const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS* params), (exec, node, params))         \
  X(GraphExecExternalSemaphoresWaitNodeSetParams, "cuGraphExecExternalSemaphoresWaitNodeSetParams", 11020, 0,          \
    "cuGraphExecExternalSemaphoresWaitNodeSetParams", nullptr, 0,                                                      \
    (CUgraphExec exec, CUgraphNode node, const CUDA_EXT_SEM_WAIT_NODE_PARAMS* params), (exec, node, params))           \
  X(GraphExecBatchMemOpNodeSetParams, "cuGraphExecBatchMemOpNodeSetParams", 11070, 0,                                  \
    "cuGraphExecBatchMemOpNodeSetParams", nullptr, 0,                                                                  \
    (CUgraphExec exec, CUgraphNode node, const CUDA_BATCH_MEM_OP_NODE_PARAMS* params), (exec, node, params))           \
  X(GraphNodeSetEnabled, "cuGraphNodeSetEnabled", 11060, 0, "cuGraphNodeSetEnabled", nullptr, 0,                       \
    (CUgraphExec exec, CUgraphNode node, unsigned enabled), (exec, node, enabled))                                     \
  X(GraphExecNodeSetParams, "cuGraphExecNodeSetParams", 12020, 0, "cuGraphExecNodeSetParams", nullptr, 0,              \
    (CUgraphExec exec, CUgraphNode node, CUgraphNodeParams * params), (exec, node, params))                            \
  X(GraphExecUpdateV1, "cuGraphExecUpdate", 10020, 12000, "cuGraphExecUpdate", nullptr, 0,                             \
    (CUgraphExec exec, CUgraph graph, CUgraphNode * error_node, CUgraphExecUpdateResult * result),                     \
    (exec, graph, error_node, result))                                                                                 \
  X(GraphExecDestroy, "cuGraphExecDestroy", 10000, 0, "cuGraphExecDestroy", nullptr, 0, (CUgraphExec exec), (exec))    \
  X(GraphUpload, "cuGraphUpload", 11010, 0, "cuGraphUpload", "cuGraphUpload_ptsz", 1,                                  \
    (CUgraphExec exec, CUstream stream), (exec, stream))                                                               \
  X(StreamBeginCapture, "cuStreamBeginCapture", 10010, 0, "cuStreamBeginCapture_v2", "cuStreamBeginCapture_v2_ptsz",   \
    1, (CUstream stream, CUstreamCaptureMode mode), (stream, mode))                                                    \
  X(StreamBeginCaptureToGraph, "cuStreamBeginCaptureToGraph", 12030, 0, "cuStreamBeginCaptureToGraph",                 \
    "cuStreamBeginCaptureToGraph_ptsz", 1,                                                                             \
    (CUstream stream, CUgraph graph, const CUgraphNode* deps, const CUgraphEdgeData* edges, size_t n,                  \
     CUstreamCaptureMode mode),                                                                                        \
    (stream, graph, deps, edges, n, mode))                                                                             \
  X(StreamEndCapture, "cuStreamEndCapture", 10000, 0, "cuStreamEndCapture", "cuStreamEndCapture_ptsz", 1,              \
    (CUstream stream, CUgraph * graph), (stream, graph))                                                               \
  X(StreamQuery, "cuStreamQuery", 2000, 0, "cuStreamQuery", "cuStreamQuery_ptsz", 1, (CUstream stream), (stream))      \
  X(EventQueryHook, "cuEventQuery", 2000, 0, "cuEventQuery", nullptr, 0, (CUevent event), (event))                     \
  X(LaunchHostFunc, "cuLaunchHostFunc", 10000, 0, "cuLaunchHostFunc", "cuLaunchHostFunc_ptsz", 1,                      \
    (CUstream stream, CUhostFn host_fn, void* data), (stream, host_fn, data))                                          \
  X(StreamAddCallback, "cuStreamAddCallback", 5000, 0, "cuStreamAddCallback", "cuStreamAddCallback_ptsz", 1,           \
    (CUstream stream, CUstreamCallback callback, void* data, unsigned flags), (stream, callback, data, flags))         \
  X(Memcpy2D, "cuMemcpy2D", 3020, 0, "cuMemcpy2D_v2", "cuMemcpy2D_v2_ptds", 1, (const CUDA_MEMCPY2D* copy), (copy))    \
  X(Memcpy2DAsync, "cuMemcpy2DAsync", 3020, 0, "cuMemcpy2DAsync_v2", "cuMemcpy2DAsync_v2_ptsz", 1,                     \
    (const CUDA_MEMCPY2D* copy, CUstream stream), (copy, stream))                                                      \
  X(Memcpy3D, "cuMemcpy3D", 3020, 0, "cuMemcpy3D_v2", "cuMemcpy3D_v2_ptds", 1, (const CUDA_MEMCPY3D* copy), (copy))    \
  X(Memcpy3DAsync, "cuMemcpy3DAsync", 3020, 0, "cuMemcpy3DAsync_v2", "cuMemcpy3DAsync_v2_ptsz", 1,                     \
    (const CUDA_MEMCPY3D* copy, CUstream stream), (copy, stream))                                                      \
  X(MemcpyPeer, "cuMemcpyPeer", 4000, 0, "cuMemcpyPeer", "cuMemcpyPeer_ptds", 1,                                       \
    (CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t bytes),                            \
    (dst, dst_ctx, src, src_ctx, bytes))                                                                               \
  X(MemcpyPeerAsync, "cuMemcpyPeerAsync", 4000, 0, "cuMemcpyPeerAsync", "cuMemcpyPeerAsync_ptsz", 1,                   \
    (CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t bytes, CUstream stream),           \
    (dst, dst_ctx, src, src_ctx, bytes, stream))                                                                       \
  X(CtxDestroy, "cuCtxDestroy", 4000, 0, "cuCtxDestroy_v2", nullptr, 0, (CUcontext ctx), (ctx))                        \
  X(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", 11000, 0, "cuDevicePrimaryCtxRelease_v2", nullptr, 0,        \
    (CUdevice dev), (dev))                                                                                             \
  X(DevicePrimaryCtxReset, "cuDevicePrimaryCtxReset", 11000, 0, "cuDevicePrimaryCtxReset_v2", nullptr, 0,              \
    (CUdevice dev), (dev))

enum class Api : int {
#define KFUSE_X(ID, ...) ID,
  KFUSE_DRIVER_HOOKS(KFUSE_X)
#undef KFUSE_X
      kCount
};

// Variant of a hooked API: the legacy default-stream function, or the per-thread default stream one.
enum Variant : int { kLegacy = 0, kPerThread = 1 };

// The driver's own functions behind the hooks, plus the queries clients need. Tests and benchmarks fill it
// with a fake driver; the interposer fills it from the real one.
struct DriverTable {
#define KFUSE_X(ID, BASE, MINV, MAXV, SYM, PTSZ, HAS_PTSZ, PARAMS, ARGS) \
  using ID##Fn = CUresult(CUDAAPI*) PARAMS;                              \
  std::atomic<ID##Fn> ID[2] = {nullptr, nullptr};
  KFUSE_DRIVER_HOOKS(KFUSE_X)
#undef KFUSE_X
  // Queries (not hooked; resolved by name from the driver).
  std::atomic<CUresult(CUDAAPI*)(CUfunction, size_t, size_t*, size_t*)> FuncGetParamInfo{nullptr};
  std::atomic<CUresult(CUDAAPI*)(const char**, CUfunction)> FuncGetName{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUmodule*, CUfunction)> FuncGetModule{nullptr};
  std::atomic<CUresult(CUDAAPI*)(int*, CUfunction_attribute, CUfunction)> FuncGetAttribute{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUkernel, size_t, size_t*, size_t*)> KernelGetParamInfo{nullptr};
  std::atomic<CUresult(CUDAAPI*)(const char**, CUkernel)> KernelGetName{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUlibrary*, CUkernel)> KernelGetLibrary{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUdevice*)> CtxGetDevice{nullptr};
  std::atomic<CUresult(CUDAAPI*)(char*, int, CUdevice)> DeviceGetName{nullptr};
  std::atomic<CUresult(CUDAAPI*)(int*, CUdevice_attribute, CUdevice)> DeviceGetAttribute{nullptr};
  std::atomic<CUresult(CUDAAPI*)(size_t*, CUdevice)> DeviceTotalMem{nullptr};
  // Events for `--gpu-time` (the driver's own functions, never the hooked cuEventRecord).
  std::atomic<CUresult(CUDAAPI*)(CUevent*, unsigned)> EventCreate{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUevent, CUstream)> EventRecordDirect{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUevent)> EventQuery{nullptr};
  std::atomic<CUresult(CUDAAPI*)(float*, CUevent, CUevent)> EventElapsedTime{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUevent)> EventDestroy{nullptr};
  // Only in the emulator's stand-in driver: per-launch counters (C ABI of kfuse/emulator/standin.h).
  std::atomic<int (*)(uint64_t sequence, void* counters)> EmuGetLaunch{nullptr};
  std::atomic<uint64_t (*)()> EmuThreadLastLaunch{nullptr};  // the calling thread's last launch
  std::atomic<CUresult(CUDAAPI*)(CUstream, CUstreamCaptureStatus*)> StreamIsCapturing{nullptr};
  // Reading a graph's nodes and edges when it is instantiated (the hook recorder).
  std::atomic<CUresult(CUDAAPI*)(CUgraph, CUgraphNode*, size_t*)> GraphGetNodes{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUgraph, CUgraphNode*, CUgraphNode*, CUgraphEdgeData*, size_t*)> GraphGetEdges{
      nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUgraphNode, CUgraphNodeType*)> GraphNodeGetType{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS*)> GraphKernelNodeGetParams{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUgraphNode, CUDA_MEMCPY3D*)> GraphMemcpyNodeGetParams{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUgraphNode, CUDA_MEMSET_NODE_PARAMS*)> GraphMemsetNodeGetParams{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUgraphNode, CUgraph*)> GraphChildGraphNodeGetGraph{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUgraphNode, CUkernelNodeAttrID, CUkernelNodeAttrValue*)> GraphKernelNodeGetAttribute{
      nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUgraphNode, CUevent*)> GraphEventRecordNodeGetEvent{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUgraphNode, CUevent*)> GraphEventWaitNodeGetEvent{nullptr};
  // Rewriting a graph at instantiate (the injector): a clone whose node chains are replaced by fused kernel nodes.
  std::atomic<CUresult(CUDAAPI*)(CUgraph*, CUgraph)> GraphClone{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUgraph)> GraphDestroyDirect{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUgraphExec)> GraphExecDestroyDirect{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, const CUDA_KERNEL_NODE_PARAMS*)>
      GraphAddKernelNode{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUgraph, const CUgraphNode*, const CUgraphNode*, const CUgraphEdgeData*, size_t)>
      GraphAddDependencies{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUgraphNode)> GraphDestroyNode{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUgraphNode*, CUgraphNode, CUgraph)> GraphNodeFindInClone{nullptr};
  // For the injector: loading fused kernels, knowing allocations, shadow copies for --validate.
  std::atomic<CUresult(CUDAAPI*)(CUfunction*, CUmodule, const char*)> ModuleGetFunction{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUmodule*, CUlibrary)> LibraryGetModule{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUcontext*)> CtxGetCurrent{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUdeviceptr*, size_t*, CUdeviceptr)> MemGetAddressRange{nullptr};
  std::atomic<CUresult(CUDAAPI*)()> CtxSynchronizeDirect{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUdeviceptr*, size_t)> MemAllocDirect{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUdeviceptr)> MemFreeDirect{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUdeviceptr, CUdeviceptr, size_t)> MemcpyDtoDDirect{nullptr};
  std::atomic<CUresult(CUDAAPI*)(void*, CUdeviceptr, size_t)> MemcpyDtoHDirect{nullptr};
  std::atomic<CUresult(CUDAAPI*)(CUdeviceptr, const void*, size_t)> MemcpyHtoDDirect{nullptr};

  // Fills the query slots through `lookup(name)` (a dlsym-like function returning nullptr when absent).
  void resolveQueries(void* (*lookup)(const char* name, void* user), void* user);

  // The module of a launched function, under the handle its image is recorded under (HookRecorder::recordModule /
  // recordLibrary, the injector's noteModule): cuFuncGetModule, else, for a CUkernel (what the CUDA runtime launches;
  // a GPU driver's cuFunc* queries refuse it), its library's module in this context (cuKernelGetLibrary +
  // cuLibraryGetModule), else the library handle itself. nullptr when the driver cannot say.
  CUmodule functionModule(CUfunction f) const;
  // The function's (mangled) name: cuFuncGetName, else cuKernelGetName. nullptr when the driver cannot say.
  const char* functionName(CUfunction f) const;
};

// What the wrappers call. Default methods forward to the table; overriding methods must forward themselves
// (or deliberately not). `variant` says which driver function the application asked for.
class HookClient {
 public:
  explicit HookClient(DriverTable& table) : table_(table) {}
  virtual ~HookClient() = default;
  DriverTable& table() const { return table_; }

#define KFUSE_X(ID, BASE, MINV, MAXV, SYM, PTSZ, HAS_PTSZ, PARAMS, ARGS) \
  virtual CUresult ID KFUSE_WITH_VARIANT_PARAM PARAMS {                  \
    auto fn = table_.ID[variant].load(std::memory_order_relaxed);        \
    if (!fn) fn = table_.ID[0].load(std::memory_order_relaxed);          \
    return fn ? fn ARGS : CUDA_ERROR_NOT_INITIALIZED;                    \
  }
  KFUSE_DRIVER_HOOKS(KFUSE_X)
#undef KFUSE_X

 private:
  DriverTable& table_;
};

struct ApiInfo {
  const char* base;  // name cuGetProcAddress is asked for
  int min_version, max_version;
  const char* symbol;             // exported name
  const char* per_thread_symbol;  // exported _ptsz/_ptds name, or nullptr
};
const ApiInfo& apiInfo(Api api);

// dlsym as the C library implements it (never an interposed one), and the driver's handle: libcuda.so.1 if it
// is loaded (or after loading it, when `load`); nullptr if there is none.
void* realDlsym(void* handle, const char* name);
void* driverHandle(bool load);

// The global interposition state: one DriverTable for the real driver and the installed client.
class Interposer {
 public:
  static DriverTable& driver();

  // Installs `client` (nullptr: forward everything to driver()). The client must outlive every call that may
  // still be running through it: clients are never destroyed while the process runs.
  static void install(HookClient* client);
  static HookClient* client();

  // Given what the driver returned for a cuGetProcAddress lookup (symbol, version, flags) or a dlsym of an
  // exported name (version = -1), returns what the application should get instead: a wrapper for hooked APIs
  // (recording the driver's function in driver()), our cuGetProcAddress wrappers for "cuGetProcAddress", or
  // `real` unchanged.
  static void* resolveProc(const char* symbol, int version, uint64_t flags, void* real);
  static void* resolveSymbol(const char* name, void* real);

  // The wrapper handed out for (api, variant): for tests and the preload library's direct exports.
  static void* wrapper(Api api, int variant);

  // Our own cuGetProcAddress implementations (5-argument _v2 and legacy 4-argument).
  static void* getProcAddressV2Wrapper();
  static void* getProcAddressLegacyWrapper();
  // The driver's cuGetProcAddress_v2 / legacy, used by the wrappers; set by resolve*() or explicitly.
  static void setRealGetProcAddress(void* v2, void* legacy);

  // Where the wrappers find a driver function they have not seen resolved (direct exports): `lookup(symbol)`.
  static void setFallbackLookup(void* (*lookup)(const char* symbol));
  // Functions inside the shared object containing `address` are ours: never taken for the driver's (a dlsym
  // through RTLD_DEFAULT finds our own exports first).
  static void setOwnObject(const void* address);

  // Counters for diagnostics and tests.
  static uint64_t hookedLookups();
  static uint64_t mismatchedLookups();  // a second, different driver function for an occupied slot
};

}  // namespace kfuse::hooks
