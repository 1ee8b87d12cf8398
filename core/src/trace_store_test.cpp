#include "kfuse/core/trace_store.h"
#include "kfuse/core/cancel.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <array>
#include <filesystem>
#include <fstream>

#include "trace_builders.h"

namespace kfuse::core {
namespace {

namespace fs = std::filesystem;

class TraceStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kfuse_store_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  void writeTrace(const std::string& file, const Trace& t, TraceWriterOptions options = {}) {
    auto w = TraceWriter::create(file, options);
    ASSERT_TRUE(w.ok()) << w.status().message();
    ASSERT_TRUE((*w)->write(t).ok());
    ASSERT_TRUE((*w)->close().ok());
  }

  static void writeBytes(const std::string& file, const std::string& bytes) {
    std::ofstream(file, std::ios::binary) << bytes;
  }

  static void execSql(const std::string& file, const char* sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_close(db);
  }

  fs::path dir_;
};

TEST_F(TraceStoreTest, RoundTripsEveryRecordKind) {
  const Trace original = testing::makeEveryKindTrace();
  writeTrace(path("t.sqlite"), original);
  auto reader = TraceReader::open(path("t.sqlite"));
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  EXPECT_EQ((*reader)->schemaVersion(), kTraceSchemaVersion);
  auto back = (*reader)->readAll();
  ASSERT_TRUE(back.ok()) << back.status().message();
  // Field by field first, for readable failures; then the whole.
  EXPECT_EQ(back->metadata, original.metadata);
  EXPECT_EQ(back->processes, original.processes);
  EXPECT_EQ(back->devices, original.devices);
  EXPECT_EQ(back->contexts, original.contexts);
  EXPECT_EQ(back->streams, original.streams);
  EXPECT_EQ(back->functions, original.functions);
  EXPECT_EQ(back->launches, original.launches);
  EXPECT_EQ(back->allocations, original.allocations);
  EXPECT_EQ(back->memcpys, original.memcpys);
  EXPECT_EQ(back->memsets, original.memsets);
  EXPECT_EQ(back->syncs, original.syncs);
  EXPECT_EQ(back->events, original.events);
  EXPECT_EQ(back->nvtx_ranges, original.nvtx_ranges);
  EXPECT_EQ(back->metrics, original.metrics);
  EXPECT_EQ(back->stats, original.stats);
  EXPECT_EQ(back->graphs, original.graphs);
  EXPECT_EQ(back->graph_nodes, original.graph_nodes);
  EXPECT_EQ(back->graph_edges, original.graph_edges);
  EXPECT_EQ(back->graph_execs, original.graph_execs);
  EXPECT_EQ(back->graph_launches, original.graph_launches);
  ASSERT_EQ(back->modules.size(), original.modules.size());
  EXPECT_EQ(back->modules[0], original.modules[0]);
  EXPECT_EQ(back->modules[1], original.modules[1]);
  EXPECT_EQ(back->modules[2], original.modules[2]);
  EXPECT_EQ(*back, original);
}

TEST_F(TraceStoreTest, LaunchClusterRoundTripsAndAnOlderFileWithoutItReadsNoClusters) {
  const Trace original = testing::makeEveryKindTrace();
  ASSERT_EQ(original.launches[1].cluster, (Dim3{2, 1, 1}));
  writeTrace(path("t.sqlite"), original);
  {
    auto reader = TraceReader::open(path("t.sqlite"));
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    auto back = (*reader)->readAll();
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->launches[1].cluster, (Dim3{2, 1, 1}));
    EXPECT_EQ(back->launches[0].cluster, (Dim3{1, 1, 1}));
  }
  // A trace written before launches had clusters has no such columns: it reads as launched without them.
  execSql(path("t.sqlite"),
          "ALTER TABLE launch DROP COLUMN cluster_x; ALTER TABLE launch DROP COLUMN cluster_y; "
          "ALTER TABLE launch DROP COLUMN cluster_z;");
  auto reader = TraceReader::open(path("t.sqlite"));
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto back = (*reader)->readAll();
  ASSERT_TRUE(back.ok()) << back.status().message();
  Trace expected = original;
  expected.launches[1].cluster = Dim3{};
  EXPECT_EQ(*back, expected);
}

