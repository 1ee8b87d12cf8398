#include "kfuse/core/cancel.h"

#include <gtest/gtest.h>

#include <thread>

namespace kfuse::core {
namespace {

TEST(Cancel, OnlyTheInnermostScopeOnThisThreadCounts) {
  EXPECT_FALSE(cancelRequested());  // no scope
  std::atomic<bool> outer{true}, inner{false};
  {
    const CancelScope a(&outer);
    EXPECT_TRUE(cancelRequested());
    {
      const CancelScope b(&inner);
      EXPECT_FALSE(cancelRequested());
      inner = true;
      EXPECT_TRUE(cancelRequested());
    }
    EXPECT_TRUE(cancelRequested());
    // Another thread has no scope.
    bool other = true;
    std::thread([&] { other = cancelRequested(); }).join();
    EXPECT_FALSE(other);
  }
  EXPECT_FALSE(cancelRequested());
  const CancelScope none(nullptr);
  EXPECT_FALSE(cancelRequested());
}

Status stage() {
  KFUSE_RETURN_IF_CANCELLED();
  return Status(ErrorCode::kInternal, "ran to the end");
}

TEST(Cancel, ReturnsTheCancelledStatus) {
  std::atomic<bool> flag{false};
  const CancelScope scope(&flag);
  EXPECT_EQ(stage().code(), ErrorCode::kInternal);
  flag = true;
  const Status s = stage();
  EXPECT_EQ(s.code(), ErrorCode::kCancelled);
  EXPECT_EQ(s.message(), "cancelled");
  EXPECT_STREQ(errorCodeName(ErrorCode::kCancelled), "cancelled");
}

}  // namespace
}  // namespace kfuse::core
