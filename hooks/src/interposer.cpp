#include <dlfcn.h>

#include <cstring>

#include "kfuse/hooks/driver_hooks.h"

namespace kfuse::hooks {
namespace {

DriverTable g_driver;  // constant-initialized (all slots null): usable before any constructor runs
std::atomic<HookClient*> g_client{nullptr};
std::atomic<void* (*)(const char*)> g_fallback{nullptr};
std::atomic<const void*> g_own_base{nullptr};
std::atomic<uint64_t> g_hooked{0}, g_mismatched{0};

using GetProcAddressV2Fn = CUresult(CUDAAPI*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
using GetProcAddressLegacyFn = CUresult(CUDAAPI*)(const char*, void**, int, cuuint64_t);
std::atomic<GetProcAddressV2Fn> g_real_gpa_v2{nullptr};
std::atomic<GetProcAddressLegacyFn> g_real_gpa_legacy{nullptr};

constexpr ApiInfo kApis[] = {
#define KFUSE_X(ID, BASE, MINV, MAXV, SYM, PTSZ, HAS_PTSZ, PARAMS, ARGS) {BASE, MINV, MAXV, SYM, PTSZ},
    KFUSE_DRIVER_HOOKS(KFUSE_X)
#undef KFUSE_X
};
constexpr int kApiCount = static_cast<int>(Api::kCount);
static_assert(sizeof kApis / sizeof kApis[0] == kApiCount);

// Base names cuGetProcAddress hands out a hooked API's ABI under besides its own: from 12000 on, "cuGraphInstantiate"
// is cuGraphInstantiateWithFlags (cuda.h's #define; older versions get the 5-argument legacy function, unhooked).
struct ApiAlias {
  const char* base;
  int min_version;
  Api api;
};
constexpr ApiAlias kAliases[] = {
    {"cuGraphInstantiate", 12000, Api::GraphInstantiateWithFlags},
};

bool isOwn(const void* fn) {
  const void* own = g_own_base.load(std::memory_order_relaxed);
  if (!own || !fn) return false;
  Dl_info info{};
  return dladdr(fn, &info) != 0 && info.dli_fbase == own;
}

// Looks up a driver function the wrappers were reached without (a direct export called before any lookup).
void* lazyLookup(const char* symbol) {
  auto fb = g_fallback.load(std::memory_order_acquire);
  if (!fb) return nullptr;
  void* fn = fb(symbol);
  return isOwn(fn) ? nullptr : fn;
}

// Wrappers, one per (API, variant). `variant` is a template parameter so each has its own address.
#define KFUSE_X(ID, BASE, MINV, MAXV, SYM, PTSZ, HAS_PTSZ, PARAMS, ARGS)                                    \
  template <int variant>                                                                                    \
  CUresult CUDAAPI ID##Hook PARAMS {                                                                        \
    auto fn = g_driver.ID[variant].load(std::memory_order_relaxed);                                         \
    if (!fn) {                                                                                              \
      const char* sym = variant && (PTSZ) ? (PTSZ) : (SYM);                                                 \
      fn = reinterpret_cast<DriverTable::ID##Fn>(lazyLookup(sym));                                          \
      if (!fn) return CUDA_ERROR_NOT_INITIALIZED;                                                           \
      DriverTable::ID##Fn expected = nullptr;                                                               \
      g_driver.ID[variant].compare_exchange_strong(expected, fn);                                           \
    }                                                                                                       \
    if (HookClient* c = g_client.load(std::memory_order_acquire)) return c->ID KFUSE_WITH_VARIANT_ARG ARGS; \
    return fn ARGS;                                                                                         \
  }
KFUSE_DRIVER_HOOKS(KFUSE_X)
#undef KFUSE_X

void* const kWrappers[kApiCount][2] = {
#define KFUSE_X(ID, ...) {reinterpret_cast<void*>(&ID##Hook<0>), reinterpret_cast<void*>(&ID##Hook<1>)},
    KFUSE_DRIVER_HOOKS(KFUSE_X)
#undef KFUSE_X
};

// Stores `real` as the driver's function for (api, variant). False if the slot holds another function.
bool storeSlot(int api, int variant, void* real) {
  switch (static_cast<Api>(api)) {
#define KFUSE_X(ID, ...)                                                                 \
  case Api::ID: {                                                                        \
    auto fn = reinterpret_cast<DriverTable::ID##Fn>(real);                               \
    DriverTable::ID##Fn expected = nullptr;                                              \
    return g_driver.ID[variant].compare_exchange_strong(expected, fn) || expected == fn; \
  }
    KFUSE_DRIVER_HOOKS(KFUSE_X)
#undef KFUSE_X
    default: return false;
  }
}

void* hookSlot(int api, int variant, void* real) {
  if (!storeSlot(api, variant, real)) {
    g_mismatched.fetch_add(1, std::memory_order_relaxed);
    return real;  // another ABI or another driver: pass through rather than call the wrong function
  }
  g_hooked.fetch_add(1, std::memory_order_relaxed);
  return kWrappers[api][variant];
}

CUresult CUDAAPI getProcAddressV2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                  CUdriverProcAddressQueryResult* status) {
  auto real = g_real_gpa_v2.load(std::memory_order_acquire);
  if (!real) {
    real = reinterpret_cast<GetProcAddressV2Fn>(lazyLookup("cuGetProcAddress_v2"));
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    g_real_gpa_v2.store(real, std::memory_order_release);
  }
  CUresult r = real(symbol, pfn, version, flags, status);
  if (r == CUDA_SUCCESS && pfn && *pfn && symbol) *pfn = Interposer::resolveProc(symbol, version, flags, *pfn);
  return r;
}

CUresult CUDAAPI getProcAddressLegacy(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  auto real = g_real_gpa_legacy.load(std::memory_order_acquire);
  if (!real) {
    real = reinterpret_cast<GetProcAddressLegacyFn>(lazyLookup("cuGetProcAddress"));
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    g_real_gpa_legacy.store(real, std::memory_order_release);
  }
  CUresult r = real(symbol, pfn, version, flags);
  if (r == CUDA_SUCCESS && pfn && *pfn && symbol) *pfn = Interposer::resolveProc(symbol, version, flags, *pfn);
  return r;
}

}  // namespace

