// The two validation backends: the in-process emulator and the CUDA driver loaded at run time.
#include "validate_backend.h"

#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "kfuse/emulator/emulator.h"

namespace kfuse::rewriter {

namespace {

// ---- emulator ----

class EmulatorBackend final : public ValidationBackend {
 public:
  EmulatorBackend() : device_(/*worker_threads=*/0) {}
  void setInstructionBudget(uint64_t n) { device_.setInstructionBudget(n); }
  ~EmulatorBackend() override {
    for (uint64_t p : live_) (void)device_.memory().free(p);
  }

  Expected<int> loadModule(std::string_view ptx) override {
    auto program = device_.loadPtx(ptx, "validation");
    if (!program.ok()) return program.status();
    programs_.push_back(std::move(program).value());
    return static_cast<int>(programs_.size() - 1);
  }

  Expected<BackendKernel> findKernel(int module, const std::string& name) override {
    if (module < 0 || static_cast<size_t>(module) >= programs_.size()) return internalError("no such module");
    const emulator::Kernel* k = programs_[static_cast<size_t>(module)]->findKernel(name);
    if (!k) return notFound("no .entry " + name);
    kernels_.push_back(k);
    BackendKernel out;
    out.id = static_cast<int>(kernels_.size() - 1);
    for (const emulator::ParamInfo& p : k->info().params) out.param_sizes.push_back(p.size);
    return out;
  }

  Expected<uint64_t> allocate(uint64_t bytes) override {
    auto p = device_.memory().allocate(bytes, "validation");
    if (!p.ok()) return p.status();
    live_.push_back(*p);
    return *p;
  }
  Status release(uint64_t ptr) override {
    std::erase(live_, ptr);
    return device_.memory().free(ptr);
  }
  Status copyIn(uint64_t dst, const void* src, uint64_t bytes) override {
    return device_.memory().copyToDevice(dst, src, bytes);
  }
  Status copyOut(void* dst, uint64_t src, uint64_t bytes) override {
    return device_.memory().copyToHost(dst, src, bytes);
  }

  Status launch(int kernel, const core::LaunchShape& shape, const std::vector<std::vector<uint8_t>>& params) override {
    if (kernel < 0 || static_cast<size_t>(kernel) >= kernels_.size()) return internalError("no such kernel");
    const emulator::Kernel& k = *kernels_[static_cast<size_t>(kernel)];
    const emulator::KernelInfo& info = k.info();
    if (params.size() != info.params.size()) {
      return invalidArgument(info.name + " takes " + std::to_string(info.params.size()) + " parameters, got " +
                             std::to_string(params.size()));
    }
    std::vector<uint8_t> buffer(info.param_bytes, 0);
    for (size_t i = 0; i < params.size(); ++i) {
      const emulator::ParamInfo& p = info.params[i];
      if (params[i].size() != p.size || uint64_t{p.offset} + p.size > buffer.size()) {
        return invalidArgument(info.name + ": parameter " + std::to_string(i) + " is " + std::to_string(p.size) +
                               " bytes, got " + std::to_string(params[i].size()));
      }
      std::copy(params[i].begin(), params[i].end(), buffer.begin() + p.offset);
    }
    return device_.launch(k, shape, buffer);
  }

  bool failedLaunchIsSticky() const override { return false; }

