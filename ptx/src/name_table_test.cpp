#include "kfuse/ptx/name_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kfuse::ptx {
namespace {

TEST(NameTable, NumbersDistinctNamesInOrderOfFirstSight) {
  NameTable t;
  EXPECT_EQ(t.intern("%r1"), 0);
  EXPECT_EQ(t.intern("%rd1"), 1);
  EXPECT_EQ(t.intern("%r1"), 0);
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.name(1), "%rd1");
  EXPECT_EQ(t.find("%rd1"), 1);
  EXPECT_EQ(t.find("%r2"), -1);
  EXPECT_FALSE(t.contains("%r2"));
  EXPECT_TRUE(t.contains("%r1"));
}

TEST(NameTable, KeepsNumbersWhileGrowing) {
  std::vector<std::string> names;
  for (int i = 0; i < 5000; ++i) names.push_back("%r" + std::to_string(i));
  NameTable t(/*expected=*/3);
  for (size_t i = 0; i < names.size(); ++i) ASSERT_EQ(t.intern(names[i]), static_cast<int>(i));
  for (size_t i = 0; i < names.size(); ++i) ASSERT_EQ(t.find(names[i]), static_cast<int>(i));
  EXPECT_EQ(t.size(), names.size());
  EXPECT_EQ(t.find("%r5000"), -1);
  EXPECT_EQ(t.find(""), -1);
}

TEST(NameTable, TheEmptyNameIsAName) {
  NameTable t;
  EXPECT_EQ(t.intern(""), 0);
  EXPECT_EQ(t.find(""), 0);
}

}  // namespace
}  // namespace kfuse::ptx
