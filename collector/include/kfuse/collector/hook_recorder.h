// HookRecorder: the hook backend. A HookClient that forwards every hooked driver call and records it into a
// TraceSink: launches (function, grid/block, shared memory, stream, raw argument bytes laid out per
// cuFuncGetParamInfo, CPU timestamps), module loads with their images, allocations and frees, memcpy/memset,
// synchronizations and event records.
//
// Launch path: no allocation, no lock other than the sink's queue lock, one driver call less than the
// application made (none): a function's parameter layout and name are queried once, the first time it is
// launched, and kept in a fixed-size lock-free table (kFunctionSlots functions, kParamPool parameters in all;
// beyond that launches are recorded without argument layout and counted). With enableGpuTime() each launch is also
// bracketed by two driver event records from a pool sized once (GpuTimer, gpu_timer.h); pairs are resolved at
// the application's synchronizations, never on the launch path.
// Thread-safe; the recorder must outlive every call through it (it is never destroyed while hooks are live).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kfuse/collector/events.h"
#include "kfuse/collector/trace_sink.h"
#include "kfuse/hooks/driver_hooks.h"
#include "kfuse/hooks/module_image.h"

namespace kfuse::collector {

class GpuTimer;

class HookRecorder : public hooks::HookClient {
 public:
  static constexpr size_t kFunctionSlots = 8192;  // power of two
  static constexpr size_t kParamPool = 1u << 16;

  HookRecorder(hooks::DriverTable& table, TraceSink& sink);
  ~HookRecorder() override;

  // Disabled: forward only (after a fork in the child, after the sink failed, when another backend records).
  void setEnabled(bool enabled) { enabled_.store(enabled, std::memory_order_relaxed); }
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

  // Records a launch as if it had been made (used by the CUPTI backend's launch callbacks too): the function's
  // layout is queried on first sight. `flags` are LaunchFlags added to the computed ones.
  // Returns the launch's correlation id.
  int64_t recordLaunch(CUfunction f, const unsigned grid[3], const unsigned block[3], unsigned shmem, CUstream stream,
                       void** params, void** extra, int64_t t0, int64_t t1, uint32_t flags, int64_t correlation_id);
  // Records a loaded module's image (PTX, fatbin or cubin; its size is read from the image) under `handle`, the
  // CUmodule or CUlibrary the driver returned (used by the CUPTI backend's module-load callbacks too).
  void recordModule(uint64_t handle, const void* image);
  // Records the image a cuLibraryLoadData call loaded. Launches name functions of the library's module in the
  // current context (cuFuncGetModule says which; the CUDA runtime loads every fatbin this way), so the image is
  // recorded under that module (cuLibraryGetModule), and under the library only when the driver cannot say.
  void recordLibrary(CUlibrary library, const void* code);
  void recordAlloc(uint64_t address, uint64_t size, core::AllocationKind kind);
  // Stream capture (CUDA graphs): work enqueued on a capturing stream does not run, it becomes a graph node, so it
  // is counted (`work_captured_into_graphs`) instead of recorded. Begin/end are told by the hooks below and by the
  // CUPTI backend; while any capture is open, `capturing` asks the driver (cuStreamIsCapturing), which also covers
  // streams that joined a capture through an event.
  void noteCaptureBegin(CUstream stream, int variant);
  void noteCaptureEnd(CUstream stream, int variant);
  bool capturing(CUstream stream, int variant);
  void noteCapturedWork();
  // A capture that ended with `graph`: instantiating it records the graph as captured on that stream, until it is
  // destroyed.
  void noteCapturedGraph(CUgraph graph, CUstream stream, int variant);
  void noteGraphDestroyed(CUgraph graph);

