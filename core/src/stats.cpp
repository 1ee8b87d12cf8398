#include "kfuse/core/stats.h"

#include <array>

namespace kfuse::core {
namespace {

constexpr std::array<StatInfo, static_cast<size_t>(StatId::kCount)> kStats = {{
#define KFUSE_STAT_INFO(id, name, severity, description) {name, StatSeverity::severity, description},
    KFUSE_STATS(KFUSE_STAT_INFO)
#undef KFUSE_STAT_INFO
}};

}  // namespace

const StatInfo& statInfo(StatId id) {
  return kStats[static_cast<size_t>(id)];
}

Stat makeStat(StatId id, int64_t value, std::string detail, std::string_view name_suffix) {
  const StatInfo& info = statInfo(id);
  Stat s;
  s.name = info.name;
  if (!name_suffix.empty()) s.name.append(":").append(name_suffix);
  s.value = value;
  s.severity = info.severity;
  s.description = detail.empty() ? info.description : std::move(detail);
  return s;
}

const StatInfo* findStat(std::string_view name) {
  const std::string_view family = name.substr(0, name.find(':'));
  for (const StatInfo& s : kStats) {
    if (family == s.name) return &s;
  }
  return nullptr;
}

}  // namespace kfuse::core