TEST_F(TraceStoreTest, StoresEachModuleImageOnce) {
  writeTrace(path("t.sqlite"), testing::makeEveryKindTrace());
  auto reader = TraceReader::open(path("t.sqlite"));
  ASSERT_TRUE(reader.ok());
  auto counts = (*reader)->counts();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->modules, 3);
  EXPECT_EQ(counts->module_images, 1);  // modules 1 and 2 share an image; 3 has none
  EXPECT_EQ(counts->launches, 3);
  EXPECT_EQ(counts->pointer_args, 3);
  EXPECT_EQ(counts->metrics, 3);
  EXPECT_EQ(counts->stats, 2);
}

TEST_F(TraceStoreTest, ComputesModuleHashWhenMissing) {
  auto w = TraceWriter::create(path("t.sqlite"));
  ASSERT_TRUE(w.ok());
  Module m;
  m.id = 1;
  m.kind = ImageKind::kPtx;
  m.image = {'a', 'b', 'c'};
  ASSERT_TRUE((*w)->add(m).ok());
  ASSERT_TRUE((*w)->close().ok());
  auto t = (*TraceReader::open(path("t.sqlite")))->readAll();
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->modules.size(), 1u);
  EXPECT_EQ(t->modules[0].hash, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");  // SHA-256("abc")
}

// The GUI's Cancel (core/cancel.h) stops the reader: readAll and the streaming reader return the cancelled status.
TEST_F(TraceStoreTest, ReadingStopsWhenCancelled) {
  auto w = TraceWriter::create(path("t.sqlite"), {.batch_rows = 100});
  ASSERT_TRUE(w.ok());
  for (Id i = 1; i <= 10000; ++i) ASSERT_TRUE((*w)->add(testing::makeLaunch(i, static_cast<int>(i % 3))).ok());
  ASSERT_TRUE((*w)->close().ok());
  auto reader = TraceReader::open(path("t.sqlite"));
  ASSERT_TRUE(reader.ok());
  std::atomic<bool> flag{false};
  const CancelScope scope(&flag);
  int seen = 0;
  const Status streamed = (*reader)->forEachLaunch([&](const Launch&) {
    if (++seen == 5000) flag = true;  // pressed halfway through
    return true;
  });
  EXPECT_EQ(streamed.code(), ErrorCode::kCancelled);
  EXPECT_LE(seen, 4096 * 2);
  auto all = (*reader)->readAll();
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().code(), ErrorCode::kCancelled);
  flag = false;
  EXPECT_TRUE((*reader)->readAll().ok());
}

TEST_F(TraceStoreTest, StreamingReaderVisitsLaunchesInOrderAndStopsEarly) {
  auto w = TraceWriter::create(path("t.sqlite"), {.batch_rows = 100});
  ASSERT_TRUE(w.ok());
  for (Id i = 1; i <= 1000; ++i) ASSERT_TRUE((*w)->add(testing::makeLaunch(i, static_cast<int>(i % 3))).ok());
  ASSERT_TRUE((*w)->close().ok());
  auto reader = TraceReader::open(path("t.sqlite"));
  ASSERT_TRUE(reader.ok());
  Id expected = 1;
  ASSERT_TRUE((*reader)
                  ->forEachLaunch([&](const Launch& l) {
                    EXPECT_EQ(l, testing::makeLaunch(expected, static_cast<int>(expected % 3)));
                    ++expected;
                    return true;
                  })
                  .ok());
  EXPECT_EQ(expected, 1001);
  int seen = 0;
  ASSERT_TRUE((*reader)->forEachLaunch([&](const Launch&) { return ++seen < 10; }).ok());
  EXPECT_EQ(seen, 10);
}

TEST_F(TraceStoreTest, AllocationFreeTimeCanBeSetLater) {
  auto w = TraceWriter::create(path("t.sqlite"));
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->add(Allocation{1, kNoId, 0x1000, 256, AllocationKind::kDevice, 10, kNoTime}).ok());
  ASSERT_TRUE((*w)->setAllocationFreed(1, 99).ok());
  ASSERT_TRUE((*w)->close().ok());
  auto t = (*TraceReader::open(path("t.sqlite")))->readAll();
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->allocations.at(0).free_ns, 99);
}