const ApiInfo& apiInfo(Api api) {
  return kApis[static_cast<int>(api)];
}

void* realDlsym(void* handle, const char* name) {
  using DlsymFn = void* (*)(void*, const char*);
  static std::atomic<DlsymFn> real{nullptr};
  DlsymFn fn = real.load(std::memory_order_acquire);
  if (!fn) {
    // glibc 2.34 moved dlsym into libc; older ones version it GLIBC_2.2.5 (x86_64).
    fn = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"));
    if (!fn) fn = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5"));
    if (!fn) return nullptr;
    real.store(fn, std::memory_order_release);
  }
  return fn(handle, name);
}

void* driverHandle(bool load) {
  static std::atomic<void*> handle{nullptr};
  void* h = handle.load(std::memory_order_acquire);
  if (h) return h;
  h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h && load) h = dlopen("libcuda.so.1", RTLD_NOW);
  if (h) handle.store(h, std::memory_order_release);
  return h;
}

void DriverTable::resolveQueries(void* (*lookup)(const char*, void*), void* user) {
  auto set = [&](auto& slot, const char* name) {
    using Fn = typename std::remove_reference_t<decltype(slot)>::value_type;
    if (void* p = lookup(name, user)) slot.store(reinterpret_cast<Fn>(p), std::memory_order_release);
  };
  set(FuncGetParamInfo, "cuFuncGetParamInfo");
  set(FuncGetName, "cuFuncGetName");
  set(FuncGetModule, "cuFuncGetModule");
  set(FuncGetAttribute, "cuFuncGetAttribute");
  set(KernelGetParamInfo, "cuKernelGetParamInfo");
  set(KernelGetName, "cuKernelGetName");
  set(KernelGetLibrary, "cuKernelGetLibrary");
  set(CtxGetDevice, "cuCtxGetDevice");
  set(DeviceGetName, "cuDeviceGetName");
  set(DeviceGetAttribute, "cuDeviceGetAttribute");
  set(DeviceTotalMem, "cuDeviceTotalMem_v2");
  set(EventCreate, "cuEventCreate");
  set(EventRecordDirect, "cuEventRecord");
  set(EventQuery, "cuEventQuery");
  set(EventElapsedTime, "cuEventElapsedTime");
  set(EventElapsedTime, "cuEventElapsedTime_v2");  // what cuda.h 12.8+ names cuEventElapsedTime
  set(EventDestroy, "cuEventDestroy_v2");
  set(EmuGetLaunch, "cuKfuseEmuGetLaunch");
  set(EmuThreadLastLaunch, "cuKfuseEmuThreadLastLaunch");
  set(StreamIsCapturing, "cuStreamIsCapturing");
  set(GraphGetNodes, "cuGraphGetNodes");
  set(GraphGetEdges, "cuGraphGetEdges_v2");
  set(GraphNodeGetType, "cuGraphNodeGetType");
  set(GraphKernelNodeGetParams, "cuGraphKernelNodeGetParams_v2");
  set(GraphMemcpyNodeGetParams, "cuGraphMemcpyNodeGetParams");
  set(GraphMemsetNodeGetParams, "cuGraphMemsetNodeGetParams");
  set(GraphChildGraphNodeGetGraph, "cuGraphChildGraphNodeGetGraph");
  set(GraphKernelNodeGetAttribute, "cuGraphKernelNodeGetAttribute");
  set(GraphEventRecordNodeGetEvent, "cuGraphEventRecordNodeGetEvent");
  set(GraphEventWaitNodeGetEvent, "cuGraphEventWaitNodeGetEvent");
  set(GraphClone, "cuGraphClone");
  set(GraphDestroyDirect, "cuGraphDestroy");
  set(GraphExecDestroyDirect, "cuGraphExecDestroy");
  set(GraphAddKernelNode, "cuGraphAddKernelNode_v2");
  set(GraphAddDependencies, "cuGraphAddDependencies_v2");
  set(GraphDestroyNode, "cuGraphDestroyNode");
  set(GraphNodeFindInClone, "cuGraphNodeFindInClone");
  set(ModuleGetFunction, "cuModuleGetFunction");
  set(LibraryGetModule, "cuLibraryGetModule");
  set(CtxGetCurrent, "cuCtxGetCurrent");
  set(MemGetAddressRange, "cuMemGetAddressRange_v2");
  set(CtxSynchronizeDirect, "cuCtxSynchronize");
  set(MemAllocDirect, "cuMemAlloc_v2");
  set(MemFreeDirect, "cuMemFree_v2");
  set(MemcpyDtoDDirect, "cuMemcpyDtoD_v2");
  set(MemcpyDtoHDirect, "cuMemcpyDtoH_v2");
  set(MemcpyHtoDDirect, "cuMemcpyHtoD_v2");
}

