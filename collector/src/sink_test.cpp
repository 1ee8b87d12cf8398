#pragma GCC diagnostic ignored "-Wmissing-field-initializers"  // designated option initializers
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "kfuse/collector/trace_sink.h"
#include "kfuse/core/trace_store.h"
#include "temp_dir.h"

namespace kfuse::collector {
namespace {

namespace fs = std::filesystem;

std::string tempPath(const std::string& name) {
  fs::path p = kfuse::testing::processTempDir("kfuse_sink_test_") / name;
  for (const char* s : {"", "-wal", "-shm"}) fs::remove(p.string() + s);
  return p.string();
}

void pushFunction(TraceSink& sink, Handle fn, const char* name, std::vector<ParamLayout> params) {
  FunctionEvent e;
  e.function = fn;
  e.param_count = static_cast<uint32_t>(params.size());
  e.name_size = static_cast<uint32_t>(strlen(name));
  e.layout_known = 1;
  ASSERT_TRUE(
      sink.pushStruct(EventKind::kFunction, e, params.data(), params.size() * sizeof(ParamLayout), name, e.name_size));
}

// A saxpy-like launch: (int n, float a, const float* x, float* y) at offsets 0, 4, 8, 16.
bool pushLaunch(TraceSink& sink, Handle fn, Handle stream, uint64_t x, uint64_t y, uint32_t flags = kLaunchLayoutKnown,
                int64_t corr = 0) {
  uint8_t args[24] = {};
  int n = 1024;
  float a = 2.0f;
  std::memcpy(args, &n, 4);
  std::memcpy(args + 4, &a, 4);
  std::memcpy(args + 8, &x, 8);
  std::memcpy(args + 16, &y, 8);
  LaunchEvent e;
  e.correlation_id = corr ? corr : sink.nextCorrelationId();
  e.thread_id = 42;
  e.function = fn;
  e.stream = stream;
  e.grid.x = 4;
  e.block.x = 256;
  e.arg_size = sizeof args;
  e.api_start_ns = 100;
  e.api_end_ns = 200;
  e.flags = flags;
  return sink.pushStruct(EventKind::kLaunch, e, args, sizeof args);
}

const std::vector<ParamLayout> kSaxpyParams = {{0, 4}, {4, 4}, {8, 8}, {16, 8}};

TEST(MemorySinkTest, ResolvesPointerArgumentsToLiveAllocations) {
  MemorySink sink;
  pushFunction(sink, 0xf00, "_Z5saxpyifPKfPf", kSaxpyParams);
  ASSERT_TRUE(sink.pushStruct(EventKind::kAlloc, AllocEvent{0x10000, 4096, 0, 5, core::AllocationKind::kDevice, 0}));
  ASSERT_TRUE(sink.pushStruct(EventKind::kAlloc, AllocEvent{0x20000, 4096, 0, 6, core::AllocationKind::kDevice, 0}));
  ASSERT_TRUE(pushLaunch(sink, 0xf00, 0x77, 0x10000, 0x20010));
  ASSERT_TRUE(sink.finish().ok());
  const core::Trace& t = sink.trace();
  ASSERT_EQ(t.functions.size(), 1u);
  EXPECT_EQ(t.functions[0].mangled_name, "_Z5saxpyifPKfPf");
  EXPECT_EQ(t.functions[0].demangled_name, "saxpy(int, float, float const*, float*)");
  ASSERT_EQ(t.functions[0].params.size(), 4u);
  EXPECT_EQ(t.functions[0].params[3].offset, 16);
  ASSERT_EQ(t.launches.size(), 1u);
  const core::Launch& l = t.launches[0];
  EXPECT_EQ(l.id, 1);
  EXPECT_EQ(l.function_id, t.functions[0].id);
  EXPECT_EQ(l.grid, (core::Dim3{4, 1, 1}));
  EXPECT_EQ(l.block, (core::Dim3{256, 1, 1}));
  EXPECT_EQ(l.arg_bytes.size(), 24u);
  ASSERT_EQ(l.pointer_args.size(), 2u);
  EXPECT_EQ(l.pointer_args[0], (core::PointerArg{2, 0x10000, 1, 0}));
  EXPECT_EQ(l.pointer_args[1], (core::PointerArg{3, 0x20010, 2, 0x10}));
  ASSERT_EQ(t.streams.size(), 1u);
  EXPECT_EQ(t.streams[0].handle, 0x77u);
  EXPECT_EQ(l.stream_id, t.streams[0].id);
  ASSERT_EQ(t.processes.size(), 1u);
}

// PyTorch's elementwise kernels take (int n, Functor f, std::array<char*, 2> data): the pointers sit inside a 16-byte
// struct argument, found by scanning its 8 aligned bytes, each kept with its offset in the struct.
TEST(MemorySinkTest, ResolvesPointersInsideStructArguments) {
  MemorySink sink;
  pushFunction(sink, 0xf00, "k", {{0, 4}, {4, 4}, {8, 16}});
  ASSERT_TRUE(sink.pushStruct(EventKind::kAlloc, AllocEvent{0x10000, 4096, 0, 5, core::AllocationKind::kDevice, 0}));
  ASSERT_TRUE(sink.pushStruct(EventKind::kAlloc, AllocEvent{0x20000, 4096, 0, 6, core::AllocationKind::kDevice, 0}));
  ASSERT_TRUE(pushLaunch(sink, 0xf00, 0x77, 0x10000, 0x20010));
  // The same struct holding two values that are no device addresses: nothing.
  ASSERT_TRUE(pushLaunch(sink, 0xf00, 0x77, 7, 0x90000));
  ASSERT_TRUE(sink.finish().ok());
  const core::Trace& t = sink.trace();
  ASSERT_EQ(t.launches.size(), 2u);
  const core::Launch& l = t.launches[0];
  ASSERT_EQ(l.pointer_args.size(), 2u);
  EXPECT_EQ(l.pointer_args[0], (core::PointerArg{2, 0x10000, 1, 0, 0}));
  EXPECT_EQ(l.pointer_args[1], (core::PointerArg{2, 0x20010, 2, 0x10, 8}));
  EXPECT_TRUE(t.launches[1].pointer_args.empty());
}

TEST(MemorySinkTest, FreedAllocationNoLongerResolves) {
  MemorySink sink;
  pushFunction(sink, 0xf00, "k", kSaxpyParams);
  ASSERT_TRUE(sink.pushStruct(EventKind::kAlloc, AllocEvent{0x10000, 4096, 0, 5, core::AllocationKind::kDevice, 0}));
  ASSERT_TRUE(sink.pushStruct(EventKind::kFree, FreeEvent{0x10000, 9, 0, 0}));
  ASSERT_TRUE(pushLaunch(sink, 0xf00, 0, 0x10000, 0x10008));
  ASSERT_TRUE(sink.finish().ok());
  EXPECT_TRUE(sink.trace().launches[0].pointer_args.empty());
  EXPECT_EQ(sink.trace().allocations[0].free_ns, 9);
  EXPECT_TRUE(sink.trace().streams[0].is_default);
}

TEST(MemorySinkTest, AllocationsFromBeforeRecordingAreMarkedUnknownNotGuessed) {
  MemorySink sink;
  ASSERT_TRUE(sink.pushStruct(EventKind::kFree, FreeEvent{0x5000, 9, 0, 0}));
  ASSERT_TRUE(sink.finish().ok());
  const core::Trace& t = sink.trace();
  ASSERT_EQ(t.allocations.size(), 1u);
  EXPECT_EQ(t.allocations[0].alloc_ns, core::kNoTime);
  EXPECT_EQ(t.allocations[0].size, 0u);
  EXPECT_EQ(t.allocations[0].kind, core::AllocationKind::kUnknown);
  bool counted = false;
  for (const auto& s : t.stats) counted |= s.name == "free_of_unknown_address" && s.value == 1;
  EXPECT_TRUE(counted);
}

TEST(MemorySinkTest, LaunchesWaitForTheirGpuTimesByCorrelationId) {
  MemorySink sink;
  pushFunction(sink, 0xf00, "k", kSaxpyParams);
  ASSERT_TRUE(pushLaunch(sink, 0xf00, 0, 0, 0, kLaunchLayoutKnown | kLaunchWaitsForGpuTime, 11));
  ASSERT_TRUE(pushLaunch(sink, 0xf00, 0, 0, 0, kLaunchLayoutKnown | kLaunchWaitsForGpuTime, 12));
  GpuTimeEvent g;
  g.correlation_id = 12;
  g.start_ns = 1000;
  g.end_ns = 1500;
  ASSERT_TRUE(sink.pushStruct(EventKind::kGpuTime, g));
  const char* name = "_Z6orphanv";
  GpuTimeEvent orphan;
  orphan.correlation_id = 99;
  orphan.start_ns = 2000;
  orphan.end_ns = 2100;
  orphan.name_size = static_cast<uint32_t>(strlen(name));
  orphan.stream_native_id = 7;
  ASSERT_TRUE(sink.pushStruct(EventKind::kGpuTime, orphan, name, orphan.name_size));
  ASSERT_TRUE(sink.finish().ok());
  const core::Trace& t = sink.trace();
  ASSERT_EQ(t.launches.size(), 3u);
  // Written in completion order; ids keep API order.
  EXPECT_EQ(t.launches[0].id, 2);
  EXPECT_EQ(t.launches[0].gpu_start_ns, 1000);
  EXPECT_EQ(t.launches[1].id, 3);  // the orphan record
  EXPECT_EQ(t.functions[t.launches[1].function_id - 1].mangled_name, "_Z6orphanv");
  EXPECT_EQ(t.launches[2].id, 1);  // never got a GPU time
  EXPECT_EQ(t.launches[2].gpu_start_ns, core::kNoTime);
  int64_t without = 0, unmatched = 0;
  for (const auto& s : t.stats) {
    if (s.name == "launch_without_gpu_time") without = s.value;
    if (s.name == "unmatched_gpu_records") unmatched = s.value;
  }
  EXPECT_EQ(without, 1);
  EXPECT_EQ(unmatched, 1);
}

TEST(SqliteSinkTest, StoresEveryLaunchFromManyThreadsExactlyOnce) {
  const std::string path = tempPath("threads.sqlite");
  auto sink = SqliteSink::open(path, {.queue_bytes = 1u << 20});
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  pushFunction(**sink, 0xf00, "k", kSaxpyParams);
  constexpr int kThreads = 4, kPerThread = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) EXPECT_TRUE(pushLaunch(**sink, 0xf00, 0x100 + t, 0, 0));
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE((*sink)->finish().ok());
  EXPECT_EQ((*sink)->stats().dropped, 0u);
  auto reader = core::TraceReader::open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto trace = (*reader)->readAll();
  ASSERT_TRUE(trace.ok());
  ASSERT_EQ(trace->launches.size(), size_t{kThreads * kPerThread});
  std::set<int64_t> ids, corrs;
  for (const auto& l : trace->launches) {
    ids.insert(l.id);
    corrs.insert(l.correlation_id);
  }
  EXPECT_EQ(ids.size(), size_t{kThreads * kPerThread});
  EXPECT_EQ(corrs.size(), size_t{kThreads * kPerThread});
  EXPECT_EQ(trace->streams.size(), size_t{kThreads});
  EXPECT_EQ(trace->metadata.producer, "kfuse-collector");
}

TEST(SqliteSinkTest, FullQueueDropsAndCountsInsteadOfGrowing) {
  const std::string path = tempPath("drops.sqlite");
  // A tiny ring and no waiting: the producer outruns the writer.
  auto sink = SqliteSink::open(path, {.queue_bytes = 4096, .block_timeout_ms = 0});
  ASSERT_TRUE(sink.ok());
  pushFunction(**sink, 0xf00, "k", kSaxpyParams);
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) accepted += pushLaunch(**sink, 0xf00, 0, 0, 0);
  ASSERT_TRUE((*sink)->finish().ok());
  const SinkStats st = (*sink)->stats();
  EXPECT_GT(st.dropped, 0u);
  EXPECT_EQ(st.dropped + accepted, 20000u);
  EXPECT_LE(st.max_queued_bytes, 4096u);
  auto reader = core::TraceReader::open(path);
  ASSERT_TRUE(reader.ok());
  auto trace = (*reader)->readAll();
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(trace->launches.size(), static_cast<size_t>(accepted));
  int64_t dropped_stat = -1;
  for (const auto& s : trace->stats) {
    if (s.name == "collector_dropped_events") dropped_stat = s.value;
  }
  EXPECT_EQ(dropped_stat, static_cast<int64_t>(st.dropped));
}

