// Counts bad or missing input data met while importing (tier-1 errors of STYLE.md) by registered stat
// (kfuse/core/stats.h: name, severity and description are defined there). Private to the analyzer; not
// thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kfuse/core/stats.h"

namespace kfuse::analyzer::detail {

class ProblemCounter {
 public:
  // Counts `n` more of stat `id`; `name_suffix` names one member of a family ("nsys_missing_column:T.c").
  void add(core::StatId id, int64_t n = 1, std::string_view name_suffix = {});
  int64_t count(std::string_view name) const;
  // Non-zero counts, sorted by name.
  std::vector<core::Stat> stats() const;

 private:
  std::map<std::string, core::Stat, std::less<>> stats_;
};

}  // namespace kfuse::analyzer::detail
