// The work bounds of the legality checks: a check whose cost grows with the product of two sizes (blocks x a
// kernel's statements, one kernel's accesses x another's) stops at its budget and leaves the pair unproven, so a huge
// kernel cannot keep `kfuse analyze` busy for hours (a 1M-instruction kernel in 4,096 blocks was one).
// The kernels are PTX written here, in nvcc's shape: `groups` loads and stores of one element per thread each.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "kfuse/analyzer/analysis.h"
#include "legality/block_level.h"
#include "legality/thread_locality.h"

namespace kfuse::analyzer {
namespace {

using core::Id;

// copyk(const float* in, float* out): out[t + 1024 k] = in[t + 1024 k] for k < groups, t the thread's index.
std::string unrolledCopy(int groups) {
  std::string s =
      ".version 9.0\n.target sm_90\n.address_size 64\n\n"
      ".visible .entry _Z5copykPKfPf(\n\t.param .u64 _Z5copykPKfPf_param_0,\n\t.param .u64 _Z5copykPKfPf_param_1\n)\n"
      "{\n\t.reg .b32 %r<6>;\n\t.reg .f32 %f<" +
      std::to_string(groups + 1) +
      ">;\n\t.reg .b64 %rd<8>;\n\n"
      "\tld.param.u64 %rd1, [_Z5copykPKfPf_param_0];\n\tld.param.u64 %rd2, [_Z5copykPKfPf_param_1];\n"
      "\tcvta.to.global.u64 %rd3, %rd1;\n\tcvta.to.global.u64 %rd4, %rd2;\n"
      "\tmov.u32 %r1, %ctaid.x;\n\tmov.u32 %r2, %ntid.x;\n\tmov.u32 %r3, %tid.x;\n"
      "\tmad.lo.s32 %r4, %r1, %r2, %r3;\n\tmul.wide.s32 %rd5, %r4, 4;\n"
      "\tadd.s64 %rd6, %rd3, %rd5;\n\tadd.s64 %rd7, %rd4, %rd5;\n";
  for (int k = 0; k < groups; ++k) {
    const std::string off = std::to_string(4096 * k);
    s += "\tld.global.f32 %f" + std::to_string(k) + ", [%rd6+" + off + "];\n";
    s += "\tst.global.f32 [%rd7+" + off + "], %f" + std::to_string(k) + ";\n";
  }
  return s + "\tret;\n}\n";
}

// A trace of copyk launched twice, the second reading what the first wrote: a -> b, then b -> c.
core::Trace twoCopies(int groups, uint32_t blocks) {
  core::Trace t;
  t.devices.push_back(core::Device{1, 0, "NVIDIA H100 80GB HBM3", 9, 0, 132, 85'520'809'984ull, 1'980'000, ""});
  t.streams.push_back(core::Stream{1, 0, 0, 7, 0, true});
  core::Module m;
  m.id = 1;
  m.kind = core::ImageKind::kPtx;
  const std::string text = unrolledCopy(groups);
  m.image.assign(text.begin(), text.end());
  m.hash = core::sha256Hex(m.image);
  t.modules.push_back(m);
  t.functions.push_back(core::KernelFunction{1, 1, "_Z5copykPKfPf", "", {}});
  const uint64_t bytes = uint64_t{4096} * static_cast<uint64_t>(groups) + uint64_t{4} * blocks * 256;
  for (Id a = 1; a <= 3; ++a) {
    t.allocations.push_back(core::Allocation{a, 0, 0x7f0000000000ull + uint64_t(a) * 0x10000000, bytes,
                                             core::AllocationKind::kDevice, 0, core::kNoTime});
  }
  int64_t clock = 1'000'000;
  for (Id from = 1; from <= 2; ++from) {
    core::Launch l;
    l.id = from;
    l.stream_id = 1;
    l.function_id = 1;
    l.grid = {blocks, 1, 1};
    l.block = {256, 1, 1};
    l.api_start_ns = clock;
    l.api_end_ns = clock + 2'000;
    l.gpu_start_ns = clock + 5'000;
    l.gpu_end_ns = clock + 15'000;
    clock += 20'000;
    for (int p = 0; p < 2; ++p) {
      const Id a = from + Id(p);
      const uint64_t address = t.allocations[size_t(a - 1)].address;
      l.arg_bytes.resize(l.arg_bytes.size() + 8);
      std::memcpy(l.arg_bytes.data() + 8 * p, &address, 8);
      l.pointer_args.push_back(core::PointerArg{p, address, a, 0});
    }
    t.launches.push_back(l);
  }
  return t;
}

const Candidate* vertical(const Report& r) {
  for (const Candidate& c : r.candidates) {
    if (c.kind == CandidateKind::kVertical) return &c;
  }
  return nullptr;
}

Report analyzeTrace(const core::Trace& t) {
  ImportResult r;
  r.trace = t;
  r.format = "kfuse";
  AnalysisOptions options;
  options.keep_no_gain = true;
  auto report = analyze(r, "budgets.sqlite", options);
  EXPECT_TRUE(report.ok()) << report.status().message();
  return report.ok() ? *report : Report{};
}

std::string reasons(const Candidate& c) {
  std::string s = c.verdict;
  for (const std::string& r : c.reasons) s += "\n" + r;
  return s;
}

TEST(LegalityBudgets, ThreadLocalityComparesAccessPairsUpToItsBudget) {
  // 300 x 300 pairs: under the budget, every pair compared and the pair proven thread-local.
  const Report small = analyzeTrace(twoCopies(300, 4));
  const Candidate* c = vertical(small);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->legality, Legality::kProven) << reasons(*c);
  EXPECT_EQ(c->fusion, FusionKind::kThreadLocal) << reasons(*c);
  // 400 x 400 pairs are past it: thread locality is not proven, and the reason names the sizes and the budget. The
  // block-level check (linear in the accesses) still proves the pair, with a barrier between the parts.
  static_assert(400 * 400 > locality::kMaxAccessPairs && 300 * 300 <= locality::kMaxAccessPairs);
  const Report big = analyzeTrace(twoCopies(400, 4));
  c = vertical(big);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->fusion, FusionKind::kBlockLevel) << reasons(*c);
  EXPECT_NE(reasons(*c).find("thread-local fusion does not apply: allocation 2: 400 accesses in copyk(float const*, "
                             "float*) x 400 in copyk(float const*, float*) are more pairs than the " +
                             std::to_string(locality::kMaxAccessPairs) + " a thread-locality check compares"),
            std::string::npos)
      << reasons(*c);
}

block_level::Result blockLevel(int groups, uint32_t blocks) {
  const core::Trace t = twoCopies(groups, blocks);
  const KernelCatalog catalog = KernelCatalog::build(t);
  const KernelFacts* k = catalog.find(1);
  EXPECT_TRUE(k && k->block_ranges) << (k ? k->block_ranges_problem : "no facts");
  if (!k || !k->block_ranges) return {};
  return block_level::check(*k, t.launches[0], *k, t.launches[1]);
}

TEST(LegalityBudgets, BlockLevelCheckBoundsBlocksTimesKernelSize) {
  // 16 blocks of a 2,000-group kernel: checked (whatever the verdict, it was computed).
  const block_level::Result few = blockLevel(2000, 16);
  EXPECT_EQ(few.why.find("not checked"), std::string::npos) << few.why;
  // 16,384 blocks (the block count the check accepts) x about 12,000 statements and registers: past the work
  // budget, refused before any block is evaluated.
  const block_level::Result many = blockLevel(2000, block_level::kMaxBlocks);
  EXPECT_EQ(many.legality, Legality::kLikely);
  EXPECT_NE(many.why.find("16384 blocks x "), std::string::npos) << many.why;
  EXPECT_NE(many.why.find("more work than the check's budget of " + std::to_string(block_level::kMaxWork)),
            std::string::npos)
      << many.why;
  // 200 groups: little work per block, but 800 accesses x 16,384 blocks are more byte ranges than it keeps.
  const block_level::Result ranges = blockLevel(200, block_level::kMaxBlocks);
  EXPECT_EQ(ranges.legality, Legality::kLikely);
  EXPECT_NE(ranges.why.find("16384 blocks x 800 global accesses"), std::string::npos) << ranges.why;
  const block_level::Result few_ranges = blockLevel(200, 16);
  EXPECT_EQ(few_ranges.why.find("not checked"), std::string::npos) << few_ranges.why;
}

}  // namespace
}  // namespace kfuse::analyzer
