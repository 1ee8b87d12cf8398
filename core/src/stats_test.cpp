#include "kfuse/core/stats.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <set>
#include <string>

#include "kfuse/core/trace_summary.h"

namespace kfuse::core {
namespace {

TEST(Stats, EveryRegisteredNameIsUniqueAndDescribed) {
  std::set<std::string> names;
  for (size_t i = 0; i < static_cast<size_t>(StatId::kCount); ++i) {
    const StatInfo& s = statInfo(static_cast<StatId>(i));
    EXPECT_TRUE(names.insert(s.name).second) << "registered twice: " << s.name;
    EXPECT_GT(std::string(s.description).size(), 10u) << s.name;
    EXPECT_EQ(findStat(s.name), &s);
  }
}

TEST(Stats, MakeStatUsesTheRegistryUnlessGivenDetail) {
  const Stat s = makeStat(StatId::kLaunchArgsTruncated, 3);
  EXPECT_EQ(s.name, "launch_args_truncated");
  EXPECT_EQ(s.value, 3);
  EXPECT_EQ(s.severity, StatSeverity::kWarning);
  EXPECT_EQ(s.description, "launches whose argument buffer was cut at 32 KiB");
  EXPECT_EQ(makeStat(StatId::kMetricsUnavailable, 1, "no counter permission").description, "no counter permission");
}

TEST(Stats, SuffixedNamesBelongToTheirFamily) {
  const Stat s = makeStat(StatId::kNsysMissingColumn, 1, {}, "CUPTI_ACTIVITY_KIND_KERNEL.registersPerThread");
  EXPECT_EQ(s.name, "nsys_missing_column:CUPTI_ACTIVITY_KIND_KERNEL.registersPerThread");
  EXPECT_EQ(findStat(s.name), &statInfo(StatId::kNsysMissingColumn));
  EXPECT_EQ(findStat("no_such_stat"), nullptr);
}

}  // namespace
}  // namespace kfuse::core

namespace kfuse::core {
namespace {

// Timestamps of a damaged trace can be any int64: their differences saturate instead of overflowing (UBSan found
// kfuse info and analyze subtracting INT64_MIN from INT64_MAX).
TEST(Timestamps, DifferencesOfExtremeValuesSaturate) {
  EXPECT_EQ(spanNs(10, 25), 15);
  EXPECT_EQ(spanNs(INT64_MIN, INT64_MAX), INT64_MAX);
  EXPECT_EQ(spanNs(INT64_MAX, INT64_MIN), INT64_MIN);
  Launch l;
  l.gpu_start_ns = INT64_MIN + 1;
  l.gpu_end_ns = INT64_MAX;
  EXPECT_EQ(l.gpuDurationNs(), INT64_MAX);
  TraceSummary s;
  s.first_ns = INT64_MIN + 1;
  s.last_ns = INT64_MAX;
  EXPECT_EQ(toJson(s)["span_ns"], INT64_MAX);
  EXPECT_FALSE(formatSummary(s).empty());
}

}  // namespace
}  // namespace kfuse::core
