#include "kfuse/ptx/ranges.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "kfuse/ptx/parser.h"

namespace kfuse::ptx {
namespace {

// nvcc output of ptx/testdata/block_loops.cu.
class BlockRangesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = parseFile(KFUSE_PTX_TESTDATA "/block_loops.ptx");
    ASSERT_TRUE(m.ok()) << m.status().message();
    module_ = std::move(*m);
  }

  struct Kernel {
    const Function* f = nullptr;
    Cfg cfg;
    std::vector<MemoryAccess> accesses;
    std::unique_ptr<BlockRanges> ranges;
    std::string why;
  };

  std::unique_ptr<Kernel> kernel(const std::string& name) {
    auto k = std::make_unique<Kernel>();
    k->f = module_.findFunction(name);
    EXPECT_NE(k->f, nullptr) << name;
    if (!k->f) return k;
    k->cfg = Cfg::build(*k->f);
    const Dominators dom = Dominators::compute(k->cfg);
    const DefUse du = DefUse::compute(*k->f, k->cfg);
    k->accesses = analyzeMemoryAccesses(*k->f, k->cfg, dom, du);
    k->ranges = BlockRanges::prepare(*k->f, k->cfg, k->accesses, &k->why);
    return k;
  }

  Module module_;
};

constexpr int64_t kX = 0x100000, kR = 0x900000;

TEST_F(BlockRangesTest, RowLoopTouchesExactlyItsBlocksRow) {
  auto k = kernel("residual_add_rows");
  ASSERT_TRUE(k->ranges) << k->why;
  for (int64_t b : {0, 3, 31}) {
    LaunchBinding lb;
    lb.ntid = {128, 1, 1};
    lb.nctaid = {32, 1, 1};
    lb.ctaid = {b, 0, 0};
    lb.params = {kX, kR, 512};  // h = 512: four 128-thread strides per row
    const auto r = k->ranges->evaluate(lb);
    ASSERT_EQ(r.size(), 3u);  // load x, load r, store x
    int through_r = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      SCOPED_TRACE(i);
      ASSERT_TRUE(r[i].reached && r[i].bounded);
      // Through x or r: row b, [b*h, (b+1)*h) floats.
      const int64_t base = r[i].lo >= kR ? kR : kX;
      through_r += base == kR;
      EXPECT_EQ(r[i].lo - base, b * 512 * 4);
      EXPECT_EQ(r[i].hi - base, (b + 1) * 512 * 4);
    }
    EXPECT_EQ(through_r, 1);  // x is read and written, r read
  }
}

TEST_F(BlockRangesTest, AllBlocksAtOnceGiveTheLaunchsFootprint) {
  auto k = kernel("residual_add_rows");
  ASSERT_TRUE(k->ranges) << k->why;
  LaunchBinding lb;
  lb.ntid = {128, 1, 1};
  lb.nctaid = {32, 1, 1};
  lb.all_blocks = true;
  lb.params = {kX, kR, 512};
  for (const AccessRange& a : k->ranges->evaluate(lb)) {
    ASSERT_TRUE(a.reached && a.bounded);
    const int64_t base = a.lo >= kR ? kR : kX;
    EXPECT_EQ(a.lo, base);
    EXPECT_EQ(a.hi, base + 32 * 512 * 4);  // 32 rows of 512 floats, no more
  }
}

TEST_F(BlockRangesTest, GridStrideLoopReachesFromItsFirstElementToTheEnd) {
  auto k = kernel("residual_add_strided");
  ASSERT_TRUE(k->ranges) << k->why;
  LaunchBinding lb;
  lb.ntid = {128, 1, 1};
  lb.nctaid = {32, 1, 1};
  lb.ctaid = {2, 0, 0};
  lb.params = {kX, kR, 32 * 512};
  const auto r = k->ranges->evaluate(lb);
  for (size_t i = 0; i < r.size(); ++i) {
    const AccessRange& a = r[i];
    ASSERT_TRUE(a.reached && a.bounded);
    const int64_t base = a.lo >= kR ? kR : kX;
    EXPECT_EQ(a.lo - base, 2 * 128 * 4);  // its first element
    // Up to its last thread's last element, 383 + 3 * 4096 (n = 16384, stride 4096): an interval cannot say
    // "every 32nd chunk".
    EXPECT_EQ(a.hi - base, (383 + 3 * 4096 + 1) * 4);
  }
}

