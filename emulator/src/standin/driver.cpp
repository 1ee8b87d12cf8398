// The CPU stand-in libcuda.so.1: the CUDA driver API subset that driver-API programs use, implemented over the
// PTX emulator. Every operation runs to completion when it is called (streams and events are ordered by
// construction); events record host time, so elapsed times measure emulation time.
//
// Names: cuda.h maps base names to ABI names with macros (cuMemAlloc -> cuMemAlloc_v2, cuCtxCreate ->
// cuCtxCreate_v4); the definitions below use the base names so they get the names the header maps to. The
// legacy ABI names cudart or old binaries may still ask for are defined explicitly further down.
#include <cuda.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kfuse/core/trace.h"
#include "kfuse/emulator/emulator.h"
#include "kfuse/emulator/standin.h"
#include "standin_internal.h"

using kfuse::emulator::Device;
using kfuse::emulator::DevicePtr;
using kfuse::emulator::Kernel;
using kfuse::emulator::Program;

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
  std::shared_ptr<Program> program;
  std::vector<std::unique_ptr<CUfunc_st>> functions;
  CUlibrary library = nullptr;
};
struct CUfunc_st {
  uint32_t magic = 0x6b666e63;
  const Kernel* kernel = nullptr;
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

namespace {
struct State;
State& st();
}  // namespace

namespace kfuse::standin {
void logOnce(const std::string& what);
bool tracing();
}  // namespace kfuse::standin

namespace {

constexpr int kDriverVersion = 13000;
const std::string kDeviceName = std::string(kfuse::core::kEmulatorDeviceNamePrefix) + " (not a GPU, sm_90 PTX)";

struct State {
  std::mutex mu;
  std::unique_ptr<Device> device;
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

State& st() {
  static State* s = new State();  // never destroyed: programs may call the driver from atexit handlers
  return *s;
}

thread_local std::vector<CUctx_st*> tl_ctx_stack;

}  // namespace

namespace kfuse::standin {
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
}  // namespace kfuse::standin

namespace {

using kfuse::standin::logOnce;
using kfuse::standin::tracing;

CUresult notSupported(const char* name) {
  logOnce(std::string(name) + " is not supported by the emulator (returns CUDA_ERROR_NOT_SUPPORTED)");
  return CUDA_ERROR_NOT_SUPPORTED;
}

Device* dev() {
  return st().device.get();
}

CUctx_st* current() {
  return tl_ctx_stack.empty() ? nullptr : tl_ctx_stack.back();
}

#define KF_REQUIRE_INIT()                                     \
  do {                                                        \
    if (!st().initialized) return CUDA_ERROR_NOT_INITIALIZED; \
  } while (false)
#define KF_REQUIRE_CTX()                               \
  do {                                                 \
    KF_REQUIRE_INIT();                                 \
    if (!current()) return CUDA_ERROR_INVALID_CONTEXT; \
  } while (false)

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

// Copies between host pointers and device addresses (unified addressing: anything that is not a live device
// allocation is a host pointer).
bool isDevice(uint64_t p) {
  return dev()->memory().rangeOf(p, nullptr, nullptr).ok();
}

CUresult copyAny(uint64_t dst, uint64_t src, size_t n) {
  if (n == 0) return CUDA_SUCCESS;
  bool dd = isDevice(dst), sd = isDevice(src);
  auto& m = dev()->memory();
  if (dd && sd) return fromStatus(m.copyDeviceToDevice(dst, src, n));
  if (dd) return fromStatus(m.copyToDevice(dst, reinterpret_cast<const void*>(src), n));
  if (sd) return fromStatus(m.copyToHost(reinterpret_cast<void*>(dst), src, n));
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
  return CUDA_SUCCESS;
}

// Size of a module image: PTX text (NUL-terminated), fatbin, fatbin wrapper, or ELF.
std::vector<uint8_t> imageBytes(const void* image) {
  const uint8_t* p = static_cast<const uint8_t*>(image);
  uint32_t magic;
  std::memcpy(&magic, p, 4);
  if (magic == 0x466243b1u) {  // __fatBinC_Wrapper_t {magic, version, data, filename}
    const void* data;
    std::memcpy(&data, p + 8, sizeof data);
    return imageBytes(data);
  }
  if (magic == 0xba55ed50u) {  // fatbin header: magic, version(2), header size(2), fat size(8)
    uint16_t hsize;
    uint64_t fsize;
    std::memcpy(&hsize, p + 6, 2);
    std::memcpy(&fsize, p + 8, 8);
    return std::vector<uint8_t>(p, p + hsize + fsize);
  }
  if (magic == 0x464c457fu) {  // ELF64: section headers end the file
    uint64_t shoff;
    uint16_t shentsize, shnum;
    std::memcpy(&shoff, p + 0x28, 8);
    std::memcpy(&shentsize, p + 0x3a, 2);
    std::memcpy(&shnum, p + 0x3c, 2);
    return std::vector<uint8_t>(p, p + shoff + uint64_t(shentsize) * shnum);
  }
  size_t n = std::strlen(reinterpret_cast<const char*>(p));
  return std::vector<uint8_t>(p, p + n);
}

CUresult loadModule(CUmodule* out, std::span<const uint8_t> bytes, const std::string& name) {
  auto prog = dev()->loadImage(bytes, name);
  if (!prog.ok()) {
    const std::string& m = prog.status().message();
    std::fprintf(stderr, "kfuse stand-in libcuda: module load failed: %s\n", m.c_str());
    // A fatbin with cubins only is what a GPU without a matching cubin reports too: no binary for this device.
    if (m.find("holds no PTX") != std::string::npos) return CUDA_ERROR_NO_BINARY_FOR_GPU;
    return prog.status().code() == kfuse::ErrorCode::kUnsupported ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_IMAGE;
  }
  auto* m = new CUmod_st();
  m->program = *prog;
  for (auto& k : m->program->kernels()) {
    auto f = std::make_unique<CUfunc_st>();
    f->kernel = k.get();
    f->module = m;
    m->functions.push_back(std::move(f));
  }
  {
    std::lock_guard lock(st().mu);
    st().modules.insert(m);
  }
  *out = m;
  return CUDA_SUCCESS;
}

bool validModule(CUmodule m) {
  std::lock_guard lock(st().mu);
  return m && st().modules.count(m);
}
bool validFunction(CUfunction f) {
  return f && f->magic == 0x6b666e63;
}

CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                unsigned shmem, void** params, void** extra) {
  KF_REQUIRE_CTX();
  if (!validFunction(f)) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult s = sticky(); s != CUDA_SUCCESS) return s;
  const kfuse::emulator::KernelInfo& info = f->kernel->info();
  std::vector<uint8_t> buf;
  if (params) {
    buf = Device::packParams(info, params);
  } else if (extra) {
    void* ptr = nullptr;
    size_t size = 0;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
        ptr = extra[i + 1];
      else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
        size = *static_cast<size_t*>(extra[i + 1]);
      else
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!ptr && info.param_bytes) return CUDA_ERROR_INVALID_VALUE;
    buf.assign(static_cast<uint8_t*>(ptr), static_cast<uint8_t*>(ptr) + size);
    if (buf.size() < info.param_bytes) return CUDA_ERROR_INVALID_VALUE;
  } else if (info.param_bytes) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (shmem > unsigned(f->max_dynamic_shared) && shmem > 48 * 1024) return CUDA_ERROR_INVALID_VALUE;
  kfuse::emulator::LaunchConfig cfg{{gx, gy, gz}, {bx, by, bz}, shmem};
  kfuse::Status s = dev()->launch(*f->kernel, cfg, buf);
  CUresult r = fromStatus(s);
  if (r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_MISALIGNED_ADDRESS || r == CUDA_ERROR_ASSERT ||
      r == CUDA_ERROR_LAUNCH_FAILED)
    current()->sticky = r;  // like a GPU, a fault poisons the context
  return r;
}