TEST_F(TraceStoreTest, CommittedBatchesAreReadableWhileWriterIsOpen) {
  // What a recording killed mid-run leaves behind: committed batches are there, the open one is not.
  auto w = TraceWriter::create(path("t.sqlite"), {.batch_rows = 10});
  ASSERT_TRUE(w.ok());
  for (Id i = 1; i <= 25; ++i) ASSERT_TRUE((*w)->add(testing::makeLaunch(i, 0)).ok());
  auto reader = TraceReader::open(path("t.sqlite"));
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto counts = (*reader)->counts();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->launches, 20);
  ASSERT_TRUE((*w)->flush().ok());
  EXPECT_EQ((*reader)->counts()->launches, 25);
}

TEST_F(TraceStoreTest, RefusesToOverwriteUnlessAsked) {
  writeTrace(path("t.sqlite"), testing::makeEveryKindTrace());
  auto again = TraceWriter::create(path("t.sqlite"));
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("already exists"), std::string::npos);
  auto forced = TraceWriter::create(path("t.sqlite"), {.overwrite = true});
  ASSERT_TRUE(forced.ok()) << forced.status().message();
  ASSERT_TRUE((*forced)->close().ok());
  EXPECT_EQ((*TraceReader::open(path("t.sqlite")))->counts()->launches, 0);
}

TEST_F(TraceStoreTest, WriterReportsUnwritableLocation) {
  auto w = TraceWriter::create(path("no/such/dir/t.sqlite"));
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("no/such/dir/t.sqlite"), std::string::npos);
}

TEST_F(TraceStoreTest, WriterReportsDuplicateIds) {
  auto w = TraceWriter::create(path("t.sqlite"));
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->add(testing::makeLaunch(1)).ok());
  Status s = (*w)->add(testing::makeLaunch(1));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("UNIQUE"), std::string::npos) << s.message();
}

TEST_F(TraceStoreTest, PointerArgsViewGivesOneRowPerPointerToPlainSql) {
  writeTrace(path("t.sqlite"), testing::makeEveryKindTrace());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path("t.sqlite").c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT launch_id, param_index, address, allocation_id, offset FROM launch_pointer_arg "
                               "ORDER BY launch_id, param_index",
                               -1, &st, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  std::vector<std::vector<int64_t>> rows;
  while (sqlite3_step(st) == SQLITE_ROW) {
    rows.push_back({sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
                    sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 3),
                    sqlite3_column_int64(st, 4)});
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  const Launch l1 = testing::makeLaunch(1);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], (std::vector<int64_t>{1, 0, static_cast<int64_t>(l1.pointer_args[0].address), 1,
                                           static_cast<int64_t>(l1.pointer_args[0].offset)}));
  EXPECT_EQ(rows[1][0], 1);
  EXPECT_EQ(rows[1][1], 1);
  EXPECT_EQ(rows[2][0], 3);
  EXPECT_EQ(rows[2][3], -1);  // unresolved pointer: NULL allocation
}

TEST_F(TraceStoreTest, MalformedPointerArgsAreReportedWithTheLaunch) {
  writeTrace(path("t.sqlite"), testing::makeEveryKindTrace());
  for (const char* bad :
       {"[[0,1,2", "[[0,1,2,3]]x", "[[-99999999999,1,2,3]]", "[[--1,1,2,3]]", "[[0,1,\"a\",3]]", "{}", ""}) {
    execSql(path("t.sqlite"), ("UPDATE launch SET pointer_args = '" + std::string(bad) + "' WHERE id = 3").c_str());
    auto r = TraceReader::open(path("t.sqlite"));
    ASSERT_TRUE(r.ok());
    auto t = (*r)->readAll();
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_NE(t.status().message().find("launch 3: malformed pointer_args"), std::string::npos) << t.status().message();
  }
}

