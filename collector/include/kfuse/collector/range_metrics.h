// RangeMetrics: hardware metrics for every kernel launch with CUPTI's Range Profiler (`kfuse record --metrics`).
//
// One profiling session per context, in auto-range mode with kernel replay: CUPTI replays each kernel once per
// pass and makes one range per kernel, numbered in execution order. The launch callback tells RangeMetrics about
// each launch (context, correlation id) before the kernel runs; every `ranges_per_session` launches, at context
// destruction and at exit, the session is stopped and decoded, range k is joined to the k-th launch of the
// session, and the metric plan's values are pushed to the TraceSink as "measured" metrics of that launch.
//
// It never stops the application: anything that fails (no counters permission, MIG/vGPU/WSL, an unknown chip)
// turns metrics off for that context with one message on stderr and a stat in the trace.
// Thread-safety: all entry points may be called from any thread; they serialise on one lock (kernel replay
// serialises the kernels anyway).
#pragma once

#include <cupti.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "kfuse/collector/metric_plan.h"
#include "kfuse/collector/profiler_api.h"
#include "kfuse/collector/trace_sink.h"
#include "kfuse/core/status.h"

namespace kfuse::collector {

struct RangeMetricsOptions {
  size_t ranges_per_session = 64;  // launches profiled before a decode; bounds the counter data image
};

class RangeMetrics {
 public:
  RangeMetrics(ProfilerApi& api, TraceSink& sink, RangeMetricsOptions options = {});
  ~RangeMetrics();

  // cuptiProfilerInitialize. An error means no metrics at all in this process (the message says why). An
  // unexplained failure (CUPTI_ERROR_UNKNOWN) is retried once, at the first launch, when the driver is fully up.
  Status start();
  // Called from the launch callback at API entry, before the kernel runs.
  void onLaunchEnter(CUcontext context, uint64_t correlation_id);
  // cuCtxDestroy: decode what the context has and end its session.
  void onContextDestroying(CUcontext context);
  // At exit: decode every context, deinitialize.
  void finish();

  uint64_t metricsWritten() const { return metrics_written_; }
  uint64_t launchesProfiled() const { return launches_profiled_; }

 private:
  struct Session;
  Session* sessionFor(CUcontext context);
  Status setUp(Session& s);
  Status configure(Session& s);
  void collect(Session& s, bool restart);
  void end(Session& s);
  void disable(Session& s, const std::string& why);

  ProfilerApi& api_;
  TraceSink& sink_;
  RangeMetricsOptions options_;
  std::mutex mu_;
  bool started_ = false;
  bool retry_start_ = false;  // start() failed with CUPTI_ERROR_UNKNOWN: try again at the first launch
  std::map<CUcontext, std::unique_ptr<Session>> sessions_;
  std::map<std::string, std::shared_ptr<MetricPlan>> plans_;  // by chip
  std::set<std::string> reasons_said_;
  uint64_t metrics_written_ = 0, launches_profiled_ = 0;
};

}  // namespace kfuse::collector
