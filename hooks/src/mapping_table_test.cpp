#include "kfuse/hooks/mapping_table.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace kfuse::hooks {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST(MappingTable, OneHandleMappedTwiceIsSharedAtBothAddresses) {
  MappingTable t;
  t.noteHandle(7);
  t.map(0x1000'0000, 2 * kMiB, 7, 0);
  EXPECT_FALSE(t.shared(0x1000'0000));
  t.map(0x2000'0000, 2 * kMiB, 7, 0);
  EXPECT_TRUE(t.shared(0x1000'0000));
  EXPECT_TRUE(t.shared(0x2000'0000));
  // Unmapping one leaves the other the only view of its bytes.
  EXPECT_EQ(t.unmap(0x2000'0000, 2 * kMiB), std::vector<uint64_t>{0x2000'0000});
  EXPECT_FALSE(t.shared(0x1000'0000));
  EXPECT_EQ(t.find(0x2000'0000), nullptr);
}

TEST(MappingTable, DisjointOffsetsOfOneHandleAreNotShared) {
  MappingTable t;
  t.noteHandle(7);
  t.map(0x1000'0000, 2 * kMiB, 7, 0);
  t.map(0x2000'0000, 2 * kMiB, 7, 2 * kMiB);
  EXPECT_FALSE(t.shared(0x1000'0000));
  EXPECT_FALSE(t.shared(0x2000'0000));
  // One byte of overlap in the handle is enough.
  t.map(0x3000'0000, 2 * kMiB, 7, 4 * kMiB - 1);
  EXPECT_FALSE(t.shared(0x1000'0000));
  EXPECT_TRUE(t.shared(0x2000'0000));
  EXPECT_TRUE(t.shared(0x3000'0000));
}

TEST(MappingTable, AHandleNotSeenCreatedMayBeSharedUntilItIs) {
  MappingTable t;
  t.map(0x1000'0000, 2 * kMiB, 9, 0);  // imported or retained: another handle may show these bytes
  EXPECT_TRUE(t.shared(0x1000'0000));
  t.noteHandle(9);
  EXPECT_FALSE(t.shared(0x1000'0000));
  ASSERT_NE(t.find(0x1000'0000), nullptr);
  EXPECT_EQ(t.find(0x1000'0000)->handle, 9u);
}

TEST(MappingTable, UnmapForgetsEveryMappingThatStartsInTheRange) {
  MappingTable t;
  t.noteHandle(1);
  t.map(0x1000'0000, kMiB, 1, 0);
  t.map(0x1010'0000, kMiB, 1, 0);
  t.map(0x1020'0000, kMiB, 1, kMiB);
  EXPECT_EQ(t.unmap(0x1000'0000, 2 * kMiB), (std::vector<uint64_t>{0x1000'0000, 0x1010'0000}));
  EXPECT_FALSE(t.empty());
  EXPECT_FALSE(t.shared(0x1020'0000));
  EXPECT_TRUE(t.unmap(0x5000'0000, kMiB).empty());
}

// The shared set against its definition, pair by pair, on random layouts (the table finds overlaps with one sweep
// per handle).
TEST(MappingTable, MatchesThePairwiseDefinitionOnRandomLayouts) {
  struct M {
    uint64_t base, size, handle, offset;
  };
  std::mt19937_64 rng(1);
  for (int round = 0; round < 2000; ++round) {
    MappingTable t;
    const uint64_t handles = 1 + rng() % 3;
    std::set<uint64_t> created;
    for (uint64_t h = 0; h < handles; ++h) {
      if (rng() % 4 == 0) continue;
      created.insert(h);
      t.noteHandle(h);
    }
    std::vector<M> ms;
    const int n = 1 + int(rng() % 8);
    for (int i = 0; i < n; ++i) {
      ms.push_back(M{uint64_t(i + 1) * 0x100'0000, 1 + rng() % 16, rng() % handles, rng() % 24});
      t.map(ms.back().base, ms.back().size, ms.back().handle, ms.back().offset);
    }
    for (const M& a : ms) {
      bool expected = !created.count(a.handle);
      for (const M& b : ms) {
        expected |= &a != &b && a.handle == b.handle && a.offset < b.offset + b.size && b.offset < a.offset + a.size;
      }
      ASSERT_EQ(t.shared(a.base), expected) << "round " << round << ", mapping at 0x" << std::hex << a.base;
    }
  }
}

}  // namespace
}  // namespace kfuse::hooks