  // CUDA graphs (hook_recorder_graphs.cpp; used by the CUPTI backend's callbacks too). `recordGraphExec` reads
  // `graph` as it is now (nodes with their parameters, edges, child graphs) and records that `exec` runs it, after an
  // instantiate or an exec update; `recordExecKernelNode` records the new parameters of one kernel node of `exec`;
  // `recordGraphLaunch` records a replay. Errors reading the graph are counted (`graphs_not_read`), never returned.
  void recordGraphExec(CUgraphExec exec, CUgraph graph, GraphExecChange change, int64_t t0, int64_t t1);
  void recordExecKernelNode(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* params, int64_t t0,
                            int64_t t1);
  // `correlation_id`: the CUPTI backend's (its kernel records of the replay carry it); -1 takes a new one.
  void recordGraphLaunch(CUgraphExec exec, CUstream stream, int variant, int64_t t0, int64_t t1,
                         int64_t correlation_id = -1);
  static constexpr size_t kMaxGraphNodes = 1u << 16;  // per graph, child graphs included
  static constexpr int kMaxChildGraphDepth = 8;

  // Records a copy / memset as made (used by the CUPTI backend's callbacks too). `correlation_id` 0: a fresh one;
  // `waits_for_gpu_time`: the GPU times follow in a record with the same correlation id (CUPTI activity).
  void recordCopy(core::MemcpyKind kind, uint64_t dst, uint64_t src, uint64_t bytes, CUstream stream, bool async,
                  int variant, int64_t t0, int64_t t1, int64_t correlation_id = 0, bool waits_for_gpu_time = false);
  void recordSet(uint64_t dst, uint64_t n, uint32_t value, uint32_t elem, CUstream stream, bool async, int variant,
                 int64_t t0, int64_t t1, int64_t correlation_id = 0, bool waits_for_gpu_time = false);

