#include "kfuse/collector/hook_recorder.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "gpu_timer.h"
#include "kfuse/emulator/standin.h"

namespace kfuse::collector {
namespace {

// Set while a thread is inside the recorder: driver calls made by the recorder itself (layout queries) that
// come back through an exported hook are forwarded without recording.
__attribute__((tls_model("initial-exec"))) thread_local bool t_in_hook = false;
__attribute__((tls_model("initial-exec"))) thread_local int64_t t_tid = 0;

struct HookScope {
  bool entered;
  HookScope() : entered(!t_in_hook) { t_in_hook = true; }
  ~HookScope() {
    if (entered) t_in_hook = false;
  }
};

constexpr uint64_t kRemoved = 1;

inline uint64_t hashHandle(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

template <class Fn>
Fn pick(const std::atomic<Fn>* slots, int variant) {
  Fn fn = slots[variant].load(std::memory_order_relaxed);
  return fn ? fn : slots[0].load(std::memory_order_relaxed);
}

#define KFUSE_FORWARD(ID, ...)                 \
  auto fn_ = pick(table().ID, variant);        \
  if (!fn_) return CUDA_ERROR_NOT_INITIALIZED; \
  if (!active()) return fn_(__VA_ARGS__);      \
  HookScope scope_;                            \
  const int64_t t0 = collectorNowNs();         \
  const CUresult r = fn_(__VA_ARGS__);         \
  const int64_t t1 = collectorNowNs();         \
  (void)t0;                                    \
  (void)t1;

// KFUSE_FORWARD for launches: with --gpu-time, an event pair brackets the real launch on its stream (outside the
// CPU timestamps). `gt_flags` is kLaunchWaitsForGpuTime when the pair was recorded.
#define KFUSE_FORWARD_TIMED(ID, STREAM, ...)           \
  auto fn_ = pick(table().ID, variant);                \
  if (!fn_) return CUDA_ERROR_NOT_INITIALIZED;         \
  if (!active()) return fn_(__VA_ARGS__);              \
  if (capturing(STREAM, variant)) {                    \
    const CUresult captured_ = fn_(__VA_ARGS__);       \
    if (captured_ == CUDA_SUCCESS) noteCapturedWork(); \
    return captured_;                                  \
  }                                                    \
  HookScope scope_;                                    \
  const int gt_slot = beginGpuTime(STREAM, variant);   \
  const int64_t t0 = collectorNowNs();                 \
  const CUresult r = fn_(__VA_ARGS__);                 \
  const int64_t t1 = collectorNowNs();                 \
  const uint32_t gt_flags = r == CUDA_SUCCESS ? endGpuTime(gt_slot, STREAM, variant) : (cancelGpuTime(gt_slot), 0u);

struct LaunchFill {
  const LaunchEvent* event;
  const HookRecorder::ArgSource* args;
};

void fillLaunch(uint8_t* dst, const void* c) {
  const auto* x = static_cast<const LaunchFill*>(c);
  std::memcpy(dst, x->event, sizeof(LaunchEvent));
  HookRecorder::copyArgs(dst + sizeof(LaunchEvent), *x->args);
}

}  // namespace

int64_t collectorNowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int64_t collectorThreadId() {
  if (t_tid == 0) t_tid = static_cast<int64_t>(syscall(SYS_gettid));
  return t_tid;
}

HookRecorder::HookRecorder(hooks::DriverTable& table, TraceSink& sink)
    : HookClient(table), sink_(sink), slots_(new FunctionSlot[kFunctionSlots]), params_(new ParamLayout[kParamPool]) {}

HookRecorder::~HookRecorder() = default;

void HookRecorder::enableGpuTime(size_t pairs) {
  gpu_timer_ = std::make_unique<GpuTimer>(table(), sink_, pairs);
}

void HookRecorder::flushGpuTimes() {
  if (gpu_timer_) gpu_timer_->resolve(/*final=*/true);
}

int HookRecorder::beginGpuTime(CUstream stream, int variant) {
  if (!gpu_timer_) return -1;
  return gpu_timer_->begin(reinterpret_cast<CUstream>(streamHandle(stream, variant)));
}

uint32_t HookRecorder::endGpuTime(int slot, CUstream stream, int variant) {
  if (slot < 0) return 0;
  return gpu_timer_->end(slot, reinterpret_cast<CUstream>(streamHandle(stream, variant))) ? kLaunchWaitsForGpuTime : 0u;
}

void HookRecorder::commitGpuTime(int slot, int64_t correlation_id) {
  if (slot >= 0) gpu_timer_->commit(slot, correlation_id);
}

void HookRecorder::cancelGpuTime(int slot) {
  if (slot >= 0) gpu_timer_->cancel(slot);
}

void HookRecorder::resolveGpuTimes() {
  if (gpu_timer_) gpu_timer_->resolve(/*final=*/false);
}

bool HookRecorder::active() const {
  return enabled_.load(std::memory_order_relaxed) && !t_in_hook;
}

const HookRecorder::FunctionSlot* HookRecorder::lookup(uint64_t f) const {
  size_t i = hashHandle(f) & (kFunctionSlots - 1);
  for (size_t n = 0; n < kFunctionSlots; ++n, i = (i + 1) & (kFunctionSlots - 1)) {
    const uint64_t k = slots_[i].key.load(std::memory_order_acquire);
    if (k == f) return &slots_[i];
    if (k == 0) return nullptr;
  }
  return nullptr;
}

const HookRecorder::FunctionSlot* HookRecorder::describe(CUfunction f) {
  const auto key = reinterpret_cast<uint64_t>(f);
  std::lock_guard lock(describe_mu_);
  if (const FunctionSlot* s = lookup(key)) return s;
  size_t i = hashHandle(key) & (kFunctionSlots - 1);
  FunctionSlot* slot = nullptr;
  for (size_t n = 0; n < kFunctionSlots; ++n, i = (i + 1) & (kFunctionSlots - 1)) {
    if (slots_[i].key.load(std::memory_order_relaxed) == 0) {
      slot = &slots_[i];
      break;
    }
  }
  if (!slot) return &unknown_slot_;
  if (!table().FuncGetName.load() && !table().KernelGetName.load()) {
    if (auto resolve = query_resolver_.load()) resolve();
  }
  emitDevice();
  hooks::DriverTable& t = table();
  const char* name = t.functionName(f);
  const CUmodule module = t.functionModule(f);
  // Parameter layout. The module image says how many parameters the kernel has (recordModule): the driver is asked
  // for exactly those. Otherwise indices are probed until the driver refuses one (13.0 has no count query), which
  // shows as one failed call per function in the application under compute-sanitizer. A CUkernel cast to CUfunction
  // is asked through the cuKernel* queries when the cuFunc* ones refuse it.
  int64_t image_count = -1;
  if (name) {
    if (auto m = param_counts_.find(reinterpret_cast<uint64_t>(module)); m != param_counts_.end()) {
      if (auto k = m->second.find(name); k != m->second.end()) image_count = k->second;
    }
  }
  if (image_count > static_cast<int64_t>(std::min<size_t>(kMaxParams, kParamPool - params_used_))) image_count = -1;
  uint32_t count = 0, args_size = 0;
  bool known = false;
  auto probe = [&](auto query, auto handle) {
    if (!query) return false;
    count = 0;
    args_size = 0;
    size_t off = 0, size = 0;
    if (image_count == 0) return true;
    CUresult r = query(handle, 0, &off, &size);
    if (r != CUDA_SUCCESS && (image_count > 0 || r != CUDA_ERROR_INVALID_VALUE)) return false;
    while (r == CUDA_SUCCESS && count < kMaxParams && params_used_ + count < kParamPool) {
      params_[params_used_ + count] = ParamLayout{static_cast<uint32_t>(off), static_cast<uint32_t>(size)};
      args_size = std::max<uint32_t>(args_size, static_cast<uint32_t>(off + size));
      ++count;
      if (count == image_count) return true;
      r = query(handle, count, &off, &size);
    }
    return r == CUDA_ERROR_INVALID_VALUE || r == CUDA_SUCCESS;
  };
  known = probe(t.FuncGetParamInfo.load(), f) || probe(t.KernelGetParamInfo.load(), reinterpret_cast<CUkernel>(f));
  if (!known) count = 0;
  int regs = 0, shared = 0;
  if (auto q = t.FuncGetAttribute.load()) {
    if (q(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f) != CUDA_SUCCESS) regs = 0;
    if (q(&shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f) != CUDA_SUCCESS) shared = 0;
  }
  slot->module = reinterpret_cast<uint64_t>(module);
  slot->param_count = count;
  slot->first_param = params_used_;
  slot->args_size = args_size;
  slot->layout_known = known ? 1 : 0;
  params_used_ += count;

  FunctionEvent e;
  e.function = key;
  e.module = slot->module;
  e.param_count = count;
  e.layout_known = slot->layout_known;
  e.registers_per_thread = static_cast<uint32_t>(regs);
  e.static_shared_bytes = static_cast<uint32_t>(shared);
  char fallback[32];
  if (!name) {
    std::snprintf(fallback, sizeof fallback, "kfuse_unnamed_%llx", static_cast<unsigned long long>(key));
    name = fallback;
  }
  e.name_size = static_cast<uint32_t>(strnlen(name, 4096));
  sink_.pushStruct(EventKind::kFunction, e, &params_[slot->first_param], count * sizeof(ParamLayout), name,
                   e.name_size);
  functions_seen_.fetch_add(1, std::memory_order_relaxed);
  slot->key.store(key, std::memory_order_release);  // publish last: readers see a complete slot
  return slot;
}

void HookRecorder::emitDevice() {
  if (device_emitted_.exchange(true)) return;
  hooks::DriverTable& t = table();
  auto getDevice = t.CtxGetDevice.load();
  CUdevice dev = 0;
  if (!getDevice || getDevice(&dev) != CUDA_SUCCESS) return;
  DeviceEvent d;
  d.ordinal = dev;
  if (auto q = t.DeviceGetName.load()) {
    if (q(d.name, sizeof d.name - 1, dev) != CUDA_SUCCESS) d.name[0] = 0;
  }
  if (auto q = t.DeviceGetAttribute.load()) {
    int v = 0;
    if (q(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) == CUDA_SUCCESS) d.cc_major = v;
    if (q(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) == CUDA_SUCCESS) d.cc_minor = v;
    if (q(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) == CUDA_SUCCESS) d.sm_count = v;
    if (q(&v, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev) == CUDA_SUCCESS) d.clock_khz = v;
  }
  if (auto q = t.DeviceTotalMem.load()) {
    size_t bytes = 0;
    if (q(&bytes, dev) == CUDA_SUCCESS) d.memory_bytes = bytes;
  }
  sink_.pushStruct(EventKind::kDevice, d);
}

int64_t HookRecorder::recordLaunch(CUfunction f, const unsigned grid[3], const unsigned block[3], unsigned shmem,
                                   CUstream stream, void** params, void** extra, int64_t t0, int64_t t1, uint32_t flags,
                                   int64_t correlation_id) {
  const auto key = reinterpret_cast<uint64_t>(f);
  const FunctionSlot* fs = lookup(key);
  if (!fs) fs = describe(f);
  LaunchEvent e;
  e.correlation_id = correlation_id ? correlation_id : sink_.nextCorrelationId();
  e.thread_id = collectorThreadId();
  e.function = key;
  e.stream = reinterpret_cast<Handle>(stream);
  e.grid = {grid[0], grid[1], grid[2]};
  e.block = {block[0], block[1], block[2]};
  e.dynamic_shared_bytes = shmem;
  e.api_start_ns = t0;
  e.api_end_ns = t1;
  e.flags = flags;
  const ArgSource args = argSource(*fs, params, extra);
  e.arg_size = args.size;
  e.flags |= args.flags;
  LaunchFill fill{&e, &args};
  sink_.push(EventKind::kLaunch, sizeof e + e.arg_size, &fillLaunch, &fill);
  return e.correlation_id;
}

HookRecorder::ArgSource HookRecorder::argSource(const FunctionSlot& fs, void** params, void** extra) const {
  ArgSource a;
  if (params) {
    a.params = params;
    a.layout = &params_[fs.first_param];
    a.param_count = fs.param_count;
    if (fs.layout_known) {
      a.flags |= kLaunchLayoutKnown;
      a.size = fs.args_size;
    }
  } else if (extra) {
    // {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END}
    const uint8_t* buf = nullptr;
    size_t size = 0;
    for (int i = 0; i < 16 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buf = static_cast<const uint8_t*>(extra[i + 1]);
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1]) size = *static_cast<const size_t*>(extra[i + 1]);
    }
    if (buf) {
      if (size > kMaxArgBytes) {
        size = kMaxArgBytes;
        a.flags |= kLaunchArgsTruncated;
      }
      a.size = static_cast<uint32_t>(size);
      a.buffer = buf;
      if (fs.layout_known) a.flags |= kLaunchLayoutKnown;
    }
  }
  return a;
}

