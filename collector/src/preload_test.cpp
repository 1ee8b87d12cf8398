// End-to-end tests of libkfuse_collector.so against the test fake driver (collector/tests/): the injection
// library intercepts a program doing what static cudart does, and a program linked against libcuda.so.1.
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "kfuse/collector/collector_runtime.h"
#include "kfuse/collector/program.h"
#include "kfuse/collector/record.h"
#include "kfuse/core/trace_store.h"
#include "temp_dir.h"

namespace kfuse::collector {
namespace {

namespace fs = std::filesystem;

struct RunResult {
  int rc = -1;
  std::string output;  // stdout and stderr
};

RunResult run(const std::string& command) {
  RunResult r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string tempDir() {
  return kfuse::testing::processTempDir("kfuse_preload_test_").string();
}

std::string env(const std::string& output) {
  // In the instrumented build the collector needs the sanitizer runtime first, as `kfuse record` arranges.
  std::string e =
      "env LD_LIBRARY_PATH=" KFUSE_TEST_FAKE_DRIVER_DIR " LD_PRELOAD=" + withSanitizerRuntime(KFUSE_TEST_PRELOAD_LIB) +
      " KFUSE_BACKEND=hook";
  if (!output.empty()) e += " KFUSE_OUTPUT=" + output;
  return e + " ";
}

core::Trace readTrace(const std::string& path) {
  auto reader = core::TraceReader::open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok()) return {};
  auto t = (*reader)->readAll();
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : core::Trace{};
}

TEST(PreloadTest, InjectionLibraryExportsItsEntryPoints) {
  RunResult r = run("nm -D --defined-only " KFUSE_TEST_PRELOAD_LIB);
  ASSERT_EQ(r.rc, 0) << r.output;
  for (const char* sym :
       {" T InitializeInjection", " T InitializeInjectionNvtx2", " T dlsym", " T cuGetProcAddress_v2",
        " T cuGetProcAddress", " T cuLaunchKernel", " T cuLaunchKernel_ptsz", " T cuMemcpyHtoD_v2_ptds"}) {
    EXPECT_NE(r.output.find(std::string(sym) + "\n"), std::string::npos) << sym;
  }
  // Nothing of kfuse's own C++ leaks out (hidden visibility, --exclude-libs).
  EXPECT_EQ(r.output.find("kfuse"), std::string::npos) << r.output;
  r = run("readelf -d " KFUSE_TEST_PRELOAD_LIB);
  EXPECT_NE(r.output.find("libcupti.so.13"), std::string::npos);
  EXPECT_EQ(r.output.find("libcuda.so"), std::string::npos);  // found at run time, never linked
}

TEST(PreloadTest, StaticCudartLikeProgramIsInterceptedThroughGetProcAddress) {
  const std::string trace = tempDir() + "/static.sqlite";
  fs::remove(trace);
  RunResult r = run(env(trace) + KFUSE_TEST_STATIC_CUDART_LIKE);
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("driver saw 2 launches"), std::string::npos) << r.output;  // forwarded exactly once
  EXPECT_EQ(r.output.find("kfuse:"), std::string::npos) << r.output;                 // and silently
  core::Trace t = readTrace(trace);
  ASSERT_EQ(t.launches.size(), 2u);
  ASSERT_EQ(t.functions.size(), 1u);
  EXPECT_EQ(t.functions[0].mangled_name, "_Z5saxpyifPKfPf");
  EXPECT_EQ(t.functions[0].demangled_name, "saxpy(int, float, float const*, float*)");
  const core::Launch& a = t.launches[0];
  const core::Launch& b = t.launches[1];
  EXPECT_EQ(a.grid, (core::Dim3{4, 1, 1}));
  EXPECT_EQ(a.block, (core::Dim3{256, 1, 1}));
  EXPECT_EQ(b.grid, (core::Dim3{8, 1, 1}));
  EXPECT_EQ(b.dynamic_shared_bytes, 64u);
  float fa, fb;
  std::memcpy(&fa, a.arg_bytes.data() + 4, 4);
  std::memcpy(&fb, b.arg_bytes.data() + 4, 4);
  EXPECT_EQ(fa, 2.0f);
  EXPECT_EQ(fb, 3.0f);
  // The _ptsz launch on the null stream is on the per-thread default stream.
  EXPECT_EQ(t.streams[a.stream_id - 1].handle, 0u);
  EXPECT_EQ(t.streams[b.stream_id - 1].handle, kPerThreadStream);
  ASSERT_EQ(a.pointer_args.size(), 2u);
  ASSERT_EQ(t.allocations.size(), 2u);
  EXPECT_EQ(a.pointer_args[0].allocation_id, t.allocations[0].id);
  EXPECT_EQ(a.pointer_args[1].allocation_id, t.allocations[1].id);
  EXPECT_EQ(a.pointer_args[1].offset, 16u);
  EXPECT_NE(t.allocations[0].free_ns, core::kNoTime);
  ASSERT_EQ(t.memcpys.size(), 1u);
  EXPECT_EQ(t.memcpys[0].bytes, 4096u);
  EXPECT_EQ(t.memcpys[0].dst_allocation_id, t.allocations[0].id);
  EXPECT_EQ(t.syncs.size(), 2u);
  ASSERT_EQ(t.modules.size(), 1u);
  EXPECT_EQ(t.modules[0].kind, core::ImageKind::kPtx);
  EXPECT_NE(std::string(t.modules[0].image.begin(), t.modules[0].image.end()).find(".target sm_90"), std::string::npos);
  EXPECT_EQ(t.metadata.producer, "kfuse-collector");
  EXPECT_EQ(t.metadata.extra["backend"], "hook");
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].name, "kfuse test fake GPU");
}

