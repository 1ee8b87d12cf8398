// libkfuse_collector.so: the library kfuse puts into applications, through LD_PRELOAD (hook backend: dlsym and
// the driver's exported names are interposed) and/or CUDA_INJECTION64_PATH (InitializeInjection, CUPTI backend).
// Everything else is hidden (-fvisibility=hidden, --exclude-libs): only the names below and those of
// preload_exports.h are exported.
#include <cstdint>
#include <cstdlib>

#include "kfuse/collector/collector_runtime.h"
#include "kfuse/collector/nvtx_capture.h"
#include "kfuse/collector/profiler_api.h"
#include "kfuse/hooks/driver_hooks.h"

namespace kfuse::collector {
CuptiApi& realCuptiApi();  // cupti_api_real.cpp
}  // namespace kfuse::collector

using kfuse::collector::CollectorRuntime;
using kfuse::hooks::DriverTable;
using kfuse::hooks::Interposer;

namespace kfuse_preload {

bool wanted() {
  static const bool requested = [] {
    const char* v = std::getenv("KFUSE_OUTPUT");
    return v && *v;
  }();
  return requested;
}

// The application is reaching the driver: start recording. The handle is the driver: learn its queries.
void driverReached(void* handle) {
  CollectorRuntime::instance().activate(/*from_injection=*/false);
  DriverTable& t = Interposer::driver();
  if (!t.FuncGetName.load()) {
    t.resolveQueries([](const char* sym, void* h) { return kfuse::hooks::realDlsym(h, sym); }, handle);
  }
}

}  // namespace kfuse_preload

#include "kfuse/hooks/preload_exports.h"

namespace {

__attribute__((constructor)) void kfuseCollectorLoad() {
  Interposer::setOwnObject(reinterpret_cast<const void*>(&kfuseCollectorLoad));
  CollectorRuntime::instance().init(&kfuse::collector::realCuptiApi(), &kfuse::collector::realProfilerApi());
}

}  // namespace

extern "C" {

// CUDA_INJECTION64_PATH entry point: the driver calls it during cuInit.
KFUSE_EXPORT int InitializeInjection(void) {
  CollectorRuntime::instance().init(&kfuse::collector::realCuptiApi(), &kfuse::collector::realProfilerApi());
  CollectorRuntime::instance().activate(/*from_injection=*/true);
  return 1;
}

// NVTX_INJECTION64_PATH entry point (nvtx_capture.h; `kfuse record` sets the variable): NVTX calls it at the
// application's first nvtx* call. A process that is not recording answers 0: NVTX then makes every call a no-op.
KFUSE_EXPORT int InitializeInjectionNvtx2(const void* (*get_export_table)(uint32_t)) {
  if (!kfuse_preload::wanted()) return 0;
  return kfuse::collector::initializeNvtxInjection(get_export_table);
}

}  // extern "C"