 private:
  emulator::Device device_;
  std::vector<std::shared_ptr<emulator::Program>> programs_;
  std::vector<const emulator::Kernel*> kernels_;
  std::vector<uint64_t> live_;
};

// ---- CUDA driver ----

// The driver entry points validation needs, resolved once by their ABI names (cuda.h maps cuMemAlloc to
// cuMemAlloc_v2 and so on with macros; dlsym needs the mapped names, see docs/cuda-notes.md §6.2).
struct DriverApi {
  void* handle = nullptr;
  std::string load_error;
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuDeviceGetCount) deviceGetCount = nullptr;
  decltype(&::cuCtxCreate_v4) ctxCreate = nullptr;
  decltype(&::cuCtxDestroy_v2) ctxDestroy = nullptr;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent = nullptr;
  decltype(&::cuCtxSynchronize) ctxSynchronize = nullptr;
  decltype(&::cuModuleLoadDataEx) moduleLoadDataEx = nullptr;
  decltype(&::cuModuleUnload) moduleUnload = nullptr;
  decltype(&::cuModuleGetFunction) moduleGetFunction = nullptr;
  decltype(&::cuFuncGetParamInfo) funcGetParamInfo = nullptr;  // CUDA 12.4+; optional
  decltype(&::cuFuncSetAttribute) funcSetAttribute = nullptr;
  decltype(&::cuMemAlloc_v2) memAlloc = nullptr;
  decltype(&::cuMemFree_v2) memFree = nullptr;
  decltype(&::cuMemcpyHtoD_v2) memcpyHtoD = nullptr;
  decltype(&::cuMemcpyDtoH_v2) memcpyDtoH = nullptr;
  decltype(&::cuLaunchKernel) launchKernel = nullptr;
  decltype(&::cuGetErrorName) getErrorName = nullptr;
  decltype(&::cuGetErrorString) getErrorString = nullptr;
};

template <typename F>
bool resolve(void* handle, const char* name, F& out, std::string& missing) {
  out = reinterpret_cast<F>(dlsym(handle, name));
  if (!out && missing.empty()) missing = name;
  return out != nullptr;
}

// Loaded once per process and never unloaded: unloading a CUDA driver while any context may exist is unsafe.
const DriverApi& driverApi() {
  static DriverApi* api = [] {
    auto* a = new DriverApi();
    a->handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!a->handle) {
      const char* e = dlerror();
      a->load_error = std::string("cannot load the CUDA driver libcuda.so.1: ") + (e ? e : "not found");
      return a;
    }
    std::string missing;
    resolve(a->handle, "cuInit", a->init, missing);
    resolve(a->handle, "cuDeviceGet", a->deviceGet, missing);
    resolve(a->handle, "cuDeviceGetCount", a->deviceGetCount, missing);
    resolve(a->handle, "cuCtxCreate_v4", a->ctxCreate, missing);
    resolve(a->handle, "cuCtxDestroy_v2", a->ctxDestroy, missing);
    resolve(a->handle, "cuCtxSetCurrent", a->ctxSetCurrent, missing);
    resolve(a->handle, "cuCtxSynchronize", a->ctxSynchronize, missing);
    resolve(a->handle, "cuModuleLoadDataEx", a->moduleLoadDataEx, missing);
    resolve(a->handle, "cuModuleUnload", a->moduleUnload, missing);
    resolve(a->handle, "cuModuleGetFunction", a->moduleGetFunction, missing);
    resolve(a->handle, "cuFuncSetAttribute", a->funcSetAttribute, missing);
    resolve(a->handle, "cuMemAlloc_v2", a->memAlloc, missing);
    resolve(a->handle, "cuMemFree_v2", a->memFree, missing);
    resolve(a->handle, "cuMemcpyHtoD_v2", a->memcpyHtoD, missing);
    resolve(a->handle, "cuMemcpyDtoH_v2", a->memcpyDtoH, missing);
    resolve(a->handle, "cuLaunchKernel", a->launchKernel, missing);
    resolve(a->handle, "cuGetErrorName", a->getErrorName, missing);
    resolve(a->handle, "cuGetErrorString", a->getErrorString, missing);
    if (!missing.empty()) {
      a->load_error = "libcuda.so.1 has no " + missing + " (a CUDA 13 driver is needed)";
      return a;
    }
    std::string optional;
    resolve(a->handle, "cuFuncGetParamInfo", a->funcGetParamInfo, optional);
    return a;
  }();
  return *api;
}