void fillUuid(CUuuid* u) {
  const char id[16] = {'k', 'f', 'u', 's', 'e', '-', 'e', 'm', 'u', 'l', 'a', 't', 'o', 'r', '0', '1'};
  std::memcpy(u->bytes, id, 16);
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

}  // namespace

extern "C" {

// ---- init / version / errors ---------------------------------------------------------------------------------
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

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** str);
CUresult CUDAAPI cuGetErrorString(CUresult error, const char** str);

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

// ---- memory --------------------------------------------------------------------------------------------------
CUresult CUDAAPI cuMemAlloc(CUdeviceptr* dptr, size_t bytes) {
  KF_REQUIRE_CTX();
  if (!dptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  auto p = dev()->memory().allocate(bytes);
  if (!p.ok()) return CUDA_ERROR_OUT_OF_MEMORY;
  *dptr = *p;
  return CUDA_SUCCESS;
}
static void releaseFromPool(CUdeviceptr dptr);
CUresult CUDAAPI cuMemFree(CUdeviceptr dptr) {
  KF_REQUIRE_CTX();
  if (dptr == 0) return CUDA_SUCCESS;
  if (!dev()->memory().free(dptr).ok()) return CUDA_ERROR_INVALID_VALUE;
  releaseFromPool(dptr);  // an allocation from a pool may be freed either way
  return CUDA_SUCCESS;
}
// ---- memory pools: accounting only (every allocation is an ordinary one; nothing is cached for reuse) ---------
}  // extern "C"
namespace {
struct Pools {
  std::mutex mu;
  CUmemPoolHandle_st default_pool;
  CUmemoryPool current = nullptr;  // the device's pool for cuMemAllocAsync; null: the default one
  std::set<CUmemoryPool> created;
  std::unordered_map<uint64_t, std::pair<CUmemoryPool, size_t>> owner;  // allocation -> pool, size
};
Pools& pools() {
  static auto* p = [] {
    auto* q = new Pools();
    q->default_pool.is_default = true;
    return q;
  }();
  return *p;
}
bool validPool(CUmemoryPool pool) {
  return pool && (pool == &pools().default_pool || pools().created.count(pool));
}
CUresult allocFromPool(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool) {
  CUresult r = cuMemAlloc(dptr, bytes);
  if (r != CUDA_SUCCESS) return r;
  std::lock_guard lock(pools().mu);
  pools().owner[*dptr] = {pool, bytes};
  pool->used += bytes;
  pool->used_high = std::max(pool->used_high, pool->used);
  return CUDA_SUCCESS;
}
}  // namespace
static void releaseFromPool(CUdeviceptr dptr) {
  std::lock_guard lock(pools().mu);
  auto it = pools().owner.find(dptr);
  if (it == pools().owner.end()) return;
  it->second.first->used -= it->second.second;
  pools().owner.erase(it);
}
extern "C" {
CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool, CUstream s) {
  (void)s;
  {
    std::lock_guard lock(pools().mu);
    if (!validPool(pool)) return CUDA_ERROR_INVALID_VALUE;
  }
  return allocFromPool(dptr, bytes, pool);
}
CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream s) {
  CUmemoryPool pool;
  {
    std::lock_guard lock(pools().mu);
    pool = pools().current ? pools().current : &pools().default_pool;
  }
  return cuMemAllocFromPoolAsync(dptr, bytes, pool, s);
}
CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream s) {
  (void)s;
  return cuMemFree(dptr);
}
CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice d) {
  KF_REQUIRE_INIT();
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  *pool = &pools().default_pool;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice d) {
  KF_REQUIRE_INIT();
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(pools().mu);
  *pool = pools().current ? pools().current : &pools().default_pool;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceSetMemPool(CUdevice d, CUmemoryPool pool) {
  KF_REQUIRE_INIT();
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(pools().mu);
  if (!validPool(pool)) return CUDA_ERROR_INVALID_VALUE;
  pools().current = pool;
  return CUDA_SUCCESS;
}
static bool deviceLocation(const CUmemLocation* location, CUmemAllocationType type) {
  return location && location->type == CU_MEM_LOCATION_TYPE_DEVICE && location->id == 0 &&
         type == CU_MEM_ALLOCATION_TYPE_PINNED;
}
CUresult CUDAAPI cuMemGetDefaultMemPool(CUmemoryPool* pool, CUmemLocation* location, CUmemAllocationType type) {
  if (!deviceLocation(location, type)) return notSupported("cuMemGetDefaultMemPool (other than device 0 memory)");
  return cuDeviceGetDefaultMemPool(pool, 0);
}
CUresult CUDAAPI cuMemGetMemPool(CUmemoryPool* pool, CUmemLocation* location, CUmemAllocationType type) {
  if (!deviceLocation(location, type)) return notSupported("cuMemGetMemPool (other than device 0 memory)");
  return cuDeviceGetMemPool(pool, 0);
}
CUresult CUDAAPI cuMemSetMemPool(CUmemLocation* location, CUmemAllocationType type, CUmemoryPool pool) {
  if (!deviceLocation(location, type)) return notSupported("cuMemSetMemPool (other than device 0 memory)");
  return cuDeviceSetMemPool(0, pool);
}
CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  KF_REQUIRE_INIT();
  if (!pool || !props) return CUDA_ERROR_INVALID_VALUE;
  if (props->location.type != CU_MEM_LOCATION_TYPE_DEVICE || props->location.id != 0 ||
      props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
    return notSupported("cuMemPoolCreate (other than device 0 memory)");
  auto* p = new CUmemPoolHandle_st();
  std::lock_guard lock(pools().mu);
  pools().created.insert(p);
  *pool = p;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool) {
  std::lock_guard lock(pools().mu);
  if (!pools().created.erase(pool)) return CUDA_ERROR_INVALID_VALUE;
  if (pools().current == pool) pools().current = nullptr;
  for (auto& [ptr, owner] : pools().owner)
    if (owner.first == pool) owner.first = &pools().default_pool;  // still live: accounted to the default pool
  delete pool;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  (void)keep;
  std::lock_guard lock(pools().mu);
  return validPool(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  std::lock_guard lock(pools().mu);
  if (!validPool(pool) || !value) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      pool->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = *static_cast<int*>(value);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      pool->release_threshold = *static_cast<cuuint64_t*>(value);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (*static_cast<cuuint64_t*>(value) != 0) return CUDA_ERROR_INVALID_VALUE;  // only resets are allowed
      pool->used_high = pool->used;
      return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}
CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  std::lock_guard lock(pools().mu);
  if (!validPool(pool) || !value) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      *static_cast<int*>(value) = pool->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      *static_cast<cuuint64_t*>(value) = pool->release_threshold;
      return CUDA_SUCCESS;
    // Nothing is cached, so what the pool reserves is what is in use.
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *static_cast<cuuint64_t*>(value) = pool->used; return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *static_cast<cuuint64_t*>(value) = pool->used_high; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}
CUresult CUDAAPI cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count) {
  std::lock_guard lock(pools().mu);
  if (!validPool(pool) || (count && !map)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i)
    if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || map[i].location.id != 0)
      return CUDA_ERROR_INVALID_DEVICE;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool pool, CUmemLocation* location) {
  std::lock_guard lock(pools().mu);
  if (!flags || !location || !validPool(pool)) return CUDA_ERROR_INVALID_VALUE;
  *flags = location->type == CU_MEM_LOCATION_TYPE_DEVICE && location->id == 0 ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                                                              : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemGetInfo(size_t* free_bytes, size_t* total) {
  KF_REQUIRE_CTX();
  size_t tot = size_t(16) << 30, used = dev()->memory().bytesInUse();
  if (free_bytes) *free_bytes = used < tot ? tot - used : 0;
  if (total) *total = tot;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr dptr) {
  KF_REQUIRE_CTX();
  DevicePtr b = 0;
  uint64_t s = 0;
  if (!dev()->memory().rangeOf(dptr, &b, &s).ok()) return CUDA_ERROR_NOT_FOUND;
  if (base) *base = b;
  if (size) *size = s;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAllocHost(void** pp, size_t bytes) {
  KF_REQUIRE_CTX();
  if (!pp) return CUDA_ERROR_INVALID_VALUE;
  *pp = std::calloc(1, bytes ? bytes : 1);
  if (!*pp) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard lock(st().mu);
  st().host_allocs[reinterpret_cast<uintptr_t>(*pp)] = bytes;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostAlloc(void** pp, size_t bytes, unsigned int flags) {
  (void)flags;
  return cuMemAllocHost(pp, bytes);
}
CUresult CUDAAPI cuMemFreeHost(void* p) {
  KF_REQUIRE_INIT();
  {
    std::lock_guard lock(st().mu);
    if (!st().host_allocs.erase(reinterpret_cast<uintptr_t>(p))) return CUDA_ERROR_INVALID_VALUE;
  }
  std::free(p);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostRegister(void* p, size_t bytes, unsigned int flags) {
  (void)p;
  (void)bytes;
  (void)flags;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostUnregister(void* p) {
  (void)p;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t n) {
  KF_REQUIRE_CTX();
  if (CUresult s = sticky(); s != CUDA_SUCCESS) return s;
  return fromStatus(dev()->memory().copyToDevice(dst, src, n));
}
CUresult CUDAAPI cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t n) {
  KF_REQUIRE_CTX();
  if (CUresult s = sticky(); s != CUDA_SUCCESS) return s;
  return fromStatus(dev()->memory().copyToHost(dst, src, n));
}
CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  KF_REQUIRE_CTX();
  if (CUresult s = sticky(); s != CUDA_SUCCESS) return s;
  return fromStatus(dev()->memory().copyDeviceToDevice(dst, src, n));
}
CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  KF_REQUIRE_CTX();
  if (CUresult s = sticky(); s != CUDA_SUCCESS) return s;
  return copyAny(dst, src, n);
}
CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  (void)s;
  return cuMemcpyHtoD(dst, src, n);
}
CUresult CUDAAPI cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  (void)s;
  return cuMemcpyDtoH(dst, src, n);
}
CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  (void)s;
  return cuMemcpyDtoD(dst, src, n);
}
CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  (void)s;
  return cuMemcpy(dst, src, n);
}
CUresult CUDAAPI cuMemsetD8(CUdeviceptr dst, unsigned char v, size_t n) {
  KF_REQUIRE_CTX();
  return fromStatus(dev()->memory().fill(dst, v, 1, n));
}
CUresult CUDAAPI cuMemsetD16(CUdeviceptr dst, unsigned short v, size_t n) {
  KF_REQUIRE_CTX();
  return fromStatus(dev()->memory().fill(dst, v, 2, n));
}
CUresult CUDAAPI cuMemsetD32(CUdeviceptr dst, unsigned int v, size_t n) {
  KF_REQUIRE_CTX();
  return fromStatus(dev()->memory().fill(dst, v, 4, n));
}
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
  (void)s;
  return cuMemsetD8(dst, v, n);
}
CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dst, unsigned short v, size_t n, CUstream s) {
  (void)s;
  return cuMemsetD16(dst, v, n);
}
CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, CUstream s) {
  (void)s;
  return cuMemsetD32(dst, v, n);
}
// The pinned host allocation containing `p` (base and size), if any.
static bool hostAllocation(uint64_t p, uint64_t* base, size_t* size) {
  std::lock_guard lock(st().mu);
  for (auto& [b, n] : st().host_allocs)
    if (p >= b && p < b + std::max<size_t>(n, 1)) {
      *base = b, *size = n;
      return true;
    }
  return false;
}
static CUresult pointerAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr, bool many) {
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  uint64_t base = 0, size = 0;
  bool d = dev()->memory().rangeOf(ptr, &base, &size).ok();
  size_t host_size = 0;
  bool h = !d && hostAllocation(ptr, &base, &host_size);
  if (h) size = host_size;
  // cuPointerGetAttributes answers for unknown (unregistered host) pointers too; cuPointerGetAttribute fails.
  if (!d && !h && !many) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned*>(data) = d ? CU_MEMORYTYPE_DEVICE : h ? CU_MEMORYTYPE_HOST : 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      if (!d && !h) return many ? (*static_cast<CUdeviceptr*>(data) = 0, CUDA_SUCCESS) : CUDA_ERROR_INVALID_VALUE;
      *static_cast<CUdeviceptr*>(data) = ptr;  // unified addressing: pinned host memory has the same address
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      *static_cast<void**>(data) = h ? reinterpret_cast<void*>(ptr) : nullptr;
      return h || many ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = d || h ? current() : nullptr;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int*>(data) = d || h ? 0 : -2; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *static_cast<int*>(data) = 0; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED: *static_cast<int*>(data) = d || h; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *static_cast<CUdeviceptr*>(data) = base; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *static_cast<size_t*>(data) = size; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      *static_cast<unsigned long long*>(data) = base;  // allocations are never reused, so the base is unique
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: *static_cast<int*>(data) = 1; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: *static_cast<int*>(data) = 0; return CUDA_SUCCESS;
    default:
      logOnce("cuPointerGetAttribute(s): attribute " + std::to_string(int(attribute)) + " is not supported");
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}
CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  KF_REQUIRE_INIT();
  return pointerAttribute(data, attribute, ptr, /*many=*/false);
}
CUresult CUDAAPI cuPointerGetAttributes(unsigned int n, CUpointer_attribute* attributes, void** data, CUdeviceptr ptr) {
  KF_REQUIRE_INIT();
  if (!attributes || !data) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; ++i)
    if (CUresult r = pointerAttribute(data[i], attributes[i], ptr, /*many=*/true); r != CUDA_SUCCESS) return r;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr* dptr, void* p, unsigned int flags) {
  KF_REQUIRE_INIT();
  (void)flags;
  uint64_t base;
  size_t size;
  if (!dptr || !hostAllocation(reinterpret_cast<uint64_t>(p), &base, &size)) return CUDA_ERROR_INVALID_VALUE;
  *dptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostGetFlags(unsigned int* flags, void* p) {
  KF_REQUIRE_INIT();
  uint64_t base;
  size_t size;
  if (!flags || !hostAllocation(reinterpret_cast<uint64_t>(p), &base, &size)) return CUDA_ERROR_INVALID_VALUE;
  *flags = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP;
  return CUDA_SUCCESS;
}

// ---- modules, libraries, functions ---------------------------------------------------------------------------
CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  KF_REQUIRE_CTX();
  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
  auto bytes = imageBytes(image);
  return loadModule(module, bytes, "<cuModuleLoadData>");
}
CUresult CUDAAPI cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int n, CUjit_option* options,
                                    void** values) {
  (void)n;
  (void)options;
  (void)values;
  return cuModuleLoadData(module, image);
}
CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule* module, const void* fatbin) {
  return cuModuleLoadData(module, fatbin);
}
CUresult CUDAAPI cuModuleLoad(CUmodule* module, const char* fname) {
  KF_REQUIRE_CTX();
  if (!module || !fname) return CUDA_ERROR_INVALID_VALUE;
  std::ifstream f(fname, std::ios::binary);
  if (!f) return CUDA_ERROR_FILE_NOT_FOUND;
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return loadModule(module, bytes, fname);
}
CUresult CUDAAPI cuModuleUnload(CUmodule m) {
  KF_REQUIRE_INIT();
  {
    std::lock_guard lock(st().mu);
    if (!st().modules.erase(m)) return CUDA_ERROR_INVALID_HANDLE;
  }
  delete m;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
  KF_REQUIRE_INIT();
  if (!f || !name) return CUDA_ERROR_INVALID_VALUE;
  if (!validModule(m)) return CUDA_ERROR_INVALID_HANDLE;
  for (auto& fn : m->functions)
    if (fn->kernel->info().name == name) {
      *f = fn.get();
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}
CUresult CUDAAPI cuModuleGetFunctionCount(unsigned int* count, CUmodule m) {
  KF_REQUIRE_INIT();
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  if (!validModule(m)) return CUDA_ERROR_INVALID_HANDLE;
  *count = unsigned(m->functions.size());
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleEnumerateFunctions(CUfunction* fns, unsigned int n, CUmodule m) {
  KF_REQUIRE_INIT();
  if (!fns) return CUDA_ERROR_INVALID_VALUE;
  if (!validModule(m)) return CUDA_ERROR_INVALID_HANDLE;
  for (unsigned i = 0; i < n && i < m->functions.size(); ++i) fns[i] = m->functions[i].get();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUmodule m, const char* name) {
  KF_REQUIRE_INIT();
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  if (!validModule(m)) return CUDA_ERROR_INVALID_HANDLE;
  const kfuse::emulator::GlobalSymbol* g = m->program->findGlobal(name);
  if (!g) return CUDA_ERROR_NOT_FOUND;
  if (dptr) *dptr = g->address;
  if (bytes) *bytes = g->size;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option* jo, void** jv, unsigned int nj,
                                   CUlibraryOption* lo, void** lv, unsigned int nl) {
  (void)jo, (void)jv, (void)nj, (void)lo, (void)lv, (void)nl;
  KF_REQUIRE_INIT();
  if (!library || !code) return CUDA_ERROR_INVALID_VALUE;
  auto bytes = imageBytes(code);
  CUmodule m = nullptr;
  CUresult r = loadModule(&m, bytes, "<cuLibraryLoadData>");
  if (r != CUDA_SUCCESS) return r;
  auto* lib = new CUlib_st();
  lib->module = m;
  m->library = lib;
  std::lock_guard lock(st().mu);
  st().libraries.insert(lib);
  *library = lib;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary* library, const char* file, CUjit_option* jo, void** jv,
                                       unsigned int nj, CUlibraryOption* lo, void** lv, unsigned int nl) {
  if (!file) return CUDA_ERROR_INVALID_VALUE;
  std::ifstream f(file, std::ios::binary);
  if (!f) return CUDA_ERROR_FILE_NOT_FOUND;
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  bytes.push_back('\0');
  return cuLibraryLoadData(library, bytes.data(), jo, jv, nj, lo, lv, nl);
}
CUresult CUDAAPI cuLibraryUnload(CUlibrary lib) {
  KF_REQUIRE_INIT();
  CUmodule m;
  {
    std::lock_guard lock(st().mu);
    if (!st().libraries.erase(lib)) return CUDA_ERROR_INVALID_HANDLE;
    m = lib->module;
  }
  delete lib;
  return cuModuleUnload(m);
}
static bool validLibrary(CUlibrary lib) {
  std::lock_guard lock(st().mu);
  return lib && st().libraries.count(lib);
}
CUresult CUDAAPI cuLibraryGetModule(CUmodule* m, CUlibrary lib) {
  if (!m) return CUDA_ERROR_INVALID_VALUE;
  if (!validLibrary(lib)) return CUDA_ERROR_INVALID_HANDLE;
  *m = lib->module;
  return CUDA_SUCCESS;
}
// A CUkernel is the same object as the CUfunction of the library's module.
CUresult CUDAAPI cuLibraryGetKernel(CUkernel* k, CUlibrary lib, const char* name) {
  if (!k) return CUDA_ERROR_INVALID_VALUE;
  if (!validLibrary(lib)) return CUDA_ERROR_INVALID_HANDLE;
  CUfunction f = nullptr;
  CUresult r = cuModuleGetFunction(&f, lib->module, name);
  if (r == CUDA_SUCCESS) *k = reinterpret_cast<CUkernel>(f);
  return r;
}
CUresult CUDAAPI cuLibraryGetKernelCount(unsigned int* count, CUlibrary lib) {
  if (!validLibrary(lib)) return CUDA_ERROR_INVALID_HANDLE;
  return cuModuleGetFunctionCount(count, lib->module);
}
CUresult CUDAAPI cuLibraryEnumerateKernels(CUkernel* ks, unsigned int n, CUlibrary lib) {
  if (!validLibrary(lib)) return CUDA_ERROR_INVALID_HANDLE;
  return cuModuleEnumerateFunctions(reinterpret_cast<CUfunction*>(ks), n, lib->module);
}
CUresult CUDAAPI cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUlibrary lib, const char* name) {
  if (!validLibrary(lib)) return CUDA_ERROR_INVALID_HANDLE;
  return cuModuleGetGlobal(dptr, bytes, lib->module, name);
}
CUresult CUDAAPI cuKernelGetFunction(CUfunction* f, CUkernel k) {
  if (!f) return CUDA_ERROR_INVALID_VALUE;
  CUfunction fn = reinterpret_cast<CUfunction>(k);
  if (!validFunction(fn)) return CUDA_ERROR_INVALID_HANDLE;
  *f = fn;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuKernelGetLibrary(CUlibrary* lib, CUkernel k) {
  CUfunction fn = reinterpret_cast<CUfunction>(k);
  if (!lib) return CUDA_ERROR_INVALID_VALUE;
  if (!validFunction(fn) || !fn->module->library) return CUDA_ERROR_INVALID_HANDLE;
  *lib = fn->module->library;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetName(const char** name, CUfunction f) {
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  if (!validFunction(f)) return CUDA_ERROR_INVALID_HANDLE;
  *name = f->kernel->info().name.c_str();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuKernelGetName(const char** name, CUkernel k) {
  return cuFuncGetName(name, reinterpret_cast<CUfunction>(k));
}
CUresult CUDAAPI cuFuncGetParamInfo(CUfunction f, size_t index, size_t* offset, size_t* size) {
  if (!validFunction(f)) return CUDA_ERROR_INVALID_HANDLE;
  const auto& params = f->kernel->info().params;
  if (index >= params.size()) return CUDA_ERROR_INVALID_VALUE;
  if (offset) *offset = params[index].offset;
  if (size) *size = params[index].size;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuKernelGetParamInfo(CUkernel k, size_t index, size_t* offset, size_t* size) {
  return cuFuncGetParamInfo(reinterpret_cast<CUfunction>(k), index, offset, size);
}
CUresult CUDAAPI cuFuncGetModule(CUmodule* m, CUfunction f) {
  if (!m) return CUDA_ERROR_INVALID_VALUE;
  if (!validFunction(f)) return CUDA_ERROR_INVALID_HANDLE;
  *m = f->module;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction f) {
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  if (!validFunction(f)) return CUDA_ERROR_INVALID_HANDLE;
  const auto& info = f->kernel->info();
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = int(info.max_threads_per_block); break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = int(info.static_shared_bytes); break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *pi = 0; break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *pi = int(info.local_bytes); break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = int(std::min<uint32_t>(info.num_registers, 255)); break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = 90; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = f->max_dynamic_shared; break;
    default: *pi = 0; break;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuKernelGetAttribute(int* pi, CUfunction_attribute attrib, CUkernel k, CUdevice d) {
  (void)d;
  return cuFuncGetAttribute(pi, attrib, reinterpret_cast<CUfunction>(k));
}
CUresult CUDAAPI cuFuncSetAttribute(CUfunction f, CUfunction_attribute attrib, int value) {
  if (!validFunction(f)) return CUDA_ERROR_INVALID_HANDLE;
  if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    if (value < 0 || value > 227 * 1024) return CUDA_ERROR_INVALID_VALUE;
    f->max_dynamic_shared = value;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib, int value, CUkernel k, CUdevice d) {
  (void)d;
  return cuFuncSetAttribute(reinterpret_cast<CUfunction>(k), attrib, value);
}
CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction f, CUfunc_cache config) {
  (void)config;
  return validFunction(f) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CUresult CUDAAPI cuFuncIsLoaded(CUfunctionLoadingState* state, CUfunction f) {
  if (!state) return CUDA_ERROR_INVALID_VALUE;
  if (!validFunction(f)) return CUDA_ERROR_INVALID_HANDLE;
  *state = CU_FUNCTION_LOADING_STATE_LOADED;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncLoad(CUfunction f) {
  return validFunction(f) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

// ---- launches ------------------------------------------------------------------------------------------------
CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void** params,
                                void** extra) {
  (void)s;
  return launch(f, gx, gy, gz, bx, by, bz, shmem, params, extra);
}
CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  if (!config) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    switch (config->attrs[i].id) {
      case CU_LAUNCH_ATTRIBUTE_IGNORE:
      case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:  // blocks run to completion one after another: no grid sync
      case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
      case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP: break;
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
        if (config->attrs[i].value.clusterDim.x * config->attrs[i].value.clusterDim.y *
                config->attrs[i].value.clusterDim.z >
            1)
          return notSupported("cuLaunchKernelEx with thread-block clusters");
        break;
      default: return notSupported("cuLaunchKernelEx launch attribute");
    }
  }
  return launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX, config->blockDimY,
                config->blockDimZ, config->sharedMemBytes, params, extra);
}
CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                           unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
                                           CUstream s, void** params) {
  (void)s;
  return launch(f, gx, gy, gz, bx, by, bz, shmem, params, nullptr);
}
CUresult CUDAAPI cuLaunchHostFunc(CUstream s, CUhostFn fn, void* user) {
  (void)s;
  KF_REQUIRE_CTX();
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  fn(user);
  return CUDA_SUCCESS;
}

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

// ---- what the CUDA runtime asks for besides the above -------------------------------------------------------
CUresult CUDAAPI cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  if (!mode) return CUDA_ERROR_INVALID_VALUE;
  *mode = CU_MODULE_LAZY_LOADING;  // the default of CUDA 12.2+ drivers; loads here are eager either way
  return CUDA_SUCCESS;
}

// Occupancy: limited by threads (2048 per SM), blocks (32 per SM) and shared memory (228 KiB per SM, 227 KiB per
// block); registers are not counted (the PTX's declared registers overstate what ptxas would allocate).
static int occupancy(CUfunction f, int block, size_t dynamic_shared) {
  const auto& info = f->kernel->info();
  if (block <= 0 || unsigned(block) > info.max_threads_per_block) return 0;
  size_t shared = info.static_shared_bytes + dynamic_shared;
  if (shared > 227 * 1024) return 0;
  int warps = (block + 31) / 32;
  int by_threads = 2048 / (warps * 32);
  int by_shared = shared ? int(228 * 1024 / (shared + 1024)) : 32;  // 1 KiB per block reserved, as on sm_90
  return std::max(0, std::min({32, by_threads, by_shared}));
}
CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, CUfunction f, int block,
                                                                      size_t dynamic_shared, unsigned int flags) {
  (void)flags;
  if (!blocks) return CUDA_ERROR_INVALID_VALUE;
  if (!validFunction(f)) return CUDA_ERROR_INVALID_HANDLE;
  *blocks = occupancy(f, block, dynamic_shared);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction f, int block,
                                                             size_t dynamic_shared) {
  return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, f, block, dynamic_shared, 0);
}
CUresult CUDAAPI cuOccupancyMaxPotentialBlockSizeWithFlags(int* min_grid, int* block_size, CUfunction f,
                                                           CUoccupancyB2DSize shared_of_block, size_t dynamic_shared,
                                                           int limit, unsigned int flags) {
  (void)flags;
  if (!min_grid || !block_size) return CUDA_ERROR_INVALID_VALUE;
  if (!validFunction(f)) return CUDA_ERROR_INVALID_HANDLE;
  int max_block = int(f->kernel->info().max_threads_per_block);
  if (limit > 0) max_block = std::min(max_block, limit);
  int best = 0, best_threads = 0;
  for (int b = 32; b <= max_block; b += 32) {
    size_t shared = shared_of_block ? shared_of_block(b) : dynamic_shared;
    int threads = occupancy(f, b, shared) * b;
    if (threads >= best_threads) best = b, best_threads = threads;
  }
  int sms = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  *block_size = best;
  *min_grid = best ? sms * (best_threads / best) : 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(int* min_grid, int* block_size, CUfunction f,
                                                  CUoccupancyB2DSize shared_of_block, size_t dynamic_shared,
                                                  int limit) {
  return cuOccupancyMaxPotentialBlockSizeWithFlags(min_grid, block_size, f, shared_of_block, dynamic_shared, limit, 0);
}
CUresult CUDAAPI cuOccupancyAvailableDynamicSMemPerBlock(size_t* bytes, CUfunction f, int blocks, int block) {
  if (!bytes || blocks <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!validFunction(f)) return CUDA_ERROR_INVALID_HANDLE;
  (void)block;
  size_t per_block = 228 * 1024 / size_t(blocks);
  per_block = per_block > 1024 ? per_block - 1024 : 0;
  size_t stat = f->kernel->info().static_shared_bytes;
  *bytes = std::min<size_t>(227 * 1024, per_block) > stat ? std::min<size_t>(227 * 1024, per_block) - stat : 0;
  return CUDA_SUCCESS;
}

// 2D copies (cudaMemcpy2D, cudaMemcpy2DAsync, cudaMemcpyToArray's linear cases): row by row. Arrays are not
// supported.
static uint64_t memcpy2dBase(CUmemorytype type, const void* host, CUdeviceptr device) {
  return type == CU_MEMORYTYPE_HOST ? reinterpret_cast<uint64_t>(host) : uint64_t(device);
}
CUresult CUDAAPI cuMemcpy2DUnaligned(const CUDA_MEMCPY2D* c) {
  KF_REQUIRE_CTX();
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  if (c->srcMemoryType == CU_MEMORYTYPE_ARRAY || c->dstMemoryType == CU_MEMORYTYPE_ARRAY)
    return notSupported("cuMemcpy2D with CUDA arrays");
  uint64_t src = memcpy2dBase(c->srcMemoryType, c->srcHost, c->srcDevice) + c->srcY * c->srcPitch + c->srcXInBytes;
  uint64_t dst = memcpy2dBase(c->dstMemoryType, c->dstHost, c->dstDevice) + c->dstY * c->dstPitch + c->dstXInBytes;
  for (size_t row = 0; row < c->Height; ++row)
    if (CUresult r = copyAny(dst + row * c->dstPitch, src + row * c->srcPitch, c->WidthInBytes); r != CUDA_SUCCESS)
      return r;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpy2D(const CUDA_MEMCPY2D* c) {
  return cuMemcpy2DUnaligned(c);
}
CUresult CUDAAPI cuMemcpy2DAsync(const CUDA_MEMCPY2D* c, CUstream s) {
  (void)s;
  return cuMemcpy2DUnaligned(c);
}

// Pitched allocations and 2D memsets (cudaMallocPitch, cudaMemset2D): rows padded to 256 bytes.
CUresult CUDAAPI cuMemAllocPitch(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height, unsigned int elem) {
  if (!pitch || (elem != 4 && elem != 8 && elem != 16)) return CUDA_ERROR_INVALID_VALUE;
  *pitch = (width + 255) / 256 * 256;
  return cuMemAlloc(dptr, *pitch * std::max<size_t>(height, 1));
}
extern "C++" {
template <class T>
static CUresult memset2d(CUdeviceptr dst, size_t pitch, T value, size_t width, size_t height) {
  KF_REQUIRE_CTX();
  std::vector<T> row(width, value);
  for (size_t y = 0; y < height; ++y)
    if (CUresult r = copyAny(dst + y * pitch, reinterpret_cast<uint64_t>(row.data()), width * sizeof(T));
        r != CUDA_SUCCESS)
      return r;
  return CUDA_SUCCESS;
}
}  // extern "C++"
CUresult CUDAAPI cuMemsetD2D8(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h) {
  return memset2d<uint8_t>(d, pitch, v, w, h);
}
CUresult CUDAAPI cuMemsetD2D16(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h) {
  return memset2d<uint16_t>(d, pitch, v, w, h);
}
CUresult CUDAAPI cuMemsetD2D32(CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h) {
  return memset2d<uint32_t>(d, pitch, v, w, h);
}
CUresult CUDAAPI cuMemsetD2D8Async(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s) {
  (void)s;
  return memset2d<uint8_t>(d, pitch, v, w, h);
}
CUresult CUDAAPI cuMemsetD2D16Async(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s) {
  (void)s;
  return memset2d<uint16_t>(d, pitch, v, w, h);
}
CUresult CUDAAPI cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s) {
  (void)s;
  return memset2d<uint32_t>(d, pitch, v, w, h);
}
// One device: peer copies are ordinary copies.
CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n) {
  (void)dc;
  (void)sc;
  return cuMemcpy(dst, src, n);
}
CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream s) {
  (void)s;
  return cuMemcpyPeer(dst, dc, src, sc, n);
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
// Hints without effect on the emulator.
CUresult CUDAAPI cuCtxResetPersistingL2Cache(void) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuKernelSetCacheConfig(CUkernel k, CUfunc_cache config, CUdevice d) {
  (void)k;
  (void)config;
  (void)d;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncSetSharedMemConfig(CUfunction f, CUsharedconfig config) {
  (void)config;
  return validFunction(f) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
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
CUresult CUDAAPI cuProfilerStart(void) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuProfilerStop(void) {
  return CUDA_SUCCESS;
}

// ---- errors --------------------------------------------------------------------------------------------------
#define KF_ERRORS(X)                                                                          \
  X(CUDA_SUCCESS, "no error")                                                                 \
  X(CUDA_ERROR_INVALID_VALUE, "invalid argument")                                             \
  X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                                                \
  X(CUDA_ERROR_NOT_INITIALIZED, "initialization error")                                       \
  X(CUDA_ERROR_DEINITIALIZED, "driver shutting down")                                         \
  X(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")                               \
  X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                                      \
  X(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid")                               \
  X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                                     \
  X(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed")                                   \
  X(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device") \
  X(CUDA_ERROR_FILE_NOT_FOUND, "file not found")                                              \
  X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                                     \
  X(CUDA_ERROR_NOT_FOUND, "named symbol not found")                                           \
  X(CUDA_ERROR_NOT_READY, "device not ready")                                                 \
  X(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered")                   \
  X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch")            \
  X(CUDA_ERROR_ASSERT, "device-side assert triggered")                                        \
  X(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address")                                      \
  X(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure")                                   \
  X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                                      \
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

// ---- legacy ABI names ----------------------------------------------------------------------------------------
CUresult CUDAAPI cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice d) {
  return createContext(pctx, flags, d);
}
CUresult CUDAAPI cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* p, int n, unsigned int flags, CUdevice d) {
  (void)p;
  (void)n;
  return createContext(pctx, flags, d);
}

// Per-thread-default-stream entry points (programs built with CUDA_API_PER_THREAD_DEFAULT_STREAM): the same
// operations, since everything here is synchronous.
CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                     unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void** params,
                                     void** extra) {
  return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}
CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig* c, CUfunction f, void** params, void** extra) {
  return cuLaunchKernelEx(c, f, params, extra);
}
CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr d, const void* s, size_t n) {
  return cuMemcpyHtoD(d, s, n);
}
CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void* d, CUdeviceptr s, size_t n) {
  return cuMemcpyDtoH(d, s, n);
}
CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) {
  return cuMemcpyDtoD(d, s, n);
}
CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) {
  return cuMemcpy(d, s, n);
}
CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr d, const void* s, size_t n, CUstream st_) {
  return cuMemcpyHtoDAsync(d, s, n, st_);
}
CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void* d, CUdeviceptr s, size_t n, CUstream st_) {
  return cuMemcpyDtoHAsync(d, s, n, st_);
}
CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st_) {
  return cuMemcpyAsync(d, s, n, st_);
}
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
CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n) {
  return cuMemsetD8(d, v, n);
}
CUresult CUDAAPI cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int v, size_t n) {
  return cuMemsetD32(d, v, n);
}
CUresult CUDAAPI cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  return cuMemsetD8Async(d, v, n, s);
}
CUresult CUDAAPI cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n, CUstream s) {
  return cuMemsetD32Async(d, v, n, s);
}
CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void* user) {
  return cuLaunchHostFunc(s, fn, user);
}
CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr* d, size_t n, CUstream s) {
  return cuMemAllocAsync(d, n, s);
}
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr d, CUstream s) {
  return cuMemFreeAsync(d, s);
}