void HookRecorder::copyArgs(uint8_t* dst, const ArgSource& a) {
  if (a.buffer) {
    std::memcpy(dst, a.buffer, a.size);
    return;
  }
  std::memset(dst, 0, a.size);  // padding between parameters
  for (uint32_t i = 0; i < a.param_count; ++i) {
    const ParamLayout& p = a.layout[i];
    if (a.params[i] && p.offset + p.size <= a.size) std::memcpy(dst + p.offset, a.params[i], p.size);
  }
}

namespace {

bool sameLaunch(const KfuseEmuLaunchCounters& c, const unsigned grid[3], const unsigned block[3], unsigned shmem) {
  for (int i = 0; i < 3; ++i) {
    if (c.grid[i] != grid[i] || c.block[i] != block[i]) return false;
  }
  return c.dynamic_shared_bytes == shmem;
}

}  // namespace

void HookRecorder::recordEmulatedMetrics(const unsigned grid[3], const unsigned block[3], unsigned shmem,
                                         int64_t correlation_id) {
  auto get = reinterpret_cast<KfuseEmuGetLaunchFn>(table().EmuGetLaunch.load());
  if (!get) return;
  // The stand-in's launches are synchronous: the calling thread's last launch is this one. Stand-ins without
  // that query: sequence 0 is the latest launch of the process; with other threads launching too, look back a
  // little for the one with this launch's configuration (identical concurrent launches may then be swapped).
  KfuseEmuLaunchCounters c{};
  c.struct_size = sizeof c;
  const auto thread_last = table().EmuThreadLastLaunch.load();
  const uint64_t mine = thread_last ? thread_last() : 0;
  if (get(mine, &c) != 0 || c.version != 1) return;
  const uint64_t latest = c.sequence;
  const uint64_t look_back = mine ? 1 : 16;
  for (uint64_t back = 0; back < look_back && back < latest; ++back) {
    if (back > 0) {
      c = KfuseEmuLaunchCounters{};
      c.struct_size = sizeof c;
      if (get(latest - back, &c) != 0) return;
    }
    if (!c.ok || !sameLaunch(c, grid, block, shmem)) continue;
    struct Item {
      const char* name;
      double value;
      const char* unit;
    };
    const Item items[] = {
        {"dram_bytes_read", static_cast<double>(c.global_load_bytes), "bytes"},
        {"dram_bytes_written", static_cast<double>(c.global_store_bytes), "bytes"},
        {"flops_fp16", static_cast<double>(c.flops_f16), "flop"},
        {"flops_fp32", static_cast<double>(c.flops_f32), "flop"},
        {"flops_fp64", static_cast<double>(c.flops_f64), "flop"},
        {"thread_instructions", static_cast<double>(c.thread_instructions), "inst"},
    };
    for (const Item& it : items) {
      MetricEvent m;
      m.correlation_id = correlation_id;
      m.value = it.value;
      m.source = core::MetricSource::kEmulated;
      std::snprintf(m.name, sizeof m.name, "%s", it.name);
      std::snprintf(m.unit, sizeof m.unit, "%s", it.unit);
      sink_.pushStruct(EventKind::kMetric, m);
    }
    return;
  }
}