TEST_F(BlockRangesTest, GridStrideLoopsWithAParameterStrideStayInsideTheirArrays) {
  // scale_strided: a remainder loop counting `trips & 3` down to 0 (starts 0..3, by thread), then the loop unrolled
  // by four; sum_strided_ahead: the exit test reads e + k. n = 4096 elements, stride 1024 = the launch's threads.
  // Every access must be bounded inside its array (the unrolled body's e + 3s is bounded by e < n only through the
  // trip arithmetic, which an interval cannot follow: up to 3 strides beyond n, never unbounded).
  constexpr int64_t n = 4096, s = 1024;
  LaunchBinding lb;
  lb.ntid = {128, 1, 1};
  lb.nctaid = {8, 1, 1};
  lb.all_blocks = true;
  for (const auto& [name, params] : std::vector<std::pair<std::string, std::vector<std::optional<int64_t>>>>{
           {"scale_strided", {kX, kR, s, n}}, {"sum_strided_ahead", {kX, kR, 1, s, n}}}) {
    SCOPED_TRACE(name);
    auto k = kernel(name);
    ASSERT_TRUE(k->ranges) << k->why;
    lb.params = params;
    for (const AccessRange& a : k->ranges->evaluate(lb)) {
      if (!a.reached) continue;
      ASSERT_TRUE(a.bounded);
      const int64_t base = a.lo >= kR ? kR : kX;
      EXPECT_GE(a.lo, base);
      EXPECT_LE(a.hi, base + (n + 3 * s) * 4);
    }
  }
  // The ahead loop's reads end exactly at n: its test is e + k < n.
  auto ahead = kernel("sum_strided_ahead");
  lb.params = {kX, kR, 1, s, n};
  int reads = 0;
  for (const AccessRange& a : ahead->ranges->evaluate(lb)) {
    if (a.reached && a.lo >= kR) {
      ++reads;
      EXPECT_EQ(a.lo, kR + 4);
      EXPECT_EQ(a.hi, kR + n * 4);
    }
  }
  EXPECT_GE(reads, 1);
}

TEST_F(BlockRangesTest, ReductionKernelReadsItsRowAndWritesOneElement) {
  auto k = kernel("row_sum");
  ASSERT_TRUE(k->ranges) << k->why;
  LaunchBinding lb;
  lb.ntid = {256, 1, 1};
  lb.nctaid = {16, 1, 1};
  lb.ctaid = {5, 0, 0};
  lb.params = {kX, kR, 1000};
  const auto r = k->ranges->evaluate(lb);
  ASSERT_EQ(r.size(), 2u);
  for (size_t i = 0; i < r.size(); ++i) {
    ASSERT_TRUE(r[i].bounded) << i;
    if (k->accesses[i].is_write) {
      EXPECT_EQ(r[i].lo, kR + 5 * 4);
      EXPECT_EQ(r[i].hi, kR + 6 * 4);
    } else {
      EXPECT_EQ(r[i].lo, kX + 5 * 1000 * 4);
      EXPECT_EQ(r[i].hi, kX + 6 * 1000 * 4);
    }
  }
}