// A pointer found inside a struct argument keeps its byte offset in the struct: a fifth element in SQLite, the
// view's field_offset column (NULL for a plain pointer argument), and it reads back as written.
TEST_F(TraceStoreTest, PointersInsideStructArgumentsKeepTheirFieldOffset) {
  Trace t = testing::makeEveryKindTrace();
  t.launches[0].pointer_args.push_back(PointerArg{2, t.launches[0].pointer_args[0].address, 1, 0, 8});
  writeTrace(path("t.sqlite"), t);
  auto r = TraceReader::open(path("t.sqlite"));
  ASSERT_TRUE(r.ok());
  auto back = (*r)->readAll();
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->launches[0].pointer_args, t.launches[0].pointer_args);
  EXPECT_EQ(back->launches[0].pointer_args.front().field_offset, -1);
  EXPECT_EQ(back->launches[0].pointer_args.back().field_offset, 8);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path("t.sqlite").c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT param_index, field_offset FROM launch_pointer_arg WHERE launch_id = 1", -1,
                               &st, nullptr),
            SQLITE_OK);
  std::vector<std::pair<int64_t, int64_t>> rows;
  while (sqlite3_step(st) == SQLITE_ROW) {
    rows.emplace_back(sqlite3_column_int64(st, 0),
                      sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 1));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.back(), (std::pair<int64_t, int64_t>{2, 8}));
  EXPECT_EQ(rows.front().second, -1);
  // A sixth element, or a field offset past any struct, is a damaged row.
  for (const char* bad : {"[[0,1,2,3,8,9]]", "[[0,1,2,3,99999]]", "[[0,1,2,3,]]"}) {
    execSql(path("t.sqlite"), ("UPDATE launch SET pointer_args = '" + std::string(bad) + "' WHERE id = 3").c_str());
    auto again = TraceReader::open(path("t.sqlite"));
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE((*again)->readAll().ok()) << bad;
  }
}

TEST_F(TraceStoreTest, StoresAnalysisReportsAndReturnsTheLatest) {
  writeTrace(path("t.sqlite"), testing::makeEveryKindTrace());
  {
    auto r = TraceReader::open(path("t.sqlite"));
    ASSERT_TRUE(r.ok());
    auto none = (*r)->latestAnalysisReport();
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none->has_value());
  }
  ASSERT_TRUE(storeAnalysisReport(path("t.sqlite"), "h100-sxm", "{\"n\":1}").ok());
  auto second = storeAnalysisReport(path("t.sqlite"), "a100-sxm-80gb", "{\"n\":2}");
  ASSERT_TRUE(second.ok()) << second.status().message();
  auto r = TraceReader::open(path("t.sqlite"));
  ASSERT_TRUE(r.ok());
  auto latest = (*r)->latestAnalysisReport();
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->value_or(""), "{\"n\":2}");
  // The trace itself is untouched.
  EXPECT_EQ((*r)->readAll().value(), testing::makeEveryKindTrace());
}