CUmodule DriverTable::functionModule(CUfunction f) const {
  CUmodule module = nullptr;
  if (auto q = FuncGetModule.load(); q && q(&module, f) == CUDA_SUCCESS) return module;
  CUlibrary library = nullptr;
  auto kl = KernelGetLibrary.load();
  if (!kl || kl(&library, reinterpret_cast<CUkernel>(f)) != CUDA_SUCCESS) return nullptr;
  auto lm = LibraryGetModule.load();
  if (lm && lm(&module, library) == CUDA_SUCCESS) return module;
  return reinterpret_cast<CUmodule>(library);
}

const char* DriverTable::functionName(CUfunction f) const {
  const char* name = nullptr;
  if (auto q = FuncGetName.load(); q && q(&name, f) == CUDA_SUCCESS && name) return name;
  name = nullptr;
  if (auto k = KernelGetName.load(); k && k(&name, reinterpret_cast<CUkernel>(f)) == CUDA_SUCCESS) return name;
  return nullptr;
}

DriverTable& Interposer::driver() {
  return g_driver;
}

void Interposer::install(HookClient* client) {
  g_client.store(client, std::memory_order_release);
}
HookClient* Interposer::client() {
  return g_client.load(std::memory_order_acquire);
}

void* Interposer::resolveProc(const char* symbol, int version, uint64_t flags, void* real) {
  if (!real || !symbol || isOwn(real)) return real;
  if (std::strcmp(symbol, "cuGetProcAddress") == 0) {
    // 11030 hands out the legacy 4-argument function, 12000+ the 5-argument _v2: two different wrappers.
    if (version >= 12000) {
      GetProcAddressV2Fn expected = nullptr;
      g_real_gpa_v2.compare_exchange_strong(expected, reinterpret_cast<GetProcAddressV2Fn>(real));
      return reinterpret_cast<void*>(&getProcAddressV2);
    }
    GetProcAddressLegacyFn expected = nullptr;
    g_real_gpa_legacy.compare_exchange_strong(expected, reinterpret_cast<GetProcAddressLegacyFn>(real));
    return reinterpret_cast<void*>(&getProcAddressLegacy);
  }
  for (int i = 0; i < kApiCount; ++i) {
    const ApiInfo& a = kApis[i];
    if (std::strcmp(a.base, symbol) != 0) continue;
    if (version < a.min_version || (a.max_version && version >= a.max_version)) continue;
    const int variant = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && a.per_thread_symbol ? 1 : 0;
    return hookSlot(i, variant, real);
  }
  for (const ApiAlias& alias : kAliases) {
    if (std::strcmp(alias.base, symbol) != 0 || version < alias.min_version) continue;
    const int i = static_cast<int>(alias.api);
    const int variant = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && kApis[i].per_thread_symbol ? 1 : 0;
    return hookSlot(i, variant, real);
  }
  return real;
}

