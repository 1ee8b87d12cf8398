// Kineto import throughput and peak memory (README's performance table; scripts/bench.sh prints the medians).
//
// Input: ../shared/data/kineto/hta_six_streams_rank0.json.gz (1.4 MB gzip, 25.8 MB of JSON, 6080 kernels) and
// plain-JSON copies of it with the event array repeated 1x and 4x, written to the temp directory.
// Counters: MB_per_s_gz (compressed bytes / s), MB_per_s_json (JSON text bytes / s), import_peak_MiB (the largest
// growth of the resident set during one import: VmHWM, reset through /proc/self/clear_refs after malloc_trim, minus
// VmRSS before the import; it includes the imported Trace itself) and json_MiB (size of the JSON text). BM_ZlibInflate
// is the zcat-equivalent floor for the .json.gz case: inflating alone, in process, with zlib.
#include <benchmark/benchmark.h>
#include <zlib.h>

#include <malloc.h>

#include <unistd.h>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kfuse/analyzer/importer.h"

namespace {

namespace fs = std::filesystem;

std::string sharedTrace() {
  return std::string(KFUSE_SOURCE_DIR) + "/../shared/data/kineto/hta_six_streams_rank0.json.gz";
}

std::string inflateFile(const std::string& path) {
  std::string out;
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

// kB figures from /proc/self/status ("VmHWM", "VmRSS").
double procStatusMiB(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(key);
  while (std::getline(in, line)) {
    if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':') {
      return std::stod(line.substr(n + 1)) / 1024.0;
    }
  }
  return 0;
}

// Resets VmHWM to the current RSS (Linux >= 4.0). False where that is not allowed.
bool resetPeakRss() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (!f) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

std::vector<std::string>& tempFiles() {
  static std::vector<std::string> files;
  return files;
}

// The six-streams trace as plain JSON with its events repeated `times` times (removed when the program ends).
std::string replicatedJson(int times) {
  const fs::path path = fs::temp_directory_path() /
                        ("kfuse_import_bench_" + std::to_string(::getpid()) + "_x" + std::to_string(times) + ".json");
  if (fs::exists(path)) return path.string();
  const std::string text = inflateFile(sharedTrace());
  const size_t key = text.find("\"traceEvents\"");
  const size_t open = text.find('[', key);
  const size_t close = text.rfind(']');
  if (key == std::string::npos || open == std::string::npos || close == std::string::npos || close < open) return {};
  const std::string body = text.substr(open + 1, close - open - 1);
  tempFiles().push_back(path.string());
  std::ofstream out(path, std::ios::binary);
  out << text.substr(0, open + 1);
  for (int i = 0; i < times; ++i) out << (i ? "," : "") << body;
  out << text.substr(close);
  return path.string();
}

void importLoop(benchmark::State& state, const std::string& path, double compressed_bytes, double json_bytes,
                const kfuse::analyzer::ImportOptions& options = {}) {
  double peak = 0, base = 0;
  const bool can_reset = resetPeakRss();
  for (auto _ : state) {
    state.PauseTiming();
    malloc_trim(0);  // so that heap pages freed earlier neither count in base nor hide the import's growth
    base = procStatusMiB("VmRSS");
    resetPeakRss();
    state.ResumeTiming();
    auto r = kfuse::analyzer::importTrace(path, options);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      break;
    }
    benchmark::DoNotOptimize(r->trace.launches.data());
    state.PauseTiming();
    if (can_reset) peak = std::max(peak, procStatusMiB("VmHWM") - base);
    state.ResumeTiming();
  }
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["MB_per_s_json"] = benchmark::Counter(iterations * json_bytes / 1e6, benchmark::Counter::kIsRate);
  if (compressed_bytes > 0) {
    state.counters["MB_per_s_gz"] =
        benchmark::Counter(iterations * compressed_bytes / 1e6, benchmark::Counter::kIsRate);
  }
  state.counters["json_MiB"] = json_bytes / (1024.0 * 1024.0);
  if (can_reset) {
    state.counters["import_peak_MiB"] = peak;  // peak resident set minus the resident set before the import
  }
}

void BM_KinetoImportGz(benchmark::State& state) {
  const std::string path = sharedTrace();
  // The gzip trailer's size field (modulo 2^32, fine here) rather than inflating, which would touch memory.
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  in.seekg(-4, std::ios::end);
  unsigned char t[4] = {};
  in.read(reinterpret_cast<char*>(t), 4);
  const double json_bytes =
      static_cast<double>(uint32_t{t[0]} | uint32_t{t[1]} << 8 | uint32_t{t[2]} << 16 | uint32_t{t[3]} << 24);
  importLoop(state, path, static_cast<double>(fs::file_size(path)), json_bytes);
}
BENCHMARK(BM_KinetoImportGz)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_KinetoImportJson(benchmark::State& state) {
  const std::string path = replicatedJson(static_cast<int>(state.range(0)));
  if (path.empty()) {
    state.SkipWithError("cannot build the replicated trace");
    return;
  }
  kfuse::analyzer::ImportOptions options;
  options.keep_cpu_ops = state.range(1) != 0;
  importLoop(state, path, 0, static_cast<double>(fs::file_size(path)), options);
}
// Args: {copies of the event array, keep CPU ops (their shapes are a good part of the imported data)}.
BENCHMARK(BM_KinetoImportJson)->Args({1, 1})->Args({4, 1})->Args({4, 0})->Unit(benchmark::kMillisecond)->UseRealTime();

// zcat's work on the same file, in process: the floor for importing a .json.gz.
void BM_ZlibInflate(benchmark::State& state) {
  const std::string path = sharedTrace();
  double json_bytes = 0;
  for (auto _ : state) {
    const std::string text = inflateFile(path);
    json_bytes = static_cast<double>(text.size());
    benchmark::DoNotOptimize(text.data());
  }
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["MB_per_s_gz"] =
      benchmark::Counter(iterations * static_cast<double>(fs::file_size(path)) / 1e6, benchmark::Counter::kIsRate);
  state.counters["MB_per_s_json"] = benchmark::Counter(iterations * json_bytes / 1e6, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ZlibInflate)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  for (const std::string& f : tempFiles()) {
    std::error_code ec;
    fs::remove(f, ec);
  }
  return 0;
}