TEST_F(BlockRangesTest, AddressesFromMemoryAreUnbounded) {
  auto k = kernel("gather");
  ASSERT_TRUE(k->ranges) << k->why;
  LaunchBinding lb;
  lb.ntid = {128, 1, 1};
  lb.nctaid = {4, 1, 1};
  lb.params = {kX, kR, 0x500000, 512};
  const auto r = k->ranges->evaluate(lb);
  int unbounded = 0, bounded = 0;
  for (size_t i = 0; i < r.size(); ++i) (r[i].bounded ? bounded : unbounded)++;
  EXPECT_EQ(unbounded, 1);  // x[idx[i]]
  EXPECT_EQ(bounded, 2);    // idx[i], y[i]
}

TEST_F(BlockRangesTest, LoopBoundedByLoadedDataIsUnbounded) {
  auto k = kernel("data_bound");
  ASSERT_TRUE(k->ranges) << k->why;
  LaunchBinding lb;
  lb.ntid = {128, 1, 1};
  lb.nctaid = {4, 1, 1};
  lb.params = {kX, kR, 0x500000};
  const auto r = k->ranges->evaluate(lb, /*budget=*/200);
  // len[b] and y[...] are bounded; x[j] with j < len[b] is not.
  int unbounded = 0;
  for (const AccessRange& a : r) unbounded += a.reached && !a.bounded;
  EXPECT_EQ(r.size(), 3u);
  EXPECT_EQ(unbounded, 1);
}

constexpr int64_t kA = 0x1000000, kW = 0x2000000, kC = 0x3000000;

// The union of the bounded ranges of the reached accesses through each of a, w and c (a GEMM's three matrices at
// kA, kW, kC); a reached access that is not bounded fails the test.
std::map<int64_t, std::pair<int64_t, int64_t>> matrixSpans(const std::vector<AccessRange>& ranges) {
  std::map<int64_t, std::pair<int64_t, int64_t>> span;  // base -> union [lo, hi)
  for (const AccessRange& x : ranges) {
    if (!x.reached) continue;
    EXPECT_TRUE(x.bounded);
    if (!x.bounded) continue;
    const int64_t base = x.lo >= kC ? kC : x.lo >= kW ? kW : kA;
    auto [it, added] = span.emplace(base, std::pair{x.lo, x.hi});
    if (!added) it->second = {std::min(it->second.first, x.lo), std::max(it->second.second, x.hi)};
  }
  return span;
}

TEST_F(BlockRangesTest, UnrolledPointerBumpingLoopCoversExactlyTheMatrices) {
  // nvcc unrolls matmul's k loop by four (pointers bumped, a counter counting down to 0 with !=) and adds a
  // remainder loop: the induction variables' trip counts bound both, to the bytes of a, w and c exactly.
  auto k = kernel("matmul");
  ASSERT_TRUE(k->ranges) << k->why;
  for (const int64_t kk : {64, 66, 3}) {
    SCOPED_TRACE(kk);
    constexpr int64_t m = 32, n = 256;
    LaunchBinding lb;
    lb.ntid = {16, 16, 1};
    lb.nctaid = {n / 16, m / 16, 1};
    lb.all_blocks = true;
    lb.params = {kA, kW, kC, m, n, kk};
    auto span = matrixSpans(k->ranges->evaluate(lb));
    EXPECT_EQ(span[kA], (std::pair<int64_t, int64_t>{kA, kA + m * kk * 4}));
    EXPECT_EQ(span[kW], (std::pair<int64_t, int64_t>{kW, kW + kk * n * 4}));
    EXPECT_EQ(span[kC], (std::pair<int64_t, int64_t>{kC, kC + m * n * 4}));
  }
}

