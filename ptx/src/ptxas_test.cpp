// runPtxas as a child process: a ptxas that never finishes is stopped at the time limit, with an error naming it.
#include "kfuse/ptx/ptxas.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace kfuse::ptx {
namespace {

TEST(Ptxas, AToolThatNeverFinishesIsStoppedAtTheTimeLimit) {
  std::string dir = (std::filesystem::temp_directory_path() / "kfuse_ptxas_test_XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string tool = dir + "/ptxas";
  {
    std::ofstream out(tool);
    out << "#!/bin/sh\necho compiling\nexec sleep 60\n";
  }
  ::chmod(tool.c_str(), 0755);
  ::setenv("KFUSE_PTXAS_TIMEOUT", "1", 1);
  const auto start = std::chrono::steady_clock::now();
  auto r = runPtxas(".version 9.0\n.target sm_90\n.address_size 64\n", "sm_90", tool);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::unsetenv("KFUSE_PTXAS_TIMEOUT");
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("ran longer than 1 s and was stopped"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("KFUSE_PTXAS_TIMEOUT"), std::string::npos);
  EXPECT_LT(seconds, 30.0) << "the child was not stopped";
}

}  // namespace
}  // namespace kfuse::ptx
