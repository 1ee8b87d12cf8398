// The range-profiler session logic with a simulated GPU (tests/fake_profiler_api.h) and the real host API.
#include "kfuse/collector/range_metrics.h"

#include <gtest/gtest.h>

#include "../tests/fake_profiler_api.h"

namespace kfuse::collector {
namespace {

using testing::FakeProfilerApi;

CUcontext ctx(uintptr_t n) {
  return reinterpret_cast<CUcontext>(n);
}

// The trace metric `name` of every launch, by correlation id, from what the sink got.
std::map<int64_t, double> metricByCorrelation(const std::vector<MetricEvent>& events, const std::string& name) {
  std::map<int64_t, double> out;
  for (const MetricEvent& e : events) {
    if (name == e.name) out[e.correlation_id] = e.value;
  }
  return out;
}

// A sink that keeps metric and stat events as pushed.
class CapturingSink : public TraceSink {
 public:
  std::vector<MetricEvent> metrics;
  std::vector<StatEvent> stats_seen;
  bool push(EventKind kind, size_t size, FillFn fill, const void* ctx) override {
    std::vector<uint8_t> bytes(size);
    fill(bytes.data(), ctx);
    if (kind == EventKind::kMetric) metrics.push_back(*reinterpret_cast<const MetricEvent*>(bytes.data()));
    if (kind == EventKind::kStat) stats_seen.push_back(*reinterpret_cast<const StatEvent*>(bytes.data()));
    return true;
  }
  bool pushModule(const ModuleEvent& ev) override {
    delete[] ev.image;
    return true;
  }
  Status finish() override { return {}; }
  Status status() const override { return {}; }
  SinkStats stats() const override { return {}; }
  const StatEvent* stat(const std::string& name) const {
    for (const StatEvent& s : stats_seen) {
      if (name == s.name) return &s;
    }
    return nullptr;
  }
};

// Expected trace values for range `range` of session `session` under the plan the fake's chip gets.
double expectedFp32(const MetricPlan& plan, int session, size_t range) {
  std::vector<double> values;
  for (size_t i = 0; i < plan.profiler_metrics.size(); ++i) values.push_back(FakeProfilerApi::value(session, range, i));
  return plan.combine(values)[2];  // recipes: dram read, dram written, flops_fp32, ...
}

TEST(RangeMetricsTest, JoinsRangeKToTheKthLaunchAcrossSessions) {
  FakeProfilerApi api;
  CapturingSink sink;
  RangeMetrics m(api, sink, RangeMetricsOptions{/*ranges_per_session=*/2});
  ASSERT_TRUE(m.start().ok());
  for (int64_t corr = 101; corr <= 105; ++corr) {
    m.onLaunchEnter(ctx(1), static_cast<uint64_t>(corr));
    api.runKernel(ctx(1));
  }
  m.finish();
  // Sessions of 2, 2 and 1 launches: three stops, three configs, auto range + kernel replay.
  EXPECT_EQ(api.stops, 3);
  EXPECT_EQ(api.set_configs, 3);
  EXPECT_EQ(api.last_config.range, CUPTI_AutoRange);
  EXPECT_EQ(api.last_config.replayMode, CUPTI_KernelReplay);
  EXPECT_EQ(api.last_config.maxRangesPerPass, 2u);
  EXPECT_EQ(api.disables, 1);
  EXPECT_EQ(api.deinitializes, 1);
  EXPECT_EQ(m.launchesProfiled(), 5u);

  auto plan = planMetrics(realProfilerApi(), "GH100");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(api.evaluated_metrics, plan->profiler_metrics);
  const auto fp32 = metricByCorrelation(sink.metrics, "flops_fp32");
  ASSERT_EQ(fp32.size(), 5u);
  // Session numbers count every Start: sessions 0, 1, 2.
  EXPECT_DOUBLE_EQ(fp32.at(101), expectedFp32(*plan, 0, 0));
  EXPECT_DOUBLE_EQ(fp32.at(102), expectedFp32(*plan, 0, 1));
  EXPECT_DOUBLE_EQ(fp32.at(103), expectedFp32(*plan, 1, 0));
  EXPECT_DOUBLE_EQ(fp32.at(104), expectedFp32(*plan, 1, 1));
  EXPECT_DOUBLE_EQ(fp32.at(105), expectedFp32(*plan, 2, 0));
  const auto read = metricByCorrelation(sink.metrics, "dram_bytes_read");
  EXPECT_DOUBLE_EQ(read.at(104), FakeProfilerApi::value(1, 1, 0));
  EXPECT_EQ(sink.metrics.size(), 5u * plan->recipes.size());
  for (const MetricEvent& e : sink.metrics) EXPECT_EQ(e.source, core::MetricSource::kMeasured);
}

TEST(RangeMetricsTest, EachContextHasItsOwnSession) {
  FakeProfilerApi api;
  CapturingSink sink;
  RangeMetrics m(api, sink, RangeMetricsOptions{/*ranges_per_session=*/8});
  ASSERT_TRUE(m.start().ok());
  const std::pair<uintptr_t, int64_t> launches[] = {{1, 1}, {2, 2}, {1, 3}, {2, 4}, {2, 5}};
  for (auto [c, corr] : launches) {
    m.onLaunchEnter(ctx(c), static_cast<uint64_t>(corr));
    api.runKernel(ctx(c));
  }
  m.onContextDestroying(ctx(2));  // context 2's metrics are delivered before it goes away
  const auto read_after_destroy = metricByCorrelation(sink.metrics, "dram_bytes_read");
  EXPECT_EQ(read_after_destroy.size(), 3u);
  m.finish();
  const auto read = metricByCorrelation(sink.metrics, "dram_bytes_read");
  ASSERT_EQ(read.size(), 5u);
  // Context 1's session started first (session 0), context 2's second (session 1).
  EXPECT_DOUBLE_EQ(read.at(1), FakeProfilerApi::value(0, 0, 0));
  EXPECT_DOUBLE_EQ(read.at(3), FakeProfilerApi::value(0, 1, 0));
  EXPECT_DOUBLE_EQ(read.at(2), FakeProfilerApi::value(1, 0, 0));
  EXPECT_DOUBLE_EQ(read.at(5), FakeProfilerApi::value(1, 2, 0));
  EXPECT_EQ(api.disables, 2);
}

TEST(RangeMetricsTest, MissingCounterPermissionTurnsMetricsOffWithOneMessage) {
  FakeProfilerApi api;
  api.enable_result = CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  CapturingSink sink;
  RangeMetrics m(api, sink);
  ASSERT_TRUE(m.start().ok());
  for (uintptr_t c = 1; c <= 3; ++c) m.onLaunchEnter(ctx(c), c);
  m.finish();
  EXPECT_TRUE(sink.metrics.empty());
  ASSERT_NE(sink.stat("metrics_unavailable"), nullptr);
  EXPECT_NE(std::string(sink.stat("metrics_unavailable")->description).find("NVreg_RestrictProfilingToAdminUsers"),
            std::string::npos);
  EXPECT_EQ(sink.stats_seen.size(), 1u);  // one per reason, not one per context
}

TEST(RangeMetricsTest, UnsupportedDeviceSaysWhy) {
  FakeProfilerApi api;
  api.vgpu = CUPTI_PROFILER_CONFIGURATION_DISABLED;
  CapturingSink sink;
  RangeMetrics m(api, sink);
  ASSERT_TRUE(m.start().ok());
  m.onLaunchEnter(ctx(1), 1);
  m.finish();
  EXPECT_TRUE(sink.metrics.empty());
  EXPECT_EQ(api.enables, 0);
  ASSERT_NE(sink.stat("metrics_unavailable"), nullptr);
  EXPECT_NE(std::string(sink.stat("metrics_unavailable")->description).find("profiling is disabled on this vGPU"),
            std::string::npos);
}

TEST(RangeMetricsTest, UnknownChipTurnsMetricsOffNamingIt) {
  FakeProfilerApi api;
  api.chip = "XZ999";
  CapturingSink sink;
  RangeMetrics m(api, sink);
  ASSERT_TRUE(m.start().ok());
  m.onLaunchEnter(ctx(1), 1);
  m.finish();
  ASSERT_NE(sink.stat("metrics_unavailable"), nullptr);
  EXPECT_NE(std::string(sink.stat("metrics_unavailable")->description).find("XZ999"), std::string::npos);
}

TEST(RangeMetricsTest, AHostileCounterDataSizeTurnsMetricsOffInsteadOfAllocating) {
  FakeProfilerApi api;
  api.counter_data_size = size_t{1} << 40;
  CapturingSink sink;
  RangeMetrics m(api, sink);
  ASSERT_TRUE(m.start().ok());
  m.onLaunchEnter(ctx(1), 1);
  m.finish();
  EXPECT_TRUE(sink.metrics.empty());
  EXPECT_EQ(api.starts, 0);
  ASSERT_NE(sink.stat("metrics_unavailable"), nullptr);
  EXPECT_NE(std::string(sink.stat("metrics_unavailable")->description).find("KFUSE_METRICS_RANGES"), std::string::npos);
  EXPECT_EQ(api.disables, 1);  // the context's profiler object is released
}

TEST(RangeMetricsTest, DroppedAndUnmatchedRangesAreCountedAndTheRestStillJoined) {
  FakeProfilerApi api;
  api.dropped_per_decode = 1;
  api.ranges_lost_per_session = 1;
  CapturingSink sink;
  RangeMetrics m(api, sink, RangeMetricsOptions{/*ranges_per_session=*/4});
  ASSERT_TRUE(m.start().ok());
  for (uint64_t corr = 1; corr <= 3; ++corr) {
    m.onLaunchEnter(ctx(1), corr);
    api.runKernel(ctx(1));
  }
  m.finish();
  ASSERT_NE(sink.stat("metric_ranges_dropped"), nullptr);
  EXPECT_EQ(sink.stat("metric_ranges_dropped")->value, 1);
  ASSERT_NE(sink.stat("metric_ranges_unmatched"), nullptr);
  EXPECT_EQ(sink.stat("metric_ranges_unmatched")->value, 1);
  EXPECT_EQ(metricByCorrelation(sink.metrics, "dram_bytes_read").size(), 2u);
}

// An unexplained failure at start-up is retried at the first launch: metrics when it then works, one message when
// it does not.
TEST(RangeMetricsTest, UnknownInitialisationErrorIsRetriedAtTheFirstLaunch) {
  for (CUptiResult then : {CUPTI_SUCCESS, CUPTI_ERROR_UNKNOWN}) {
    FakeProfilerApi api;
    api.initialize_result = CUPTI_ERROR_UNKNOWN;
    api.initialize_then = then;
    CapturingSink sink;
    RangeMetrics m(api, sink);
    ASSERT_TRUE(m.start().ok());
    m.onLaunchEnter(ctx(1), 1);
    m.onLaunchEnter(ctx(1), 2);
    m.finish();
    EXPECT_EQ(api.initializes, 2) << "retried once";
    if (then == CUPTI_SUCCESS) {
      EXPECT_EQ(api.enables, 1);
      EXPECT_EQ(m.launchesProfiled(), 2u);
      EXPECT_EQ(sink.stat("metrics_unavailable"), nullptr);
    } else {
      EXPECT_EQ(api.enables, 0);
      ASSERT_NE(sink.stat("metrics_unavailable"), nullptr);
      EXPECT_TRUE(sink.metrics.empty());
    }
  }
}

TEST(RangeMetricsTest, ProfilerThatCannotInitialiseIsReportedAndLaunchesPassThrough) {
  FakeProfilerApi api;
  api.initialize_result = CUPTI_ERROR_NOT_INITIALIZED;
  CapturingSink sink;
  RangeMetrics m(api, sink);
  Status s = m.start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cuptiProfilerInitialize"), std::string::npos) << s.message();
  m.onLaunchEnter(ctx(1), 1);
  m.finish();
  EXPECT_EQ(api.enables, 0);
  EXPECT_TRUE(sink.metrics.empty());
}

}  // namespace
}  // namespace kfuse::collector