TEST_F(BlockRangesTest, RowLoopTestedBeforeItsIncrementFromPerThreadStartsIsBounded) {
  // tile_rows loads w's tile rows j = tid.y + 16i below 64, the test reading j before `add t, j, 64; mov j, t`:
  // the loop's trip count comes from the test shifted by the step, for every start tid.y in [0, 16) at once.
  auto k = kernel("tile_rows");
  ASSERT_TRUE(k->ranges) << k->why;
  constexpr int64_t m = 64, n = 64;
  auto spans = [&](int64_t kk) {
    LaunchBinding lb;
    lb.ntid = {16, 16, 1};
    lb.nctaid = {n / 16, m / 16, 1};
    lb.all_blocks = true;
    lb.params = {kA, kW, kC, m, n, kk};
    return matrixSpans(k->ranges->evaluate(lb));
  };
  for (const int64_t kk : {64, 128}) {
    SCOPED_TRACE(kk);
    auto span = spans(kk);
    EXPECT_EQ(span[kA], (std::pair<int64_t, int64_t>{kA, kA + m * kk * 4}));
    EXPECT_EQ(span[kW], (std::pair<int64_t, int64_t>{kW, kW + kk * n * 4}));
    EXPECT_EQ(span[kC], (std::pair<int64_t, int64_t>{kC, kC + m * n * 4}));
  }
  // k = 100: the guard `t + j < k && col < n` is one or.pred, which narrows nothing; the span stays that of the
  // two tiles the loop runs (k rounded up to 128), bounded.
  auto span = spans(100);
  EXPECT_EQ(span[kW], (std::pair<int64_t, int64_t>{kW, kW + 128 * n * 4}));
}

TEST_F(BlockRangesTest, ThreadsLeavingBeforeABarrierAreFoundUnlessTheBranchIsUniform) {
  for (const auto& [name, safe] : std::vector<std::pair<std::string, bool>>{{"row_sum", true},
                                                                            {"residual_add_rows", true},
                                                                            {"early_exit_then_barrier", false},
                                                                            {"uniform_exit_then_barrier", true}}) {
    SCOPED_TRACE(name);
    const Function* f = module_.findFunction(name);
    ASSERT_NE(f, nullptr);
    const Cfg cfg = Cfg::build(*f);
    std::string why;
    EXPECT_EQ(threadsExitAfterTheirLastBarrier(*f, cfg, &why), safe) << why;
    if (!safe) {
      EXPECT_NE(why.find("still meet a barrier"), std::string::npos) << why;
    }
  }
}

// The ranges of every access of kernel `name` in testdata file `file`, with `from` (when given; it must occur)
// replaced by `to`, for one block bound by `lb` (empty, with a test failure, when the kernel cannot be prepared).
std::vector<AccessRange> rangesOf(const char* file, const char* name, const LaunchBinding& lb,
                                  const std::string& from = "", const std::string& to = "") {
  std::ifstream in(std::string(KFUSE_PTX_TESTDATA "/") + file);
  std::stringstream buf;
  buf << in.rdbuf();
  std::string text = buf.str();
  if (!from.empty()) {
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at == std::string::npos) return {};
    text.replace(at, from.size(), to);
  }
  auto m = parseModule(text, file);
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return {};
  const Function* f = m->findFunction(name);
  EXPECT_NE(f, nullptr) << name;
  if (!f) return {};
  const Cfg cfg = Cfg::build(*f);
  const DefUse du = DefUse::compute(*f, cfg);
  const std::vector<MemoryAccess> accesses = analyzeMemoryAccesses(*f, cfg, Dominators::compute(cfg), du);
  std::string why;
  auto ranges = BlockRanges::prepare(*f, cfg, accesses, &why);
  EXPECT_TRUE(ranges) << why;
  return ranges ? ranges->evaluate(lb) : std::vector<AccessRange>{};
}

TEST(BlockRangesSidePath, AChainThroughARegisterRedefinedOnASidePathIsNoInductionVariable) {
  LaunchBinding lb;
  lb.ntid = {32, 1, 1};
  lb.params = {0x100000};
  const auto r = rangesOf("side_path_iv.ptx", "side_path", lb);
  ASSERT_EQ(r.size(), 1u);
  // Threads other than 0 move 4100 bytes per iteration: the 8th load is at p + 7 * 4100. Taking x for an induction
  // variable of step 4 would give [p, p + 32).
  ASSERT_TRUE(r[0].reached);
  if (r[0].bounded) {
    EXPECT_LE(r[0].lo, 0x100000);
    EXPECT_GE(r[0].hi, 0x100000 + 7 * 4100 + 4);
  }
}

