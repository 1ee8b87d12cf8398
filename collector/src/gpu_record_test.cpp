// Recording a real CUDA program on a real GPU (label `gpu`; skipped where no GPU driver with a device is present).
#include <unistd.h>

#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "kfuse/collector/record.h"
#include "kfuse/core/trace_store.h"
#include "temp_dir.h"

namespace kfuse::collector {
namespace {

namespace fs = std::filesystem;

core::Trace recordSaxpy(const std::string& backend, bool metrics = false) {
  const fs::path dir = kfuse::testing::processTempDir("kfuse_gpu_test_");
  RecordOptions o;
  o.output = (dir / (backend + (metrics ? "_metrics" : "") + ".sqlite")).string();
  o.overwrite = true;
  o.backend = backend;
  o.metrics = metrics;
  o.collector_library = KFUSE_TEST_PRELOAD_LIB;
  o.command = {KFUSE_TEST_GPU_SAXPY};
  auto r = recordProgram(o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->backend, backend);
  auto reader = core::TraceReader::open(o.output);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok()) return {};
  auto t = (*reader)->readAll();
  return t.ok() ? *t : core::Trace{};
}

void expectSaxpy(const core::Trace& t) {
  ASSERT_EQ(t.launches.size(), 10u);
  ASSERT_EQ(t.functions.size(), 1u);
  EXPECT_EQ(t.functions[0].mangled_name, "_Z5saxpyifPKfPf");
  ASSERT_EQ(t.functions[0].params.size(), 4u);
  for (const auto& l : t.launches) {
    EXPECT_EQ(l.grid.x, 4096u);
    EXPECT_EQ(l.block.x, 256u);
    EXPECT_EQ(l.arg_bytes.size(), 24u);
    EXPECT_EQ(l.pointer_args.size(), 2u);
  }
  EXPECT_GE(t.memcpys.size(), 3u);
}

class GpuRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (detectBackend() != "cupti") GTEST_SKIP() << "no GPU driver with a device here";
  }
};

TEST_F(GpuRecordTest, HookBackendRecordsARealProgram) {
  expectSaxpy(recordSaxpy("hook"));
}

TEST_F(GpuRecordTest, CuptiBackendAddsGpuTimes) {
  core::Trace t = recordSaxpy("cupti");
  expectSaxpy(t);
  for (const auto& l : t.launches) {
    EXPECT_NE(l.gpu_start_ns, core::kNoTime);
    EXPECT_GT(l.gpu_end_ns, l.gpu_start_ns);
  }
  // CUPTI recorded it (the watch saw CUPTI's callbacks and stayed out of the way).
  for (const auto& s : t.stats) EXPECT_NE(s.name, "cupti_unavailable_used_hooks") << s.description;
  // Copies joined from their callbacks (addresses) and activity records (GPU times).
  for (const auto& m : t.memcpys) {
    EXPECT_GT(m.gpu_end_ns, m.gpu_start_ns) << "memcpy " << m.id;
    if (m.kind == core::MemcpyKind::kHostToDevice) {
      EXPECT_NE(m.dst_allocation_id, core::kNoId) << "memcpy " << m.id;
    }
    if (m.kind == core::MemcpyKind::kDeviceToHost) {
      EXPECT_NE(m.src_allocation_id, core::kNoId) << "memcpy " << m.id;
    }
  }
}

// saxpy over n = 2^20 floats: one FFMA per element (2 FLOP), reads x and y, writes y: 8 MiB read, 4 MiB written.
TEST_F(GpuRecordTest, MetricsGiveDramBytesAndFlopsOfEveryLaunch) {
  core::Trace t = recordSaxpy("cupti", /*metrics=*/true);
  expectSaxpy(t);
  EXPECT_EQ(t.metadata.extra["metrics"], "range-profiler kernel-replay");
  std::map<core::Id, std::map<std::string, double>> per_launch;
  for (const auto& m : t.metrics) {
    if (m.source == core::MetricSource::kMeasured) per_launch[m.launch_id][m.name] = m.value;
  }
  ASSERT_EQ(per_launch.size(), t.launches.size());
  const double n = 1 << 20;
  for (const auto& [launch, values] : per_launch) {
    EXPECT_DOUBLE_EQ(values.at("flops_fp32"), 2 * n) << "launch " << launch;
    EXPECT_EQ(values.at("flops_fp64"), 0);
    EXPECT_EQ(values.at("tensor_instructions"), 0);
    // DRAM traffic: at most the ideal plus 25%. The 12 MiB working set fits in a large L2 (50 MiB on H100), so
    // repeated launches may read less than 8 MiB from DRAM; what kernel replay does to the caches is not known.
    EXPECT_GE(values.at("dram_bytes_read"), 0) << "launch " << launch;
    EXPECT_LE(values.at("dram_bytes_read"), 8 * n * 1.25) << "launch " << launch;
    EXPECT_LE(values.at("dram_bytes_written"), 4 * n * 1.25) << "launch " << launch;
    EXPECT_GT(values.at("gpu_time_ns"), 0);
  }
}

}  // namespace
}  // namespace kfuse::collector