  CUresult LaunchKernel(int variant, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shmem, CUstream stream, void** params, void** extra) override;
  CUresult LaunchKernelEx(int variant, const CUlaunchConfig* config, CUfunction f, void** params,
                          void** extra) override;
  CUresult LaunchCooperativeKernel(int variant, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                   unsigned by, unsigned bz, unsigned shmem, CUstream stream, void** params) override;
  CUresult MemAlloc(int variant, CUdeviceptr* dptr, size_t bytes) override;
  CUresult MemAllocPitch(int variant, CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                         unsigned elem) override;
  CUresult MemAllocManaged(int variant, CUdeviceptr* dptr, size_t bytes, unsigned flags) override;
  CUresult MemAllocAsync(int variant, CUdeviceptr* dptr, size_t bytes, CUstream stream) override;
  CUresult MemAllocHost(int variant, void** pp, size_t bytes) override;
  CUresult MemHostAlloc(int variant, void** pp, size_t bytes, unsigned flags) override;
  CUresult MemFree(int variant, CUdeviceptr dptr) override;
  // Virtual memory management (PyTorch's expandable segments): a mapped range is an allocation until unmapped.
  CUresult MemMap(int variant, CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) override;
  CUresult MemCreate(int variant, CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                     unsigned long long flags) override;
  CUresult MemUnmap(int variant, CUdeviceptr ptr, size_t size) override;
  CUresult MemFreeAsync(int variant, CUdeviceptr dptr, CUstream stream) override;
  CUresult MemFreeHost(int variant, void* p) override;
  CUresult Memcpy(int variant, CUdeviceptr dst, CUdeviceptr src, size_t bytes) override;
  CUresult MemcpyAsync(int variant, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) override;
  CUresult MemcpyHtoD(int variant, CUdeviceptr dst, const void* src, size_t bytes) override;
  CUresult MemcpyDtoH(int variant, void* dst, CUdeviceptr src, size_t bytes) override;
  CUresult MemcpyDtoD(int variant, CUdeviceptr dst, CUdeviceptr src, size_t bytes) override;
  CUresult MemcpyHtoDAsync(int variant, CUdeviceptr dst, const void* src, size_t bytes, CUstream stream) override;
  CUresult MemcpyDtoHAsync(int variant, void* dst, CUdeviceptr src, size_t bytes, CUstream stream) override;
  CUresult MemcpyDtoDAsync(int variant, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) override;
  CUresult MemsetD8(int variant, CUdeviceptr dst, unsigned char value, size_t n) override;
  CUresult MemsetD16(int variant, CUdeviceptr dst, unsigned short value, size_t n) override;
  CUresult MemsetD32(int variant, CUdeviceptr dst, unsigned int value, size_t n) override;
  CUresult MemsetD8Async(int variant, CUdeviceptr dst, unsigned char value, size_t n, CUstream stream) override;
  CUresult MemsetD16Async(int variant, CUdeviceptr dst, unsigned short value, size_t n, CUstream stream) override;
  CUresult MemsetD32Async(int variant, CUdeviceptr dst, unsigned int value, size_t n, CUstream stream) override;
  CUresult ModuleLoadData(int variant, CUmodule* module, const void* image) override;
  CUresult ModuleLoadDataEx(int variant, CUmodule* module, const void* image, unsigned n, CUjit_option* options,
                            void** values) override;
  CUresult ModuleLoadFatBinary(int variant, CUmodule* module, const void* image) override;
  CUresult ModuleLoad(int variant, CUmodule* module, const char* fname) override;
  CUresult ModuleUnload(int variant, CUmodule module) override;
  CUresult LibraryLoadData(int variant, CUlibrary* library, const void* code, CUjit_option* jit_options,
                           void** jit_values, unsigned n_jit, CUlibraryOption* library_options, void** library_values,
                           unsigned n_library) override;
  CUresult CtxSynchronize(int variant) override;
  CUresult CtxSynchronizeV2(int variant, CUcontext ctx) override;
  CUresult StreamSynchronize(int variant, CUstream stream) override;
  CUresult StreamDestroy(int variant, CUstream stream) override;
  CUresult EventSynchronize(int variant, CUevent event) override;
  CUresult EventRecord(int variant, CUevent event, CUstream stream) override;
  CUresult EventRecordWithFlags(int variant, CUevent event, CUstream stream, unsigned flags) override;
  CUresult StreamWaitEvent(int variant, CUstream stream, CUevent event, unsigned flags) override;
  // The kernels inside a graph never pass a launch hook: each launch is a graph_launch row, its kernels the nodes
  // of the graph read at instantiate (or exec update). Also counted (`graph_launches_not_recorded`): the analyzer
  // does not order graph work against launches yet.
  CUresult GraphLaunch(int variant, CUgraphExec graph, CUstream stream) override;
  CUresult GraphInstantiateWithFlags(int variant, CUgraphExec* exec, CUgraph graph, unsigned long long flags) override;
  CUresult GraphInstantiateWithParams(int variant, CUgraphExec* exec, CUgraph graph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS* params) override;
  CUresult GraphExecUpdate(int variant, CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo* info) override;
  // A destroyed graph's handle may come back for another graph: it is no longer the one a capture made.
  CUresult GraphDestroy(int variant, CUgraph graph) override;
  CUresult GraphExecKernelNodeSetParams(int variant, CUgraphExec exec, CUgraphNode node,
                                        const CUDA_KERNEL_NODE_PARAMS* params) override;
  CUresult StreamBeginCapture(int variant, CUstream stream, CUstreamCaptureMode mode) override;
  CUresult StreamBeginCaptureToGraph(int variant, CUstream stream, CUgraph graph, const CUgraphNode* deps,
                                     const CUgraphEdgeData* edges, size_t n, CUstreamCaptureMode mode) override;
  CUresult StreamEndCapture(int variant, CUstream stream, CUgraph* graph) override;

  // `--gpu-time`: from now on, launches get GPU start/end from CUDA events (GpuTimer: a pool of `pairs` event
  // pairs, resolved at the application's synchronizations and by flushGpuTimes()). Call before hooks are live.
  void enableGpuTime(size_t pairs = 4096);
  // Resolves what has completed and releases what has not (at exit, before the sink finishes).
  void flushGpuTimes();
  const GpuTimer* gpuTimer() const { return gpu_timer_.get(); }

  uint64_t functionsSeen() const { return functions_seen_.load(); }

