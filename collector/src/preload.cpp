// libkfuse_collector.so: the library kfuse puts into applications, through LD_PRELOAD (hook backend: dlsym and
// the driver's exported names are interposed) and/or CUDA_INJECTION64_PATH (InitializeInjection, CUPTI backend).
// Everything else is hidden (-fvisibility=hidden, --exclude-libs): only the names below are exported.
#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "kfuse/collector/collector_runtime.h"
#include "kfuse/collector/driver_hooks.h"
#include "kfuse/collector/profiler_api.h"

#define KFUSE_EXPORT __attribute__((visibility("default")))

namespace kfuse::collector {
CuptiApi& realCuptiApi();  // cupti_api_real.cpp
}  // namespace kfuse::collector

using kfuse::collector::Api;
using kfuse::collector::CollectorRuntime;
using kfuse::collector::DriverTable;
using kfuse::collector::Interposer;

namespace {

// dlopen'ed/dlsym'ed by these callers gets the driver's own functions: CUPTI must not trace itself through us.
std::atomic<const void*> g_cupti_base{nullptr};

bool callerExcluded(const void* caller) {
  Dl_info info{};
  if (!caller || dladdr(caller, &info) == 0) return false;
  if (info.dli_fbase == g_cupti_base.load(std::memory_order_relaxed)) return true;
  if (info.dli_fname && std::strstr(info.dli_fname, "libcupti")) {
    g_cupti_base.store(info.dli_fbase, std::memory_order_relaxed);
    return true;
  }
  Dl_info own{};
  return dladdr(reinterpret_cast<const void*>(&callerExcluded), &own) != 0 && own.dli_fbase == info.dli_fbase;
}

bool recordingRequested() {
  static const bool requested = [] {
    const char* v = std::getenv("KFUSE_OUTPUT");
    return v && *v;
  }();
  return requested;
}

__attribute__((constructor)) void kfuseCollectorLoad() {
  Interposer::setOwnObject(reinterpret_cast<const void*>(&kfuseCollectorLoad));
  CollectorRuntime::instance().init(&kfuse::collector::realCuptiApi(), &kfuse::collector::realProfilerApi());
}

}  // namespace

extern "C" {

// Static and shared cudart reach the driver only through dlsym(handle, "cuGetProcAddress_v2"): hand out ours.
// Everything else is a tail call into the C library's dlsym, so that it still sees the application as its caller
// (RTLD_NEXT is relative to the caller's object): sibling calls are forced on even in unoptimised builds.
using DlsymFn = void* (*)(void*, const char*);

DlsymFn libcDlsym() {
  static std::atomic<DlsymFn> real{nullptr};
  DlsymFn fn = real.load(std::memory_order_acquire);
  if (!fn) {
    fn = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"));
    if (!fn) fn = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5"));
    real.store(fn, std::memory_order_release);
  }
  return fn;
}

void* interposeDriverSymbol(void* handle, const char* name, void* real, const void* caller) {
  if (!real || callerExcluded(caller)) return real;
  if (std::strncmp(name, "cuGetProcAddress", 16) == 0) {
    // The application is reaching the driver: start recording. The handle is the driver: learn its queries.
    CollectorRuntime::instance().activate(/*from_injection=*/false);
    DriverTable& t = Interposer::driver();
    if (!t.FuncGetName.load()) {
      t.resolveQueries([](const char* sym, void* h) { return kfuse::collector::realDlsym(h, sym); }, handle);
    }
  }
  return Interposer::resolveSymbol(name, real);
}

__attribute__((optimize("optimize-sibling-calls"))) KFUSE_EXPORT void* dlsym(void* handle, const char* name) {
  DlsymFn fn = libcDlsym();
  if (handle == RTLD_NEXT || handle == RTLD_DEFAULT || name[0] != 'c' || name[1] != 'u' || !recordingRequested()) {
    return fn(handle, name);  // tail call: the caller stays the application
  }
  return interposeDriverSymbol(handle, name, fn(handle, name), __builtin_return_address(0));
}

KFUSE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                          CUdriverProcAddressQueryResult* status) {
  using Fn = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  return reinterpret_cast<Fn>(Interposer::getProcAddressV2Wrapper())(symbol, pfn, version, flags, status);
}

CUresult kfuseLegacyGetProcAddress(const char* symbol, void** pfn, int version,
                                   cuuint64_t flags) __asm__("cuGetProcAddress");
KFUSE_EXPORT CUresult kfuseLegacyGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  using Fn = CUresult (*)(const char*, void**, int, cuuint64_t);
  return reinterpret_cast<Fn>(Interposer::getProcAddressLegacyWrapper())(symbol, pfn, version, flags);
}

// Direct exports for applications linked against libcuda.so.1: each forwards to the hooking layer's wrapper.
#define KFUSE_PTSZ_EXPORT_0(ID, PTSZ, PARAMS, ARGS)
#define KFUSE_PTSZ_EXPORT_1(ID, PTSZ, PARAMS, ARGS)                                     \
  CUresult kfuse_export_ptsz_##ID PARAMS __asm__(PTSZ);                                 \
  KFUSE_EXPORT CUresult kfuse_export_ptsz_##ID PARAMS {                                 \
    return reinterpret_cast<DriverTable::ID##Fn>(Interposer::wrapper(Api::ID, 1)) ARGS; \
  }
#define KFUSE_PTSZ_EXPORT(HAS, ID, PTSZ, PARAMS, ARGS) KFUSE_PTSZ_EXPORT_##HAS(ID, PTSZ, PARAMS, ARGS)
#define KFUSE_X(ID, BASE, MINV, MAXV, SYM, PTSZ, HAS_PTSZ, PARAMS, ARGS)                \
  CUresult kfuse_export_##ID PARAMS __asm__(SYM);                                       \
  KFUSE_EXPORT CUresult kfuse_export_##ID PARAMS {                                      \
    return reinterpret_cast<DriverTable::ID##Fn>(Interposer::wrapper(Api::ID, 0)) ARGS; \
  }                                                                                     \
  KFUSE_PTSZ_EXPORT(HAS_PTSZ, ID, PTSZ, PARAMS, ARGS)
KFUSE_DRIVER_HOOKS(KFUSE_X)
#undef KFUSE_X

// CUDA_INJECTION64_PATH entry point: the driver calls it during cuInit.
KFUSE_EXPORT int InitializeInjection(void) {
  CollectorRuntime::instance().init(&kfuse::collector::realCuptiApi(), &kfuse::collector::realProfilerApi());
  CollectorRuntime::instance().activate(/*from_injection=*/true);
  return 1;
}

}  // extern "C"
