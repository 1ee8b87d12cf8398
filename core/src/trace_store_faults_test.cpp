// The trace store under faults: a writer killed before it closed, a write that hits a file size limit, an
// output path that is not a regular file.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "kfuse/core/trace_store.h"
#include "temp_dir.h"
#include "trace_builders.h"

namespace kfuse::core {
namespace {

namespace fs = std::filesystem;

std::string scratch(const std::string& name) {
  const fs::path dir = testing::processTempDir("kfuse_store_faults_test_") /
                       ::testing::UnitTest::GetInstance()->current_test_info()->name();
  fs::create_directories(dir);
  return (dir / name).string();
}

TEST(TraceStoreFaultsTest, OverwriteReplacesARegularFileButNeverADirectory) {
  const std::string dir = scratch("a_directory");
  fs::create_directories(dir);
  auto w = TraceWriter::create(dir, {.overwrite = true});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(w.status().message().find("not a regular file"), std::string::npos) << w.status().message();
  EXPECT_TRUE(fs::is_directory(dir));
}

TEST(TraceStoreFaultsTest, ATraceWhoseWriterWasKilledOpensFromItsWriteAheadLog) {
  const std::string path = scratch("killed.sqlite");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The writer commits two batches and dies without closing: the batches are in path-wal only.
    auto w = TraceWriter::create(path, {.batch_rows = 50});
    if (!w.ok()) _exit(1);
    for (Id i = 1; i <= 100; ++i) {
      if (!(*w)->add(testing::makeLaunch(i, 0)).ok()) _exit(2);
    }
    if (!(*w)->flush().ok()) _exit(3);
    ::kill(::getpid(), SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exit " << WEXITSTATUS(status);
  ASSERT_GT(fs::file_size(path + "-wal"), 0u);
  auto reader = TraceReader::open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto counts = (*reader)->counts();
  ASSERT_TRUE(counts.ok()) << counts.status().message();
  EXPECT_EQ(counts->launches, 100);
  reader->reset();
  EXPECT_GT(fs::file_size(path + "-wal"), 0u) << "reading never checkpoints the user's file";
}

TEST(TraceStoreFaultsTest, ACreateThatHitsTheFileSizeLimitLeavesNoFile) {
  // A seam for a full disk: RLIMIT_FSIZE makes the first write past it fail with EFBIG (SIGXFSZ ignored here, in
  // a child of the test).
  const std::string path = scratch("limited.sqlite");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{512, 512};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    auto w = TraceWriter::create(path);
    _exit(w.ok() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "create succeeded under a 512-byte file size limit";
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) EXPECT_FALSE(fs::exists(path + suffix)) << suffix;
}

}  // namespace
}  // namespace kfuse::core
