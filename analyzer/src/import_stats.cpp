#include "import_stats.h"

namespace kfuse::analyzer::detail {

void ProblemCounter::add(std::string_view name, core::StatSeverity severity, std::string_view description,
                         int64_t n) {
  if (n <= 0) return;
  auto it = stats_.find(name);
  if (it == stats_.end()) {
    it = stats_.emplace(std::string(name), core::Stat{std::string(name), 0, severity, std::string(description)})
             .first;
  }
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
