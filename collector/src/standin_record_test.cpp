// End to end on the emulator's stand-in libcuda.so.1 (label `emulator`): the driver-API examples recorded with
// the hook backend, checked against what each example is known to do, plus a 4-thread / 4-stream program.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "kfuse/collector/record.h"
#include "kfuse/core/trace_store.h"
#include "temp_dir.h"

namespace kfuse::collector {
namespace {

namespace fs = std::filesystem;

class StandinRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(KFUSE_TEST_STANDIN_DIR "/libcuda.so.1")) GTEST_SKIP() << "stand-in driver not built";
    const char* old = std::getenv("LD_LIBRARY_PATH");
    old_ = old ? old : "";
    setenv("LD_LIBRARY_PATH", KFUSE_TEST_STANDIN_DIR, 1);
  }
  void TearDown() override { setenv("LD_LIBRARY_PATH", old_.c_str(), 1); }

  core::Trace record(const std::string& program, int* exit_code = nullptr, bool gpu_time = false) {
    if (!fs::exists(program)) {
      ADD_FAILURE() << program << " is not built";
      return {};
    }
    const fs::path dir = kfuse::testing::processTempDir("kfuse_standin_test_");
    RecordOptions o;
    o.output = (dir / (fs::path(program).filename().string() + ".sqlite")).string();
    o.overwrite = true;
    o.gpu_time = gpu_time;
    o.collector_library = KFUSE_TEST_PRELOAD_LIB;
    o.command = {program};
    auto r = recordProgram(o);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return {};
    EXPECT_EQ(r->backend, "hook");  // detected: the stand-in is not a GPU
    if (exit_code) *exit_code = r->exit_code;
    EXPECT_EQ(r->exit_code, 0) << program;
    auto reader = core::TraceReader::open(o.output);
    EXPECT_TRUE(reader.ok()) << reader.status().message();
    if (!reader.ok()) return {};
    auto t = (*reader)->readAll();
    EXPECT_TRUE(t.ok());
    return t.ok() ? *t : core::Trace{};
  }

  std::string old_;
};

std::string example(const std::string& name) {
  return KFUSE_TEST_EXAMPLES_DIR "/" + name;
}

std::set<std::string> kernelNames(const core::Trace& t) {
  std::set<std::string> names;
  for (const auto& f : t.functions) names.insert(f.mangled_name);
  return names;
}

void expectEmulatedMetricsForEveryLaunch(const core::Trace& t) {
  std::map<core::Id, std::set<std::string>> per_launch;
  for (const auto& m : t.metrics) {
    EXPECT_EQ(m.source, core::MetricSource::kEmulated);
    per_launch[m.launch_id].insert(m.name);
  }
  EXPECT_EQ(per_launch.size(), t.launches.size());
  for (const auto& [id, names] : per_launch) {
    EXPECT_TRUE(names.count("dram_bytes_read") && names.count("flops_fp32")) << "launch " << id;
  }
}

TEST_F(StandinRecordTest, VectorAddIsRecordedWithArgumentsAllocationsCopiesAndMetrics) {
  core::Trace t = record(example("vector_add"));
  ASSERT_EQ(t.launches.size(), 1u);
  EXPECT_EQ(kernelNames(t), (std::set<std::string>{"vector_add"}));
  const core::Launch& l = t.launches[0];
  EXPECT_EQ(l.grid, (core::Dim3{256, 1, 1}));  // 2^16 elements in blocks of 256
  EXPECT_EQ(l.block, (core::Dim3{256, 1, 1}));
  ASSERT_EQ(l.arg_bytes.size(), 28u);  // a, b, c pointers and n
  int n = 0;
  std::memcpy(&n, l.arg_bytes.data() + 24, 4);
  EXPECT_EQ(n, 1 << 16);
  ASSERT_EQ(l.pointer_args.size(), 3u);
  std::set<core::Id> allocations;
  for (const auto& p : l.pointer_args) {
    EXPECT_NE(p.allocation_id, core::kNoId);
    EXPECT_EQ(p.offset, 0u);
    allocations.insert(p.allocation_id);
  }
  EXPECT_EQ(allocations.size(), 3u);
  ASSERT_EQ(t.memcpys.size(), 3u);  // two uploads, one download of 2^16 floats
  for (const auto& m : t.memcpys) EXPECT_EQ(m.bytes, 262144u);
  EXPECT_EQ(t.memcpys[0].kind, core::MemcpyKind::kHostToDevice);
  EXPECT_EQ(t.memcpys[2].kind, core::MemcpyKind::kDeviceToHost);
  ASSERT_EQ(t.modules.size(), 1u);
  EXPECT_EQ(t.modules[0].kind, core::ImageKind::kPtx);
  expectEmulatedMetricsForEveryLaunch(t);
  double flops = -1, read = -1;
  for (const auto& m : t.metrics) {
    if (m.name == "flops_fp32") flops = m.value;
    if (m.name == "dram_bytes_read") read = m.value;
  }
  EXPECT_EQ(flops, 65536.0);      // one add per element
  EXPECT_EQ(read, 2 * 262144.0);  // a and b
  ASSERT_EQ(t.devices.size(), 1u);
}