TEST(SqliteSinkTest, BackPressureWaitsInsteadOfDropping) {
  const std::string path = tempPath("backpressure.sqlite");
  auto sink = SqliteSink::open(path, {.queue_bytes = 4096, .block_timeout_ms = 10000});
  ASSERT_TRUE(sink.ok());
  pushFunction(**sink, 0xf00, "k", kSaxpyParams);
  for (int i = 0; i < 5000; ++i) ASSERT_TRUE(pushLaunch(**sink, 0xf00, 0, 0, 0));
  ASSERT_TRUE((*sink)->finish().ok());
  EXPECT_EQ((*sink)->stats().dropped, 0u);
  EXPECT_GT((*sink)->stats().waits, 0u);
  auto reader = core::TraceReader::open(path);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->counts()->launches, 5000);
}

TEST(SqliteSinkTest, ModuleImagesAreStoredOnceAndOwnedByTheSink) {
  const std::string path = tempPath("modules.sqlite");
  auto sink = SqliteSink::open(path);
  ASSERT_TRUE(sink.ok());
  const std::string ptx = ".version 9.0\n.target sm_90\n";
  for (int i = 0; i < 2; ++i) {
    ModuleEvent m;
    m.module = 0x500 + i;
    m.kind = core::ImageKind::kPtx;
    m.image = new uint8_t[ptx.size()];
    std::memcpy(m.image, ptx.data(), ptx.size());
    m.image_size = ptx.size();
    ASSERT_TRUE((*sink)->pushModule(m));
  }
  ASSERT_TRUE((*sink)->finish().ok());
  auto reader = core::TraceReader::open(path);
  ASSERT_TRUE(reader.ok());
  auto counts = (*reader)->counts();
  EXPECT_EQ(counts->modules, 2);
  EXPECT_EQ(counts->module_images, 1);
  auto trace = (*reader)->readAll();
  EXPECT_EQ(std::string(trace->modules[0].image.begin(), trace->modules[0].image.end()), ptx);
}

