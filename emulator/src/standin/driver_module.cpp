// Modules, libraries and functions: loading PTX, fatbin and ELF images, looking up functions and globals (a
// CUkernel is the same object as a CUfunction), and function attributes.
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "driver_state.h"

using kfuse::standin::dev;
using kfuse::standin::st;
using kfuse::standin::validFunction;

namespace {

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

}  // namespace

namespace kfuse::standin {

bool validFunction(CUfunction f) {
  return f && f->magic == 0x6b666e63;
}

}  // namespace kfuse::standin

extern "C" {

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

CUresult CUDAAPI cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  if (!mode) return CUDA_ERROR_INVALID_VALUE;
  *mode = CU_MODULE_LAZY_LOADING;  // the default of CUDA 12.2+ drivers; loads here are eager either way
  return CUDA_SUCCESS;
}

// Hints without effect on the emulator.
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

}  // extern "C"
