// The hook backend's added CPU cost per recorded launch (README's performance table; target <= 300 ns median).
//
// A launch goes the way an application's does under `kfuse record --backend hook`: the interposer's wrapper for
// cuLaunchKernel -> HookRecorder (timestamps, layout cache lookup, argument copy) -> the SQLite sink's queue,
// with the writer thread storing it in the background. The driver underneath is a fake that does nothing, so
// BM_HookedLaunch - BM_DirectLaunch is the collector's cost on the application thread. Every 64 Ki launches the
// benchmark waits (untimed) for the writer to drain, so the numbers are the launch path's cost, not the queue's
// back-pressure; BM_SustainedRecording measures the writer-bound end-to-end rate instead.
// Read the CPU column for the added cost: on a shared machine the wall-clock column also counts the time the
// thread was descheduled.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "kfuse/collector/hook_recorder.h"
#include "kfuse/collector/trace_sink.h"
#include "kfuse/hooks/driver_hooks.h"

namespace {

using namespace kfuse::collector;
using kfuse::hooks::DriverTable;
using kfuse::hooks::Interposer;

struct FakeKernel {
  const char* name = "_Z5saxpyifPKfPf";
  size_t offsets[4] = {0, 4, 8, 16};
  size_t sizes[4] = {4, 4, 8, 8};
} g_kernel;

__attribute__((noinline)) CUresult CUDAAPI fakeLaunch(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                                      unsigned, unsigned, CUstream, void**, void**) {
  benchmark::ClobberMemory();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeParamInfo(CUfunction, size_t i, size_t* off, size_t* size) {
  if (i >= 4) return CUDA_ERROR_INVALID_VALUE;
  *off = g_kernel.offsets[i];
  *size = g_kernel.sizes[i];
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeName(const char** name, CUfunction) {
  *name = g_kernel.name;
  return CUDA_SUCCESS;
}

using LaunchFn = CUresult(CUDAAPI*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    CUstream, void**, void**);

std::string benchPath(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("kfuse_collector_bench_") + name + "_" + std::to_string(::getpid()) + ".sqlite"))
      .string();
}

void removeTrace(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

// The recording setup shared by the benchmarks: the process-wide interposer with a HookRecorder installed.
struct Recording {
  std::string path;
  std::unique_ptr<SqliteSink> sink;
  std::unique_ptr<HookRecorder> recorder;
  LaunchFn wrapper = nullptr;

  explicit Recording(const char* name) : path(benchPath(name)) {
    removeTrace(path);
    DriverTable& t = Interposer::driver();
    t.FuncGetParamInfo = &fakeParamInfo;
    t.FuncGetName = &fakeName;
    wrapper = reinterpret_cast<LaunchFn>(
        Interposer::resolveProc("cuLaunchKernel", 4000, 0, reinterpret_cast<void*>(&fakeLaunch)));
    SqliteSinkOptions o;
    o.queue_bytes = 256u << 20;
    o.block_timeout_ms = 60000;
    auto s = SqliteSink::open(path, o);
    if (s.ok()) sink = std::move(*s);
    if (sink) {
      recorder = std::make_unique<HookRecorder>(t, *sink);
      Interposer::install(recorder.get());
    }
  }
  ~Recording() {
    Interposer::install(nullptr);
    if (sink) (void)sink->finish();
    removeTrace(path);
  }
};

void launchArgs(benchmark::State& state, LaunchFn launch) {
  int n = 1 << 20;
  float a = 2.0f;
  CUdeviceptr x = 0x7f0000000000, y = 0x7f0000100000;
  void* params[] = {&n, &a, &x, &y};
  auto f = reinterpret_cast<CUfunction>(&g_kernel);
  for (auto _ : state) {
    CUresult r = launch(f, 4096, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr);
    benchmark::DoNotOptimize(r);
  }
}

// Baseline: the application calling the fake driver directly (through a pointer the compiler cannot see through).
void BM_DirectLaunch(benchmark::State& state) {
  LaunchFn volatile fn = &fakeLaunch;
  launchArgs(state, fn);
}
BENCHMARK(BM_DirectLaunch)->Iterations(1 << 20)->Repetitions(10)->ReportAggregatesOnly(true);

// Through the hooking layer and the hook backend into the SQLite sink.
void BM_HookedLaunch(benchmark::State& state) {
  static Recording* rec = nullptr;
  if (state.thread_index() == 0) rec = new Recording("hooked");
  if (!rec->sink) {
    state.SkipWithError("cannot open the trace");
    return;
  }
  int n = 1 << 20;
  float a = 2.0f;
  CUdeviceptr x = 0x7f0000000000, y = 0x7f0000100000;
  void* params[] = {&n, &a, &x, &y};
  auto f = reinterpret_cast<CUfunction>(&g_kernel);
  uint64_t i = 0;
  for (auto _ : state) {
    if ((++i & 0xffff) == 0 && state.threads() == 1) {
      state.PauseTiming();
      (void)rec->sink->flush(60000);  // let the writer catch up: measure the launch path, not back-pressure
      state.ResumeTiming();
    }
    CUresult r = rec->wrapper(f, 4096, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr);
    benchmark::DoNotOptimize(r);
  }
  if (state.thread_index() == 0) {
    state.counters["dropped"] = static_cast<double>(rec->sink->stats().dropped);
    delete rec;
  }
}
BENCHMARK(BM_HookedLaunch)->Iterations(1 << 20)->Repetitions(10)->ReportAggregatesOnly(true);

// End to end, writer-bound: N launches recorded and committed to SQLite.
void BM_SustainedRecording(benchmark::State& state) {
  const int64_t n = state.range(0);
  for (auto _ : state) {
    Recording rec("sustained");
    if (!rec.sink) {
      state.SkipWithError("cannot open the trace");
      return;
    }
    int nn = 1;
    float a = 2.0f;
    CUdeviceptr x = 0x7f0000000000, y = 0x7f0000100000;
    void* params[] = {&nn, &a, &x, &y};
    auto f = reinterpret_cast<CUfunction>(&g_kernel);
    for (int64_t i = 0; i < n; ++i) rec.wrapper(f, 4096, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr);
    (void)rec.sink->finish();
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_SustainedRecording)->Arg(200000)->Unit(benchmark::kMillisecond)->UseRealTime()->Repetitions(3);

}  // namespace

BENCHMARK_MAIN();