TEST(SqliteSinkTest, UnwritableOutputPathIsAClearError) {
  auto sink = SqliteSink::open("/nonexistent-kfuse-dir/sub/trace.sqlite");
  ASSERT_FALSE(sink.ok());
  EXPECT_NE(sink.status().message().find("/nonexistent-kfuse-dir/sub/trace.sqlite"), std::string::npos)
      << sink.status().message();
}

TEST(SqliteSinkTest, ExistingOutputIsNotOverwrittenUnlessAsked) {
  const std::string path = tempPath("exists.sqlite");
  { ASSERT_TRUE(SqliteSink::open(path).ok()); }
  auto again = SqliteSink::open(path);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("already exists"), std::string::npos);
  EXPECT_TRUE(SqliteSink::open(path, {.overwrite = true}).ok());
}

// The child records through a SqliteSink, reports how many launches it has flushed, keeps recording, and is
// killed with SIGKILL: the trace must open and hold at least what was flushed.
TEST(SqliteSinkTest, SigkillLeavesATraceWithEverythingCommitted) {
  const std::string path = tempPath("killed.sqlite");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    auto sink = SqliteSink::open(path, {.flush_interval_ms = 50});
    if (!sink.ok()) _exit(3);
    pushFunction(**sink, 0xf00, "k", kSaxpyParams);
    int64_t pushed = 0;
    for (int i = 0; i < 3000; ++i) pushed += pushLaunch(**sink, 0xf00, 0, 0, 0);
    if (!(*sink)->flush().ok()) _exit(4);
    if (write(fds[1], &pushed, sizeof pushed) != sizeof pushed) _exit(5);
    for (;;) pushLaunch(**sink, 0xf00, 0, 0, 0);  // until killed
  }
  close(fds[1]);
  int64_t committed = 0;
  ASSERT_EQ(read(fds[0], &committed, sizeof committed), static_cast<ssize_t>(sizeof committed));
  close(fds[0]);
  usleep(100 * 1000);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  auto reader = core::TraceReader::open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto trace = (*reader)->readAll();
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(committed, 3000);
  EXPECT_GE(static_cast<int64_t>(trace->launches.size()), committed);
  EXPECT_EQ(trace->functions.size(), 1u);
}

