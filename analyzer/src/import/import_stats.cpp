#include "import/import_stats.h"

namespace kfuse::analyzer::detail {

void ProblemCounter::add(core::StatId id, int64_t n, std::string_view name_suffix) {
  if (n <= 0) return;
  core::Stat s = core::makeStat(id, 0, {}, name_suffix);
  auto it = stats_.find(s.name);
  if (it == stats_.end()) it = stats_.emplace(s.name, std::move(s)).first;
  it->second.value += n;
}

int64_t ProblemCounter::count(std::string_view name) const {
  auto it = stats_.find(name);
  return it == stats_.end() ? 0 : it->second.value;
}

std::vector<core::Stat> ProblemCounter::stats() const {
  std::vector<core::Stat> out;
  out.reserve(stats_.size());
  for (const auto& [name, stat] : stats_) out.push_back(stat);
  return out;
}

}  // namespace kfuse::analyzer::detail
