// Injector: the HookClient behind libkfuse_inject.so (`kfuse run --plan`). It replaces, at run time, a sequence of
// launches that a plan describes by the plan's fused kernel, when every predicate of the plan holds for the
// arguments actually passed; anything else reaches the driver unchanged and in order. docs/injector.md.
//
// Matching, per stream: a launch of a plan's first kernel is deferred (its arguments copied into fixed storage);
// launches continuing the pattern are deferred too; when the pattern is complete and every predicate holds, the
// fused kernel is launched instead. A launch that does not continue it, and every API call that can observe or
// order the stream's work (synchronisation, event record/query/wait, copies and sets, host functions, graph launch
// and capture, frees, module unload, context teardown, cooperative launches, cuLaunchKernelEx with attributes),
// first issues the deferred launches unchanged, in order. Work on the legacy default stream, which orders against
// every blocking stream, flushes every other stream, and work elsewhere flushes the legacy stream.
//
// Thread-safety: every hook may be called from any thread; streams are matched independently (one lock per
// stream slot). Allocations made through the hooks are tracked, so predicates about buffers rarely ask the driver.
// The launch path allocates nothing: stream slots, argument storage and the function table are
// sized when the injector is made. The injector must outlive every call through it (never destroyed while hooks
// are live). A failure inside kfuse disables the plan concerned and passes through; it never changes what the
// application computes.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kfuse/hooks/driver_hooks.h"
#include "kfuse/inject/runtime_plan.h"

namespace kfuse::inject {

struct InjectorOptions {
  int validate = 0;  // --validate=N: check the first N occurrences of each plan (and launches of each rewritten graph)
  // With --validate on a GPU, each validated occurrence also times the fused kernel against the originals (after
  // one warm-up, this many runs each, medians compared): a plan measured slower is disabled. 0: no timing.
  int time_runs = 5;
  bool log = false;  // one stderr line per flush and per fused occurrence (KFUSE_INJECT_LOG=1)
  // Rewrite CUDA graphs at instantiate and exec update (`kfuse run --no-graphs`, KFUSE_REWRITE_GRAPHS=0: off). The
  // application's exec stays the driver's own, made from its graph; a rewritten clone instantiated beside it is
  // launched in its place until a per-node exec setter changes a node that a fused node replaced (the application's
  // exec, which got every setter, runs from then on). docs/injector.md.
  bool rewrite_graphs = true;
  size_t stream_slots = 64;  // streams that can hold a pattern at once (per-thread default streams count each)
};

// Why deferred launches were issued unchanged. Names (flushReasonName) are what the statistics show.
enum class FlushReason : int {
  kOtherKernel,   // the next launch on the stream did not continue the pattern
  kPredicate,     // the pattern was complete but a predicate failed (per-plan counts say which)
  kLegacyStream,  // work on the legacy default stream (or deferred work there, and work elsewhere)
  kStreamSync,
  kStreamQuery,
  kContextSync,
  kEventRecord,
  kEventSync,
  kEventQuery,
  kStreamWaitEvent,
  kMemcpy,
  kMemset,
  kFree,
  kHostFunc,
  kGraph,  // graph launch, stream capture begin/end
  kModuleUnload,
  kContextTeardown,
  kCooperativeLaunch,
  kLaunchAttributes,  // cuLaunchKernelEx with launch attributes
  kStreamDestroy,
  kUnavailable,  // the plan was disabled, or its fused kernel could not be loaded
  kExit,
  kCount
};
const char* flushReasonName(FlushReason r);

struct PlanStats {
  std::string dir, label, fused_name;
  uint64_t occurrences_fused = 0;
  uint64_t predicate_failures[5] = {};  // by rewriter::Predicate::Kind
  uint64_t validations_passed = 0, validations_failed = 0;
  // --validate on a GPU: the medians of the last timed occurrence, ns (0: not timed), and why it was not timed.
  uint64_t timed_originals_ns = 0, timed_fused_ns = 0;
  std::string not_timed;
  std::string disabled;  // why the plan stopped being used; empty while enabled
};

struct InjectorStats {
  uint64_t launches_seen = 0;    // launches the application made
  uint64_t launches_issued = 0;  // launches kfuse issued to the driver (originals + fused)
  uint64_t fused_launches = 0;
  uint64_t deferred = 0;                                         // launches held back at least once
  uint64_t flushes[static_cast<int>(FlushReason::kCount)] = {};  // flush events by reason
  uint64_t flushed_launches = 0;                                 // launches issued by flushes
  uint64_t unknown_functions = 0;  // functions whose module kfuse did not see loaded, or whose layout differs
  uint64_t streams_over_capacity = 0;
  uint64_t time_in_kfuse_ns = 0;  // CPU time in matching, flushing and fusing (passthrough sampled, see .cpp)
  // CUDA graphs instantiated (or exec-updated) from a rewritten clone; node chains replaced by a fused kernel node in
  // them; chains matching a plan's kernels left unchanged (a predicate failed, no fused kernel).
  uint64_t graphs_rewritten = 0;
  uint64_t graph_chains_fused = 0;
  uint64_t graph_chains_refused = 0;
  uint64_t graph_execs_unfused = 0;  // rewritten execs that went back to the application's graph (see unfuse)
  std::vector<PlanStats> plans;
};

class Injector : public hooks::HookClient {
 public:
  Injector(hooks::DriverTable& table, std::vector<RuntimePlan> plans, InjectorOptions options = {});
  ~Injector() override;