TEST(PreloadTest, DriverApiProgramLaunchingFromFourThreadsIsRecordedExactlyOnce) {
  const std::string trace = tempDir() + "/direct.sqlite";
  fs::remove(trace);
  RunResult r = run(env(trace) + KFUSE_TEST_DRIVER_DIRECT);
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("driver saw 1000 launches"), std::string::npos) << r.output;
  core::Trace t = readTrace(trace);
  ASSERT_EQ(t.launches.size(), 1000u);
  std::map<core::Id, int> per_stream;
  std::set<core::Id> ids;
  for (const auto& l : t.launches) {
    ++per_stream[l.stream_id];
    ids.insert(l.id);
    ASSERT_EQ(l.pointer_args.size(), 1u);
    EXPECT_NE(l.pointer_args[0].allocation_id, core::kNoId);
  }
  EXPECT_EQ(ids.size(), 1000u);
  ASSERT_EQ(per_stream.size(), 4u);
  for (const auto& [stream, n] : per_stream) EXPECT_EQ(n, 250);
  EXPECT_EQ(t.allocations.size(), 4u);
}

TEST(PreloadTest, ForkedChildWithoutExecIsNotRecordedAndRunsNormally) {
  const std::string trace = tempDir() + "/fork.sqlite";
  fs::remove(trace);
  RunResult r = run(env(trace) + KFUSE_TEST_STATIC_CUDART_LIKE + " --fork");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("driver saw 2 launches"), std::string::npos) << r.output;  // the child's is its own
  core::Trace t = readTrace(trace);
  EXPECT_EQ(t.launches.size(), 2u);
  EXPECT_EQ(t.processes.size(), 1u);
}

