#include <gtest/gtest.h>

#include "kfuse/rewriter/fusion.h"
#include "test_kernels.h"

namespace kfuse::rewriter {
namespace {

constexpr const char* kFirst = R"(
.version 8.5
.target sm_80
.address_size 64

.global .align 4 .u32 counter = 1;
.func  (.param .b32 func_retval0) twice(.param .b32 twice_param_0)
{
	.reg .b32 	%r<3>;
	ld.param.b32 	%r1, [twice_param_0];
	add.s32 	%r2, %r1, %r1;
	st.param.b32 	[func_retval0], %r2;
	ret;
}
.visible .entry k(.param .u64 k_param_0)
{
	.reg .b32 	%r<4>;
	.reg .b64 	%rd<3>;
	ld.param.u64 	%rd1, [k_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	ld.global.u32 	%r1, [counter];
	{
	.param .b32 param0;
	st.param.b32 	[param0], %r1;
	.param .b32 retval0;
	call.uni (retval0), twice, (param0);
	ld.param.b32 	%r2, [retval0];
	}
	st.global.u32 	[%rd2], %r2;
	ret;
}
)";

// Same names: `counter` with a different initialiser, `twice` identical, `k` a different kernel.
constexpr const char* kSecond = R"(
.version 9.0
.target sm_90
.address_size 64

.global .align 4 .u32 counter = 5;
.func  (.param .b32 func_retval0) twice(.param .b32 twice_param_0)
{
	.reg .b32 	%r<3>;
	ld.param.b32 	%r1, [twice_param_0];
	add.s32 	%r2, %r1, %r1;
	st.param.b32 	[func_retval0], %r2;
	ret;
}
.visible .entry k(.param .u64 k_param_0)
{
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<3>;
	ld.param.u64 	%rd1, [k_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	ld.global.u32 	%r1, [counter];
	st.global.u32 	[%rd2], %r1;
	ret;
}
)";

TEST(MergeModules, RenamesCollisionsKeepsIdenticalDefinitionsOnceAndTakesTheNewestTarget) {
  std::vector<Rename> renames;
  auto merged = mergeModules({testing::parsed(kFirst), testing::parsed(kSecond)}, &renames);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ(merged->version, "9.0");
  EXPECT_EQ(merged->target, "sm_90");
  ASSERT_EQ(renames.size(), 2u);
  EXPECT_EQ(renames[0].module, 1u);
  EXPECT_EQ(renames[0].from, "counter");
  EXPECT_EQ(renames[0].to, "counter_m1");
  EXPECT_EQ(renames[1].from, "k");
  EXPECT_EQ(renames[1].to, "k_m1");
  size_t twice = 0;
  for (const auto& f : merged->functions) twice += f.name == "twice";
  EXPECT_EQ(twice, 1u);
  const std::string text = ptx::printModule(*merged);
  EXPECT_NE(text.find("counter_m1 = 5"), std::string::npos) << text;
  // The second kernel reads its own variable.
  EXPECT_NE(ptx::printFunction(*merged->findFunction("k_m1")).find("[counter_m1]"), std::string::npos);
  testing::expectCompiles(text, {"sm_90"});
}

TEST(MergeModules, KeepsEachVariablesInitialValueWhenRun) {
  auto merged = mergeModules({testing::parsed(kFirst), testing::parsed(kSecond)}, nullptr);
  ASSERT_TRUE(merged.ok());
  const std::string text = ptx::printModule(*merged);
  std::vector<std::vector<uint8_t>> bufs = {std::vector<uint8_t>(4), std::vector<uint8_t>(4)};
  testing::Runner r(bufs);
  ASSERT_TRUE(r.launch(text, "k", {1, 1, 1}, {1, 1, 1}, {testing::Arg::buf(0)}).ok());
  ASSERT_TRUE(r.launch(text, "k_m1", {1, 1, 1}, {1, 1, 1}, {testing::Arg::buf(1)}).ok());
  EXPECT_EQ(r.download(0), std::vector<uint8_t>({2, 0, 0, 0}));  // twice(1)
  EXPECT_EQ(r.download(1), std::vector<uint8_t>({5, 0, 0, 0}));
}

TEST(MergeModules, RejectsNothingAnd32BitModules) {
  EXPECT_FALSE(mergeModules({}, nullptr).ok());
  ptx::Module m = testing::parsed(kFirst);
  m.address_size = 32;
  EXPECT_FALSE(mergeModules({m}, nullptr).ok());
}

}  // namespace
}  // namespace kfuse::rewriter
