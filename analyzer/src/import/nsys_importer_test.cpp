// The Nsight Systems importer on exports built by the tests with the shapes seen across schema versions:
// _V<n>-suffixed tables, names as StringIds references or as text, missing columns, missing tables, and broken
// files.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>

#include "kfuse/analyzer/importer.h"

namespace kfuse::analyzer {
namespace {

namespace fs = std::filesystem;

class NsysImporterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kfuse_nsys_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string makeDb(const std::string& name, const std::string& sql) {
    const std::string p = (dir_ / name).string();
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
    return p;
  }
  fs::path dir_;
};

// A newer-style export: _V2 tables beside stale unsuffixed ones, StringIds, runtime join, an event record and a
// wait on it, a context sync without an API row, a memset, and devices described only by TARGET_INFO_CUDA_DEVICE.
const char* kNewSchema = R"(
CREATE TABLE META_DATA_EXPORT(name TEXT, value TEXT);
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.26.0');
CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO StringIds VALUES (1, '_Z3fooPf'), (2, 'foo(float*)'), (3, 'foo'), (4, 'cudaLaunchKernel_v7000'),
  (5, 'cudaEventRecord_v3020'), (6, 'cudaStreamWaitEvent_v3020'), (7, 'cudaMemsetAsync_v3020'),
  (8, '_Z3barv'), (9, 'bar()');
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
  correlationId INTEGER, demangledName INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2, 0, 7, 1, 2);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL_V2(start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER,
  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER,
  mangledName INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER,
  blockZ INTEGER, registersPerThread INTEGER, staticSharedMemory INTEGER, dynamicSharedMemory INTEGER,
  newColumnFromTheFuture INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL_V2 VALUES
  (2000, 3000, 1, 1, 13, 10, 1000 * 16777216, 2, 3, 1, 8, 1, 1, 128, 1, 1, 40, 256, 1024, 0),
  (1000, 1500, 1, 1, 14, 11, 1000 * 16777216, 9, NULL, 8, 1, 1, 1, 32, 1, 1, 8, 0, 0, 0);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER, end INTEGER, eventClass INTEGER, globalTid INTEGER,
  correlationId INTEGER, nameId INTEGER, returnValue INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (900, 950, 0, 1000 * 16777216 + 1001, 10, 4, 0),
  (500, 520, 0, 1000 * 16777216 + 1001, 11, 4, 0),
  (960, 970, 0, 1000 * 16777216 + 1001, 12, 5, 0),
  (980, 990, 0, 1000 * 16777216 + 1001, 15, 6, 0),
  (400, 410, 0, 1000 * 16777216 + 1001, 16, 7, 0);
CREATE TABLE CUPTI_ACTIVITY_KIND_CUDA_EVENT(deviceId INTEGER, contextId INTEGER, streamId INTEGER,
  correlationId INTEGER, globalPid INTEGER, eventId INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_CUDA_EVENT VALUES (1, 1, 13, 12, 0, 77);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION_V3(start INTEGER, end INTEGER, deviceId INTEGER,
  contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, syncType INTEGER,
  eventId INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION_V3 VALUES
  (3100, 3200, 1, 1, 14, 15, 0, 2, 77),
  (4000, 4100, 1, 1, 4294967295, 20, 0, 4, 4294967295);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET(start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER,
  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, value INTEGER, bytes INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (600, 700, 1, 1, 13, 16, 0, 255, 4096);
CREATE TABLE TARGET_INFO_CUDA_DEVICE(gpuId INTEGER, cudaId INTEGER, pid INTEGER, uuid TEXT,
  numMultiprocessors INTEGER);
INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (0, 1, 1000, 'GPU-1', 132);
CREATE TABLE PROCESSES(globalPid INTEGER, pid INTEGER, name TEXT);
INSERT INTO PROCESSES VALUES (1000 * 16777216, 1000, 'app');
)";

TEST_F(NsysImporterTest, ReadsSuffixedTablesByColumnName) {
  auto r = importTrace(makeDb("new.sqlite", kNewSchema));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->format, "nsys");
  const core::Trace& t = r->trace;
  EXPECT_EQ(t.metadata.extra.at("nsys.schema_version"), "3.26.0");
  ASSERT_EQ(t.launches.size(), 2u);  // from _V2, not the stale unsuffixed table
  // GPU start order: bar (1000) before foo (2000).
  const core::Launch& bar = t.launches[0];
  const core::Launch& foo = t.launches[1];
  EXPECT_EQ(t.functions.at(static_cast<size_t>(bar.function_id - 1)).mangled_name, "_Z3barv");
  EXPECT_EQ(t.functions.at(static_cast<size_t>(bar.function_id - 1)).demangled_name, "bar()");
  EXPECT_EQ(t.functions.at(static_cast<size_t>(foo.function_id - 1)).mangled_name, "_Z3fooPf");
  EXPECT_EQ(t.functions.at(static_cast<size_t>(foo.function_id - 1)).demangled_name, "foo(float*)");
  EXPECT_EQ(foo.grid, (core::Dim3{8, 1, 1}));
  EXPECT_EQ(foo.block, (core::Dim3{128, 1, 1}));
  EXPECT_EQ(foo.registers_per_thread, 40u);
  EXPECT_EQ(foo.static_shared_bytes, 256u);
  EXPECT_EQ(foo.dynamic_shared_bytes, 1024u);
  EXPECT_EQ(foo.api_start_ns, 900);
  EXPECT_EQ(foo.api_end_ns, 950);
  EXPECT_EQ(foo.thread_id, 1001);
  EXPECT_EQ(foo.correlation_id, 10);
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].ordinal, 1);
  EXPECT_EQ(t.devices[0].sm_count, 132);
  ASSERT_EQ(t.processes.size(), 1u);
  EXPECT_EQ(t.processes[0].pid, 1000);
  EXPECT_EQ(t.processes[0].name, "app");

  ASSERT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.memsets[0].value, 255u);
  EXPECT_EQ(t.memsets[0].bytes, 4096u);
  EXPECT_TRUE(t.memsets[0].async);

  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.events[0].record_ns, 960);  // no start column: the record call's time
  ASSERT_EQ(t.syncs.size(), 2u);
  EXPECT_EQ(t.syncs[0].kind, core::SyncKind::kStreamWaitEvent);
  EXPECT_EQ(t.syncs[0].event_id, t.events[0].id);
  EXPECT_EQ(t.syncs[0].start_ns, 980);
  EXPECT_EQ(t.syncs[1].kind, core::SyncKind::kContext);
  EXPECT_EQ(t.syncs[1].stream_id, core::kNoId);
  EXPECT_EQ(t.syncs[1].start_ns, 4000);
  std::map<core::Id, int64_t> native;
  for (const core::Stream& s : t.streams) native[s.id] = s.native_id;
  EXPECT_EQ(native[foo.stream_id], 13);
  EXPECT_EQ(native[t.syncs[0].stream_id], 14);
  EXPECT_EQ(native[t.events[0].stream_id], 13);
}

