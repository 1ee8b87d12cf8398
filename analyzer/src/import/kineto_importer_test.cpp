// The Kineto importer on small traces written by the tests: the 2021 layout, field-level oddities, and broken
// inputs (malformed or truncated JSON, truncated gzip, wrong types, hostile sizes), which must give a clear Status
// naming the file and never crash.
#include <gtest/gtest.h>
#include <zlib.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "kfuse/analyzer/importer.h"

namespace kfuse::analyzer {
namespace {

namespace fs = std::filesystem;

class KinetoImporterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kfuse_kineto_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  std::string writeGz(const std::string& name, const std::string& text) {
    const std::string p = (dir_ / name).string();
    gzFile f = gzopen(p.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
    gzclose(f);
    return p;
  }
  fs::path dir_;
};

// A current-layout trace: one kernel launched by cudaLaunchKernel, a memcpy, a memset, an event record, a stream
// wait with its cuda_sync event, a cpu_op with shapes and a [memory] alloc/free pair.
const char* kCurrentTrace = R"J({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85018279936,
                        "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
  "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 10, "tid": 11, "ts": 100.5, "dur": 50,
     "args": {"External id": 5, "Input Dims": [[2, 3], [2, 3], []], "Input type": ["float", "float", "Scalar"]}},
    {"ph": "X", "cat": "kernel", "name": "add_kernel", "pid": 0, "tid": 7, "ts": 1000.25, "dur": 2.5,
     "args": {"External id": 5, "device": 0, "stream": 7, "correlation": 42, "registers per thread": 16,
              "shared memory": 1024, "grid": [4, 2, 1], "block": [256, 1, 1]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 120, "dur": 8,
     "args": {"External id": 5, "correlation": 42}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 0, "tid": 8, "ts": 900,
     "dur": 3, "args": {"device": 0, "stream": 8, "correlation": 41, "bytes": 4096}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 10, "tid": 11, "ts": 110, "dur": 5,
     "args": {"correlation": 41}},
    {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 1100, "dur": 1,
     "args": {"device": 0, "stream": 7, "correlation": 43, "bytes": 512}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaEventRecord", "pid": 10, "tid": 11, "ts": 130, "dur": 1,
     "args": {"correlation": 44}},
    {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 8, "ts": 1200, "dur": 1,
     "args": {"cuda_sync_kind": "Stream Wait Event", "wait_on_stream": 7, "wait_on_cuda_event_record_corr_id": 44,
              "stream": 8, "correlation": 45, "device": 0}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamWaitEvent", "pid": 10, "tid": 11, "ts": 140, "dur": 1,
     "args": {"correlation": 45}},
    {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 10, "tid": 11, "ts": 90,
     "args": {"Addr": 140000000000, "Bytes": 2048, "Device Id": 0, "Device Type": 1}},
    {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 10, "tid": 11, "ts": 2000,
     "args": {"Addr": 140000000000, "Bytes": -2048, "Device Id": 0, "Device Type": 1}},
    {"ph": "M", "name": "process_name", "pid": 10, "tid": 0, "args": {"name": "python"}},
    {"ph": "s", "cat": "ac2g", "id": 42, "pid": 10, "tid": 11, "ts": 120}
  ]
})J";