  // Called before describing a function if the table has no query functions yet (the driver may be loaded
  // after the recorder was created).
  void setQueryResolver(void (*resolver)()) { query_resolver_.store(resolver); }

  // Where a launch's argument bytes come from: kernelParams laid out per the function, or an `extra` buffer.
  struct ArgSource {
    void** params = nullptr;
    const ParamLayout* layout = nullptr;
    uint32_t param_count = 0;
    const uint8_t* buffer = nullptr;
    uint32_t size = 0;   // bytes to copy
    uint32_t flags = 0;  // kLaunchLayoutKnown, kLaunchArgsTruncated
  };
  static void copyArgs(uint8_t* dst, const ArgSource& args);  // `args.size` bytes

 private:
  struct FunctionSlot {
    std::atomic<uint64_t> key{0};  // CUfunction; 0 = empty, 1 = removed (module unloaded)
    uint64_t module = 0;
    uint32_t param_count = 0;
    uint32_t first_param = 0;
    uint32_t args_size = 0;
    uint32_t layout_known = 0;
  };

  ArgSource argSource(const FunctionSlot& fs, void** params, void** extra) const;
  // Pushes kGraph, kGraphNode and kGraphEdge events for `graph` (and its child graphs first). False when a query
  // failed (what was read is still pushed).
  bool readGraph(CUgraph graph, Handle parent, core::GraphOrigin origin, Handle stream, int depth, size_t& budget);
  // Pushes one kernel node (kGraphNode, or kGraphExecKernelNode when `exec` is set).
  void pushKernelNode(GraphNodeEvent& e, const CUDA_KERNEL_NODE_PARAMS& p);
  const FunctionSlot* lookup(uint64_t f) const;
  const FunctionSlot* describe(CUfunction f);  // slow path: first launch of `f`
  void emitDevice();
  // On the emulator's stand-in driver: the counters of the launch just made, as "emulated" metrics.
  void recordEmulatedMetrics(const unsigned grid[3], const unsigned block[3], unsigned shmem, int64_t correlation_id);
  void recordFree(uint64_t address, bool host);
  void recordSync(core::SyncKind kind, CUstream stream, CUevent event, int variant, int64_t t0, int64_t t1);
  bool active() const;
  int beginGpuTime(CUstream stream, int variant);
  uint32_t endGpuTime(int slot, CUstream stream, int variant);  // kLaunchWaitsForGpuTime if the pair is complete
  void commitGpuTime(int slot, int64_t correlation_id);
  void cancelGpuTime(int slot);
  void resolveGpuTimes();

  TraceSink& sink_;
  std::atomic<bool> enabled_{true};
  std::unique_ptr<FunctionSlot[]> slots_;
  std::unique_ptr<ParamLayout[]> params_;
  uint32_t params_used_ = 0;
  std::mutex describe_mu_;
  // Under describe_mu_: each loaded module's kernels and their parameter counts (hooks::kernelParamCounts), so that
  // describe() asks the driver for exactly those parameters; a module or kernel absent here is probed instead.
  std::unordered_map<uint64_t, std::unordered_map<std::string, uint32_t>> param_counts_;
  std::atomic<uint64_t> functions_seen_{0};
  std::atomic<bool> device_emitted_{false};
  std::atomic<int> open_captures_{0};
  std::mutex capture_mu_;
  std::vector<Handle> capturing_streams_;               // streams we saw begin a capture, until they end it
  std::unordered_map<Handle, Handle> captured_graphs_;  // CUgraph -> the stream whose capture ended with it
  FunctionSlot unknown_slot_;                           // returned when the table is full
  std::atomic<void (*)()> query_resolver_{nullptr};
  std::unique_ptr<GpuTimer> gpu_timer_;  // null unless enableGpuTime()
};

// Nanoseconds on the clock every kfuse trace from the hook backend uses (CLOCK_REALTIME, like CUPTI's default).
int64_t collectorNowNs();
// The calling thread's kernel id (cached per thread).
int64_t collectorThreadId();

}  // namespace kfuse::collector
