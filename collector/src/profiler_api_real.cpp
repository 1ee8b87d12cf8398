// The real ProfilerApi, over libcupti (linked into kfuse_cupti_real only).
#include "kfuse/collector/profiler_api.h"
#include "profiler_api_functions.h"

namespace kfuse::collector {
namespace {

class RealProfilerApi final : public ProfilerApi {
 public:
#define KFUSE_FORWARD(method, function, Params) \
  CUptiResult method(Params* p) override {      \
    return function(p);                         \
  }
  KFUSE_PROFILER_API_FUNCTIONS(KFUSE_FORWARD)
#undef KFUSE_FORWARD

  CUptiResult getDeviceId(CUcontext context, uint32_t* device) override {
    return cuptiGetDeviceId(context, device);
  }

  const char* errorString(CUptiResult result) override {
    const char* s = nullptr;
    return cuptiGetResultString(result, &s) == CUPTI_SUCCESS && s ? s : "unknown CUPTI error";
  }
};

}  // namespace

ProfilerApi& realProfilerApi() {
  static auto* api = new RealProfilerApi();  // never destroyed: used from exit handlers
  return *api;
}

}  // namespace kfuse::collector
