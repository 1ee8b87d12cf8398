// A FAKE libcuda.so.1 for tests of kfuse's hooking layer ONLY. It is not the emulator's CPU stand-in: it runs
// no kernels. It knows two made-up kernels (with parameter layouts), hands out fake device addresses, and
// counts the calls that reach it so tests can check that every call was forwarded exactly once.
// Internal references are non-interposable (-Bsymbolic, hidden helpers), as in a real driver.
#include <cuda.h>

#include "kfuse/emulator/standin.h"

#include <atomic>
#include <cstdint>
#include <cstring>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

struct FakeParam {
  size_t offset, size;
};
struct FakeFunction {
  const char* name;
  int param_count;
  FakeParam params[4];
};
// saxpy(int n, float a, const float* x, float* y); fill(float* p, int n, float v)
const FakeFunction kFunctions[] = {
    {"_Z5saxpyifPKfPf", 4, {{0, 4}, {4, 4}, {8, 8}, {16, 8}}},
    {"_Z4fillPfif", 3, {{0, 8}, {8, 4}, {12, 4}}},
};
struct FakeModule {
  int id;
};
FakeModule g_modules[64];
std::atomic<int> g_next_module{0};
std::atomic<uint64_t> g_next_address{0x7f0000000000ull};
std::atomic<int> g_launches{0}, g_launches_ptsz{0}, g_copies{0}, g_allocs{0}, g_frees{0}, g_syncs{0};
std::atomic<int> g_next_stream{1};

const FakeFunction* fn(CUfunction f) {
  for (const auto& k : kFunctions) {
    if (reinterpret_cast<const void*>(&k) == reinterpret_cast<const void*>(f)) return &k;
  }
  return nullptr;
}