TEST_F(KinetoImporterTest, MapsEveryRecordKind) {
  auto r = importTrace(write("current.json", kCurrentTrace));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const core::Trace& t = r->trace;
  ASSERT_EQ(t.launches.size(), 1u);
  const core::Launch& l = t.launches[0];
  EXPECT_EQ(l.gpu_start_ns, 1000250);
  EXPECT_EQ(l.gpu_end_ns, 1002750);
  EXPECT_EQ(l.api_start_ns, 120000);
  EXPECT_EQ(l.api_end_ns, 128000);
  EXPECT_EQ(l.thread_id, 11);
  EXPECT_EQ(l.correlation_id, 42);
  EXPECT_EQ(l.grid, (core::Dim3{4, 2, 1}));
  EXPECT_EQ(l.block, (core::Dim3{256, 1, 1}));
  EXPECT_EQ(l.registers_per_thread, 16u);
  EXPECT_EQ(l.static_shared_bytes, 1024u);
  ASSERT_EQ(t.functions.size(), 1u);
  EXPECT_EQ(t.functions[0].demangled_name, "add_kernel");
  EXPECT_EQ(r->launch_external_ids.at(l.id), 5);

  ASSERT_EQ(t.memcpys.size(), 1u);
  EXPECT_EQ(t.memcpys[0].kind, core::MemcpyKind::kDeviceToDevice);
  EXPECT_EQ(t.memcpys[0].bytes, 4096u);
  EXPECT_TRUE(t.memcpys[0].async);
  ASSERT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.memsets[0].bytes, 512u);
  EXPECT_EQ(t.memsets[0].stream_id, l.stream_id);

  ASSERT_EQ(t.streams.size(), 2u);
  EXPECT_EQ(t.streams[0].native_id, 7);
  EXPECT_EQ(t.streams[1].native_id, 8);
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(t.devices[0].sm_count, 132);
  EXPECT_EQ(t.devices[0].memory_bytes, 85018279936u);
  ASSERT_EQ(t.processes.size(), 1u);
  EXPECT_EQ(t.processes[0].pid, 10);
  EXPECT_EQ(t.processes[0].name, "python");

  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.events[0].stream_id, t.streams[0].id);  // recorded on stream 7
  ASSERT_EQ(t.syncs.size(), 1u);
  EXPECT_EQ(t.syncs[0].kind, core::SyncKind::kStreamWaitEvent);
  EXPECT_EQ(t.syncs[0].stream_id, t.streams[1].id);  // stream 8 waits
  EXPECT_EQ(t.syncs[0].event_id, t.events[0].id);
  EXPECT_EQ(t.syncs[0].start_ns, 140000);  // host call time

  ASSERT_EQ(t.allocations.size(), 1u);
  EXPECT_EQ(t.allocations[0].address, 140000000000u);
  EXPECT_EQ(t.allocations[0].size, 2048u);
  EXPECT_EQ(t.allocations[0].alloc_ns, 90000);
  EXPECT_EQ(t.allocations[0].free_ns, 2000000);

  ASSERT_EQ(r->cpu_ops.size(), 1u);
  const CpuOp& op = r->cpu_ops[0];
  EXPECT_EQ(op.name, "aten::add");
  EXPECT_EQ(op.external_id, 5);
  EXPECT_EQ(op.start_ns, 100500);
  EXPECT_EQ(op.input_dims, (std::vector<std::vector<int64_t>>{{2, 3}, {2, 3}, {}}));
  EXPECT_EQ(op.input_types, (std::vector<std::string>{"float", "float", "Scalar"}));
  EXPECT_TRUE(r->problems.empty()) << r->problems.front().name;
}

