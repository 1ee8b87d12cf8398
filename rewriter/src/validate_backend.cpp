// The two validation backends: the in-process emulator and the CUDA driver loaded at run time.
#include "validate_backend.h"

#include "kfuse/rewriter/validate.h"

#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "kfuse/emulator/emulator.h"
#include "kfuse/hooks/driver_hooks.h"
#include "kfuse/rewriter/event_timer.h"

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
    if (!k->loadStatus().ok()) out.cannot_run = k->loadStatus().message();
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

  Expected<uint64_t> medianNs(const std::vector<Launch>&, const std::function<Status()>&, int) override {
    return unsupported(whyNotTimed());
  }
  std::string whyNotTimed() const override { return "not timed: the emulator runs kernels on the CPU, not a GPU"; }

  bool failedLaunchIsSticky() const override { return false; }

 private:
  emulator::Device device_;
  std::vector<std::shared_ptr<emulator::Program>> programs_;
  std::vector<const emulator::Kernel*> kernels_;
  std::vector<uint64_t> live_;
};

// ---- CUDA driver ----

// What validation needs of the driver besides hooks::DriverTable (which holds what it launches, copies and times
// with): a device and a context of its own, and error names. Resolved once by their ABI names (cuda.h maps
// cuCtxDestroy to cuCtxDestroy_v2 and so on with macros; dlsym needs the mapped names, see docs/cuda-notes.md §6.2).
struct DriverSetup {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuDeviceGetCount) deviceGetCount = nullptr;
  decltype(&::cuCtxCreate_v4) ctxCreate = nullptr;
  decltype(&::cuCtxDestroy_v2) ctxDestroy = nullptr;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent = nullptr;
  decltype(&::cuFuncSetAttribute) funcSetAttribute = nullptr;
  decltype(&::cuGetErrorName) getErrorName = nullptr;
  decltype(&::cuGetErrorString) getErrorString = nullptr;
};

struct DriverApi {
  void* handle = nullptr;
  std::string load_error;
  DriverSetup setup;
  hooks::DriverTable table;
};

template <typename F>
bool resolve(void* handle, const char* name, F& out, std::string& missing) {
  out = reinterpret_cast<F>(dlsym(handle, name));
  if (!out && missing.empty()) missing = name;
  return out != nullptr;
}

template <typename F>
void resolveSlot(void* handle, const char* name, std::atomic<F>& slot, std::string& missing) {
  F fn = nullptr;
  resolve(handle, name, fn, missing);
  slot.store(fn);
}

// The table slots validation calls; the first one empty, or nullptr.
const char* missingFromTable(const hooks::DriverTable& t) {
  if (!t.ModuleLoadDataEx[0].load()) return "cuModuleLoadDataEx";
  if (!t.ModuleUnload[0].load()) return "cuModuleUnload";
  if (!t.ModuleGetFunction.load()) return "cuModuleGetFunction";
  if (!t.LaunchKernel[0].load()) return "cuLaunchKernel";
  if (!t.CtxSynchronizeDirect.load()) return "cuCtxSynchronize";
  if (!t.MemAllocDirect.load()) return "cuMemAlloc_v2";
  if (!t.MemFreeDirect.load()) return "cuMemFree_v2";
  if (!t.MemcpyHtoDDirect.load()) return "cuMemcpyHtoD_v2";
  if (!t.MemcpyDtoHDirect.load()) return "cuMemcpyDtoH_v2";
  return nullptr;
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
    DriverSetup& s = a->setup;
    resolve(a->handle, "cuInit", s.init, missing);
    resolve(a->handle, "cuDeviceGet", s.deviceGet, missing);
    resolve(a->handle, "cuDeviceGetCount", s.deviceGetCount, missing);
    resolve(a->handle, "cuCtxCreate_v4", s.ctxCreate, missing);
    resolve(a->handle, "cuCtxDestroy_v2", s.ctxDestroy, missing);
    resolve(a->handle, "cuCtxSetCurrent", s.ctxSetCurrent, missing);
    resolve(a->handle, "cuFuncSetAttribute", s.funcSetAttribute, missing);
    resolve(a->handle, "cuGetErrorName", s.getErrorName, missing);
    resolve(a->handle, "cuGetErrorString", s.getErrorString, missing);
    // The hooked entry points are not among the table's queries: validation calls the driver's own.
    resolveSlot(a->handle, "cuModuleLoadDataEx", a->table.ModuleLoadDataEx[0], missing);
    resolveSlot(a->handle, "cuModuleUnload", a->table.ModuleUnload[0], missing);
    resolveSlot(a->handle, "cuLaunchKernel", a->table.LaunchKernel[0], missing);
    // The rest, cuFuncGetParamInfo (CUDA 12.4+) and the events among them, as the hooking layer finds them.
    a->table.resolveQueries([](const char* name, void* handle) { return dlsym(handle, name); }, a->handle);
    if (missing.empty()) {
      if (const char* m = missingFromTable(a->table)) missing = m;
    }
    if (!missing.empty()) a->load_error = "libcuda.so.1 has no " + missing + " (a CUDA 13 driver is needed)";
    return a;
  }();
  return *api;
}

