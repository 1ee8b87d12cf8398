// Hardware metrics from a separate `kfuse record --metrics` run, joined onto the launches of a timing trace.
//
// Kernel replay serialises a metrics run, so its timeline is not a normal run's; the timing trace is. Launches
// are paired per kernel (mangled name) in launch order: the k-th launch of a kernel in the timing trace gets the
// measured metrics of the k-th launch of that kernel in the metrics run, when both have the same grid and block.
// Thread-safety: plain functions over values.
#pragma once

#include <cstdint>
#include <string>

#include "kfuse/core/status.h"
#include "kfuse/core/trace.h"

namespace kfuse::analyzer {

struct MetricsMergeSummary {
  int64_t launches_matched = 0;    // timing-trace launches that got metrics
  int64_t launches_unmatched = 0;  // timing-trace launches without a counterpart (or with a different shape)
  int64_t metrics_copied = 0;
};

// Copies `from`'s measured metrics onto `target`'s launches (replacing metrics of the same name on a launch) and
// adds the stats `metrics_merged_launches` / `metrics_unmatched_launches` to `target`. Fails, naming
// `from_path`, when `from` has no measured metrics.
Expected<MetricsMergeSummary> mergeMeasuredMetrics(core::Trace& target, const core::Trace& from,
                                                   const std::string& from_path);

}  // namespace kfuse::analyzer