// The 2021 layout (PyTorch 1.8-1.9): capitalised categories, "stream 7" tids, lower-case "external id".
TEST_F(KinetoImporterTest, Reads2021Layout) {
  const std::string text = R"J({"schemaVersion": 1, "traceEvents": [
    {"ph": "X", "cat": "Operator", "name": "aten::mm", "pid": 1, "tid": "1", "ts": 5, "dur": 10,
     "args": {"external id": 3, "Input Dims": [[4, 4], [4, 4]]}},
    {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": "1", "ts": 6, "dur": 3,
     "args": {"correlation": 9, "external id": 3}},
    {"ph": "X", "cat": "Kernel", "name": "gemm", "pid": 0, "tid": "stream 7", "ts": 20, "dur": 4,
     "args": {"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 9, "external id": 3,
              "registers per thread": 32, "shared memory": 0, "grid": [1, 1, 1], "block": [32, 1, 1]}},
    {"ph": "X", "cat": "Kernel", "name": "gemm", "pid": 0, "tid": "stream 13", "ts": 30, "dur": 4,
     "args": {"device": 0, "correlation": 10, "grid": [1, 1, 1], "block": [32, 1, 1]}},
    {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": "stream 7",
     "ts": 2, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 8, "bytes": 64}},
    {"ph": "X", "cat": "Memset", "name": "Memset (Device)", "pid": 0, "tid": "stream 7",
     "ts": 40, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 11, "bytes": 16}}
  ]})J";
  auto r = importTrace(writeGz("old.json.gz", text));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const core::Trace& t = r->trace;
  ASSERT_EQ(t.launches.size(), 2u);
  ASSERT_EQ(t.streams.size(), 2u);
  EXPECT_EQ(t.streams[0].native_id, 7);
  EXPECT_EQ(t.streams[1].native_id, 13);  // from tid "stream 13" (no stream arg)
  EXPECT_EQ(t.launches[0].api_start_ns, 6000);
  EXPECT_EQ(t.launches[0].thread_id, 1);
  EXPECT_EQ(r->launch_external_ids.at(1), 3);
  EXPECT_EQ(t.memcpys.size(), 1u);
  EXPECT_EQ(t.memcpys[0].kind, core::MemcpyKind::kHostToDevice);
  EXPECT_EQ(t.memsets.size(), 1u);
  ASSERT_EQ(r->cpu_ops.size(), 1u);
  EXPECT_EQ(r->cpu_ops[0].external_id, 3);
  EXPECT_EQ(r->cpu_ops[0].input_dims.size(), 2u);
  EXPECT_TRUE(r->cpu_ops[0].input_types.empty());
  EXPECT_EQ(t.devices.size(), 1u);  // no deviceProperties: created nameless
  EXPECT_EQ(r->problemCount("kineto_device_without_properties"), 1);
  EXPECT_EQ(r->problemCount("kineto_kernel_without_api"), 1);
}

// The streaming scanner: strings holding brackets, commas and escaped quotes, members before and after
// traceEvents, and enough text (> 3 MiB) that chunk and batch boundaries fall inside strings and events.
TEST_F(KinetoImporterTest, StreamingScannerIsNotFooledByStringsOrBoundaries) {
  const std::string filler(997, 'x');  // an odd length so that boundaries land everywhere
  std::string text = R"J({"distributedInfo": {"note": "]}[{,\"", "rank": 3, "world_size": 8},
  "schemaVersion": 1, "traceEvents": [)J";
  const int kEvents = 4000;
  for (int i = 0; i < kEvents; ++i) {
    text += i ? ",\n" : "\n";
    text += R"J({"ph": "X", "cat": "kernel", "name": "k\"]},{[\\)J" + std::to_string(i % 3) +
            R"J(", "pid": 0, "tid": 7, "ts": )J" + std::to_string(1000 + i) +
            R"J(, "dur": 1, "args": {"stream": 7, )J" + R"J("correlation": )J" + std::to_string(i + 1) +
            R"J(, "pad": ")J" + filler + R"J(", "grid": [1, 1, 1], "block": [32, 1, 1]}})J";
  }
  text += R"J(], "deviceProperties": [{"id": 0, "name": "GPU \"zero\" [test]", "numSms": 7}],
  "traceName": "t\\n"}
)J";
  ASSERT_GT(text.size(), size_t{3} << 20);
  for (const std::string& p : {write("stream.json", text), writeGz("stream.json.gz", text)}) {
    auto r = importTrace(p);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const core::Trace& t = r->trace;
    ASSERT_EQ(t.launches.size(), static_cast<size_t>(kEvents));
    ASSERT_EQ(t.functions.size(), 3u);
    EXPECT_EQ(t.functions[0].demangled_name, "k\"]},{[\\0");
    for (size_t i = 0; i < t.launches.size(); ++i) {
      EXPECT_EQ(t.launches[i].correlation_id, static_cast<int64_t>(i) + 1);
      EXPECT_EQ(t.launches[i].gpu_start_ns, (1000 + static_cast<int64_t>(i)) * 1000);
    }
    ASSERT_EQ(t.devices.size(), 1u);
    EXPECT_EQ(t.devices[0].name, "GPU \"zero\" [test]");
    EXPECT_EQ(t.devices[0].sm_count, 7);
    EXPECT_EQ(t.metadata.extra.at("kineto.rank"), "3");
    EXPECT_EQ(t.metadata.extra.at("kineto.traceName"), "t\\n");
    // Only what the synthetic events lack: launch calls and register counts.
    ASSERT_EQ(r->problems.size(), 2u);
    EXPECT_EQ(r->problemCount("kineto_kernel_without_api"), kEvents);
    EXPECT_EQ(r->problemCount("kineto_kernel_without_registers"), kEvents);
  }
}

