#include "kfuse/core/files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace kfuse::core {
namespace {

namespace fs = std::filesystem;

std::string readAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class WriteFileAtomically : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kfuse_files_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(WriteFileAtomically, WritesAndReplacesLeavingNoTemporaryFile) {
  const fs::path p = dir_ / "plan.json";
  ASSERT_TRUE(writeFileAtomically(p.string(), "first").ok());
  EXPECT_EQ(readAll(p), "first");
  ASSERT_TRUE(writeFileAtomically(p.string(), std::string("second\0with a NUL", 17)).ok());
  EXPECT_EQ(readAll(p), std::string("second\0with a NUL", 17));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(WriteFileAtomically, AFailureNamesTheFileAndKeepsTheOldOne) {
  const fs::path missing = dir_ / "no-such-dir" / "out.json";
  const Status s = writeFileAtomically(missing.string(), "x");
  EXPECT_EQ(s.code(), ErrorCode::kIoError);
  EXPECT_NE(s.message().find(missing.string()), std::string::npos) << s.message();
  // A directory in the way of the rename: the write fails, the directory and its contents stay.
  const fs::path blocked = dir_ / "blocked";
  fs::create_directories(blocked / "inside");
  EXPECT_FALSE(writeFileAtomically(blocked.string(), "x").ok());
  EXPECT_TRUE(fs::is_directory(blocked / "inside"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1) << "no temporary file left";
}

}  // namespace
}  // namespace kfuse::core
