// The importers on real traces recorded by other people (../shared/data, see its README): exact counts per
// stream, devices, the negative traces' messages, and the round trip through the kfuse store.
#include "kfuse/analyzer/importer.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "kfuse/core/trace_json.h"
#include "kfuse/core/trace_store.h"
#include "trace_builders.h"

namespace kfuse::analyzer {
namespace {

namespace fs = std::filesystem;
using core::Id;

std::string shared(const std::string& rel) {
  return std::string(KFUSE_SHARED_DATA_DIR) + "/" + rel;
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("kfuse_importer_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

// native stream id -> count, for the records of one kind.
template <typename Record>
std::map<int64_t, int64_t> perStream(const core::Trace& t, const std::vector<Record>& records) {
  std::map<Id, int64_t> native;
  for (const core::Stream& s : t.streams) native[s.id] = s.native_id;
  std::map<int64_t, int64_t> out;
  for (const Record& r : records) ++out[native.at(r.stream_id)];
  return out;
}

size_t distinctFunctions(const core::Trace& t) {
  std::set<Id> ids;
  for (const core::Launch& l : t.launches) ids.insert(l.function_id);
  return ids.size();
}

const core::Device& deviceOfStream(const core::Trace& t, int64_t native_stream) {
  for (const core::Stream& s : t.streams) {
    if (s.native_id != native_stream) continue;
    for (const core::Context& c : t.contexts) {
      if (c.id != s.context_id) continue;
      for (const core::Device& d : t.devices) {
        if (d.id == c.device_id) return d;
      }
    }
  }
  ADD_FAILURE() << "no device for stream " << native_stream;
  static const core::Device kNone;
  return kNone;
}

// Ids unique per kind, launches in GPU start order, every reference resolvable.
void expectConsistent(const ImportResult& r) {
  const core::Trace& t = r.trace;
  std::set<Id> streams, functions, events;
  for (const auto& s : t.streams) EXPECT_TRUE(streams.insert(s.id).second);
  for (const auto& f : t.functions) EXPECT_TRUE(functions.insert(f.id).second);
  for (const auto& e : t.events) EXPECT_TRUE(events.insert(e.id).second);
  for (size_t i = 0; i < t.launches.size(); ++i) {
    const core::Launch& l = t.launches[i];
    EXPECT_EQ(l.id, static_cast<Id>(i) + 1);
    EXPECT_TRUE(streams.count(l.stream_id));
    EXPECT_TRUE(functions.count(l.function_id));
    EXPECT_NE(l.gpu_start_ns, core::kNoTime);
    if (i > 0) {
      EXPECT_LE(t.launches[i - 1].gpu_start_ns, l.gpu_start_ns);
    }
  }
  for (size_t i = 0; i < t.memcpys.size(); ++i) EXPECT_EQ(t.memcpys[i].id, static_cast<Id>(i) + 1);
  for (size_t i = 0; i < t.memsets.size(); ++i) EXPECT_EQ(t.memsets[i].id, static_cast<Id>(i) + 1);
  for (size_t i = 0; i < t.syncs.size(); ++i) {
    EXPECT_EQ(t.syncs[i].id, static_cast<Id>(i) + 1);
    if (t.syncs[i].stream_id != core::kNoId) {
      EXPECT_TRUE(streams.count(t.syncs[i].stream_id));
    }
    if (t.syncs[i].event_id != core::kNoId) {
      EXPECT_TRUE(events.count(t.syncs[i].event_id));
    }
  }
  for (size_t i = 0; i < t.allocations.size(); ++i) EXPECT_EQ(t.allocations[i].id, static_cast<Id>(i) + 1);
  // Problems are sorted and mirrored in trace.stats.
  EXPECT_TRUE(std::is_sorted(r.problems.begin(), r.problems.end(),
                             [](const core::Stat& a, const core::Stat& b) { return a.name < b.name; }));
  for (const core::Stat& p : r.problems) {
    EXPECT_GT(p.value, 0) << p.name;
    EXPECT_NE(std::find(t.stats.begin(), t.stats.end(), p), t.stats.end()) << p.name;
  }
}

ImportResult importOk(const std::string& path) {
  auto r = importTrace(path);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  expectConsistent(*r);
  return std::move(r).value();
}

using Counts = std::map<int64_t, int64_t>;

TEST(KinetoRealTraces, SimpleAddHasFourKernelsOnStream7) {
  ImportResult r = importOk(shared("kineto/hta_simple_add.json.gz"));
  const core::Trace& t = r.trace;
  EXPECT_EQ(r.format, "kineto");
  EXPECT_EQ(perStream(t, t.launches), (Counts{{7, 4}}));
  EXPECT_EQ(distinctFunctions(t), 2u);
  EXPECT_TRUE(t.memcpys.empty());
  EXPECT_TRUE(t.memsets.empty());
  ASSERT_EQ(t.devices.size(), 8u);
  EXPECT_EQ(deviceOfStream(t, 7).name, "NVIDIA A100-PG509-200");
  EXPECT_EQ(deviceOfStream(t, 7).sm_count, 108);
  EXPECT_EQ(deviceOfStream(t, 7).memory_bytes, 42297524224u);
  EXPECT_EQ(deviceOfStream(t, 7).cc_major, 8);
  EXPECT_EQ(t.syncs.size(), 5u);  // five cudaDeviceSynchronize calls
  for (const core::Sync& s : t.syncs) EXPECT_EQ(s.kind, core::SyncKind::kContext);
  // First kernel: ts 1689360808083239 µs, dur 5, grid 256, block 256, 47 registers, launched by a call.
  const core::Launch& l = t.launches.front();
  EXPECT_EQ(l.gpu_start_ns, 1689360808083239000);
  EXPECT_EQ(l.gpu_end_ns, 1689360808083244000);
  EXPECT_EQ(l.grid, (core::Dim3{256, 1, 1}));
  EXPECT_EQ(l.block, (core::Dim3{256, 1, 1}));
  EXPECT_EQ(l.registers_per_thread, 47u);
  EXPECT_NE(l.api_start_ns, core::kNoTime);
  EXPECT_LT(l.api_start_ns, l.gpu_start_ns);
  EXPECT_NE(l.thread_id, 0);
  EXPECT_EQ(r.launch_external_ids.size(), 4u);
  EXPECT_EQ(r.cpu_ops.size(), 28u);
}

TEST(KinetoRealTraces, AlexnetCountsPerStream) {
  ImportResult r = importOk(shared("kineto/hta_alexnet_a100.json.gz"));
  const core::Trace& t = r.trace;
  EXPECT_EQ(perStream(t, t.launches), (Counts{{7, 73}, {20, 6}}));
  EXPECT_EQ(distinctFunctions(t), 16u);
  EXPECT_EQ(perStream(t, t.memcpys), (Counts{{7, 16}}));
  EXPECT_EQ(perStream(t, t.memsets), (Counts{{7, 2}, {20, 1}}));
  for (const core::Memcpy& m : t.memcpys) EXPECT_EQ(m.kind, core::MemcpyKind::kHostToDevice);
  EXPECT_EQ(t.memcpys.front().bytes, 92928u);
  EXPECT_TRUE(t.memcpys.front().async);  // cudaMemcpyAsync
  // 41 cuda_sync events plus 14 sync calls that have none: one Sync per correlation id.
  EXPECT_EQ(t.syncs.size(), 55u);
  EXPECT_EQ(t.events.size(), 30u);  // cudaEventRecord calls
  int64_t waits_with_event = 0, waits = 0;
  for (const core::Sync& s : t.syncs) {
    if (s.kind != core::SyncKind::kStreamWaitEvent) continue;
    ++waits;
    if (s.event_id != core::kNoId) {
      ++waits_with_event;
      EXPECT_NE(s.stream_id, core::kNoId);
    }
  }
  EXPECT_EQ(waits, 34);
  EXPECT_GT(waits_with_event, 0);
  EXPECT_EQ(r.cpu_ops.size(), 359u);
}

TEST(KinetoRealTraces, EventSyncAcrossThreeStreams) {
  ImportResult r = importOk(shared("kineto/hta_event_sync_multi_stream.json.gz"));
  const core::Trace& t = r.trace;
  EXPECT_EQ(perStream(t, t.launches), (Counts{{20, 1}, {24, 1}, {28, 1}}));
  EXPECT_EQ(distinctFunctions(t), 1u);
  EXPECT_EQ(perStream(t, t.memsets), (Counts{{20, 1}, {24, 1}, {28, 1}}));
  EXPECT_TRUE(t.memcpys.empty());
  EXPECT_EQ(t.syncs.size(), 5u);
  EXPECT_EQ(t.events.size(), 4u);
  // The one stream-wait: stream 24 waits for an event recorded on stream 20.
  int found = 0;
  for (const core::Sync& s : t.syncs) {
    if (s.kind != core::SyncKind::kStreamWaitEvent) continue;
    ++found;
    ASSERT_NE(s.event_id, core::kNoId);
    const core::Event& e = t.events.at(static_cast<size_t>(s.event_id - 1));
    EXPECT_EQ(e.correlation_id, 1385);
    std::map<Id, int64_t> native;
    for (const core::Stream& st : t.streams) native[st.id] = st.native_id;
    EXPECT_EQ(native[s.stream_id], 24);
    EXPECT_EQ(native[e.stream_id], 20);
  }
  EXPECT_EQ(found, 1);
  const core::Launch& l = t.launches.front();
  EXPECT_EQ(l.grid, (core::Dim3{8, 16, 5}));
  EXPECT_EQ(l.block, (core::Dim3{128, 1, 1}));
  EXPECT_EQ(l.registers_per_thread, 122u);
  EXPECT_EQ(l.static_shared_bytes, 12544u);
}

TEST(KinetoRealTraces, SixStreamsRank0) {
  ImportResult r = importOk(shared("kineto/hta_six_streams_rank0.json.gz"));
  const core::Trace& t = r.trace;
  EXPECT_EQ(perStream(t, t.launches), (Counts{{7, 5705}, {27, 295}, {84, 36}, {285, 22}, {363, 22}}));
  EXPECT_EQ(t.launches.size(), 6080u);
  EXPECT_EQ(distinctFunctions(t), 85u);
  EXPECT_EQ(perStream(t, t.memcpys), (Counts{{7, 1280}, {25, 35}, {27, 75}}));
  EXPECT_EQ(perStream(t, t.memsets), (Counts{{7, 277}}));
  EXPECT_EQ(deviceOfStream(t, 7).name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(t.syncs.size(), 501u);  // no cuda_sync events: 425 waits + 75 stream syncs + 1 device sync
  EXPECT_EQ(r.problemCount("kineto_kernel_without_api"), 705);  // their launch calls fell outside the window
  EXPECT_EQ(r.launch_external_ids.size(), 6080u);
  EXPECT_EQ(r.cpu_ops.size(), 25185u);
  EXPECT_EQ(t.metadata.extra.at("kineto.rank"), "0");
  EXPECT_EQ(t.metadata.extra.at("kineto.world_size"), "16");
  // CPU ops keep shapes: some have Input Dims.
  EXPECT_TRUE(std::any_of(r.cpu_ops.begin(), r.cpu_ops.end(),
                          [](const CpuOp& op) { return !op.input_dims.empty() && !op.input_dims[0].empty(); }));
  // Shapes repeat across iterations: ops with equal inputs share one copy.
  std::set<const std::vector<std::vector<int64_t>>*> distinct;
  size_t with_dims = 0;
  for (const CpuOp& op : r.cpu_ops) {
    if (op.input_dims.empty()) continue;
    ++with_dims;
    distinct.insert(&op.input_dims.get());
  }
  EXPECT_LT(distinct.size() * 10, with_dims);
}

TEST(KinetoRealTraces, TracelensBertSmallH100) {
  ImportResult r = importOk(shared("kineto/tracelens_bert_small_h100.json.gz"));
  const core::Trace& t = r.trace;
  EXPECT_EQ(perStream(t, t.launches), (Counts{{7, 60}}));
  EXPECT_EQ(distinctFunctions(t), 11u);
  EXPECT_EQ(perStream(t, t.memcpys), (Counts{{7, 1}}));
  EXPECT_EQ(t.memcpys.front().kind, core::MemcpyKind::kDeviceToHost);
  EXPECT_TRUE(t.memsets.empty());
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(t.devices[0].sm_count, 132);
  EXPECT_EQ(t.devices[0].cc_major, 9);
  // 236 [memory] events: 18 of CPU memory, 109 GPU allocations each freed once.
  EXPECT_EQ(t.allocations.size(), 109u);
  EXPECT_EQ(r.problemCount("kineto_memory_event_not_gpu"), 18);
  for (const core::Allocation& a : t.allocations) {
    EXPECT_NE(a.alloc_ns, core::kNoTime);
    EXPECT_NE(a.free_ns, core::kNoTime);
    EXPECT_GE(a.free_ns, a.alloc_ns);
  }
  // Fractional microseconds are kept: ts 1419247333430.849 dur 3.136.
  const core::Launch& l = t.launches.front();
  EXPECT_EQ(l.gpu_start_ns, 1419247333430849);
  EXPECT_EQ(l.gpu_end_ns, 1419247333433985);
  EXPECT_EQ(r.cpu_ops.size(), 479u);
}

TEST(KinetoRealTraces, AmdMi250WithoutLaunchConfig) {
  ImportResult r = importOk(shared("kineto/hta_amd_mi250.json.gz"));
  const core::Trace& t = r.trace;
  EXPECT_EQ(perStream(t, t.launches), (Counts{{0, 14}}));
  EXPECT_EQ(distinctFunctions(t), 12u);
  EXPECT_EQ(perStream(t, t.memcpys), (Counts{{0, 2}}));
  EXPECT_EQ(t.memcpys.front().kind, core::MemcpyKind::kHostToDevice);
  EXPECT_TRUE(t.memsets.empty());
  EXPECT_EQ(deviceOfStream(t, 0).name, "AMD Radeon Graphics");
  EXPECT_EQ(deviceOfStream(t, 0).ordinal, 2);
  EXPECT_EQ(r.problemCount("kineto_kernel_without_launch_config"), 14);
  EXPECT_EQ(r.problemCount("kineto_kernel_without_registers"), 14);
  for (const core::Launch& l : t.launches) {
    EXPECT_EQ(l.grid, (core::Dim3{1, 1, 1}));
    EXPECT_NE(l.api_start_ns, core::kNoTime);  // hipLaunchKernel / hipExtModuleLaunchKernel
  }
  EXPECT_EQ(t.syncs.size(), 1u);  // hipDeviceSynchronize
}

TEST(KinetoRealTraces, CpuOnlyTraceSaysSo) {
  const std::string path = shared("kineto/hta_cpu_only.json.gz");
  auto r = importTrace(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(r.status().message(), path + ": no GPU kernels in this trace (CPU-only profile?)");
  // Without the requirement it imports, empty.
  ImportOptions o;
  o.require_kernels = false;
  auto empty = importTrace(path, o);
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_TRUE(empty->trace.launches.empty());
  EXPECT_EQ(empty->cpu_ops.size(), 4u);
}

TEST(NsysRealTraces, PipitSaxpyA100Schema29) {
  ImportResult r = importOk(shared("nsys/pipit_saxpy_a100.sqlite"));
  const core::Trace& t = r.trace;
  EXPECT_EQ(r.format, "nsys");
  EXPECT_EQ(t.metadata.extra.at("nsys.schema_version"), "2.9.1");
  EXPECT_EQ(perStream(t, t.launches), (Counts{{7, 5}}));
  ASSERT_EQ(t.functions.size(), 1u);
  EXPECT_EQ(t.functions[0].mangled_name, "_Z5saxpyPdS_S_di");
  EXPECT_EQ(t.functions[0].demangled_name, "saxpy(double *, double *, double *, double, int)");
  EXPECT_EQ(perStream(t, t.memcpys), (Counts{{7, 15}}));
  int htod = 0, dtoh = 0;
  for (const core::Memcpy& m : t.memcpys) {
    htod += m.kind == core::MemcpyKind::kHostToDevice;
    dtoh += m.kind == core::MemcpyKind::kDeviceToHost;
  }
  EXPECT_EQ(htod, 10);
  EXPECT_EQ(dtoh, 5);
  EXPECT_TRUE(t.memsets.empty());
  EXPECT_TRUE(t.syncs.empty());
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(t.devices[0].sm_count, 108);
  EXPECT_EQ(t.devices[0].cc_major, 8);
  EXPECT_EQ(t.devices[0].cc_minor, 0);
  EXPECT_EQ(t.devices[0].memory_bytes, 42297524224u);
  const core::Launch& l = t.launches.front();
  EXPECT_EQ(l.gpu_start_ns, 924922186);
  EXPECT_EQ(l.gpu_end_ns, 942626994);
  EXPECT_EQ(l.grid, (core::Dim3{2, 1, 1}));
  EXPECT_EQ(l.block, (core::Dim3{512, 1, 1}));
  EXPECT_EQ(l.registers_per_thread, 26u);
  EXPECT_EQ(l.correlation_id, 140);
  EXPECT_NE(l.api_start_ns, core::kNoTime);
  EXPECT_NE(l.thread_id, 0);
  ASSERT_EQ(t.processes.size(), 1u);
  EXPECT_EQ(t.processes[0].pid, 1230493);
  EXPECT_EQ(t.processes[0].name, "./saxpy-mpi-cuda");
}

TEST(NsysRealTraces, MockRtx3080Schema324) {
  ImportResult r = importOk(shared("nsys/nsysai_mock_rtx3080.sqlite"));
  const core::Trace& t = r.trace;
  EXPECT_EQ(t.metadata.extra.at("nsys.schema_version"), "3.24.14");
  EXPECT_EQ(perStream(t, t.launches), (Counts{{7, 2}}));
  EXPECT_EQ(distinctFunctions(t), 2u);
  EXPECT_EQ(perStream(t, t.memcpys), (Counts{{7, 1}}));
  EXPECT_EQ(t.memcpys[0].kind, core::MemcpyKind::kDeviceToHost);
  EXPECT_EQ(t.memcpys[0].bytes, 4u);
  EXPECT_TRUE(t.memcpys[0].async);
  EXPECT_TRUE(t.memsets.empty());
  ASSERT_EQ(t.syncs.size(), 1u);
  // The call is cudaStreamSynchronize on stream 7.
  EXPECT_EQ(t.syncs[0].kind, core::SyncKind::kStream);
  EXPECT_EQ(t.syncs[0].correlation_id, 172);
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].name, "NVIDIA GeForce RTX 3080");
  EXPECT_EQ(t.devices[0].sm_count, 68);
  EXPECT_EQ(t.devices[0].cc_major, 8);
  EXPECT_EQ(t.devices[0].cc_minor, 6);
  const core::Launch& l = t.launches[1];
  EXPECT_EQ(
      t.functions.at(static_cast<size_t>(l.function_id - 1)).demangled_name.rfind("void at::native::reduce_kernel", 0),
      0u);
  EXPECT_EQ(l.static_shared_bytes, 16u);
  EXPECT_EQ(l.registers_per_thread, 28u);
  EXPECT_EQ(t.metadata.start_time_ns, 1776781226557295056);
}

TEST(NsysRealTraces, ImportLeavesTheFileUntouched) {
  const std::string path = shared("nsys/nsysai_mock_rtx3080.sqlite");
  const auto before = fs::last_write_time(path);
  const auto size = fs::file_size(path);
  ASSERT_TRUE(importTrace(path).ok());
  EXPECT_EQ(fs::last_write_time(path), before);
  EXPECT_EQ(fs::file_size(path), size);
  EXPECT_FALSE(fs::exists(path + "-journal"));
  EXPECT_FALSE(fs::exists(path + "-wal"));
  EXPECT_FALSE(fs::exists(path + "-shm"));
}

TEST(ImporterRegistry, SniffsByContentNotExtension) {
  TempDir dir;
  // A Kineto trace and an Nsight export under misleading names.
  const std::string k = dir.file("trace.sqlite");
  const std::string n = dir.file("report.json");
  fs::copy_file(shared("kineto/hta_simple_add.json.gz"), k);
  fs::copy_file(shared("nsys/pipit_saxpy_a100.sqlite"), n);
  auto registry = ImporterRegistry::withBuiltins();
  auto ki = registry.detect(k);
  ASSERT_TRUE(ki.ok()) << ki.status().message();
  EXPECT_EQ((*ki)->name(), "kineto");
  auto ni = registry.detect(n);
  ASSERT_TRUE(ni.ok()) << ni.status().message();
  EXPECT_EQ((*ni)->name(), "nsys");
  auto r = importTrace(k);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->trace.launches.size(), 4u);
}

TEST(ImporterRegistry, RejectsWhatItCannotRead) {
  TempDir dir;
  const std::string text = dir.file("notes.txt");
  { std::ofstream(text) << "hello, not a trace\n"; }
  auto r = importTrace(text);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kBadFormat);
  EXPECT_EQ(r.status().message().rfind(text + ": not a trace kfuse can import", 0), 0u) << r.status().message();

  const std::string empty = dir.file("empty.json");
  { std::ofstream(empty) << ""; }
  auto e = importTrace(empty);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), ErrorCode::kBadFormat);
  EXPECT_NE(e.status().message().find(empty), std::string::npos);