TEST(BlockRangesNested, AVariableBumpedInAnInnerLoopCountsEveryInnerIteration) {
  LaunchBinding lb;
  lb.params = {0x100000};
  const auto r = rangesOf("nested_iv.ptx", "nested", lb);
  ASSERT_EQ(r.size(), 1u);
  ASSERT_TRUE(r[0].reached);
  // 4 x 8 loads, 4 bytes apart: [p, p + 128). Taking x for an outer induction variable would give [p, p + 16).
  if (r[0].bounded) {
    EXPECT_LE(r[0].lo, 0x100000);
    EXPECT_GE(r[0].hi, 0x100000 + 128);
  }
}

// The range of the one access of kernel `name` in rem_idiom.ptx for a block of 256 threads, p = 0x100000.
AccessRange remIdiomRange(const char* name) {
  LaunchBinding lb;
  lb.ntid = {256, 1, 1};
  lb.params = {0x100000};
  const auto r = rangesOf("rem_idiom.ptx", name, lb);
  EXPECT_EQ(r.size(), 1u);
  return r.empty() ? AccessRange{} : r[0];
}

TEST(BlockRangesRemainder, NvccsSignedRemainderByAPowerOfTwoStaysInsideTheDivisor) {
  // tid.x % 16 in [0, 15]: the load touches [p, p + 64), however the mask is written.
  for (const char* name : {"rem_neg", "rem_bits"}) {
    const AccessRange r = remIdiomRange(name);
    ASSERT_TRUE(r.reached && r.bounded) << name;
    EXPECT_EQ(r.lo, 0x100000) << name;
    EXPECT_EQ(r.hi, 0x100000 + 64) << name;
  }
}

TEST(BlockRangesRemainder, AnOperandChangedBetweenTheStepsIsNoRemainder) {
  // x grows by 1000 between the add and the sub: the value is x + 1000 - (x & -16), in [1000, 1015]; the range must
  // hold it (an unbounded one does).
  const AccessRange r = remIdiomRange("rem_moved");
  ASSERT_TRUE(r.reached);
  if (r.bounded) {
    EXPECT_LE(r.lo, 0x100000 + 4000);
    EXPECT_GE(r.hi, 0x100000 + 4064);
  }
}

// attention.ptx (nvcc output of attention.cu), a block of 128 threads, the pointers at 0x100000 and 0x900000.
std::vector<AccessRange> attentionRanges(const char* name, std::vector<std::optional<int64_t>> scalars,
                                         bool all_blocks = false) {
  LaunchBinding lb;
  lb.ntid = {128, 1, 1};
  lb.nctaid = {4, 1, 1};
  lb.all_blocks = all_blocks;
  lb.params = {0x900000, 0x100000};
  lb.params.insert(lb.params.end(), scalars.begin(), scalars.end());
  return rangesOf("attention.ptx", name, lb);
}

TEST(BlockRangesRemainder, ARemainderFromTheQuotientStaysInsideTheDivisor) {
  // t2 = idx - (idx / 16) * 16 in [0, 15]: k[t2] touches [k, k + 64) (intervals alone give idx - [0, 112]).
  const auto r = attentionRanges("qk_rem", {16});
  ASSERT_EQ(r.size(), 2u);  // load k, store out
  ASSERT_TRUE(r[0].reached && r[0].bounded);
  EXPECT_EQ(r[0].lo, 0x100000);
  EXPECT_EQ(r[0].hi, 0x100000 + 64);
}

