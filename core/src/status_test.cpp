#include "kfuse/core/status.h"

#include <gtest/gtest.h>

#include <memory>

namespace kfuse {
namespace {

Expected<int> parsePositive(int v) {
  if (v <= 0) return invalidArgument("value " + std::to_string(v) + " is not positive");
  return v;
}

Status doubleIt(int v, int& out) {
  KFUSE_ASSIGN_OR_RETURN(int x, parsePositive(v));
  out = 2 * x;
  return {};
}

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kOk);
}

TEST(Status, WithContextPrefixesTheMessage) {
  Status s = badFormat("line 3: expected ';'").withContext("a.ptx");
  EXPECT_EQ(s.code(), ErrorCode::kBadFormat);
  EXPECT_EQ(s.message(), "a.ptx: line 3: expected ';'");
  EXPECT_TRUE(Status().withContext("x").ok());
}

TEST(Expected, HoldsValueOrError) {
  auto good = parsePositive(3);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 3);
  EXPECT_TRUE(good.status().ok());
  auto bad = parsePositive(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
}

TEST(Expected, BuiltFromOkStatusBecomesInternalError) {
  Expected<int> e{Status()};
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), ErrorCode::kInternal);
}

TEST(Expected, HoldsMoveOnlyTypes) {
  Expected<std::unique_ptr<int>> e(std::make_unique<int>(7));
  ASSERT_TRUE(e.ok());
  std::unique_ptr<int> p = std::move(e).value();
  EXPECT_EQ(*p, 7);
}

TEST(StatusMacros, AssignOrReturnPropagatesErrors) {
  int out = 0;
  EXPECT_TRUE(doubleIt(4, out).ok());
  EXPECT_EQ(out, 8);
  Status s = doubleIt(0, out);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(out, 8);
}

}  // namespace
}  // namespace kfuse