TEST_F(StandinRecordTest, AModuleLoadedFromAFileIsRecordedWithItsImage) {
  // cuModuleLoad(path), as many applications load their kernels: the image is read back from the file.
  setenv("KFUSE_EXAMPLE_MODULE_FROM_FILE", "1", 1);
  core::Trace t = record(example("elementwise_chain"));
  unsetenv("KFUSE_EXAMPLE_MODULE_FROM_FILE");
  ASSERT_EQ(t.modules.size(), 1u);
  EXPECT_EQ(t.modules[0].kind, core::ImageKind::kPtx);
  const std::string image(t.modules[0].image.begin(), t.modules[0].image.end());
  EXPECT_NE(image.find(".entry scale("), std::string::npos);
  ASSERT_EQ(t.functions.size(), 4u);
  for (const auto& f : t.functions) EXPECT_EQ(f.module_id, t.modules[0].id) << f.mangled_name;
  EXPECT_EQ(t.launches.size(), 12u);
}

TEST_F(StandinRecordTest, EveryExampleIsRecordedWithExactLaunchCounts) {
  const std::map<std::string, std::pair<size_t, std::set<std::string>>> expected = {
      {"elementwise_chain", {12, {"scale", "add", "relu", "mul"}}},
      {"mlp_block", {24, {"layernorm", "matmul", "bias_add", "gelu", "residual_add"}}},
      {"many_small_kernels", {32, {"axpb", "square"}}},
      {"histogram", {1, {"histogram"}}},
      {"reduction", {2, {"reduce_sum"}}},
      {"stencil", {6, {"jacobi"}}},
  };
  for (const auto& [name, want] : expected) {
    SCOPED_TRACE(name);
    core::Trace t = record(example(name));
    EXPECT_EQ(t.launches.size(), want.first);
    EXPECT_EQ(kernelNames(t), want.second);
    for (const auto& l : t.launches) EXPECT_FALSE(l.pointer_args.empty());
    expectEmulatedMetricsForEveryLaunch(t);
  }
}

