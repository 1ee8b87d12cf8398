// `kfuse merge`'s reduce step: 1,024 rank reports merged by pattern, read from files one at a time. The reports are
// copies of the analysis of a real Kineto trace (../shared/data/kineto/tracelens_bert_small_h100.json.gz: 60
// launches, 7 candidates) with distinct ranks, written to a temporary directory first (synthetic: one real report
// repeated). README quotes the median time and the process's peak resident memory (max_rss_mib counter); its
// own program, so that no other benchmark's memory is in that peak.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/analyzer/importer.h"
#include "kfuse/analyzer/multi_rank.h"

namespace {

namespace fs = std::filesystem;

// Writes `n` rank reports into a fresh temporary directory; returns it.
fs::path writeRankReports(int n) {
  const std::string trace = std::string(KFUSE_SOURCE_DIR) + "/../shared/data/kineto/tracelens_bert_small_h100.json.gz";
  auto imported = kfuse::analyzer::importTrace(trace);
  if (!imported) {
    std::fprintf(stderr, "merge_bench: %s\n", imported.status().message().c_str());
    std::exit(1);
  }
  auto report = kfuse::analyzer::analyze(*imported, trace, {});
  if (!report) std::exit(1);
  nlohmann::json j = kfuse::analyzer::reportToJson(*report);
  std::string tmpl = (fs::temp_directory_path() / "kfuse_merge_bench.XXXXXX").string();
  if (!mkdtemp(tmpl.data())) std::exit(1);
  const fs::path dir = tmpl;
  for (int r = 0; r < n; ++r) {
    j["input"]["rank"] = r;
    std::ofstream(dir / ("rank" + std::to_string(r) + ".report.json")) << j.dump();
  }
  return dir;
}

void BM_MergeRankReports(benchmark::State& state) {
  const fs::path dir = writeRankReports(static_cast<int>(state.range(0)));
  size_t recommendations = 0;
  for (auto _ : state) {
    auto merged = kfuse::analyzer::mergeRankReports({dir.string()});
    if (!merged) state.SkipWithError(merged.status().message().c_str());
    recommendations = merged ? merged->recommendations.size() : 0;
    benchmark::DoNotOptimize(merged);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  state.counters["max_rss_mib"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
  state.counters["recommendations"] = static_cast<double>(recommendations);
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_MergeRankReports)->Arg(1'024)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