CUresult CUDAAPI fInit(unsigned) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fDriverGetVersion(int* v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fModuleLoadData(CUmodule* m, const void* image) {
  if (!m || !image) return CUDA_ERROR_INVALID_VALUE;
  int i = g_next_module.fetch_add(1) % 64;
  *m = reinterpret_cast<CUmodule>(&g_modules[i]);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fModuleUnload(CUmodule) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fModuleGetFunction(CUfunction* f, CUmodule, const char* name) {
  for (const auto& k : kFunctions) {
    if (std::strcmp(k.name, name) == 0) {
      *f = reinterpret_cast<CUfunction>(const_cast<FakeFunction*>(&k));
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_NOT_FOUND;
}
CUresult launch(CUfunction f, void** params, std::atomic<int>& counter) {
  const FakeFunction* k = fn(f);
  if (!k || !params) return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < k->param_count; ++i) {
    if (!params[i]) return CUDA_ERROR_INVALID_VALUE;
  }
  counter.fetch_add(1);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fLaunchKernel(CUfunction f, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                               CUstream, void** params, void**) {
  return launch(f, params, g_launches);
}
CUresult CUDAAPI fLaunchKernelPtsz(CUfunction f, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   CUstream, void** params, void**) {
  return launch(f, params, g_launches_ptsz);
}
CUresult CUDAAPI fMemAlloc(CUdeviceptr* p, size_t bytes) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  *p = g_next_address.fetch_add((bytes + 255) / 256 * 256 + 256);
  g_allocs.fetch_add(1);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fMemFree(CUdeviceptr) {
  g_frees.fetch_add(1);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fMemcpyHtoD(CUdeviceptr, const void*, size_t) {
  g_copies.fetch_add(1);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fMemcpyDtoH(void* dst, CUdeviceptr, size_t n) {
  std::memset(dst, 0, n);
  g_copies.fetch_add(1);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fMemsetD32(CUdeviceptr, unsigned, size_t) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fStreamCreate(CUstream* s, unsigned) {
  *s = reinterpret_cast<CUstream>(static_cast<uintptr_t>(0x5000 + 0x10 * g_next_stream.fetch_add(1)));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fStreamSynchronize(CUstream) {
  g_syncs.fetch_add(1);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fCtxSynchronize() {
  g_syncs.fetch_add(1);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fFuncGetParamInfo(CUfunction f, size_t i, size_t* off, size_t* size) {
  const FakeFunction* k = fn(f);
  if (!k || i >= static_cast<size_t>(k->param_count)) return CUDA_ERROR_INVALID_VALUE;
  *off = k->params[i].offset;
  *size = k->params[i].size;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fFuncGetName(const char** name, CUfunction f) {
  const FakeFunction* k = fn(f);
  if (!k) return CUDA_ERROR_INVALID_HANDLE;
  *name = k->name;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fCtxGetDevice(CUdevice* d) {
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fDeviceGetName(char* name, int len, CUdevice) {
  std::strncpy(name, "kfuse test fake GPU", static_cast<size_t>(len));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fGetProcAddressV2(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
CUresult CUDAAPI fGetProcAddressLegacy(const char* s, void** p, int v, cuuint64_t f) {
  return fGetProcAddressV2(s, p, v, f, nullptr);
}

struct Entry {
  const char* name;
  void* fn;
  void* ptsz;
};
const Entry kEntries[] = {
    {"cuInit", reinterpret_cast<void*>(&fInit), nullptr},
    {"cuDriverGetVersion", reinterpret_cast<void*>(&fDriverGetVersion), nullptr},
    {"cuModuleLoadData", reinterpret_cast<void*>(&fModuleLoadData), nullptr},
    {"cuModuleUnload", reinterpret_cast<void*>(&fModuleUnload), nullptr},
    {"cuModuleGetFunction", reinterpret_cast<void*>(&fModuleGetFunction), nullptr},
    {"cuLaunchKernel", reinterpret_cast<void*>(&fLaunchKernel), reinterpret_cast<void*>(&fLaunchKernelPtsz)},
    {"cuMemAlloc", reinterpret_cast<void*>(&fMemAlloc), nullptr},
    {"cuMemFree", reinterpret_cast<void*>(&fMemFree), nullptr},
    {"cuMemcpyHtoD", reinterpret_cast<void*>(&fMemcpyHtoD), nullptr},
    {"cuMemcpyDtoH", reinterpret_cast<void*>(&fMemcpyDtoH), nullptr},
    {"cuMemsetD32", reinterpret_cast<void*>(&fMemsetD32), nullptr},
    {"cuStreamCreate", reinterpret_cast<void*>(&fStreamCreate), nullptr},
    {"cuStreamSynchronize", reinterpret_cast<void*>(&fStreamSynchronize), nullptr},
    {"cuCtxSynchronize", reinterpret_cast<void*>(&fCtxSynchronize), nullptr},
    {"cuFuncGetParamInfo", reinterpret_cast<void*>(&fFuncGetParamInfo), nullptr},
    {"cuFuncGetName", reinterpret_cast<void*>(&fFuncGetName), nullptr},
    {"cuCtxGetDevice", reinterpret_cast<void*>(&fCtxGetDevice), nullptr},
    {"cuDeviceGetName", reinterpret_cast<void*>(&fDeviceGetName), nullptr},
};

CUresult CUDAAPI fGetProcAddressV2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                   CUdriverProcAddressQueryResult* status) {
  if (!pfn || !symbol) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (std::strcmp(symbol, "cuGetProcAddress") == 0) {
    *pfn = version >= 12000 ? reinterpret_cast<void*>(&fGetProcAddressV2)
                            : reinterpret_cast<void*>(&fGetProcAddressLegacy);
  } else {
    for (const Entry& e : kEntries) {
      if (std::strcmp(e.name, symbol) == 0) {
        *pfn = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && e.ptsz ? e.ptsz : e.fn;
      }
    }
  }
  if (*pfn && status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // namespace

// The driver's exported names (what dlsym and DT_NEEDED linking find).
FAKE_EXPORT CUresult cuInit(unsigned f) {
  return fInit(f);
}
FAKE_EXPORT CUresult cuDriverGetVersion(int* v) {
  return fDriverGetVersion(v);
}
FAKE_EXPORT CUresult cuGetProcAddress_v2(const char* s, void** p, int v, cuuint64_t f,
                                         CUdriverProcAddressQueryResult* st) {
  return fGetProcAddressV2(s, p, v, f, st);
}
FAKE_EXPORT CUresult kfuseFakeLegacyGpa(const char* s, void** p, int v, cuuint64_t f) __asm__("cuGetProcAddress");
FAKE_EXPORT CUresult kfuseFakeLegacyGpa(const char* s, void** p, int v, cuuint64_t f) {
  return fGetProcAddressLegacy(s, p, v, f);
}
FAKE_EXPORT CUresult cuModuleLoadData(CUmodule* m, const void* image) {
  return fModuleLoadData(m, image);
}
FAKE_EXPORT CUresult cuModuleUnload(CUmodule m) {
  return fModuleUnload(m);
}
FAKE_EXPORT CUresult cuModuleGetFunction(CUfunction* f, CUmodule m, const char* n) {
  return fModuleGetFunction(f, m, n);
}
FAKE_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                    unsigned bz, unsigned sh, CUstream s, void** p, void** e) {
  return fLaunchKernel(f, gx, gy, gz, bx, by, bz, sh, s, p, e);
}
FAKE_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                         unsigned bz, unsigned sh, CUstream s, void** p, void** e) {
  return fLaunchKernelPtsz(f, gx, gy, gz, bx, by, bz, sh, s, p, e);
}
FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) {
  return fMemAlloc(p, n);
}
FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  return fMemFree(p);
}
FAKE_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void* s, size_t n) {
  return fMemcpyHtoD(d, s, n);
}
FAKE_EXPORT CUresult cuMemcpyDtoH_v2(void* d, CUdeviceptr s, size_t n) {
  return fMemcpyDtoH(d, s, n);
}
FAKE_EXPORT CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n) {
  return fMemsetD32(d, v, n);
}
FAKE_EXPORT CUresult cuStreamCreate(CUstream* s, unsigned f) {
  return fStreamCreate(s, f);
}
FAKE_EXPORT CUresult cuStreamSynchronize(CUstream s) {
  return fStreamSynchronize(s);
}
FAKE_EXPORT CUresult cuCtxSynchronize() {
  return fCtxSynchronize();
}
FAKE_EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t* o, size_t* s) {
  return fFuncGetParamInfo(f, i, o, s);
}
FAKE_EXPORT CUresult cuFuncGetName(const char** n, CUfunction f) {
  return fFuncGetName(n, f);
}
FAKE_EXPORT CUresult cuCtxGetDevice(CUdevice* d) {
  return fCtxGetDevice(d);
}
FAKE_EXPORT CUresult cuDeviceGetName(char* n, int l, CUdevice d) {
  return fDeviceGetName(n, l, d);
}

// Not a GPU (kfuse/emulator/standin.h): `kfuse record` must not pick the CUPTI backend on this driver.
FAKE_EXPORT int cuKfuseNotAGpu() {
  return 1;
}

// Test-only counters: how many calls actually reached the driver.
FAKE_EXPORT int kfuse_test_fake_launches() {
  return g_launches.load() + g_launches_ptsz.load();
}
FAKE_EXPORT int kfuse_test_fake_launches_ptsz() {
  return g_launches_ptsz.load();
}
FAKE_EXPORT int kfuse_test_fake_copies() {
  return g_copies.load();
}
FAKE_EXPORT int kfuse_test_fake_syncs() {
  return g_syncs.load();
}
