// Thread-locality arithmetic, each case worked out by hand in its comment.
#include "legality/thread_locality.h"

#include <gtest/gtest.h>

namespace kfuse::analyzer::locality {
namespace {

using ptx::AffineExpr;

AffineExpr atom(const char* a) {
  return AffineExpr::atom(a);
}
AffineExpr num(int64_t c) {
  return AffineExpr::constant(c);
}

// i = ctaid.x*ntid.x + tid.x, the global index of a 1-D launch.
AffineExpr globalX() {
  return atom("ctaid.x") * atom("ntid.x") + atom("tid.x");
}

const Shape kShape1d{{64, 1, 1}, {256, 1, 1}};

LinearForm bound(const AffineExpr& e, const Shape& s = kShape1d, const AtomValues& v = {}) {
  std::string why;
  auto f = bind(e, s, v, &why);
  EXPECT_TRUE(f.has_value()) << why;
  return f.value_or(LinearForm{});
}

ptx::GuardCondition compare(AffineExpr lhs, ptx::CmpOp op, AffineExpr rhs, bool is_signed = true, int bits = 32) {
  ptx::GuardCondition g;
  g.text = lhs.toString() + " " + ptx::cmpOpSymbol(op) + " " + rhs.toString();
  g.structured = true;
  g.lhs = std::move(lhs);
  g.rhs = std::move(rhs);
  g.cmp = op;
  g.is_signed = is_signed;
  g.bits = bits;
  return g;
}

Access access(const AffineExpr& offset, uint32_t bytes = 4, int64_t base = 0, const Shape& s = kShape1d,
              const AtomValues& v = {}, const std::vector<ptx::GuardCondition>& guard = {}) {
  return Access{bound(offset, s, v), base, bytes, bindGuard(guard, s, v)};
}

TEST(ThreadLocality, BindsLaunchShapeAndArgumentValues) {
  // 4*(ctaid.x*ntid.x + tid.x + param2) with ntid.x = 256, param2 = 3: 1024*ctaid.x + 4*tid.x + 12.
  const LinearForm f = bound(num(4) * (globalX() + atom("param2")), kShape1d, {{"param2", 3}});
  EXPECT_EQ(f.coef[kCtaidX], 1024);
  EXPECT_EQ(f.coef[kTidX], 4);
  EXPECT_EQ(f.constant, 12);
  EXPECT_EQ(f.toString(), "1024*ctaid.x + 4*tid.x + 12");
}

TEST(ThreadLocality, RefusesToBindUnknownAtomsAndProductsOfThreadIndices) {
  std::string why;
  EXPECT_FALSE(bind(atom("tid.x") + atom("param5"), kShape1d, {}, &why));
  EXPECT_NE(why.find("param5"), std::string::npos);
  EXPECT_FALSE(bind(atom("tid.x") * atom("ctaid.x"), kShape1d, {}, &why));
  EXPECT_NE(why.find("two thread indices"), std::string::npos);
}

TEST(ThreadLocality, SeparationOfTheGlobalIndexIsTheElementSize) {
  // 4*tid.x + 1024*ctaid.x, tid.x < 256: sorted (4, 256), (1024, 64); 1024 - 4*255 = 4, so the least distance is 4.
  EXPECT_EQ(separation(bound(num(4) * globalX()), {}, kShape1d), 4);
  // 4*tid.x + 512*ctaid.x: 512 - 4*255 < 0, threads 128 apart in tid collide with the next block.
  EXPECT_EQ(separation(bound(num(4) * (atom("ctaid.x") * num(128) + atom("tid.x"))), {}, kShape1d), 0);
  // A variable the form ignores, with more than one value: two blocks touch the same bytes.
  EXPECT_EQ(separation(bound(num(4) * atom("tid.x")), {}, kShape1d), 0);
  // One thread in all: nobody to collide with.
  EXPECT_EQ(separation(bound(num(0)), {}, Shape{{1, 1, 1}, {1, 1, 1}}), INT64_MAX);
}

TEST(ThreadLocality, GuardsNarrowACompositeIndex) {
  // A 2-D launch, grid 7x4 of 16x16 blocks, over a 100x50 image: col = 16*ctaid.x + tid.x ranges to 111, so
  // 4*(100*row + col) collides without the guard (col 100 of row r is col 0 of row r+1). With col < 100 and
  // row < 50 the items are col (coefficient 4, 100 values) and row (400, 50 values): 400 - 4*99 = 4.
  const Shape s{{7, 4, 1}, {16, 16, 1}};
  const AffineExpr col = atom("ctaid.x") * atom("ntid.x") + atom("tid.x");
  const AffineExpr row = atom("ctaid.y") * atom("ntid.y") + atom("tid.y");
  const AtomValues v{{"param2", 100}, {"param3", 50}};
  const AffineExpr offset = num(4) * (row * atom("param2") + col);
  EXPECT_EQ(separation(bound(offset, s, v), {}, s), 0);
  const Domain d =
      bindGuard({compare(col, ptx::CmpOp::kLt, atom("param2")), compare(row, ptx::CmpOp::kLt, atom("param3"))}, s, v);
  ASSERT_FALSE(d.never);
  ASSERT_EQ(d.constraints.size(), 2u);
  EXPECT_EQ(separation(bound(offset, s, v), d.constraints, s), 4);
}

TEST(ThreadLocality, UnsignedComparisonsThatCouldWrapAreDropped) {
  // tid.x - 1 < n as u32: at tid.x = 0 the left side wraps to 2^32 - 1, so the comparison is no bound.
  const Domain d =
      bindGuard({compare(atom("tid.x") - num(1), ptx::CmpOp::kLt, num(10), /*is_signed=*/false)}, kShape1d, {});
  EXPECT_TRUE(d.constraints.empty());
  // The same comparison signed is the bound tid.x <= 10.
  const Domain s = bindGuard({compare(atom("tid.x") - num(1), ptx::CmpOp::kLt, num(10))}, kShape1d, {});
  ASSERT_EQ(s.constraints.size(), 1u);
  EXPECT_EQ(s.constraints[0].hi, 10);
}

TEST(ThreadLocality, NotEqualCutsTheEndsOfARangeAndNothingInside) {
  // A stencil's interior: x < n, x != 0, x != n - 1 (n = 100) is 1 <= x <= 98, exactly; x != 50 inside the range
  // says nothing an interval can hold, so the domain is no longer exact.
  const AffineExpr x = globalX();
  const Domain d = bindGuard({compare(x, ptx::CmpOp::kNe, num(0)), compare(x, ptx::CmpOp::kNe, atom("param1") - num(1)),
                              compare(x, ptx::CmpOp::kLt, atom("param1"))},
                             kShape1d, {{"param1", 100}});
  ASSERT_EQ(d.constraints.size(), 1u);
  EXPECT_EQ(d.constraints[0].lo, 1);
  EXPECT_EQ(d.constraints[0].hi, 98);
  EXPECT_TRUE(d.exact);
  const auto r = range(bound(num(4) * x - num(4), kShape1d, {}), d, kShape1d);  // in[x - 1]
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 0);
  const Domain inside = bindGuard({compare(x, ptx::CmpOp::kNe, num(50))}, kShape1d, {});
  EXPECT_TRUE(inside.constraints.empty());
  EXPECT_FALSE(inside.exact);
  // Only value 0 possible and excluded: no thread.
  EXPECT_TRUE(
      bindGuard({compare(x, ptx::CmpOp::kNe, num(0)), compare(x, ptx::CmpOp::kLt, num(1))}, kShape1d, {}).never);
}

TEST(ThreadLocality, AGuardFalseForEveryThreadMeansTheAccessNeverRuns) {
  // n > 0 with n = 0.
  EXPECT_TRUE(bindGuard({compare(atom("param1"), ptx::CmpOp::kGt, num(0))}, kShape1d, {{"param1", 0}}).never);
  EXPECT_FALSE(bindGuard({compare(atom("param1"), ptx::CmpOp::kGt, num(0))}, kShape1d, {{"param1", 5}}).never);
}

TEST(ThreadLocality, SameOffsetIsThreadLocal) {
  const PairVerdict v = checkPair(access(num(4) * globalX()), access(num(4) * globalX()), kShape1d);
  EXPECT_EQ(v.verdict, Verdict::kThreadLocal) << v.why;
}

TEST(ThreadLocality, ShiftThroughAParameterValueCrossesThreads) {
  // Producer writes 4*(i + param2) with param2 = 0, consumer reads 4*(i + param2) with param2 = 1: thread i reads
  // byte 4i + 4, which thread i + 1 wrote.
  const AffineExpr shifted = num(4) * (globalX() + atom("param2"));
  const PairVerdict v = checkPair(access(shifted, 4, 0, kShape1d, {{"param2", 0}}),
                                  access(shifted, 4, 0, kShape1d, {{"param2", 1}}), kShape1d);
  EXPECT_EQ(v.verdict, Verdict::kCrossThread) << v.why;
  // Equal shifts: the same thread.
  const PairVerdict same = checkPair(access(shifted, 4, 0, kShape1d, {{"param2", 1}}),
                                     access(shifted, 4, 0, kShape1d, {{"param2", 1}}), kShape1d);
  EXPECT_EQ(same.verdict, Verdict::kThreadLocal) << same.why;
}

TEST(ThreadLocality, PointerOffsetsCount) {
  // Same form, but the consumer's pointer is 4 bytes further into the buffer.
  EXPECT_EQ(checkPair(access(num(4) * globalX(), 4, 0), access(num(4) * globalX(), 4, 4), kShape1d).verdict,
            Verdict::kCrossThread);
  // Both 4 bytes in: the same thread.
  EXPECT_EQ(checkPair(access(num(4) * globalX(), 4, 4), access(num(4) * globalX(), 4, 4), kShape1d).verdict,
            Verdict::kThreadLocal);
}

TEST(ThreadLocality, InterleavedFieldsOfOneThreadStayLocal) {
  // Thread i writes bytes 8i..8i+3 and reads 8i+4..8i+7: the distance between threads is 8 >= max(4 + 4, 4 - 4).
  EXPECT_EQ(checkPair(access(num(8) * globalX()), access(num(8) * globalX() + num(4)), kShape1d).verdict,
            Verdict::kThreadLocal);
  // An 8-byte write at 8i against a 4-byte read at 8i + 4 of the same thread: still local.
  EXPECT_EQ(checkPair(access(num(8) * globalX(), 8), access(num(8) * globalX() + num(4)), kShape1d).verdict,
            Verdict::kThreadLocal);
  // A 16-byte write at 8i overlaps the next thread's element.
  EXPECT_EQ(checkPair(access(num(8) * globalX(), 16), access(num(8) * globalX()), kShape1d).verdict,
            Verdict::kCrossThread);
}

TEST(ThreadLocality, OneElementPerBlockIndexIsSharedByBlocks) {
  // out[tid.x] in a 64-block launch: block 0 and block 1 both touch byte 4*tid.x.
  EXPECT_EQ(checkPair(access(num(4) * atom("tid.x")), access(num(4) * atom("tid.x")), kShape1d).verdict,
            Verdict::kCrossThread);
}

TEST(ThreadLocality, ASingleThreadSelectedByEqualGuardsIsLocal) {
  // Both kernels touch byte 0, each only in thread tid.x == k of a one-block launch.
  const Shape s{{1, 1, 1}, {256, 1, 1}};
  auto guarded = [&](int64_t k) {
    return access(num(0), 4, 0, s, {{"param1", k}}, {compare(atom("tid.x"), ptx::CmpOp::kEq, atom("param1"))});
  };
  EXPECT_EQ(checkPair(guarded(7), guarded(7), s).verdict, Verdict::kThreadLocal);
  // Different k: thread 7 writes what thread 9 reads. The hull of {7} and {9} has three threads on byte 0.
  EXPECT_EQ(checkPair(guarded(7), guarded(9), s).verdict, Verdict::kCrossThread);
  // A guard on one side only says nothing about the other side's threads.
  EXPECT_EQ(checkPair(guarded(7), access(num(0), 4, 0, s), s).verdict, Verdict::kCrossThread);
}

TEST(ThreadLocality, TransposedIndicesAreNotProven) {
  // out[row*32 + col] against in[col*32 + row] on a 32x32 launch of one block: different per-thread functions.
  const Shape s{{1, 1, 1}, {32, 32, 1}};
  const AffineExpr a = num(4) * (atom("tid.y") * num(32) + atom("tid.x"));
  const AffineExpr b = num(4) * (atom("tid.x") * num(32) + atom("tid.y"));
  const PairVerdict v = checkPair(access(a, 4, 0, s), access(b, 4, 0, s), s);
  EXPECT_EQ(v.verdict, Verdict::kUnknown);
  EXPECT_NE(v.why.find("different functions of the thread"), std::string::npos);
}

TEST(ThreadLocality, DisjointHalvesNeverOverlap) {
  // The consumer reads the second half of the buffer (base 64 KiB), the producer writes the first.
  EXPECT_EQ(checkPair(access(num(4) * globalX(), 4, 0), access(num(4) * globalX(), 4, 65536), kShape1d).verdict,
            Verdict::kThreadLocal);
}

TEST(ThreadLocality, OffsetsOutsideTwoGibibytesAreNotProven) {
  // 4 KiB per thread over 16,384 threads spans 64 MiB: fine. 256 KiB per thread spans 4 GiB: not proven, the
  // 32-bit index arithmetic behind it could wrap.
  EXPECT_EQ(checkPair(access(num(4096) * globalX()), access(num(4096) * globalX()), kShape1d).verdict,
            Verdict::kThreadLocal);
  const PairVerdict v = checkPair(access(num(262144) * globalX()), access(num(262144) * globalX()), kShape1d);
  EXPECT_EQ(v.verdict, Verdict::kUnknown);
  EXPECT_NE(v.why.find("2 GiB"), std::string::npos);
  // A negative offset (i - 1 at i = 0) is refused the same way.
  EXPECT_EQ(checkPair(access(num(4) * globalX() - num(4)), access(num(4) * globalX() - num(4)), kShape1d).verdict,
            Verdict::kUnknown);
}

// A grid-stride index e = gid + s * k (s = param1), its k counted by the atom "iter:%r1@3", on 64 x 256 threads
// (16384) and at most 4 steps.
AffineExpr gridStride() {
  return globalX() + atom("param1") * atom("iter:%r1@3");
}
Shape steps(int64_t iterations) {
  Shape s = kShape1d;
  s.iterations = iterations;
  return s;
}

TEST(ThreadLocality, GridStrideLoopsWhoseStrideIsTheLaunchKeepEveryElementInItsThread) {
  // 4e = 4 gid + 65536 k: tid (4, 256), ctaid (1024, 64), k (65536, 4) is a mixed radix, 4 bytes apart at least.
  const Shape s = steps(4);
  const AtomValues v{{"param1", 16384}};
  const PairVerdict p =
      checkPair(access(num(4) * gridStride(), 4, 0, s, v), access(num(4) * gridStride(), 4, 0, s, v), s);
  EXPECT_EQ(p.verdict, Verdict::kThreadLocal) << p.why;
  // One step later (the unrolled body's e + s) is the same thread's element: still thread-local.
  const PairVerdict later = checkPair(access(num(4) * gridStride(), 4, 0, s, v),
                                      access(num(4) * (gridStride() + atom("param1")), 4, 0, s, v), s);
  EXPECT_EQ(later.verdict, Verdict::kThreadLocal) << later.why;
}

TEST(ThreadLocality, GridStrideNearMissesAreNotThreadLocal) {
  const Shape s = steps(8);
  // Half the launch as stride: thread t at step 1 is thread t + 8192's element at step 0.
  const AtomValues half{{"param1", 8192}};
  EXPECT_NE(
      checkPair(access(num(4) * gridStride(), 4, 0, s, half), access(num(4) * gridStride(), 4, 0, s, half), s).verdict,
      Verdict::kThreadLocal);
  // One element ahead: thread t reads what thread t + 1 writes, a witness one tid.x apart.
  const AtomValues full{{"param1", 16384}};
  const PairVerdict ahead = checkPair(access(num(4) * gridStride(), 4, 0, s, full),
                                      access(num(4) * (gridStride() + num(1)), 4, 0, s, full), s);
  EXPECT_EQ(ahead.verdict, Verdict::kCrossThread) << ahead.why;
}

TEST(ThreadLocality, StepCountsNeedABoundAndOneLoop) {
  std::string why;
  EXPECT_FALSE(bind(num(4) * gridStride(), kShape1d, {{"param1", 16384}}, &why));  // no bound on the steps
  EXPECT_NE(why.find("number of steps is not known"), std::string::npos) << why;
  EXPECT_FALSE(bind(gridStride() + atom("iter:%r9@7"), steps(4), {{"param1", 16384}}, &why));
  EXPECT_NE(why.find("two loops"), std::string::npos) << why;
  // A guard on a step count is left out: its counter need not be the access's.
  const Domain d = bindGuard({compare(atom("iter:%r9@7"), ptx::CmpOp::kLt, num(1))}, steps(4), {});
  EXPECT_TRUE(d.constraints.empty());
  EXPECT_FALSE(d.exact);
}

}  // namespace
}  // namespace kfuse::analyzer::locality
