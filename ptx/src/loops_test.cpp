#include "kfuse/ptx/loops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "kfuse/ptx/parser.h"

namespace kfuse::ptx {
namespace {

// A PTX file of testdata/, parsed once: nvcc 13.0 -arch=sm_90 output of the .cu file of the same name.
Module parsedTestdata(const std::string& file) {
  std::ifstream in(std::string(KFUSE_PTX_TESTDATA) + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = parseModule(text.str(), file);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  return parsed.ok() ? std::move(parsed).value() : Module{};
}

const Module& loopsModule() {
  static const Module m = parsedTestdata("loops.ptx");
  return m;
}

// Parameters compared by position: `gs_axpb_param_4` and `gs_relu_mul_param_3` are both "n" when a fusion merges
// them; here the last parameter of every kernel is called "n", the others keep their names.
std::string lastIsN(const Function& f, const std::string& name) {
  return !f.params.empty() && name == f.params.back().name ? "n" : name;
}

struct Found {
  std::optional<CountedLoop> loop;
  std::string why;
};

Found countedLoop(const Module& m, const char* kernel) {
  const Function* f = m.findFunction(kernel);
  EXPECT_NE(f, nullptr) << kernel;
  if (!f) return {};
  const Cfg cfg = Cfg::build(*f);
  const DefUse du = DefUse::compute(*f, cfg);
  Found out;
  out.loop = findCountedLoop(
      *f, cfg, du, [f](const std::string& p) { return lastIsN(*f, p); }, &out.why);
  return out;
}

TEST(CountedLoop, NvccGridStrideLoopsOfOneLaunchTakeTheSameSteps) {
  const Found a = countedLoop(loopsModule(), "gs_axpb");
  const Found b = countedLoop(loopsModule(), "gs_relu_mul");
  ASSERT_TRUE(a.loop) << a.why;
  ASSERT_TRUE(b.loop) << b.why;
  EXPECT_EQ(a.loop->start, "mad.lo.s32(mov.u32(%ctaid.x),mov.u32(%ntid.x),mov.u32(%tid.x))");
  EXPECT_EQ(a.loop->step, "add.s32(<iv>,mul.lo.s32(mov.u32(%nctaid.x),mov.u32(%ntid.x)))");
  EXPECT_EQ(a.loop->latch, "setp.lt.s32(" + a.loop->step + ",ld.param.u32(param:n+0))");
  EXPECT_TRUE(a.loop->sameSteps(*b.loop));
  // The statements the rewriter edits.
  const Function& f = *loopsModule().findFunction("gs_axpb");
  EXPECT_EQ(f.body[a.loop->step_stmt].inst.fullOpcode(), "add.s32");
  EXPECT_EQ(f.body[a.loop->latch_stmt].inst.fullOpcode(), "bra");
  EXPECT_EQ(f.body[a.loop->guard_stmt].inst.guard, "%p1");
  EXPECT_EQ(a.loop->induction, "%r10");
}

TEST(CountedLoop, AnotherStepOrStartIsNotTheSameSteps) {
  const Found base = countedLoop(loopsModule(), "gs_relu_mul");
  const Found half = countedLoop(loopsModule(), "gs_half_stride");
  const Found shifted = countedLoop(loopsModule(), "gs_shifted_start");
  ASSERT_TRUE(base.loop && half.loop && shifted.loop) << half.why << shifted.why;
  EXPECT_NE(base.loop->step, half.loop->step);
  EXPECT_FALSE(base.loop->sameSteps(*half.loop));
  EXPECT_NE(base.loop->start, shifted.loop->start);
  EXPECT_FALSE(base.loop->sameSteps(*shifted.loop));
}

TEST(CountedLoop, ParametersCompareByTheNameTheCallerGives) {
  // Without merging the bound parameters, two kernels' loops end at different values.
  const Function* a = loopsModule().findFunction("gs_axpb");
  const Function* b = loopsModule().findFunction("gs_relu_mul");
  ASSERT_TRUE(a && b);
  auto plain = [](const Function& f) {
    const Cfg cfg = Cfg::build(f);
    const DefUse du = DefUse::compute(f, cfg);
    return findCountedLoop(f, cfg, du, {}, nullptr);
  };
  const auto la = plain(*a), lb = plain(*b);
  ASSERT_TRUE(la && lb);
  EXPECT_FALSE(la->sameSteps(*lb));
}

TEST(CountedLoop, SixtyFourBitInductionVariables) {
  const Found wide = countedLoop(loopsModule(), "gs_size_t");
  ASSERT_TRUE(wide.loop) << wide.why;
  EXPECT_EQ(wide.loop->step, "add.s64(<iv>,mul.wide.u32(mov.u32(%nctaid.x),mov.u32(%ntid.x)))");
  EXPECT_FALSE(wide.loop->sameSteps(*countedLoop(loopsModule(), "gs_relu_mul").loop));
}

TEST(CountedLoop, UnrolledLoopsAndStraightLineKernelsAreNotCountedLoops) {
  const Found unrolled = countedLoop(loopsModule(), "gs_unrolled");
  EXPECT_FALSE(unrolled.loop);
  EXPECT_FALSE(unrolled.why.empty());
  const Found none = countedLoop(loopsModule(), "one_element");
  EXPECT_FALSE(none.loop);
  EXPECT_EQ(none.why, "it has no loop");
}

Module parsedText(const std::string& text) {
  auto m = parseModule(text, "inline.ptx");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(m).value() : Module{};
}

// gs_relu_mul's shape with one edit spliced into its loop.
std::string loopWith(const std::string& before_step, const std::string& after_step) {
  return R"(.version 9.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1, .param .u32 k_param_2)
{
  .reg .pred %p<3>;
  .reg .f32 %f<5>;
  .reg .b32 %r<11>;
  .reg .b64 %rd<11>;
  ld.param.u64 %rd4, [k_param_0];
  ld.param.u64 %rd5, [k_param_1];
  ld.param.u32 %r6, [k_param_2];
  mov.u32 %r1, %ntid.x;
  mov.u32 %r7, %ctaid.x;
  mov.u32 %r8, %tid.x;
  mad.lo.s32 %r10, %r7, %r1, %r8;
  setp.ge.s32 %p1, %r10, %r6;
  @%p1 bra $L__BB0_3;
  mov.u32 %r9, %nctaid.x;
  mul.lo.s32 %r3, %r9, %r1;
  cvta.to.global.u64 %rd1, %rd4;
  cvta.to.global.u64 %rd2, %rd5;
$L__BB0_2:
  mul.wide.s32 %rd7, %r10, 4;
  add.s64 %rd8, %rd1, %rd7;
  ld.global.f32 %f1, [%rd8];
  add.s64 %rd9, %rd2, %rd7;
)" + before_step +
         R"(
  add.s32 %r10, %r10, %r3;
)" + after_step +
         R"(
  setp.lt.s32 %p2, %r10, %r6;
  @%p2 bra $L__BB0_2;
$L__BB0_3:
  ret;
}
)";
}

