// The injector's CPU cost (README's performance table): a launch no plan names (target <= 50 ns added), and a
// matched occurrence of a real plan (target <= 500 ns per occurrence), both against a do-nothing driver.
//
// BM_FusedOccurrence repeats one occurrence (a loop over the same buffers: after the first, identical occurrences
// are not re-checked); BM_FusedOccurrenceNewArguments alternates two sets of buffers, so every check is in full.
// The plan is rewriter/inject/testdata/chain-plan, what `kfuse rewrite` wrote for the elementwise-chain example:
// four kernels (scale -> add -> relu -> mul) become one, guarded by a launch-shape check, six argument
// equalities, a no-overlap check of seven buffers (one allocation lookup each) and the proven argument values.
// Launches go the way an application's do under `kfuse run`: the interposer's wrapper for cuLaunchKernel -> the
// Injector -> the fake driver. BM_DirectLaunch calls the fake directly: subtract it for kfuse's share.
// Read the CPU column; the wall-clock column also counts time the thread was descheduled.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "kfuse/collector/driver_hooks.h"
#include "kfuse/inject/injector.h"
#include "kfuse/inject/runtime_plan.h"

namespace {

using namespace kfuse;
using collector::DriverTable;
using collector::Interposer;

const std::string kPlanDir = std::string(KFUSE_SOURCE_DIR) + "/rewriter/inject/testdata/chain-plan";
constexpr uint64_t kBase = 0x7f0000000000, kAllocBytes = 131072;
const CUmodule kModule = reinterpret_cast<CUmodule>(0x1000);
const char* const kNames[] = {"scale", "add", "relu", "mul", "unrelated", "fused"};
CUfunction function(int i) {
  return reinterpret_cast<CUfunction>(0x1001 + i);
}

__attribute__((noinline)) CUresult CUDAAPI fakeLaunch(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                                      unsigned, unsigned, CUstream, void**, void**) {
  benchmark::ClobberMemory();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeGetModule(CUmodule* m, CUfunction) {
  *m = kModule;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeName(const char** name, CUfunction f) {
  *name = kNames[reinterpret_cast<uintptr_t>(f) - 0x1001];
  return CUDA_SUCCESS;
}
const inject::RuntimePlan* g_plan = nullptr;
CUresult CUDAAPI fakeParamInfo(CUfunction f, size_t i, size_t* offset, size_t* size) {
  const size_t k = reinterpret_cast<uintptr_t>(f) - 0x1001;
  if (k >= 4 || i >= g_plan->kernels[k].params.size()) return CUDA_ERROR_INVALID_VALUE;
  *offset = g_plan->kernels[k].params[i].offset;
  *size = g_plan->kernels[k].params[i].size;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeLoad(CUmodule* m, const void*) {
  *m = kModule;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeGetFunction(CUfunction* f, CUmodule, const char*) {
  *f = function(5);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeCtx(CUcontext* c) {
  *c = reinterpret_cast<CUcontext>(0x77);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeDevice(CUdevice* d) {
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeAttribute(int* v, CUdevice_attribute a, CUdevice) {
  *v = a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
  return CUDA_SUCCESS;
}
std::atomic<uint64_t> g_next_alloc{0};
// Allocations of 128 KiB, 1 MiB apart, handed out in order.
CUresult CUDAAPI fakeAlloc(CUdeviceptr* p, size_t) {
  *p = kBase + g_next_alloc.fetch_add(1) * 0x100000;
  return CUDA_SUCCESS;
}
// The driver's view of those allocations, for pointers kfuse did not see allocated.
CUresult CUDAAPI fakeRange(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
  if (p < kBase) return CUDA_ERROR_NOT_FOUND;
  *base = kBase + ((p - kBase) & ~uint64_t{0xfffff});
  *size = kAllocBytes;
  return p < *base + *size ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

using LaunchFn = CUresult(CUDAAPI*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    CUstream, void**, void**);

// The process-wide interposer with an Injector for the chain plan installed (made once, never destroyed).
struct Setup {
  inject::Injector* injector = nullptr;
  LaunchFn wrapper = nullptr;
  std::string error;

  Setup() {
    auto plan = inject::loadRuntimePlan(kPlanDir);
    if (!plan.ok()) {
      error = plan.status().message();
      return;
    }
    g_plan = new inject::RuntimePlan(*plan);
    DriverTable& t = Interposer::driver();
    t.FuncGetModule = &fakeGetModule;
    t.FuncGetName = &fakeName;
    t.FuncGetParamInfo = &fakeParamInfo;
    t.ModuleGetFunction = &fakeGetFunction;
    t.CtxGetCurrent = &fakeCtx;
    t.CtxGetDevice = &fakeDevice;
    t.DeviceGetAttribute = &fakeAttribute;
    t.MemGetAddressRange = &fakeRange;
    t.ModuleLoadData[0] = &fakeLoad;
    t.MemAlloc[0] = &fakeAlloc;
    wrapper = reinterpret_cast<LaunchFn>(
        Interposer::resolveProc("cuLaunchKernel", 4000, 0, reinterpret_cast<void*>(&fakeLaunch)));
    injector = new inject::Injector(t, {*plan});
    Interposer::install(injector);
    // The application's module: the plan's original image, so the kernels are the plan's.
    std::ifstream in(kPlanDir + "/" + "originals/8454099dc54cfe61.ptx", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    static const std::string image = ss.str();
    CUmodule m = nullptr;
    injector->ModuleLoadData(0, &m, image.data());
  }
};

Setup& setup() {
  static Setup* s = new Setup();
  return *s;
}

void BM_DirectLaunch(benchmark::State& state) {
  void* params[4] = {};
  for (auto _ : state) fakeLaunch(function(4), 128, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr);
}
BENCHMARK(BM_DirectLaunch);

// A kernel no plan names, with a plan loaded: the cost every unrelated launch pays.
void BM_PassthroughLaunch(benchmark::State& state) {
  Setup& s = setup();
  if (!s.injector) return state.SkipWithError(s.error.c_str());
  CUdeviceptr p = kBase;
  int n = 32768;
  void* params[] = {&p, &n};
  const CUstream stream = reinterpret_cast<CUstream>(0x5000 + 0x100 * state.thread_index());
  for (auto _ : state) s.wrapper(function(4), 128, 1, 1, 256, 1, 1, 0, stream, params, nullptr);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PassthroughLaunch);
BENCHMARK(BM_PassthroughLaunch)->Threads(8)->UseRealTime();

// One occurrence of the four-launch pattern, matched, checked and replaced by one fused launch.
void BM_FusedOccurrence(benchmark::State& state) {
  Setup& s = setup();
  if (!s.injector) return state.SkipWithError(s.error.c_str());
  CUdeviceptr b[7];
  for (CUdeviceptr& p : b) s.injector->MemAlloc(0, &p, kAllocBytes);  // as the application's cuMemAlloc would
  int n = 32768;
  float alpha = 1.75f;
  void* scale[] = {&b[0], &b[1], &alpha, &n};
  void* add[] = {&b[1], &b[2], &b[3], &n};
  void* relu[] = {&b[3], &b[4], &n};
  void* mul[] = {&b[4], &b[5], &b[6], &n};
  const CUstream stream = reinterpret_cast<CUstream>(0x9000 + 0x100 * state.thread_index());
  const uint64_t fused_before = s.injector->stats().fused_launches;
  for (auto _ : state) {
    s.wrapper(function(0), 128, 1, 1, 256, 1, 1, 0, stream, scale, nullptr);
    s.wrapper(function(1), 128, 1, 1, 256, 1, 1, 0, stream, add, nullptr);
    s.wrapper(function(2), 128, 1, 1, 256, 1, 1, 0, stream, relu, nullptr);
    s.wrapper(function(3), 128, 1, 1, 256, 1, 1, 0, stream, mul, nullptr);
  }
  const uint64_t fused = s.injector->stats().fused_launches - fused_before;
  if (state.thread_index() == 0 && state.threads() == 1 && fused != static_cast<uint64_t>(state.iterations())) {
    state.SkipWithError("the pattern was not fused every time");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FusedOccurrence);
BENCHMARK(BM_FusedOccurrence)->Threads(8)->UseRealTime();

// The same, alternating between two sets of buffers: every occurrence's predicates are checked in full (an
// occurrence identical to the previous one is not re-checked; see the injector's failingPredicateMemo).
void BM_FusedOccurrenceNewArguments(benchmark::State& state) {
  Setup& s = setup();
  if (!s.injector) return state.SkipWithError(s.error.c_str());
  CUdeviceptr b[2][7];
  for (auto& set : b) {
    for (CUdeviceptr& p : set) s.injector->MemAlloc(0, &p, kAllocBytes);
  }
  int n = 32768;
  float alpha = 1.75f;
  const CUstream stream = reinterpret_cast<CUstream>(0xa000 + 0x100 * state.thread_index());
  int which = 0;
  for (auto _ : state) {
    CUdeviceptr* p = b[which];
    which ^= 1;
    void* scale[] = {&p[0], &p[1], &alpha, &n};
    void* add[] = {&p[1], &p[2], &p[3], &n};
    void* relu[] = {&p[3], &p[4], &n};
    void* mul[] = {&p[4], &p[5], &p[6], &n};
    s.wrapper(function(0), 128, 1, 1, 256, 1, 1, 0, stream, scale, nullptr);
    s.wrapper(function(1), 128, 1, 1, 256, 1, 1, 0, stream, add, nullptr);
    s.wrapper(function(2), 128, 1, 1, 256, 1, 1, 0, stream, relu, nullptr);
    s.wrapper(function(3), 128, 1, 1, 256, 1, 1, 0, stream, mul, nullptr);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FusedOccurrenceNewArguments);

}  // namespace

BENCHMARK_MAIN();
