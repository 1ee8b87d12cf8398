#include "kfuse/ptx/analysis.h"

#include <gtest/gtest.h>

#include "kfuse/ptx/parser.h"

namespace kfuse::ptx {
namespace {

// nvcc 13.0 -arch=sm_90 output for
//   __global__ void scale(const float* x, float* y, int n) {
//     int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
constexpr const char* kScale = R"(
.version 9.0
.target sm_90
.address_size 64
.visible .entry _Z5scalePKfPfi(
	.param .u64 _Z5scalePKfPfi_param_0,
	.param .u64 _Z5scalePKfPfi_param_1,
	.param .u32 _Z5scalePKfPfi_param_2
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<3>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<8>;

	ld.param.u64 	%rd1, [_Z5scalePKfPfi_param_0];
	ld.param.u64 	%rd2, [_Z5scalePKfPfi_param_1];
	ld.param.u32 	%r2, [_Z5scalePKfPfi_param_2];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.s32 	%p1, %r1, %r2;
	@%p1 bra 	$L__BB0_2;

	cvta.to.global.u64 	%rd3, %rd1;
	mul.wide.s32 	%rd4, %r1, 4;
	add.s64 	%rd5, %rd3, %rd4;
	ld.global.f32 	%f1, [%rd5];
	add.f32 	%f2, %f1, %f1;
	cvta.to.global.u64 	%rd6, %rd2;
	add.s64 	%rd7, %rd6, %rd4;
	st.global.f32 	[%rd7], %f2;

$L__BB0_2:
	ret;
}
)";

// A loop with a back edge and a diamond, to check the CFG, dominators and reaching definitions.
constexpr const char* kLoop = R"(
.version 9.0
.target sm_90
.address_size 64
.visible .entry loop(.param .u64 loop_param_0, .param .u32 loop_param_1)
{
	.reg .pred %p<3>;
	.reg .b32 %r<6>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [loop_param_0];
	ld.param.u32 %r1, [loop_param_1];
	mov.u32 %r2, 0;
$L_head:
	setp.ge.s32 %p1, %r2, %r1;
	@%p1 bra $L_exit;
	setp.eq.s32 %p2, %r2, 3;
	@%p2 bra $L_else;
	add.s32 %r3, %r2, 1;
	bra.uni $L_join;
$L_else:
	add.s32 %r3, %r2, 2;
$L_join:
	mul.wide.s32 %rd2, %r3, 4;
	add.s64 %rd3, %rd1, %rd2;
	atom.global.add.u32 %r4, [%rd3], 1;
	add.s32 %r2, %r2, 1;
	bra.uni $L_head;
$L_exit:
	ret;
}
)";

Module parseOrDie(const char* text) {
  auto m = parseModule(text, "test.ptx");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return std::move(m).value();
}

TEST(Analysis, ScaleParamsAreReadWriteAndNotPointer) {
  Module m = parseOrDie(kScale);
  FunctionAnalyses fa(&m, m.functions[0]);
  const auto& acc = fa.paramAccess();
  ASSERT_EQ(acc.size(), 3u);
  EXPECT_EQ(acc[0].mode, AccessMode::kRead);
  EXPECT_EQ(acc[1].mode, AccessMode::kWrite);
  EXPECT_EQ(acc[2].mode, AccessMode::kNotPointer);
}

TEST(Analysis, ScaleAddressesAreAffineUnderGuardINotLessThanN) {
  Module m = parseOrDie(kScale);
  FunctionAnalyses fa(&m, m.functions[0]);
  const auto& mem = fa.memoryAccesses();
  ASSERT_EQ(mem.size(), 2u);
  EXPECT_TRUE(mem[0].is_read);
  ASSERT_TRUE(mem[0].address.has_value());
  EXPECT_EQ(mem[0].address->toString(), "param0 + 4*ctaid.x*ntid.x + 4*tid.x");
  EXPECT_EQ(mem[0].base_param, 0);
  EXPECT_EQ(mem[0].bytes, 4u);
  EXPECT_TRUE(mem[1].is_write);
  ASSERT_TRUE(mem[1].address.has_value());
  EXPECT_EQ(mem[1].address->toString(), "param1 + 4*ctaid.x*ntid.x + 4*tid.x");
  EXPECT_EQ(mem[1].base_param, 1);
  ASSERT_TRUE(mem[1].offset.has_value());
  EXPECT_EQ(mem[1].offset->toString(), "4*ctaid.x*ntid.x + 4*tid.x");
  EXPECT_EQ(mem[1].guardText(), "ctaid.x*ntid.x + tid.x < param2");
  EXPECT_EQ(mem[0].guardText(), "ctaid.x*ntid.x + tid.x < param2");
}