// Mutated copies of a real trace (bytes flipped, spans deleted or duplicated, cuts): every import either works or
// fails with a Status naming the file. Deterministic.
TEST_F(KinetoImporterTest, CorruptedRealTraceNeverCrashes) {
  std::string text;
  {
    gzFile f =
        gzopen((std::string(KFUSE_SHARED_DATA_DIR) + "/kineto/hta_event_sync_multi_stream.json.gz").c_str(), "rb");
    ASSERT_NE(f, nullptr);
    char buf[1 << 14];
    int n = 0;
    while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
    gzclose(f);
  }
  ASSERT_GT(text.size(), 10000u);
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  auto next = [&](uint64_t bound) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state % bound;
  };
  const char kNasty[] = "{}[],:\"\\0-e.9 x";
  int ok = 0, failed = 0;
  for (int i = 0; i < 300; ++i) {
    std::string m = text;
    switch (i % 4) {
      case 0:
        for (int k = 0; k < 8; ++k) m[next(m.size())] = kNasty[next(sizeof kNasty - 1)];
        break;
      case 1: {
        const size_t at = next(m.size());
        m.erase(at, next(200));
        break;
      }
      case 2: {
        const size_t at = next(m.size());
        m.insert(at, m.substr(next(m.size()), next(300)));
        break;
      }
      default: m.resize(next(m.size())); break;
    }
    const std::string p = write("m" + std::to_string(i % 8) + (i % 2 ? ".json.gz" : ".json"), "");
    if (i % 2) {
      fs::remove(p);
      writeGz(fs::path(p).filename().string(), m);
    } else {
      std::ofstream(p, std::ios::binary | std::ios::trunc) << m;
    }
    auto r = importTrace(p);
    if (r.ok()) {
      ++ok;
    } else {
      ++failed;
      EXPECT_EQ(r.status().message().rfind(p + ": ", 0), 0u) << r.status().message();
    }
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(failed, 0);
}

TEST_F(KinetoImporterTest, TextAfterTheDocumentIsAnError) {
  const std::string p = write("trailing.json", std::string(kCurrentTrace) + "\n{\"more\": 1}");
  auto r = importTrace(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kBadFormat);
  EXPECT_NE(r.status().message().find("text after the end of the JSON document"), std::string::npos)
      << r.status().message();
}

TEST_F(KinetoImporterTest, BareEventArrayIsAccepted) {
  const std::string text = R"J([
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1,
     "args": {"stream": 7, "correlation": 1, "grid": [1,1,1], "block": [1,1,1]}}
  ])J";
  auto r = importTrace(write("array.json", text));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->trace.launches.size(), 1u);
}