TEST(PreloadTest, WithoutAnOutputTheLibraryOnlyForwards) {
  const std::string dir = tempDir() + "/nooutput";
  fs::create_directories(dir);
  RunResult r = run("cd " + dir + " && " + env("") + KFUSE_TEST_STATIC_CUDART_LIKE);
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("driver saw 2 launches"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(PreloadTest, UnwritableOutputStepsAsideWithOneMessage) {
  RunResult r = run(env("/nonexistent-kfuse-dir/trace.sqlite") + KFUSE_TEST_STATIC_CUDART_LIKE);
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("driver saw 2 launches"), std::string::npos) << r.output;
  const size_t first = r.output.find("kfuse: collector:");
  ASSERT_NE(first, std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("kfuse: collector:", first + 1), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("/nonexistent-kfuse-dir/trace.sqlite"), std::string::npos) << r.output;
}

TEST(PreloadTest, NonCudaProcessesLeaveNoTrace) {
  const std::string dir = tempDir() + "/noncuda";
  fs::create_directories(dir);
  RunResult r = run(env(dir + "/t-%p.sqlite") + "/bin/true");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_TRUE(fs::is_empty(dir));
}

class RecordProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* old = std::getenv("LD_LIBRARY_PATH");
    old_ = old ? old : "";
    setenv("LD_LIBRARY_PATH", KFUSE_TEST_FAKE_DRIVER_DIR, 1);
  }
  void TearDown() override { setenv("LD_LIBRARY_PATH", old_.c_str(), 1); }
  RecordOptions options(const std::string& output, std::vector<std::string> command) {
    RecordOptions o;
    o.output = output;
    o.backend = "hook";
    o.collector_library = KFUSE_TEST_PRELOAD_LIB;
    o.command = std::move(command);
    return o;
  }
  std::string old_;
};

TEST_F(RecordProgramTest, PassesTheExitCodeThroughAndReportsTheTrace) {
  const std::string trace = tempDir() + "/record.sqlite";
  fs::remove(trace);
  auto r = recordProgram(options(trace, {KFUSE_TEST_STATIC_CUDART_LIKE, "--exit", "5"}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 5);
  ASSERT_EQ(r->traces.size(), 1u);
  EXPECT_EQ(r->traces[0].path, trace);
  EXPECT_EQ(r->traces[0].counts.launches, 2);
  EXPECT_EQ(summarizeRecordedTrace(r->traces[0]).rfind("2 launches of 1 kernels", 0), 0u)
      << summarizeRecordedTrace(r->traces[0]);
  // The trace exists now: a second recording needs --force.
  auto again = recordProgram(options(trace, {KFUSE_TEST_STATIC_CUDART_LIKE}));
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("--force"), std::string::npos);
  auto forced = options(trace, {KFUSE_TEST_STATIC_CUDART_LIKE, "--iterations", "3"});
  forced.overwrite = true;
  auto third = recordProgram(forced);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->traces[0].counts.launches, 6);
}

TEST_F(RecordProgramTest, OneTracePerProcessWithPercentP) {
  const std::string dir = tempDir() + "/multi";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string prog = KFUSE_TEST_STATIC_CUDART_LIKE;
  auto r =
      recordProgram(options(dir + "/trace-%p.sqlite", {"/bin/sh", "-c", prog + " && " + prog + " --iterations 2"}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 0);
  ASSERT_EQ(r->traces.size(), 2u);  // the shell never touched CUDA: no trace for it
  std::multiset<int64_t> launches;
  for (const auto& t : r->traces) launches.insert(t.counts.launches);
  EXPECT_EQ(launches, (std::multiset<int64_t>{2, 4}));
}

TEST_F(RecordProgramTest, UnwritableOutputDirectoryIsRefusedBeforeRunning) {
  auto r = recordProgram(options("/nonexistent-kfuse-dir/t.sqlite", {KFUSE_TEST_STATIC_CUDART_LIKE}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not exist"), std::string::npos) << r.status().message();
}

TEST_F(RecordProgramTest, ProgramThatCannotStartReports127) {
  const std::string trace = tempDir() + "/missing.sqlite";
  fs::remove(trace);
  auto r = recordProgram(options(trace, {"/nonexistent-kfuse-program"}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 127);
  EXPECT_TRUE(r->traces.empty());
}

TEST_F(RecordProgramTest, DetectsNoGpuBehindTheTestFake) {
  EXPECT_EQ(detectBackend(), "hook");
}

TEST(CollectorConfigTest, ExpandsPercentPWithThePid) {
  EXPECT_EQ(expandOutputPattern("/tmp/t-%p.sqlite", 42), "/tmp/t-42.sqlite");
  EXPECT_EQ(expandOutputPattern("a%%p%p", 7), "a%p7");
  EXPECT_EQ(expandOutputPattern("plain", 7), "plain");
}

}  // namespace
}  // namespace kfuse::collector
