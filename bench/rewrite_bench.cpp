// Rewriter benchmarks: the fusion passes alone on a long kernel, and `kfuse rewrite` of the elementwise chain end
// to end (PTX from the trace, fusion, ptxas for the trace's GPU, validation on the emulator).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/analyzer/importer.h"
#include "kfuse/ptx/parser.h"
#include "kfuse/rewriter/fusion.h"
#include "kfuse/rewriter/rewrite.h"

namespace {

using namespace kfuse;

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Vertical fusion + cleanup of two ~5,000-instruction nvcc kernels (bench/kernels/long_chain.cu).
void BM_FusionPasses(benchmark::State& state) {
  auto parsed = ptx::parseModule(readText(KFUSE_BENCH_PTX_DIR "/long_chain.ptx"));
  if (!parsed.ok()) {
    state.SkipWithError(parsed.status().message().c_str());
    return;
  }
  rewriter::VerticalFusion spec;
  spec.kernels = {"long_a", "long_b"};
  spec.fused_name = "fused";
  spec.equal_args = {{{0, 1}, {1, 0}}, {{0, 2}, {1, 2}}};
  spec.params_disjoint = true;
  size_t instructions = 0;
  for (auto _ : state) {
    state.PauseTiming();  // the copy of the input module is not part of the passes
    ptx::Module m = *parsed;
    state.ResumeTiming();
    auto r = rewriter::fuseVertical(m, spec);
    auto c = rewriter::cleanupFunction(m, "fused", true);
    if (!r.ok() || !c.ok()) {
      state.SkipWithError("fusion failed");
      return;
    }
    instructions = 0;
    for (const ptx::Statement& s : m.findFunction("fused")->body) {
      instructions += s.kind == ptx::StatementKind::kInstruction;
    }
    benchmark::DoNotOptimize(m);
  }
  state.counters["fused_instructions"] = static_cast<double>(instructions);
}
BENCHMARK(BM_FusionPasses)->Unit(benchmark::kMillisecond);

// `kfuse rewrite TRACE --candidate 1` on a recording of examples/driver_api/elementwise_chain (scripts/bench.sh
// records it and passes it in KFUSE_BENCH_CHAIN_TRACE).
void BM_RewriteElementwiseChain(benchmark::State& state) {
  const char* trace = std::getenv("KFUSE_BENCH_CHAIN_TRACE");
  if (!trace) {
    state.SkipWithError("set KFUSE_BENCH_CHAIN_TRACE to a kfuse recording of the elementwise_chain example");
    return;
  }
  auto imported = analyzer::importTrace(trace);
  if (!imported.ok()) {
    state.SkipWithError(imported.status().message().c_str());
    return;
  }
  auto report = analyzer::analyze(*imported, trace, {});
  if (!report.ok() || report->candidates.empty()) {
    state.SkipWithError("no candidate");
    return;
  }
  const std::string dir = (std::filesystem::temp_directory_path() / "kfuse_rewrite_bench_plan").string();
  for (auto _ : state) {
    auto plan = rewriter::rewriteCandidate(*imported, *report, report->candidates.front(), {}, dir);
    if (!plan.ok() || plan->validation.emulator != rewriter::ValidationVerdict::kPassed) {
      state.SkipWithError(plan.ok() ? plan->validation.mismatch.c_str() : plan.status().message().c_str());
      break;
    }
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_RewriteElementwiseChain)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