CUresult HookRecorder::LaunchKernel(int variant, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                    unsigned by, unsigned bz, unsigned shmem, CUstream stream, void** params,
                                    void** extra) {
  KFUSE_FORWARD_TIMED(LaunchKernel, stream, f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra)
  if (r == CUDA_SUCCESS) {
    const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
    const int64_t corr = recordLaunch(f, grid, block, shmem, reinterpret_cast<CUstream>(streamHandle(stream, variant)),
                                      params, extra, t0, t1, gt_flags, 0);
    if (gt_flags) commitGpuTime(gt_slot, corr);
    recordEmulatedMetrics(grid, block, shmem, corr);
  }
  return r;
}

CUresult HookRecorder::LaunchKernelEx(int variant, const CUlaunchConfig* config, CUfunction f, void** params,
                                      void** extra) {
  CUstream timed_stream = config ? config->hStream : nullptr;
  KFUSE_FORWARD_TIMED(LaunchKernelEx, timed_stream, config, f, params, extra)
  if (r == CUDA_SUCCESS && config) {
    const unsigned grid[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
    const unsigned block[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
    const int64_t corr = recordLaunch(f, grid, block, config->sharedMemBytes,
                                      reinterpret_cast<CUstream>(streamHandle(config->hStream, variant)), params, extra,
                                      t0, t1, (config->numAttrs ? uint32_t{kLaunchHasAttributes} : 0u) | gt_flags, 0);
    if (gt_flags) commitGpuTime(gt_slot, corr);
    recordEmulatedMetrics(grid, block, config->sharedMemBytes, corr);
  }
  return r;
}

CUresult HookRecorder::LaunchCooperativeKernel(int variant, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                               unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream stream,
                                               void** params) {
  KFUSE_FORWARD_TIMED(LaunchCooperativeKernel, stream, f, gx, gy, gz, bx, by, bz, shmem, stream, params)
  if (r == CUDA_SUCCESS) {
    const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
    const int64_t corr = recordLaunch(f, grid, block, shmem, reinterpret_cast<CUstream>(streamHandle(stream, variant)),
                                      params, nullptr, t0, t1, kLaunchCooperative | gt_flags, 0);
    if (gt_flags) commitGpuTime(gt_slot, corr);
    recordEmulatedMetrics(grid, block, shmem, corr);
  }
  return r;
}

void HookRecorder::recordAlloc(uint64_t address, uint64_t size, core::AllocationKind kind) {
  AllocEvent e;
  e.address = address;
  e.size = size;
  e.ns = collectorNowNs();
  e.kind = kind;
  sink_.pushStruct(EventKind::kAlloc, e);
}

void HookRecorder::recordFree(uint64_t address, bool host) {
  FreeEvent e;
  e.address = address;
  e.ns = collectorNowNs();
  e.host = host ? 1 : 0;
  sink_.pushStruct(EventKind::kFree, e);
}

CUresult HookRecorder::MemAlloc(int variant, CUdeviceptr* dptr, size_t bytes) {
  KFUSE_FORWARD(MemAlloc, dptr, bytes)
  if (r == CUDA_SUCCESS && dptr) recordAlloc(*dptr, bytes, core::AllocationKind::kDevice);
  return r;
}

CUresult HookRecorder::MemAllocPitch(int variant, CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                                     unsigned elem) {
  KFUSE_FORWARD(MemAllocPitch, dptr, pitch, width, height, elem)
  if (r == CUDA_SUCCESS && dptr && pitch) recordAlloc(*dptr, uint64_t{*pitch} * height, core::AllocationKind::kDevice);
  return r;
}

CUresult HookRecorder::MemAllocManaged(int variant, CUdeviceptr* dptr, size_t bytes, unsigned flags) {
  KFUSE_FORWARD(MemAllocManaged, dptr, bytes, flags)
  if (r == CUDA_SUCCESS && dptr) recordAlloc(*dptr, bytes, core::AllocationKind::kManaged);
  return r;
}

CUresult HookRecorder::MemAllocAsync(int variant, CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  KFUSE_FORWARD(MemAllocAsync, dptr, bytes, stream)
  if (r == CUDA_SUCCESS && dptr) recordAlloc(*dptr, bytes, core::AllocationKind::kPool);
  return r;
}

CUresult HookRecorder::MemAllocHost(int variant, void** pp, size_t bytes) {
  KFUSE_FORWARD(MemAllocHost, pp, bytes)
  if (r == CUDA_SUCCESS && pp) recordAlloc(reinterpret_cast<uint64_t>(*pp), bytes, core::AllocationKind::kHostPinned);
  return r;
}

CUresult HookRecorder::MemHostAlloc(int variant, void** pp, size_t bytes, unsigned flags) {
  KFUSE_FORWARD(MemHostAlloc, pp, bytes, flags)
  if (r == CUDA_SUCCESS && pp) recordAlloc(reinterpret_cast<uint64_t>(*pp), bytes, core::AllocationKind::kHostPinned);
  return r;
}

CUresult HookRecorder::MemFree(int variant, CUdeviceptr dptr) {
  KFUSE_FORWARD(MemFree, dptr)
  if (r == CUDA_SUCCESS) recordFree(dptr, false);
  return r;
}

CUresult HookRecorder::MemMap(int variant, CUdeviceptr ptr, size_t size, size_t offset,
                              CUmemGenericAllocationHandle handle, unsigned long long flags) {
  KFUSE_FORWARD(MemMap, ptr, size, offset, handle, flags)
  if (r == CUDA_SUCCESS) {
    sink_.pushStruct(EventKind::kAlloc, AllocEvent::mapping(ptr, size, handle, offset, collectorNowNs()));
  }
  return r;
}

CUresult HookRecorder::MemCreate(int variant, CUmemGenericAllocationHandle* handle, size_t size,
                                 const CUmemAllocationProp* prop, unsigned long long flags) {
  KFUSE_FORWARD(MemCreate, handle, size, prop, flags)
  if (r == CUDA_SUCCESS && handle) {
    sink_.pushStruct(EventKind::kAlloc, AllocEvent::physical(*handle, size, collectorNowNs()));
  }
  return r;
}

CUresult HookRecorder::MemUnmap(int variant, CUdeviceptr ptr, size_t size) {
  KFUSE_FORWARD(MemUnmap, ptr, size)
  if (r == CUDA_SUCCESS) recordFree(ptr, false);
  return r;
}

CUresult HookRecorder::MemFreeAsync(int variant, CUdeviceptr dptr, CUstream stream) {
  KFUSE_FORWARD(MemFreeAsync, dptr, stream)
  if (r == CUDA_SUCCESS) recordFree(dptr, false);
  return r;
}

CUresult HookRecorder::MemFreeHost(int variant, void* p) {
  KFUSE_FORWARD(MemFreeHost, p)
  if (r == CUDA_SUCCESS) recordFree(reinterpret_cast<uint64_t>(p), true);
  return r;
}

void HookRecorder::recordCopy(core::MemcpyKind kind, uint64_t dst, uint64_t src, uint64_t bytes, CUstream stream,
                              bool async, int variant, int64_t t0, int64_t t1, int64_t correlation_id,
                              bool waits_for_gpu_time) {
  if (capturing(stream, variant)) return noteCapturedWork();
  MemcpyEvent e;
  e.correlation_id = correlation_id ? correlation_id : sink_.nextCorrelationId();
  e.waits_for_gpu_time = waits_for_gpu_time ? 1 : 0;
  e.thread_id = collectorThreadId();
  e.stream = streamHandle(stream, variant);
  e.src = src;
  e.dst = dst;
  e.bytes = bytes;
  e.kind = kind;
  e.async = async;
  e.api_start_ns = t0;
  e.api_end_ns = t1;
  sink_.pushStruct(EventKind::kMemcpy, e);
}

CUresult HookRecorder::Memcpy(int variant, CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  KFUSE_FORWARD(Memcpy, dst, src, bytes)
  if (r == CUDA_SUCCESS) recordCopy(core::MemcpyKind::kUnknown, dst, src, bytes, nullptr, false, variant, t0, t1);
  return r;
}
CUresult HookRecorder::MemcpyAsync(int variant, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  KFUSE_FORWARD(MemcpyAsync, dst, src, bytes, stream)
  if (r == CUDA_SUCCESS) recordCopy(core::MemcpyKind::kUnknown, dst, src, bytes, stream, true, variant, t0, t1);
  return r;
}
CUresult HookRecorder::MemcpyHtoD(int variant, CUdeviceptr dst, const void* src, size_t bytes) {
  KFUSE_FORWARD(MemcpyHtoD, dst, src, bytes)
  if (r == CUDA_SUCCESS) {
    recordCopy(core::MemcpyKind::kHostToDevice, dst, reinterpret_cast<uint64_t>(src), bytes, nullptr, false, variant,
               t0, t1);
  }
  return r;
}
CUresult HookRecorder::MemcpyDtoH(int variant, void* dst, CUdeviceptr src, size_t bytes) {
  KFUSE_FORWARD(MemcpyDtoH, dst, src, bytes)
  if (r == CUDA_SUCCESS) {
    recordCopy(core::MemcpyKind::kDeviceToHost, reinterpret_cast<uint64_t>(dst), src, bytes, nullptr, false, variant,
               t0, t1);
  }
  resolveGpuTimes();  // a blocking copy waits for the kernels before it, like a synchronization
  return r;
}
CUresult HookRecorder::MemcpyDtoD(int variant, CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  KFUSE_FORWARD(MemcpyDtoD, dst, src, bytes)
  if (r == CUDA_SUCCESS)
    recordCopy(core::MemcpyKind::kDeviceToDevice, dst, src, bytes, nullptr, false, variant, t0, t1);
  return r;
}
CUresult HookRecorder::MemcpyHtoDAsync(int variant, CUdeviceptr dst, const void* src, size_t bytes, CUstream stream) {
  KFUSE_FORWARD(MemcpyHtoDAsync, dst, src, bytes, stream)
  if (r == CUDA_SUCCESS) {
    recordCopy(core::MemcpyKind::kHostToDevice, dst, reinterpret_cast<uint64_t>(src), bytes, stream, true, variant, t0,
               t1);
  }
  return r;
}
CUresult HookRecorder::MemcpyDtoHAsync(int variant, void* dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  KFUSE_FORWARD(MemcpyDtoHAsync, dst, src, bytes, stream)
  if (r == CUDA_SUCCESS) {
    recordCopy(core::MemcpyKind::kDeviceToHost, reinterpret_cast<uint64_t>(dst), src, bytes, stream, true, variant, t0,
               t1);
  }
  return r;
}
CUresult HookRecorder::MemcpyDtoDAsync(int variant, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  KFUSE_FORWARD(MemcpyDtoDAsync, dst, src, bytes, stream)
  if (r == CUDA_SUCCESS) recordCopy(core::MemcpyKind::kDeviceToDevice, dst, src, bytes, stream, true, variant, t0, t1);
  return r;
}

void HookRecorder::recordSet(uint64_t dst, uint64_t n, uint32_t value, uint32_t elem, CUstream stream, bool async,
                             int variant, int64_t t0, int64_t t1, int64_t correlation_id, bool waits_for_gpu_time) {
  if (capturing(stream, variant)) return noteCapturedWork();
  MemsetEvent e;
  e.correlation_id = correlation_id ? correlation_id : sink_.nextCorrelationId();
  e.waits_for_gpu_time = waits_for_gpu_time ? 1 : 0;
  e.thread_id = collectorThreadId();
  e.stream = streamHandle(stream, variant);
  e.dst = dst;
  e.bytes = n * elem;
  e.value = value;
  e.element_size = elem;
  e.async = async;
  e.api_start_ns = t0;
  e.api_end_ns = t1;
  sink_.pushStruct(EventKind::kMemset, e);
}

CUresult HookRecorder::MemsetD8(int variant, CUdeviceptr dst, unsigned char value, size_t n) {
  KFUSE_FORWARD(MemsetD8, dst, value, n)
  if (r == CUDA_SUCCESS) recordSet(dst, n, value, 1, nullptr, false, variant, t0, t1);
  return r;
}
CUresult HookRecorder::MemsetD16(int variant, CUdeviceptr dst, unsigned short value, size_t n) {
  KFUSE_FORWARD(MemsetD16, dst, value, n)
  if (r == CUDA_SUCCESS) recordSet(dst, n, value, 2, nullptr, false, variant, t0, t1);
  return r;
}
CUresult HookRecorder::MemsetD32(int variant, CUdeviceptr dst, unsigned int value, size_t n) {
  KFUSE_FORWARD(MemsetD32, dst, value, n)
  if (r == CUDA_SUCCESS) recordSet(dst, n, value, 4, nullptr, false, variant, t0, t1);
  return r;
}
CUresult HookRecorder::MemsetD8Async(int variant, CUdeviceptr dst, unsigned char value, size_t n, CUstream stream) {
  KFUSE_FORWARD(MemsetD8Async, dst, value, n, stream)
  if (r == CUDA_SUCCESS) recordSet(dst, n, value, 1, stream, true, variant, t0, t1);
  return r;
}
CUresult HookRecorder::MemsetD16Async(int variant, CUdeviceptr dst, unsigned short value, size_t n, CUstream stream) {
  KFUSE_FORWARD(MemsetD16Async, dst, value, n, stream)
  if (r == CUDA_SUCCESS) recordSet(dst, n, value, 2, stream, true, variant, t0, t1);
  return r;
}
CUresult HookRecorder::MemsetD32Async(int variant, CUdeviceptr dst, unsigned int value, size_t n, CUstream stream) {
  KFUSE_FORWARD(MemsetD32Async, dst, value, n, stream)
  if (r == CUDA_SUCCESS) recordSet(dst, n, value, 4, stream, true, variant, t0, t1);
  return r;
}

void HookRecorder::recordModule(uint64_t handle, const void* image) {
  const hooks::ImageInfo info = hooks::inspectModuleImage(image);
  {
    auto counts = hooks::kernelParamCounts(info);
    std::lock_guard lock(describe_mu_);
    try {
      param_counts_[handle] = std::move(counts);
    } catch (const std::bad_alloc&) {  // the kernels of this module are probed instead
      param_counts_.erase(handle);
    }
  }
  ModuleEvent e;
  e.module = handle;
  e.load_ns = collectorNowNs();
  e.kind = info.kind;
  if (info.size) {
    e.image = new (std::nothrow) uint8_t[info.size];  // module loads are not on the launch path
    if (e.image) {
      std::memcpy(e.image, info.data, info.size);
      e.image_size = info.size;
    }
  }
  sink_.pushModule(e);
}

CUresult HookRecorder::ModuleLoadData(int variant, CUmodule* module, const void* image) {
  KFUSE_FORWARD(ModuleLoadData, module, image)
  if (r == CUDA_SUCCESS && module) recordModule(reinterpret_cast<uint64_t>(*module), image);
  return r;
}
CUresult HookRecorder::ModuleLoadDataEx(int variant, CUmodule* module, const void* image, unsigned n,
                                        CUjit_option* options, void** values) {
  KFUSE_FORWARD(ModuleLoadDataEx, module, image, n, options, values)
  if (r == CUDA_SUCCESS && module) recordModule(reinterpret_cast<uint64_t>(*module), image);
  return r;
}
CUresult HookRecorder::ModuleLoadFatBinary(int variant, CUmodule* module, const void* image) {
  KFUSE_FORWARD(ModuleLoadFatBinary, module, image)
  if (r == CUDA_SUCCESS && module) recordModule(reinterpret_cast<uint64_t>(*module), image);
  return r;
}
// A module from a file: its image is read back from the file the driver loaded (at most 1 GiB).
CUresult HookRecorder::ModuleLoad(int variant, CUmodule* module, const char* fname) {
  KFUSE_FORWARD(ModuleLoad, module, fname)
  if (r == CUDA_SUCCESS && module) {
    const std::vector<uint8_t> image = hooks::readModuleFile(fname, uint64_t{1} << 30);
    if (!image.empty()) recordModule(reinterpret_cast<uint64_t>(*module), image.data());
  }
  return r;
}
CUresult HookRecorder::LibraryLoadData(int variant, CUlibrary* library, const void* code, CUjit_option* jit_options,
                                       void** jit_values, unsigned n_jit, CUlibraryOption* library_options,
                                       void** library_values, unsigned n_library) {
  KFUSE_FORWARD(LibraryLoadData, library, code, jit_options, jit_values, n_jit, library_options, library_values,
                n_library)
  if (r == CUDA_SUCCESS && library) recordLibrary(*library, code);
  return r;
}

void HookRecorder::recordLibrary(CUlibrary library, const void* code) {
  if (auto resolve = query_resolver_.load()) resolve();
  CUmodule module = nullptr;
  auto get_module = table().LibraryGetModule.load();
  if (!get_module || get_module(&module, library) != CUDA_SUCCESS) module = nullptr;
  recordModule(module ? reinterpret_cast<uint64_t>(module) : reinterpret_cast<uint64_t>(library), code);
}

CUresult HookRecorder::ModuleUnload(int variant, CUmodule module) {
  KFUSE_FORWARD(ModuleUnload, module)
  if (r == CUDA_SUCCESS) {
    const auto h = reinterpret_cast<uint64_t>(module);
    {
      // Function handles of this module may be reused by a later load: forget them (rare, so a scan is fine).
      std::lock_guard lock(describe_mu_);
      param_counts_.erase(h);
      for (size_t i = 0; i < kFunctionSlots; ++i) {
        const uint64_t k = slots_[i].key.load(std::memory_order_relaxed);
        if (k > kRemoved && slots_[i].module == h) slots_[i].key.store(kRemoved, std::memory_order_release);
      }
    }
    sink_.pushStruct(EventKind::kModuleUnload, ModuleUnloadEvent{h, t1});
  }
  return r;
}

void HookRecorder::recordSync(core::SyncKind kind, CUstream stream, CUevent event, int variant, int64_t t0,
                              int64_t t1) {
  SyncEvent e;
  e.correlation_id = sink_.nextCorrelationId();
  e.thread_id = collectorThreadId();
  e.kind = kind;
  e.stream = streamHandle(stream, variant);
  e.event = reinterpret_cast<Handle>(event);
  e.start_ns = t0;
  e.end_ns = t1;
  sink_.pushStruct(EventKind::kSync, e);
}

CUresult HookRecorder::CtxSynchronize(int variant) {
  KFUSE_FORWARD(CtxSynchronize)
  if (r == CUDA_SUCCESS) recordSync(core::SyncKind::kContext, nullptr, nullptr, variant, t0, t1);
  resolveGpuTimes();
  return r;
}
CUresult HookRecorder::CtxSynchronizeV2(int variant, CUcontext ctx) {
  KFUSE_FORWARD(CtxSynchronizeV2, ctx)
  if (r == CUDA_SUCCESS) recordSync(core::SyncKind::kContext, nullptr, nullptr, variant, t0, t1);
  resolveGpuTimes();
  return r;
}
CUresult HookRecorder::StreamSynchronize(int variant, CUstream stream) {
  KFUSE_FORWARD(StreamSynchronize, stream)
  if (r == CUDA_SUCCESS) recordSync(core::SyncKind::kStream, stream, nullptr, variant, t0, t1);
  resolveGpuTimes();
  return r;
}
CUresult HookRecorder::StreamDestroy(int variant, CUstream stream) {
  KFUSE_FORWARD(StreamDestroy, stream)
  if (r == CUDA_SUCCESS) {
    sink_.pushStruct(EventKind::kStreamDestroy, StreamDestroyEvent{reinterpret_cast<Handle>(stream), t1});
  }
  return r;
}

CUresult HookRecorder::EventSynchronize(int variant, CUevent event) {
  KFUSE_FORWARD(EventSynchronize, event)
  if (r == CUDA_SUCCESS) recordSync(core::SyncKind::kEvent, nullptr, event, variant, t0, t1);
  resolveGpuTimes();
  return r;
}
CUresult HookRecorder::StreamWaitEvent(int variant, CUstream stream, CUevent event, unsigned flags) {
  KFUSE_FORWARD(StreamWaitEvent, stream, event, flags)
  if (r == CUDA_SUCCESS) recordSync(core::SyncKind::kStreamWaitEvent, stream, event, variant, t0, t1);
  return r;
}

CUresult HookRecorder::EventRecord(int variant, CUevent event, CUstream stream) {
  KFUSE_FORWARD(EventRecord, event, stream)
  if (r == CUDA_SUCCESS) {
    sink_.pushStruct(EventKind::kEventRecord,
                     EventRecordEvent{sink_.nextCorrelationId(), reinterpret_cast<Handle>(event),
                                      streamHandle(stream, variant), t1});
  }
  return r;
}
CUresult HookRecorder::EventRecordWithFlags(int variant, CUevent event, CUstream stream, unsigned flags) {
  KFUSE_FORWARD(EventRecordWithFlags, event, stream, flags)
  if (r == CUDA_SUCCESS) {
    sink_.pushStruct(EventKind::kEventRecord,
                     EventRecordEvent{sink_.nextCorrelationId(), reinterpret_cast<Handle>(event),
                                      streamHandle(stream, variant), t1});
  }
  return r;
}

CUresult HookRecorder::GraphLaunch(int variant, CUgraphExec graph, CUstream stream) {
  KFUSE_FORWARD(GraphLaunch, graph, stream)
  if (r == CUDA_SUCCESS) recordGraphLaunch(graph, stream, variant, t0, t1);
  return r;
}

CUresult HookRecorder::GraphInstantiateWithFlags(int variant, CUgraphExec* exec, CUgraph graph,
                                                 unsigned long long flags) {
  KFUSE_FORWARD(GraphInstantiateWithFlags, exec, graph, flags)
  if (r == CUDA_SUCCESS && exec && *exec) recordGraphExec(*exec, graph, GraphExecChange::kInstantiate, t0, t1);
  return r;
}

CUresult HookRecorder::GraphInstantiateWithParams(int variant, CUgraphExec* exec, CUgraph graph,
                                                  CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  KFUSE_FORWARD(GraphInstantiateWithParams, exec, graph, params)
  if (r == CUDA_SUCCESS && exec && *exec) recordGraphExec(*exec, graph, GraphExecChange::kInstantiate, t0, t1);
  return r;
}

CUresult HookRecorder::GraphExecUpdate(int variant, CUgraphExec exec, CUgraph graph,
                                       CUgraphExecUpdateResultInfo* info) {
  KFUSE_FORWARD(GraphExecUpdate, exec, graph, info)
  if (r == CUDA_SUCCESS) recordGraphExec(exec, graph, GraphExecChange::kUpdate, t0, t1);
  return r;
}

CUresult HookRecorder::GraphDestroy(int variant, CUgraph graph) {
  KFUSE_FORWARD(GraphDestroy, graph)
  if (r == CUDA_SUCCESS) noteGraphDestroyed(graph);
  return r;
}

CUresult HookRecorder::GraphExecKernelNodeSetParams(int variant, CUgraphExec exec, CUgraphNode node,
                                                    const CUDA_KERNEL_NODE_PARAMS* params) {
  KFUSE_FORWARD(GraphExecKernelNodeSetParams, exec, node, params)
  if (r == CUDA_SUCCESS) recordExecKernelNode(exec, node, params, t0, t1);
  return r;
}

void HookRecorder::noteCaptureBegin(CUstream stream, int variant) {
  std::lock_guard lock(capture_mu_);
  capturing_streams_.push_back(streamHandle(stream, variant));
  open_captures_.store(static_cast<int>(capturing_streams_.size()), std::memory_order_release);
}

void HookRecorder::noteCaptureEnd(CUstream stream, int variant) {
  std::lock_guard lock(capture_mu_);
  const Handle h = streamHandle(stream, variant);
  for (auto it = capturing_streams_.begin(); it != capturing_streams_.end(); ++it) {
    if (*it == h) {
      capturing_streams_.erase(it);
      break;
    }
  }
  open_captures_.store(static_cast<int>(capturing_streams_.size()), std::memory_order_release);
}

bool HookRecorder::capturing(CUstream stream, int variant) {
  if (open_captures_.load(std::memory_order_acquire) == 0) return false;  // the common case: one atomic load
  auto query = table().StreamIsCapturing.load();
  if (!query) return false;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return query(reinterpret_cast<CUstream>(streamHandle(stream, variant)), &status) == CUDA_SUCCESS &&
         status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

void HookRecorder::noteCapturedWork() {
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    std::fprintf(stderr,
                 "kfuse: collector: the application captures work into CUDA graphs; captured launches and copies "
                 "do not run when captured and are not recorded (they run later, inside graph launches)\n");
  }
  sink_.pushStat(core::StatId::kWorkCapturedIntoGraphs, 1);
}

CUresult HookRecorder::StreamBeginCapture(int variant, CUstream stream, CUstreamCaptureMode mode) {
  KFUSE_FORWARD(StreamBeginCapture, stream, mode)
  if (r == CUDA_SUCCESS) noteCaptureBegin(stream, variant);
  return r;
}

CUresult HookRecorder::StreamBeginCaptureToGraph(int variant, CUstream stream, CUgraph graph, const CUgraphNode* deps,
                                                 const CUgraphEdgeData* edges, size_t n, CUstreamCaptureMode mode) {
  KFUSE_FORWARD(StreamBeginCaptureToGraph, stream, graph, deps, edges, n, mode)
  if (r == CUDA_SUCCESS) noteCaptureBegin(stream, variant);
  return r;
}

CUresult HookRecorder::StreamEndCapture(int variant, CUstream stream, CUgraph* graph) {
  KFUSE_FORWARD(StreamEndCapture, stream, graph)
  // The stream leaves capture mode whether the capture succeeded or was invalidated.
  if (r != CUDA_ERROR_ILLEGAL_STATE) noteCaptureEnd(stream, variant);
  if (r == CUDA_SUCCESS && graph && *graph) noteCapturedGraph(*graph, stream, variant);
  return r;
}

}  // namespace kfuse::collector