TEST_F(TraceStoreTest, StoringAReportUpgradesAVersionOneTrace) {
  writeTrace(path("t.sqlite"), testing::makeEveryKindTrace());
  execSql(path("t.sqlite"), "DROP TABLE analysis; PRAGMA user_version=1;");
  {
    auto r = TraceReader::open(path("t.sqlite"));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ((*r)->schemaVersion(), 1);
    EXPECT_FALSE((*r)->latestAnalysisReport()->has_value());
  }
  ASSERT_TRUE(storeAnalysisReport(path("t.sqlite"), "h100-sxm", "{}").ok());
  auto r = TraceReader::open(path("t.sqlite"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->schemaVersion(), kTraceSchemaVersion);
  EXPECT_EQ((*r)->latestAnalysisReport()->value_or(""), "{}");
}

TEST_F(TraceStoreTest, GraphLaunchKernelViewListsTheKernelNodesOfEachReplayWithChildGraphs) {
  writeTrace(path("t.sqlite"), testing::makeEveryKindTrace());
  // Launch 1 runs exec 1 (graph 1: kernel node 1, and node 5 of child graph 2); launch 2 runs exec 2, the update
  // (graph 3: kernel node 6).
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path("t.sqlite").c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT graph_launch_id, graph_node_id, function_id FROM graph_launch_kernel "
                               "ORDER BY graph_launch_id, graph_node_id",
                               -1, &st, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  std::vector<std::array<int64_t, 3>> rows;
  while (sqlite3_step(st) == SQLITE_ROW) {
    rows.push_back({sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2)});
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  const std::vector<std::array<int64_t, 3>> want = {{1, 1, 1}, {1, 5, 3}, {2, 6, 1}};
  EXPECT_EQ(rows, want);
  auto r = TraceReader::open(path("t.sqlite"));
  ASSERT_TRUE(r.ok());
  auto counts = (*r)->counts();
  ASSERT_TRUE(counts.ok()) << counts.status().message();
  EXPECT_EQ(counts->graphs, 3);
  EXPECT_EQ(counts->graph_nodes, 7);
  EXPECT_EQ(counts->graph_edges, 4);
  EXPECT_EQ(counts->graph_execs, 2);
  EXPECT_EQ(counts->graph_launches, 2);
  EXPECT_EQ(counts->graph_launch_kernels, 3);
}

TEST_F(TraceStoreTest, AVersionThreeTraceReadsWithoutGraphsAndStoringAReportAddsTheirTables) {
  Trace t = testing::makeEveryKindTrace();
  writeTrace(path("t.sqlite"), t);
  execSql(path("t.sqlite"),
          "DROP VIEW graph_launch_kernel; DROP TABLE graph_launch; DROP TABLE graph_exec; DROP TABLE graph_edge; "
          "DROP TABLE graph_node; DROP TABLE graph; PRAGMA user_version=3;");
  t.graphs.clear();
  t.graph_nodes.clear();
  t.graph_edges.clear();
  t.graph_execs.clear();
  t.graph_launches.clear();
  {
    auto r = TraceReader::open(path("t.sqlite"));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ((*r)->schemaVersion(), 3);
    auto back = (*r)->readAll();
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(*back, t);
    auto counts = (*r)->counts();
    ASSERT_TRUE(counts.ok()) << counts.status().message();
    EXPECT_EQ(counts->graphs, 0);
    EXPECT_EQ(counts->graph_launch_kernels, 0);
  }
  ASSERT_TRUE(storeAnalysisReport(path("t.sqlite"), "h100-sxm", "{}").ok());
  auto r = TraceReader::open(path("t.sqlite"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->schemaVersion(), kTraceSchemaVersion);
  EXPECT_EQ((*r)->readAll().value(), t);
  // The migration created the tables and the view, empty.
  execSql(path("t.sqlite"), "SELECT count(*) FROM graph_node; SELECT count(*) FROM graph_launch_kernel;");
}

TEST_F(TraceStoreTest, StoringAReportIntoAForeignFileFailsWithoutTouchingIt) {
  execSql(path("other.sqlite"), "CREATE TABLE t(x);");
  const auto before = fs::file_size(path("other.sqlite"));
  auto s = storeAnalysisReport(path("other.sqlite"), "h100-sxm", "{}");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("not a kfuse trace"), std::string::npos);
  EXPECT_EQ(fs::file_size(path("other.sqlite")), before);
}

// ---- bad files: one clear line, the right error kind, never a crash ----

TEST_F(TraceStoreTest, MissingFileIsNotFound) {
  auto r = TraceReader::open(path("absent.sqlite"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.status().message().find("absent.sqlite"), std::string::npos);
}

TEST_F(TraceStoreTest, NonSqliteFileIsRejected) {
  writeBytes(path("x.sqlite"), "{\"traceEvents\": []}\n");
  auto r = TraceReader::open(path("x.sqlite"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kBadFormat);
  EXPECT_NE(r.status().message().find("not a SQLite database"), std::string::npos) << r.status().message();
}

TEST_F(TraceStoreTest, EmptyFileIsRejected) {
  writeBytes(path("empty.sqlite"), "");
  auto r = TraceReader::open(path("empty.sqlite"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kBadFormat);
  EXPECT_NE(r.status().message().find("empty"), std::string::npos);
}

TEST_F(TraceStoreTest, DirectoryIsRejected) {
  auto r = TraceReader::open(dir_.string());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("directory"), std::string::npos);
}

TEST_F(TraceStoreTest, ForeignSqliteDatabaseIsNotAKfuseTrace) {
  execSql(path("other.sqlite"), "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);");
  auto r = TraceReader::open(path("other.sqlite"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kBadFormat);
  EXPECT_NE(r.status().message().find("not a kfuse trace"), std::string::npos) << r.status().message();
}

TEST_F(TraceStoreTest, RealNsightSystemsExportIsNotAKfuseTrace) {
  const std::string nsys = std::string(KFUSE_SHARED_DATA_DIR) + "/nsys/nsysai_mock_rtx3080.sqlite";
  ASSERT_TRUE(fs::exists(nsys)) << "shared data not present (it belongs beside the project, in ../shared): " << nsys;
  auto r = TraceReader::open(nsys);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a kfuse trace"), std::string::npos) << r.status().message();
}

TEST_F(TraceStoreTest, NewerSchemaVersionIsRejectedWithAdvice) {
  writeTrace(path("t.sqlite"), testing::makeEveryKindTrace());
  execSql(path("t.sqlite"), ("PRAGMA user_version=" + std::to_string(kTraceSchemaVersion + 1)).c_str());
  auto r = TraceReader::open(path("t.sqlite"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupportedVersion);
  EXPECT_NE(r.status().message().find("newer"), std::string::npos);
  EXPECT_NE(r.status().message().find("upgrade kfuse"), std::string::npos);
}

TEST_F(TraceStoreTest, TruncatedFileIsRejected) {
  Trace big = testing::makeEveryKindTrace();
  for (Id i = 4; i <= 5000; ++i) big.launches.push_back(testing::makeLaunch(i));
  writeTrace(path("t.sqlite"), big);
  const auto size = fs::file_size(path("t.sqlite"));
  ASSERT_GT(size, 64u * 1024);
  for (uintmax_t keep : {size / 2, uintmax_t{4096}, uintmax_t{100}, uintmax_t{50}}) {
    fs::copy_file(path("t.sqlite"), path("cut.sqlite"), fs::copy_options::overwrite_existing);
    fs::resize_file(path("cut.sqlite"), keep);
    auto r = TraceReader::open(path("cut.sqlite"));
    ASSERT_FALSE(r.ok()) << "kept " << keep << " bytes";
    EXPECT_EQ(r.status().code(), ErrorCode::kBadFormat) << r.status().message();
    EXPECT_NE(r.status().message().find("truncated"), std::string::npos) << r.status().message();
  }
}

TEST_F(TraceStoreTest, CorruptedPagesGiveAnErrorNotACrash) {
  Trace big = testing::makeEveryKindTrace();
  for (Id i = 4; i <= 3000; ++i) big.launches.push_back(testing::makeLaunch(i));
  writeTrace(path("t.sqlite"), big);
  // Overwrite everything past the first page with a pattern: the header still looks right.
  std::fstream f(path("t.sqlite"), std::ios::in | std::ios::out | std::ios::binary);
  const auto size = static_cast<std::streamoff>(fs::file_size(path("t.sqlite")));
  f.seekp(4096);
  std::string junk(static_cast<size_t>(size - 4096), '\xA5');
  f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  f.close();
  auto r = TraceReader::open(path("t.sqlite"));
  if (r.ok()) {
    auto t = (*r)->readAll();
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.status().message().find("t.sqlite"), std::string::npos);
  } else {
    EXPECT_NE(r.status().message().find("t.sqlite"), std::string::npos);
  }
}

TEST(TraceModel, EnumNamesRoundTrip) {
  for (auto v :
       {AccessMode::kUnknown, AccessMode::kNone, AccessMode::kRead, AccessMode::kWrite, AccessMode::kReadWrite}) {
    EXPECT_EQ(parseAccessMode(toString(v)), v);
  }
  for (auto v : {MemcpyKind::kUnknown, MemcpyKind::kHostToDevice, MemcpyKind::kDeviceToHost,
                 MemcpyKind::kDeviceToDevice, MemcpyKind::kHostToHost, MemcpyKind::kPeer}) {
    EXPECT_EQ(parseMemcpyKind(toString(v)), v);
  }
  EXPECT_FALSE(parseImageKind("elf").has_value());
}

TEST(TraceModel, FindsAllocationByAddressAndTime) {
  std::vector<Allocation> allocs = {{1, kNoId, 0x1000, 0x100, AllocationKind::kDevice, 10, 20},
                                    {2, kNoId, 0x1000, 0x100, AllocationKind::kDevice, 30, kNoTime}};
  EXPECT_EQ(findAllocation(allocs, 0x1000, 15)->id, 1);
  EXPECT_EQ(findAllocation(allocs, 0x10ff, 35)->id, 2);
  EXPECT_EQ(findAllocation(allocs, 0x1100, 35), nullptr);
  EXPECT_EQ(findAllocation(allocs, 0x1000, 25), nullptr);
  EXPECT_EQ(findAllocation(allocs, 0x0fff), nullptr);
}

TEST(TraceModel, LaunchDurationNeedsBothTimes) {
  Launch l;
  EXPECT_EQ(l.gpuDurationNs(), kNoTime);
  l.gpu_start_ns = 100;
  l.gpu_end_ns = 350;
  EXPECT_EQ(l.gpuDurationNs(), 250);
  EXPECT_EQ((Dim3{4, 2, 3}.count()), 24u);
}

}  // namespace
}  // namespace kfuse::core