TEST_F(KinetoImporterTest, WrongTypesAreCountedNotFatal) {
  const std::string text = R"J({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": "oops", "dur": 1,
     "args": {"stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": 12, "pid": 0, "tid": 7, "ts": 5, "dur": -3,
     "args": {"stream": "seven", "correlation": [1], "grid": [99999999999, 1, 1], "block": "big",
              "registers per thread": 1e300}},
    {"ph": "X", "cat": "kernel", "name": "ok", "pid": 0, "tid": 7, "ts": 6, "dur": 1,
     "args": {"stream": 7, "correlation": 2, "grid": [1, 1, 1], "block": [1, 1, 1]}},
    17, "text", null,
    {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 8, "dur": 1, "args": "not an object"}
  ]})J";
  auto r = importTrace(write("types.json", text));
  ASSERT_TRUE(r.ok()) << r.status().message();
  // The first kernel has no usable ts and is dropped; the others are kept with their bad fields unknown.
  EXPECT_EQ(r->trace.launches.size(), 3u);
  EXPECT_EQ(r->problemCount("kineto_gpu_event_without_ts"), 1);
  EXPECT_EQ(r->problemCount("kineto_event_not_object"), 3);
  EXPECT_GT(r->problemCount("kineto_bad_field_values"), 5);
  EXPECT_GE(r->problemCount("kineto_kernel_without_launch_config"), 2);
  EXPECT_EQ(r->problemCount("kineto_gpu_event_without_dur"), 1);
  for (const core::Stat& s : r->problems) EXPECT_FALSE(s.description.empty()) << s.name;
}

TEST_F(KinetoImporterTest, HostileNumbersDoNotOverflow) {
  const std::string text = R"J({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 99999999999999999999999, "dur": 1,
     "args": {"stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.5e3, "dur": 0.0015,
     "args": {"stream": 18446744073709551615, "device": -5}},
    {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 3,
     "args": {"Addr": 18446744073709551615, "Bytes": -9223372036854775808, "Device Type": 1}}
  ]})J";
  auto r = importTrace(write("hostile.json", text));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->trace.launches.size(), 1u);
  EXPECT_EQ(r->trace.launches[0].gpu_start_ns, 1500000);
  EXPECT_EQ(r->trace.launches[0].gpu_end_ns, 1500002);
  EXPECT_EQ(r->problemCount("kineto_gpu_event_without_ts"), 1);
  EXPECT_EQ(r->trace.allocations.size(), 1u);
}

TEST_F(KinetoImporterTest, MalformedJsonNamesTheFileAndPlace) {
  const std::string p = write("bad.json", R"J({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1,, }]})J");
  auto r = importTrace(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kBadFormat);
  EXPECT_EQ(r.status().message().rfind(p + ": malformed JSON", 0), 0u) << r.status().message();
}

TEST_F(KinetoImporterTest, TruncatedJsonIsReported) {
  std::string text = kCurrentTrace;
  for (size_t cut : {text.size() / 3, text.size() / 2, text.size() - 5}) {
    const std::string p = write("cut" + std::to_string(cut) + ".json", text.substr(0, cut));
    auto r = importTrace(p);
    ASSERT_FALSE(r.ok()) << cut;
    EXPECT_EQ(r.status().code(), ErrorCode::kBadFormat) << r.status().message();
    EXPECT_EQ(r.status().message().rfind(p + ": ", 0), 0u) << r.status().message();
  }
}