TEST(BlockRangesRemainder, AQuotientTimesAnotherDivisorIsNoRemainder) {
  // idx - (idx / 16) * 17 + 4096 takes 4096 - 7 .. 4096 + 15 in block 0 (idx = 127: 127 - 7 * 17 = 8; idx = 112:
  // 112 - 119 = -7): the range must hold [k + 4 * 4089, k + 4 * 4112).
  const auto r = attentionRanges("qk_not_rem", {16});
  ASSERT_EQ(r.size(), 2u);
  ASSERT_TRUE(r[0].reached);
  if (r[0].bounded) {
    EXPECT_LE(r[0].lo, 0x100000 + 4 * 4089);
    EXPECT_GE(r[0].hi, 0x100000 + 4 * 4112);
  }
}

TEST(BlockRangesCausal, ALoopBoundThatDiffersPerThreadBoundsEveryThreadsTrips) {
  // Row r reads p[r * 16 + t2], t2 <= r % 16: block 1 (rows 128..255) reads [p + 128 * 64, p + 256 * 64), exactly
  // (the last row of the block, 255, has t = 15 and reads its whole row).
  LaunchBinding lb;
  lb.ntid = {128, 1, 1};
  lb.nctaid = {4, 1, 1};
  lb.ctaid = {1, 0, 0};
  lb.params = {0x900000, 0x100000, 512, 16};
  const auto r = rangesOf("attention.ptx", "causal_rows", lb);
  ASSERT_EQ(r.size(), 2u);  // load p, store out
  ASSERT_TRUE(r[0].reached && r[0].bounded);
  EXPECT_EQ(r[0].lo, 0x100000 + 128 * 64);
  EXPECT_EQ(r[0].hi, 0x100000 + 256 * 64);
  // All blocks: the rows' extent, [p, p + 512 * 64).
  lb.all_blocks = true;
  const auto all = rangesOf("attention.ptx", "causal_rows", lb);
  ASSERT_TRUE(all.size() == 2u && all[0].bounded);
  EXPECT_EQ(all[0].lo, 0x100000);
  EXPECT_EQ(all[0].hi, 0x100000 + 512 * 64);
}

TEST(BlockRangesCausal, AnUnrolledLoopWithAPerThreadTripCountIsBounded) {
  // nvcc unrolls the causal loop by four: a counter t - ((t + 1) & 3), one below a multiple of four, steps by -4
  // to -1, then a remainder loop. Every start meets the bound, so the trip count is the farthest start's.
  LaunchBinding lb;
  lb.ntid = {128, 1, 1};
  lb.nctaid = {4, 1, 1};
  lb.ctaid = {1, 0, 0};
  lb.params = {0x900000, 0x100000, 512, 16};
  const auto r = rangesOf("attention.ptx", "causal_unrolled", lb);
  ASSERT_GE(r.size(), 5u);  // four unrolled loads, the remainder's, the store
  for (size_t i = 0; i + 1 < r.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(r[i].reached && r[i].bounded);
    // Rows 128..255: [p + 128 * 64, p + 256 * 64), give or take the unrolled copies' offsets.
    EXPECT_GE(r[i].lo, 0x100000 + 128 * 64);
    EXPECT_LE(r[i].hi, 0x100000 + 256 * 64 + 16);
  }
}

TEST(BlockRangesCausal, ACounterThatStepsPastItsBoundIsUnbounded) {
  // The same kernel with the counter tested against -2, or stepping by -8: a start 3 (mod 4) would step past the
  // bound and never stop, so nothing bounds the unrolled loads.
  LaunchBinding lb;
  lb.ntid = {128, 1, 1};
  lb.nctaid = {4, 1, 1};
  lb.ctaid = {1, 0, 0};
  lb.params = {0x900000, 0x100000, 512, 16};
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"%r22, -1;", "%r22, -2;"},
                                 std::pair<std::string, std::string>{"%r22, %r22, -4;", "%r22, %r22, -8;"}}) {
    const auto r = rangesOf("attention.ptx", "causal_unrolled", lb, from, to);
    ASSERT_FALSE(r.empty());
    EXPECT_FALSE(r[0].bounded) << to;
  }
}

