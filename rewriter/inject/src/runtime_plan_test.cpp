// Plans as the injector loads them: testdata/chain-plan is what `kfuse rewrite` wrote for the elementwise-chain
// example (scale -> add -> relu -> mul, nvcc's PTX); the damaged copies are made from it in a temporary directory.
#include "kfuse/inject/runtime_plan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace kfuse::inject {
namespace {
namespace fs = std::filesystem;

const std::string kPlan = std::string(KFUSE_INJECT_TESTDATA) + "/chain-plan";

class RuntimePlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kfuse_runtime_plan_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::copy(kPlan, dir_, fs::copy_options::recursive);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string read(const std::string& name) {
    std::ifstream in(dir_ / name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  void edit(const std::string& name, const std::string& from, const std::string& to) {
    std::string text = read(name);
    const size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    write(name, text.replace(at, from.size(), to));
  }

  fs::path dir_;
};

TEST_F(RuntimePlanTest, LoadsAPlanKfuseRewriteWrote) {
  auto p = loadRuntimePlan(kPlan);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->kernels.size(), 4u);
  EXPECT_EQ(p->kernels[0].name, "scale");
  EXPECT_EQ(p->kernels[3].name, "mul");
  EXPECT_EQ(p->kernels[1].arg_bytes, 28u);  // three pointers and an int
  EXPECT_EQ(p->fused_args.size(), 9u);
  EXPECT_EQ(p->fused_args[3], (rewriter::ArgRef{0, 3}));  // n, shared by all four kernels
  EXPECT_NE(p->fused_ptx.find(".entry " + p->fused_name), std::string::npos);
  EXPECT_EQ(p->targets, std::vector<std::string>{"sm_90"});
}

TEST_F(RuntimePlanTest, RefusesCorruptJsonNamingTheFile) {
  write("plan.json", "{\"format\": \"kfuse-plan\", ");
  auto p = loadRuntimePlan(dir_.string());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("plan.json"), std::string::npos) << p.status().message();
}

TEST_F(RuntimePlanTest, RefusesASchemaInvalidPlan) {
  edit("plan.json", "\"module_hash\": \"8454", "\"module_hash\": \"zz54");
  auto p = loadRuntimePlan(dir_.string());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("module_hash"), std::string::npos) << p.status().message();
}

TEST_F(RuntimePlanTest, RefusesAPlanThatWasNotValidated) {
  edit("plan.json", "\"emulator\": \"passed\"", "\"emulator\": \"failed\"");
  auto p = loadRuntimePlan(dir_.string());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("kfuse validate"), std::string::npos) << p.status().message();
}

TEST_F(RuntimePlanTest, RefusesAPlanThatFailedOnTheGpuWhateverTheEmulatorSaid) {
  // Validated on the emulator, then measured no faster on a GPU (`kfuse rewrite` on a GPU machine records both).
  edit("plan.json", "\"gpu\": \"not-run\",\n  \"mismatch\": \"\"",
       "\"gpu\": \"failed\",\n  \"mismatch\": \"measured no faster on this GPU: the fused kernel took 24.0 us, the 2 "
       "original launches 20.0 us\"");
  auto p = loadRuntimePlan(dir_.string());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("failed validation on the GPU (measured no faster"), std::string::npos)
      << p.status().message();
}

TEST_F(RuntimePlanTest, RefusesAMissingOrForeignFusedKernel) {
  fs::remove(dir_ / "fused.ptx");
  auto missing = loadRuntimePlan(dir_.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("fused.ptx"), std::string::npos);
  write("fused.ptx", ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry something_else()\n{\nret;\n}\n");
  auto foreign = loadRuntimePlan(dir_.string());
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.status().message().find("no .entry named"), std::string::npos) << foreign.status().message();
}

TEST_F(RuntimePlanTest, RefusesReferencesOutsideThePattern) {
  std::string text = read("plan.json");
  text = std::regex_replace(text, std::regex("\"arg\": 2,\\s*\"kernel\": 3"), "\"arg\": 9, \"kernel\": 3",
                            std::regex_constants::format_first_only);
  write("plan.json", text);
  auto p = loadRuntimePlan(dir_.string());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("kernel 3 (mul) has 4 parameters"), std::string::npos) << p.status().message();
}

}  // namespace
}  // namespace kfuse::inject
