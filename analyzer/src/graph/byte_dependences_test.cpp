#include "graph/byte_dependences.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <tuple>

namespace kfuse::analyzer {
namespace {

using EdgeKey = std::tuple<size_t, size_t, EdgeKind, core::Id>;

BufferUse use(core::Id alloc, uint64_t lo, uint64_t hi, core::AccessMode mode, int param = 0) {
  BufferUse u;
  u.allocation_id = alloc;
  u.lo = lo;
  u.hi = hi;
  u.mode = mode;
  u.param_index = param;
  return u;
}

std::set<EdgeKey> edgesOf(const std::vector<std::vector<BufferUse>>& ops) {
  ByteDependences d;
  std::vector<Edge> edges;
  for (size_t i = 0; i < ops.size(); ++i) d.add(i, ops[i], edges);
  std::set<EdgeKey> out;
  for (const Edge& e : edges) out.emplace(e.from, e.to, e.kind, e.allocation_id);
  return out;
}

bool readsMode(core::AccessMode m) {
  return m != core::AccessMode::kWrite && m != core::AccessMode::kNone;
}
bool writesMode(core::AccessMode m) {
  return m != core::AccessMode::kRead && m != core::AccessMode::kNone;
}

// The definition, byte by byte: for each byte op j touches, the last earlier op writing it (RAW if j reads it, WAW
// if j writes it) and every op after that writer and before j reading it (WAR if j writes it).
std::set<EdgeKey> oracle(const std::vector<std::vector<BufferUse>>& ops, uint64_t bytes) {
  std::set<EdgeKey> out;
  for (size_t j = 0; j < ops.size(); ++j) {
    for (const BufferUse& u : ops[j]) {
      for (uint64_t b = u.lo; b < u.hi && b < bytes; ++b) {
        size_t writer = SIZE_MAX;
        for (size_t i = j; i-- > 0;) {
          for (const BufferUse& w : ops[i]) {
            if (w.allocation_id == u.allocation_id && writesMode(w.mode) && w.lo <= b && b < w.hi) writer = i;
          }
          if (writer != SIZE_MAX) break;
        }
        if (writer != SIZE_MAX && readsMode(u.mode)) out.emplace(writer, j, EdgeKind::kRaw, u.allocation_id);
        if (!writesMode(u.mode)) continue;
        if (writer != SIZE_MAX) out.emplace(writer, j, EdgeKind::kWaw, u.allocation_id);
        for (size_t i = writer == SIZE_MAX ? 0 : writer + 1; i < j; ++i) {
          for (const BufferUse& r : ops[i]) {
            if (r.allocation_id == u.allocation_id && readsMode(r.mode) && r.lo <= b && b < r.hi) {
              out.emplace(i, j, EdgeKind::kWar, u.allocation_id);
            }
          }
        }
      }
    }
  }
  return out;
}

TEST(ByteDependences, PartialOverwriteKeepsTheWritersOrdered) {
  // rd reads X[0, 101), slowfill writes X[0, 100), fill writes X[0, 4096): fill overwrites slowfill's bytes.
  const std::vector<std::vector<BufferUse>> ops = {
      {use(1, 0, 404, core::AccessMode::kRead)},
      {use(1, 0, 400, core::AccessMode::kWrite)},
      {use(1, 0, 16384, core::AccessMode::kWrite)},
  };
  const std::set<EdgeKey> e = edgesOf(ops);
  EXPECT_TRUE(e.count({1, 2, EdgeKind::kWaw, 1}));
  EXPECT_TRUE(e.count({0, 1, EdgeKind::kWar, 1}));
  EXPECT_TRUE(e.count({0, 2, EdgeKind::kWar, 1}));  // rd's last 4 bytes are not slowfill's
  EXPECT_EQ(e, oracle(ops, 16384));
}

TEST(ByteDependences, AWriteRetiresOnlyTheBytesItCovers) {
  const std::vector<std::vector<BufferUse>> ops = {
      {use(1, 0, 100, core::AccessMode::kWrite)},
      {use(1, 40, 60, core::AccessMode::kWrite)},
      {use(1, 0, 10, core::AccessMode::kRead)},   // still op 0's bytes
      {use(1, 45, 50, core::AccessMode::kRead)},  // op 1's
  };
  const std::set<EdgeKey> e = edgesOf(ops);
  EXPECT_TRUE(e.count({0, 2, EdgeKind::kRaw, 1}));
  EXPECT_FALSE(e.count({0, 3, EdgeKind::kRaw, 1}));
  EXPECT_TRUE(e.count({1, 3, EdgeKind::kRaw, 1}));
  EXPECT_EQ(e, oracle(ops, 100));
}

TEST(ByteDependences, AnInPlaceOperationIsItsBytesLastWriter) {
  const std::vector<std::vector<BufferUse>> ops = {
      {use(1, 0, 8, core::AccessMode::kWrite)},
      {use(1, 0, 8, core::AccessMode::kReadWrite)},
      {use(1, 0, 8, core::AccessMode::kWrite)},
  };
  const std::set<EdgeKey> e = edgesOf(ops);
  EXPECT_EQ(e, (std::set<EdgeKey>{{0, 1, EdgeKind::kRaw, 1}, {0, 1, EdgeKind::kWaw, 1}, {1, 2, EdgeKind::kWaw, 1}}));
}

// Random sequences of up to 12 operations over 3 allocations of 48 bytes: random ranges (some whole-allocation,
// some empty), random modes, 1-3 uses each, compared with the per-byte definition.
TEST(ByteDependences, MatchesThePerByteDefinitionOnTenThousandRandomSequences) {
  std::mt19937_64 rng(20261127);
  constexpr uint64_t kBytes = 48;
  const core::AccessMode modes[] = {core::AccessMode::kRead, core::AccessMode::kWrite, core::AccessMode::kReadWrite,
                                    core::AccessMode::kUnknown};
  for (int seq = 0; seq < 10000; ++seq) {
    std::vector<std::vector<BufferUse>> ops(1 + rng() % 12);
    for (size_t i = 0; i < ops.size(); ++i) {
      const size_t n = 1 + rng() % 3;
      for (size_t k = 0; k < n; ++k) {
        const core::Id alloc = 1 + static_cast<core::Id>(rng() % 3);
        uint64_t lo = rng() % kBytes, hi = lo + rng() % (kBytes - lo + 1);
        if (rng() % 8 == 0) lo = 0, hi = kBytes;  // the whole allocation, as a copy of it would
        ops[i].push_back(use(alloc, lo, hi, modes[rng() % 4], static_cast<int>(k)));
      }
    }
    const std::set<EdgeKey> got = edgesOf(ops), want = oracle(ops, kBytes);
    ASSERT_EQ(got, want) << "sequence " << seq << " of " << ops.size() << " operations";
  }
}

TEST(ByteDependences, UnboundedRangesMeetEveryOtherRange) {
  const std::vector<std::vector<BufferUse>> ops = {
      {use(1, 1000, 1004, core::AccessMode::kWrite)},
      {use(1, 0, UINT64_MAX, core::AccessMode::kRead)},
      {use(1, 0, UINT64_MAX, core::AccessMode::kWrite)},
      {use(1, 5000, 5004, core::AccessMode::kRead)},
  };
  const std::set<EdgeKey> e = edgesOf(ops);
  EXPECT_EQ(
      e,
      (std::set<EdgeKey>{
          {0, 1, EdgeKind::kRaw, 1}, {0, 2, EdgeKind::kWaw, 1}, {1, 2, EdgeKind::kWar, 1}, {2, 3, EdgeKind::kRaw, 1}}));
}

}  // namespace
}  // namespace kfuse::analyzer