TEST_F(NsysImporterTest, OldSchemaWithTextNamesAndMissingColumns) {
  const std::string p = makeDb("old.sqlite", R"(
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
  demangledName TEXT, gridX INTEGER, blockX INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 0, 7, 'k1', 4, 64), (30, 40, 0, 7, 'k1', 4, 64),
  (50, 60, 0, 9, 'k2', 0, 64);
CREATE TABLE TARGET_INFO_GPU(id INTEGER, name TEXT, totalMemory INTEGER, smCount INTEGER);
INSERT INTO TARGET_INFO_GPU VALUES (0, 'Tesla V100-SXM2-16GB', 16945709056, 80);
)");
  auto r = importTrace(p);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const core::Trace& t = r->trace;
  ASSERT_EQ(t.launches.size(), 3u);
  EXPECT_EQ(t.functions.size(), 2u);
  EXPECT_EQ(t.functions[0].demangled_name, "k1");
  EXPECT_EQ(t.launches[0].grid, (core::Dim3{4, 1, 1}));
  EXPECT_EQ(t.launches[0].api_start_ns, core::kNoTime);
  EXPECT_EQ(t.launches[2].grid, (core::Dim3{1, 1, 1}));  // gridX 0 is impossible
  EXPECT_EQ(r->problemCount("nsys_kernel_bad_launch_config"), 1);
  EXPECT_EQ(r->problemCount("nsys_missing_column:CUPTI_ACTIVITY_KIND_KERNEL.registersPerThread"), 1);
  EXPECT_EQ(r->problemCount("nsys_missing_column:CUPTI_ACTIVITY_KIND_KERNEL.correlationId"), 1);
  EXPECT_EQ(r->problemCount("nsys_no_runtime_table"), 1);
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].name, "Tesla V100-SXM2-16GB");
  EXPECT_EQ(t.devices[0].sm_count, 80);
  EXPECT_EQ(t.streams.size(), 2u);
}

TEST_F(NsysImporterTest, ExportWithoutKernelsSaysSo) {
  const std::string p = makeDb("nokernels.sqlite", R"(
CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_GPU(id INTEGER, name TEXT);
INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA A100-SXM4-40GB');
)");
  auto r = importTrace(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(r.status().message(), p + ": no GPU kernels in this trace (CPU-only profile?)");
}

TEST_F(NsysImporterTest, UnrelatedSqliteIsNotMistakenForAnExport) {
  const std::string p = makeDb("other.sqlite", "CREATE TABLE t(x); INSERT INTO t VALUES (1);");
  auto r = importTrace(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kBadFormat);
  EXPECT_NE(r.status().message().find("neither a kfuse trace nor an Nsight Systems export"), std::string::npos)
      << r.status().message();
}

TEST_F(NsysImporterTest, TruncatedExportIsAnErrorNamingTheFile) {
  const std::string src = std::string(KFUSE_SHARED_DATA_DIR) + "/nsys/pipit_saxpy_a100.sqlite";
  std::string bytes;
  {
    std::ifstream in(src, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (size_t cut : {size_t{50}, size_t{4096}, bytes.size() / 2}) {
    const std::string p = (dir_ / ("cut" + std::to_string(cut) + ".sqlite")).string();
    std::ofstream(p, std::ios::binary) << bytes.substr(0, cut);
    auto r = importTrace(p);
    ASSERT_FALSE(r.ok()) << cut;
    EXPECT_NE(r.status().message().find(p), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace kfuse::analyzer