std::string cuError(const DriverApi& api, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.getErrorName) (void)api.getErrorName(r, &name);
  if (api.getErrorString) (void)api.getErrorString(r, &text);
  std::string out = name ? name : "CUDA error " + std::to_string(static_cast<int>(r));
  if (text) out += std::string(" (") + text + ")";
  return out;
}

class DriverBackend final : public ValidationBackend {
 public:
  explicit DriverBackend(const DriverApi& api) : api_(api) {}
  ~DriverBackend() override {
    if (!ctx_) return;
    (void)api_.ctxSetCurrent(ctx_);
    for (CUdeviceptr p : live_) (void)api_.memFree(p);
    for (CUmodule m : modules_) (void)api_.moduleUnload(m);
    (void)api_.ctxDestroy(ctx_);
  }

  Status open() {
    CUresult r = api_.init(0);
    if (r != CUDA_SUCCESS) return unsupported("cuInit failed: " + cuError(api_, r));
    int count = 0;
    r = api_.deviceGetCount(&count);
    if (r != CUDA_SUCCESS || count == 0) return unsupported("the CUDA driver reports no device");
    CUdevice dev = 0;
    r = api_.deviceGet(&dev, 0);
    if (r != CUDA_SUCCESS) return unsupported("cuDeviceGet failed: " + cuError(api_, r));
    // A context of our own rather than the primary one: a fault poisons the context, and validation then starts
    // a new one without disturbing anything else in the process.
    // Zeroed parameters (no execution affinity, no CIG) rather than NULL, which not every driver version accepts.
    CUctxCreateParams params{};
    r = api_.ctxCreate(&ctx_, &params, /*flags=*/0, dev);
    if (r != CUDA_SUCCESS) {
      ctx_ = nullptr;
      return unsupported("cuCtxCreate failed: " + cuError(api_, r));
    }
    return Status::okStatus();
  }

