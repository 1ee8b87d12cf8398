// Analyzer throughput: a 1,000,000-launch trace (the demo trace's elementwise chain replicated) analyzed end to
// end; the demo trace with huge kernels. README quotes the median time and the process's peak resident memory
// (max_rss_mib counter).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "huge_kernel.h"
#include "kfuse/analyzer/analysis.h"
#include "kfuse/core/trace_json.h"

namespace {

using namespace kfuse;

// The demo trace (examples/traces/demo_chain.json), as an input to analyze().
analyzer::ImportResult demoInput() {
  auto demo = core::readTraceJsonFile(KFUSE_SOURCE_DIR "/examples/traces/demo_chain.json");
  if (!demo) std::abort();
  analyzer::ImportResult r;
  r.format = "kfuse";
  r.trace = std::move(*demo);
  return r;
}

analyzer::ImportResult replicate(size_t launches) {
  analyzer::ImportResult r = demoInput();
  const std::vector<core::Launch> base = r.trace.launches;
  r.trace.launches.clear();
  r.trace.launches.reserve(launches);
  const int64_t period = base.back().gpu_end_ns - base.front().api_start_ns + 10'000;
  for (size_t i = 0; r.trace.launches.size() < launches; ++i) {
    for (const core::Launch& l : base) {
      if (r.trace.launches.size() == launches) break;
      core::Launch c = l;
      c.id = static_cast<core::Id>(r.trace.launches.size() + 1);
      const int64_t shift = static_cast<int64_t>(i) * period;
      c.api_start_ns += shift;
      c.api_end_ns += shift;
      c.gpu_start_ns += shift;
      c.gpu_end_ns += shift;
      r.trace.launches.push_back(std::move(c));
    }
  }
  // Copies and syncs sit at the ends of the demo; keep them out of the replicated middle.
  r.trace.memcpys.clear();
  r.trace.memsets.clear();
  r.trace.syncs.clear();
  return r;
}

void BM_AnalyzeMillionLaunches(benchmark::State& state) {
  const analyzer::ImportResult input = replicate(static_cast<size_t>(state.range(0)));
  size_t candidates = 0, occurrences = 0;
  for (auto _ : state) {
    auto report = analyzer::analyze(input, "replicated-demo", {});
    if (!report) state.SkipWithError(report.status().message().c_str());
    candidates = report->candidates.size();
    occurrences = candidates ? report->candidates[0].occurrences.size() : 0;
    benchmark::DoNotOptimize(report);
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  state.counters["max_rss_mib"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
  state.counters["candidates"] = static_cast<double>(candidates);
  state.counters["occurrences"] = static_cast<double>(occurrences);
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_AnalyzeMillionLaunches)->Arg(1'000'000)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

// The demo trace with its first kernel's function row repeated N times (a damaged or hostile trace): the kernel
// catalog analyses each distinct PTX function once, however many rows name it.
void BM_AnalyzeOneKernelManyFunctionRows(benchmark::State& state) {
  analyzer::ImportResult r = demoInput();
  const core::KernelFunction first = r.trace.functions.front();
  for (int64_t i = 0; i < state.range(0); ++i) {
    core::KernelFunction f = first;
    f.id = static_cast<core::Id>(1000 + i);
    r.trace.functions.push_back(std::move(f));
  }
  for (auto _ : state) {
    auto report = analyzer::analyze(r, "many-function-rows", {});
    if (!report) state.SkipWithError(report.status().message().c_str());
    benchmark::DoNotOptimize(report);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_AnalyzeOneKernelManyFunctionRows)->Arg(50'001)->Unit(benchmark::kMillisecond)->UseRealTime();

// The demo trace with scale and relu replaced by SYNTHETIC straight-line kernels of N instructions each (relu reads
// and writes what scale wrote, 200 launches of 4,096 blocks): every analysis pass on two huge kernels sharing a
// buffer, which once held quadratic steps (thread locality compared every access pair; the block-level check ran
// the interval analysis once per block).
void BM_AnalyzeTwoHugeKernels(benchmark::State& state) {
  analyzer::ImportResult r = demoInput();
  core::Module& m = r.trace.modules.front();
  std::string ptx(m.image.begin(), m.image.end());
  const std::pair<const char*, std::vector<std::string>> kernels[] = {
      {"_Z5scalePKfPffi", {".u64", ".u64", ".f32", ".u32"}}, {"_Z4reluPKfPfi", {".u64", ".u64", ".u32"}}};
  for (const auto& [name, types] : kernels) {
    const size_t start = ptx.find(std::string(".visible .entry ") + name);
    const size_t end = ptx.find("\n}\n", start);
    if (start == std::string::npos || end == std::string::npos) std::abort();
    ptx.replace(start, end + 3 - start, bench::hugeKernelEntry(name, types, types.size() - 1, state.range(0)));
  }
  m.image.assign(ptx.begin(), ptx.end());
  m.hash = core::sha256Hex(m.image);
  for (auto _ : state) {
    auto report = analyzer::analyze(r, "huge-kernels", {});
    if (!report) state.SkipWithError(report.status().message().c_str());
    benchmark::DoNotOptimize(report);
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  state.counters["max_rss_mib"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_AnalyzeTwoHugeKernels)
    ->Arg(10'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