// The ranges of value_rows (attention.ptx, possibly edited: `from` replaced by `to`) for block 1 of 128 rows, T = 16,
// hs = 8: out at 0x900000, att at 0x100000, v at 0x500000.
std::vector<AccessRange> valueRowsRanges(const std::string& from = "", const std::string& to = "") {
  LaunchBinding lb;
  lb.ntid = {128, 1, 1};
  lb.nctaid = {4, 1, 1};
  lb.ctaid = {1, 0, 0};
  lb.params = {0x900000, 0x100000, 0x500000, 512, 16, 8};
  return rangesOf("attention.ptx", "value_rows", lb, from, to);
}

TEST(BlockRangesCausal, ALoopTestingACopyOfItsVariableMadeAtItsTopIsBounded) {
  // `mov t, t2` at the loop's top, `add t2, t, 1`, `setp t < row % 16`: the test reads t2 before its step. Every
  // access is bounded: att within rows 128..255 ([att + 128 * 64, att + 256 * 64)), v within its 16 rows of 8.
  const auto r = valueRowsRanges();
  ASSERT_FALSE(r.empty());
  int through_att = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    SCOPED_TRACE(i);
    if (!r[i].reached) continue;
    ASSERT_TRUE(r[i].bounded);
    if (r[i].lo >= 0x100000 && r[i].lo < 0x500000) {
      ++through_att;
      EXPECT_GE(r[i].lo, 0x100000 + 128 * 64);
      EXPECT_LE(r[i].hi, 0x100000 + 256 * 64);
    } else if (r[i].lo >= 0x500000 && r[i].lo < 0x900000) {
      EXPECT_LE(r[i].hi, 0x500000 + 16 * 8 * 4 + 16);
    }
  }
  EXPECT_GE(through_att, 1);
}

TEST(BlockRangesCausal, ACopyWithAnOffsetIsNoCopy) {
  // t = t2 - 2, then t2 = t + 1: t2 decreases and the loop never leaves while t < row % 16; nothing bounds it.
  const auto r = valueRowsRanges("mov.u32 \t%r18, %r48;", "add.s32 \t%r18, %r48, -2;");
  ASSERT_FALSE(r.empty());
  bool unbounded_att = false;
  for (const AccessRange& a : r) unbounded_att = unbounded_att || (a.reached && !a.bounded);
  EXPECT_TRUE(unbounded_att);
}

TEST(BlockRangesOverflow, ProductsAndSumsThatMayWrapAreUnboundedNotUndefined) {
  LaunchBinding lb;
  lb.ntid = {128, 1, 1};
  // a * b overflows 64 bits (and, as intervals of unknown 64-bit values, 128 bits); tid + INT32_MAX wraps.
  lb.params = {0x100000, int64_t{1} << 40, int64_t{1} << 40};
  const auto r = rangesOf("wide_products.ptx", "wide_products", lb);
  ASSERT_EQ(r.size(), 2u);
  for (const AccessRange& a : r) {
    EXPECT_TRUE(a.reached);
    EXPECT_FALSE(a.bounded);
  }
  lb.params = {0x100000, std::nullopt, std::nullopt};  // unknown 64-bit values: [0, 2^64) each
  const auto unknown = rangesOf("wide_products.ptx", "wide_products", lb);
  ASSERT_EQ(unknown.size(), 2u);
  for (const AccessRange& a : unknown) EXPECT_FALSE(a.bounded);
}