  auto missing = importTrace(dir.file("nope.json"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);

  ImportOptions o;
  o.format = "nonsense";
  auto unknown = importTrace(shared("kineto/hta_simple_add.json.gz"), o);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), ErrorCode::kInvalidArgument);
}

TEST(ImporterRegistry, ForcedFormatSkipsSniffing) {
  ImportOptions o;
  o.format = "nsys";
  auto r = importTrace(shared("kineto/hta_simple_add.json.gz"), o);
  ASSERT_FALSE(r.ok());  // not SQLite
  EXPECT_NE(r.status().message().find("hta_simple_add.json.gz"), std::string::npos);
}

// import -> TraceWriter -> TraceReader gives the same Trace, for every importer's output.
class RoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(RoundTrip, StoreGivesBackTheSameTrace) {
  TempDir dir;
  ImportResult r = importOk(shared(GetParam()));
  const std::string out = dir.file("trace.sqlite");
  {
    auto w = core::TraceWriter::create(out);
    ASSERT_TRUE(w.ok()) << w.status().message();
    ASSERT_TRUE((*w)->write(r.trace).ok());
    ASSERT_TRUE((*w)->close().ok());
  }
  auto reader = core::TraceReader::open(out);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto back = (*reader)->readAll();
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(*back == r.trace);
  EXPECT_EQ(back->launches, r.trace.launches);
  EXPECT_EQ(back->syncs, r.trace.syncs);
  EXPECT_EQ(back->metadata, r.trace.metadata);
  EXPECT_EQ(back->stats, r.trace.stats);