TEST(Analysis, GuardsKeepIntegerComparisonsAsStructure) {
  // `setp.ge.s32 %p1, i, n; @%p1 bra` skips the access: the guard is the negation, i < n, signed 32-bit.
  Module m = parseOrDie(kScale);
  FunctionAnalyses fa(&m, m.functions[0]);
  const MemoryAccess& st = fa.memoryAccesses()[1];
  ASSERT_EQ(st.guard.size(), 1u);
  const GuardCondition& g = st.guard[0];
  ASSERT_TRUE(g.structured);
  EXPECT_EQ(g.cmp, CmpOp::kLt);
  EXPECT_TRUE(g.is_signed);
  EXPECT_EQ(g.bits, 32);
  EXPECT_EQ(g.lhs.toString(), "ctaid.x*ntid.x + tid.x");
  EXPECT_EQ(g.rhs.toString(), "param2");
  EXPECT_EQ(st.pointer_params, std::vector<int>{1});
}

TEST(Analysis, UnsignedAndFloatComparisonsAndDisjunctions) {
  // .lo is an unsigned <; a float comparison and an `or` of two comparisons stay text only.
  Module m = parseOrDie(R"(
.version 9.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1, .param .f32 k_param_2)
{
  .reg .pred %p<5>;
  .reg .b32 %r<3>;
  .reg .f32 %f<2>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [k_param_0];
  ld.param.u32 %r1, [k_param_1];
  ld.param.f32 %f1, [k_param_2];
  mov.u32 %r2, %tid.x;
  setp.lo.u32 %p1, %r2, %r1;
  setp.gt.f32 %p2, %f1, 0f00000000;
  setp.eq.s32 %p3, %r2, 3;
  or.pred %p4, %p2, %p3;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd2, %rd2, %rd3;
  @%p1 st.global.u32 [%rd2], %r2;
  @%p4 st.global.u32 [%rd2], %r1;
  ret;
}
)");
  FunctionAnalyses fa(&m, m.functions[0]);
  const auto& mem = fa.memoryAccesses();
  ASSERT_EQ(mem.size(), 2u);
  ASSERT_EQ(mem[0].guard.size(), 1u);
  EXPECT_TRUE(mem[0].guard[0].structured);
  EXPECT_EQ(mem[0].guard[0].cmp, CmpOp::kLt);
  EXPECT_FALSE(mem[0].guard[0].is_signed);
  ASSERT_EQ(mem[1].guard.size(), 1u);
  EXPECT_FALSE(mem[1].guard[0].structured);
  EXPECT_EQ(mem[1].guardText(), "(param2 > 0f00000000 || tid.x == 3)");
}