// A straight-line kernel of `groups` guarded stores, each with registers of its own (nvcc's numbering in unrolled
// code): `branches` puts each store in a basic block of its own, behind a branch over it.
std::string guardedStores(int groups, bool branches) {
  std::string t =
      ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p0, .param .u32 p1)\n{\n"
      "\t.reg .pred %p<" +
      std::to_string(groups + 1) + ">;\n\t.reg .b32 %r<" + std::to_string(2 * groups + 4) + ">;\n\t.reg .b64 %rd<" +
      std::to_string(2 * groups + 4) +
      ">;\n\tld.param.u64 %rd1, [p0];\n\tld.param.u32 %r1, [p1];\n\tmov.u32 %r2, %tid.x;\n";
  for (int k = 0; k < groups; ++k) {
    const std::string r = std::to_string(3 + 2 * k), rd = std::to_string(2 + 2 * k), p = std::to_string(k + 1);
    t += "\tadd.s32 %r" + r + ", %r2, " + std::to_string(k) + ";\n";
    t += "\tsetp.ge.s32 %p" + p + ", %r" + r + ", %r1;\n";
    t += branches ? "\t@%p" + p + " bra $L" + std::to_string(k) + ";\n" : "";
    t += "\tmul.wide.s32 %rd" + rd + ", %r" + r + ", 4;\n";
    t += "\tadd.s64 %rd" + std::to_string(3 + 2 * k) + ", %rd1, %rd" + rd + ";\n";
    t += std::string(branches ? "" : "\t@!%p" + p) + "\tst.global.u32 [%rd" + std::to_string(3 + 2 * k) + "], %r" + r +
         ";\n";
    t += branches ? "$L" + std::to_string(k) + ":\n" : "";
  }
  return t + "\tret;\n}\n";
}

struct Prepared {
  Module m;
  Cfg cfg;
  std::vector<MemoryAccess> accesses;
  std::unique_ptr<BlockRanges> ranges;
  std::string why;
};

std::unique_ptr<Prepared> prepareText(const std::string& text) {
  auto p = std::make_unique<Prepared>();
  auto m = parseModule(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return p;
  p->m = std::move(*m);
  const Function& f = p->m.functions[0];
  p->cfg = Cfg::build(f);
  const Dominators dom = Dominators::compute(p->cfg);
  const DefUse du = DefUse::compute(f, p->cfg);
  p->accesses = analyzeMemoryAccesses(f, p->cfg, dom, du);
  p->ranges = BlockRanges::prepare(f, p->cfg, p->accesses, &p->why);
  return p;
}

// The guards of a long straight-line kernel: each comparison narrows its own store, however many registers the
// kernel has (the facts are kept per predicate, not per register).
TEST(BlockRangesLarge, EveryGuardOfALongKernelBoundsItsStore) {
  const auto p = prepareText(guardedStores(20000, /*branches=*/false));
  ASSERT_TRUE(p->ranges) << p->why;
  LaunchBinding lb;
  lb.ntid = {64, 1, 1};
  lb.params = {0x100000, 64};  // element tid + k stored only while tid + k < 64
  const auto r = p->ranges->evaluate(lb);
  ASSERT_EQ(r.size(), 20000u);
  for (int k : {0, 1, 63, 64, 19999}) {
    SCOPED_TRACE(k);
    ASSERT_TRUE(r[static_cast<size_t>(k)].reached);
    ASSERT_TRUE(r[static_cast<size_t>(k)].bounded);
    EXPECT_EQ(r[static_cast<size_t>(k)].lo, 0x100000 + 4 * k);
  }
}

// Many blocks and many registers: the state evaluate() would keep per block is refused up front, with a reason,
// rather than gigabytes of intervals (the analyzer then treats the kernel's accesses as unbounded).
TEST(BlockRangesLarge, ManyBlocksTimesManyRegistersIsRefusedWithAReason) {
  const auto big = prepareText(guardedStores(3000, /*branches=*/true));  // ~6,000 blocks x ~9,000 registers
  EXPECT_FALSE(big->ranges);
  EXPECT_NE(big->why.find("basic blocks x"), std::string::npos) << big->why;
  const auto small = prepareText(guardedStores(300, /*branches=*/true));
  EXPECT_TRUE(small->ranges) << small->why;
}

}  // namespace
}  // namespace kfuse::ptx