class DriverBackend final : public ValidationBackend {
 public:
  // `setup`: the driver's own context and error functions; nullptr runs in the caller's current context.
  DriverBackend(const hooks::DriverTable& table, const DriverSetup* setup) : t_(table), setup_(setup) {}
  ~DriverBackend() override {
    if (setup_ && !ctx_) return;
    if (setup_) (void)setup_->ctxSetCurrent(ctx_);
    for (CUdeviceptr p : live_) (void)t_.MemFreeDirect.load()(p);
    for (CUmodule m : modules_) (void)t_.ModuleUnload[0].load()(m);
    if (setup_) (void)setup_->ctxDestroy(ctx_);
  }

  Status open() {
    if (!setup_) return Status::okStatus();
    CUresult r = setup_->init(0);
    if (r != CUDA_SUCCESS) return unsupported("cuInit failed: " + cuError(r));
    int count = 0;
    r = setup_->deviceGetCount(&count);
    if (r != CUDA_SUCCESS || count == 0) return unsupported("the CUDA driver reports no device");
    CUdevice dev = 0;
    r = setup_->deviceGet(&dev, 0);
    if (r != CUDA_SUCCESS) return unsupported("cuDeviceGet failed: " + cuError(r));
    // A context of our own rather than the primary one: a fault poisons the context, and validation then starts
    // a new one without disturbing anything else in the process.
    // Zeroed parameters (no execution affinity, no CIG) rather than NULL, which not every driver version accepts.
    CUctxCreateParams params{};
    r = setup_->ctxCreate(&ctx_, &params, /*flags=*/0, dev);
    if (r != CUDA_SUCCESS) {
      ctx_ = nullptr;
      return unsupported("cuCtxCreate failed: " + cuError(r));
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
    CUresult r = t_.ModuleLoadDataEx[0].load()(&m, text.c_str(), 2, options, values);
    if (r != CUDA_SUCCESS) {
      std::string msg = "cuModuleLoadData failed: " + cuError(r);
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
    CUresult r = t_.ModuleGetFunction.load()(&f, modules_[static_cast<size_t>(module)], name.c_str());
    if (r == CUDA_ERROR_NOT_FOUND) return notFound("no .entry " + name);
    if (r != CUDA_SUCCESS) return badFormat("cuModuleGetFunction(" + name + ") failed: " + cuError(r));
    functions_.push_back(f);
    BackendKernel out;
    out.id = static_cast<int>(functions_.size() - 1);
    if (auto param_info = t_.FuncGetParamInfo.load()) {
      for (size_t i = 0; i < 4096; ++i) {
        size_t offset = 0, size = 0;
        if (param_info(f, i, &offset, &size) != CUDA_SUCCESS) break;
        out.param_sizes.push_back(static_cast<uint32_t>(size));
      }
    }
    return out;
  }

  Expected<uint64_t> allocate(uint64_t bytes) override {
    KFUSE_RETURN_IF_ERROR(current());
    CUdeviceptr p = 0;
    CUresult r = t_.MemAllocDirect.load()(&p, bytes);
    if (r != CUDA_SUCCESS) return ioError("cuMemAlloc(" + std::to_string(bytes) + ") failed: " + cuError(r));
    live_.push_back(p);
    return uint64_t{p};
  }
  Status release(uint64_t ptr) override {
    KFUSE_RETURN_IF_ERROR(current());
    std::erase(live_, CUdeviceptr{ptr});
    CUresult r = t_.MemFreeDirect.load()(ptr);
    return r == CUDA_SUCCESS ? Status::okStatus() : ioError("cuMemFree failed: " + cuError(r));
  }
  Status copyIn(uint64_t dst, const void* src, uint64_t bytes) override {
    KFUSE_RETURN_IF_ERROR(current());
    CUresult r = t_.MemcpyHtoDDirect.load()(dst, src, bytes);
    return r == CUDA_SUCCESS ? Status::okStatus() : ioError("cuMemcpyHtoD failed: " + cuError(r));
  }
  Status copyOut(void* dst, uint64_t src, uint64_t bytes) override {
    KFUSE_RETURN_IF_ERROR(current());
    CUresult r = t_.MemcpyDtoHDirect.load()(dst, src, bytes);
    return r == CUDA_SUCCESS ? Status::okStatus() : ioError("cuMemcpyDtoH failed: " + cuError(r));
  }

  Status launch(int kernel, const core::LaunchShape& shape, const std::vector<std::vector<uint8_t>>& params) override {
    KFUSE_RETURN_IF_ERROR(current());
    if (kernel < 0 || static_cast<size_t>(kernel) >= functions_.size()) return internalError("no such kernel");
    CUresult r = issue(kernel, shape, params);
    if (r != CUDA_SUCCESS) return Status(ErrorCode::kInternal, "cuLaunchKernel failed: " + cuError(r));
    r = t_.CtxSynchronizeDirect.load()();
    if (r != CUDA_SUCCESS) return Status(ErrorCode::kInternal, "the kernel failed: " + cuError(r));
    return Status::okStatus();
  }

  std::string whyNotTimed() const override { return rewriter::whyNotTimed(t_); }

  Expected<uint64_t> medianNs(const std::vector<Launch>& launches, const std::function<Status()>& restore,
                              int runs) override {
    if (std::string why = whyNotTimed(); !why.empty()) return unsupported(why);
    KFUSE_RETURN_IF_ERROR(current());
    for (const Launch& l : launches) {
      if (l.kernel < 0 || static_cast<size_t>(l.kernel) >= functions_.size()) return internalError("no such kernel");
    }
    Status restored;
    std::string why;
    auto ns = medianEventNs(
        t_, /*stream=*/nullptr, runs,
        [&] {
          restored = restore();
          return restored.ok() ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
        },
        [&] {
          CUresult r = CUDA_SUCCESS;
          for (size_t i = 0; i < launches.size() && r == CUDA_SUCCESS; ++i) {
            r = issue(launches[i].kernel, launches[i].shape, launches[i].params);
          }
          return r;
        },
        &why);
    if (!restored.ok()) return restored;
    if (!ns) return Status(ErrorCode::kInternal, why);
    return *ns;
  }

  bool failedLaunchIsSticky() const override { return true; }
  uint64_t guardBytes() const override { return 4096; }

 private:
  // Validation may run on any host thread; the context is made current before every call.
  Status current() {
    if (!setup_) return Status::okStatus();
    CUresult r = setup_->ctxSetCurrent(ctx_);
    return r == CUDA_SUCCESS ? Status::okStatus() : ioError("cuCtxSetCurrent failed: " + cuError(r));
  }

  // Enqueues one launch on the default stream, without waiting for it.
  CUresult issue(int kernel, const core::LaunchShape& shape, const std::vector<std::vector<uint8_t>>& params) {
    CUfunction f = functions_[static_cast<size_t>(kernel)];
    std::vector<void*> args;
    for (const auto& p : params) args.push_back(const_cast<uint8_t*>(p.data()));
    if (shape.dynamic_shared_bytes > 48 * 1024 && setup_) {
      (void)setup_->funcSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     static_cast<int>(shape.dynamic_shared_bytes));
    }
    return t_.LaunchKernel[0].load()(f, shape.grid.x, shape.grid.y, shape.grid.z, shape.block.x, shape.block.y,
                                     shape.block.z, shape.dynamic_shared_bytes, /*hStream=*/nullptr, args.data(),
                                     /*extra=*/nullptr);
  }

  std::string cuError(CUresult r) const {
    const char* name = nullptr;
    const char* text = nullptr;
    if (setup_) {
      (void)setup_->getErrorName(r, &name);
      (void)setup_->getErrorString(r, &text);
    }
    std::string out = name ? name : "CUDA error " + std::to_string(static_cast<int>(r));
    if (text) out += std::string(" (") + text + ")";
    return out;
  }

  const hooks::DriverTable& t_;
  const DriverSetup* setup_;
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
  auto backend = std::make_unique<DriverBackend>(api.table, &api.setup);
  KFUSE_RETURN_IF_ERROR(backend->open());
  return std::unique_ptr<ValidationBackend>(std::move(backend));
}

std::string whyNoGpuTiming() {
  auto backend = makeDriverBackend();
  if (!backend.ok()) return "not timed: " + backend.status().message();
  return (*backend)->whyNotTimed();
}

Expected<std::unique_ptr<ValidationBackend>> makeDriverBackend(const hooks::DriverTable& table) {
  if (const char* missing = missingFromTable(table)) return unsupported(std::string("the driver has no ") + missing);
  return std::unique_ptr<ValidationBackend>(std::make_unique<DriverBackend>(table, /*setup=*/nullptr));
}

}  // namespace kfuse::rewriter
