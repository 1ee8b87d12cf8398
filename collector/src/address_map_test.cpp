#include "kfuse/collector/address_map.h"

#include <gtest/gtest.h>

namespace kfuse::collector {
namespace {

TEST(AddressMapTest, FindsContainingAllocationWithOffset) {
  AddressMap m;
  m.insert(0x1000, 0x100, 1);
  m.insert(0x2000, 0x80, 2);
  auto hit = m.find(0x1010);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->allocation_id, 1);
  EXPECT_EQ(hit->offset, 0x10u);
  EXPECT_EQ(m.find(0x2000)->allocation_id, 2);
  EXPECT_EQ(m.find(0x207f)->offset, 0x7fu);
}

TEST(AddressMapTest, AddressesOutsideEveryAllocationAreNotResolved) {
  AddressMap m;
  m.insert(0x1000, 0x100, 1);
  EXPECT_FALSE(m.find(0xfff));
  EXPECT_FALSE(m.find(0x1100));  // one past the end
  EXPECT_FALSE(m.find(0));
}

TEST(AddressMapTest, EraseForgetsTheAllocation) {
  AddressMap m;
  m.insert(0x1000, 0x100, 1);
  EXPECT_EQ(m.erase(0x1000), 1);
  EXPECT_FALSE(m.find(0x1000));
  EXPECT_FALSE(m.erase(0x1000));
}

TEST(AddressMapTest, OverlappingInsertEvictsStaleAllocations) {
  AddressMap m;
  m.insert(0x1000, 0x100, 1);
  m.insert(0x1100, 0x100, 2);
  std::vector<core::Id> evicted;
  m.insert(0x1080, 0x100, 3, &evicted);
  EXPECT_EQ(evicted, (std::vector<core::Id>{1, 2}));
  EXPECT_EQ(m.find(0x1000), std::nullopt);
  EXPECT_EQ(m.find(0x1090)->allocation_id, 3);
  EXPECT_EQ(m.size(), 1u);
}

TEST(AddressMapTest, ZeroSizedAllocationContainsOnlyItsBase) {
  AddressMap m;
  m.insert(0x1000, 0, 7);
  EXPECT_EQ(m.find(0x1000)->allocation_id, 7);
  EXPECT_FALSE(m.find(0x1001));
}

}  // namespace
}  // namespace kfuse::collector