Found inlineLoop(const std::string& text) {
  static Module m;
  m = parsedText(text);
  return countedLoop(m, "k");
}

TEST(CountedLoop, RefusesWhatCannotBeInterleaved) {
  EXPECT_TRUE(inlineLoop(loopWith("st.global.f32 [%rd9], %f1;", "")).loop);
  const Found late = inlineLoop(loopWith("", "st.global.f32 [%rd9], %f1;"));
  EXPECT_FALSE(late.loop);
  EXPECT_NE(late.why.find("after stepping"), std::string::npos) << late.why;
  const Found atomic = inlineLoop(loopWith("atom.global.add.f32 %f2, [%rd9], %f1;", ""));
  EXPECT_FALSE(atomic.loop);
  EXPECT_NE(atomic.why.find("atomic"), std::string::npos) << atomic.why;
  const Found barrier = inlineLoop(loopWith("bar.sync 0;", ""));
  EXPECT_FALSE(barrier.loop);
  const Found shuffle = inlineLoop(loopWith("shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;", ""));
  EXPECT_FALSE(shuffle.loop);
  // A jump before the loop (a fusion puts several kernels' code there and must run all of it).
  std::string jump = loopWith("st.global.f32 [%rd9], %f1;", "");
  jump.replace(jump.find("$L__BB0_2:"), 10, "bra.uni $L__BB0_2;\n$L__BB0_2:");
  const Found jumps = inlineLoop(jump);
  EXPECT_FALSE(jumps.loop);
  EXPECT_NE(jumps.why.find("branches before its loop"), std::string::npos) << jumps.why;
  // A step read from memory changes from one iteration to the next.
  const Found loaded = inlineLoop(loopWith("ld.global.u32 %r3, [%rd9];", ""));
  EXPECT_FALSE(loaded.loop);
  EXPECT_NE(loaded.why.find("step"), std::string::npos) << loaded.why;
}