TEST_F(KinetoImporterTest, TruncatedGzipIsReported) {
  // Enough text that the compressed stream is long enough to cut in the middle.
  std::string text = R"J({"traceEvents": [)J";
  for (int i = 0; i < 2000; ++i) {
    text += (i ? "," : "") + std::string(R"J({"ph": "X", "cat": "kernel", "name": "k)J") + std::to_string(i % 97) +
            R"J(", "pid": 0, "tid": 7, "ts": )J" + std::to_string(i * 10) +
            R"J(, "dur": 5, "args": {"stream": 7, "correlation": )J" + std::to_string(i + 1) + "}}";
  }
  text += "]}";
  const std::string full = writeGz("full.json.gz", text);
  ASSERT_TRUE(importTrace(full).ok());
  std::string bytes;
  {
    std::ifstream in(full, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(bytes.size(), 100u);
  const std::string cut = write("cut.json.gz", bytes.substr(0, bytes.size() / 2));
  auto r = importTrace(cut);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kBadFormat);
  EXPECT_EQ(r.status().message().rfind(cut + ": truncated gzip stream", 0), 0u) << r.status().message();

  // Only the 8-byte trailer missing: the data is complete but the stream is not.
  const std::string no_trailer = write("notrailer.json.gz", bytes.substr(0, bytes.size() - 8));
  auto t = importTrace(no_trailer);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("truncated gzip"), std::string::npos) << t.status().message();

  // Corrupt bytes in the middle.
  std::string corrupt = bytes;
  for (size_t i = 20; i < 60; ++i) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  const std::string bad = write("corrupt.json.gz", corrupt);
  auto c = importTrace(bad);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kBadFormat);
  EXPECT_EQ(c.status().message().rfind(bad + ": ", 0), 0u) << c.status().message();
}

TEST_F(KinetoImporterTest, SizeLimitGuardsAgainstGzipBombs) {
  std::string text = R"J({"traceEvents": [)J" + std::string(1 << 20, ' ') + "]}";
  const std::string p = writeGz("bomb.json.gz", text);
  ImportOptions o;
  o.max_json_bytes = 64 * 1024;
  auto r = importTrace(p, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kBadFormat);
  EXPECT_NE(r.status().message().find("max_json_bytes"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().rfind(p + ": ", 0), 0u);
}

TEST_F(KinetoImporterTest, NotATraceObject) {
  const std::string p = write("other.json", R"J({"traceName": "x", "displayTimeUnit": "ms"})J");
  auto r = importTrace(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kBadFormat);
  EXPECT_EQ(r.status().message(), p + ": not a Chrome/Kineto trace: no \"traceEvents\" array");

  const std::string q = write("events_obj.json", R"J({"traceEvents": {"a": 1}})J");
  auto s = importTrace(q);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), q + ": \"traceEvents\" is not an array");
}

TEST_F(KinetoImporterTest, DeeplyNestedValuesAreSkippedWithoutHarm) {
  // 5000 levels inside an argument kfuse does not read, and inside Input Dims (read two levels deep).
  std::string deep = std::string(5000, '[') + std::string(5000, ']');
  std::string text =
      R"J({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "op", "ts": 1, "dur": 1, "args": {"x": )J" + deep +
      R"J(, "Input Dims": )J" + deep + R"J(}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 2, "dur": 1, "args": {"stream": 7}}]})J";
  auto r = importTrace(write("deep.json", text));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->trace.launches.size(), 1u);
  ASSERT_EQ(r->cpu_ops.size(), 1u);
  EXPECT_EQ(r->cpu_ops[0].input_dims, (std::vector<std::vector<int64_t>>{{}}));
}

TEST_F(KinetoImporterTest, GraphKernelsSharingOneLaunchCall) {
  // cudaGraphLaunch: several kernels carry the correlation id of one call.
  const std::string text = R"J({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 2, "ts": 10, "dur": 5,
     "args": {"correlation": 77}},
    {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 30, "dur": 1,
     "args": {"stream": 7, "correlation": 77, "grid": [1,1,1], "block": [1,1,1]}},
    {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 20, "dur": 1,
     "args": {"stream": 7, "correlation": 77, "grid": [1,1,1], "block": [1,1,1]}}
  ]})J";
  auto r = importTrace(write("graph.json", text));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const core::Trace& t = r->trace;
  ASSERT_EQ(t.launches.size(), 2u);
  // Numbered in GPU start order: b (ts 20) first.
  EXPECT_EQ(t.functions.at(static_cast<size_t>(t.launches[0].function_id - 1)).demangled_name, "b");
  EXPECT_EQ(t.launches[0].api_start_ns, 10000);
  EXPECT_EQ(t.launches[1].api_start_ns, 10000);
}

}  // namespace
}  // namespace kfuse::analyzer
