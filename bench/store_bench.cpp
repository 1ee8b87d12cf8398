// Trace store throughput: launch records written and read per second.
// README's performance table quotes the median items_per_second of these (scripts/bench.sh).
#include <benchmark/benchmark.h>

#include <unistd.h>
#include <filesystem>
#include <string>

#include "kfuse/core/trace_store.h"
#include "trace_builders.h"

namespace {

using namespace kfuse::core;

std::string benchPath(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("kfuse_bench_") + name + "_" + std::to_string(::getpid()) + ".sqlite"))
      .string();
}

void removeTrace(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

// Launches as the collector records them: 2 pointer args resolved to allocations, 32 argument bytes, all times.
void BM_StoreWriteLaunches(benchmark::State& state) {
  const auto n = static_cast<kfuse::core::Id>(state.range(0));
  std::vector<Launch> launches;
  for (Id i = 1; i <= n; ++i) launches.push_back(kfuse::testing::makeLaunch(i));
  const std::string path = benchPath("write");
  for (auto _ : state) {
    state.PauseTiming();
    removeTrace(path);
    state.ResumeTiming();
    auto w = TraceWriter::create(path);
    if (!w) state.SkipWithError(w.status().message().c_str());
    for (const Launch& l : launches) {
      if (!(*w)->add(l).ok()) state.SkipWithError("add failed");
    }
    if (!(*w)->close().ok()) state.SkipWithError("close failed");
  }
  state.SetItemsProcessed(state.iterations() * n);
  removeTrace(path);
}
BENCHMARK(BM_StoreWriteLaunches)->Arg(200'000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_StoreReadLaunches(benchmark::State& state) {
  const auto n = static_cast<Id>(state.range(0));
  const std::string path = benchPath("read");
  removeTrace(path);
  {
    auto w = TraceWriter::create(path);
    for (Id i = 1; i <= n; ++i) (void)(*w)->add(kfuse::testing::makeLaunch(i));
    (void)(*w)->close();
  }
  for (auto _ : state) {
    auto r = TraceReader::open(path);
    if (!r) state.SkipWithError(r.status().message().c_str());
    int64_t seen = 0;
    kfuse::Status s = (*r)->forEachLaunch([&](const Launch& l) {
      seen += l.grid.x;
      return true;
    });
    if (!s.ok()) state.SkipWithError(s.message().c_str());
    benchmark::DoNotOptimize(seen);
  }
  state.SetItemsProcessed(state.iterations() * n);
  removeTrace(path);
}
BENCHMARK(BM_StoreReadLaunches)->Arg(200'000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