// blocksInLoops (Tarjan's components, linear) against the definition: a block is in a loop when it can reach itself.
TEST(Analysis, BlocksInLoopsAreTheBlocksOnACycle) {
  uint32_t seed = 7;
  auto next = [&seed](uint32_t n) {
    seed = seed * 1664525u + 1013904223u;
    return (seed >> 8) % n;
  };
  for (int trial = 0; trial < 40; ++trial) {
    const int n = 2 + static_cast<int>(next(40));
    std::string text =
        ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u32 p)\n{\n\t.reg .pred %p<2>;\n"
        "\t.reg .b32 %r<2>;\n\tld.param.u32 %r1, [p];\n\tsetp.eq.s32 %p1, %r1, 0;\n";
    for (int b = 0; b < n; ++b) {
      text += "$L_" + std::to_string(b) + ":\n";
      const uint32_t kind = next(4);  // 0: falls through; 1: conditional branch; 2: branch; 3: ret
      const std::string target = "$L_" + std::to_string(next(static_cast<uint32_t>(n)));
      if (kind == 1) text += "\t@%p1 bra " + target + ";\n";
      if (kind == 2) text += "\tbra.uni " + target + ";\n";
      if (kind == 3) text += "\tret;\n";
    }
    text += "\tret;\n}\n";
    auto m = parseModule(text);
    ASSERT_TRUE(m.ok()) << m.status().message();
    const Cfg cfg = Cfg::build(m->functions[0]);
    const std::vector<char> got = blocksInLoops(cfg);
    const auto& blocks = cfg.blocks();
    ASSERT_EQ(got.size(), blocks.size());
    for (size_t b = 0; b < blocks.size(); ++b) {
      std::vector<char> seen(blocks.size(), 0);
      std::vector<int> work(blocks[b].succs.begin(), blocks[b].succs.end());
      bool cycle = false;
      while (!work.empty() && !cycle) {
        const int x = work.back();
        work.pop_back();
        if (x < 0 || seen[static_cast<size_t>(x)]) continue;
        cycle = static_cast<size_t>(x) == b;
        seen[static_cast<size_t>(x)] = 1;
        for (int s : blocks[static_cast<size_t>(x)].succs) work.push_back(s);
      }
      EXPECT_EQ(got[b] != 0, cycle) << "trial " << trial << " block " << b << "\n" << text;
    }
  }
}

TEST(Analysis, LoopCfgDominatorsAndReachingDefinitions) {
  Module m = parseOrDie(kLoop);
  const Function& f = m.functions[0];
  FunctionAnalyses fa(&m, f);
  const Cfg& cfg = fa.cfg();
  // blocks: entry, head, cond2, then, else, join, exit
  ASSERT_EQ(cfg.blocks().size(), 7u);
  EXPECT_EQ(cfg.blocks()[1].label, "$L_head");
  EXPECT_EQ(cfg.blocks()[1].preds.size(), 2u);  // entry and back edge
  const Dominators& dom = fa.dominators();
  EXPECT_EQ(dom.idom(1), 0);
  EXPECT_EQ(dom.idom(5), 2);  // join is dominated by the second test, not by either arm
  EXPECT_TRUE(dom.dominates(1, 6));
  EXPECT_FALSE(dom.dominates(3, 5));
  const DefUse& du = fa.defUse();
  size_t mul = 0;
  for (size_t i = 0; i < f.body.size(); ++i) {
    if (f.body[i].kind == StatementKind::kInstruction && f.body[i].inst.opcodeText() == "mul") mul = i;
  }
  EXPECT_EQ(du.reachingDefs(mul, "%r3").size(), 2u);  // one from each arm
  EXPECT_EQ(du.reachingDefs(mul, "%rd1").size(), 1u);
  // the loop counter has two reaching definitions at the head: the initial mov and the increment
  EXPECT_EQ(du.reachingDefs(cfg.blocks()[1].begin + 1, "%r2").size(), 2u);
  const auto& mem = fa.memoryAccesses();
  ASSERT_EQ(mem.size(), 1u);
  // %r2 is 0 + k after k steps of `add %r2, %r2, 1`; %r3 is %r2 + 1 or %r2 + 2 (one per arm), so 1 + k for some
  // k >= 0: the offset counts the loop's steps (ptx::kIterationPrefix).
  ASSERT_TRUE(mem[0].offset.has_value()) << mem[0].not_affine_reason;
  const std::string offset = mem[0].offset->toString();
  EXPECT_EQ(offset.rfind("4*iter:%r2@", 0), 0u) << offset;
  EXPECT_EQ(offset.substr(offset.size() - 4), " + 4") << offset;
  EXPECT_EQ(fa.paramAccess()[0].mode, AccessMode::kReadWrite);
  EXPECT_EQ(fa.usage().atomics, 1);
}