void* Interposer::resolveSymbol(const char* name, void* real) {
  if (!real || !name || isOwn(real)) return real;
  if (name[0] != 'c' || name[1] != 'u') return real;
  if (std::strcmp(name, "cuGetProcAddress_v2") == 0) return resolveProc("cuGetProcAddress", 12000, 0, real);
  if (std::strcmp(name, "cuGetProcAddress") == 0) return resolveProc("cuGetProcAddress", 11030, 0, real);
  for (int i = 0; i < kApiCount; ++i) {
    const ApiInfo& a = kApis[i];
    if (std::strcmp(a.symbol, name) == 0) return hookSlot(i, 0, real);
    if (a.per_thread_symbol && std::strcmp(a.per_thread_symbol, name) == 0) return hookSlot(i, 1, real);
  }
  return real;
}

void* Interposer::wrapper(Api api, int variant) {
  return kWrappers[static_cast<int>(api)][variant ? 1 : 0];
}
void* Interposer::getProcAddressV2Wrapper() {
  return reinterpret_cast<void*>(&getProcAddressV2);
}
void* Interposer::getProcAddressLegacyWrapper() {
  return reinterpret_cast<void*>(&getProcAddressLegacy);
}

void Interposer::setRealGetProcAddress(void* v2, void* legacy) {
  if (v2 && !isOwn(v2)) g_real_gpa_v2.store(reinterpret_cast<GetProcAddressV2Fn>(v2), std::memory_order_release);
  if (legacy && !isOwn(legacy)) {
    g_real_gpa_legacy.store(reinterpret_cast<GetProcAddressLegacyFn>(legacy), std::memory_order_release);
  }
}

void Interposer::setFallbackLookup(void* (*lookup)(const char*)) {
  g_fallback.store(lookup, std::memory_order_release);
}

void Interposer::setOwnObject(const void* address) {
  Dl_info info{};
  if (dladdr(address, &info) != 0) g_own_base.store(info.dli_fbase, std::memory_order_relaxed);
}

uint64_t Interposer::hookedLookups() {
  return g_hooked.load();
}
uint64_t Interposer::mismatchedLookups() {
  return g_mismatched.load();
}

}  // namespace kfuse::hooks
