// The exported face of an LD_PRELOAD library built on the hooking layer (libkfuse_collector.so,
// libkfuse_inject.so): an interposed dlsym that hands cudart our cuGetProcAddress wrappers, cuGetProcAddress and
// _v2 themselves, and a direct export of every hooked driver symbol for applications linked against
// libcuda.so.1. Two such libraries preloaded together chain: the first one's wrappers call the second one's.
//
// Include this header in exactly one source file of the library, after defining, in that file:
//   namespace kfuse_preload {
//   bool wanted();                      // the hooks are active in this process (cheap; called on every dlsym)
//   void driverReached(void* handle);   // the application asked dlsym(handle, "cuGetProcAddress*")
//   }
// The library must be built with hidden visibility: only the names defined here are exported.
#pragma once

#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "kfuse/collector/driver_hooks.h"

#define KFUSE_EXPORT __attribute__((visibility("default")))

namespace kfuse_preload {

bool wanted();
void driverReached(void* handle);

// dlopen'ed/dlsym'ed by these callers gets the driver's own functions: CUPTI must not trace itself through us,
// and our own lookups must not come back to us.
inline std::atomic<const void*> g_cupti_base{nullptr};

inline bool callerExcluded(const void* caller) {
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

}  // namespace kfuse_preload

extern "C" {

// Static and shared cudart reach the driver only through dlsym(handle, "cuGetProcAddress_v2"): hand out ours.
// Everything else is a tail call into the next dlsym (the C library's, or another preloaded kfuse library's), so
// that it still sees the application as its caller (RTLD_NEXT is relative to the caller's object): sibling calls
// are forced on even in unoptimised builds.
using KfuseDlsymFn = void* (*)(void*, const char*);

inline KfuseDlsymFn kfuseNextDlsym() {
  static std::atomic<KfuseDlsymFn> real{nullptr};
  KfuseDlsymFn fn = real.load(std::memory_order_acquire);
  if (!fn) {
    fn = reinterpret_cast<KfuseDlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"));
    if (!fn) fn = reinterpret_cast<KfuseDlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5"));
    real.store(fn, std::memory_order_release);
  }
  return fn;
}

inline void* kfuseInterposeDriverSymbol(void* handle, const char* name, void* real, const void* caller) {
  if (!real || kfuse_preload::callerExcluded(caller)) return real;
  if (std::strncmp(name, "cuGetProcAddress", 16) == 0) kfuse_preload::driverReached(handle);
  return kfuse::collector::Interposer::resolveSymbol(name, real);
}

__attribute__((optimize("optimize-sibling-calls"))) KFUSE_EXPORT void* dlsym(void* handle, const char* name) {
  KfuseDlsymFn fn = kfuseNextDlsym();
  if (handle == RTLD_NEXT || handle == RTLD_DEFAULT || name[0] != 'c' || name[1] != 'u' || !kfuse_preload::wanted()) {
    return fn(handle, name);  // tail call: the caller stays the application
  }
  return kfuseInterposeDriverSymbol(handle, name, fn(handle, name), __builtin_return_address(0));
}

KFUSE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                          CUdriverProcAddressQueryResult* status) {
  using Fn = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  return reinterpret_cast<Fn>(kfuse::collector::Interposer::getProcAddressV2Wrapper())(symbol, pfn, version, flags,
                                                                                       status);
}

CUresult kfuseLegacyGetProcAddress(const char* symbol, void** pfn, int version,
                                   cuuint64_t flags) __asm__("cuGetProcAddress");
KFUSE_EXPORT CUresult kfuseLegacyGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  using Fn = CUresult (*)(const char*, void**, int, cuuint64_t);
  return reinterpret_cast<Fn>(kfuse::collector::Interposer::getProcAddressLegacyWrapper())(symbol, pfn, version, flags);
}

// Direct exports for applications linked against libcuda.so.1: each forwards to the hooking layer's wrapper.
#define KFUSE_PTSZ_EXPORT_0(ID, PTSZ, PARAMS, ARGS)
#define KFUSE_PTSZ_EXPORT_1(ID, PTSZ, PARAMS, ARGS)                                                        \
  CUresult kfuse_export_ptsz_##ID PARAMS __asm__(PTSZ);                                                    \
  KFUSE_EXPORT CUresult kfuse_export_ptsz_##ID PARAMS {                                                    \
    using Fn = kfuse::collector::DriverTable::ID##Fn;                                                      \
    return reinterpret_cast<Fn>(kfuse::collector::Interposer::wrapper(kfuse::collector::Api::ID, 1)) ARGS; \
  }
#define KFUSE_PTSZ_EXPORT(HAS, ID, PTSZ, PARAMS, ARGS) KFUSE_PTSZ_EXPORT_##HAS(ID, PTSZ, PARAMS, ARGS)
#define KFUSE_X(ID, BASE, MINV, MAXV, SYM, PTSZ, HAS_PTSZ, PARAMS, ARGS)                                   \
  CUresult kfuse_export_##ID PARAMS __asm__(SYM);                                                          \
  KFUSE_EXPORT CUresult kfuse_export_##ID PARAMS {                                                         \
    using Fn = kfuse::collector::DriverTable::ID##Fn;                                                      \
    return reinterpret_cast<Fn>(kfuse::collector::Interposer::wrapper(kfuse::collector::Api::ID, 0)) ARGS; \
  }                                                                                                        \
  KFUSE_PTSZ_EXPORT(HAS_PTSZ, ID, PTSZ, PARAMS, ARGS)
KFUSE_DRIVER_HOOKS(KFUSE_X)
#undef KFUSE_X
#undef KFUSE_PTSZ_EXPORT
#undef KFUSE_PTSZ_EXPORT_1
#undef KFUSE_PTSZ_EXPORT_0

}  // extern "C"
