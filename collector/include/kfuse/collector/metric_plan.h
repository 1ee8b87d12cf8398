// Which hardware metrics `kfuse record --metrics` collects on a chip, and how the profiler's values become the
// trace's metrics (dram_bytes_read, dram_bytes_written, flops_fp16/32/64, tensor_instructions, gpu_time_ns).
//
// Names differ between chips (RTX 50 "GB202" calls DRAM reads dram__bytes_op_read; Tegra chips have no DRAM
// counters; Blackwell adds packed FP32 instructions), so the plan is made per chip from the names the Profiler
// Host API lists for it: nothing is assumed from a table of chips. Making a plan needs no GPU.
//
// Thread-safety: planMetrics and supportedChips may run on any thread; a MetricEvaluator is used by one thread
// at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kfuse/collector/profiler_api.h"
#include "kfuse/core/status.h"

namespace kfuse::collector {

// One term of a trace metric: `weight` x the profiler metric (a name with its rollup, "dram__bytes_read.sum").
struct MetricTerm {
  std::string profiler_metric;
  double weight = 1;
};

// A trace metric and how it is computed on this chip.
struct MetricRecipe {
  std::string name;  // trace metric name
  std::string unit;  // "bytes", "flop", "inst", "ns"
  std::vector<MetricTerm> terms;
};

struct MetricPlan {
  std::string chip;
  std::vector<MetricRecipe> recipes;          // the trace metrics this chip gives, in catalog order
  std::vector<std::string> profiler_metrics;  // distinct profiler metrics, in config order
  std::vector<std::string> unavailable;       // "<trace metric>: <why>" for those this chip cannot give
  std::vector<uint8_t> config_image;          // for cuptiRangeProfilerSetConfig
  size_t passes = 0;                          // replays of each kernel the config needs

  // One value per recipe from values in profiler_metrics order; a term whose value is not finite is left out.
  std::vector<double> combine(const std::vector<double>& profiler_values) const;
};

// The chips this CUPTI's host API knows ("GH100", "GB202", ...).
Expected<std::vector<std::string>> supportedChips(ProfilerApi& api);

// Resolves the catalog against the chip's metric list and builds the range-profiler config image.
// `counter_availability` (from cuptiProfilerGetCounterAvailability on a device) may be null: the plan is then for
// the chip in general. Fails, naming the chip, when the chip is unknown or none of the metrics exist on it.
Expected<MetricPlan> planMetrics(ProfilerApi& api, std::string_view chip,
                                 const std::vector<uint8_t>& counter_availability = {});

// Evaluates ranges of a counter data image with a host object configured for a plan.
class MetricEvaluator {
 public:
  static Expected<std::unique_ptr<MetricEvaluator>> create(ProfilerApi& api, const MetricPlan& plan,
                                                           const std::vector<uint8_t>& counter_availability);
  ~MetricEvaluator();
  MetricEvaluator(const MetricEvaluator&) = delete;
  MetricEvaluator& operator=(const MetricEvaluator&) = delete;

  const MetricPlan& plan() const { return plan_; }
  // One value per plan().recipes entry for range `range` of the image.
  Expected<std::vector<double>> evaluate(const uint8_t* image, size_t image_size, size_t range);

 private:
  MetricEvaluator(ProfilerApi& api, MetricPlan plan) : api_(api), plan_(std::move(plan)) {}
  ProfilerApi& api_;
  MetricPlan plan_;
  CUpti_Profiler_Host_Object* host_ = nullptr;
  std::vector<const char*> names_;
};

}  // namespace kfuse::collector