TEST(ValueNumbering, EqualComputationsInDifferentRegistersAreOneValue) {
  const Module m = parsedText(loopWith("st.global.f32 [%rd9], %f1;", ""));
  const Function& f = *m.findFunction("k");
  const Cfg cfg = Cfg::build(f);
  const DefUse du = DefUse::compute(f, cfg);
  ValueNumbering vn(f, cfg, du);
  size_t load = 0, store = 0;
  for (size_t s = 0; s < f.body.size(); ++s) {
    if (f.body[s].kind != StatementKind::kInstruction) continue;
    if (f.body[s].inst.opcode == Opcode::kLd && f.body[s].inst.hasBaseSpace(StateSpace::kGlobal)) load = s;
    if (f.body[s].inst.opcode == Opcode::kSt) store = s;
  }
  ASSERT_GT(load, 0u);
  ASSERT_GT(store, 0u);
  // %r10 at the top of the loop has two reaching definitions: no value until the block's entry is named.
  EXPECT_FALSE(vn.addressValue(load));
  vn.nameAtBlockEntry(cfg.blockOf(load), "%r10", "<iv>");
  const auto a = vn.addressValue(load), b = vn.addressValue(store);
  ASSERT_TRUE(a && b);
  EXPECT_NE(*a, *b);  // two parameters
  EXPECT_EQ(*a, "add.s64(cvta.to.global.u64(ld.param.u64(param:k_param_0+0)),mul.wide.s32(<iv>,4))+0");
  // A loaded value has none.
  EXPECT_FALSE(vn.registerValue("%f1", store));
}

struct FoundGridStride {
  std::optional<GridStrideLoop> loop;
  std::string why;
};

FoundGridStride gridStride(const Module& m, const char* kernel) {
  const Function* f = m.findFunction(kernel);
  EXPECT_NE(f, nullptr) << kernel;
  if (!f) return {};
  const Cfg cfg = Cfg::build(*f);
  const DefUse du = DefUse::compute(*f, cfg);
  FoundGridStride out;
  out.loop = findGridStrideLoop(*f, cfg, du, &out.why);
  return out;
}

TEST(GridStrideLoop, NvccGridStrideLoopsInEveryIndexWidthAndOrder) {
  for (const char* k : {"gs_axpb", "gs_relu_mul", "gs_size_t", "gs_other_order"}) {
    const FoundGridStride g = gridStride(loopsModule(), k);
    ASSERT_TRUE(g.loop) << k << ": " << g.why;
    const Function& f = *loopsModule().findFunction(k);
    EXPECT_EQ(g.loop->bound_params, std::vector<int>{static_cast<int>(f.params.size()) - 1}) << k;
  }
}

TEST(GridStrideLoop, RefusesBodiesThatDependOnTheLaunchOrOnEarlierIterations) {
  const std::pair<const char*, const char*> cases[] = {
      {"gs_reads_tid", "computed from the launch (cvt.rn.f32.u32(mov.u32(%tid.x)))"},
      {"gs_running_sum", "from one iteration to the next"},
      {"gs_param_stride", "more than one block"},  // nvcc unrolls a loop whose step it does not know
      {"gs_half_stride", "thread count"},
      {"gs_shifted_start", "does not start at the thread's index"},
      {"gs_unrolled", "more than one block"},
      {"one_element", "no loop"},
  };
  for (const auto& [kernel, reason] : cases) {
    const FoundGridStride g = gridStride(loopsModule(), kernel);
    EXPECT_FALSE(g.loop) << kernel;
    EXPECT_NE(g.why.find(reason), std::string::npos) << kernel << ": " << g.why;
  }
  // The thread index read inside the loop.
  const Module tm = parsedText(loopWith("mov.u32 %r2, %tid.x;\n  st.global.u32 [%rd9], %r2;", ""));
  const FoundGridStride t = gridStride(tm, "k");
  EXPECT_FALSE(t.loop);
  EXPECT_NE(t.why.find("reads %tid.x"), std::string::npos) << t.why;
  // A bound that is not a parameter, and a loop that runs while i != n.
  std::string computed = loopWith("st.global.f32 [%rd9], %f1;", "");
  computed.replace(computed.find("ld.param.u32 %r6, [k_param_2];"), 30,
                   "ld.param.u32 %r5, [k_param_2];\n  shr.u32 %r6, %r5, 1;");
  const Module cm = parsedText(computed);
  const FoundGridStride c = gridStride(cm, "k");
  EXPECT_FALSE(c.loop);
  EXPECT_NE(c.why.find("bound is not a parameter or a product of parameters"), std::string::npos) << c.why;
  std::string unequal = loopWith("st.global.f32 [%rd9], %f1;", "");
  unequal.replace(unequal.find("setp.lt.s32 %p2"), 15, "setp.ne.s32 %p2");
  const Module um = parsedText(unequal);
  const FoundGridStride u = gridStride(um, "k");
  EXPECT_FALSE(u.loop);
  EXPECT_NE(u.why.find("below one bound"), std::string::npos) << u.why;
}

