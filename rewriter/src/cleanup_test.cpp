#include <gtest/gtest.h>

#include "kfuse/rewriter/fusion.h"
#include "test_kernels.h"

namespace kfuse::rewriter {
namespace {

constexpr const char* kDeadCode = R"(
.version 9.0
.target sm_90
.address_size 64

.visible .entry k(
	.param .u64 k_param_0,
	.param .u64 k_param_1,
	.param .u32 k_param_2
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<4>;
	.reg .f32 	%f<3>;

	ld.param.u64 	%rd1, [k_param_0];
	ld.param.u32 	%r1, [k_param_2];
	mov.u32 	%r2, %tid.x;
	add.s32 	%r3, %r2, %r1;
	mul.lo.s32 	%r4, %r3, 7;
	mov.f32 	%f1, 0f3F800000;
	cvta.to.global.u64 	%rd2, %rd1;
	st.global.u32 	[%rd2], %r2;
	bra.uni 	$L_next;
$L_next:
	ret;
}
)";

TEST(Cleanup, RemovesDeadChainsUnusedDeclarationsAndBranchesToTheNextStatement) {
  ptx::Module m = testing::parsed(kDeadCode);
  std::vector<int> kept;
  auto st = cleanupFunction(m, "k", /*remove_params=*/true, &kept);
  ASSERT_TRUE(st.ok()) << st.status().message();
  // add, mul (dead chain through %r3), mov.f32, ld.param of the third parameter, bra.uni
  EXPECT_EQ(st->removed_instructions, 5);
  EXPECT_EQ(st->removed_declarations, 2);  // %p<2> and %f<3>
  EXPECT_EQ(st->removed_params, 2);        // k_param_1 was never read, k_param_2 only by dead code
  EXPECT_EQ(kept, std::vector<int>({0}));
  const std::string text = ptx::printModule(m);
  EXPECT_EQ(text.find("mul.lo"), std::string::npos) << text;
  EXPECT_EQ(text.find(".f32"), std::string::npos) << text;
  EXPECT_EQ(text.find("bra"), std::string::npos) << text;
  EXPECT_NE(text.find("st.global.u32"), std::string::npos) << text;
  testing::expectCompiles(text, {"sm_90"});
}

TEST(Cleanup, KeepsParametersUnlessAskedAndNeverRemovesSideEffects) {
  ptx::Module m = testing::parsed(kDeadCode);
  auto st = cleanupFunction(m, "k", /*remove_params=*/false);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->removed_params, 0);
  EXPECT_EQ(m.findFunction("k")->params.size(), 3u);
  EXPECT_FALSE(cleanupFunction(m, "missing", false).ok());
}

TEST(Cleanup, LeavesNvccKernelsThatHaveNoDeadCodeAsTheyAre) {
  ptx::Module m = testing::parsed(testing::examplePtx("elementwise_chain"));
  const std::string before = ptx::printFunction(*m.findFunction("add"));
  auto st = cleanupFunction(m, "add", false);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->removed_instructions, 0);
  EXPECT_EQ(ptx::printFunction(*m.findFunction("add")), before);
}

}  // namespace
}  // namespace kfuse::rewriter