  // Issues every deferred launch (process exit).
  void flushAll(FlushReason why);
  InjectorStats stats() const;
  // The statistics as JSON (schemas/run_stats.schema.json) and as a few lines for stderr.
  static std::string statsJson(const InjectorStats& s);
  static std::string statsSummary(const InjectorStats& s);

  // ---- hooks ----
  CUresult LaunchKernel(int variant, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shmem, CUstream stream, void** params, void** extra) override;
  CUresult LaunchKernelEx(int variant, const CUlaunchConfig* config, CUfunction f, void** params,
                          void** extra) override;
  CUresult LaunchCooperativeKernel(int variant, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                   unsigned by, unsigned bz, unsigned shmem, CUstream stream, void** params) override;
  CUresult ModuleLoadData(int variant, CUmodule* module, const void* image) override;
  CUresult ModuleLoadDataEx(int variant, CUmodule* module, const void* image, unsigned n, CUjit_option* options,
                            void** values) override;
  CUresult ModuleLoadFatBinary(int variant, CUmodule* module, const void* image) override;
  CUresult ModuleLoad(int variant, CUmodule* module, const char* fname) override;
  CUresult LibraryLoadData(int variant, CUlibrary* library, const void* code, CUjit_option* jit_options,
                           void** jit_values, unsigned n_jit, CUlibraryOption* library_options, void** library_values,
                           unsigned n_library) override;
  CUresult ModuleUnload(int variant, CUmodule module) override;
  CUresult MemAlloc(int variant, CUdeviceptr* dptr, size_t bytes) override;
  CUresult MemAllocPitch(int variant, CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                         unsigned elem) override;
  CUresult MemAllocManaged(int variant, CUdeviceptr* dptr, size_t bytes, unsigned flags) override;
  CUresult MemAllocAsync(int variant, CUdeviceptr* dptr, size_t bytes, CUstream stream) override;
  CUresult MemMap(int variant, CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) override;
  CUresult MemCreate(int variant, CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                     unsigned long long flags) override;
  CUresult MemFree(int variant, CUdeviceptr dptr) override;
  CUresult MemFreeAsync(int variant, CUdeviceptr dptr, CUstream stream) override;
  CUresult MemFreeHost(int variant, void* p) override;
  CUresult MemUnmap(int variant, CUdeviceptr ptr, size_t size) override;
  CUresult Memcpy(int variant, CUdeviceptr dst, CUdeviceptr src, size_t bytes) override;
  CUresult MemcpyAsync(int variant, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) override;
  CUresult MemcpyHtoD(int variant, CUdeviceptr dst, const void* src, size_t bytes) override;
  CUresult MemcpyDtoH(int variant, void* dst, CUdeviceptr src, size_t bytes) override;
  CUresult MemcpyDtoD(int variant, CUdeviceptr dst, CUdeviceptr src, size_t bytes) override;
  CUresult MemcpyHtoDAsync(int variant, CUdeviceptr dst, const void* src, size_t bytes, CUstream stream) override;
  CUresult MemcpyDtoHAsync(int variant, void* dst, CUdeviceptr src, size_t bytes, CUstream stream) override;
  CUresult MemcpyDtoDAsync(int variant, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) override;
  CUresult Memcpy2D(int variant, const CUDA_MEMCPY2D* copy) override;
  CUresult Memcpy2DAsync(int variant, const CUDA_MEMCPY2D* copy, CUstream stream) override;
  CUresult Memcpy3D(int variant, const CUDA_MEMCPY3D* copy) override;
  CUresult Memcpy3DAsync(int variant, const CUDA_MEMCPY3D* copy, CUstream stream) override;
  CUresult MemcpyPeer(int variant, CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                      size_t bytes) override;
  CUresult MemcpyPeerAsync(int variant, CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                           size_t bytes, CUstream stream) override;
  CUresult MemsetD8(int variant, CUdeviceptr dst, unsigned char value, size_t n) override;
  CUresult MemsetD16(int variant, CUdeviceptr dst, unsigned short value, size_t n) override;
  CUresult MemsetD32(int variant, CUdeviceptr dst, unsigned int value, size_t n) override;
  CUresult MemsetD8Async(int variant, CUdeviceptr dst, unsigned char value, size_t n, CUstream stream) override;
  CUresult MemsetD16Async(int variant, CUdeviceptr dst, unsigned short value, size_t n, CUstream stream) override;
  CUresult MemsetD32Async(int variant, CUdeviceptr dst, unsigned int value, size_t n, CUstream stream) override;
  CUresult CtxSynchronize(int variant) override;
  CUresult CtxSynchronizeV2(int variant, CUcontext ctx) override;
  CUresult StreamSynchronize(int variant, CUstream stream) override;
  CUresult StreamQuery(int variant, CUstream stream) override;
  CUresult StreamDestroy(int variant, CUstream stream) override;
  CUresult EventSynchronize(int variant, CUevent event) override;
  CUresult EventQueryHook(int variant, CUevent event) override;
  CUresult EventRecord(int variant, CUevent event, CUstream stream) override;
  CUresult EventRecordWithFlags(int variant, CUevent event, CUstream stream, unsigned flags) override;
  CUresult StreamWaitEvent(int variant, CUstream stream, CUevent event, unsigned flags) override;
  CUresult LaunchHostFunc(int variant, CUstream stream, CUhostFn host_fn, void* data) override;
  CUresult StreamAddCallback(int variant, CUstream stream, CUstreamCallback callback, void* data,
                             unsigned flags) override;
  CUresult GraphLaunch(int variant, CUgraphExec graph, CUstream stream) override;
  CUresult GraphInstantiateWithFlags(int variant, CUgraphExec* exec, CUgraph graph, unsigned long long flags) override;
  CUresult GraphInstantiateWithParams(int variant, CUgraphExec* exec, CUgraph graph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS* params) override;
  CUresult GraphExecUpdate(int variant, CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo* info) override;
  CUresult GraphExecUpdateV1(int variant, CUgraphExec exec, CUgraph graph, CUgraphNode* error_node,
                             CUgraphExecUpdateResult* result) override;
  CUresult GraphExecDestroy(int variant, CUgraphExec exec) override;
  CUresult GraphUpload(int variant, CUgraphExec exec, CUstream stream) override;
  CUresult GraphExecKernelNodeSetParams(int variant, CUgraphExec exec, CUgraphNode node,
                                        const CUDA_KERNEL_NODE_PARAMS* params) override;
  CUresult GraphExecKernelNodeSetParamsV1(int variant, CUgraphExec exec, CUgraphNode node,
                                          const CUDA_KERNEL_NODE_PARAMS_v1* params) override;
  CUresult GraphExecMemcpyNodeSetParams(int variant, CUgraphExec exec, CUgraphNode node, const CUDA_MEMCPY3D* copy,
                                        CUcontext ctx) override;
  CUresult GraphExecMemsetNodeSetParams(int variant, CUgraphExec exec, CUgraphNode node,
                                        const CUDA_MEMSET_NODE_PARAMS* params, CUcontext ctx) override;
  CUresult GraphExecHostNodeSetParams(int variant, CUgraphExec exec, CUgraphNode node,
                                      const CUDA_HOST_NODE_PARAMS* params) override;
  CUresult GraphExecChildGraphNodeSetParams(int variant, CUgraphExec exec, CUgraphNode node, CUgraph child) override;
  CUresult GraphExecEventRecordNodeSetEvent(int variant, CUgraphExec exec, CUgraphNode node, CUevent event) override;
  CUresult GraphExecEventWaitNodeSetEvent(int variant, CUgraphExec exec, CUgraphNode node, CUevent event) override;
  CUresult GraphExecExternalSemaphoresSignalNodeSetParams(int variant, CUgraphExec exec, CUgraphNode node,
                                                          const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS* params) override;
  CUresult GraphExecExternalSemaphoresWaitNodeSetParams(int variant, CUgraphExec exec, CUgraphNode node,
                                                        const CUDA_EXT_SEM_WAIT_NODE_PARAMS* params) override;
  CUresult GraphExecBatchMemOpNodeSetParams(int variant, CUgraphExec exec, CUgraphNode node,
                                            const CUDA_BATCH_MEM_OP_NODE_PARAMS* params) override;
  CUresult GraphNodeSetEnabled(int variant, CUgraphExec exec, CUgraphNode node, unsigned enabled) override;
  CUresult GraphExecNodeSetParams(int variant, CUgraphExec exec, CUgraphNode node, CUgraphNodeParams* params) override;
  CUresult StreamBeginCapture(int variant, CUstream stream, CUstreamCaptureMode mode) override;
  CUresult StreamBeginCaptureToGraph(int variant, CUstream stream, CUgraph graph, const CUgraphNode* deps,
                                     const CUgraphEdgeData* edges, size_t n, CUstreamCaptureMode mode) override;
  CUresult StreamEndCapture(int variant, CUstream stream, CUgraph* graph) override;
  CUresult CtxDestroy(int variant, CUcontext ctx) override;
  CUresult DevicePrimaryCtxRelease(int variant, CUdevice dev) override;
  CUresult DevicePrimaryCtxReset(int variant, CUdevice dev) override;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kfuse::inject