TEST_F(StandinRecordTest, GpuTimeGivesEveryLaunchOrderedEventTimesPerStream) {
  core::Trace t = record(example("elementwise_chain"), nullptr, /*gpu_time=*/true);
  ASSERT_EQ(t.launches.size(), 12u);
  std::map<core::Id, std::vector<const core::Launch*>> per_stream;
  for (const auto& l : t.launches) {
    ASSERT_NE(l.gpu_start_ns, core::kNoTime) << "launch " << l.id;
    EXPECT_LT(l.gpu_start_ns, l.gpu_end_ns) << "launch " << l.id;
    // On the trace clock: after recording started, and (the stand-in runs kernels synchronously) not far from
    // the CPU call that made the launch.
    EXPECT_GE(l.gpu_start_ns, t.metadata.start_time_ns) << "launch " << l.id;
    EXPECT_LT(std::llabs(l.gpu_start_ns - l.api_start_ns), 1'000'000'000LL) << "launch " << l.id;
    per_stream[l.stream_id].push_back(&l);
  }
  for (auto& [stream, launches] : per_stream) {
    std::sort(launches.begin(), launches.end(), [](auto* a, auto* b) { return a->api_start_ns < b->api_start_ns; });
    for (size_t i = 1; i < launches.size(); ++i) {
      EXPECT_LE(launches[i - 1]->gpu_end_ns, launches[i]->gpu_start_ns)
          << "stream " << stream << ": launch " << launches[i - 1]->id << " overlaps launch " << launches[i]->id;
    }
  }
  for (const auto& s : t.stats) {
    EXPECT_NE(s.name, "gpu_time_disabled");
    EXPECT_NE(s.name, "gpu_time_pool_full");
    EXPECT_NE(s.name, "launch_without_gpu_time");
  }

  core::Trace plain = record(example("elementwise_chain"));
  ASSERT_EQ(plain.launches.size(), 12u);
  EXPECT_EQ(t.events.size(), plain.events.size());  // the collector's own event records are not in the trace
  EXPECT_EQ(t.syncs.size(), plain.syncs.size());
  for (const auto& l : plain.launches) {
    EXPECT_EQ(l.gpu_start_ns, core::kNoTime);
    EXPECT_EQ(l.gpu_end_ns, core::kNoTime);
  }
}

TEST_F(StandinRecordTest, FourThreadsOnFourStreamsRecordEveryLaunchExactlyOnce) {
  core::Trace t = record(KFUSE_TEST_STANDIN_THREADS);
  ASSERT_EQ(t.launches.size(), 400u);
  std::map<core::Id, std::multiset<float>> values_per_stream;
  for (const auto& l : t.launches) {
    ASSERT_EQ(l.arg_bytes.size(), 16u);
    float v;
    std::memcpy(&v, l.arg_bytes.data() + 12, 4);
    values_per_stream[l.stream_id].insert(v);
    ASSERT_EQ(l.pointer_args.size(), 1u);
  }
  ASSERT_EQ(values_per_stream.size(), 4u);
  std::set<float> seen;
  for (const auto& [stream, values] : values_per_stream) {
    EXPECT_EQ(values.size(), 100u);
    EXPECT_EQ(values.count(*values.begin()), 100u);  // one thread per stream
    seen.insert(*values.begin());
  }
  EXPECT_EQ(seen, (std::set<float>{0, 1, 2, 3}));
  expectEmulatedMetricsForEveryLaunch(t);
}

TEST_F(StandinRecordTest, NvtxRangesAroundLaunchesAreRecordedWithDomainsAndThreads) {
  core::Trace t = record(KFUSE_TEST_NVTX_RANGES);
  ASSERT_EQ(t.launches.size(), 3u);
  std::map<std::string, core::NvtxRange> by_name;
  for (const auto& r : t.nvtx_ranges) EXPECT_TRUE(by_name.emplace(r.name, r).second) << "twice: " << r.name;
  // Ended before the driver was touched, or never ended: not recorded.
  EXPECT_EQ(by_name.size(), 5u);
  for (const char* name : {"setup", "step", "inner", "wide", "async"}) ASSERT_TRUE(by_name.count(name)) << name;
  EXPECT_EQ(by_name["step"].domain, "kfuse.test");
  for (const char* name : {"setup", "inner", "wide", "async"}) EXPECT_EQ(by_name[name].domain, "") << name;
  const int64_t main_thread = t.launches[0].thread_id;
  for (const auto& [name, r] : by_name) {
    EXPECT_EQ(r.thread_id, main_thread) << name;  // "async" ended on another thread but started here
    EXPECT_LT(r.start_ns, r.end_ns) << name;
  }
  auto inside = [](const core::NvtxRange& r, int64_t ns) { return r.start_ns <= ns && ns <= r.end_ns; };
  EXPECT_TRUE(inside(by_name["step"], by_name["inner"].start_ns) && inside(by_name["step"], by_name["inner"].end_ns));
  EXPECT_LT(by_name["setup"].end_ns, by_name["step"].start_ns);
  // Each launch lies in the ranges the program opened around it.
  EXPECT_TRUE(inside(by_name["step"], t.launches[0].api_start_ns));
  EXPECT_FALSE(inside(by_name["inner"], t.launches[0].api_start_ns));
  EXPECT_TRUE(inside(by_name["inner"], t.launches[1].api_start_ns));
  EXPECT_TRUE(inside(by_name["wide"], t.launches[2].api_start_ns));
  EXPECT_FALSE(inside(by_name["step"], t.launches[2].api_start_ns));
  for (const auto& l : t.launches) EXPECT_TRUE(inside(by_name["async"], l.api_start_ns));
}

TEST_F(StandinRecordTest, NvtxToolTheUserNamedIsLeftInPlace) {
  // The user's NVTX_INJECTION64_PATH wins (here a library that does not exist: NVTX turns every call into a
  // no-op); the program runs as it would without kfuse.
  setenv("NVTX_INJECTION64_PATH", "/nonexistent/libsome_nvtx_tool.so", 1);
  core::Trace t = record(KFUSE_TEST_NVTX_RANGES);
  unsetenv("NVTX_INJECTION64_PATH");
  EXPECT_EQ(t.launches.size(), 3u);
  EXPECT_TRUE(t.nvtx_ranges.empty());
}

TEST_F(StandinRecordTest, MetricsOnTheStandInSayWhatIsRecordedInstead) {
  const fs::path dir = kfuse::testing::processTempDir("kfuse_standin_metrics_");
  RecordOptions o;
  o.output = (dir / "vector_add.sqlite").string();
  o.overwrite = true;
  o.metrics = true;
  o.collector_library = KFUSE_TEST_PRELOAD_LIB;
  o.command = {example("vector_add")};
  std::vector<std::string> notes;
  o.on_note = [&](const std::string& n) { notes.push_back(n); };
  auto r = recordProgram(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->backend, "hook");
  EXPECT_EQ(r->exit_code, 0);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("'emulated' metrics"), std::string::npos) << notes[0];
  auto reader = core::TraceReader::open(o.output);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto t = (*reader)->readAll();
  ASSERT_TRUE(t.ok());
  expectEmulatedMetricsForEveryLaunch(*t);
  EXPECT_EQ(t->metadata.extra.count("metrics"), 0u);  // no range profiler ran

  // Asking for hooks and hardware counters at once is a usage error, before anything runs.
  o.backend = "hook";
  auto refused = recordProgram(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--metrics needs the CUPTI backend"), std::string::npos);
  fs::remove_all(dir);
}

TEST_F(StandinRecordTest, CuptiBackendThatSeesNothingStepsAsideToTheHooks) {
  // The stand-in never loads the CUPTI injection: the watch notices at the first driver call and the hook backend
  // records the program, exactly as if it had been asked for.
  const fs::path dir = kfuse::testing::processTempDir("kfuse_standin_cupti_");
  RecordOptions o;
  o.output = (dir / "elementwise_chain.sqlite").string();
  o.overwrite = true;
  o.backend = "cupti";
  o.collector_library = KFUSE_TEST_PRELOAD_LIB;
  o.command = {example("elementwise_chain")};
  auto r = recordProgram(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 0);
  ASSERT_EQ(r->traces.size(), 1u);
  EXPECT_EQ(r->traces[0].backend_used, "hook");
  auto reader = core::TraceReader::open(o.output);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto t = (*reader)->readAll();
  ASSERT_TRUE(t.ok());
  const core::Trace hooked = record(example("elementwise_chain"));
  EXPECT_EQ(t->launches.size(), hooked.launches.size());
  EXPECT_EQ(t->allocations.size(), hooked.allocations.size());
  EXPECT_EQ(t->memcpys.size(), hooked.memcpys.size());
  EXPECT_EQ(t->modules.size(), hooked.modules.size());
  ASSERT_FALSE(t->launches.empty());
  EXPECT_FALSE(t->launches[0].pointer_args.empty());  // the allocations before the first launch were seen
  bool stepped_aside = false;
  for (const auto& s : t->stats) stepped_aside = stepped_aside || s.name == "cupti_unavailable_used_hooks";
  EXPECT_TRUE(stepped_aside);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kfuse::collector