// Used by the exported stubs of unsupported_stubs.cpp (not exported itself).
int kfuseStandinUnsupported(const char* name) {
  return notSupported(name);
}

// ---- counters for tools (see kfuse/emulator/standin.h) -------------------------------------------------------
int cuKfuseNotAGpu(void) {
  return 1;
}
uint64_t cuKfuseEmuLaunchCount(void) {
  if (!dev()) return 0;
  return dev()->lastLaunch().sequence;
}
uint64_t cuKfuseEmuThreadLastLaunch(void) {
  return kfuse::emulator::Device::callingThreadLastSequence();
}
int cuKfuseEmuGetLaunch(uint64_t sequence, KfuseEmuLaunchCounters* out) {
  if (!dev() || !out || out->struct_size < sizeof(KfuseEmuLaunchCounters)) return 1;
  kfuse::emulator::LaunchRecord r;
  if (sequence == 0) {
    r = dev()->lastLaunch();
    if (r.sequence == 0) return 1;
  } else {
    bool found = false;
    for (auto& h : dev()->launchHistory())
      if (h.sequence == sequence) r = h, found = true;
    if (!found) return 1;
  }
  std::memset(reinterpret_cast<char*>(out) + 4, 0, sizeof(*out) - 4);
  out->version = 1;
  out->sequence = r.sequence;
  std::snprintf(out->kernel, sizeof out->kernel, "%s", r.kernel.c_str());
  out->grid[0] = r.grid.x, out->grid[1] = r.grid.y, out->grid[2] = r.grid.z;
  out->block[0] = r.block.x, out->block[1] = r.block.y, out->block[2] = r.block.z;
  out->dynamic_shared_bytes = r.dynamic_shared_bytes;
  out->ok = r.ok;
  const auto& c = r.counters;
  out->thread_instructions = c.thread_instructions;
  out->warp_instructions = c.warp_instructions;
  for (size_t i = 0; i < kfuse::emulator::kInstClassCount && i < 16; ++i) out->by_class[i] = c.by_class[i];
  out->global_load_bytes = c.global_load_bytes;
  out->global_store_bytes = c.global_store_bytes;
  out->shared_load_bytes = c.shared_load_bytes;
  out->shared_store_bytes = c.shared_store_bytes;
  out->local_load_bytes = c.local_load_bytes;
  out->local_store_bytes = c.local_store_bytes;
  out->global_atomics = c.global_atomics;
  out->shared_atomics = c.shared_atomics;
  out->flops_f16 = c.flops_f16;
  out->flops_f32 = c.flops_f32;
  out->flops_f64 = c.flops_f64;
  out->wall_seconds = r.wall_seconds;
  return 0;
}

}  // extern "C"

// ---- cuGetProcAddress ----------------------------------------------------------------------------------------
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
