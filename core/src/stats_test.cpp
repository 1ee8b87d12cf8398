#include "kfuse/core/stats.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

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
