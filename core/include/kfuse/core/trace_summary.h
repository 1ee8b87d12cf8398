// A summary of a stored trace: what `kfuse info` prints and the GUI's overview shows.
// Computed in one streaming pass over the launches, so it works on traces larger than memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kfuse/core/status.h"
#include "kfuse/core/trace.h"
#include "kfuse/core/trace_store.h"

namespace kfuse::core {

struct KernelTimeSummary {
  std::string name;  // demangled when known, else mangled
  int64_t launches = 0;
  int64_t timed_launches = 0;  // launches with GPU start and end
  int64_t total_gpu_ns = 0;
};

struct TraceSummary {
  std::string path;
  int schema_version = 0;
  TraceMetadata metadata;
  std::vector<Device> devices;
  TraceCounts counts;
  int64_t first_ns = kNoTime, last_ns = kNoTime;  // earliest and latest time of any launch/copy/set/sync
  int64_t total_gpu_kernel_ns = 0;                // sum of launch GPU durations
  std::vector<KernelTimeSummary> top_kernels;     // by total GPU time, then launch count
  std::vector<Stat> stats;
};

Expected<TraceSummary> summarizeTrace(TraceReader& reader, size_t top_n = 10);
nlohmann::json toJson(const TraceSummary& summary);
// Human-readable, for a terminal.
std::string formatSummary(const TraceSummary& summary);
// "1.234 ms" style with a unit fitting the magnitude.
std::string formatDuration(int64_t ns);

}  // namespace kfuse::core
