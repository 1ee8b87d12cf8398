// ProfilerApi over a libcupti loaded at run time, so that tools which need CUPTI for one verb (`kfuse metrics`)
// do not need it to start.
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "kfuse/collector/profiler_api.h"
#include "profiler_api_functions.h"

namespace kfuse::collector {
namespace {

class LoadedProfilerApi final : public ProfilerApi {
 public:
  // Resolves every function in `library`; false with the missing name in `missing`.
  bool load(void* library, std::string* missing) {
#define KFUSE_RESOLVE(method, function, Params)                                      \
  method##_ = reinterpret_cast<CUptiResult (*)(Params*)>(dlsym(library, #function)); \
  if (!method##_) {                                                                  \
    *missing = #function;                                                            \
    return false;                                                                    \
  }
    KFUSE_PROFILER_API_FUNCTIONS(KFUSE_RESOLVE)
#undef KFUSE_RESOLVE
    get_device_id_ = reinterpret_cast<CUptiResult (*)(CUcontext, uint32_t*)>(dlsym(library, "cuptiGetDeviceId"));
    result_string_ =
        reinterpret_cast<CUptiResult (*)(CUptiResult, const char**)>(dlsym(library, "cuptiGetResultString"));
    if (!get_device_id_ || !result_string_) {
      *missing = get_device_id_ ? "cuptiGetResultString" : "cuptiGetDeviceId";
      return false;
    }
    return true;
  }

#define KFUSE_FORWARD(method, function, Params) \
  CUptiResult method(Params* p) override {      \
    return method##_(p);                        \
  }
  KFUSE_PROFILER_API_FUNCTIONS(KFUSE_FORWARD)
#undef KFUSE_FORWARD

  CUptiResult getDeviceId(CUcontext context, uint32_t* device) override {
    return get_device_id_(context, device);
  }

  const char* errorString(CUptiResult result) override {
    const char* s = nullptr;
    return result_string_(result, &s) == CUPTI_SUCCESS && s ? s : "unknown CUPTI error";
  }

 private:
#define KFUSE_POINTER(method, function, Params) CUptiResult (*method##_)(Params*) = nullptr;
  KFUSE_PROFILER_API_FUNCTIONS(KFUSE_POINTER)
#undef KFUSE_POINTER
  CUptiResult (*get_device_id_)(CUcontext, uint32_t*) = nullptr;
  CUptiResult (*result_string_)(CUptiResult, const char**) = nullptr;
};

}  // namespace

Expected<ProfilerApi*> loadProfilerApi() {
  static std::mutex mu;
  static LoadedProfilerApi* api = nullptr;  // never destroyed, like the library it points into
  std::lock_guard<std::mutex> lock(mu);
  if (api) return api;
  // KFUSE_CUPTI_LIB names the library to use, and then nothing else is tried.
  const char* forced = std::getenv("KFUSE_CUPTI_LIB");
  std::string tried = forced && *forced ? forced : "libcupti.so.13";
  void* library = dlopen(tried.c_str(), RTLD_NOW | RTLD_LOCAL);
#ifdef KFUSE_CUPTI_LIBRARY
  if (!library && !(forced && *forced)) {
    tried += ", " KFUSE_CUPTI_LIBRARY;
    library = dlopen(KFUSE_CUPTI_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  }
#endif
  if (!library) {
    return notFound("cannot load CUPTI (tried " + tried +
                    "): this needs libcupti.so.13 from the CUDA 13 toolkit; "
                    "put its directory (for example /usr/local/cuda/lib64) on LD_LIBRARY_PATH or name the file in "
                    "KFUSE_CUPTI_LIB");
  }
  auto* loaded = new LoadedProfilerApi();
  std::string missing;
  if (!loaded->load(library, &missing)) {
    delete loaded;
    return notFound("the CUPTI library found does not export " + missing + ": kfuse needs CUPTI 13.0 or newer");
  }
  api = loaded;
  return api;
}

}  // namespace kfuse::collector