TEST(Analysis, StoredOrPassedPointersAreUnknown) {
  const char* text = R"(
.version 9.0
.target sm_90
.address_size 64
.extern .func sink(.param .b64 sink_param_0);
.visible .entry esc(.param .u64 esc_param_0, .param .u64 esc_param_1, .param .u64 esc_param_2)
{
	.reg .b64 %rd<6>;
	ld.param.u64 %rd1, [esc_param_0];
	ld.param.u64 %rd2, [esc_param_1];
	ld.param.u64 %rd3, [esc_param_2];
	st.global.u64 [%rd1], %rd2;
	{
	.param .b64 param0;
	st.param.b64 [param0+0], %rd3;
	call.uni sink, (param0);
	}
	ret;
}
)";
  Module m = parseOrDie(text);
  FunctionAnalyses fa(&m, *m.findFunction("esc"));
  const auto& acc = fa.paramAccess();
  EXPECT_EQ(acc[0].mode, AccessMode::kWrite);
  EXPECT_EQ(acc[1].mode, AccessMode::kUnknown);
  EXPECT_NE(acc[1].reason.find("stored to memory"), std::string::npos) << acc[1].reason;
  EXPECT_EQ(acc[2].mode, AccessMode::kUnknown);
  EXPECT_NE(acc[2].reason.find("passed to sink"), std::string::npos) << acc[2].reason;
  EXPECT_EQ(fa.usage().callees, std::vector<std::string>{"sink"});
}

TEST(Analysis, PointersPassedToDeviceFunctionsAreFollowed) {
  const char* text = R"(
.version 9.0
.target sm_90
.address_size 64
.func copy(.param .b64 copy_param_0, .param .b64 copy_param_1)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [copy_param_0];
	ld.param.u64 %rd2, [copy_param_1];
	ld.global.u32 %r1, [%rd1];
	st.global.u32 [%rd2], %r1;
	ret;
}
.func (.param .b64 func_retval0) ident(.param .b64 ident_param_0)
{
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [ident_param_0];
	st.param.b64 [func_retval0+0], %rd1;
	ret;
}
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1, .param .u64 k_param_2)
{
	.reg .b64 %rd<5>;
	ld.param.u64 %rd1, [k_param_0];
	ld.param.u64 %rd2, [k_param_1];
	ld.param.u64 %rd3, [k_param_2];
	{
	.param .b64 param0;
	st.param.b64 [param0+0], %rd1;
	.param .b64 param1;
	st.param.b64 [param1+0], %rd2;
	call.uni copy, (param0, param1);
	}
	{
	.param .b64 param0;
	st.param.b64 [param0+0], %rd3;
	.param .b64 retval0;
	call.uni (retval0), ident, (param0);
	ld.param.b64 %rd4, [retval0+0];
	}
	ret;
}
)";
  Module m = parseOrDie(text);
  FunctionAnalyses fa(&m, *m.findFunction("k"));
  const auto& acc = fa.paramAccess();
  EXPECT_EQ(acc[0].mode, AccessMode::kRead);
  EXPECT_EQ(acc[1].mode, AccessMode::kWrite);
  // ident returns its argument: whatever the caller does with the result is out of sight
  EXPECT_EQ(acc[2].mode, AccessMode::kUnknown);
  EXPECT_NE(acc[2].reason.find("passed to ident"), std::string::npos) << acc[2].reason;
  // without the module, calls cannot be followed
  const Function& k = *m.findFunction("k");
  Cfg cfg = Cfg::build(k);
  DefUse du = DefUse::compute(k, cfg);
  EXPECT_EQ(analyzeParamAccess(k, cfg, du)[0].mode, AccessMode::kUnknown);
}