  Expected<int> loadModule(std::string_view ptx) override {
    KFUSE_RETURN_IF_ERROR(current());
    std::string text(ptx);  // cuModuleLoadData wants NUL-terminated PTX
    char log[8192] = {0};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log, reinterpret_cast<void*>(uintptr_t{sizeof log - 1})};
    CUmodule m = nullptr;
    CUresult r = api_.moduleLoadDataEx(&m, text.c_str(), 2, options, values);
    if (r != CUDA_SUCCESS) {
      std::string msg = "cuModuleLoadData failed: " + cuError(api_, r);
      if (log[0]) msg += ": " + std::string(log);
      return badFormat(msg);
    }
    modules_.push_back(m);
    return static_cast<int>(modules_.size() - 1);
  }

  Expected<BackendKernel> findKernel(int module, const std::string& name) override {
    KFUSE_RETURN_IF_ERROR(current());
    if (module < 0 || static_cast<size_t>(module) >= modules_.size()) return internalError("no such module");
    CUfunction f = nullptr;
    CUresult r = api_.moduleGetFunction(&f, modules_[static_cast<size_t>(module)], name.c_str());
    if (r == CUDA_ERROR_NOT_FOUND) return notFound("no .entry " + name);
    if (r != CUDA_SUCCESS) return badFormat("cuModuleGetFunction(" + name + ") failed: " + cuError(api_, r));
    functions_.push_back(f);
    BackendKernel out;
    out.id = static_cast<int>(functions_.size() - 1);
    if (api_.funcGetParamInfo) {
      for (size_t i = 0; i < 4096; ++i) {
        size_t offset = 0, size = 0;
        if (api_.funcGetParamInfo(f, i, &offset, &size) != CUDA_SUCCESS) break;
        out.param_sizes.push_back(static_cast<uint32_t>(size));
      }
    }
    return out;
  }

  Expected<uint64_t> allocate(uint64_t bytes) override {
    KFUSE_RETURN_IF_ERROR(current());
    CUdeviceptr p = 0;
    CUresult r = api_.memAlloc(&p, bytes);
    if (r != CUDA_SUCCESS) return ioError("cuMemAlloc(" + std::to_string(bytes) + ") failed: " + cuError(api_, r));
    live_.push_back(p);
    return uint64_t{p};
  }
  Status release(uint64_t ptr) override {
    KFUSE_RETURN_IF_ERROR(current());
    std::erase(live_, CUdeviceptr{ptr});
    CUresult r = api_.memFree(ptr);
    return r == CUDA_SUCCESS ? Status::okStatus() : ioError("cuMemFree failed: " + cuError(api_, r));
  }
  Status copyIn(uint64_t dst, const void* src, uint64_t bytes) override {
    KFUSE_RETURN_IF_ERROR(current());
    CUresult r = api_.memcpyHtoD(dst, src, bytes);
    return r == CUDA_SUCCESS ? Status::okStatus() : ioError("cuMemcpyHtoD failed: " + cuError(api_, r));
  }
  Status copyOut(void* dst, uint64_t src, uint64_t bytes) override {
    KFUSE_RETURN_IF_ERROR(current());
    CUresult r = api_.memcpyDtoH(dst, src, bytes);
    return r == CUDA_SUCCESS ? Status::okStatus() : ioError("cuMemcpyDtoH failed: " + cuError(api_, r));
  }

  Status launch(int kernel, const core::LaunchShape& shape, const std::vector<std::vector<uint8_t>>& params) override {
    KFUSE_RETURN_IF_ERROR(current());
    if (kernel < 0 || static_cast<size_t>(kernel) >= functions_.size()) return internalError("no such kernel");
    CUfunction f = functions_[static_cast<size_t>(kernel)];
    std::vector<void*> args;
    for (const auto& p : params) args.push_back(const_cast<uint8_t*>(p.data()));
    if (shape.dynamic_shared_bytes > 48 * 1024) {
      (void)api_.funcSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                  static_cast<int>(shape.dynamic_shared_bytes));
    }
    CUresult r = api_.launchKernel(f, shape.grid.x, shape.grid.y, shape.grid.z, shape.block.x, shape.block.y,
                                   shape.block.z, shape.dynamic_shared_bytes, /*hStream=*/nullptr, args.data(),
                                   /*extra=*/nullptr);
    if (r != CUDA_SUCCESS) return Status(ErrorCode::kInternal, "cuLaunchKernel failed: " + cuError(api_, r));
    r = api_.ctxSynchronize();
    if (r != CUDA_SUCCESS) return Status(ErrorCode::kInternal, "the kernel failed: " + cuError(api_, r));
    return Status::okStatus();
  }

  bool failedLaunchIsSticky() const override { return true; }
  uint64_t guardBytes() const override { return 4096; }

 private:
  // Validation may run on any host thread; the context is made current before every call.
  Status current() {
    CUresult r = api_.ctxSetCurrent(ctx_);
    return r == CUDA_SUCCESS ? Status::okStatus() : ioError("cuCtxSetCurrent failed: " + cuError(api_, r));
  }

  const DriverApi& api_;
  CUcontext ctx_ = nullptr;
  std::vector<CUmodule> modules_;
  std::vector<CUfunction> functions_;
  std::vector<CUdeviceptr> live_;
};

}  // namespace

std::unique_ptr<ValidationBackend> makeEmulatorBackend(uint64_t max_warp_instructions) {
  auto backend = std::make_unique<EmulatorBackend>();
  backend->setInstructionBudget(max_warp_instructions);
  return backend;
}

Expected<std::unique_ptr<ValidationBackend>> makeDriverBackend() {
  const DriverApi& api = driverApi();
  if (!api.load_error.empty()) return unsupported(api.load_error);
  auto backend = std::make_unique<DriverBackend>(api);
  KFUSE_RETURN_IF_ERROR(backend->open());
  return std::unique_ptr<ValidationBackend>(std::move(backend));
}

}  // namespace kfuse::rewriter