// A file size limit (a full disk, as far as SQLite can tell) stops recording with a clear message; what was
// committed before stays readable.
TEST(SqliteSinkTest, FullDiskStopsRecordingAndKeepsCommittedData) {
  const std::string path = tempPath("full.sqlite");
  const std::string err_path = path + ".stderr";
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(err, 2);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl {
      512 * 1024, 512 * 1024
    };
    setrlimit(RLIMIT_FSIZE, &rl);
    auto sink = SqliteSink::open(path, {.flush_interval_ms = 20});
    if (!sink.ok()) _exit(3);
    pushFunction(**sink, 0xf00, "k", kSaxpyParams);
    int64_t committed = 0;
    for (int i = 0; i < 200; ++i) committed += pushLaunch(**sink, 0xf00, 0, 0, 0);
    if (!(*sink)->flush().ok()) _exit(4);
    for (int i = 0; i < 200000 && (*sink)->status().ok(); ++i) pushLaunch(**sink, 0xf00, 0, 0, 0);
    Status s = (*sink)->finish();
    if (write(fds[1], &committed, sizeof committed) != sizeof committed) _exit(5);
    _exit(s.ok() ? 6 : 0);
  }
  close(fds[1]);
  int64_t committed = 0;
  ASSERT_EQ(read(fds[0], &committed, sizeof committed), static_cast<ssize_t>(sizeof committed));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << "the sink did not report the full disk";
  std::ifstream err(err_path);
  std::string message((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  EXPECT_NE(message.find("kfuse: collector: writing " + path + " failed"), std::string::npos) << message;
  EXPECT_NE(message.find("full"), std::string::npos) << message;
  auto reader = core::TraceReader::open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto counts = (*reader)->counts();
  ASSERT_TRUE(counts.ok()) << counts.status().message();
  EXPECT_GE(counts->launches, committed);
}

}  // namespace
}  // namespace kfuse::collector