  // And the kfuse importer reads the stored file back to the same trace.
  auto again = importTrace(out);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->format, "kfuse");
  EXPECT_TRUE(again->trace == r.trace);
}

INSTANTIATE_TEST_SUITE_P(SharedData, RoundTrip,
                         ::testing::Values("kineto/hta_simple_add.json.gz", "kineto/hta_alexnet_a100.json.gz",
                                           "kineto/hta_event_sync_multi_stream.json.gz",
                                           "kineto/tracelens_bert_small_h100.json.gz", "kineto/hta_amd_mi250.json.gz",
                                           "nsys/pipit_saxpy_a100.sqlite", "nsys/nsysai_mock_rtx3080.sqlite"));

TEST(KfuseFormats, JsonInterchangeIsSniffedAndRead) {
  TempDir dir;
  core::Trace t = testing::makeEveryKindTrace();
  const std::string json = dir.file("every.json");
  ASSERT_TRUE(core::writeTraceJsonFile(t, json).ok());
  auto r = importTrace(json);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->format, "kfuse-json");
  EXPECT_EQ(r->trace.launches, t.launches);

  const std::string db = dir.file("every.sqlite");
  {
    auto w = core::TraceWriter::create(db);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->write(t).ok());
    ASSERT_TRUE((*w)->close().ok());
  }
  auto s = importTrace(db);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->format, "kfuse");
  EXPECT_EQ(s->trace.launches, t.launches);
}

TEST(KfuseFormats, KfuseTraceWithoutLaunchesIsTheNoKernelError) {
  TempDir dir;
  const std::string db = dir.file("empty.sqlite");
  {
    auto w = core::TraceWriter::create(db);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->close().ok());
  }
  auto r = importTrace(db);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(r.status().message(), db + ": " + std::string(kNoKernelsMessage));
}

}  // namespace
}  // namespace kfuse::analyzer
