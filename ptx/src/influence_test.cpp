#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/parser.h"

namespace kfuse::ptx {
namespace {

// testdata/influence.ptx: nvcc 13.0 -arch=sm_90 output of testdata/influence.cu.
const Module& influenceModule() {
  static const Module m = [] {
    std::ifstream in(std::string(KFUSE_PTX_TESTDATA) + "/influence.ptx");
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = parseModule(text.str(), "influence.ptx");
    EXPECT_TRUE(parsed.ok()) << parsed.status().message();
    return parsed.ok() ? std::move(parsed).value() : Module{};
  }();
  return m;
}

ParamInfluence influenceOf(const char* kernel) {
  const Function* f = influenceModule().findFunction(kernel);
  EXPECT_NE(f, nullptr) << kernel;
  return f ? analyzeParamInfluence(*f) : ParamInfluence{};
}

using Params = std::vector<int>;

TEST(ParamInfluence, ScalarsReachingAddressesThroughMinAndMaxInfluence) {
  // min_index(y, x, k, alpha, n): k through min, n through the guard; alpha only scales the stored value.
  EXPECT_EQ(influenceOf("min_index").params, (Params{0, 1, 2, 4}));
  EXPECT_EQ(influenceOf("max_index").params, (Params{0, 1, 2, 3}));
}

TEST(ParamInfluence, DivisionRemainderShiftMaskAndSelectInfluence) {
  EXPECT_EQ(influenceOf("div_mod_index").params, (Params{0, 1, 2, 3, 4}));
  EXPECT_EQ(influenceOf("shift_and_index").params, (Params{0, 1, 2, 3, 4}));
  EXPECT_EQ(influenceOf("select_index").params, (Params{0, 1, 2, 3}));
}

TEST(ParamInfluence, TripCountsAndNullChecksInfluenceButDataDoesNot) {
  // loop_count(y, x, reps, bias, n): reps bounds the loop; bias is the sum's start value.
  EXPECT_EQ(influenceOf("loop_count").params, (Params{0, 1, 2, 4}));
  // optional_bias(y, x, bias, scale, n): whether bias is null decides the load; scale is data.
  EXPECT_EQ(influenceOf("optional_bias").params, (Params{0, 1, 2, 4}));
}

TEST(ParamInfluence, ValuesKeptInLocalMemoryStillInfluence) {
  EXPECT_EQ(influenceOf("local_array_index").params, (Params{0, 1, 2, 3}));
}

TEST(ParamInfluence, DynamicSharedMemorySizeIsTracked) {
  const ParamInfluence d = influenceOf("dyn_smem_rows");
  EXPECT_EQ(d.params, (Params{0, 1, 2}));
  EXPECT_TRUE(d.dynamic_shared_size);
  EXPECT_TRUE(d.reads_dynamic_shared_size);
  const ParamInfluence m = influenceOf("min_index");
  EXPECT_FALSE(m.dynamic_shared_size);
  EXPECT_FALSE(m.reads_dynamic_shared_size);
}

bool contains(const Params& ps, int p) {
  return std::find(ps.begin(), ps.end(), p) != ps.end();
}

TEST(ParamInfluence, PointersUsedAsNumbersAreAbsolute) {
  // pointer_bits(y, z, n): an index from z's low bits; pointer_distance(y, z, q, n): from q - z. Scalars compared
  // or computed with are absolute too (pinned by value either way); y, written through as a base, is not.
  const Params bits = influenceOf("pointer_bits").absolute, distance = influenceOf("pointer_distance").absolute;
  EXPECT_TRUE(contains(bits, 1) && !contains(bits, 0)) << ::testing::PrintToString(bits);
  EXPECT_TRUE(contains(distance, 1) && contains(distance, 2) && !contains(distance, 0))
      << ::testing::PrintToString(distance);
  // Pointers used only as bases, and a null check (optional_bias's param 2), are not.
  for (const char* k : {"min_index", "max_index", "div_mod_index", "shift_and_index", "select_index", "loop_count",
                        "optional_bias", "dyn_smem_rows", "local_array_index"}) {
    const Params a = influenceOf(k).absolute;
    EXPECT_FALSE(contains(a, 0) || contains(a, 1)) << k << ": " << ::testing::PrintToString(a);
  }
  EXPECT_FALSE(contains(influenceOf("optional_bias").absolute, 2)) << "a null check is not an absolute use";
}

TEST(ParamInfluence, TheTotalSharedMemorySizeFollowsTheDynamicOne) {
  // Hand-written: a guard on %total_smem_size (static + dynamic shared memory).
  constexpr const char* kTotal = R"(
.version 9.0
.target sm_90
.address_size 64
.visible .entry total(.param .u64 total_param_0)
{
	.reg .pred %p<2>;
	.reg .b32 %r<3>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [total_param_0];
	mov.u32 %r1, %total_smem_size;
	setp.lt.u32 %p1, %r1, 1024;
	@%p1 bra DONE;
	st.global.u32 [%rd1], %r1;
DONE:
	ret;
}
)";
  auto m = parseModule(kTotal, "total.ptx");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const ParamInfluence in = analyzeParamInfluence(*m->findFunction("total"));
  EXPECT_TRUE(in.reads_dynamic_shared_size);
  EXPECT_TRUE(in.dynamic_shared_size);
}

TEST(ParamInfluence, ACallSeesItsArguments) {
  // Hand-written: k is passed to a device function, which may use it as an index.
  constexpr const char* kCall = R"(
.version 9.0
.target sm_90
.address_size 64
.func (.param .b32 r) pick(.param .b32 a)
{
	.reg .b32 %r<2>;
	ld.param.b32 %r1, [a];
	st.param.b32 [r], %r1;
	ret;
}
.visible .entry caller(.param .u64 caller_param_0, .param .u32 caller_param_1, .param .f32 caller_param_2)
{
	.reg .b32 %r<4>;
	.reg .f32 %f<2>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [caller_param_0];
	ld.param.u32 %r1, [caller_param_1];
	ld.param.f32 %f1, [caller_param_2];
	{
	.param .b32 arg0;
	st.param.b32 [arg0], %r1;
	.param .b32 ret0;
	call.uni (ret0), pick, (arg0);
	ld.param.b32 %r2, [ret0];
	}
	st.global.f32 [%rd1], %f1;
	ret;
}
)";
  auto m = parseModule(kCall, "call.ptx");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(analyzeParamInfluence(*m->findFunction("caller")).params, (Params{0, 1}));
}

}  // namespace
}  // namespace kfuse::ptx