TEST(GridStrideLoop, ElementPerThreadRunsTheBodyOnce) {
  const FoundGridStride g = gridStride(loopsModule(), "gs_axpb");
  ASSERT_TRUE(g.loop) << g.why;
  const Function& f = *loopsModule().findFunction("gs_axpb");
  const Function one = elementPerThread(f, *g.loop);
  EXPECT_EQ(one.body.size() + 1, f.body.size());
  const Cfg cfg = Cfg::build(one);
  const std::vector<char> in_loop = blocksInLoops(cfg);
  EXPECT_EQ(std::count(in_loop.begin(), in_loop.end(), 1), 0);
  FunctionAnalyses fa(&loopsModule(), one);
  int stores = 0;
  for (const MemoryAccess& a : fa.memoryAccesses()) {
    EXPECT_FALSE(a.in_loop);
    ASSERT_TRUE(a.offset.has_value());
    EXPECT_EQ(a.offset->toString().find("iter"), std::string::npos) << a.offset->toString();
    stores += a.is_write ? 1 : 0;
  }
  EXPECT_EQ(stores, 1);
}

const Module& unrolledModule() {
  static const Module m = parsedTestdata("unrolled.ptx");
  return m;
}

struct FoundView {
  std::optional<ElementView> view;
  std::string why;
};

FoundView elementView(const Function& f) {
  const Cfg cfg = Cfg::build(f);
  const DefUse du = DefUse::compute(f, cfg);
  FoundView out;
  out.view = gridStrideElementView(f, cfg, du, &out.why);
  return out;
}

FoundView elementView(const Module& m, const char* kernel) {
  const Function* f = m.findFunction(kernel);
  EXPECT_NE(f, nullptr) << kernel;
  return f ? elementView(*f) : FoundView{};
}

// The statements of `f` that are instructions, printed.
std::vector<std::string> instructionTexts(const Function& f) {
  std::vector<std::string> out;
  for (const Statement& s : f.body) {
    if (s.kind == StatementKind::kInstruction) out.push_back(s.inst.fullOpcode());
  }
  return out;
}

TEST(GridStrideElementView, NvccUnrolledLoopsGiveTheirRemainderBodyRunOnce) {
  for (const char* k : {"gsu_scale", "gsu_bias", "gsu_gelu", "gsu_next"}) {
    const Function& f = *unrolledModule().findFunction(k);
    const FoundView v = elementView(f);
    ASSERT_TRUE(v.view) << k << ": " << v.why;
    EXPECT_EQ(v.view->unrolled, 4) << k;
    // One loop-free body: no back edge, one store, the loads of one iteration.
    const Cfg cfg = Cfg::build(v.view->function);
    const std::vector<char> in_loop = blocksInLoops(cfg);
    EXPECT_EQ(std::count(in_loop.begin(), in_loop.end(), 1), 0) << k;
    const std::vector<std::string> ops = instructionTexts(v.view->function);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "st.global.f32"), 1) << k;
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "bra"), 1) << k;  // the guard
  }
  // The bound: the last parameter, or the product rows * cols.
  EXPECT_EQ(elementView(unrolledModule(), "gsu_scale").view->bound_params, std::vector<int>{2});
  std::vector<int> product = elementView(unrolledModule(), "gsu_bias").view->bound_params;
  std::sort(product.begin(), product.end());
  EXPECT_EQ(product, (std::vector<int>{2, 3}));
  // `#pragma unroll 4` on a loop nvcc would not otherwise unroll gives another layout (a test after each copy):
  // not read yet.
  const FoundView pragma = elementView(loopsModule(), "gs_unrolled");
  EXPECT_FALSE(pragma.view);
  EXPECT_NE(pragma.why.find("more than one block"), std::string::npos) << pragma.why;
  // The one-loop form is still read as before.
  const FoundView simple = elementView(loopsModule(), "gs_axpb");
  ASSERT_TRUE(simple.view) << simple.why;
  EXPECT_EQ(simple.view->unrolled, 1);
}