TEST(Analysis, LargeGeneratedFunctionIsAnalyzed) {
  // 3000 guarded blocks, each loading through the pointer: exercises the data-flow sizes
  std::string text =
      ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry big(.param .u64 big_param_0)\n{\n"
      "\t.reg .pred %p<2>;\n\t.reg .b32 %r<9000>;\n\t.reg .b64 %rd<9000>;\n"
      "\tld.param.u64 %rd1, [big_param_0];\n\tmov.u32 %r1, %tid.x;\n\tsetp.gt.u32 %p1, %r1, 7;\n";
  for (int i = 0; i < 3000; ++i) {
    const std::string n = std::to_string(i + 2);
    text += "\t@%p1 bra $L_" + n + ";\n\tmul.wide.u32 %rd" + n + ", %r1, " + n + ";\n";
    text += "\tadd.s64 %rd" + std::to_string(i + 4000) + ", %rd1, %rd" + n + ";\n";
    text += "\tld.global.u32 %r" + n + ", [%rd" + std::to_string(i + 4000) + "];\n$L_" + n + ":\n";
  }
  text += "\tret;\n}\n";
  Module m = parseOrDie(text.c_str());
  FunctionAnalyses fa(&m, m.functions[0]);
  EXPECT_EQ(fa.paramAccess()[0].mode, AccessMode::kRead);
  const auto& mem = fa.memoryAccesses();
  ASSERT_EQ(mem.size(), 3000u);
  EXPECT_EQ(mem[2999].address->toString(), "param0 + 3001*tid.x");
  EXPECT_EQ(mem[2999].guardText(), "tid.x <= 7");
  EXPECT_FALSE(fa.defUse().approximate());
}

TEST(Analysis, AffineExprArithmeticAndPrinting) {
  AffineExpr i = AffineExpr::atom("ctaid.x") * AffineExpr::atom("ntid.x") + AffineExpr::atom("tid.x");
  AffineExpr addr = AffineExpr::atom("param1") + AffineExpr::constant(4) * i - AffineExpr::constant(8);
  EXPECT_EQ(addr.toString(), "param1 + 4*ctaid.x*ntid.x + 4*tid.x - 8");
  EXPECT_EQ(addr.degree(), 2);
  EXPECT_EQ((addr - addr).toString(), "0");
  EXPECT_EQ((AffineExpr::constant(0) - AffineExpr::atom("tid.y")).toString(), "-tid.y");
  // coefficients wrap like 64-bit addresses instead of overflowing
  AffineExpr big = AffineExpr::constant(INT64_MAX) + AffineExpr::constant(1);
  EXPECT_EQ(big.toString(), "-9223372036854775808");
}

TEST(Analysis, AffineTermsKeepTheOrderAndLookupsOfAMapFromMonomials) {
  AffineTerms t;
  t[{"tid.x"}] = 4;
  t[{"ctaid.x", "ntid.x"}] = 4;
  t[{}] = 8;
  t[{"param1"}] = 1;
  t[{"tid.x"}] += 2;  // an existing key is updated, not inserted again
  // The order of a std::map with the same keys: lexicographic by atom text, the constant first.
  std::vector<std::pair<std::vector<std::string>, int64_t>> seen(t.begin(), t.end());
  const std::vector<std::pair<std::vector<std::string>, int64_t>> want = {
      {{}, 8}, {{"ctaid.x", "ntid.x"}, 4}, {{"param1"}, 1}, {{"tid.x"}, 6}};
  EXPECT_EQ(seen, want);
  EXPECT_EQ(t.size(), 4u);
  EXPECT_EQ(t.count({"param1"}), 1u);
  EXPECT_EQ(t.count({"param2"}), 0u);
  EXPECT_EQ(t.at({"ctaid.x", "ntid.x"}), 4);
  EXPECT_EQ(t.find({"ntid.x"}), t.end());
  EXPECT_EQ(t.erase({"param1"}), 1u);
  EXPECT_EQ(t.erase({"param1"}), 0u);
  t.erase(t.find({}));
  AffineTerms u;
  u[{"tid.x"}] = 6;
  u[{"ctaid.x", "ntid.x"}] = 4;
  EXPECT_EQ(t, u);
  // Sums drop the terms that cancel, so equal polynomials have equal terms.
  const AffineExpr a = AffineExpr::atom("tid.x") + AffineExpr::constant(3);
  EXPECT_EQ((a + AffineExpr::atom("tid.y") - AffineExpr::atom("tid.y")).terms, a.terms);
}

}  // namespace
}  // namespace kfuse::ptx