TEST(GridStrideElementView, RefusesUnrolledLoopsThatAreNotOneBodyPerIndex) {
  const std::pair<const char*, const char*> cases[] = {
      {"gsu_param_stride", "trip count"},
      {"gsu_running", "reads %f17 as the remainder loop leaves it"},  // the running sum
      {"gsu_reads_tid", "a value of the launch"},
  };
  for (const auto& [kernel, reason] : cases) {
    const FoundView v = elementView(unrolledModule(), kernel);
    EXPECT_FALSE(v.view) << kernel;
    EXPECT_NE(v.why.find(reason), std::string::npos) << kernel << ": " << v.why;
  }
}

// gsu_scale's PTX with `from` (which occurs once) replaced by `to`.
std::optional<Module> mutated(const std::string& from, const std::string& to) {
  std::ifstream in(std::string(KFUSE_PTX_TESTDATA) + "/unrolled.ptx");
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  const size_t begin = text.find(".visible .entry gsu_scale(");
  const size_t end = text.find("\n}\n", begin);
  std::string k = text.substr(begin, end + 3 - begin);
  const size_t at = k.find(from);
  EXPECT_TRUE(at != std::string::npos && k.find(from, at + 1) == std::string::npos) << from;
  if (at == std::string::npos) return std::nullopt;
  k.replace(at, from.size(), to);
  auto parsed = parseModule(".version 9.0\n.target sm_90\n.address_size 64\n" + k, "mutated.ptx");
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  if (!parsed.ok()) return std::nullopt;
  return std::move(parsed).value();
}

TEST(GridStrideElementView, RefusesEveryEditThatBreaksTheUnrolledLoopsMeaning) {
  // Each edit makes some index run twice, not at all, or with another body: the view must not be given.
  const struct {
    const char* from;
    const char* to;
    const char* reason;
  } cases[] = {
      {"and.b32  \t%r26, %r21, 3", "or.b32  \t%r26, %r21, 3", "trip count"},
      {"add.s32 \t%r17, %r1, %r12", "add.s32 \t%r17, %r1, %r1", "trip count"},
      {"and.b32  \t%r26, %r21, 3", "and.b32  \t%r26, %r21, 1", "fewer than U"},
      {"setp.lt.u32 \t%p4, %r3, 3", "setp.lt.u32 \t%p4, %r3, 2", "fewer than U"},
      {"setp.eq.s32 \t%p2, %r26, 0", "setp.ne.s32 \t%p2, %r26, 0", "when the remainder is 0"},
      {"add.s32 \t%r26, %r26, -1", "add.s32 \t%r26, %r26, -2", "exactly the remainder's iterations"},
      {"add.s64 \t%rd24, %rd24, %rd4", "add.s64 \t%rd24, %rd24, %rd13", "does not move with its index"},
      {"add.s32 \t%r27, %r24, %r1", "add.s32 \t%r27, %r23, %r1", "U times the launch's threads"},
      {"setp.lt.s32 \t%p5", "setp.le.s32 \t%p5", "below its bound"},
      {"st.global.f32 \t[%rd18]", "st.global.f32 \t[%rd18+4]", "accesses of its unrolled loop"},
      {"add.f32 \t%f6, %f5, %f5", "add.f32 \t%f6, %f5, %f3", "accesses of its unrolled loop"},
      {"add.s64 \t%rd17, %rd15, %rd10", "add.s64 \t%rd17, %rd15, %rd4", "reads %rd4 as the remainder loop"},
  };
  for (const auto& c : cases) {
    const auto m = mutated(c.from, c.to);
    ASSERT_TRUE(m) << c.from;
    const FoundView v = elementView(*m, "gsu_scale");
    EXPECT_FALSE(v.view) << c.from << " -> " << c.to;
    EXPECT_NE(v.why.find(c.reason), std::string::npos) << c.from << " -> " << c.to << ": " << v.why;
  }
  // The control: the unedited kernel through the same path.
  const auto same = mutated("ret;", "ret;");
  ASSERT_TRUE(same);
  const FoundView v = elementView(*same, "gsu_scale");
  EXPECT_TRUE(v.view) << v.why;
}

}  // namespace
}  // namespace kfuse::ptx
